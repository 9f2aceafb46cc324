"""The shell gate against lines whose danger is in time or place, not in their text (issue 32, items 5-7).

* Time, not text: a loop re-runs a program after its body rewrote it; a background job runs after a
  later part of the line; ``find -exec`` runs its commands once per file.
* Relative PATH entries: ``node_modules/.bin`` means the agent's directory, not the hook's.
* ``--pin`` in a hostile working directory: the launcher must not import the project's ``atip_trust/``.

Each attack is first run by real bash in the oracle world (fixtures/shell_lines.py) to show the unsigned
program does run; then the gate must not allow it. Controls show the fewer questions item 5 promises:
parts that only read (``ls``, ``git status``, ``grep | head``) do not make later programs asked, as root
and as an unprivileged user (``changeable`` asks the kernel with the real uid, so the user case runs in
a process started by ``setpriv --reuid``).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from atip_trust.admission.admit import load_admission_policy
from atip_trust.admission.options import AdmitOptions
from atip_trust.agents.formats import HookRequest
from atip_trust.agents.hooks import Options, decide_command
from atip_trust.policy.model import Policy

from shell_lines import ShellWorld, make_world
from test_shell_oracle import judge, run_in_bash

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell lines")
ROOT = Path(__file__).resolve().parents[2]
NOBODY = 65534


@contextmanager
def readable_world(prefix: str) -> Iterator[tuple[ShellWorld, Policy]]:
    """A world of its own in a folder every user may read (the unprivileged runs read it too: pytest's
    tmp_path is root's alone), removed afterwards."""
    base = Path(tempfile.mkdtemp(prefix=prefix))
    base.chmod(0o755)
    world = make_world(base / "w")
    for folder, dirs, _ in os.walk(base):
        for d in dirs:
            os.chmod(os.path.join(folder, d), 0o755)
    try:
        yield world, load_admission_policy(str(world.policy))
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def oracle() -> Iterator[tuple[ShellWorld, Policy]]:
    with readable_world("atip-time-attacks-") as world:
        yield world


def attack(oracle: tuple[ShellWorld, Policy], text: str) -> str | None:
    world, policy = oracle
    try:
        assert run_in_bash(world, text), f"the oracle does not run an unsigned program for {text!r}"
    finally:
        (world.dir / "d" / "go").unlink(missing_ok=True)
    answer = judge(world, policy, text)
    assert answer != "allow", f"allowed, and bash runs an unsigned program: {text!r}"
    return answer


@pytest.mark.parametrize("text", [
    "for i in 1 2; do tool; cp ./evil bin/tool; done",
    "while tool x && [ ! -e d/go ]; do cp ./evil bin/tool; : > d/go; done",
    "(until [ -e d/go ]; do :; done; tool) & cp ./evil bin/tool; : > d/go",
    "find d/list d/script -exec tool \\; -exec cp ./evil bin/tool \\;",
    "if true; then (until [ -e d/go ]; do :; done; env tool x) & fi; cat ./evil > bin/tool; : > d/go",
])
def test_a_program_rewritten_by_a_later_part_that_runs_first_is_asked(oracle: tuple[ShellWorld, Policy],
                                                                      text: str) -> None:
    assert attack(oracle, text) == "ask"


@pytest.mark.parametrize("text", ["ls && git status", "git add -A && git commit -m x", "grep x d/list | head",
                                  "git log --oneline | head -n 3 && ls -la | wc -l", "cat d/list | grep evil"])
def test_parts_that_only_read_make_no_later_program_asked_as_root(oracle: tuple[ShellWorld, Policy],
                                                                  text: str) -> None:
    world, policy = oracle
    assert judge(world, policy, text) == "allow", text


@pytest.mark.parametrize("text", ["git diff --output=bin/tool && tool", "git grep -O./evil x | tool",
                                  "sort -o bin/tool d/list; tool", "tool | tee bin/tool"])
def test_a_read_only_programs_writing_options_still_make_it_a_writer(oracle: tuple[ShellWorld, Policy],
                                                                     text: str) -> None:
    world, policy = oracle
    assert judge(world, policy, text) != "allow", text


_AS_USER = """
import json, sys
from atip_trust.agents.formats import HookRequest
from atip_trust.agents.hooks import Options, decide_command
from atip_trust.admission.admit import load_admission_policy
from atip_trust.admission.options import AdmitOptions
world, path, lines = json.loads(sys.argv[1])
policy = load_admission_policy(world + "/policy.json")
out = {}
for line in lines:
    v = decide_command(HookRequest("claude-code", "Bash", line, cwd=world), policy=policy,
                       options=Options(admit=AdmitOptions(audit=False, cache=False), bundle_dir=world + "/bundles",
                                       path_env=path))
    out[line] = None if v is None else v.behavior
print(json.dumps(out))
"""


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root to start a process as another user (setpriv)")
def test_parts_that_only_read_make_no_later_program_asked_as_an_unprivileged_user(
        oracle: tuple[ShellWorld, Policy]) -> None:
    world, _ = oracle
    home = world.dir.parent / "home"  # a folder nobody can reach (pytest's tmp_path is root's alone)
    home.mkdir(exist_ok=True)
    home.chmod(0o777)
    lines = ["ls && git status", "git add -A && git commit -m x", "grep x d/list | head", "cp ./evil bin/tool; tool"]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "ATIP_CACHE_DIR": str(home / "cache"), "LANG": "C.UTF-8",
           "PYTHONPATH": str(ROOT)}
    r = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", sys.executable,
                        "-c", _AS_USER, json.dumps([str(world.dir), world.env["PATH"], lines])],
                       capture_output=True, text=True, env=env, timeout=300, check=False, cwd="/")
    assert r.returncode == 0, r.stderr[-2000:]
    answers = json.loads(r.stdout)
    assert [answers[x] for x in lines[:3]] == ["allow"] * 3, (answers, r.stderr[-3000:])
    # A real writer still counts: the world is under /tmp, which every user may write (hooks.changeable
    # errs towards a question), so the tool after cp is asked, as it is for root.
    assert answers[lines[3]] == "ask", answers


