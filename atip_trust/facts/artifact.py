"""Open an artifact once, inspect it, and hash it from that same descriptor (principle 6).

A bare name (no ``/``) is resolved through PATH exactly once, here, and only through PATH's absolute
entries (never the current directory); afterwards everything works on the descriptor, never on the name
again. The final path component is opened with ``O_NOFOLLOW`` after the
path has been resolved, so a symlink swapped in between resolution and open is refused, not followed.
``O_NONBLOCK`` makes opening a FIFO return at once instead of waiting for a writer; the ``fstat`` that
follows refuses it.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from types import TracebackType
from typing import TYPE_CHECKING

from atip_trust._base.files import open_regular, path_name
from atip_trust._base.lazy import lazy_import
from atip_trust._base.record import Record
from atip_trust.errors import ArtifactAccessError, UsageError
from atip_trust.facts.digest import Digest, hash_fd

if TYPE_CHECKING:
    import fcntl
    import tempfile
    from typing import NoReturn

    from atip_trust.facts.digest import Algorithm
else:
    fcntl = lazy_import("fcntl")  # only when a #! script is copied for its interpreter (sealed_copy)
    tempfile = lazy_import("tempfile")  # only for a sealed copy of a #! script

#: memfd_create(2)'s MFD_NOEXEC_SEAL and MFD_EXEC (Linux 6.3; Python 3.11 has no names for them): a
#: copy for an interpreter to read can never be made executable; one the kernel itself runs (its ``#!``
#: line read from the copy) says so, or ``vm.memfd_noexec = 1`` would make it non-executable.
_MFD_NOEXEC_SEAL, _MFD_EXEC = 0x0008, 0x0010
#: How much of the file is read, hashed and written at a time by ``sealed_copy``.
_COPY_CHUNK = 256 * 1024


class FileIdentity(Record):
    """What ``fstat`` said about the opened file; used to detect a swap or an edit before exec."""

    dev: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int
    mode: int
    uid: int
    gid: int

    @classmethod
    def from_stat(cls, st: os.stat_result) -> FileIdentity:
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode,
                   st.st_uid, st.st_gid)

    def describe(self) -> str:
        return (f"dev {self.dev} inode {self.inode} size {self.size} mtime_ns {self.mtime_ns} "
                f"ctime_ns {self.ctime_ns}")


def _is_bare_name(text: str) -> bool:
    return os.sep not in text and (os.altsep is None or os.altsep not in text)


def path_entries(path_env: str | None = None) -> list[tuple[str, bool]]:
    """PATH's entries in order, each with whether it may be used: an empty entry, ``.`` or any other
    relative entry means "the current directory" to a shell, and is never used here (``which``, the
    discovery scan). ``path_env`` defaults to the environment's PATH (``os.defpath`` when unset)."""
    env = os.environ.get("PATH", os.defpath) if path_env is None else path_env
    return [(entry, bool(entry) and os.path.isabs(entry)) for entry in env.split(os.pathsep)]


def which(name: str, path_env: str | None = None) -> str:
    """Look a bare command name up in PATH as a POSIX shell does, minus the current directory.

    Each PATH entry in order; the first regular, executable ``entry/name`` wins. A shell takes an empty
    entry (``::``, a leading or trailing ``:``) or ``.`` or any relative entry to mean the current
    directory; we never do, because the decision must be about the file the *shell* runs and a tool
    dropped into whatever folder ``admit`` happens to run in must not be what is decided for. Such
    entries are skipped, and when one of them comes before the match and holds ``name``, the shell
    would run that file instead: refused (fail closed), naming both. ``name`` itself is never tried in
    the current directory (``./name`` is what a caller writes for that).
    """
    skipped: list[str] = []
    for entry, usable in path_entries(path_env):
        if not usable:
            skipped.append(entry)
            continue
        cand = os.path.join(entry, name)
        if _executable_file(cand):
            for rel in skipped:
                shadow = os.path.join(rel or ".", name)
                if _executable_file(shadow):
                    raise ArtifactAccessError(
                        f"{name!r} is ambiguous: PATH has the relative entry {rel or '(empty)'!r}, "
                        f"which a shell resolves to the current directory, where {shadow!r} would run "
                        f"instead of {cand!r}; remove relative entries from PATH or give a path",
                        path=name,
                    )
            return cand
    note = ""
    if skipped:
        shown = ", ".join(repr(e) if e else "(empty)" for e in skipped)
        note = f" (relative PATH entries are skipped, never the current directory: {shown})"
    raise ArtifactAccessError(f"{name!r} was not found on PATH{note}", path=name)


