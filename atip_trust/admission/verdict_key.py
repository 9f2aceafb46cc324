"""The verdict cache at the gate (state/verdict_cache.py): what a cached trust report is keyed by, the
artifact's stat fast path, and reading a cached report back.

The key covers everything ``evaluate`` and the metadata's own verification read: the artifact (path
and digests), every piece of evidence by path and by the sha256 of its bytes, the composed policy's
digest, the trusted root's digest, the constraints the evaluation ran with, and atip-trust's version.
Evidence that cannot be read is never cached: that evaluation runs, and reports it, every time.

In memory, per process: a runtime admits a tool before every call, so what the disk gave is also
remembered here, exactly as strictly. The artifact's digests and each evidence file's by path and stat
identity (_base/statmemo.py: the stat fast path's rule, its same-timestamp window included); a report
by its whole key (a :class:`ReportKey`: the same parts as the entry's name on disk, with the cache
directory and the version), together with the identity of the entry file it was read from — while
that file is the same one (not replaced, edited, removed, chmod'ed or chown'ed) and younger than
``MAX_AGE``, its JSON is neither read nor parsed nor checked again. The decision is never remembered.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Mapping, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from atip_trust._base.files import open_regular
from atip_trust._base.statmemo import Ident, ident_of, memo_get, memo_put, regular_ident, settled
from atip_trust._version import __version__
from atip_trust.admission.options import EVIDENCE_NOT_IN_KEY
from atip_trust.errors import AtipTrustError
from atip_trust.evaluation.inputs import Evidence
from atip_trust.facts.artifact import Artifact, FileIdentity
from atip_trust.facts.digest import Digest, hash_bytes, hash_fd
from atip_trust.facts.report import TrustReport
from atip_trust.state.verdict_cache import VerdictCache, cache_key, fresh

if TYPE_CHECKING:
    from atip_trust.admission.options import AdmitOptions, VerifyOptions
    from atip_trust.facts.digest import Algorithm

PathLike = str | os.PathLike[str]
_ALGORITHMS: tuple[Algorithm, ...] = ("sha256", "sha512")


#: One VerdictCache per value of ATIP_CACHE_DIR, so an admission before every tool call does not build
#: one (and its paths) per call. It holds nothing but its directory: every entry is still read, and
#: its file checked, through it on each use.
_OPEN: dict[str | None, VerdictCache] = {}


def open_cache(enabled: bool) -> VerdictCache | None:
    if not enabled:
        return None
    env = os.environ.get("ATIP_CACHE_DIR")
    cache = _OPEN.get(env)
    if cache is None:
        if len(_OPEN) >= 16:
            _OPEN.clear()
        cache = _OPEN[env] = VerdictCache()
    return cache


def file_ident(identity: FileIdentity) -> Ident:
    """An opened file's identity as the stat fast path compares it (dev, inode, size, mtime_ns, ctime_ns)."""
    return (identity.dev, identity.inode, identity.size, identity.mtime_ns, identity.ctime_ns)


#: Digests of artifacts (and of evidence files) this process hashed or found in the cache, by path and
#: stat identity.
_ARTIFACTS: dict[str, tuple[Ident, dict[Algorithm, Digest]]] = {}
_EVIDENCE: dict[str, tuple[Ident, str]] = {}
#: How many files each memo remembers (past it, it is emptied and refilled by the files in use).
_MEMO_MAX = 1024


