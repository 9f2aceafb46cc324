"""The safe scan: which executables discovery may even consider (RFC §5.2 security note; principle 7).

Directories come from PATH (in order) or from the caller. Skipped, each with a machine-readable reason:

* PATH entries that a shell reads as the current directory: empty, ``.``, any relative entry (the same
  rule as ``facts.artifact.which``: ``path_entries``); a directory the caller names explicitly is
  made absolute instead;
* a directory writable by group or others, or owned by neither root nor the current user: whoever can
  write it chooses which programs it holds. The sticky bit does not make such a directory safe
  (``/tmp``: others still add names to it); it is accepted only on an *ancestor*, where it stops
  others from renaming or removing the entry that leads to ours. Every ancestor up to ``/`` must
  otherwise pass the same owner and mode test (a parent writable by others can swap the directory);
* a directory seen before (``/bin`` -> ``/usr/bin``): scanned once;
* ``registry.json``'s entries (RFC §5.1 step 1: the index first) are candidates before PATH's, each
  file and its folder under these same tests; the index adds no trust;
* a file whose name an earlier directory already provides (``shadowed``: a shell runs the first), even
  when that earlier file was itself skipped as unsafe: the shell still runs it, so a later one must not
  be scanned (or locked) in its place;
* a symbolic link is resolved once, and the row says where it leads; a link into a directory that
  fails the test above is skipped with that reason, as is a file writable by group or others or owned
  by someone else;
* every symbolic link met while resolving a PATH entry or a tool's link (the entry itself, a link among
  its parents, a link a link points through) must be owned by root or the current user and sit in a
  directory that passes the ancestor test: whoever owns a link can re-point it, and whoever can write
  its directory can replace it (``/tmp/bin`` -> ``/usr/bin``, made by another user in the sticky
  ``/tmp``, passes every check of ``/usr/bin`` while its owner keeps the power to aim it elsewhere).

Nothing here opens or runs a tool: discovery (discovery/discover.py) opens each candidate once and re-checks
owner and mode on that descriptor.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence

from atip_trust._base.files import owner_problem
from atip_trust._base.record import Record, field, fields_json
from atip_trust.facts.artifact import path_entries

#: Entries read from one directory at most (a hostile directory cannot make the scan unbounded).
MAX_ENTRIES_PER_DIR = 100_000


class Skipped(Record):
    """A directory or file the scan refused, with a machine-readable ``reason`` code."""

    path: str
    reason: str
    message: str
    #: Where a symbolic link led (resolved once), when it did.
    resolved: str | None = None

    to_json = fields_json  # its fields are JSON data already


class Candidate(Record):
    """An executable regular file in a safe directory, not yet opened."""

    name: str
    #: The path as found (``dir/name``).
    path: str
    #: Symlinks resolved once: the file that will be opened.
    resolved: str
    directory: str


class ScanResult(Record, frozen=False):
    directories: list[str] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def _owner_reason(st: os.stat_result, kind: str) -> str:
    mode = stat.S_IMODE(st.st_mode)
    return f"{kind}_writable" if mode & (stat.S_IWGRP | stat.S_IWOTH) else f"{kind}_foreign_owner"


class _DirCheck:
    """Owner and mode of a directory and all its ancestors, remembered per real path."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[str, str] | None] = {}

    def problem(self, real: str) -> tuple[str, str] | None:
        """(reason, message) for an unsafe directory ``real`` (already resolved), or None."""
        return self._judge(real, ancestor=False)

    def ancestor_problem(self, real: str) -> tuple[str, str] | None:
        """(reason, message) when ``real`` (resolved) or one of its ancestors fails the ancestor test
        (the sticky bit accepted): a place where a symbolic link may safely sit."""
        return self._judge(real, ancestor=True)

    def _judge(self, real: str, *, ancestor: bool) -> tuple[str, str] | None:
        # An ancestor is judged with the sticky exception (and, as an ancestor of a resolved path, is a
        # directory); its verdict is kept apart from the same path's as a directory.
        key = "\0" + real if ancestor else real
        if key in self._seen:
            return self._seen[key]
        what, prefix = ("ancestor", "ancestor ") if ancestor else ("directory", "")
        found: tuple[str, str] | None = None
        try:
            st = os.lstat(real)
        except OSError as err:
            found = ("directory_missing", f"cannot stat {prefix}{real}: {err.strerror}")
        else:
            if not ancestor and not stat.S_ISDIR(st.st_mode):
                found = ("not_a_directory", f"{real} is not a directory")
            elif (why := owner_problem(st, sticky_ok=ancestor)) is not None:
                found = (_owner_reason(st, what), f"{prefix}directory {real} is {why}")
            else:
                parent = os.path.dirname(real)
                if parent != real:
                    found = self._judge(parent, ancestor=True)
        self._seen[key] = found
        return found