def _executable_file(path: str) -> bool:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return False
    return stat.S_ISREG(st.st_mode) and os.access(path, os.X_OK)


def _plain_absolute(text: str) -> str | None:
    """``text`` itself when it is already what ``realpath`` would return: absolute, without ``.``,
    ``..``, empty components or a trailing ``/``, and no component a symlink (each one ``lstat``ed, as
    ``realpath`` does, but without its bookkeeping: an admission resolves its tool on every call).
    None for anything else, including a missing component: ``realpath`` then decides, with its errors."""
    if not text.startswith("/") or len(text) < 2 or "//" in text or "/." in text or text.endswith("/"):
        return None
    end = 0
    try:
        while end >= 0:
            end = text.find("/", end + 1)
            if stat.S_ISLNK(os.lstat(text if end < 0 else text[:end]).st_mode):
                return None
    except (OSError, ValueError):
        return None
    return text


def resolve(target: str | os.PathLike[str], *, lookup: bool = True) -> str:
    """Turn a path or a bare tool name into an absolute, symlink-free path, once, as text (no pathlib on
    a warm admission, docs/caching.md).

    A bare name (a ``str`` without ``/``) is looked up through PATH only (``which``), as the shell that
    will run it does, and never in the current directory first; anything containing a separator is a
    path (write ``./name`` for a file here), and so is a ``pathlib.Path``, whatever it holds: callers
    that take *files* (``verify ARTIFACT``) pass a ``Path``, or ``lookup=False``. The result is fully resolved so that later
    opens do not depend on PATH or symlinks again.
    """
    text = os.fspath(target)
    if not text:
        raise ArtifactAccessError("empty artifact name")
    if lookup and isinstance(target, str) and _is_bare_name(text):
        text = which(text)
    plain = _plain_absolute(text)
    if plain is not None:
        return plain
    try:
        # What Path.resolve(strict=True) does, without building a Path from the input first.
        try:
            return os.path.realpath(text, strict=True)
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise RuntimeError(f"Symlink loop from {err.filename!r}") from err
            raise
    except FileNotFoundError as err:
        raise ArtifactAccessError("no such file", path=text) from err
    except (OSError, RuntimeError) as err:  # RuntimeError: symlink loop on some Pythons
        raise ArtifactAccessError(f"cannot resolve path: {err}", path=text) from err
    except ValueError as err:  # embedded NUL, or a lone surrogate the OS cannot encode
        raise ArtifactAccessError(f"invalid path: {err}", path=text) from err