def hash_artifact(art: Artifact, cache: VerdictCache | None) -> dict[Algorithm, Digest]:
    """sha256 and sha512 of the opened artifact; with a cache, taken from it (or from this process's
    memory of it) when the file's (dev, inode, size, mtime_ns, ctime_ns) are those it was hashed with,
    and remembered otherwise."""
    if cache is None:
        return art.digests(_ALGORITHMS)
    path = art.path
    ident = file_ident(art.identity)
    here = memo_get(_ARTIFACTS, path, ident)
    if here is not None:
        art.adopt_digests(here)
        return dict(here)  # exactly _ALGORITHMS, in that order (stored below)
    known = cache.known_digests(path, list(ident))
    if known is not None:
        try:
            art.adopt_digests({a: Digest.parse(known[a]) for a in _ALGORITHMS})
        except (KeyError, AtipTrustError):
            known = None  # a malformed entry: hash instead
    digests = art.digests(_ALGORITHMS)
    if known is None:
        try:
            unchanged = FileIdentity.from_stat(os.fstat(art.fd)) == art.identity
        except OSError:
            unchanged = False
        if not unchanged:  # a file that changed while it was hashed is not remembered
            return digests
        cache.remember_digests(path, list(ident), {a: str(d) for a, d in digests.items()})
    memo_put(_ARTIFACTS, path, ident, dict(digests), _MEMO_MAX)
    return digests


def evidence_digests(paths: Sequence[PathLike | None]) -> list[list[str]] | None:
    """``[path, sha256:<hex>]`` for each evidence file, or None when one cannot be read as a regular
    file (then nothing is cached: the evaluation reports that file's failure every time). A file this
    process hashed before, with the same stat identity, is not read again."""
    out: list[list[str]] = []
    for p in paths:
        if p is None:
            continue
        name = os.fspath(p)
        known = memo_get(_EVIDENCE, name, regular_ident(name))
        if known is not None:
            out.append([name, known])
            continue
        try:
            fd, st = open_regular(p, what="evidence file")
        except AtipTrustError:
            return None
        try:
            digest = str(hash_fd(fd, ("sha256",))["sha256"])
            if ident_of(os.fstat(fd)) == ident_of(st):  # not changed while it was hashed
                memo_put(_EVIDENCE, name, ident_of(st), digest, _MEMO_MAX)
        except (AtipTrustError, OSError):
            return None
        finally:
            os.close(fd)
        out.append([name, digest])
    return out


def report_key(kind: str, parts: Mapping[str, Any]) -> str:
    return cache_key({"kind": kind, "atip_trust": __version__, **parts})


class ReportKey:
    """A report's cache key in two forms: ``memo``, compared in this process (hashable: the values of
    ``parts()``, with ``kind`` and atip-trust's version), and ``hex``, the name of its entry on disk
    (``report_key`` of ``parts()``), computed only when the disk is consulted."""

    __slots__ = ("kind", "parts", "memo", "_hex")

    def __init__(self, kind: str, parts: Callable[[], Mapping[str, Any]], memo: Hashable) -> None:
        self.kind = kind
        self.parts = parts
        self.memo = (kind, __version__, memo)
        self._hex: str | None = None

    @property
    def hex(self) -> str:
        if self._hex is None:
            self._hex = report_key(self.kind, self.parts())
        return self._hex


#: The fields of ``Evidence`` the key reads, in order (every field but ``EVIDENCE_NOT_IN_KEY``'s).
_EVIDENCE_KEYED: tuple[str, ...] = tuple(f for f in Evidence._fields if f not in EVIDENCE_NOT_IN_KEY)
#: Likewise for each options class, made on first use: the fields, a getter of their values, and the
#: names of every part of the key (on disk, the entry's name is made of these).
_OPTIONS_KEYED: dict[type, tuple[tuple[str, ...], Callable[[Any], tuple[Any, ...]], tuple[str, ...]]] = {}


