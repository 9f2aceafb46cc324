"""The escapes tests/attacks/test_shell_redteam_oracle.py's generator found, each minimised to one line.

Each line is first run by real bash in the generator's world to show it really runs unverified bytes or
a command a deny rule names; then the gate must not allow it (nor pass it through, for a denied
command). Lines whose danger is in time are judged as the world's owner would be (as root every file
is changeable and the time rules ask anyway: test_shell_redteam_oracle.as_owner). Controls show the
same programs are still allowed when nothing hostile is around them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from atip_trust.admission.admit import load_admission_policy
from atip_trust.agents import identity
from atip_trust.agents.shell_model import programs
from atip_trust.policy.model import Policy

from shell_lines import ShellWorld
from test_shell_oracle import judge, refused
from test_shell_redteam_oracle import HELPERS_MARK, agent_home, as_owner, bash_ran, line_env, make_redteam_world

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell lines")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[ShellWorld, Policy]:
    made = make_redteam_world(tmp_path_factory.mktemp("redteam-attacks"))
    return made, load_admission_policy(str(made.policy))


@pytest.fixture
def owner(world: tuple[ShellWorld, Policy], monkeypatch: pytest.MonkeyPatch) -> tuple[ShellWorld, Policy]:
    as_owner(world[0], monkeypatch)
    return world


def attack(world: tuple[ShellWorld, Policy], text: str, *, unsigned: bool = False, denied: bool = False) -> str:
    """Bash runs ``text`` (unverified bytes and/or a denied command, as said); the gate does not allow it,
    and does not pass a denied command through."""
    shell_world, policy = world
    answer = refused(shell_world, policy, text, bash_ran(shell_world, text), unsigned=unsigned, denied=denied)
    if denied:
        assert answer != "passthrough", f"passed through, and bash runs a denied command: {text!r}"
    return answer


def system_first(world: ShellWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    """PATH with the system's folders first: after a writer, a program is not asked only because the
    owner's ``bin`` comes before /usr/bin (a program the line made there would run instead)."""
    entries = world.env["PATH"].split(":")
    system = [e for e in entries if e in ("/usr/bin", "/bin")]
    monkeypatch.setitem(world.env, "PATH", ":".join(system + [e for e in entries if e not in system]))


