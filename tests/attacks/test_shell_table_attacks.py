"""The program tables as allowlists (issue 32, item 3): an option, a sub-command or a value outside a
program's table is unprovable, in every spelling the program reads, with each option's value placed
where the program places it.

Each attack line is first run by real bash in the oracle world (fixtures/shell_lines.py) to show that
the program really runs the unsigned ``./evil``; the gate must not allow it. Lines that need a program
or a remote this machine lacks (rg, fd, gh, gpg, rsh) are checked against the model only. Controls show
that what everyday use tells these programs is still read, and allowed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from atip_trust.admission.admit import load_admission_policy
from atip_trust.agents.shell_model import Unprovable, programs
from atip_trust.facts.git_options import GIT_SUBCOMMANDS
from atip_trust.facts.program_tables import TABLES
from atip_trust.policy.model import Policy

from shell_lines import ShellWorld, make_world
from test_shell_oracle import judge, ran

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell lines")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ShellWorld, Policy]]:
    """The oracle world, with a file big enough that sort spills to compressed temporary files and an
    archive to extract."""
    world = make_world(tmp_path_factory.mktemp("tables"))
    (world.dir / "d" / "big").write_text("".join(f"{(i * 7919) % 100003}\n" for i in range(60000)))
    with tarfile.open(world.dir / "d" / "a.tar", "w") as tar:
        tar.add(world.dir / "d" / "list", arcname="list")
    yield world, load_admission_policy(str(world.policy))


def attack(oracle: tuple[ShellWorld, Policy], text: str) -> None:
    """Bash runs the unsigned program for ``text``; the model refuses it and the gate does not allow it."""
    world, policy = oracle
    try:
        assert ran(world, text)[0], f"bash did not run the unsigned program for {text!r}"
    finally:
        subprocess.run(["git", "config", "--unset-all", "core.fsmonitor"], cwd=world.dir, check=False,
                       capture_output=True, timeout=30)
    with pytest.raises(Unprovable):
        programs(text)
    assert judge(world, policy, text) not in ("allow", None), text


@pytest.mark.parametrize("text", [
    "sort -S 16K --compress-program=./evil d/big",
    "sort -S 16K --compress-prog=./evil d/big",            # an abbreviation
    "sort -S 16K --compress-program ./evil d/big",          # the value in the next word
    "tar -xf d/a.tar --to-command=./evil",
    "tar --use-compress-p ./evil -cf out.tar d",            # an option the table lacks, then ./evil
    "tar -c --checkpoint=1 --checkpoint-act=exec=./evil -f out.tar d",
    "git ls-remote --upl=./evil origin",                    # git's unique-prefix abbreviation
    "git fetch --upload-pack ./evil origin",
    "git grep --no-index -nO./evil evil d/list",            # a cluster with the refused letter last
    "git grep --no-index -iO./evil EVIL d/list",
    "git config core.fsmonitor ./evil && git status",
    "git config --add core.fsmonitor ./evil && git status --short",
    "sed -n '1e ./evil' d/list",                           # sed's e command runs a shell command
    "sed 's/.*/.\\/&/e' d/list",                          # s///e runs the pattern space: ./evil
    "sed -n -e p -e '1e ./evil' d/list",
])
def test_an_option_or_value_outside_the_table_that_runs_a_program_is_not_allowed(
        oracle: tuple[ShellWorld, Policy], text: str) -> None:
    attack(oracle, text)


@pytest.mark.parametrize("text", [
    "git log --ext-diff -p", "git diff --ext-diff", "git show --textconv HEAD", "git -c core.pager=./x log",
    "git grep -O ./evil x", "git grep -nO x", "git log --format=%GS", "git log '--pretty=format:%G?'",
    "git for-each-ref '--format=%(signature)'", "git log --format=\"$F\"", "git commit -S -m x",
    "git commit --gpg-sign=K -m x", "git commit -c HEAD", "git commit --fixup=amend:HEAD", "git merge -s ours x",
    "git merge --strategy=x y", "git pull -s x", "git pull --rebase=interactive", "git rebase -x ./evil",
    "git rebase -i HEAD~2", "git tag -s v1 -m x", "git tag -v v1", "git log --show-signature",
    "git config --edit", "git config alias.x '!./evil'", "git config \"$K\" x", "git config --rename-section a core",
    "git notes add -m x", "git submodule update", "git bisect start", "git difftool", "git frobnicate",
    "git push --upl=./evil origin", "git push --exec=./evil origin", "git clone --recurse-submodules r x",
    "git cat-file --filters HEAD:x", "git add -e", "git status --no-such-option ./evil",
    "rg --pre ./evil x", "rg -nz x", "rg --search-z x", "fd -x ./evil", "fd -l", "fd --exec-batch ./evil",
    "tar -cf host:out.tar d", "tar fI out.tar ./evil", "tar caf out.tar.gz d", "tar cvIf ./evil out.tar d", "tar -cf out.tar -F ./evil d",
    "sort --foo ./evil f", "sort -nX f", "split --filter=./evil f", "install -s f d/x", "wget -e x=y u",
    "wget --use-askpass=./evil u", "zip -T a.zip f", "curl -K f https://x", "curl --engine x https://x",
    "gh repo clone o/r -- --upload-pack=./evil", "gh pr checkout 1", "gh pr create --editor", "gh pr view -cw 1",
    "gh repo create x --source=. --push", "gh ext install x", "gh pr view --we 1",
    "gh pr -t x checkout 1", "gh -R o/r browse", "gh pr --repo o/r co 1",  # cobra: -t x is a flag and its value
    "sed 's/x/y/w out' f", "sed -f script.sed f", "sed \"$S\" f", "sed '/x/{p;e ls' f", "sed p -e 'e ls' f",
    "sed -ne 's/a/b/pe' f",
])
def test_options_sub_commands_and_values_outside_the_tables_are_unprovable(text: str) -> None:
    with pytest.raises(Unprovable):
        programs(text)


@pytest.mark.parametrize("text", [
    "git status", "git status -sb --porcelain", "git status --porcelain=v2 -z", "git status --short --branch",
    "git log --oneline -n 5 --stat --graph", "git log -5 --format='%h %s'", "git log -p -1 --no-ext-diff",
    "git diff --cached --stat", "git diff --stat HEAD~1", "git diff --name-only", "git show --stat HEAD",
    "git add -A", "git commit -m x", "git commit -am \"$MSG\"", "git log --author \"$A\" -n \"$N\"",
    "git branch -a", "git checkout -b x", "git switch -c x", "git stash list", "git remote -v",
    "git rev-parse --show-toplevel", "git blame -L 1,5 README.md", "git grep -n x", "git config user.email a@b",
    "git config --get core.pager", "git fetch origin", "git push origin main", "git tag -a v1 -m x",
    "git clone https://x/y.git d/y", "git clone git@github.com:x/y.git", "git remote add up https://x/y.git",
    "git log --no-decorate", "git restore --staged f", "git reset --hard HEAD", "git -C d status",
    "tar -cf out.tar d", "tar czf out.tar d", "tar -xzf x.tar.gz -C d", "sort -u d/list", "sort -k2,2 -t, -n f",
    "rg -n x", "rg -tpy -g '*.py' x", "fd -e py", "gh pr list", "gh pr view 1 --json title -q .title",
    "gh api repos/o/r", "curl -fsSL https://x -o out", "wget -q -O out https://x", "sed -n '1,20p' f",
    "sed -e 's/a/b/g' -e '$d' f", "sed -i.bak -E 's/(a)/\\1/' f", "sed ':a;N;$!ba;s/\\n/ /g' f",
    "sed --sandbox -n '1e ./evil' f", "sed -n 's|x|y|p' f",
])
def test_what_everyday_use_tells_these_programs_is_read(text: str) -> None:
    assert programs(text)


def test_git_bare_reads_a_repository_committed_in_the_working_directory(oracle: tuple[ShellWorld, Policy]) -> None:
    """``git --bare`` makes the working directory the git directory: a committed ``HEAD``, ``objects/``,
    ``refs/`` and ``config`` there are read, and the config's core.fsmonitor runs on ``git status``."""
    world, _ = oracle
    made = [world.dir / "HEAD", world.dir / "config", world.dir / "objects", world.dir / "refs"]
    (world.dir / "HEAD").write_text("ref: refs/heads/main\n")
    (world.dir / "objects" / "info").mkdir(parents=True)
    (world.dir / "refs" / "heads").mkdir(parents=True)
    (world.dir / "config").write_text(f"[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = {world.dir / 'evil'}\n")
    try:
        attack(oracle, "git --bare status")
    finally:
        for path in made:
            shutil.rmtree(path) if path.is_dir() else path.unlink()