# --- relative PATH entries (item 6) -----------------------------------------------------------------

def _judge_path(world: ShellWorld, policy: Policy, text: str, path: str, cwd: str | None) -> str | None:
    verdict = decide_command(HookRequest("claude-code", "Bash", text, cwd=cwd), policy=policy,
                             options=Options(admit=AdmitOptions(audit=False), bundle_dir=str(world.bundles),
                                             path_env=path))
    return None if verdict is None else verdict.behavior


@pytest.fixture()
def node_modules(oracle: tuple[ShellWorld, Policy]) -> Iterator[Path]:
    world, _ = oracle
    shim = world.dir / "node_modules" / ".bin"
    shim.mkdir(parents=True, exist_ok=True)
    evil = (world.dir / "evil").read_bytes()
    for folder in (shim, world.dir / "d" / ".bin"):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "tool").write_bytes(evil)
        (folder / "tool").chmod(0o755)
    try:
        yield shim
    finally:
        shutil.rmtree(world.dir / "node_modules", ignore_errors=True)
        shutil.rmtree(world.dir / "d" / ".bin", ignore_errors=True)


@pytest.mark.parametrize(("text", "cwd"), [("tool x", "world"), ("cd d && tool x", "world"),
                                           ("env -C d tool x", "world"), ("tool x", None),
                                           ("pushd d && tool x", "world")])
def test_a_relative_path_entry_is_the_agents_directory_not_the_hooks(
        oracle: tuple[ShellWorld, Policy], node_modules: Path, text: str, cwd: str | None) -> None:
    world, policy = oracle
    path = f"node_modules/.bin:.bin:{world.env['PATH']}"
    ran = subprocess.run(["/bin/bash", "-c", text], cwd=world.dir, env={**world.env, "PATH": path},
                         capture_output=True, timeout=60, check=False)
    try:
        assert world.sentinel.exists(), (f"bash did not run the unsigned tool for {text!r}", ran.stderr)
    finally:
        world.sentinel.unlink(missing_ok=True)
    assert os.getcwd() != str(world.dir)  # the hook's own directory is another one
    answer = _judge_path(world, policy, text, path, str(world.dir) if cwd else None)
    assert answer != "allow", text


@pytest.mark.parametrize("text", ["cd d && ntool x", "env -C d ntool x", "env -C d nice -n 1 ntool x",
                                  "env -C d env -S 'ntool x'", "env -C d sh -c 'ntool x'",
                                  "env -C d timeout 5 env -- ntool x"])
