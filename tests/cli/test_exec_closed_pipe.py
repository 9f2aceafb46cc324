"""``exec``'s exit code is its verdict whatever the reader of its output does (issue 34, item 8;
docs/contract.md, "Exit codes": "A reader that closes the pipe early (`| head -1`, `| grep -q`) does not
change the code"). A refusal writes its reasons to standard error; piped into ``head -1`` (``2>&1``), head may
leave before the last reason line, and that write's EPIPE used to turn the refusal (1) into an error (2)
in some runs. Here the reader is gone before anything is written (a pipe whose read end is closed), so
every write fails: the race's losing side, every time."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes and shell")
CLI = [sys.executable, "-m", "atip_trust"]


def env() -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("ATIP_TRUST_")}, "CI": "true"}


@pytest.mark.parametrize("closed", ["stdout", "stderr", "both"])
def test_a_refusal_is_1_when_its_reader_is_gone(tmp_path: Path, closed: str) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader left before the first byte
    try:
        streams = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        for name in (("stdout", "stderr") if closed == "both" else (closed,)):
            streams[name] = write_end
        p = subprocess.run([*CLI, "exec", "--no-audit", "--", "/bin/ls"], stdin=subprocess.DEVNULL,
                           timeout=120, env=env(), cwd=tmp_path, **streams)  # type: ignore[arg-type]
    finally:
        os.close(write_end)
    assert p.returncode == 1


def test_the_docs_pipeline_into_head_gives_the_refusals_exit_code(tmp_path: Path) -> None:
    """The user's line: ``atip-trust exec -- /bin/ls 2>&1 | head -1`` under ``set -o pipefail``."""
    cli = " ".join(map(repr, CLI))
    script = "; ".join(["set -o pipefail"] + [
        f"{cli} exec --no-audit -- /bin/ls 2>&1 | head -1 >/dev/null; echo ${{PIPESTATUS[0]}}"] * 6)
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=600, env=env(),
                         cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert out.stdout.split() == ["1"] * 6, out.stderr
    assert "Traceback" not in out.stderr
