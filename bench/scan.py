"""``atip-trust scan DIR``: wall time and tools per second, cold (empty cache) and warm (second run),
as ratios to ``sha256sum`` over the same files, measured in the same run.

    python bench/scan.py [DIR] [--workers N]      # DIR default /usr/bin

The scan runs as a user runs it (``python -m atip_trust scan DIR --format json``, the shipped default
policy, a private ATIP_CACHE_DIR). The reference hashes exactly the files the scan opened (its rows'
resolved paths) with one ``sha256sum`` process. Under the default policy nothing in /usr/bin is signed,
so no tool is probed: the cold figure is the scan, open, hash and admit of every tool.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def _scan(directory: str, env: dict[str, str], workers: int | None) -> tuple[float, dict]:
    argv = [sys.executable, "-m", "atip_trust", "scan", directory, "--format", "json"]
    if workers:
        argv += ["--workers", str(workers)]
    start = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, env=env, stdin=subprocess.DEVNULL, timeout=3600)
    took = time.perf_counter() - start
    if p.returncode not in (0, 1, 3):
        sys.exit(f"scan failed ({p.returncode}): {p.stderr.decode(errors='replace')[-2000:]}")
    return took, json.loads(p.stdout)


def _sha256sum(files: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(["sha256sum", "--", *files], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=False)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dir", nargs="?", default="/usr/bin")
    ap.add_argument("--workers", type=int, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "ATIP_CACHE_DIR": os.path.join(tmp, "cache"),
               "XDG_STATE_HOME": os.path.join(tmp, "state")}
        env.pop("ATIP_TRUST_ORG_POLICY", None)
        env.pop("ATIP_TRUST_POLICY", None)
        cold, out = _scan(args.dir, env, args.workers)
        files = sorted({t["resolved"] for t in out["surface"]["tools"] if t["digest"]})
        size = sum(os.path.getsize(f) for f in files)
        ref = _sha256sum(files)  # the page cache is warm for both: the scan read every file first
        warm, out2 = _scan(args.dir, env, args.workers)
        ref2 = _sha256sum(files)
        hits = sum(t["cache"] == "hit" for t in out2["surface"]["tools"])
    n = len(out["surface"]["tools"])
    refm = min(ref, ref2)
    print(f"{args.dir}: {n} tools ({len(files)} distinct files, {size / 2**20:.1f} MiB), "
          f"{os.cpu_count()} CPUs")
    print(f"sha256sum (same files):  {refm:7.2f} s  {len(files) / refm:9.0f} files/s")
    print(f"scan cold:               {cold:7.2f} s  {n / cold:9.0f} tools/s  {cold / refm:6.1f}x sha256sum")
    print(f"scan warm ({hits}/{n} hits): {warm:7.2f} s  {n / warm:9.0f} tools/s  {warm / refm:6.1f}x sha256sum")
    print(f"warm/cold: {warm / cold:.2f}")


if __name__ == "__main__":
    main()
