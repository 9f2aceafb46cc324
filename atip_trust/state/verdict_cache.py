"""The verdict cache: trust reports by content, so that an unchanged tool is not verified again.

An admission check runs before every tool call an agent makes; with nothing changed, the signatures,
the transparency-log proofs and the provenance say what they said last time. This cache keeps the
*trust report* (the facts), keyed by a sha256 over everything the report depends on: the artifact's
digests, the digest of every piece of evidence, the composed policy's digest, the trusted root's
digest, atip-trust's version and the constraints (docs/caching.md). It never keeps a
decision: rules, waivers with an expiry, interactivity and the command are decided on every call.
It also remembers which policy documents passed their JSON Schema (by a digest of the document, the
schema's bytes and the version), so an unchanged policy is not validated, nor jsonschema imported,
on every call; the semantic checks after the schema still run every time.

The cache is as trustworthy as the user's own files, and no more: an entry is read only if it is a
regular file (never through a link), owned by the current user, not writable by group or others,
carries the sha256 of its own body's bytes, parses, and is younger than ``MAX_AGE``. Anything else is ignored
and rebuilt. The integrity hash catches corruption and careless edits, not the user: whoever can
write files as this user can also recompute it (and could equally replace the tool or the policy).

Files are written atomically (a temporary file in the same directory, then ``os.replace``), 0600 in
a 0700 directory. A failure to read or write the cache is never an error: the report is computed.

Location: ``ATIP_CACHE_DIR``, else ``<platformdirs user_cache_dir("atip-trust")>/verdicts``.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from atip_trust._base.files import open_regular, private_dir, read_fd_capped, write_atomic
from atip_trust._base.jsonio import canonical_digest, parse_json
from atip_trust._base.record import Record, fields_json
from atip_trust._base.statmemo import RACY_NS, Ident, ident_of
from atip_trust.errors import AtipTrustError
from atip_trust.state import dirs

if TYPE_CHECKING:
    from typing import Any


#: Entry layout version; an entry of another version is ignored.
FORMAT = 2
#: Bounds: past either, the oldest entries (by mtime) are removed.
MAX_ENTRIES = 10_000  # a scan of a large PATH keeps two entries per tool
MAX_BYTES = 64 * 1024 * 1024
#: How many writes in one process may pass between two checks of the bounds (so a directory may
#: briefly hold up to this many entries more than MAX_ENTRIES).
EVICT_EVERY = 64
#: One entry's cap (a report with many attestations stays far below).
ENTRY_BYTES = 4 * 1024 * 1024
#: An entry older than this is ignored: a bound on how long a report is reused without re-verifying.
MAX_AGE = 7 * 24 * 3600
#: RACY_NS (_base/statmemo.py): a file whose ctime is this close to "now" may still change within the
#: same timestamp tick (coarse file-system clocks); its stat is not remembered, so its next use hashes
#: it again.

_REPORT_PREFIX = "r-"
_STAT_PREFIX = "s-"
_VALID_PREFIX = "v-"
_SUFFIX = ".json"
#: An entry is one JSON object, written as exactly these bytes around the body's compact JSON:
#: ``{"format":2,"integrity":"<sha256 hex of the body's bytes>","body":<body>}``. The reader checks the
#: frame byte for byte and hashes the body's bytes as they are, before parsing them, so neither side
#: re-encodes the body to check it (that was most of a cache hit's cost).
_HEAD = b'{"format":%d,"integrity":"' % FORMAT
_MID = b'","body":'
_BODY_AT = len(_HEAD) + 64 + len(_MID)


def default_cache_dir() -> str:
    return _cache_dir(os.environ.get("ATIP_CACHE_DIR"))


@lru_cache(maxsize=16)
def _cache_dir(env: str | None) -> str:
    # Per value of ATIP_CACHE_DIR (an admission opens the cache on every call). Text, not a Path: no
    # pathlib on a warm admission (docs/caching.md).
    if env:
        return env
    return os.path.join(dirs.user_cache_dir(), "verdicts")


def fresh(created: Any) -> bool:
    """An entry's ``created`` time is a number within the last ``MAX_AGE`` seconds."""
    return isinstance(created, (int, float)) and 0 <= time.time() - created <= MAX_AGE


def _private_entry(st: os.stat_result) -> bool:
    return st.st_uid == os.getuid() and not stat.S_IMODE(st.st_mode) & (stat.S_IWGRP | stat.S_IWOTH)


def cache_key(parts: Mapping[str, Any]) -> str:
    """The hex sha256 of the canonical JSON of ``parts``: everything a cached report depends on."""
    return canonical_digest(dict(parts), stringify=True).removeprefix("sha256:")