@pytest.mark.parametrize("text", ["git ls-remote zz::y", "git fetch zz://y", "git push zz::y main",
                                  "git remote add o zz::y && git fetch o"])
def test_a_git_url_that_names_a_remote_helper_runs_that_program(oracle: tuple[ShellWorld, Policy],
                                                                 text: str) -> None:
    """``transport::address`` and an unknown ``scheme://`` make git run ``git-remote-<transport>`` from
    PATH (gitremote-helpers(7)): here the unsigned one in the PATH entry ``node_modules/.bin``."""
    world, _ = oracle
    helper = world.dir / "node_modules" / ".bin" / "git-remote-zz"
    helper.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(world.dir / "evil", helper)
    try:
        attack(oracle, text)
    finally:
        helper.unlink()
        subprocess.run(["git", "remote", "remove", "o"], cwd=world.dir, check=False, capture_output=True, timeout=30)


@pytest.mark.parametrize("text", ["tar czf out.tar d", "tar -c --gzip -f out.tar d", "tar -czf out.tar d"])
def test_the_compression_program_tar_runs_is_admitted_as_a_program_of_the_line(
        oracle: tuple[ShellWorld, Policy], text: str) -> None:
    """``tar -z`` runs ``gzip`` from PATH: here an unsigned one, found before the system's. tar is allowed;
    the line is not, because gzip is read as a program the line runs."""
    world, policy = oracle
    gzip = world.dir / "bin-unsigned" / "gzip"
    shutil.copy(world.dir / "evil", gzip)
    try:
        assert ran(world, text)[0], text
        assert [p.argv for p in programs(text)][1:] == [("gzip",)]
        assert judge(world, policy, text) not in ("allow", None), text
    finally:
        gzip.unlink()
        (world.dir / "out.tar").unlink(missing_ok=True)