class Artifact:
    """An opened regular file: its resolved path, descriptor, identity and (lazily) its digests.

    It owns its descriptor, so it is no value (``Record``): equal only to itself, never copied or
    pickled (a copy closing "its" descriptor would close whatever file the number names by then).
    Use it as a context manager, or call ``close()`` (idempotent; the descriptor is -1 after). Nothing
    closes it behind its owner's back (no ``__del__``): a runner may hold ``exec_fd()``'s number.
    Digests are computed from the descriptor on first request and cached; ``digests(("sha256",
    "sha512"))`` computes both in one pass over the file.
    """

    # ``_path`` holds the resolved path as text, read through ``path``: plain text paths are the one
    # internal path type (a warm path never imports pathlib, docs/caching.md).
    __slots__ = ("_digests", "_path", "fd", "identity")

    def __init__(self, path: str, fd: int, identity: FileIdentity,
                 digests: dict[Algorithm, Digest] | None = None) -> None:
        """Take ownership of ``fd``, opened from ``path`` (resolved, as text) and ``fstat``ed as
        ``identity``. ``open`` is the constructor to call."""
        self._path = path
        self.fd = fd
        self.identity = identity
        self._digests: dict[Algorithm, Digest] = {} if digests is None else digests

    def __repr__(self) -> str:
        state = "closed" if self.fd < 0 else f"fd={self.fd}"
        return f"Artifact(path={self._path!r}, {state}, identity={self.identity!r})"

    def __reduce_ex__(self, protocol: object) -> NoReturn:
        # copy.copy, copy.deepcopy and pickle all come here: a descriptor cannot be duplicated by value.
        raise TypeError(f"an Artifact owns its file descriptor and cannot be copied or pickled "
                        f"({self._path}): open the path again, or pass the Artifact itself")

    @classmethod
    def open(cls, target: str | os.PathLike[str], *, resolved: bool = False, lookup: bool = True) -> Artifact:
        """Open ``target`` (``resolve``d first, unless ``resolved``: an absolute path the caller just
        got from ``resolve``, so as not to walk it twice). The last component is never followed.
        ``lookup=False``: a bare name is a file in the current directory, never looked up on PATH."""
        text = os.fspath(target)
        path = text if resolved and text.startswith("/") else resolve(target, lookup=lookup)
        fd, st = open_regular(path, what="file", follow_links=False)
        return cls(path, fd, FileIdentity.from_stat(st))

    @property
    def path(self) -> str:
        """The resolved path (text: the one internal path type, as in python-tuf)."""
        return self._path

    def digests(self, algorithms: tuple[Algorithm, ...] = ("sha256",)) -> dict[Algorithm, Digest]:
        missing = tuple(a for a in algorithms if a not in self._digests)
        if missing:
            self._digests.update(hash_fd(self.fd, missing))
        return {a: self._digests[a] for a in algorithms}

    def digest(self, algorithm: Algorithm = "sha256") -> Digest:
        return self.digests((algorithm,))[algorithm]

    def adopt_digests(self, known: dict[Algorithm, Digest]) -> None:
        """Take digests computed earlier for this very file instead of hashing it again: only for a
        caller that has checked the file's identity (``FileIdentity``) is the one they were computed
        for (the verdict cache's stat fast path, admission/verdict_key.py)."""
        self._digests.update(known)

    @property
    def sha256(self) -> Digest:
        return self.digest("sha256")

    def unchanged(self) -> bool:
        """True when the path still names the same, unmodified file that was opened (principle 6)."""
        try:
            now = FileIdentity.from_stat(os.stat(self._path, follow_symlinks=False))
            mine = FileIdentity.from_stat(os.fstat(self.fd))
        except OSError:
            return False
        return now == mine == self.identity

    def exec_fd(self) -> int:
        """The verified descriptor, ready to execute (``os.execve(fd, ...)``, i.e. fexecve, or
        ``execveat(fd, "", AT_EMPTY_PATH)``): run exactly the bytes that were hashed, never the path again.

        The descriptor is opened close-on-exec; it is made inheritable here because a ``#!`` script
        executed through its descriptor is read back by its interpreter as ``/dev/fd/N``, which a
        close-on-exec descriptor no longer names after the exec. That interpreter reads the *file*,
        lazily, while it runs: the runners here hand a script's interpreter a ``sealed_copy``
        instead (execution/exec.py, execution/child.py), and keep this for binaries, whose bytes the kernel
        loads at the exec. The file's identity (dev, inode, size, mtime_ns, ctime_ns) is checked
        against the one verified: a file rewritten in place through another descriptor is refused,
        never executed.
        """
        if self.fd < 0:
            raise ArtifactAccessError("the artifact is closed", path=self._path)
        try:
            now = FileIdentity.from_stat(os.fstat(self.fd))
        except OSError as err:
            raise ArtifactAccessError(f"cannot stat: {err.strerror}", path=self._path) from err
        if now != self.identity:
            raise ArtifactAccessError(
                f"changed since it was verified: expected {self.identity.describe()}, "
                f"actual {now.describe()}", path=self._path)
        os.set_inheritable(self.fd, True)
        return self.fd

    def sealed_copy(self, expected: Digest, *, executable: bool = False) -> int:
        """A copy of this file that nobody can change, holding exactly the bytes whose digest is
        ``expected``: a close-on-exec descriptor (offset 0) the caller owns and closes.

        Why: a ``#!`` script is read by its interpreter, lazily and by path (bash reads a script a
        command at a time and seeks back before each one), so ``/dev/fd/N`` of the verified file lets a
        same-size rewrite in place run new bytes after every check (issue 22). The copy is hashed while
        it is made, from this descriptor, and refused (``ArtifactAccessError``) unless that digest is
        ``expected``: the bytes copied are the bytes verified, whatever the file holds by then. On
        Linux it is a ``memfd`` sealed against write, grow and shrink, and against more seals
        (memfd_create(2), fcntl(2) "File Sealing"): the running script cannot change it either, through
        any descriptor or ``/proc/self/fd/N``. Elsewhere it is an unnamed temporary file (0600, unlinked
        at once), which no other process can open by a name. ``executable``: the copy is to be
        executed itself (``/proc/self/fd/N``; the kernel then hands it to the interpreter by that name).
        """
        if self.fd < 0:
            raise ArtifactAccessError("the artifact is closed", path=self._path)
        out = _anonymous_file(executable)
        try:
            digest = hashlib.new(expected.algorithm)
            offset = 0
            while True:
                try:
                    block = os.pread(self.fd, _COPY_CHUNK, offset)
                except OSError as err:
                    raise ArtifactAccessError(f"read failed at offset {offset}: {err.strerror}",
                                              path=self._path) from err
                if not block:
                    break
                digest.update(block)
                _write_all(out, block)
                offset += len(block)
            got = Digest(expected.algorithm, digest.digest())
            if got.value != expected.value:  # public values: no constant-time == (it loads OpenSSL)
                raise ArtifactAccessError(f"changed since it was verified: expected {expected}, actual "
                                          f"{got}", path=self._path)
            if hasattr(os, "memfd_create"):
                fcntl.fcntl(out, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE | fcntl.F_SEAL_GROW
                            | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL)
            os.lseek(out, 0, os.SEEK_SET)  # where a dup of it (macOS /dev/fd/N) starts reading
        except BaseException:
            os.close(out)
            raise
        return out

    def close(self) -> None:
        """Close the descriptor, once: later calls do nothing (the number may name another file by then)."""
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    def __enter__(self) -> Artifact:
        return self

    def borrowed(self) -> _Borrowed:
        """This artifact in a ``with`` block that leaves it open: its owner closes it (an admission of a
        file ``exec`` or a hook opened, docs/caching.md: contextlib's nullcontext, without it)."""
        return _Borrowed(self)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class _Borrowed:
    __slots__ = ("art",)

    def __init__(self, art: Artifact) -> None:
        self.art = art

    def __enter__(self) -> Artifact:
        return self.art

    def __exit__(self, *exc: object) -> None:
        return None


