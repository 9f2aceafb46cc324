"""The shell gate against lines that are read correctly but run something else (issue 32, items 1-4):
a program's identity taken from its name, options read as words, inputs that choose code, builtins
that evaluate.

Each attack line is first run by real bash in the oracle world (fixtures/shell_lines.py) to show that it
really runs an unsigned program or a command a deny rule names (``ran``), then judged by the gate, which
must not allow it. Controls show the same programs are still allowed when nothing hostile is said.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from atip_trust.admission.admit import load_admission_policy
from atip_trust.agents import identity, spellings
from atip_trust.agents.runners import RUNNERS
from atip_trust.agents.shell_model import Unprovable, programs
from atip_trust.facts.program_tables import TABLES
from atip_trust.policy.model import Policy

from shell_lines import ShellWorld, make_world
from test_shell_oracle import judge, ran, refused

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell lines")


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> tuple[ShellWorld, Policy]:
    world = make_world(tmp_path_factory.mktemp("programs"))
    return world, load_admission_policy(str(world.policy))


def attack(oracle: tuple[ShellWorld, Policy], text: str, *, unsigned: bool = False, denied: bool = False) -> str:
    """Bash runs ``text`` (an unsigned program and/or a denied command, as said); the gate does not allow it."""
    world, policy = oracle
    return refused(world, policy, text, ran(world, text), unsigned=unsigned, denied=denied)


# -- 1. identity by bytes ------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["wrap ./evil", "wrap -S ./evil", "wrap X=1 ./evil", "bin/wrap ./evil",
                                  "wrap -- evil"])
def test_a_copy_of_env_under_an_allowed_name_is_read_as_env(oracle: tuple[ShellWorld, Policy], text: str) -> None:
    """``wrap`` is allowed by name and has env's (signed) bytes: what it runs is admitted too."""
    attack(oracle, text, unsigned=True)


def test_a_copy_of_env_running_a_signed_tool_is_still_allowed(oracle: tuple[ShellWorld, Policy]) -> None:
    world, policy = oracle
    assert judge(world, policy, "wrap tool pr list") == "allow"
    assert judge(world, policy, "wrap -i ls") == "allow"


@pytest.mark.parametrize("text", ["tools/hub repo delete x", "./tools/hub repo delete x"])
def test_a_link_to_a_governed_program_gets_its_deny_rules(oracle: tuple[ShellWorld, Policy], text: str) -> None:
    assert attack(oracle, text, denied=True) == "deny"


def test_a_link_to_a_governed_program_is_never_passed_through(tmp_path: Path,
                                                              oracle: tuple[ShellWorld, Policy]) -> None:
    """Under hooks.unlisted passthrough, a name the policy does not know is no opinion: not so for
    gh reached through a link whose name the policy never mentions."""
    world, policy = oracle
    assert judge(world, policy, "tools/hub pr list") == "allow"  # gh's allow rule, as gh
    link = world.dir / "d" / "opaque"
    link.symlink_to(world.bin / "gh")
    try:
        assert judge(world, policy, "d/opaque repo delete x") == "deny"
    finally:
        link.unlink()


def test_a_copy_of_git_under_another_name_is_read_as_git(oracle: tuple[ShellWorld, Policy]) -> None:
    """Named ``vcs``, git's bytes still run an alias from ``-c``: modelled as git, the line is refused
    (as ``vcs`` it would only be a program the policy does not name: no opinion)."""
    world, policy = oracle
    git = shutil.which("git", path="/usr/bin:/bin")
    assert git is not None
    copy = world.dir / "d" / "vcs"
    copy.write_bytes(Path(git).read_bytes())
    copy.chmod(0o755)
    try:
        text = "d/vcs -c alias.x='!./evil' x"
        assert ran(world, text)[0]
        assert judge(world, policy, text) == "ask"
    finally:
        copy.unlink()