def verdict_key(
    kind: str,
    subject_path: str,
    digests: Mapping[Any, object],
    evidence: Evidence,
    options: AdmitOptions | VerifyOptions,
    *,
    policy: str | None,
    trusted_root: str,
    constraints: str,
    key_files: Sequence[PathLike],
    subject_name: str | None = None,
    metadata_read: tuple[Hashable, ...] | None = None,
) -> ReportKey | None:
    """The verdict cache's key for one admission (``kind`` "admit") or verification ("verify"): the one
    place it is made. Every field of ``evidence`` and of ``options`` is in it, but those the two
    ``NOT_IN_KEY`` lists name, each with the reason it cannot change the cached report
    (admission/options.py); with them the subject (path, digests, and the name the tool is decided
    under, which the metadata's binding is checked against), the composed policy's digest,
    the trusted root's digest, the constraints the evaluation runs with (``repr``) and, by content,
    the key files among them (a policy's digest names a key file's path, not the key in it);
    ``ReportKey`` adds ``kind`` and atip-trust's version. A forgotten input would serve a verdict
    reached for other evidence: tests/admission/test_verdict_key_fields.py changes each field in turn.

    Evidence files are keyed by path and by the sha256 of their bytes; None when one cannot be read
    (that evaluation runs, and reports it, every time). ``metadata_read``: the metadata as the
    admission read it — (path, found as a shim, sha256 of the bytes, source name, its bundle) — which
    then stands for the ``metadata`` and ``metadata_bundle`` fields (the bytes decided on, not the
    file's bytes now)."""
    found_keys = evidence_digests(key_files) if key_files else []
    if found_keys is None:
        return None
    values: list[Hashable] = [(subject_path, tuple(digests.items())), subject_name, policy, trusted_root,
                              constraints, _pairs(found_keys)]
    # Every field read through one C-level getter per record class; the common values (None, text,
    # flags) taken as they are without a call (python -m bench --only decide: this runs on every hit).
    for name, value in zip(_EVIDENCE_KEYED, _EVIDENCE_GET(evidence)):
        if metadata_read is not None and (name == "metadata" or name == "metadata_bundle"):
            value = metadata_read if name == "metadata" else None
        elif value is not None:
            value = _evidence_value(value)
            if value is _UNREADABLE:
                return None
        values.append(value)
    cls = type(options)
    keyed = _OPTIONS_KEYED.get(cls)
    if keyed is None:
        fields = tuple(f for f in cls._fields if f not in cls.NOT_IN_KEY)
        keyed = _OPTIONS_KEYED[cls] = (fields, attrgetter(*fields), (*_FIXED_NAMES, *(
            f"evidence.{f}" for f in _EVIDENCE_KEYED), *(f"options.{f}" for f in fields)))
    values.extend(v if v is None or v.__class__ in _PLAIN else _option_value(v) for v in keyed[1](options))
    memo = tuple(values)
    names = keyed[2]
    return ReportKey(kind, lambda: {n: _jsonable(v) for n, v in zip(names, memo)}, memo)


_FIXED_NAMES = ("artifact", "tool", "policy", "trusted_root", "constraints", "key_files")
_EVIDENCE_GET = attrgetter(*_EVIDENCE_KEYED)
_PLAIN = frozenset({str, bool, int})


#: An evidence file that could not be read: nothing is cached.
_UNREADABLE = object()


def _pairs(found: list[list[str]]) -> tuple[tuple[str, ...], ...]:
    return tuple(map(tuple, found)) if found else ()


def _evidence_value(value: object) -> Hashable:
    """One ``Evidence`` field in the key: files as ((path, sha256), ...); bytes and a document read by
    the sha256 of their bytes."""
    if isinstance(value, (tuple, list)) and not value:
        return None
    if isinstance(value, (bytes, bytearray)):
        return ("bytes", str(hash_bytes(bytes(value))))
    sha = getattr(value, "sha256", None)
    if sha is not None:  # a MetadataDocument already read
        return ("document", str(sha), getattr(value, "source_name", None))
    paths = (value,) if isinstance(value, (str, os.PathLike)) else value
    found = evidence_digests(paths)  # type: ignore[arg-type]  # a sequence of paths (Evidence's types)
    return _UNREADABLE if found is None else _pairs(found)


