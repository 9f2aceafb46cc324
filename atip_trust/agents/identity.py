"""Which program a file is, from its bytes, not from the name the line calls it (issue 32, item 1).

The rules and the runner model that apply to a program come from what it is: a copy of (or a link
to) ``env`` called ``tool`` runs whatever follows, and a link to ``gh`` called ``./tools/hub`` is gh,
whose deny rules apply. So each file the hook admits is compared with the programs whose names carry a
meaning here — the modelled runners (agents/runners.py), the programs with a table
(facts/program_tables.py), the interpreters and other runners of facts/programs.py, and every program
the policy names — as found on PATH and then in the system's own folders (:data:`SYSTEM_FOLDERS`: glibc's
default path and the folders a shell started without PATH searches, sbin among them; runners live there
too, off an agent's PATH: a signed copy of /usr/sbin/chroot called ``cr`` is chroot):

* symlinks are resolved first: a file whose real name is one of those names is that program;
* the same file (device and inode: a hard link, or a link resolved to it) is that program;
* a file of the same size is hashed, and equal bytes (sha256) make it that program.

Beside PATH, ``registry.json`` (RFC §4.3, the agent-tools tree's name -> path and digest index that
``scan --update-registry`` writes for tools that verified; admission/agent_tools.py) pins a program's
bytes wherever it is installed: a file with the pinned bytes is that program, whatever its name or
folder (a copy of a pinned ``gh`` called ``./hub`` gets gh's deny rules). A pin counts only while the
file it records still holds the recorded digest (registry/local.py re-hashes it when its stat identity
changed): an entry whose digest does not match its file is drift or tampering, and gives no name. A
registry that cannot be read gives none either (admission denies on it: agent_tools.registry_check).
The third source, a tool's verified ATIP metadata naming it, is known only once the file is admitted
(admission/metadata_trust.py decides what is verified): agents/hooks.py reads it there.

A name taken away is checked too: a program admitted under the name its bytes have is not admitted
under the name the line gives it, whose ``registry.json`` pin admission would otherwise check
(admission/agent_tools.registry_check). So :func:`identify` also says when ``registry.json`` pins the
typed name to other bytes (a ``wrap`` the user indexed, now a copy of ``env``): drift or tampering, a
denial as in admission, whatever the bytes are now.

The index of those names is built once per process from one directory listing per PATH entry and,
when ``registry.json`` exists (one ``stat``), one read of it (only files of the same size are ever
hashed), so an ordinary line costs a few ``stat`` calls.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from stat import S_ISREG
from typing import TYPE_CHECKING

from atip_trust._base.lazy import lazy_import
from atip_trust._base.record import Record
from atip_trust.agents.runners import DEFAULT_PATH, RUNNERS, SHELL_DEFAULT_PATH
from atip_trust.errors import AtipTrustError
from atip_trust.facts.artifact import path_entries
from atip_trust.facts.program_tables import TABLES
from atip_trust.facts.programs import UNMODELLED
from atip_trust.policy.model import Policy
from atip_trust.state.dirs import agent_tools_data_dir

if TYPE_CHECKING:
    from atip_trust.registry import local
else:
    local = lazy_import("atip_trust.registry.local")  # why deferred: only while registry.json exists

_CHUNK = 1 << 20
#: The folders indexed after the line's PATH: glibc's default path (runners.DEFAULT_PATH), then every
#: absolute folder of the shells' compiled-in defaults (runners.SHELL_DEFAULT_PATH: /usr/local/sbin,
#: /usr/local/bin, /usr/sbin, /sbin...), named there only (found by tests/attacks/test_shell_redteam_oracle.py).
SYSTEM_FOLDERS = tuple(dict.fromkeys(e for p in (DEFAULT_PATH, *SHELL_DEFAULT_PATH.values())
                                     for e in p.split(":") if os.path.isabs(e)))


def governed_names(policy: Policy) -> frozenset[str]:
    """The program names ``policy`` fixes in a rule's first word, a token rule's first position, a tool
    entry or a delegation list (hooks.names_program answers for patterns too)."""
    out: set[str] = set()
    for rule in (*policy.deny_rules, *policy.ask_rules, *policy.allow_rules):
        if rule.kind == "tokens":
            out.update(rule.tokens[0] if rule.tokens else ())
        else:
            first = rule.first_word
            if first is not None and "*" not in first:
                out.add(first.rsplit("/", 1)[-1])
    for tool in (*policy.tool_allow, *policy.tool_deny, *(t for _, a in policy.tool_allowlists for t in a)):
        if tool.name:
            out.add(tool.name)
    for _, names in policy.delegation_allowlists:
        out.update(names)
    return frozenset(n for n in out if n and "/" not in n)


class _Index:
    """The named programs found on one PATH: by (device, inode), and by size for the hash comparison."""

    __slots__ = ("by_inode", "by_size", "digests", "known", "registry")

    def __init__(self, names: frozenset[str], path_env: str | None, registry: str | None) -> None:
        self.known = names
        self.registry = registry
        self.by_inode: dict[tuple[int, int], set[str]] = {}
        self.by_size: dict[int, list[tuple[str, str, tuple[int, int]]]] = {}
        self.digests: dict[str, str | None] = {}
        seen: set[str] = set()
        entries = [e for e, usable in path_entries(path_env) if usable] + list(SYSTEM_FOLDERS)
        listed: set[str] = set()
        for entry in dict.fromkeys(entries):
            real = os.path.realpath(entry)  # /bin is /usr/bin on a merged-/usr system: list it once
            if real in listed:
                continue
            listed.add(real)
            try:
                present = names.intersection(os.listdir(entry))
            except OSError:
                continue
            for name in sorted(present - seen):
                path = os.path.join(entry, name)
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                if not S_ISREG(st.st_mode) or not st.st_mode & 0o111:
                    continue
                seen.add(name)
                self._add(name, path, st)
        if registry is not None:
            self._pins(registry)

    def _add(self, name: str, path: str, st: os.stat_result) -> None:
        self.by_inode.setdefault((st.st_dev, st.st_ino), set()).add(name)
        self.by_size.setdefault(st.st_size, []).append((name, path, (st.st_dev, st.st_ino)))

    def _pins(self, registry: str) -> None:
        """The programs ``registry.json`` pins (module docstring), each only while its file holds the
        pinned sha256; that digest is then the file's, so a same-size candidate is compared with it."""
        try:
            entries = local.LocalRegistry(registry).checked(sorted(self.known), limit=_MAX_PINS)
        except AtipTrustError:
            return  # unreadable or malformed: no name from it (admission denies on it)
        for entry in entries:
            if entry.changed or entry.digest.algorithm != "sha256":
                continue  # drift or tampering: the pin is not these bytes' name
            try:
                st = os.stat(entry.path)
            except OSError:
                continue
            if S_ISREG(st.st_mode):
                self._add(entry.name, entry.path, st)
                self.digests.setdefault(os.path.realpath(entry.path), entry.digest.hex)

    def digest(self, path: str) -> str | None:
        if path not in self.digests:
            self.digests[path] = _sha256(path)
        return self.digests[path]