#: Links followed while resolving one path, at most (the kernel's own limit is 40).
MAX_LINKS = 40


def _link_problem(path: str, checker: _DirCheck) -> tuple[str, str] | None:
    """(reason, message) for the first unsafe symbolic link met while resolving ``path`` component by
    component as the kernel does, or None. Each link must be owned by root or the current user (its
    owner can re-point it) and its directory must pass the ancestor test (who can write it can swap
    the link; the sticky bit stops that only for links others do not own)."""
    pending = [p for p in os.path.abspath(path).split("/") if p]
    current = "/"
    hops = 0
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            current = os.path.dirname(current)
            continue
        here = os.path.join(current, part)
        try:
            st = os.lstat(here)
        except OSError:
            return None  # missing: the caller reports it with its own reason
        if not stat.S_ISLNK(st.st_mode):
            current = here
            continue
        hops += 1
        if hops > MAX_LINKS:
            return ("symlink_loop", f"{path}: more than {MAX_LINKS} symbolic links")
        if st.st_uid not in (0, os.getuid()):
            return ("symlink_foreign_owner", (f"{path}: symbolic link {here} is owned by uid {st.st_uid}, "
                    f"expected root (0) or the current user ({os.getuid()}): its owner can re-point it"))
        problem = checker.ancestor_problem(current)
        if problem is not None:
            return ("symlink_in_unsafe_directory", (f"{path}: symbolic link {here} sits in a directory "
                    f"others can change: {problem[1]}"))
        try:
            target = os.readlink(here)
        except OSError as err:
            return ("symlink_unreadable", f"{path}: cannot read symbolic link {here}: {err.strerror}")
        if target.startswith("/"):
            current = "/"
        pending = [p for p in target.split("/") if p] + pending
    return None


def scan_directories(
    dirs: Sequence[str | os.PathLike[str]] | None = None, *, path_env: str | None = None,
    indexed: Sequence[tuple[str, str]] = (),
) -> ScanResult:
    """The candidates in ``dirs`` (default: PATH's entries, in order), and everything skipped.
    ``indexed``: (name, path) entries of ``registry.json``, considered first (RFC §5.1 step 1), each
    under the same tests; a name they give comes before PATH's file of that name."""
    out = ScanResult()
    checker = _DirCheck()
    seen_names: dict[str, str] = {}
    for name, path in indexed:
        _indexed(name, path, checker, seen_names, out)
    entries: list[tuple[str, bool]]
    if dirs is None:
        entries = path_entries(path_env)
    else:
        # Directories the caller names are meant as given: a relative one is taken from the current
        # directory, once, here (only PATH's relative entries are the shell's trap).
        entries = [(os.path.abspath(os.fspath(d)) if os.fspath(d) else "", bool(os.fspath(d)))
                   for d in dirs]
    seen_dirs: set[str] = set()
    for entry, usable in entries:
        if not usable:
            reason = "path_entry_empty" if not entry else "path_entry_relative"
            out.skipped.append(Skipped(entry, reason, "an empty or relative entry means the current "
                                       "directory to a shell; never scanned"))
            continue
        real = os.path.realpath(entry)
        shown = real if real != os.path.normpath(entry) else None
        problem = _link_problem(entry, checker) or checker.problem(real)
        if problem is not None:
            out.skipped.append(Skipped(entry, problem[0], problem[1], shown))
            continue
        if real in seen_dirs:
            out.skipped.append(Skipped(entry, "duplicate_directory", f"{real} was already scanned", shown))
            continue
        seen_dirs.add(real)
        out.directories.append(real)
        _scan_one(entry, real, checker, seen_names, out)
    return out


