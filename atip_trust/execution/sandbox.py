"""The run-time boundary of a verified tool: its signed declaration becomes the walls it runs inside.

RFC §11.1 "use sandboxing for untrusted tools"; AIP-14 "a driver whose body observably writes resources
not declared in the contract MUST be refused at runtime"; RFC §3.1 "``--agent`` MUST NOT perform any side
effects". This module is the one owner of the mapping from verified effects to rules (``boundary_for``,
docs/sandbox.md shows the table) and of the engine that enforces them (docs/adr/0002-sandbox.md):

* Landlock (``landlock(7)``), through its three system calls: a ruleset that *handles* the write rights
  (write, truncate, make, remove, refer) and grants them only beneath the private temporary folder, the
  declared ``filesystem.paths`` and the terminal/null devices. Reading and executing are not handled:
  the program reads its libraries, its ``#!`` interpreter and its inputs as it would unconfined (the
  declaration says nothing about reads, so nothing is inferred).
* A private network namespace (``unshare(CLONE_NEWNET)``, with ``CLONE_NEWUSER`` when not root) for
  ``network: false``: only a loopback device that is down, so every connect, even to 127.0.0.1, fails.

The ruleset is built in the parent (``prepare``) and entered by the child between fork and exec
(``enter``): unshare first (a non-root child writes its own ``/proc/self/uid_map``), then
``PR_SET_NO_NEW_PRIVS`` and ``landlock_restrict_self``. Nothing here is a home-made isolation: the
kernel enforces every rule.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from atip_trust._base.lazy import lazy_import
from atip_trust._base.record import Record
from atip_trust.errors import AtipTrustError
from atip_trust.facts.effects import command_effects, merge_declared

if TYPE_CHECKING:
    import ctypes
    import shutil
    import struct
    import tempfile

    from atip_trust.admission.admit import Admission

    Mode = Literal["off", "preferred", "required"]
else:
    # Deferred (_base/lazy.py): only building or entering a boundary reads them, never the warm
    # admit/hook paths (tests/fast_path.py).
    ctypes = lazy_import("ctypes")  # the Landlock system calls
    struct = lazy_import("struct")  # (with ctypes) a rule's packed attribute
    tempfile = lazy_import("tempfile")  # the boundary's private temporary folder
    shutil = lazy_import("shutil")  # (with tempfile) removing that folder

#: ``exec.sandbox`` values, least to most strict (a flag may only move right: docs/sandbox.md).
MODES: tuple[str, ...] = ("off", "preferred", "required")
#: Set to any non-empty value, the engine counts as missing (tests; an operator proving ``required``).
DISABLE_ENV = "ATIP_TRUST_SANDBOX_DISABLE"

# linux/landlock.h (the syscall numbers are the same on every architecture: asm-generic/unistd.h)
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
WRITE_FILE, REMOVE_DIR, REMOVE_FILE = 1 << 1, 1 << 4, 1 << 5
MAKE_ALL = sum(1 << b for b in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
REFER, TRUNCATE = 1 << 13, 1 << 14  # ABI 2, ABI 3
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6
#: Rights a Landlock rule on a single file (not a directory) may carry.
_FILE_RIGHTS = WRITE_FILE | TRUNCATE
_CLONE_NEWNET, _CLONE_NEWUSER = 0x40000000, 0x10000000
#: Devices every program may open for writing: output discarded or shown to the person, nothing kept.
DEVICE_FILES: tuple[str, ...] = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty")
DEVICE_DIRS: tuple[str, ...] = ("/dev/pts",)
#: Error texts (strerror) the boundary makes a program see: EACCES from Landlock, ENETUNREACH in the
#: private network namespace (its loopback is down), EROFS from nothing here but from tools that
#: report any refused write that way.
FS_DENIAL = ("Permission denied", "Operation not permitted")
NET_DENIAL = ("Network is unreachable",)


class SandboxUnavailable(AtipTrustError):
    """The kernel (or this process) lacks what a boundary needs; ``feature`` names it."""

    def __init__(self, feature: str, message: str) -> None:
        super().__init__(message)
        self.feature = feature


class BoundaryError(AtipTrustError):
    """A declaration that cannot become a boundary (a path escaping the working tree, a missing path)."""


class Boundary(Record):
    """What a run may change. ``write``: ``none`` (only the private temporary folder), ``paths`` (and
    beneath ``write_paths``) or ``any``; ``delete`` False takes the remove rights away even where
    writing is allowed; ``network`` False runs it in a private network namespace."""

    write: str
    write_paths: tuple[str, ...] = ()
    delete: bool = True
    network: bool = True
    #: Where the rules come from (``verified effects of git status``, ``--agent probe``).
    source: str = ""

    @property
    def confines(self) -> bool:
        return self.write != "any" or not self.delete or not self.network

    def describe(self) -> str:
        if not self.confines:
            return f"none needed ({self.source}: writes, deletes and network all declared)"
        fs = {"none": "no writes outside a private temporary folder",
              "paths": "writes only beneath " + ", ".join(self.write_paths),
              "any": "writes anywhere"}[self.write]
        parts = [fs, "deletes allowed" if self.delete else "no deletes",
                 "network allowed" if self.network else "no network"]
        return f"{'; '.join(parts)} ({self.source})"

    def to_json(self) -> dict[str, Any]:
        return {"write": self.write, "write_paths": list(self.write_paths), "delete": self.delete,
                "network": self.network, "source": self.source}


#: ``--agent`` probes (RFC §3.1: no side effects), whatever the tool declares.
PROBE_BOUNDARY = Boundary(write="none", delete=False, network=False, source="--agent probe (RFC §3.1)")


def stricter_mode(*modes: str | None) -> str:
    """The strictest of the modes given (None ignored); ``preferred`` when none is given."""
    given = [m for m in modes if m is not None]
    return max(given, key=MODES.index) if given else "preferred"


def declared_effects(admission: Admission) -> dict[str, Any] | None:
    """The RFC §3.6 effects the admission verified for its command (metadata levels along the command
    path, and a verified AIP-14 contract's), merged risk-wins; None when nothing verified speaks."""
    if not admission.effects_verified:
        return None
    levels: list[Mapping[str, Any]] = []
    if admission.metadata is not None:
        found, ok = command_effects(admission.metadata.doc, admission.command)
        if ok:
            levels.extend(found)
    if admission.contract is not None:
        levels.append(admission.contract.effects)
    return merge_declared(levels) if levels else None


def boundary_for(admission: Admission, cwd: str | None = None) -> Boundary | None:
    """The boundary the admitted command runs in, or None when no verified declaration speaks."""
    eff = declared_effects(admission)
    if eff is None:
        return None
    return boundary_from_effects(eff, cwd=cwd or os.getcwd(),
                                 source=f"verified effects of {' '.join([admission.tool, *admission.command])}")


def boundary_from_effects(eff: Mapping[str, Any], *, cwd: str, source: str) -> Boundary:
    """The table in docs/sandbox.md. Only an explicit ``false`` confines: a field left out is not a
    promise, and the sandbox enforces promises (policy/decide.py already treats silence as risky)."""
    fs = eff.get("filesystem")
    fs = fs if isinstance(fs, Mapping) else {}
    write = "none" if fs.get("write") is False else "any"
    paths: tuple[str, ...] = ()
    declared = fs.get("paths")
    if write == "any" and fs.get("write") is True and isinstance(declared, list) and declared:
        write, paths = "paths", tuple(resolve_declared_path(p, cwd) for p in declared)
    return Boundary(write=write, write_paths=paths, delete=fs.get("delete") is not False,
                    network=eff.get("network") is not False, source=source)


def resolve_declared_path(path: object, cwd: str) -> str:
    """A declared ``filesystem.paths`` entry, resolved against ``cwd`` through every link; it must stay
    inside the working tree and exist (Landlock grants rights on an open directory or file)."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise BoundaryError(f"declared filesystem.paths entry {path!r} is not a path")
    root = os.path.realpath(cwd)
    real = os.path.realpath(os.path.join(root, path))
    if os.path.commonpath([root, real]) != root:
        raise BoundaryError(f"declared path {path!r} resolves to {real}, outside the working tree {root}: "
                            "refused rather than widen the boundary", path=path)
    if not os.path.exists(real):
        raise BoundaryError(f"declared path {path!r} ({real}) does not exist: the boundary cannot grant "
                            "rights on it", path=path)
    return real


# --- the engine -------------------------------------------------------------------------------------

_libc: ctypes.CDLL | None = None


def _lib() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _syscall() -> Any:
    return _lib().syscall


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when absent, disabled, or switched off by ``DISABLE_ENV``."""
    if os.environ.get(DISABLE_ENV):
        return 0
    try:
        version = int(_syscall()(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(version, 0)


def netns_available() -> bool:
    """Whether this process can make a private network namespace (root, or unprivileged user
    namespaces allowed by the kernel's sysctls)."""
    if os.environ.get(DISABLE_ENV) or not os.path.exists("/proc/self/ns/net"):
        return False
    if os.geteuid() == 0:
        return True
    for knob, bad in (("/proc/sys/kernel/unprivileged_userns_clone", "0"), ("/proc/sys/user/max_user_namespaces", "0")):
        try:
            with open(knob) as fh:
                if fh.read().strip() == bad:
                    return False
        except OSError:
            continue
    return True


def missing_feature(boundary: Boundary) -> str | None:
    """What the kernel lacks for ``boundary``, or None when it can be enforced."""
    if not boundary.confines:
        return None
    if boundary.write != "any" or not boundary.delete:
        if landlock_abi() < 3:
            return "Landlock ABI >= 3 (write, truncate, make and remove rights)"
    if not boundary.network and not netns_available():
        return "a private network namespace (unshare CLONE_NEWNET)"
    return None


def _ruleset_attr(handled: int, abi: int) -> Any:
    """``struct landlock_ruleset_attr``: ``handled_access_fs``; from ABI 6 also ``handled_access_net``
    (none: the network namespace does that) and ``scoped``, which keeps the tool from signalling
    processes outside its boundary and from reaching abstract Unix sockets bound outside it."""
    if abi >= 6:
        return (ctypes.c_uint64 * 3)(handled, 0, _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL)
    return (ctypes.c_uint64 * 1)(handled)


def _path_beneath(rights: int, fd: int) -> Any:
    """``struct landlock_path_beneath_attr`` (packed: a u64 then an s32, 12 bytes)."""
    return ctypes.create_string_buffer(struct.pack("=Qi", rights, fd), 12)


class Prepared:
    """A boundary ready to enter: its ruleset descriptor (None when writes are not confined), whether to
    unshare the network, and the private temporary folder (removed by ``close``)."""

    __slots__ = ("boundary", "ruleset_fd", "netns", "tmpdir")

    def __init__(self, boundary: Boundary, ruleset_fd: int | None, netns: bool, tmpdir: str | None) -> None:
        self.boundary, self.ruleset_fd, self.netns, self.tmpdir = boundary, ruleset_fd, netns, tmpdir

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        """``env`` with the private temporary folder as ``TMPDIR`` (mktemp(1), Python's tempfile)."""
        out = dict(env)
        if self.tmpdir is not None:
            out["TMPDIR"] = self.tmpdir
        return out

    def close(self, *, keep_tmp: bool = False) -> None:
        if self.ruleset_fd is not None:
            os.close(self.ruleset_fd)
            self.ruleset_fd = None
        if self.tmpdir is not None and not keep_tmp:
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            self.tmpdir = None


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise SandboxUnavailable("Landlock", f"{what}: {os.strerror(err)}")
    return result


def prepare(boundary: Boundary) -> Prepared:
    """Build ``boundary``'s ruleset (parent side). Raises ``SandboxUnavailable`` naming the missing
    feature, or ``BoundaryError`` when a granted path cannot be opened."""
    missing = missing_feature(boundary)
    if missing is not None:
        raise SandboxUnavailable(missing, f"the kernel lacks {missing}")
    if boundary.write == "any" and boundary.delete:
        return Prepared(boundary, None, not boundary.network, None)
    handled = WRITE_FILE | TRUNCATE | REMOVE_DIR | REMOVE_FILE | MAKE_ALL | REFER
    grant = handled & ~(0 if boundary.delete else REMOVE_DIR | REMOVE_FILE)
    tmpdir = tempfile.mkdtemp(prefix="atip-sandbox-")
    attr = _ruleset_attr(handled, landlock_abi())
    fd = _check(_syscall()(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), 0),
                "landlock_create_ruleset")
    prepared = Prepared(boundary, fd, not boundary.network, tmpdir)
    try:
        dirs: list[tuple[str, int]] = [(tmpdir, handled)]
        if boundary.write == "any":
            dirs.append(("/", grant))
        dirs.extend((p, grant) for p in boundary.write_paths)
        rules = [*dirs, *((d, WRITE_FILE) for d in DEVICE_DIRS), *((f, _FILE_RIGHTS) for f in DEVICE_FILES)]
        for path, rights in rules:
            _add_rule(fd, path, rights, required=path in boundary.write_paths or path == tmpdir)
    except BaseException:
        prepared.close()
        raise
    return prepared


def _add_rule(ruleset: int, path: str, rights: int, *, required: bool) -> None:
    try:
        pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError as err:
        if required:
            raise BoundaryError(f"cannot open {path} for the boundary: {err.strerror}", path=path) from err
        return  # a device this machine does not have (no /dev/tty in a container): nothing to grant
    try:
        if not os.path.isdir(path):
            rights &= _FILE_RIGHTS
        rule = _path_beneath(rights, pfd)
        _check(_syscall()(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, rule, 0),
               f"landlock_add_rule {path}")
    finally:
        os.close(pfd)


def enter(prepared: Prepared) -> None:
    """Child side, between fork and exec (or right before ``execve`` in ``atip-trust exec``): the
    network namespace first, then no-new-privileges and the ruleset. Raises OSError on failure; the
    caller must not run the tool then."""
    if prepared.netns:
        _unshare_network()
    if prepared.ruleset_fd is not None:
        libc = _lib()
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        if libc.syscall(_SYS_RESTRICT_SELF, prepared.ruleset_fd, 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")


def _unshare_network() -> None:
    uid, gid = os.geteuid(), os.getegid()
    libc = _lib()  # os.unshare is Python 3.12+
    if libc.unshare(_CLONE_NEWNET if uid == 0 else _CLONE_NEWUSER | _CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNET)")
    if uid == 0:
        return
    # The new user namespace maps the caller to itself, so files keep their owner (user_namespaces(7)).
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as fh:
            fh.write(text)


def arrange(boundary: Boundary | None, mode: str) -> tuple[Prepared | None, dict[str, Any] | None]:
    """The boundary a run gets under ``mode`` (policy ``exec.sandbox``, tightened by a flag), and the
    record the audit line and the result carry (None when nothing was asked: mode ``off``).

    ``preferred`` runs unconfined when the kernel lacks a feature and says so (``enforced: false``,
    ``missing``); ``required`` raises ``SandboxUnavailable``. A declaration that cannot become a
    boundary (``BoundaryError``) is refused under both: it is the declaration that is wrong."""
    if mode == "off":
        return None, None
    if boundary is None:
        return None, {"mode": mode, "enforced": False, "boundary": None,
                      "why": "no verified declaration of effects: nothing to enforce"}
    record: dict[str, Any] = {"mode": mode, "boundary": boundary.to_json(), "enforced": False}
    if not boundary.confines:
        return None, {**record, "why": "the declaration allows writes, deletes and network"}
    try:
        prepared = prepare(boundary)
    except SandboxUnavailable as err:
        if mode == "required":
            raise
        return None, {**record, "missing": err.feature, "why": f"not enforced: the kernel lacks {err.feature}"}
    return prepared, {**record, "enforced": True}


def attempt_seen(boundary: Boundary, exit_code: int | None, signal: int | None, stderr: bytes) -> str | None:
    """What the tool tried outside ``boundary``, as far as it can be told after the run, or None.

    Landlock reports a refused operation only to the program (EACCES), and the namespace's down
    loopback answers ENETUNREACH; neither is logged where an unprivileged caller can read it. So an
    attempt counts as seen when the run failed *and* the program reported one of those errors for a
    kind of access the boundary takes away (docs/adr/0002-sandbox.md: what this can and cannot prove).
    A program that swallows the error and exits 0 is still contained, just not reported."""
    if exit_code == 0 and signal is None:
        return None
    text = stderr.decode("utf-8", "replace")
    if (boundary.write != "any" or not boundary.delete) and any(d in text for d in FS_DENIAL):
        return "a filesystem change outside the boundary (the program reported: " + _line_with(text, FS_DENIAL) + ")"
    if not boundary.network and any(d in text for d in NET_DENIAL):
        return "a network connection (the program reported: " + _line_with(text, NET_DENIAL) + ")"
    return None


def _line_with(text: str, needles: Sequence[str]) -> str:
    for line in text.splitlines():
        if any(n in line for n in needles):
            return line.strip()[:300]
    return ""


__all__ = ["arrange", "Boundary", "BoundaryError", "DISABLE_ENV", "MODES", "PROBE_BOUNDARY", "Prepared",
           "SandboxUnavailable", "attempt_seen", "boundary_for", "boundary_from_effects", "declared_effects",
           "enter", "landlock_abi", "missing_feature", "netns_available", "prepare", "resolve_declared_path",
           "stricter_mode"]