def _sha256(path: str, algorithm: str = "sha256") -> str | None:
    h = hashlib.new(algorithm)
    try:
        with open(path, "rb") as f:
            while chunk := f.read(_CHUNK):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()


#: At most this many registry.json pins are read (each may re-hash its file): a bound on a planted index.
_MAX_PINS = 256
_INDEXES: dict[tuple[frozenset[str], str | None, tuple[int, ...] | None], _Index] = {}


def _registry() -> tuple[str | None, tuple[int, ...] | None]:
    """RFC §4.2's ``registry.json`` and its stat identity, or (None, None) when there is none (one
    ``stat``): the index is built again when the file changes (a long-lived process)."""
    path = os.path.join(agent_tools_data_dir(), "registry.json")
    try:
        st = os.stat(path)
    except OSError:
        return None, None
    return path, (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _index(governed: frozenset[str], path_env: str | None) -> _Index:
    registry, stamp = _registry()
    path_env = os.environ.get("PATH", os.defpath) if path_env is None else path_env  # the key: PATH as read now
    key = (governed, path_env, stamp)
    index = _INDEXES.get(key)
    if index is None:
        if len(_INDEXES) >= 16:  # a long-lived process whose PATH or registry keeps changing
            _INDEXES.clear()
        known = frozenset(RUNNERS) | frozenset(TABLES) | UNMODELLED | governed
        index = _INDEXES[key] = _Index(known, path_env, registry)
    return index


def names_of(found: str, governed: frozenset[str], path_env: str | None) -> frozenset[str]:
    """The names the file at ``found`` is known by here (module docstring); empty when none. ``path_env``:
    the line's PATH (None: this process's); :data:`SYSTEM_FOLDERS` are searched after it."""
    return _names(_index(governed, path_env), found)


class Identified(Record):
    """What :func:`identify` found for one file."""

    #: The name to read the program by (:func:`identity`), or None: the name the line gives it.
    name: str | None
    #: Every name the file is known by (:func:`names_of`).
    names: frozenset[str]
    #: ``(expected, actual)`` digests when the program is read by another name and ``registry.json`` pins
    #: the typed one to other bytes (module docstring), else None.
    pin: tuple[str, str] | None = None


def identify(found: str, typed: str, governed: frozenset[str], path_env: str | None) -> Identified:
    """:func:`names_of` and :func:`identity` for the file ``found`` the line calls ``typed``, and the
    typed name's ``registry.json`` pin when the program is read by another name (module docstring): one
    index, so without a ``registry.json`` one ``stat``. A malformed or unsafe index raises, as in
    admission (registry/local.py): an error, a denial."""
    index = _index(governed, path_env)
    names = _names(index, found)
    name = identity(typed, names, governed)
    if name is None or index.registry is None:
        return Identified(name, names)
    entry = local.LocalRegistry(index.registry).recorded(typed)
    if entry is None:
        return Identified(name, names)
    want = entry.digest
    have = index.digest(os.path.realpath(found)) if want.algorithm == "sha256" else \
        _sha256(os.path.realpath(found), want.algorithm)
    actual = "unreadable" if have is None else f"{want.algorithm}:{have}"
    return Identified(name, names, None if have == want.hex else (str(want), actual))


def _names(index: _Index, found: str) -> frozenset[str]:
    known = index.known
    real = os.path.basename(os.path.realpath(found))
    try:
        st = os.stat(found)
    except OSError:
        return frozenset()
    inode = (st.st_dev, st.st_ino)
    names = set(index.by_inode.get(inode, ()))
    if real in known:
        names.add(real)
    # Another file of the same size (not this one under another name) may hold the same bytes: a copy.
    same = [(n, p) for n, p, other in index.by_size.get(st.st_size, []) if other != inode]
    mine = index.digest(os.path.realpath(found)) if same else None
    names.update(n for n, p in same if mine is not None and index.digest(os.path.realpath(p)) == mine)
    return frozenset(names)


_SYSTEM: dict[str, tuple[tuple[int, int], int, str | None] | None] = {}


def is_system(found: str, name: str) -> bool:
    """The file at ``found`` is the ``name`` of glibc's default path (``/usr/bin/cat``): the same file
    or the same bytes. A name proves nothing (a copy of ``cp`` called ``cat`` writes), so tables keyed
    by name (writes.READ_ONLY) hold only for these bytes."""
    if name not in _SYSTEM:
        _SYSTEM[name] = None
        for entry in DEFAULT_PATH.split(":"):
            path = os.path.join(entry, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            if S_ISREG(st.st_mode):
                _SYSTEM[name] = ((st.st_dev, st.st_ino), st.st_size, None)
                _SYSTEM_PATHS[name] = path
                break
    known = _SYSTEM[name]
    try:
        st = os.stat(found)
    except OSError:
        return False
    if known is None or not S_ISREG(st.st_mode):
        return False
    inode, size, digest = known
    if (st.st_dev, st.st_ino) == inode:
        return True
    if st.st_size != size:
        return False
    if digest is None:
        digest = _sha256(_SYSTEM_PATHS[name])
        _SYSTEM[name] = (inode, size, digest)
    return digest is not None and _sha256(found) == digest


_SYSTEM_PATHS: dict[str, str] = {}


def identity(typed: str, names: Iterable[str], governed: frozenset[str]) -> str | None:
    """The name to read a program typed as ``typed`` by, when its bytes make it another program, or None.

    Bytes that are a program the gate gives a meaning (a modelled runner, a program with a table, an
    interpreter or other runner of facts/programs.py) are that program, even when the policy also names
    the disguise (an allowed ``wrap`` that is env); otherwise bytes of a governed program are it. A
    sorted choice among equals, runners first, keeps the answer stable."""
    names = sorted(set(names))
    meaningful = [n for n in names if n in RUNNERS or n in TABLES or n in UNMODELLED]
    if meaningful:
        if typed in meaningful:
            return None
        return next((n for n in meaningful if n in RUNNERS), meaningful[0])
    if typed in names:
        return None
    return next((n for n in names if n in governed), None)


__all__ = ["SYSTEM_FOLDERS", "Identified", "governed_names", "identify", "identity", "is_system", "names_of"]
