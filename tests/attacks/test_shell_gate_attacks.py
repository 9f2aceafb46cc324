"""The agent shell gate against the classes of line that once talked it into allowing unsigned programs.

Each attack line is first run by real bash in the oracle world (fixtures/shell_lines.py) to show it does
run an unsigned program there (so the test is about a real escape), then judged by the gate, which must
not allow it. Controls show the gate still sees through the same construct when what it runs is signed
(it models the construct rather than refusing everything).
"""

from __future__ import annotations

import sys

import pytest

from atip_trust.admission.admit import load_admission_policy
from atip_trust.agents.shell_model import Unprovable, programs
from atip_trust.policy.model import Policy

from shell_lines import ShellWorld, make_world
from test_shell_oracle import judge, run_in_bash

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell lines")


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> tuple[ShellWorld, Policy]:
    world = make_world(tmp_path_factory.mktemp("attacks"))
    return world, load_admission_policy(str(world.policy))


def attack(oracle: tuple[ShellWorld, Policy], text: str, *, runs: bool = True) -> str | None:
    world, policy = oracle
    # find -execdir refuses to run anything while PATH holds a relative entry (the world's last one)
    path = world.env["PATH"].rsplit(":", 1)[0] if "-execdir" in text else None
    if runs:
        assert run_in_bash(world, text, path=path), f"the oracle does not run an unsigned program for {text!r}"
    answer = judge(world, policy, text)
    assert answer != "allow", f"allowed, and bash runs an unsigned program: {text!r}"
    return answer


@pytest.mark.parametrize("text", ["echo evil | xargs env", "xargs -a d/list nice", "printf 'evil\\0' | xargs -0 env",
                                  "cat d/list | xargs -n1 timeout 5", "echo evil | xargs -I{} env {}",
                                  "echo evil | xargs --null --max-args=1 env"])
def test_xargs_feeding_a_runner_with_nothing_to_run_is_not_allowed(oracle: tuple[ShellWorld, Policy],
                                                                  text: str) -> None:
    attack(oracle, text, runs="-I{}" not in text and "--null" not in text)
    with pytest.raises(Unprovable, match="comes from that input|program.s name|not known"):
        programs(text)


def test_xargs_running_a_signed_tool_is_still_asked_for_its_unknown_words(oracle: tuple[ShellWorld, Policy]) -> None:
    """xargs appends its input to the tool's words: the tool is known, its words are not."""
    world, policy = oracle
    assert judge(world, policy, "echo x | xargs tool") == "ask"


@pytest.mark.parametrize("text", ["command ./[d]/evil", "exec ./[d]/evil", "time ./[d]/evil", "nice ~/evil",
                                  "env {evil,x}", "timeout 5 ./d/[e]vil", "nohup $F", "env ${E}"])
def test_an_expansion_in_a_wrappers_operand_is_not_allowed(oracle: tuple[ShellWorld, Policy], text: str) -> None:
    attack(oracle, text)


@pytest.mark.parametrize("text", ["read E <<< evil; env $E", "printf -v E evil; env $E", "declare E=evil; env $E",
                                  "mapfile -t A < d/list; env ${A[0]}", "hash -p ./evil tool; tool",
                                  "typeset E=evil; env $E", "readarray A < d/list; env $A",
                                  "export PATH=.:$PATH; evil", "alias tool=./evil; tool", "set -- evil; env $1"])
def test_builtins_that_assign_what_lookup_depends_on_are_not_allowed(oracle: tuple[ShellWorld, Policy],
                                                                     text: str) -> None:
    attack(oracle, text, runs="alias" not in text)  # aliases do not expand in 'bash -c'
    with pytest.raises(Unprovable):
        programs(text)


@pytest.mark.parametrize("text", ["cp ./evil bin/tool && tool", "cat ./evil > bin/tool; tool",
                                  "tee bin/tool < ./evil > /dev/null; tool", "cp ./evil bin/tool; env tool",
                                  "cat ./evil > bin/tool | tool"])
def test_a_line_that_writes_a_file_and_then_runs_it_is_asked(oracle: tuple[ShellWorld, Policy], text: str) -> None:
    runs = "| tool" not in text  # in a pipeline the write may lose the race: the gate must not count on it
    assert attack(oracle, text, runs=runs) == "ask"


