"""Warm ``admit`` from non-editable installs, each against its own venv's ``python -c pass``.

    python bench/installed.py [--rounds 41] VENV [VENV ...]

Each VENV holds atip-trust as ``pip install .`` puts it (a wheel, byte code compiled at install), with
its dependencies (its first admission is a miss that really verifies). The world is bench/cache.py's:
a keyless-signed tool, its bundle, a file trusted root, a one-signer policy, ``--no-audit --format
json``; each venv keeps its own ATIP_CACHE_DIR. After a miss and a hit per venv, every command (each
venv's admission and its ``python -c pass``) runs once per round, the order reversed every other round,
so that load on a shared machine falls on all of them alike. Prints medians of wall time and of CPU
time (user + system) and the ratios (docs/adr/0001-start-up.md: goal <= 3.5x).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cache as bench_cache


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float, bytes]:
    """Wall seconds, CPU seconds and standard output of ``argv`` (which must exit 0)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, env=env, stdin=subprocess.DEVNULL, check=False, cwd="/")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:3])}... exited {p.returncode}: {p.stderr.decode()[-400:]}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, p.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--rounds", type=int, default=41)
    ap.add_argument("venvs", nargs="+", metavar="VENV")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        argv, env, _ = bench_cache.make_world(Path(tmp), 1 << 16)
        env.pop("PYTHONPATH", None)  # the installed copy, not a checkout
        commands: list[tuple[str, str, list[str], dict[str, str]]] = []
        for i, venv in enumerate(args.venvs):
            venv_env = {**env, "ATIP_CACHE_DIR": os.path.join(tmp, f"cache-{i}")}
            admit = [os.path.join(venv, "bin", "atip-trust"), *argv[3:]]
            run(admit, venv_env)  # the miss that fills this venv's cache
            if b'"cache": "hit"' not in run(admit, venv_env)[2]:
                raise SystemExit(f"{venv}: the second admission was not a cache hit")
            commands += [(venv, "admit", admit, venv_env),
                         (venv, "pass", [os.path.join(venv, "bin", "python"), "-c", "pass"], venv_env)]
        walls: dict[tuple[str, str], list[float]] = {(v, k): [] for v, k, _, _ in commands}
        cpus: dict[tuple[str, str], list[float]] = {(v, k): [] for v, k, _, _ in commands}
        for r in range(args.rounds):
            for venv, kind, cmd, cmd_env in commands if r % 2 == 0 else commands[::-1]:
                wall, cpu, _ = run(cmd, cmd_env)
                walls[(venv, kind)].append(wall)
                cpus[(venv, kind)].append(cpu)
    for venv in args.venvs:
        a, b = statistics.median(walls[(venv, "admit")]), statistics.median(walls[(venv, "pass")])
        ca, cb = statistics.median(cpus[(venv, "admit")]), statistics.median(cpus[(venv, "pass")])
        print(f"{venv}: warm admit {a * 1e3:.1f} ms vs python -c pass {b * 1e3:.1f} ms: {a / b:.2f}x "
              f"(CPU {ca * 1e3:.1f} / {cb * 1e3:.1f} ms: {ca / cb:.2f}x)", flush=True)
    print(f"({args.rounds} rounds, every command interleaved)")


if __name__ == "__main__":
    main()
