"""Verdict cache: ``atip-trust admit`` wall time, cold (empty cache) against warm (a hit), same inputs.

    python bench/cache.py [--runs 5]

A tool signed by the local test Sigstore (keyless bundle, trusted root, a policy with one signer), a
private ATIP_CACHE_DIR; each cold run starts from an emptied cache. Prints the median of each and
the ratio. Both include the interpreter's start-up, which the cache cannot remove.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "fixtures"))

import testsigstore  # noqa: E402

ID = "https://github.com/acme/tool/.github/workflows/release.yml@refs/tags/v1.0.0"
ISS = "https://token.actions.githubusercontent.com"


def make_world(d: Path, size: int = 4 << 20) -> tuple[list[str], dict[str, str], Path]:
    """A keyless-signed tool of ``size`` bytes, its bundle, trusted root and a one-signer policy in
    ``d``: the ``atip-trust admit`` command line, its environment (a private ATIP_CACHE_DIR) and
    that cache directory. The tool's times are set in the past (outside the stat fast path's
    same-timestamp window), which takes a 2 s wait for its ctime to age."""
    ts = testsigstore.TestSigstore(seed=7)
    root = ts.write_trusted_root(d / "trusted_root.json")
    body = b"#!/bin/sh\necho tool\n" + os.urandom(size)
    tool = d / "tool"
    tool.write_bytes(body)
    tool.chmod(0o755)
    old = time.time() - 60
    os.utime(tool, (old, old))
    time.sleep(2.1)
    bundle = d / "tool.sigstore.json"
    bundle.write_text(json.dumps(ts.sign_artifact(body, identity=ID, issuer=ISS)))
    policy = d / "policy.json"
    policy.write_text(json.dumps({
        "version": 1,
        "trust": {"trustedRoots": [{"path": str(root)}], "signers": [{"identity": ID, "issuer": ISS}]},
        "permissions": {"allow": [{"rule": "tool *", "minTrustLevel": "VERIFIED"}]},
    }))
    cache = d / "cache"
    env = {**os.environ, "ATIP_CACHE_DIR": str(cache)}
    env.pop("ATIP_TRUST_ORG_POLICY", None)
    argv = [sys.executable, "-m", "atip_trust", "admit", str(tool), "--command", "status",
            "--policy", str(policy), "--bundle", str(bundle), "--trusted-root", str(root),
            "--no-audit", "--format", "json"]
    return argv, env, cache


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    runs = ap.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp:
        argv, env, cache = make_world(Path(tmp))

        def run() -> tuple[float, str]:
            t0 = time.perf_counter()
            p = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
            dt = time.perf_counter() - t0
            if p.returncode != 0:
                raise SystemExit(f"admit failed ({p.returncode}): {p.stderr}")
            return dt, json.loads(p.stdout)["cache"]

        cold: list[float] = []
        for _ in range(runs):
            shutil.rmtree(cache, ignore_errors=True)
            dt, state = run()
            assert state == "miss", state
            cold.append(dt)
        warm: list[float] = []
        for _ in range(runs):
            dt, state = run()
            assert state == "hit", state
            warm.append(dt)
        c, w = statistics.median(cold), statistics.median(warm)
        print(f"admit cold (miss): median {c * 1000:.0f} ms over {runs} runs")
        print(f"admit warm (hit):  median {w * 1000:.0f} ms over {runs} runs")
        print(f"ratio cold/warm:   {c / w:.2f}x")


if __name__ == "__main__":
    main()