def without_relative_path(world: ShellWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    """PATH without the world's relative entry: find refuses ``-execdir`` under a PATH that has one."""
    monkeypatch.setitem(world.env, "PATH", ":".join(e for e in world.env["PATH"].split(":") if os.path.isabs(e)))


# -- identity by bytes: a script a shell reads is what its bytes are -----------------------------------

@pytest.mark.parametrize("text", ["bash tools/hub repo delete x", "sh tools/hub repo delete x",
                                  "run tools/hub repo delete x", "env bash ./tools/hub repo delete x"])
def test_a_link_to_gh_read_by_a_shell_is_gh(world: tuple[ShellWorld, Policy], text: str) -> None:
    """``tools/hub`` links to gh's script: ``bash tools/hub repo delete x`` is gh's repo delete, whose
    deny rule applies, not an unknown script passed through."""
    assert attack(world, text, denied=True) == "deny"


def test_gh_read_by_a_shell_for_a_listing_is_not_denied(world: tuple[ShellWorld, Policy]) -> None:
    shell_world, policy = world
    assert judge(shell_world, policy, "bash tools/hub pr list") in ("allow", "ask")
    assert judge(shell_world, policy, "bash bin/tool x") == "allow"


# -- time: a runner that returns before its command runs is a background job ---------------------------

LATER = "bash -c 'until test -e d/go; do :; done; tool; : > d/go2'"
JOIN = "cp ./evil bin/tool; : > d/go; until test -e d/go2; do :; done"


@pytest.mark.parametrize("runner", ["setsid -f", "setsid --fork", "ss -f", "nice setsid -f", "setsid setsid"])
def test_a_runner_that_forks_its_command_is_a_background_job(owner: tuple[ShellWorld, Policy],
                                                              runner: str) -> None:
    """``setsid -f`` returns at once and its command runs after the rest of the line, which rewrote the
    tool: as with ``&``, every changeable program of the line is asked."""
    attack(owner, f"{runner} {LATER}; {JOIN}", unsigned=True)


def test_setsid_that_waits_is_not_a_background_job(owner: tuple[ShellWorld, Policy], monkeypatch: pytest.MonkeyPatch) -> None:
    shell_world, policy = owner
    system_first(shell_world, monkeypatch)
    assert judge(shell_world, policy, "setsid -w tool x; cp ./evil bin/tool") == "allow"  # tool ran first
    assert judge(shell_world, policy, f"setsid -w {LATER}; cp ./evil bin/tool") == "allow"  # it ran before


# -- config inputs: a login shell reads start-up files a line can write ----------------------------------

@pytest.mark.parametrize("text", ["echo ./evil > .profile; bash -lc true", "echo ./evil > .profile && sh -lc true",
                                  "echo ./evil > .bash_profile && bash -l -c :", "echo ./evil > .profile; run -lc :",
                                  "echo ./evil > .profile; bash --login -c true",
                                  "echo ./evil > .profile; bash -o errexit -l -c true"])
def test_a_login_shell_after_a_writer_is_asked(owner: tuple[ShellWorld, Policy], text: str) -> None:
    """``bash -l`` reads ``~/.profile`` (HOME is the world's folder), which the line has just written."""
    attack(owner, text, unsigned=True)


def test_a_login_shell_alone_is_allowed(owner: tuple[ShellWorld, Policy], monkeypatch: pytest.MonkeyPatch) -> None:
    """Codex's ``bash -lc LINE`` with nothing written before it stays allowed."""
    shell_world, policy = owner
    system_first(shell_world, monkeypatch)
    assert judge(shell_world, policy, "bash -lc 'tool x'") == "allow"
    assert judge(shell_world, policy, "echo x > out.txt; bash -c 'ls -la'") == "allow"


# -- config inputs: find -execdir moves git into a committed bare repository -----------------------------

@pytest.mark.parametrize("text", ["find vendor/lib.git/refs -maxdepth 0 -execdir git status ;",
                                  "find vendor/lib.git -maxdepth 1 -name refs -execdir git status {} +",
                                  "find vendor/lib.git/refs -maxdepth 0 -execdir bash -c 'git status' ;"])
def test_find_execdir_into_a_bare_repository_is_not_allowed(world: tuple[ShellWorld, Policy], text: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """``-execdir`` runs git in the found file's folder, ``vendor/lib.git``, whose configuration names
    core.fsmonitor: git there is git somewhere else, as after ``cd``."""
    without_relative_path(world[0], monkeypatch)
    attack(world, text.replace(";", "\\;"), unsigned=True)


def test_find_execdir_of_a_signed_tool_is_allowed(world: tuple[ShellWorld, Policy],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    shell_world, policy = world
    without_relative_path(shell_world, monkeypatch)
    assert judge(shell_world, policy, "find d -maxdepth 0 -execdir ls -la \\;") == "allow"


# -- place: bash's own command search --------------------------------------------------------------------

@pytest.mark.parametrize("text", ["EXECIGNORE='*/bin/tool'; tool x", "export EXECIGNORE='*/bin/tool' && tool",
                                  "EXECIGNORE='*/bin/t*'; tool x", "for EXECIGNORE in '*/bin/tool'; do tool; done"])
def test_execignore_that_hides_the_signed_tool_is_not_allowed(world: tuple[ShellWorld, Policy], text: str) -> None:
    """bash skips PATH files matching EXECIGNORE: the ``tool`` that runs is the next one on PATH
    (``bin-unsigned/tool``, unsigned), not the one the gate found."""
    attack(world, text, unsigned=True)


def test_a_path_entry_with_a_tilde_is_read_as_bash_reads_it(world: tuple[ShellWorld, Policy]) -> None:
    """The world's PATH holds ``~/hbin`` literally; bash expands it as it searches and runs
    ``~/hbin/head`` (unsigned), where env would look in a folder named ``~``."""
    shell_world, policy = world
    with agent_home(shell_world):
        assert attack(world, "head -1 d/list", unsigned=True) == "ask"
        assert judge(shell_world, policy, "ls -la") == "allow"  # not in ~/hbin: found in /usr/bin, as bash does


# -- identity by bytes: a descriptor is the line's, not the hook's -----------------------------------------

@pytest.mark.parametrize("text", ["bash /dev/stdin repo delete x < tools/hub", "/dev/fd/3 repo delete x 3< bin/gh",
                                  "tools/fd3 repo delete x 3< tools/hub", "sh /proc/self/fd/4 repo delete x 4<bin/gh",
                                  "env /dev/fd/3 repo delete x 3< bin/gh"])
def test_a_program_read_through_a_descriptor_is_not_passed_through(world: tuple[ShellWorld, Policy],
                                                                   text: str) -> None:
    """``/dev/fd/3`` (or a link to it) is whatever the line opened on descriptor 3, here gh: the hook
    cannot open the same file, so the line is a question, never the agent's own permissions'."""
    assert attack(world, text, denied=True) == "ask"


@pytest.mark.parametrize("text", ["echo ./evil > .profile; exec -l bash -c true", "echo ./evil > .profile; exec -l sh -c :",
                                  "echo ./evil > .bashrc; SSH_CLIENT=1 SHLVL=0 bash -c true",
                                  "echo ./evil > .bashrc; env SSH2_CLIENT=x SHLVL=0 bash -c :",
                                  "echo ./evil > .bashrc; export SSH_CLIENT=1 SHLVL=0; bash -c true"])
def test_a_shell_made_to_read_start_up_files_after_a_writer_is_not_allowed(owner: tuple[ShellWorld, Policy],
                                                                           text: str) -> None:
    """``exec -l`` names the shell ``-bash`` (a login shell); ``SSH_CLIENT`` with ``SHLVL=0`` makes bash
    believe sshd started it, and it reads ``~/.bashrc``: files the line has just written."""
    attack(owner, text, unsigned=True)


# -- config inputs: what git is told to talk to --------------------------------------------------------

@pytest.mark.parametrize("text", ["git ls-remote x::y", "git fetch x::y", "git clone x::y d/c", "git push x::y main",
                                  "git archive --remote=x::y HEAD", "nice git ls-remote -q x::anything"])
def test_a_remote_helper_address_is_not_allowed(world: tuple[ShellWorld, Policy], text: str) -> None:
    """``x::y`` makes git run ``git-remote-x`` from PATH (here unsigned, in ``bin-unsigned``)."""
    attack(world, text, unsigned=True)


@pytest.mark.parametrize("text", ["git push vendor/hooked.git main", "git push ./vendor/hooked.git HEAD:x",
                                  "git push -q vendor/hooked.git main:x", "env git push -q vendor/hooked.git main"])
def test_a_push_into_a_repository_in_the_tree_is_not_allowed(world: tuple[ShellWorld, Policy], text: str) -> None:
    """receive-pack runs the receiving repository's hooks: ``vendor/hooked.git`` ships a pre-receive."""
    attack(world, text, unsigned=True)


def test_a_push_to_a_named_remote_is_still_judged_by_its_rules(world: tuple[ShellWorld, Policy]) -> None:
    shell_world, policy = world
    assert judge(shell_world, policy, "git push origin main") == "allow"
    assert judge(shell_world, policy, "git push -f origin main") == "deny"
    assert judge(shell_world, policy, "git ls-remote origin") == "allow"


@pytest.mark.parametrize("text", ["git ls-remote localhost:x", "git clone localhost:x d/c", "git fetch ssh://localhost/x",
                                  "git commit --allow-empty", "git commit --allow-empty -S -m x", "git tag -a v9",
                                  "git branch --edit-description",
                                  "git push origin main"])
def test_git_running_an_unsigned_helper_by_name_is_not_allowed(world: tuple[ShellWorld, Policy], text: str) -> None:
    """git runs ssh, gpg and the editor by name from PATH; ``d/ubin`` (first on PATH here) holds unsigned
    ones. (``git push origin main`` reaches a local remote and runs no ssh: asked all the same, as the
    gate does not read which remote a name means.)"""
    shell_world, _ = world
    with line_env(shell_world, HELPERS_MARK):
        if text == "git push origin main":
            assert judge(shell_world, world[1], text) == "ask"
        else:
            attack(world, text, unsigned=True)


@pytest.mark.parametrize("text", ["tar -czf out.txt d/list", "tar -xf d/list.tgz -C d", "tar -tf d/list.tgz",
                                  "tar -cJf out.txt d/list", "nice tar -xzf d/list.tgz -C d"])
def test_tar_running_an_unsigned_compressor_by_name_is_not_allowed(world: tuple[ShellWorld, Policy], text: str) -> None:
    """tar runs gzip and xz by name from PATH, also to extract (it knows a gzip archive by its bytes)."""
    shell_world, _ = world
    with line_env(shell_world, HELPERS_MARK):
        attack(world, text, unsigned=True)


@pytest.mark.parametrize("text", ["tar -xf d/list.txz -C d", "tar -tf d/list.txz", "tar xf d/list.txz -C d",
                                  "tar -df d/list.txz", "tar --test-label -f d/list.txz", "tar --list --file=d/list.txz",
                                  "env tar -xvf d/list.txz -C d"])
def test_tar_reading_an_archive_runs_the_decompressor_it_calls_for_by_name(world: tuple[ShellWorld, Policy],
                                                                           text: str) -> None:
    """No option names xz, but GNU tar reading an archive recognises xz's bytes and runs ``xz -d`` from
    PATH: the unsigned ``d/ubin/xz`` first there. The tar table says so (implies, for every mode that
    reads an archive), so the decompressors are programs of the line like gzip under ``-z``."""
    shell_world, _ = world
    with line_env(shell_world, HELPERS_MARK):
        subprocess.run(["tar", "-cJf", str(shell_world.dir / "d" / "list.txz"), "-C", str(shell_world.dir / "d"),
                        "list"], check=True, timeout=60)
        attack(world, text, unsigned=True)
    implied = [p.argv[0] for p in programs(text) if p.implied]
    assert {"gzip", "xz", "bzip2", "zstd"} <= set(implied), implied


def test_tar_that_reads_no_archive_runs_no_decompressor(world: tuple[ShellWorld, Policy]) -> None:
    """``tar -cf`` (no compression option) runs no program by name: allowed even with unsigned
    compressors first on PATH (the special case this replaced asked for any tar line)."""
    shell_world, policy = world
    with line_env(shell_world, HELPERS_MARK):
        assert not bash_ran(shell_world, "tar -cf out.txt d/list")[0]
        assert judge(shell_world, policy, "tar -cf out.txt d/list") == "allow"
        assert judge(shell_world, policy, "tar -rf out.txt d/list") == "allow"


def test_git_with_the_system_helpers_is_allowed(world: tuple[ShellWorld, Policy]) -> None:
    shell_world, policy = world
    for text in ("git push origin main", "git commit --allow-empty -m x", "git ls-remote origin", "git status",
                 "tar -xf d/list.tgz -C d"):
        assert judge(shell_world, policy, text) in ("allow", "ask"), text
    assert judge(shell_world, policy, "git push origin main") == "allow"


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("chroot", path="/usr/sbin:/sbin") is None,
                    reason="chroot runs only as root")
def test_a_copy_of_a_runner_from_sbin_is_read_as_that_runner(world: tuple[ShellWorld, Policy]) -> None:
    """``bin/cr`` is a signed copy of /usr/sbin/chroot, allowed by name: ``cr / PROGRAM`` runs any program.
    Its bytes are chroot's though /usr/sbin is not on the line's PATH: admitted as chroot, which no rule
    allows."""
    shell_world, _ = world
    attack(world, f"cr / {shell_world.dir}/evil", unsigned=True)


@pytest.mark.skipif(shutil.which("chroot", path="/usr/sbin:/sbin") is None, reason="no chroot in sbin")
@pytest.mark.parametrize("path", ["world", "/usr/bin:/bin"])
def test_a_copy_of_an_sbin_runner_is_that_runner_whatever_path_identity_is_given(world: tuple[ShellWorld, Policy],
                                                                                  path: str) -> None:
    """agents/identity.py indexes the sbin folders itself (identity.SYSTEM_FOLDERS), not only a wider
    PATH its caller builds: ``bin/cr`` (a signed copy of /usr/sbin/chroot) runs any program, and is
    chroot under a PATH without sbin, as every caller of names_of sees it (bash runs the line as root only:
    chroot(2) needs it)."""
    shell_world, _ = world
    line = shell_world.env["PATH"] if path == "world" else path
    assert not {"/usr/sbin", "/sbin", "/usr/local/sbin"} & set(line.split(":"))
    if os.geteuid() == 0:
        attack(world, f"cr / {shell_world.dir}/evil", unsigned=True)
    assert "chroot" in identity.names_of(str(shell_world.bin / "cr"), frozenset(), line)
    assert identity.identity("cr", identity.names_of(str(shell_world.bin / "cr"), frozenset(), line),
                             frozenset()) == "chroot"


# -- place: a shell started without PATH searches its own default, which ends with "." ------------------

@pytest.mark.parametrize("text", ["env -i bash -c tool", "env -u PATH bash -c 'tool x'", "wrap -i bash -c tool",
                                  "env -i /usr/bin/bash -c 'exec tool'", "env - bash -c 'command tool'",
                                  "nice env -i timeout 9 bash -c tool"])
def test_a_shell_without_path_runs_the_tool_in_the_current_directory(world: tuple[ShellWorld, Policy],
                                                                     text: str) -> None:
    """bash with PATH unset searches /usr/local/bin:...:/sbin:. : the world's ``./tool`` is unsigned."""
    attack(world, text, unsigned=True)


def test_a_runner_without_path_searches_the_default_path(world: tuple[ShellWorld, Policy]) -> None:
    """``env -i nice ls``: nice's own execvp searches /bin:/usr/bin, where ls is the system's."""
    shell_world, policy = world
    assert judge(shell_world, policy, "env -i nice ls") == "allow"
    assert judge(shell_world, policy, "env -i bash -c 'cat d/list'") == "allow"  # /usr/bin comes before "."


# -- time: the interpreter a script names is rewritten before it runs ------------------------------------

@pytest.mark.parametrize("text", ["cp ./evil bin/interp; ptool",
                                  "for i in 1 2; do ptool; cp ./evil bin/interp; done", "cat ./evil > bin/interp && ptool x"])
def test_a_script_whose_interpreter_the_line_rewrites_is_asked(owner: tuple[ShellWorld, Policy], text: str) -> None:
    """``ptool`` (signed, outside the owner's folder) runs ``#!.../bin/interp``, a signed dash the line
    replaces first: the interpreter that runs is not the one admitted."""
    attack(owner, text, unsigned=True)


def test_a_script_with_an_interpreter_nobody_rewrites_is_allowed(owner: tuple[ShellWorld, Policy], monkeypatch: pytest.MonkeyPatch) -> None:
    shell_world, policy = owner
    system_first(shell_world, monkeypatch)
    assert judge(shell_world, policy, "ptool x") == "allow"
    assert judge(shell_world, policy, "ptool x; cp ./evil bin/interp") == "allow"  # it ran first


# -- time: a file made earlier on PATH than the one checked ----------------------------------------------

@pytest.mark.parametrize("text", ["cp ./evil bin/ls && ls", "cp ./evil bin/cat; cat d/list",
                                  "for i in 1 2; do env ls; cp ./evil bin/ls; done", "cp ./evil bin/ls; env ls"])
def test_a_program_shadowed_by_a_file_the_line_makes_is_asked(owner: tuple[ShellWorld, Policy], text: str) -> None:
    """``ls`` is /usr/bin/ls, which nobody can change; but ``bin``, first on PATH, is the owner's: the line
    puts an ``ls`` there first, and bash runs that one."""
    attack(owner, text, unsigned=True)


def test_a_system_program_after_a_writer_with_no_folder_before_it_is_allowed(
        owner: tuple[ShellWorld, Policy], monkeypatch: pytest.MonkeyPatch) -> None:
    shell_world, policy = owner
    monkeypatch.setitem(shell_world.env, "PATH", "/usr/bin:/bin")
    assert judge(shell_world, policy, "echo x > out.txt && ls -la") == "allow"


def test_a_disguised_setsid_that_forks_is_a_background_job_too(owner: tuple[ShellWorld, Policy]) -> None:
    """``ss`` is setsid's bytes: with ``-f`` what it runs comes after every writer of the line, as with
    ``setsid -f`` itself (re-read runners keep runners.Outcome.background)."""
    shell_world, policy = owner
    for runner in ("setsid", "ss"):
        assert judge(shell_world, policy, f"{runner} -f tool x") == "ask", runner
        assert judge(shell_world, policy, f"{runner} -w tool x") == "allow", runner


# -- a deny rule beats an unprovable check ----------------------------------------------------------------

@pytest.fixture
def lib_remote(tmp_path: Path) -> tuple[ShellWorld, Policy]:
    """A world of its own whose committed bare repository ``vendor/lib.git`` can push: it borrows the
    world's objects, has ``main`` at the world's commit (one apart from the remote's) and ``origin`` is
    the world's remote, whose update hook writes ``denied`` for a force push."""
    made = make_redteam_world(tmp_path / "lib-remote")
    lib = made.dir / "vendor" / "lib.git"
    (lib / "objects" / "info" / "alternates").write_text(f"{made.dir / '.git' / 'objects'}\n")
    head = subprocess.run(["git", "rev-parse", "main"], cwd=made.dir, capture_output=True, text=True, check=True,
                          timeout=60).stdout.strip()
    (lib / "refs" / "heads" / "main").write_text(head + "\n")
    with (lib / "config").open("a") as config:
        config.write(f'[remote "origin"]\n\turl = {made.dir / "remote.git"}\n')
    return made, load_admission_policy(str(made.policy))


@pytest.mark.parametrize("text", ["git push -f remote.git main", "git push -fu ./remote.git main",
                                  "git push --force remote.git main", "env git push -f remote.git main"])
def test_a_force_push_into_a_repository_in_the_tree_is_denied_not_asked(world: tuple[ShellWorld, Policy],
                                                                        text: str) -> None:
    """The receiving repository is in the tree (its hooks run: unprovable), but the shipped force-push
    deny rules name what the line does whatever else is unknown: a denial, not a question a user may
    answer yes to."""
    assert attack(world, text, denied=True) == "deny"


def test_a_force_push_from_a_committed_bare_repository_is_denied_not_asked(lib_remote: tuple[ShellWorld, Policy]) -> None:
    """``git -C vendor/lib.git`` reads a repository the tree ships (unprovable), and pushes from it with
    ``-f``: the force-push deny rule applies before the unprovable configuration."""
    assert attack(lib_remote, "git -C vendor/lib.git push -f origin main", denied=True) == "deny"
    assert attack(lib_remote, "git -C vendor/lib.git push -vf origin main", denied=True) == "deny"


def test_an_unprovable_push_that_no_deny_rule_names_is_still_asked(world: tuple[ShellWorld, Policy],
                                                                   lib_remote: tuple[ShellWorld, Policy]) -> None:
    """Only a deny rule changes the answer: without a force flag the unprovable push stays a question."""
    assert judge(*world, "git push remote.git main") == "ask"
    assert judge(*lib_remote, "git -C vendor/lib.git push origin main") == "ask"
    assert judge(*lib_remote, "git -C vendor/lib.git status") == "ask"
