"""The local registry ``registry.json`` (RFC §4.3, §10.1): tool name -> the binary's path and digest.

An index, not evidence: what it records is what this user saw last, and a lookup checks it against
the file now. ``get`` re-hashes the file when its identity (dev, inode, size, mtime_ns, ctime_ns;
``facts.artifact.FileIdentity``) differs from the one recorded with the digest, so an updated or
replaced binary is noticed without hashing every unchanged one on every lookup (the same stat fast
path as the verdict cache, state/verdict_cache.py: a file hashed within ``RACY_NS`` of its last change gets no
recorded identity and is hashed on every lookup).

Writes take an exclusive ``fcntl.flock`` on a sibling lock file (``registry.json.lock``) around the
read-modify-write, so two processes adding tools at once do not lose either update, and replace the
file atomically (a temporary file in the same folder, fsync, ``os.replace``): a reader sees the old
index or the new one, never half of one. The file and lock are 0600, a folder this creates 0700.

A ``registry.json`` that is not a regular file of this user (or root) that only they can write, or
that is not the RFC's shape, is an error (``MalformedInputError``), never read
as empty: a writer would otherwise replace someone's index with one entry.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from atip_trust._base.files import open_regular, read_fd_capped, write_atomic
from atip_trust._base.jsonio import parse_json
from atip_trust._base.record import Record, replace
from atip_trust.errors import ArtifactAccessError, AtipTrustError, EnvironmentFailure, MalformedInputError
from atip_trust.facts.artifact import Artifact, FileIdentity
from atip_trust.facts.digest import Digest

if TYPE_CHECKING:
    from typing import Any

#: RFC §4.3 ``version``.
FORMAT_VERSION = "2"
#: An index of thousands of tools stays far below this.
INDEX_BYTES = 16 * 1024 * 1024
#: A file changed this close to when it was hashed may change again within the same timestamp tick
#: (coarse file-system clocks) without its identity changing: its identity is not recorded, so every
#: lookup hashes it until it is re-added (the verdict cache's rule, state/verdict_cache.py).
RACY_NS = 2_000_000_000


def _stat_key(ident: FileIdentity) -> list[int]:
    return [ident.dev, ident.inode, ident.size, ident.mtime_ns, ident.ctime_ns]


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class LocalEntry(Record):
    """One tool in the index, checked against the file as it is now."""

    name: str
    path: str
    #: The digest recorded when the tool was added.
    digest: Digest
    #: The file's digest now (recomputed only when its identity changed), None when it is gone.
    current: Digest | None
    source: str
    shim_registry: str | None
    last_checked: str | None
    #: True when the file was hashed again for this lookup (its identity had changed).
    rehashed: bool = False

    @property
    def changed(self) -> bool:
        """The file is gone or no longer holds the recorded bytes (RFC §4.3: refresh it)."""
        return self.current is None or self.current != self.digest

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "path": self.path, "hash": str(self.digest),
                "current": None if self.current is None else str(self.current),
                "changed": self.changed, "rehashed": self.rehashed, "source": self.source,
                "shimRegistry": self.shim_registry, "lastChecked": self.last_checked}


class LocalRegistry:
    """``registry.json`` at ``path`` (module docstring)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.lock_path = Path(f"{self.path}.lock")

    # -- reading ------------------------------------------------------------------------------------
    def _load(self) -> dict[str, Any]:
        try:
            fd, _st = open_regular(self.path, what="local registry", follow_links=False,
                                   owner_check=MalformedInputError)
        except ArtifactAccessError:
            if not os.path.lexists(self.path):
                return {"version": FORMAT_VERSION, "tools": {}}
            raise
        try:
            data = read_fd_capped(fd, INDEX_BYTES, what="local registry", path=str(self.path))
        finally:
            os.close(fd)
        doc = parse_json(data, what="local registry")
        tools = doc.get("tools") if isinstance(doc, dict) else None
        if not isinstance(doc, dict) or doc.get("version") != FORMAT_VERSION or not isinstance(tools, dict):
            raise MalformedInputError(
                f"local registry is not an RFC §4.3 index: expected an object with version "
                f"{FORMAT_VERSION!r} and a tools object", path=str(self.path))
        return doc

    def names(self) -> list[str]:
        return sorted(self._load()["tools"])

    def recorded(self, name: str) -> LocalEntry | None:
        """The entry for ``name`` as recorded, not checked against any file (``current`` None), or None
        when it is not indexed: for a caller that holds the bytes' digest already (admission)."""
        raw = self._load()["tools"].get(name)
        return None if raw is None else self._entry(name, raw)

    def get(self, name: str) -> LocalEntry | None:
        """The entry for ``name`` checked against the file now, or None when it is not indexed."""
        found = self.checked((name,))
        return found[0] if found else None

    def checked(self, names: Iterable[str], limit: int | None = None) -> list[LocalEntry]:
        """The entries of those of ``names`` the index holds (at most ``limit``), each checked against
        its file now, from one read of the index (agents/identity.py reads every pin it may match)."""
        tools = self._load()["tools"]
        out: list[LocalEntry] = []
        for name in names:
            raw = tools.get(name)
            if raw is None:
                continue
            if limit is not None and len(out) >= limit:
                break
            entry = self._entry(name, raw)
            current, rehashed = self._current(raw, entry.digest)
            out.append(replace(entry, current=current, rehashed=rehashed))
        return out

    def _entry(self, name: str, raw: Any) -> LocalEntry:
        where = f"{self.path}: tools.{name}"
        if not isinstance(raw, dict) or not isinstance(raw.get("path"), str) \
                or not isinstance(raw.get("hash"), str):
            raise MalformedInputError("expected an object with path and hash strings", path=where)
        try:
            digest = Digest.parse(raw["hash"])
        except MalformedInputError as err:
            raise MalformedInputError(f"hash: {err.message}", path=where) from err
        registry = raw.get("shimRegistry")
        checked = raw.get("lastChecked")
        return LocalEntry(name=name, path=raw["path"], digest=digest, current=None,
                          source=str(raw.get("source", "native")),
                          shim_registry=registry if isinstance(registry, str) else None,
                          last_checked=checked if isinstance(checked, str) else None)

    @staticmethod
    def _current(raw: dict[str, Any], recorded: Digest) -> tuple[Digest | None, bool]:
        """The file's digest now: the recorded one while its identity is unchanged, else hashed."""
        try:
            st = os.stat(raw["path"], follow_symlinks=False)
        except OSError:
            return None, False
        if raw.get("stat") == _stat_key(FileIdentity.from_stat(st)):
            return recorded, False
        try:
            with Artifact.open(raw["path"]) as art:
                return art.digest(recorded.algorithm), True
        except (AtipTrustError, OSError):  # gone, unreadable, no longer a regular file
            return None, True

    # -- writing ------------------------------------------------------------------------------------
    @contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        """Exclusive lock, the current index to change, then an atomic replace. A folder or disk that
        cannot take the index (read-only, full, a file where the folder goes) is ``EnvironmentFailure``
        naming the file, and the index stays as it was (the replace is all or nothing)."""
        try:
            parent = self.path.parent
            if not parent.exists():
                parent.mkdir(mode=0o700, parents=True)
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        except OSError as err:
            raise self._write_error(err) from err
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            doc = self._load()
            yield doc
            doc["updated"] = _now()
            data = json.dumps(doc, indent=2, sort_keys=True).encode("utf-8") + b"\n"
            try:
                write_atomic(self.path, data, durable=True, prefix=".registry-")
            except OSError as err:
                raise self._write_error(err) from err
        finally:
            os.close(fd)  # releases the lock

    def _write_error(self, err: OSError) -> EnvironmentFailure:
        return EnvironmentFailure(f"cannot write the local registry {self.path}: {err.strerror or err} (the "
                                  "registry is unchanged; free space or choose another file with "
                                  "--update-registry FILE)", path=str(self.path))

    def put(self, name: str, path: str | os.PathLike[str], *, source: str = "native",
            shim_registry: str | None = None) -> LocalEntry:
        """Index ``name`` -> ``path`` (made absolute), hashed now from one descriptor, with the
        file's identity taken from that same descriptor."""
        with Artifact.open(os.path.abspath(os.fspath(path))) as art:
            digest = art.sha256
            ident = art.identity
            where = art.path
        racy = time.time_ns() - max(ident.mtime_ns, ident.ctime_ns) < RACY_NS
        record: dict[str, Any] = {"path": where, "hash": str(digest), "source": source,
                                  "lastChecked": _now(), "stat": None if racy else _stat_key(ident)}
        if shim_registry is not None:
            record["shimRegistry"] = shim_registry
        with self._locked() as doc:
            doc["tools"][name] = record
        return LocalEntry(name=name, path=where, digest=digest, current=digest, source=source,
                          shim_registry=shim_registry, last_checked=record["lastChecked"])

    def remove(self, name: str) -> bool:
        """Drop ``name``; True when it was indexed."""
        with self._locked() as doc:
            return doc["tools"].pop(name, None) is not None


__all__ = ["LocalEntry", "LocalRegistry"]