def _anonymous_file(executable: bool = False) -> int:
    """A new file no other process can open by a name: a sealable memfd on Linux (close-on-exec; never
    executable unless asked, where the kernel knows MFD_NOEXEC_SEAL), elsewhere a temporary file
    unlinked at once."""
    if hasattr(os, "memfd_create"):
        flags = os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING
        try:
            return os.memfd_create("atip-trust-verified-script",
                                   flags | (_MFD_EXEC if executable else _MFD_NOEXEC_SEAL))
        except OSError as err:
            if err.errno != errno.EINVAL:  # EINVAL: a kernel before 6.3, without these flags
                raise ArtifactAccessError(f"cannot create a sealed copy: {err.strerror}") from err
        try:
            return os.memfd_create("atip-trust-verified-script", flags)
        except OSError as err:
            raise ArtifactAccessError(f"cannot create a sealed copy: {err.strerror}") from err
    fd, name = tempfile.mkstemp(prefix="atip-trust-script-")
    os.unlink(name)
    return fd


def _write_all(fd: int, data: bytes) -> None:
    with memoryview(data) as view:
        done = 0
        while done < len(view):
            try:
                done += os.write(fd, view[done:])
            except OSError as err:
                raise ArtifactAccessError(f"cannot write the sealed copy: {err.strerror}") from err


class DigestSubject(Record, frozen=False):
    """An artifact known only by its digest (``verify sha256:<hex>``), as cosign's ``--digest`` or
    ``gh attestation verify`` on a digest: attestations are matched by subject; nothing is opened."""

    known: Digest
    fd: int = -1

    @property
    def path(self) -> str:
        return str(self.known)

    @property
    def identity(self) -> None:
        return None

    def digests(self, algorithms: tuple[Algorithm, ...] = ("sha256",)) -> dict[Algorithm, Digest]:
        return {a: self.known for a in algorithms if a == self.known.algorithm}

    def digest(self, algorithm: Algorithm = "sha256") -> Digest:
        if algorithm != self.known.algorithm:
            raise UsageError(
                f"only the {self.known.algorithm} digest of this artifact is known, {algorithm} is needed"
            )
        return self.known

    def close(self) -> None:
        pass

    def __enter__(self) -> DigestSubject:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


__all__ = ["Artifact", "DigestSubject", "FileIdentity", "path_entries", "path_name", "resolve", "which"]
