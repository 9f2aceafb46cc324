"""The shell oracle at 100,000 lines, as root and as an unprivileged user (issue 32, "Must show").

Seeded ``random.Random`` lines from fixtures/shell_lines.py (loops and jobs, relative PATH, ``--pin`` in a
folder shipping its own ``atip_trust/``, a deny rule on ``gh repo delete``); every allowed line is run by
real bash, every tenth also pinned. 0 allowed lines may run unverified bytes or a denied command (the
world's two sentinels, test_shell_oracle.ran). The
decision depends on the real uid (``hooks.changeable`` asks the kernel), so the user run is a process
started by ``setpriv`` in a world that user owns. Marked ``slow`` (about half an hour each): ``-m slow``.

    ATIP_ORACLE_LINES=20000 pytest -m slow tests/attacks/test_shell_oracle_slow.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell lines")]
ROOT = Path(__file__).resolve().parents[2]
LINES = int(os.environ.get("ATIP_ORACLE_LINES", "100000"))
NOBODY = 65534

#: Run in a fresh interpreter (as root, or as the user): make the world, judge the lines, run the allowed.
SCRIPT = """
import collections, json, random, shutil, sys, tempfile
from pathlib import Path
from shell_lines import line, make_world
from test_shell_oracle import judge, judge_pinned, ran
from atip_trust.admission.admit import load_admission_policy
n, seed = int(sys.argv[1]), int(sys.argv[2])
base = Path(tempfile.mkdtemp(prefix="atip-oracle-"))
world = make_world(base / "w")
policy = load_admission_policy(str(world.policy))
rng = random.Random(seed)
answers, escaped, allowed = collections.Counter(), [], 0
for i in range(n):
    text = line(rng)
    answer = judge(world, policy, text)
    answers[str(answer)] += 1
    if answer != "allow":
        continue
    allowed += 1
    if any(ran(world, text)):
        escaped.append(text)
    if allowed % 10 == 0:
        pinned = judge_pinned(world, policy, text)
        if pinned is not None and any(ran(world, pinned)):
            escaped.append("--pin: " + pinned)
shutil.rmtree(base, ignore_errors=True)
print(json.dumps({"lines": n, "answers": answers, "escaped": escaped[:20], "escapes": len(escaped)}))
"""


def _run(prefix: list[str], home: str) -> dict[str, object]:
    env = {"PATH": "/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8", "ATIP_CACHE_DIR": f"{home}/cache",
           "PYTHONPATH": os.pathsep.join(str(ROOT / p) for p in ("fixtures", "tests/attacks", "tests", "."))}
    r = subprocess.run([*prefix, sys.executable, "-c", SCRIPT, str(LINES), "2026"], capture_output=True, text=True,
                       env=env, cwd=home, timeout=4 * 3600, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    result: dict[str, object] = json.loads(r.stdout.splitlines()[-1])
    return result


def test_the_oracle_at_scale_as_root() -> None:
    home = tempfile.mkdtemp(prefix="atip-oracle-root-")
    try:
        result = _run([], home)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert result["escapes"] == 0, result
    assert result["answers"]["allow"] >= LINES // 40, result  # type: ignore[index]


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root to start a process as another user (setpriv)")
def test_the_oracle_at_scale_as_an_unprivileged_user() -> None:
    home = tempfile.mkdtemp(prefix="atip-oracle-user-")
    os.chown(home, NOBODY, NOBODY)
    try:
        result = _run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"], home)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert result["escapes"] == 0, result
    assert result["answers"]["allow"] >= LINES // 40, result  # type: ignore[index]