def _scan_one(entry: str, real: str, checker: _DirCheck, seen_names: dict[str, str],
              out: ScanResult) -> None:
    try:
        with os.scandir(real) as it:
            names = []
            for i, d in enumerate(it):
                if i >= MAX_ENTRIES_PER_DIR:
                    out.skipped.append(Skipped(entry, "directory_too_large",
                                               f"more than {MAX_ENTRIES_PER_DIR} entries; the rest "
                                               "are not scanned"))
                    break
                names.append(d.name)
    except OSError as err:
        out.skipped.append(Skipped(entry, "directory_unreadable", f"cannot list {real}: {err.strerror}"))
        return
    for name in sorted(names):
        _consider(name, os.path.join(entry, name), os.path.join(real, name), real, checker, seen_names, out)


def _indexed(name: str, path: str, checker: _DirCheck, seen_names: dict[str, str], out: ScanResult) -> None:
    """A ``registry.json`` entry (RFC §5.1 step 1) as a candidate: its folder and file meet every test a
    PATH entry's do (the index is a list of places to look, never evidence: the file is opened, hashed
    and verified as any other, and the index's digest pins it, admission/agent_tools.py)."""
    entry = os.path.dirname(path)
    if not os.path.isabs(path) or not entry:
        out.skipped.append(Skipped(path, "registry_entry_relative", f"registry.json records {path!r} for "
                                   f"{name!r}: not an absolute path; never scanned"))
        return
    real = os.path.realpath(entry)
    problem = _link_problem(entry, checker) or checker.problem(real)
    if problem is not None:
        out.skipped.append(Skipped(path, problem[0], problem[1]))
        return
    _consider(name, path, os.path.join(real, os.path.basename(path)), real, checker, seen_names, out)


def _consider(name: str, path: str, here: str, real: str, checker: _DirCheck, seen_names: dict[str, str],
              out: ScanResult) -> None:
    """One file of a safe folder: a candidate, skipped with its reason, or not a program at all."""
    try:
        lst = os.lstat(here)
    except OSError:
        return
    target = here
    if stat.S_ISLNK(lst.st_mode):
        # Resolved once, here; discovery opens the result without following links again.
        target = os.path.realpath(here)
        linked = _link_problem(here, checker)
        if linked is not None:
            out.skipped.append(Skipped(path, linked[0], linked[1], target))
            seen_names.setdefault(name, path)  # a shell may still run it: it shadows later ones
            return
        problem = checker.problem(os.path.dirname(target))
        if problem is not None:
            out.skipped.append(Skipped(path, "symlink_into_unsafe_directory",
                                       f"{path} -> {target}: {problem[1]}", target))
            seen_names.setdefault(name, path)
            return
    try:
        st = os.stat(target)
    except OSError:
        if target != here:
            out.skipped.append(Skipped(path, "broken_symlink", f"{path} -> {target}: no such file",
                                       target))
        return
    if not stat.S_ISREG(st.st_mode) or not st.st_mode & 0o111:
        return  # not a program: not a tool (directories, data files, bundles beside tools)
    if (why := owner_problem(st)) is not None:
        out.skipped.append(Skipped(path, _owner_reason(st, "file"), f"{target} is {why}",
                                   target if target != here else None))
        # A shell still runs this one for the name: a later file of the same name must not be
        # scanned (and locked) in its place.
        seen_names.setdefault(name, path)
        return
    if name in seen_names:
        if any(c.name == name and c.resolved == target for c in out.candidates):
            return  # registry.json's entry is this very file: one candidate
        out.skipped.append(Skipped(path, "shadowed", f"{seen_names[name]} comes first: a shell "
                                   "runs that one", target if target != here else None))
        return
    seen_names[name] = path
    out.candidates.append(Candidate(name=name, path=path, resolved=target, directory=real))


__all__ = ["Candidate", "ScanResult", "Skipped", "scan_directories"]
