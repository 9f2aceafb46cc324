"""Which repository git reads, and so whose configuration (issue 32, item 3).

A repository's configuration names programs git runs (``core.fsmonitor`` on ``git status``,
``core.pager``, ``diff.external``...). The repository the agent works in is the user's; one *inside*
the tree is not: a committed bare repository (``vendor/lib.git`` with ``HEAD``, ``objects/``, ``refs/``
and a ``config``) or a nested ``.git`` shipped in an archive is read as soon as git starts there,
through ``-C`` or from the working directory (git(1) ``-C``; gitrepository-layout(5); git-config(1)
``safe.bareRepository``, whose default lets bare repositories be found). So git is unprovable when the
repository it would find from ``-C`` is not the one it finds from the hook's working directory, when
that one is bare, when an earlier ``cd`` moved the line (the directory is not known), or when the hook
input names no absolute working directory. (``--git-dir``, ``--work-tree`` and ``GIT_DIR`` are refused
by the tables and the assignment rules before this runs.)
"""

from __future__ import annotations

import os

from atip_trust.agents.runners import git_directories, git_subcommand
from atip_trust.agents.shell_model import Program
from atip_trust.agents.words import Unprovable, Word

#: How many parent directories are looked at (git's discovery stops at the file-system root).
_MAX_LEVELS = 256


def _bare(d: str) -> bool:
    """Looks like a git directory (gitrepository-layout(5): HEAD, objects/, refs/)."""
    return os.path.isfile(os.path.join(d, "HEAD")) and os.path.isdir(os.path.join(d, "objects")) and \
        os.path.isdir(os.path.join(d, "refs"))


def repository(start: str) -> tuple[str, str] | None:
    """The repository git discovers from ``start``: ``("work tree", dir)`` for a ``.git`` in ``dir``,
    ``("bare", dir)`` for a git directory, or None."""
    d = os.path.abspath(start)
    for _ in range(_MAX_LEVELS):
        if os.path.lexists(os.path.join(d, ".git")):
            return ("work tree", d)
        if _bare(d):
            return ("bare", d)
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent
    raise Unprovable(f"git: {start!r} is nested deeper than the gate looks for its repository")


def check_repository(program: Program, cwd: str | None) -> None:
    """Unprovable when git would read a repository other than the working directory's, or a bare one
    (module docstring)."""
    if program.moved:
        raise Unprovable("git reads the configuration of the repository an earlier 'cd' moved to, which "
                         "the gate does not follow")
    if cwd is None or not os.path.isabs(cwd):
        raise Unprovable("git reads the configuration of the working directory's repository, and the hook "
                         "input names no absolute cwd")
    home = repository(cwd)
    if home is not None and home[0] == "bare":
        raise Unprovable(f"git would read the bare repository {home[1]} (its configuration can run programs)")
    _push_into_tree(program, cwd)
    here = cwd
    for d in git_directories([Word(w) for w in program.argv]):
        here = os.path.join(here, d)
        found = repository(here)
        if found != home:
            what = f"the {found[0]} repository {found[1]}" if found is not None else "no repository"
            raise Unprovable(f"git -C {d} reads {what}, not the working directory's: its configuration can "
                             "run programs")


def _push_into_tree(program: Program, cwd: str) -> None:
    """``git push PATH``: receive-pack runs in the repository at PATH and runs *its* hooks (and reads its
    ``core.hooksPath``), which a repository committed in the tree ships (githooks(5) pre-receive; found
    by tests/attacks/test_shell_redteam_oracle.py). Any operand that names a folder, or a ``file://``
    address, is such a repository as far as the gate can tell."""
    words = [Word(w) for w in program.argv]
    sub = git_subcommand(words)
    if sub >= len(words) or words[sub].text != "push":
        return
    for arg in program.argv[sub + 1:]:
        target = arg.split("=", 1)[1] if arg.startswith("--repo=") else arg
        if target.startswith("file://") or (not target.startswith("-") and os.path.isdir(os.path.join(cwd, target))):
            raise Unprovable(f"git push {arg}: the repository there runs its own hooks when it receives")


__all__ = ["check_repository", "repository"]
