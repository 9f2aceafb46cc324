"""The verdict cache at the gate (state/cache.py): what a cached trust report is keyed by, the
artifact's stat fast path, and reading a cached report back.

The key covers everything ``evaluate`` and the metadata's own verification read: the artifact (path
and digests), every piece of evidence by path and by the sha256 of its bytes, the composed policy's
digest, the trusted root's digest, the constraints the evaluation ran with, and atip-trust's version.
Evidence that cannot be read is never cached: that evaluation runs, and reports it, every time.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from atip_trust._base.files import open_regular
from atip_trust._version import __version__
from atip_trust.errors import AtipTrustError
from atip_trust.facts.artifact import Artifact, FileIdentity
from atip_trust.facts.digest import Algorithm, Digest, hash_fd
from atip_trust.facts.report import TrustReport
from atip_trust.state.cache import VerdictCache, cache_key

PathLike = str | os.PathLike[str]
_ALGORITHMS: tuple[Algorithm, ...] = ("sha256", "sha512")


def open_cache(enabled: bool) -> VerdictCache | None:
    return VerdictCache() if enabled else None


def _ident(identity: FileIdentity) -> list[int]:
    return [identity.dev, identity.inode, identity.size, identity.mtime_ns, identity.ctime_ns]


def hash_artifact(art: Artifact, cache: VerdictCache | None) -> dict[Algorithm, Digest]:
    """sha256 and sha512 of the opened artifact; with a cache, taken from it when the file's
    (dev, inode, size, mtime_ns, ctime_ns) are those it was hashed with, and remembered otherwise."""
    if cache is None:
        return art.digests(_ALGORITHMS)
    path = str(art.path)
    known = cache.known_digests(path, _ident(art.identity))
    if known is not None:
        try:
            art.adopt_digests({a: Digest.parse(known[a]) for a in _ALGORITHMS})
        except (KeyError, AtipTrustError):
            pass  # a malformed entry: hash instead
    digests = art.digests(_ALGORITHMS)
    if known is None:
        try:
            unchanged = FileIdentity.from_stat(os.fstat(art.fd)) == art.identity
        except OSError:
            unchanged = False
        if unchanged:  # a file that changed while it was hashed is not remembered
            cache.remember_digests(path, _ident(art.identity), {a: str(d) for a, d in digests.items()})
    return digests


def evidence_digests(paths: Sequence[PathLike | None]) -> list[list[str]] | None:
    """``[path, sha256:<hex>]`` for each evidence file, or None when one cannot be read as a regular
    file (then nothing is cached: the evaluation reports that file's failure every time)."""
    out: list[list[str]] = []
    for p in paths:
        if p is None:
            continue
        try:
            fd, _ = open_regular(p, what="evidence file")
        except AtipTrustError:
            return None
        try:
            out.append([os.fspath(p), str(hash_fd(fd, ("sha256",))["sha256"])])
        except (AtipTrustError, OSError):
            return None
        finally:
            os.close(fd)
    return out


def report_key(kind: str, parts: Mapping[str, Any]) -> str:
    return cache_key({"kind": kind, "atip_trust": __version__, **parts})


def cached(cache: VerdictCache | None, key: str | None) -> tuple[TrustReport, dict[str, Any]] | None:
    """The report stored under ``key`` and the rest of its payload, or None (absent, or not a report:
    an entry of another shape is ignored, as a corrupt one is)."""
    if cache is None or key is None:
        return None
    payload = cache.get(key)
    if payload is None:
        return None
    try:
        report = TrustReport.from_json(payload["report"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    return report, payload


def store(cache: VerdictCache | None, key: str | None, report: TrustReport, **extra: Any) -> str | None:
    """Keep the report's facts (never its decision) under ``key``, with ``report.digest()`` (read
    back by ``stored_digest``); that digest, or None without a cache."""
    if cache is None or key is None:
        return None
    body = report.to_json(full=True)
    body["decision"] = None
    digest = report.digest()
    cache.put(key, {"report": body, "report_digest": digest, **extra})
    return digest


def stored_digest(payload: Mapping[str, Any]) -> str | None:
    """The ``report.digest()`` kept with a cached report (the entry's integrity hash covers both), so
    a hit does not serialise the report again to compute it; None if the entry has none."""
    digest = payload.get("report_digest")
    return digest if isinstance(digest, str) and digest.startswith("sha256:") else None


__all__ = ["cached", "evidence_digests", "hash_artifact", "open_cache", "report_key", "store",
           "stored_digest"]
