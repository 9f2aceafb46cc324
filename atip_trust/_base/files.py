"""Opening input files that someone else may have planted or swapped, and reading them with a cap.

One descriptor per file: opened without blocking (``O_NONBLOCK``: a FIFO returns at once instead of
waiting for a writer), checked with ``fstat`` on that descriptor (a regular file only; optionally a
safe owner and mode), then read or hashed from it, never reopened by name (practice 2).
Every ``OSError`` is mapped here into the error tree, with ``what`` naming the file's role.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable

from atip_trust.errors import (
    ArtifactAccessError,
    AtipTrustError,
    InputTooLargeError,
    NotARegularFileError,
    UsageError,
)

_KIND_NAMES = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFLNK: "a symbolic link",
}
#: Linux and macOS say ELOOP when O_NOFOLLOW meets a symlink; FreeBSD says EMLINK.
_LINK_ERRNOS = (errno.ELOOP, errno.EMLINK)
_READ_BLOCK = 1 << 20


def owner_problem(st: os.stat_result, *, sticky_ok: bool = False) -> str | None:
    """Why a file or directory is unsafe to trust (None: it is safe): writable by group or others, or
    owned by neither root nor the current user; whoever can write it decides what it says.
    ``sticky_ok``: a group/other-writable *directory* with the sticky bit (``/tmp``) is accepted, for
    a directory's ancestors only: others can add names to it but cannot rename or remove ours."""
    mode = stat.S_IMODE(st.st_mode)
    sticky = sticky_ok and stat.S_ISDIR(st.st_mode) and mode & stat.S_ISVTX
    if mode & (stat.S_IWGRP | stat.S_IWOTH) and not sticky:
        return f"writable by group or others (mode {mode:04o}, expected no group/other write bit)"
    if st.st_uid not in (0, os.getuid()):
        return f"owned by uid {st.st_uid}, expected root (0) or the current user ({os.getuid()})"
    return None


def check_owner(st: os.stat_result, *, what: str, path: str, error: type[AtipTrustError]) -> None:
    """Refuse a file that group or others can write, or that neither root nor the current user owns:
    whoever can write it decides what it says (managed policy; files found by discovery)."""
    problem = owner_problem(st)
    if problem is not None:
        raise error(f"{what} refused: {problem}", path=path)


