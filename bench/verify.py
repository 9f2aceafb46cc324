"""Keyless verification cost: atip-trust vs sigstore-python on the same bundle, same run.

    python bench/verify.py [--n 200]

Prints (1) in-process time per bundle: ``atip_trust.evaluation.evaluate`` (our artifact binding + sigstore-python +
identity policy + report) against sigstore-python's own ``Verifier.verify_artifact`` with an
``Identity`` policy, both with a Verifier built once; goal <= 1.2x. (2) CLI wall time:
``atip-trust verify`` against ``python -m sigstore verify identity`` on the same inputs (offline).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "fixtures"))

from sigstore.models import Bundle, TrustedRoot  # noqa: E402
from sigstore.verify import Verifier, policy  # noqa: E402

from atip_trust.evaluation.evaluate import Constraints, Evidence, evaluate  # noqa: E402
from atip_trust.facts.artifact import Artifact  # noqa: E402
from atip_trust.signature.identity import IdentityRule  # noqa: E402
from atip_trust.signature.keyless import KeylessVerifier  # noqa: E402
from atip_trust.signature.trustroot import TrustRoot  # noqa: E402

import testsigstore  # noqa: E402

ID = "https://github.com/acme/tool/.github/workflows/release.yml@refs/tags/v1.0.0"
ISS = "https://token.actions.githubusercontent.com"


def sigstore_trust_config(d: Path, root: Path) -> Path:
    """sigstore's CLI takes a custom root only inside a ClientTrustConfig; ours wrapped in one, with
    no service URLs (offline)."""
    cfg = d / "trust_config.json"
    cfg.write_text(json.dumps({
        "mediaType": "application/vnd.dev.sigstore.clienttrustconfig.v0.1+json",
        "trustedRoot": json.loads(root.read_text()),
        "signingConfig": {"mediaType": "application/vnd.dev.sigstore.signingconfig.v0.2+json",
                          "caUrls": [], "oidcUrls": [], "rekorTlogUrls": [], "tsaUrls": [],
                          "rekorTlogConfig": {"selector": "ANY"}, "tsaConfig": {"selector": "ANY"}},
    }))
    return cfg


def timeit(fn, n: int) -> float:
    fn()  # warm
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--size", type=int, default=1 << 20, help="artifact size in bytes")
    a = ap.parse_args()
    d = Path(tempfile.mkdtemp())
    ts = testsigstore.TestSigstore(seed=3)
    root = ts.write_trusted_root(d / "trusted_root.json")
    art = d / "tool"
    art.write_bytes(b"x" * a.size)
    bundle_path = d / "tool.sigstore.json"
    bundle_path.write_text(json.dumps(ts.sign_artifact(art.read_bytes(), identity=ID, issuer=ISS)))

    sp_verifier = Verifier(trusted_root=TrustedRoot.from_file(str(root)))
    sp_policy = policy.Identity(identity=ID, issuer=ISS)

    def sigstore_python() -> None:
        bundle = Bundle.from_json(bundle_path.read_bytes())
        sp_verifier.verify_artifact(art.read_bytes(), bundle, sp_policy)

    troot = TrustRoot.from_file(root)
    kv = KeylessVerifier(troot)
    cons = Constraints(signers=(IdentityRule(identity=ID, issuer=ISS),))
    ev = Evidence(bundles=(bundle_path,))

    def ours() -> None:
        with Artifact.open(art) as f:
            rep = evaluate(f, ev, cons, troot, keyless=kv)
        if rep.trust_level.name != "VERIFIED":
            raise SystemExit(f"unexpected {rep.trust_level}")

    t_sp = timeit(sigstore_python, a.n)
    t_us = timeit(ours, a.n)
    print(f"in-process, {a.size} B artifact, median of {a.n}:")
    print(f"  sigstore-python verify_artifact: {t_sp * 1e3:.3f} ms")
    print(f"  atip-trust evaluate (digest, binding, sigstore, identity): {t_us * 1e3:.3f} ms")
    print(f"  ratio atip-trust / sigstore-python: {t_us / t_sp:.2f}x (goal <= 1.2x)")

    def wall(cmd: list[str], n: int = 5) -> float:
        samples = []
        for _ in range(n):
            t = time.perf_counter()
            p = subprocess.run(cmd, capture_output=True, stdin=subprocess.DEVNULL)
            samples.append(time.perf_counter() - t)
            if p.returncode != 0:
                raise SystemExit(f"{cmd[:4]} failed: {p.stderr.decode()[-500:]}")
        return statistics.median(samples)

    w_us = wall([sys.executable, "-m", "atip_trust", "verify", str(art), "--bundle", str(bundle_path),
                 "--trusted-root", str(root), "--certificate-identity", ID, "--certificate-oidc-issuer", ISS])
    cfg = sigstore_trust_config(d, root)
    try:
        w_sp = wall([sys.executable, "-m", "sigstore", "--trust-config", str(cfg), "verify", "identity",
                     "--bundle", str(bundle_path), "--cert-identity", ID, "--cert-oidc-issuer", ISS, str(art)])
        print(f"CLI wall time, median of 5: atip-trust {w_us * 1e3:.0f} ms, "
              f"python -m sigstore {w_sp * 1e3:.0f} ms, ratio {w_us / w_sp:.2f}x")
    except SystemExit as err:
        print(f"CLI wall time: atip-trust {w_us * 1e3:.0f} ms; sigstore CLI could not run offline: {err}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
