"""The decided start-up bounds, in instructions (valgrind callgrind), from a non-editable install:

* warm CLI ``admit`` (a verdict-cache hit; bench/cache.py's world: a keyless-signed tool, its bundle, a
  file trusted root, a one-signer policy, ``--no-audit --format json``)   goal <= 4.5x ``python -c pass``
* warm CLI ``hook claude-code`` answering ``gh pr list --state open`` (fixtures/shell_lines.py's world:
  signed gh and runners, bundles by digest, its policy)                   goal <= 6.0x ``python -c pass``

each against that venv's ``python -c pass``. Instructions, not seconds: the count repeats for the same
binary and inputs whatever else the machine does (docs/adr/0001-start-up.md).

    python bench/instructions.py VENV        (VENV: python3 -m venv VENV && VENV/bin/pip install .)
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
for extra in (HERE, HERE.parent / "fixtures"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

import cache as bench_cache  # noqa: E402  (bench/cache.py)

from shell_lines import make_world  # noqa: E402


def instructions(argv: list[str], env: dict[str, str], stdin: str = "") -> int:
    p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv], input=stdin,
                       capture_output=True, text=True, env=env, cwd="/", timeout=600, check=False)
    for row in p.stderr.splitlines():
        if "Collected :" in row:
            return int(row.rsplit(":", 1)[1])
    raise SystemExit(f"callgrind gave no count for {argv[:2]}: {p.stderr[-400:]}")


def _warm(argv: list[str], env: dict[str, str], stdin: str, expect: str) -> None:
    for _ in range(2):  # the miss that fills the cache, then a hit
        out = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, cwd="/", check=False)
    if expect not in out.stdout:
        raise SystemExit(f"{argv[1]}: expected {expect!r} in the answer, got {out.stdout[:200]!r} {out.stderr[-300:]!r}")


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("venv")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is needed (Debian: valgrind)")
    bindir = Path(args.venv) / "bin"
    work = Path(tempfile.mkdtemp(prefix="atip-bench-instr-"))
    try:
        (work / "admit").mkdir()
        argv, env, _ = bench_cache.make_world(work / "admit", 1 << 16)
        env.pop("PYTHONPATH", None)
        admit = [str(bindir / "atip-trust"), *argv[3:]]
        _warm(admit, env, "", '"cache": "hit"')
        world = make_world(work / "hook")
        hook_env = {**env, **world.env, "CI": "true", "ATIP_CACHE_DIR": str(work / "hook-cache")}
        hook = [str(bindir / "atip-trust"), "hook", "claude-code", "--policy", str(world.policy), "--bundle-dir",
                str(world.bundles), "--no-audit"]
        stdin = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": str(world.dir),
                            "tool_input": {"command": "gh pr list --state open"}})
        _warm(hook, hook_env, stdin, '"allow"')
        base = instructions([str(bindir / "python"), "-c", "pass"], env)
        for name, goal, count in (("warm admit", 4.5, instructions(admit, env)),
                                  ("warm hook", 6.0, instructions(hook, hook_env, stdin))):
            print(f"{name}: {count / 1e6:.1f} M instructions, python -c pass {base / 1e6:.1f} M: "
                  f"{count / base:.2f}x (goal <= {goal}x)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