def exists(path: str | os.PathLike[str], *, what: str, error: type[AtipTrustError]) -> bool:
    """Whether anything (a link included) is at ``path``: False only when the system says there is
    nothing (ENOENT, ENOTDIR). ``os.path.lexists`` also answers False when the answer is unknown (no
    permission to search a folder, an I/O error); where absence lifts a check (an org policy's signers
    file, a pin in ``registry.json``, a rollback mark), unknown must not read as absent: it raises
    ``error`` naming the path and the system's answer (fail closed)."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as err:
        raise error(f"cannot tell whether the {what} exists: {err.strerror or err}", path=os.fspath(path)) from err
    except ValueError as err:  # an embedded NUL: no such file can exist
        raise error(f"invalid {what} path: {err}", path=os.fspath(path)) from err
    return True


def open_regular(
    path: str | os.PathLike[str],
    *,
    what: str = "file",
    write: bool = False,
    follow_links: bool = True,
    owner_check: type[AtipTrustError] | None = None,
) -> tuple[int, os.stat_result]:
    """Open a regular file and ``fstat`` it; the caller owns (and closes) the descriptor.

    ``write``: open for appending, creating the file 0600; read-write when the file allows it (the
    audit log reads its own last byte, state/audit.py), else write-only. ``follow_links=False``: a symlink at the
    path is refused, not followed. ``owner_check``: the error class for ``check_owner``'s refusals
    (a symlink is then refused with it too). Raises ``ArtifactAccessError`` when the file cannot be
    opened or inspected and ``NotARegularFileError`` for a directory, FIFO, device, socket or link.
    """
    name = os.fspath(path)
    flags = os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)
    flags |= (os.O_RDWR | os.O_APPEND | os.O_CREAT) if write else os.O_RDONLY
    if not follow_links:
        flags |= os.O_NOFOLLOW
    try:
        try:
            fd = os.open(name, flags, 0o600)
        except PermissionError:
            if not write:
                raise
            fd = os.open(name, flags & ~os.O_RDWR | os.O_WRONLY, 0o600)  # a write-only (0200) log
    except FileNotFoundError as err:
        raise ArtifactAccessError(f"{what} not found", path=name) from err
    except PermissionError as err:
        how = "writable" if write else "readable"
        raise ArtifactAccessError(f"{what} is not {how} (permission denied)", path=name) from err
    except OSError as err:
        if not follow_links and err.errno in _LINK_ERRNOS:
            if owner_check is not None:
                raise owner_check(
                    f"{what} refused: cannot open it without following links ({err.strerror})",
                    path=name,
                ) from err
            raise NotARegularFileError(f"{what} is a symbolic link, not a regular file", path=name) from err
        if err.errno == errno.ENXIO:  # a write-only open of a FIFO or socket nobody reads
            raise NotARegularFileError(f"{what} is a FIFO or socket, not a regular file", path=name) from err
        raise ArtifactAccessError(f"cannot open {what}: {err.strerror}", path=name) from err
    except ValueError as err:  # embedded NUL, or a lone surrogate the OS cannot encode
        raise ArtifactAccessError(f"invalid {what} path: {err}", path=name) from err
    try:
        try:
            st = os.fstat(fd)
        except OSError as err:
            raise ArtifactAccessError(f"cannot stat {what}: {err.strerror}", path=name) from err
        if not stat.S_ISREG(st.st_mode):
            kind = _KIND_NAMES.get(stat.S_IFMT(st.st_mode), "not a regular file")
            raise NotARegularFileError(f"{what} is {kind}, not a regular file", path=name)
        if owner_check is not None:
            check_owner(st, what=what, path=name, error=owner_check)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_fd_capped(fd: int, cap: int, *, what: str = "file", path: str | None = None) -> bytes:
    """The whole file behind ``fd`` from offset 0, refusing more than ``cap`` bytes.

    Reads with ``pread`` where there is one, so the descriptor's offset stays put (an artifact's
    descriptor is later hashed again or executed); at most one byte past the cap is ever read, so a
    file that grows while it is read is refused, not buffered.
    """
    chunks: list[bytes] = []
    total = 0
    pread = getattr(os, "pread", None)
    try:
        while True:
            want = min(_READ_BLOCK, cap + 1 - total)
            block = pread(fd, want, total) if pread is not None else os.read(fd, want)
            if not block:
                break
            chunks.append(block)
            total += len(block)
            if total > cap:
                raise InputTooLargeError(f"{what} exceeds the cap of {cap} bytes", path=path)
    except OSError as err:
        raise ArtifactAccessError(f"cannot read {what}: {err.strerror}", path=path) from err
    return b"".join(chunks)


def read_capped(
    path: str | os.PathLike[str],
    cap: int,
    *,
    what: str = "file",
    follow_links: bool = True,
    owner_check: type[AtipTrustError] | None = None,
) -> bytes:
    """Read a regular file of at most ``cap`` bytes (``open_regular``'s checks, then the cap)."""
    name = os.fspath(path)
    fd, st = open_regular(name, what=what, follow_links=follow_links, owner_check=owner_check)
    try:
        if st.st_size > cap:
            raise InputTooLargeError(
                f"{what} is {st.st_size} bytes, over the cap of {cap} bytes", path=name
            )
        return read_fd_capped(fd, cap, what=what, path=name)
    finally:
        os.close(fd)


def path_name(text: str) -> str:
    """pathlib's ``PurePosixPath(text).name`` without importing pathlib (docs/caching.md): the
    last component that is neither empty nor ``.`` ("a/b/", "a/b/." and "a//b" name "b"; "/" names
    nothing), ``..`` included as it is. tests/admission/test_admit_tool_name.py holds it to pathlib's answer."""
    for part in reversed(text.split("/")):
        if part and part != ".":
            return part
    return ""


def path_texts(value: object, parameter: str) -> tuple[str, ...]:
    """A library parameter that takes several paths (``bundles``, ``keys``), as text. One path given
    alone (a ``str`` or ``os.PathLike``) is one path: a string is a sequence too, and read as one its
    characters would be taken for so many paths. Anything else but paths is the caller's mistake,
    named by ``parameter`` (``UsageError``), never a ``TypeError`` from deep inside."""
    if isinstance(value, (str, os.PathLike)):
        value = (value,)
    elif isinstance(value, (bytes, bytearray)) or not isinstance(value, Iterable):
        raise UsageError(f"{parameter}: expected a path or a sequence of paths, actual {type(value).__name__}")
    out: list[str] = []
    for item in value:
        text = os.fspath(item) if isinstance(item, (str, os.PathLike)) else None
        if not isinstance(text, str):
            raise UsageError(f"{parameter}: expected a path (str or os.PathLike), actual "
                             f"{type(item).__name__} {item!r:.80}")
        out.append(text)
    return tuple(out)


def private_dir(path: str | os.PathLike[str], *, create: bool) -> bool:
    """A per-user state folder is usable: it exists (made 0700 with its parents if ``create``), is a
    real directory (not a link) owned by this user, and neither group nor others can write it. A
    cache kept anywhere else could be filled by someone else; the caller then keeps nothing."""
    try:
        if create:
            os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.lstat(path)
    except OSError:
        return False
    return (stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
            and not stat.S_IMODE(st.st_mode) & (stat.S_IWGRP | stat.S_IWOTH))


def _create_unique(directory: str, prefix: str, suffix: str) -> tuple[int, str]:
    """A new file ``prefix<random>suffix`` in ``directory``, created 0600 and exclusively (never an
    existing file or a link), as ``tempfile.mkstemp`` does; without tempfile, which brings shutil and
    random, because an admission writes its cache entries with this (docs/adr/0001-start-up.md)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(100):
        name = os.path.join(directory, f"{prefix}{os.urandom(8).hex()}{suffix}")
        try:
            return os.open(name, flags, 0o600), name
        except FileExistsError:
            continue
    raise FileExistsError(f"no unused temporary name in {directory}")


def write_atomic(path: str | os.PathLike[str], data: bytes, *, mode: int = 0o600, durable: bool = False,
                 prefix: str = ".tmp-", suffix: str = ".part") -> None:
    """Replace ``path`` with ``data`` all at once: a temporary file in the same directory (created
    0600, then given ``mode``), renamed over it, so a reader sees the old bytes or the new, never a
    part. ``durable``: fsync before the rename (a file someone commits; caches that check their own
    integrity skip it). Raises ``OSError``; the temporary file never stays behind."""
    target = os.fspath(path)
    fd, tmp = _create_unique(os.path.dirname(os.path.abspath(target)), prefix, suffix)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            if mode != 0o600:
                os.fchmod(out.fileno(), mode)
            if durable:
                os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


__all__ = ["check_owner", "exists", "open_regular", "owner_problem", "path_name", "path_texts", "private_dir", "read_capped",
           "read_fd_capped", "write_atomic"]
