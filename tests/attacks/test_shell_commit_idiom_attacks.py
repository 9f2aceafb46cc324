"""Claude Code's commit idiom, and the read-only table by bytes (issue 32, items 9 and 1 with 5).

``git commit -m "$(cat <<'EOF' ... EOF)"``: the ``-m`` value is a command substitution whose only
program is ``cat`` of a here-document and whose output is one word (double-quoted) that git stores as
the message. Under a policy that names git it is allowed, as root and as an unprivileged user. The
same shape is not when the substitution runs another program, fills a word that is not a data option's
value, or fills an option whose value names a program: each attack is first run by real bash in the
oracle world (fixtures/shell_lines.py) to show the unsigned program runs.

writes.READ_ONLY is keyed by name; a copy of ``cp`` called ``cat`` writes, so a program counted as only
reading must have the system program's bytes (identity.is_system) or every other program of the line
counts as after a writer.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator

import pytest

from atip_trust.agents.shell_model import Unprovable, programs
from atip_trust.policy.model import Policy

from shell_lines import ShellWorld
from test_shell_oracle import judge, run_in_bash
from test_shell_time_attacks import _AS_USER, NOBODY, ROOT, readable_world

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell lines")
IDIOM = ("git commit -m \"$(cat <<'EOF'\nFix the parser budget\n\nCo-Authored-By: Claude <noreply@anthropic.com>\n"
         "EOF\n)\"")


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[ShellWorld, Policy]]:
    """A world of its own (the attacks below add a file to its bin/), readable by every user."""
    with readable_world("atip-commit-idiom-") as world:
        yield world


def _attack(world: tuple[ShellWorld, Policy], text: str) -> str | None:
    w, policy = world
    assert run_in_bash(w, text), f"bash does not run an unsigned program for {text!r}"
    answer = judge(w, policy, text)
    assert answer in ("ask", "deny"), f"{answer}, and bash runs an unsigned program: {text!r}"
    return answer


def test_the_commit_idiom_is_allowed_under_a_policy_that_names_git_as_root(
        world: tuple[ShellWorld, Policy]) -> None:
    w, policy = world
    assert judge(w, policy, IDIOM) == "allow"
    assert judge(w, policy, IDIOM.replace("-m ", "--message=", 1)) == "allow"
    assert judge(w, policy, "git add -A && " + IDIOM) == "allow"


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root to start a process as another user (setpriv)")
def test_the_commit_idiom_is_allowed_under_a_policy_that_names_git_as_an_unprivileged_user(
        world: tuple[ShellWorld, Policy]) -> None:
    w, _ = world
    home = w.dir.parent / "home"
    home.mkdir(exist_ok=True)
    home.chmod(0o777)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "ATIP_CACHE_DIR": str(home / "cache"), "LANG": "C.UTF-8",
           "PYTHONPATH": str(ROOT)}
    r = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", sys.executable,
                        "-c", _AS_USER, json.dumps([str(w.dir), w.env["PATH"], [IDIOM]])],
                       capture_output=True, text=True, env=env, timeout=300, check=False, cwd="/")
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout)[IDIOM] == "allow", r.stderr[-3000:]


@pytest.mark.parametrize("text", [
    'git commit -m "$(./evil)"',
    "git commit -m \"$(cat <<'EOF'\nmsg\nEOF\n)$(evil)\"",
    "git commit -m \"$(cat <<'EOF' | ./evil\nmsg\nEOF\n)\"",
])
def test_a_message_substitution_that_runs_an_unsigned_program_is_not_allowed(
        world: tuple[ShellWorld, Policy], text: str) -> None:
    _attack(world, text)


@pytest.mark.parametrize("text", [
    "env \"$(cat <<'EOF'\n./evil\nEOF\n)\"",
    "tool \"$(cat <<'EOF'\nx\nEOF\n)\" && \"$(cat <<'EOF'\n./evil\nEOF\n)\"",
    "xargs -a \"$(cat <<'EOF'\nd/list\nEOF\n)\" env",
])
def test_a_substitution_outside_a_data_options_value_is_not_allowed(world: tuple[ShellWorld, Policy],
                                                                     text: str) -> None:
    _attack(world, text)


@pytest.mark.parametrize("text", [
    "git -c alias.x=\"$(cat <<'EOF'\n!./evil\nEOF\n)\" x",
    "git -c \"$(cat <<'EOF'\nalias.x=!./evil\nEOF\n)\" x",
])
def test_a_substitution_in_an_option_that_names_a_program_is_not_allowed(world: tuple[ShellWorld, Policy],
                                                                         text: str) -> None:
    _attack(world, text)


@pytest.mark.parametrize("text", [
    "git checkout -m \"$(cat <<'EOF'\nx\nEOF\n)\"",      # checkout's -m is a flag: the word is an operand
    "git commit -F -m \"$(cat <<'EOF'\nx\nEOF\n)\"",     # -m is -F's file, the word a pathspec or option
    "git -c core.pager=\"$(cat <<'EOF'\n./evil\nEOF\n)\" log",
    "git commit -m \"$(cat <<'EOF'\nx\nEOF\n) $(sed -n 1p d/list)\"",  # sed is not read-only
])
def test_the_idiom_only_holds_for_a_data_options_value_after_a_sub_command_that_stores_it(text: str) -> None:
    """The model itself: git's words are known only in the idiom's shape (the hook asks otherwise)."""
    try:
        found = programs(text)
    except Unprovable:  # a question
        return
    assert not all(p.literal for p in found if p.argv[0] == "git"), text


def test_a_copy_of_cp_called_cat_is_a_writer(world: tuple[ShellWorld, Policy]) -> None:
    w, policy = world
    copy = w.bin / "cat"
    shutil.copy2("/bin/cp", copy)
    try:
        text = "cat ./evil bin/tool; tool"
        assert run_in_bash(w, text), "bash does not run the copied-over tool"
        assert judge(w, policy, text) in ("ask", "deny")
        # and in the idiom: the substitution's "cat" writes the program git's line runs next
        idiom = "git commit -m \"$(cat ./evil bin/tool)\" ; tool"
        assert run_in_bash(w, idiom)
        assert judge(w, policy, idiom) in ("ask", "deny")
    finally:
        copy.unlink()
    assert judge(w, policy, "cat d/list; tool") == "allow"  # the system's cat still only reads