def test_a_hard_copy_of_a_runner_is_found_by_its_bytes(tmp_path: Path) -> None:
    env = shutil.which("env", path="/usr/bin:/bin")
    assert env is not None
    copy = tmp_path / "innocent"
    copy.write_bytes(Path(env).read_bytes())
    copy.chmod(0o755)
    names = identity.names_of(str(copy), frozenset(), "/usr/bin:/bin")
    assert "env" in names and identity.identity("innocent", names, frozenset()) == "env"
    # A file that is env by name and bytes is read as env: nothing changes.
    assert identity.identity("env", identity.names_of(env, frozenset(), "/usr/bin:/bin"), frozenset()) is None


# -- 2. options as the program reads them --------------------------------------------------------------

@pytest.mark.parametrize("text", ["git push -fu origin main", "git push -vf origin main",
                                  "git push --force-with-lease origin main", "git push --force-w origin main",
                                  "git push --mirror origin", "git push origin +main", "git -C . push -qf origin main"])
def test_every_force_push_spelling_is_denied(oracle: tuple[ShellWorld, Policy], text: str) -> None:
    """Each line really force-pushes (the remote's update hook sees a non-fast-forward update)."""
    assert attack(oracle, text, denied=True) == "deny"


def test_a_push_that_is_not_forced_is_allowed(oracle: tuple[ShellWorld, Policy]) -> None:
    world, policy = oracle
    # (--force-if-includes forces only when the remote's tip is in the local reflog: not run here.)
    assert judge(world, policy, "git push --force-if-includes origin main") == "deny"
    assert judge(world, policy, "git push origin main") == "allow"
    assert ran(world, "git push origin main") == (False, False)  # rejected: not a fast-forward


@pytest.mark.parametrize("text", ["gh repo {x}<<<y delete", "gh repo {fd}>/dev/null delete", "gh repo 0<&- delete"])
def test_a_word_glued_to_a_redirection_cannot_hide_the_sub_command(oracle: tuple[ShellWorld, Policy],
                                                                   text: str) -> None:
    attack(oracle, text, denied=True)
    with pytest.raises(Unprovable):
        programs(text)


def test_readings_split_clusters_values_and_expand_abbreviations() -> None:
    named = ["--force", "--force-with-lease", "--mirror"]
    got = spellings.readings(("git", "push", "-fu", "--mir", "--repo=x"), named)
    assert ("git", "push", "-f", "-u", "--mir", "--repo", "x") in got
    assert ("git", "push", "-f", "-u", "--mirror", "--repo", "x") in got
    assert len(spellings.readings(("git",) + ("--f",) * 200, named)) <= spellings.MAX_READINGS


# -- 3. inputs that choose code ------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["HOME=d git status", "XDG_CONFIG_HOME=d git status", "env HOME=d git status",
                                  "HOME=d bash -c 'git status'", "git -C vendor/lib.git status",
                                  "git grep --no-index -O./evil evil d/list", "tar -I ./evil -cf out.tar d",
                                  "tar --checkpoint=1 --checkpoint-action=exec=./evil -cf out.tar d",
                                  "tar cIf ./evil out.tar d", "prlimit ./evil", "setarch x86_64 ./evil",
                                  "setarch -R ./evil"])
def test_inputs_that_make_a_program_run_another_are_not_allowed(oracle: tuple[ShellWorld, Policy],
                                                                text: str) -> None:
    attack(oracle, text, unsigned=True)


@pytest.mark.parametrize("text", ["sort --compress-prog=./evil f", "rg --pre ./evil x", "rg -zn x",
                                  "fd -x ./evil", "fd --exec-b ./evil", "git clone -u ./evil r x",
                                  "git clone --template=d r x", "git push --receive-pack=./evil origin",
                                  "git push --exe=./evil origin", "git archive --exec=./evil --remote=r HEAD",
                                  "git fetch --upload-p=./evil origin", "git ls-remote --upload-pack=./evil r",
                                  "git rebase --ex ./evil", "git --git-dir=vendor/lib.git status",
                                  "git --work-tree=. status", "git for-each-repo --config=x status",
                                  "split --filter=./evil f", "install -s f d/x", "wget -e use_askpass=./evil x",
                                  "GH_CONFIG_DIR=d gh pr list", "gh my-extension", "gh pr view -w 1",
                                  "sort $OPTS f", "tar -cf out.tar *", "curl --engine x https://x",
                                  "zip -TT ./evil a.zip f", "zip --unzip-command=./evil a.zip f",
                                  "git fetch --upload-pack=\"$X\" origin", "git commit \"$X\"", "gh pr view $N -w"])
