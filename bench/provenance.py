"""Provenance verification cost, in-process: legacy_bundle.py vs sigstore-python's verify_dsse.

Run: python bench/provenance.py [--rounds N]

Same statement, same local test Sigstore, same run:
  * sigstore-python 4.5.1 ``Verifier.verify_dsse`` on a v0.3 bundle with a ``dsse/0.0.1`` entry
    (policy UnsafeNoOp: the cryptographic work only);
  * legacy_bundle.verify_legacy_dsse on the same dsse/0.0.1 bundle and on an ``intoto/0.0.2`` bundle
    of the same statement (the kind sigstore-python refuses);
  * each of the above followed by parse_statement + check_provenance (the whole provenance step);
  * a .jsonl of 100 intoto/0.0.2 attestations, each verified on its own;
and on real bundles: sigstore-js 2.1.0 (intoto/0.0.2, legacy) vs conformance happy-path-intoto-in-dsse-v3
(dsse/0.0.1, sigstore-python), both against the embedded production root.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "fixtures"))

from sigstore.models import Bundle  # noqa: E402
from sigstore.verify import Verifier  # noqa: E402
from sigstore.verify.policy import UnsafeNoOp  # noqa: E402

from atip_trust.facts.digest import hash_bytes  # noqa: E402
from atip_trust.provenance.slsa import (
    BuilderMap,
    ProvenanceRequirements,
    check_provenance,
    parse_statement,
)
from atip_trust.signature.legacy_bundle import verify_legacy_dsse  # noqa: E402
from atip_trust.signature.trustroot import TrustRoot  # noqa: E402

import testsigstore  # noqa: E402

sys.path.insert(0, str(ROOT / "tests"))
from interop_cases import find_interop  # noqa: E402

INTEROP = find_interop()
ID = "https://github.com/atip-test/tool/.github/workflows/release.yml@refs/tags/v1.0.0"
ISSUER = "https://token.actions.githubusercontent.com"


def timeit(fn: Callable[[], object], rounds: int) -> float:
    fn()  # warm up (imports, caches)
    samples = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples) * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=200)
    rounds = ap.parse_args().rounds
    # UnsafeNoOp logs a warning on every call; the timing wants the crypto only.
    logging.getLogger("sigstore").setLevel(logging.ERROR)

    ts = testsigstore.TestSigstore(seed=7)
    artifact = b"#!/bin/sh\necho bench\n"
    digests = {"sha256": hash_bytes(artifact), "sha512": hash_bytes(artifact, "sha512")}
    stmt = testsigstore.slsa_v1_statement("tool", digests["sha256"].hex)
    with tempfile.TemporaryDirectory() as tmp:
        path = ts.write_trusted_root(Path(tmp) / "trusted_root.json")
        root = TrustRoot.from_file(path)
    dsse_doc = ts.sign_dsse(stmt, identity=ID, issuer=ISSUER, entry_kind="dsse")
    intoto_doc = ts.sign_dsse(stmt, identity=ID, issuer=ISSUER, entry_kind="intoto")
    verifier = Verifier(trusted_root=root.sigstore_trusted_root())
    dsse_json = json.dumps(dsse_doc)
    builders = BuilderMap.default()
    req = ProvenanceRequirements(builder_id=stmt["predicate"]["runDetails"]["builder"]["id"], min_slsa_level=3)

    def sp() -> tuple[str, bytes]:
        return verifier.verify_dsse(Bundle.from_json(dsse_json), UnsafeNoOp())

    def full(pt_payload: tuple[str, bytes]) -> None:
        out = check_provenance(parse_statement(*pt_payload), digests, req, builders)
        assert out.passed, out.checks

    rows = [
        ("sigstore-python verify_dsse, dsse/0.0.1", timeit(sp, rounds)),
        ("legacy_bundle, same dsse/0.0.1 bundle", timeit(lambda: verify_legacy_dsse(dsse_doc, root), rounds)),
        ("legacy_bundle, intoto/0.0.2 bundle", timeit(lambda: verify_legacy_dsse(intoto_doc, root), rounds)),
        ("sigstore-python + statement + SLSA checks", timeit(lambda: full(sp()), rounds)),
        ("legacy intoto + statement + SLSA checks",
         timeit(lambda: full(verify_legacy_dsse(intoto_doc, root)[:2]), rounds)),
    ]
    many = [ts.sign_dsse(stmt, identity=ID, issuer=ISSUER, entry_kind="intoto") for _ in range(100)]
    many_dsse = [json.dumps(ts.sign_dsse(stmt, identity=ID, issuer=ISSUER, entry_kind="dsse")) for _ in range(100)]
    jsonl = "\n".join(json.dumps(d) for d in many)

    def legacy_100() -> None:
        for line in jsonl.splitlines():
            full(verify_legacy_dsse(json.loads(line), root)[:2])

    def sp_100() -> None:
        for line in many_dsse:
            full(verifier.verify_dsse(Bundle.from_json(line), UnsafeNoOp()))

    r = max(3, rounds // 50)
    rows.append((".jsonl of 100 intoto/0.0.2, legacy + checks (total)", timeit(legacy_100, r)))
    rows.append(("100 dsse/0.0.1, sigstore-python + checks (total)", timeit(sp_100, r)))

    if (INTEROP / "index.json").is_file():
        prod = TrustRoot.embedded("production")
        js = json.loads((INTEROP / "cli-sigstore-js-2.1.0-bundle-v0.3" / "sigstore-js-2.1.0-bundle.json").read_text())
        happy = (INTEROP / "conformance-happy-path-intoto-in-dsse-v3" / "bundle.sigstore.json").read_text()
        prod_verifier = Verifier(trusted_root=prod.sigstore_trusted_root())
        rows.append(("real: sigstore-js 2.1.0 intoto/0.0.2, legacy", timeit(lambda: verify_legacy_dsse(js, prod), rounds)))
        rows.append(("real: conformance dsse/0.0.1, sigstore-python",
                     timeit(lambda: prod_verifier.verify_dsse(Bundle.from_json(happy), UnsafeNoOp()), rounds)))

    width = max(len(n) for n, _ in rows)
    print(f"median of {rounds} rounds (100-bundle rows: {r}), milliseconds")
    for name, ms in rows:
        print(f"  {name.ljust(width)}  {ms:8.2f}")


if __name__ == "__main__":
    main()
