"""The agent shell gate's figures, each against a reference measured in the same run:

* **oracle**: N hostile lines (fixtures/shell_lines.py, seeded ``random.Random``; default 100,000) judged
  in-process; every line the gate allows is run by real bash in a world whose unsigned programs leave a
  sentinel. Prints lines, answers, allowed lines run, and lines after which an unsigned program ran
  (must be 0).
* **parse**: ``shell_model.programs`` and the whole in-process decision on lines of 1 to 20 KB, in ms and
  ms per KB (linear means a flat ms/KB).
* **adversarial**: the whole in-process decision on the shapes that made the grammar super-linear (issue 32:
  ``a=(b=(`` chains, open pipelines, runner chains, deep nesting, long quotes) at 4 to 64 KB, in ms per KB
  (flat means bounded: a budgeted parse is cancelled, the answer a denial or a question).
* **warm hook**: ``atip-trust hook claude-code`` answering a signed ``gh pr list`` (verdict cache warm,
  parser loaded) from a copy installed as ``pip install .`` makes it, against that venv's
  ``python -c pass`` (goal <= 3.5x).

    python bench/hook.py [--lines N] [--skip-installed]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for extra in (ROOT / "fixtures", ROOT / "tests", ROOT / "tests" / "attacks", ROOT):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))
os.environ.setdefault("ATIP_CACHE_DIR", tempfile.mkdtemp(prefix="atip-bench-hook-cache-"))

from atip_trust.admission.admit import load_admission_policy  # noqa: E402
from atip_trust.admission.options import AdmitOptions  # noqa: E402
from atip_trust.agents.formats import HookRequest  # noqa: E402
from atip_trust.agents.hooks import Options, decide_command  # noqa: E402
from atip_trust.agents.shell_model import programs  # noqa: E402

from shell_lines import line, make_world  # noqa: E402
from test_shell_oracle import judge, run_in_bash  # noqa: E402


def oracle(work: Path, n: int) -> None:
    world = make_world(work / "oracle")
    policy = load_admission_policy(str(world.policy))
    rng = random.Random(2026)
    answers: collections.Counter[str | None] = collections.Counter()
    escaped: list[str] = []
    start = time.perf_counter()
    for _ in range(n):
        text = line(rng)
        answer = judge(world, policy, text)
        answers[answer] += 1
        if answer == "allow" and run_in_bash(world, text):
            escaped.append(text)
    took = time.perf_counter() - start
    print(f"oracle: {n} lines in {took:.0f} s; answers {dict(answers)}; allowed lines run by bash: "
          f"{answers['allow']}; unsigned programs run after an allow: {len(escaped)}", flush=True)
    for text in escaped[:10]:
        print(f"  ESCAPED: {text!r}")


def parse(work: Path) -> None:
    world = make_world(work / "parse")
    policy = load_admission_policy(str(world.policy))
    unit = "tool pr list --state open 'a b' 2>/dev/null && nice -n 1 env -- tool x | cat; "
    options = Options(admit=AdmitOptions(audit=False), bundle_dir=str(world.bundles), path_env=world.env["PATH"])
    for kb in (1, 2, 5, 10, 20):
        text = (unit * (kb * 1024 // len(unit) + 1))[: kb * 1024].rsplit(";", 1)[0]
        model = statistics.median(_time(lambda: programs(text)) for _ in range(5))
        request = HookRequest("claude-code", "Bash", text, cwd=str(world.dir))
        whole = statistics.median(_time(lambda: decide_command(request, policy=policy, options=options))
                                  for _ in range(3))
        print(f"parse {kb:2d} KB line: model {model * 1e3:7.2f} ms ({model * 1e3 / kb:5.2f} ms/KB), "
              f"whole decision {whole * 1e3:8.1f} ms ({whole * 1e3 / kb:6.1f} ms/KB)", flush=True)


ADVERSARIAL = {"a=(b=(": "a=(b=(", "open pipeline": "ls|", "runner chain": "env ", "nesting": "(",
               "long quote": "'x", "substitutions": '"$('}


def adversarial(work: Path) -> None:
    world = make_world(work / "adversarial")
    policy = load_admission_policy(str(world.policy))
    options = Options(admit=AdmitOptions(audit=False), bundle_dir=str(world.bundles), path_env=world.env["PATH"])
    for name, unit in ADVERSARIAL.items():
        cells = []
        for kb in (4, 16, 64):
            request = HookRequest("claude-code", "Bash", unit * (kb * 1024 // len(unit)), cwd=str(world.dir))
            took = statistics.median(_time(lambda: decide_command(request, policy=policy, options=options))
                                     for _ in range(3))
            verdict = decide_command(request, policy=policy, options=options)
            cells.append(f"{kb:2d} KB {took * 1e3 / kb:6.2f} ms/KB ({verdict.behavior if verdict else None})")
        print(f"adversarial {name:14s} " + "  ".join(cells), flush=True)


def _time(fn: object) -> float:
    t = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - t


def _venv(work: Path) -> Path | None:
    venv = work / "installed"
    steps = ([sys.executable, "-m", "venv", str(venv)],
             [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(ROOT)])
    for step in steps:
        p = subprocess.run(step, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
        if p.returncode != 0:
            print(f"warm hook, installed copy: skipped ({' '.join(step[:4])}... exited {p.returncode})")
            return None
    return venv / "bin"


def warm_hook(work: Path) -> None:
    bindir = _venv(work)
    if bindir is None:
        return
    world = make_world(work / "hook")
    stdin = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": str(world.dir),
                        "tool_input": {"command": "gh pr list --state open"}})
    env = {**os.environ, **world.env, "CI": "true"}
    mine = [str(bindir / "atip-trust"), "hook", "claude-code", "--policy", str(world.policy), "--bundle-dir",
            str(world.bundles), "--no-audit"]
    first = subprocess.run(mine, input=stdin, capture_output=True, text=True, env=env, check=False)
    if '"allow"' not in first.stdout:
        print(f"warm hook: skipped (the answer is not allow: {first.stdout or first.stderr})")
        return
    bare = [str(bindir / "python"), "-c", "pass"]
    hook_t, bare_t = [], []
    for _ in range(15):  # interleaved, so a machine that gets busier slows both alike
        hook_t.append(_time(lambda: subprocess.run(mine, input=stdin, capture_output=True, text=True, env=env,
                                                   check=False)))
        bare_t.append(_time(lambda: subprocess.run(bare, capture_output=True, env=env, check=False)))
    h, b = statistics.median(hook_t), statistics.median(bare_t)
    print(f"warm hook answer (pip-installed copy): {h * 1e3:.0f} ms; python -c pass (that venv): "
          f"{b * 1e3:.0f} ms; ratio {h / b:.2f}x (goal <= 3.5x; instructions: bench/instructions.py)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--skip-installed", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="atip-bench-hook-") as tmp:
        work = Path(tmp)
        parse(work)
        adversarial(work)
        if not args.skip_installed:
            warm_hook(work)
        oracle(work, args.lines)


if __name__ == "__main__":
    main()