class CacheStats(Record):
    """The cache directory's path, number of entries and total size (``cache stats``)."""

    path: str
    entries: int
    bytes: int

    to_json = fields_json  # its fields are JSON data already


class VerdictCache:
    """Read and write cached trust reports (and artifact stats) in one directory."""

    #: Writes in this process (every admission opens its own instance; the count spans them).
    _writes = 0

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = os.fspath(directory) if directory is not None else default_cache_dir()
        #: The same, under the name ``entry_ident``'s callers read.
        self.where = self.directory
        #: ``where`` joined with the report prefix: an entry's path is this, its key and the suffix.
        self._reports_at = os.path.join(self.where, _REPORT_PREFIX)

    # -- the directory -------------------------------------------------------------------------------
    def _usable(self, *, create: bool) -> bool:
        """The directory exists (made 0700 if ``create``), is a real directory owned by this user and
        not writable by group or others; otherwise the cache is not used at all."""
        return private_dir(self.directory, create=create)

    def _entries(self) -> list[tuple[str, os.stat_result]]:
        out: list[tuple[str, os.stat_result]] = []
        try:
            names = os.listdir(self.directory)
        except OSError:
            return out
        for name in names:
            if not name.endswith(_SUFFIX) or not name.startswith((_REPORT_PREFIX, _STAT_PREFIX, _VALID_PREFIX)):
                continue
            p = os.path.join(self.directory, name)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                out.append((p, st))
        return out

    # -- one entry -----------------------------------------------------------------------------------
    def _read(self, name: str) -> dict[str, Any] | None:
        """The body of entry ``name``, or None when it is absent or not to be trusted."""
        read = self._read_entry(name)
        return read[0] if read is not None else None

    def _read_entry(self, name: str) -> tuple[dict[str, Any], Ident] | None:
        """The body of entry ``name`` and the identity of the file it was read from (``_base/statmemo``),
        or None when it is absent or not to be trusted."""
        if not self._usable(create=False):
            return None
        try:
            fd, st = open_regular(os.path.join(self.directory, name), what="cache entry", follow_links=False)
        except AtipTrustError:
            return None
        try:
            if not _private_entry(st):
                return None
            data = read_fd_capped(fd, ENTRY_BYTES, what="cache entry")
            if not (data.startswith(_HEAD) and data[_BODY_AT - len(_MID):_BODY_AT] == _MID
                    and data.endswith(b"}")):
                return None  # another format, or not an entry
            raw = data[_BODY_AT:-1]
            if hashlib.sha256(raw).hexdigest().encode("ascii") != data[len(_HEAD):_BODY_AT - len(_MID)]:
                return None
            body = parse_json(raw, what="cache entry")
        except AtipTrustError:
            return None
        finally:
            os.close(fd)
        if not isinstance(body, dict):
            return None
        if not fresh(body.get("created")):
            return None
        return body, ident_of(st)

    def _write(self, name: str, body: dict[str, Any]) -> None:
        if not self._usable(create=True):
            return
        body = {**body, "created": time.time()}
        # The integrity hash is over exactly the bytes a reader will parse. Keys keep their order:
        # a report read back prints exactly as it did when computed.
        try:
            raw = json.dumps(body, default=str, separators=(",", ":"), allow_nan=False).encode("utf-8")
        except ValueError:
            return  # not JSON (a NaN, say): not kept, computed again next time
        data = b"%s%s%s%s}" % (_HEAD, hashlib.sha256(raw).hexdigest().encode("ascii"), _MID, raw)
        if len(data) > ENTRY_BYTES:
            return
        try:
            # Not durable (no fsync): an entry torn by a crash fails its integrity hash and is
            # recomputed, and a scan writes one or two per tool (fsync made it disk-bound).
            write_atomic(os.path.join(self.directory, name), data)
        except OSError:
            return
        # The bounds are checked on the first write and every EVICT_EVERY writes after it, not on
        # each one: listing the directory per write made a scan of N tools cost N^2 stat calls.
        VerdictCache._writes += 1
        if VerdictCache._writes % EVICT_EVERY == 1:
            self._evict()

    def _evict(self) -> None:
        entries = self._entries()
        total = sum(st.st_size for _, st in entries)
        if len(entries) <= MAX_ENTRIES and total <= MAX_BYTES:
            return
        entries.sort(key=lambda e: e[1].st_mtime_ns)
        for p, st in entries:
            if len(entries) <= MAX_ENTRIES and total <= MAX_BYTES:
                break
            try:
                os.unlink(p)
            except OSError:
                continue
            entries = entries[1:]
            total -= st.st_size

    # -- reports -------------------------------------------------------------------------------------
    def get(self, key: str) -> dict[str, Any] | None:
        """The payload stored under ``key`` (from ``cache_key``), or None."""
        body = self._read(f"{_REPORT_PREFIX}{key}{_SUFFIX}")
        if body is None or body.get("key") != key or not isinstance(body.get("payload"), dict):
            return None
        payload: dict[str, Any] = body["payload"]
        return payload

    def get_entry(self, key: str) -> tuple[dict[str, Any], Ident, float] | None:
        """``get``, with the identity of the entry's file and its ``created`` time: a caller that
        remembers the payload (admission/verdict_key.py) trusts it again only while ``entry_ident`` is that
        identity and ``fresh(created)`` holds."""
        read = self._read_entry(f"{_REPORT_PREFIX}{key}{_SUFFIX}")
        if read is None:
            return None
        body, ident = read
        if body.get("key") != key or not isinstance(body.get("payload"), dict):
            return None
        payload: dict[str, Any] = body["payload"]
        return payload, ident, body["created"]

    def entry_ident(self, key: str) -> Ident | None:
        """The identity of the entry for ``key`` now, if it is a regular file (not a link) this user
        owns and only this user can write, else None: an entry replaced, edited, removed, chmod'ed or
        chown'ed since (each changes its ctime or inode) no longer has the identity it was read with."""
        try:
            st = os.lstat(f"{self._reports_at}{key}{_SUFFIX}")
        except (OSError, ValueError):
            return None
        return ident_of(st) if stat.S_ISREG(st.st_mode) and _private_entry(st) else None

    def put(self, key: str, payload: Mapping[str, Any]) -> None:
        self._write(f"{_REPORT_PREFIX}{key}{_SUFFIX}", {"key": key, "payload": dict(payload)})

    # -- the stat fast path --------------------------------------------------------------------------
    @staticmethod
    def _stat_name(path: str) -> str:
        return f"{_STAT_PREFIX}{hashlib.sha256(path.encode('utf-8', 'surrogateescape')).hexdigest()}{_SUFFIX}"

    def known_digests(self, path: str, ident: Sequence[int]) -> dict[str, str] | None:
        """The digests remembered for ``path`` if its ``ident`` (dev, inode, size, mtime_ns,
        ctime_ns: a file with the same five is taken to hold the same bytes) is unchanged since,
        else None (hash it)."""
        body = self._read(self._stat_name(path))
        if body is None or body.get("path") != path or body.get("stat") != list(ident):
            return None
        digests = body.get("digests")
        if not isinstance(digests, dict) or not all(isinstance(v, str) for v in digests.values()):
            return None
        return {str(k): v for k, v in digests.items()}

    def remember_digests(self, path: str, ident: Sequence[int], digests: Mapping[str, str]) -> None:
        if len(ident) != 5 or time.time_ns() - max(ident[3], ident[4]) < RACY_NS:
            return  # may still change within the same timestamp: hash it next time
        self._write(self._stat_name(path), {"path": path, "stat": list(ident),
                                            "digests": dict(digests)})

    # -- documents already validated against a schema -------------------------------------------------
    def validated(self, key: str) -> bool:
        """True when a document with this key (``cache_key`` over the document, the schema's bytes and
        atip-trust's version) was found valid before: its schema validation need not run again."""
        body = self._read(f"{_VALID_PREFIX}{key}{_SUFFIX}")
        return body is not None and body.get("validated") == key

    def mark_validated(self, key: str) -> None:
        self._write(f"{_VALID_PREFIX}{key}{_SUFFIX}", {"validated": key})

    # -- management ----------------------------------------------------------------------------------
    def stats(self) -> CacheStats:
        entries = self._entries() if os.path.isdir(self.directory) else []
        return CacheStats(self.directory, len(entries), sum(st.st_size for _, st in entries))

    def clear(self) -> int:
        """Remove every entry (and stray temporary files); the number of entries removed."""
        removed = 0
        for p, _ in self._entries():
            try:
                os.unlink(p)
                removed += 1
            except OSError:
                pass
        try:
            for name in os.listdir(self.directory):
                if name.startswith(".tmp-") and name.endswith(".part"):
                    try:
                        os.unlink(os.path.join(self.directory, name))
                    except OSError:
                        pass
        except OSError:
            pass
        return removed


__all__ = ["CacheStats", "VerdictCache", "cache_key", "default_cache_dir", "fresh"]