def _option_value(value: object) -> Hashable:
    """One options field in the key: a path as its text, several as a tuple, anything else its repr
    (``Constraints``: the same text the evaluation's constraints are keyed by)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, os.PathLike):
        text: str = os.fspath(value)
        return text
    if isinstance(value, (tuple, list)):
        return tuple(_option_value(v) for v in value)
    return repr(value)


def _jsonable(value: object) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    return value if value is None or isinstance(value, (bool, int, str)) else str(value)


class _Remembered:
    """What one entry gave this process: its name, the identity of its file, when it was created, the
    report read from it (handed out as copies) and its payload."""

    __slots__ = ("hex", "ident", "created", "report", "payload")

    def __init__(self, hex: str, ident: Ident, created: float, report: TrustReport,
                 payload: dict[str, Any]) -> None:
        self.hex = hex
        self.ident = ident
        self.created = created
        self.report = report
        self.payload = payload


#: Reports this process read from the cache, by (cache directory, ``ReportKey.memo``). Bounded.
_REPORTS: dict[tuple[str, Hashable], _Remembered] = {}
_MAX_REPORTS = 256


#: Reports this process answered from the verdict cache (``atip-trust serve``'s /metrics reads it).
HITS = [0]


def cached(cache: VerdictCache | None,
           key: str | ReportKey | None) -> tuple[TrustReport, dict[str, Any]] | None:
    """The report stored under ``key`` and the rest of its payload, or None (absent, or not a report:
    an entry of another shape is ignored, as a corrupt one is). For a ``ReportKey``, what this
    process read from the same, unchanged entry before (module docstring)."""
    if cache is None or key is None:
        return None
    if isinstance(key, ReportKey):
        found = _recall(cache, key)
    else:
        payload = cache.get(key)
        report = None if payload is None else _report_of(payload)
        found = None if report is None or payload is None else (report, payload)
    if found is not None:
        HITS[0] += 1
    return found


def _report_of(payload: Mapping[str, Any]) -> TrustReport | None:
    try:
        return TrustReport.from_json(payload["report"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _recall(cache: VerdictCache, key: ReportKey) -> tuple[TrustReport, dict[str, Any]] | None:
    slot = (cache.where, key.memo)
    mem = _REPORTS.get(slot)
    if mem is not None:
        if fresh(mem.created) and cache.entry_ident(mem.hex) == mem.ident:
            key._hex = mem.hex
            return mem.report.copy(), mem.payload
        _REPORTS.pop(slot, None)
    got = cache.get_entry(key.hex)
    if got is None:
        return None
    payload, ident, created = got
    report = _report_of(payload)
    if report is None:
        return None
    if settled(ident):  # an entry written within the same-timestamp window is read again next time
        if len(_REPORTS) >= _MAX_REPORTS:
            _REPORTS.clear()
        _REPORTS[slot] = _Remembered(key.hex, ident, created, report.copy(), payload)
    return report, payload


def store(cache: VerdictCache | None, key: str | ReportKey | None, report: TrustReport,
          **extra: Any) -> str | None:
    """Keep the report's facts (never its decision) under ``key``, with ``report.digest()`` (read
    back by ``stored_digest``); that digest, or None without a cache."""
    if cache is None or key is None:
        return None
    if isinstance(key, ReportKey):
        key = key.hex
    body = report.to_json(full=True)  # the facts: a report holds no decision
    digest = report.digest()
    cache.put(key, {"report": body, "report_digest": digest, **extra})
    return digest


def stored_digest(payload: Mapping[str, Any]) -> str | None:
    """The ``report.digest()`` kept with a cached report (the entry's integrity hash covers both), so
    a hit does not serialise the report again to compute it; None if the entry has none."""
    digest = payload.get("report_digest")
    return digest if isinstance(digest, str) and digest.startswith("sha256:") else None


__all__ = ["HITS", "ReportKey", "cached", "verdict_key", "evidence_digests", "file_ident", "hash_artifact", "open_cache", "report_key", "store",
           "stored_digest"]