def test_a_value_is_placed_where_the_program_places_it(oracle: tuple[ShellWorld, Policy]) -> None:
    """A word that is an option's value is data, whatever it looks like: tar's archive named
    ``--to-command=./evil`` and a commit message ``--ext-diff`` run nothing and are read."""
    world, policy = oracle
    text = "tar -cf --to-command=./evil d"
    try:
        assert ran(world, text) == (False, False)
        assert judge(world, policy, text) == "allow"
    finally:
        (world.dir / "--to-command=./evil").unlink(missing_ok=True)
    assert programs("git commit -m --ext-diff")
    assert programs("git log --grep --ext-diff")
    # ... and an option that takes no value does not hide the word after it.
    with pytest.raises(Unprovable):
        programs("git log --oneline --ext-diff")


def test_everyday_git_lines_are_allowed_in_the_oracle_world(oracle: tuple[ShellWorld, Policy]) -> None:
    world, policy = oracle
    for text in ("git status --porcelain=v2 -z", "git status -sb", "git log --oneline -n 5 --stat --graph",
                 "git diff --cached --stat", "sort -u d/list", "git grep --no-index -n evil d/list"):
        assert judge(world, policy, text) == "allow", text


def test_every_table_program_but_a_runner_has_an_option_list() -> None:
    for name, table in TABLES.items():
        assert table.options is not None or name == "git" or table.env == ("*",), name
    assert set(TABLES["git"].subcommands) == set(GIT_SUBCOMMANDS)
    assert not set(TABLES["git"].refused_subcommands) & set(GIT_SUBCOMMANDS)


def test_policy_check_warns_about_an_allow_rule_over_a_program_without_a_table(tmp_path: Path) -> None:
    policy = tmp_path / "p.json"
    policy.write_text(json.dumps({"version": 1, "permissions": {
        "allow": ["jq *", "git status *", "sort *", "sh"]}}))
    for command in ("check", "explain"):
        r = subprocess.run([sys.executable, "-m", "atip_trust", "policy", command, str(policy)], capture_output=True,
                           text=True, check=False, timeout=60, env={**os.environ, "CI": "true"},
                           stdin=subprocess.DEVNULL, cwd=ROOT)
        assert r.returncode == 0, r.stderr
        warnings = [line for line in r.stdout.splitlines() if line.startswith("Warning:") and "table" in line]
        assert len(warnings) == 1 and "covers jq" in warnings[0], r.stdout
