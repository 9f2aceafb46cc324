"""Start-up cost of the CLI: wall time of `--version`, `hash FILE` and `policy check` in fresh
interpreters (median of 7), against `python -c pass` measured in the same run.

    python bench/startup.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def median_ms(argv: list[str], runs: int = 7) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(argv, capture_output=True, cwd=REPO, check=False, stdin=subprocess.DEVNULL)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main() -> None:
    base = median_ms([sys.executable, "-c", "pass"])
    cli = [sys.executable, "-m", "atip_trust"]
    print(f"python -c pass                 {base:7.1f} ms")
    for label, args in (("--version", ["--version"]), ("hash ./README.md", ["hash", "./README.md"]),
                        ("policy check default.json", ["policy", "check", "policies/default.json"])):
        ms = median_ms(cli + args)
        print(f"atip-trust {label:26} {ms:7.1f} ms  ({ms / base:.1f}x python start-up)")


if __name__ == "__main__":
    main()
