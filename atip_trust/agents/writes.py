"""Which parts of a line can write a file a later program runs or reads as configuration (issue 32, item 5).

The hook's time-of-check rule (hooks.py) asks for a changeable program that runs after a part of the
line that can write: the bytes checked may not be the bytes that run. Counting every program as a
writer made ``ls && git status`` and, as root (every file is changeable), ``grep x f | head`` a question
each time. So a part is a writer unless it is written here as one that cannot write:

* :data:`READ_ONLY`: programs whose manuals name no option that writes a file or runs another program
  (coreutils, grep(1), jq(1)); whatever their words, they only read.
* :data:`GIT_READS`: git sub-commands that write no file a later program executes and nothing git reads
  as configuration or hooks (git-status(1) may refresh the index, git-add(1) writes the index and the
  object store: neither is a program nor configuration). Their options that write a file (``--output``)
  or run a program (``grep -O``) make them writers again; an abbreviation of such an option counts too
  (git accepts unique prefixes of long options).
* :data:`QUIET_RUNNERS`: modelled runners (runners.py) that write nothing themselves; what they run is
  judged on its own, and a runner's own writes (``find -fprint``) come from its model.

Anything else (an unknown program, ``sed``, ``sort``, ``git commit`` whose hooks run) is a writer. What
git's repository configuration may make it run is the configuration allowlist's concern, not this table.
"""

from __future__ import annotations

READ_ONLY = frozenset({
    "ls", "cat", "grep", "egrep", "fgrep", "head", "tail", "wc", "pwd", "whoami", "id", "groups", "uname",
    "basename", "dirname", "realpath", "readlink", "stat", "du", "df", "printenv", "true", "false", "echo",
    "test", "[", "which", "cut", "tr", "nl", "od", "comm", "cmp", "diff", "jq", "tty", "nproc", "seq", "expr",
    "sleep", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "md5sum", "b2sum", "cksum",
    "ps", "free", "uptime", "arch", "logname", "getconf", "locale",
})
GIT_READS = frozenset({
    "status", "diff", "log", "show", "rev-parse", "ls-files", "ls-tree", "blame", "annotate", "describe",
    "shortlog", "cat-file", "rev-list", "show-ref", "for-each-ref", "grep", "version", "add", "whatchanged",
    "merge-base", "name-rev", "check-ignore", "check-attr", "count-objects", "diff-files", "diff-index",
    "diff-tree",
})
#: Long options of those sub-commands that write a file or run a program (git-diff(1) ``--output``,
#: git-grep(1) ``--open-files-in-pager``), matched with git's unique-prefix abbreviations.
_GIT_WRITING_LONG = ("--output", "--open-files-in-pager")
QUIET_RUNNERS = frozenset({"env", "nice", "timeout", "stdbuf", "setsid", "ionice", "taskset", "chrt", "xargs",
                           "find", "sh", "bash", "dash"})


def can_write(base: str, words: tuple[str, ...], *, runner: bool) -> bool:
    """True unless the program named ``base`` with these words is known not to write (module docstring).
    ``runner``: the words' program is a modelled runner whose inner programs are judged on their own."""
    if base in READ_ONLY:
        return False
    if runner and base in QUIET_RUNNERS:
        return False
    if base == "git":
        return _git_writes(words)
    return True


def _git_writes(words: tuple[str, ...]) -> bool:
    sub = next((w for w in words[1:] if not w.startswith("-")), None)
    if sub is None or sub not in GIT_READS or any(w.startswith("-") and not w.startswith("--") for w in
                                                  words[1:words.index(sub)]):
        # No sub-command, another one, or global short options before it (-C, -c: what they change is
        # the configuration allowlist's to judge; here they only make the part a writer).
        return sub is not None
    for w in words[words.index(sub) + 1:]:
        if w == "--":
            break
        name = w.split("=", 1)[0]
        if name.startswith("--") and len(name) > 3 and any(o.startswith(name) for o in _GIT_WRITING_LONG):
            return True
        if sub == "grep" and w.startswith("-") and not w.startswith("--") and "O" in w:
            return True
    return False


__all__ = ["GIT_READS", "QUIET_RUNNERS", "READ_ONLY", "can_write"]