def test_a_relative_path_entry_after_a_runners_cd_is_not_the_lines_folder(oracle: tuple[ShellWorld, Policy],
                                                                         text: str) -> None:
    """The world's PATH ends in node_modules/.bin: its ntool is signed in the line's folder and unsigned
    under d/. A directory change by a runner holds for everything that runner runs, however deep (the
    100,000-line oracle found ``env -C d nice -n 1 ntool``)."""
    assert attack(oracle, text) != "allow"


def test_a_relative_path_entry_holding_a_signed_tool_is_allowed(oracle: tuple[ShellWorld, Policy]) -> None:
    world, policy = oracle
    assert judge(world, policy, "ntool x") == "allow"  # node_modules/.bin, last on PATH, in the line's folder
    assert _judge_path(world, policy, "tool x", f"bin:{world.env['PATH']}", str(world.dir)) == "allow"
    assert _judge_path(world, policy, "tool x", f"{world.env['PATH']}:node_modules/.bin", None) == "allow"


# --- --pin in a hostile working directory (item 7) ----------------------------------------------------

def _pinned(world: ShellWorld, line: str, hostile: Path) -> dict[str, object]:
    stdin = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": str(hostile),
                        "tool_input": {"command": line}})
    r = subprocess.run([sys.executable, "-m", "atip_trust", "hook", "claude-code", "--pin", "--no-audit",
                        "--policy", str(world.policy), "--bundle-dir", str(world.bundles)], input=stdin,
                       capture_output=True, text=True, env={**os.environ, **world.env}, timeout=120, check=False,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr
    spec: dict[str, object] = json.loads(r.stdout)["hookSpecificOutput"]
    return spec


def test_a_pinned_line_does_not_import_the_working_directorys_atip_trust(oracle: tuple[ShellWorld, Policy],
                                                                         tmp_path: Path) -> None:
    world, _ = oracle
    hostile = tmp_path / "project"
    (hostile / "atip_trust").mkdir(parents=True)
    planted = f"open({str(world.sentinel)!r}, 'a').write('planted atip_trust ran\\n')\n"
    (hostile / "atip_trust" / "__init__.py").write_text(planted)
    (hostile / "atip_trust" / "__main__.py").write_text(planted)
    env = {**os.environ, **world.env}
    # The class is real: "python -m atip_trust" started in that folder runs the folder's package.
    subprocess.run([sys.executable, "-m", "atip_trust", "--version"], cwd=hostile, env=env, capture_output=True,
                   timeout=60, check=False)
    assert world.sentinel.exists(), "python -m did not import the working directory's package"
    world.sentinel.unlink()
    spec = _pinned(world, "tool pr list", hostile)
    assert spec["permissionDecision"] == "allow", spec
    rewritten = spec["updatedInput"]["command"]  # type: ignore[index]
    assert " -I -m atip_trust exec " in rewritten
    ran = subprocess.run(["/bin/bash", "-c", rewritten], cwd=hostile, env=env, capture_output=True, text=True,
                         timeout=120, check=False)
    assert ran.returncode == 0 and "tool pr list" in ran.stdout, ran.stderr
    assert not world.sentinel.exists(), "the pinned launcher imported the working directory's atip_trust"


@pytest.mark.parametrize("line", ["XDG_CONFIG_HOME=. tool pr list", "ATIP_CACHE_DIR=./c tool x",
                                  "HOME=. tool x"])
def test_assignments_before_a_pinned_program_do_not_reach_the_launcher(oracle: tuple[ShellWorld, Policy],
                                                                       tmp_path: Path, line: str) -> None:
    world, _ = oracle
    spec = _pinned(world, line, tmp_path)
    assert spec["permissionDecision"] == "ask" and "launcher" in str(spec["permissionDecisionReason"]), spec


def test_the_pin_launchers_interpreter_flag_is_isolated() -> None:
    from atip_trust.cli.cmd_hook import pin_words
    program, _ = pin_words(["atip-trust", "hook", "claude-code", "--pin"])
    assert program[:3] == (sys.executable, "-I", "-m")
    assert stat.S_ISREG(os.stat(program[0]).st_mode)
