"""The bounded runner (execution/child.py): the verified descriptor is what runs, with no stdin, a scrubbed
environment, a deadline and an output cap that kill the whole process group."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from atip_trust.errors import ArtifactAccessError, EnvironmentFailure
from atip_trust.execution import child as run_mod
from atip_trust.execution.child import run_verified
from atip_trust.facts.artifact import Artifact

from discovery_world import process_alive


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return path


def test_repointing_the_name_after_verification_runs_the_verified_bytes_not_the_new_ones(
        tmp_path: Path) -> None:
    (tmp_path / "v1").mkdir()
    (tmp_path / "v2").mkdir()
    _script(tmp_path / "v1" / "tool", "echo verified")
    sentinel = tmp_path / "swapped-ran"
    _script(tmp_path / "v2" / "tool", f"touch '{sentinel}'; echo swapped")
    (tmp_path / "current").symlink_to("v1")
    with Artifact.open(tmp_path / "current" / "tool") as art:
        art.sha256
        (tmp_path / "next").symlink_to("v2")
        os.replace(tmp_path / "next", tmp_path / "current")  # the name now leads to other bytes
        res = run_verified(art, [], timeout=10, max_output=4096)
    assert res.exit_code == 0 and res.stdout == b"verified\n"
    assert not sentinel.exists()


def test_replacing_the_verified_file_itself_is_refused_not_run(tmp_path: Path) -> None:
    tool = _script(tmp_path / "tool", "echo verified")
    sentinel = tmp_path / "swapped-ran"
    with Artifact.open(tool) as art:
        art.sha256
        os.replace(_script(tmp_path / "swap", f"touch '{sentinel}'"), tool)  # unlinks the verified inode
        with pytest.raises(ArtifactAccessError, match="changed since it was verified"):
            run_verified(art, [], timeout=10, max_output=4096)
    assert not sentinel.exists()


def test_a_file_rewritten_in_place_after_verification_is_refused(tmp_path: Path) -> None:
    tool = _script(tmp_path / "tool", "echo verified")
    with Artifact.open(tool) as art:
        art.sha256
        time.sleep(0.01)
        with open(tool, "a") as f:
            f.write("echo injected\n")
        with pytest.raises(ArtifactAccessError, match="changed since it was verified"):
            run_verified(art, [], timeout=10, max_output=4096)


def test_the_tool_gets_no_stdin_and_none_of_the_callers_environment(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECRET_TOKEN", "hunter2")
    tool = _script(tmp_path / "tool", "env; if read line; then echo got-stdin; fi")
    with Artifact.open(tool) as art:
        res = run_verified(art, [], timeout=10, max_output=65536)
    assert b"hunter2" not in res.stdout and b"got-stdin" not in res.stdout
    assert b"PATH=/usr/bin:/bin" in res.stdout and b"LANG=C" in res.stdout


def test_timeout_kills_the_process_group_including_a_lingering_child(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    tool = _script(tmp_path / "tool", f"sleep 300 & echo $! > '{pidfile}'\nexec sleep 300")
    start = time.monotonic()
    with Artifact.open(tool) as art:
        res = run_verified(art, [], timeout=0.5, max_output=4096)
    assert res.timed_out and res.exit_code is None and time.monotonic() - start < 5
    assert not process_alive(int(pidfile.read_text()))


def test_output_past_the_cap_is_cut_and_the_group_killed(tmp_path: Path) -> None:
    tool = _script(tmp_path / "tool", "head -c 10000000 /dev/zero; exec sleep 300")
    with Artifact.open(tool) as art:
        res = run_verified(art, [], timeout=20, max_output=100_000)
    assert res.truncated and len(res.stdout) == 100_000 and not res.timed_out


def test_a_child_left_behind_by_a_tool_that_exits_is_killed_and_does_not_stall_the_run(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    tool = _script(tmp_path / "tool", f"sleep 300 & echo $! > '{pidfile}'\necho done")
    start = time.monotonic()
    with Artifact.open(tool) as art:
        res = run_verified(art, [], timeout=20, max_output=4096)
    assert res.exit_code == 0 and res.stdout == b"done\n"
    assert time.monotonic() - start < 5  # not the child's 300 s, nor the 20 s deadline
    assert not process_alive(int(pidfile.read_text()))


def test_without_proc_self_fd_the_run_is_refused_never_done_by_path(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    sentinel = tmp_path / "ran"
    tool = _script(tmp_path / "tool", f"touch '{sentinel}'")
    monkeypatch.setattr(run_mod, "PROC_FD", str(tmp_path / "no-proc"))
    with Artifact.open(tool) as art, pytest.raises(EnvironmentFailure, match="not available"):
        run_verified(art, [], timeout=5, max_output=4096)
    assert not sentinel.exists()