def test_the_same_tool_without_an_earlier_writer_is_allowed(oracle: tuple[ShellWorld, Policy]) -> None:
    world, policy = oracle
    assert judge(world, policy, "tool pr list") == "allow"
    assert judge(world, policy, "cd d && tool pr list") == "allow"  # a builtin writes nothing


@pytest.mark.parametrize("text", ["env -- X=1 ./evil", "env X=1 ./evil", "env -S './evil'", "env --spl=./evil",
                                  "env -vS./evil", "env -iS./evil", "env -u HOME -- ./evil", "env - ./evil"])
def test_envs_own_grammar_finds_the_program_it_runs(oracle: tuple[ShellWorld, Policy], text: str) -> None:
    attack(oracle, text)
    assert programs(text)[-1].argv[0] == "./evil"


@pytest.mark.parametrize("text", ["env -- X=1 tool", "env -S 'tool pr'", "env --split-string=tool", "env -i ls",
                                  "env -u HOME tool"])
def test_envs_grammar_controls_are_allowed(oracle: tuple[ShellWorld, Policy], text: str) -> None:
    """(``env -i`` empties PATH, so execvp searches /bin:/usr/bin: ``env -i tool`` finds no tool.)"""
    world, policy = oracle
    assert judge(world, policy, text) == "allow", text


@pytest.mark.parametrize("text", [
    "find . -maxdepth 0 -exec ./evil \\;", "find . -maxdepth 0 -execdir ./evil \\;",
    "find . -maxdepth 0 -exec env ./evil {} +", "git -c alias.x='!./evil' x", "flock d/lock ./evil",
    "flock d/lock -c ./evil", "ionice -c3 ./evil", "taskset 0x1 ./evil", "chrt -o 0 ./evil", "setsid ./evil",
    "stdbuf -o0 ./evil", "timeout -k 1 5 ./evil", "nice -10 ./evil", "bash -lc ./evil", "sh ./evil",
    "time -p ./evil", "builtin command ./evil",
])
def test_programs_that_run_other_programs_are_unwrapped(oracle: tuple[ShellWorld, Policy], text: str) -> None:
    attack(oracle, text, runs=not text.startswith("builtin"))


@pytest.mark.parametrize("text", [
    "git -c core.fsmonitor=./evil status", "git -c core.pager=./evil log", "git -c core.sshCommand=./evil fetch",
    "git -c diff.external=./evil diff", "git -c credential.helper=./evil push", "git --exec-path=d status",
    "GIT_SSH_COMMAND=./evil git fetch", "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor "
    "GIT_CONFIG_VALUE_0=./evil git status", "PAGER=./evil git log", "GIT_EXTERNAL_DIFF=./evil git diff",
    "git -c include.path=d/cfg status", "git -C d -c core.hooksPath=d commit", "git x", "EDITOR=./evil git commit",
])
def test_gits_command_running_configuration_is_not_allowed(oracle: tuple[ShellWorld, Policy], text: str) -> None:
    attack(oracle, text, runs=False)  # git needs a repository to reach most of these; the model refuses them all
    with pytest.raises(Unprovable):
        programs(text)


def test_git_with_harmless_configuration_is_allowed(oracle: tuple[ShellWorld, Policy]) -> None:
    world, policy = oracle
    assert judge(world, policy, "git -c color.ui=never -C d status --short") == "allow"


@pytest.mark.parametrize("text", ["sudo tool", "sudo -u root tool", "doas tool"])
def test_sudo_looks_names_up_on_its_own_path_so_a_bare_name_is_not_vouched_for(text: str) -> None:
    with pytest.raises(Unprovable, match="secure path"):
        programs(text)


@pytest.mark.parametrize("text", ["echo a\\\nb; ./evil", "tool \\\n; ./evil", "ls # \\\n./evil"])
def test_input_the_grammar_skips_is_not_vouched_for(oracle: tuple[ShellWorld, Policy], text: str) -> None:
    """A backslash-newline joins lines in bash; the grammar may read it otherwise."""
    attack(oracle, text)