def test_program_naming_options_and_variables_are_unprovable(text: str) -> None:
    """Runs that need a remote, a big input or a program not installed here: the model refuses them all."""
    with pytest.raises(Unprovable, match="docs/agents.md|could be an option|not known"):
        programs(text)


@pytest.mark.parametrize("text", ["git status", "LANG=C git log --oneline", "git -C d status", "tar -cf out.tar d",
                                  "sort -u f", "git push origin main", "gh pr list", "NO_COLOR=1 gh repo view",
                                  "git commit -am \"$MSG\"", "git log --grep=\"$X\"",
                                  "gh pr create --title \"$T\" --body \"$B\""])
def test_what_the_tables_allow_is_still_read(text: str) -> None:
    assert programs(text)


def test_git_in_the_working_directorys_repository_is_allowed(oracle: tuple[ShellWorld, Policy]) -> None:
    world, policy = oracle
    assert judge(world, policy, "git status") == "allow"
    assert judge(world, policy, "git -C d status") == "allow"  # the same repository


def test_git_after_a_cd_or_without_a_cwd_is_asked(oracle: tuple[ShellWorld, Policy]) -> None:
    world, policy = oracle
    assert judge(world, policy, "cd vendor/lib.git && git status") == "ask"


def test_every_modelled_runner_has_a_table() -> None:
    assert set(RUNNERS) <= set(TABLES)


# -- 4. builtins that evaluate -------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["test -v 'a[$(evil)]'", "builtin test -v 'a[$(evil)]'",
                                  "command test -v 'a[$(./evil)]'",
                                  "test -n x -a -v 'a[`evil`]'", "test -v \"a[\\$(evil)]\""])
def test_test_v_with_a_subscript_runs_code_and_is_not_allowed(oracle: tuple[ShellWorld, Policy], text: str) -> None:
    attack(oracle, text, unsigned=True)
    with pytest.raises(Unprovable):
        programs(text)


@pytest.mark.parametrize("text", ["declare 'a[$(evil)]=1'", "local x", "printf -v 'a[$(evil)]' x",
                                  "read 'a[$(evil)]' < d/list", "declare -a a; unset 'a[$(evil)]'",
                                  "let 'a[$(evil)]'", "builtin let 'a[$(evil)]'",
                                  "command read 'a[$(evil)]' < d/list", "test -R 'a[$(evil)]'"])
def test_assigning_builtins_with_subscripts_are_unprovable(oracle: tuple[ShellWorld, Policy], text: str) -> None:
    world, policy = oracle
    if not text.startswith(("local", "test -R")):  # (bash evaluates no subscript for these two)
        assert ran(world, text)[0], text
    assert judge(world, policy, text) not in ("allow", None)


@pytest.mark.parametrize("text", ["test -v a", "test -f d/list", "test x = x"])
def test_test_without_evaluation_runs_nothing(text: str) -> None:
    assert programs(text) == []


def test_the_oracle_world_is_what_the_attacks_say(oracle: tuple[ShellWorld, Policy]) -> None:
    """The world's hostile inputs are there (a failing precondition would make the attacks vacuous)."""
    world, _ = oracle
    assert os.path.islink(world.dir / "tools" / "hub")
    assert (world.dir / "vendor" / "lib.git" / "HEAD").is_file()
    assert "fsmonitor" in (world.dir / "d" / ".gitconfig").read_text()
