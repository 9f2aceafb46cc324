"""Refreshing Sigstore trusted roots over TUF (python-tuf: the one boundary of ``tuf``), as cosign, gh and
sigstore-go do, into the per-user cache; and how old the root in use is (policy ``trust.rootMaxAge``).

``update(url)`` runs python-tuf's ngclient (``Updater.refresh``: the TUF specification's client workflow,
§5): starting from the last root it verified for that repository, or the first time from a root we
already trust (the one the installed sigstore package embeds for the public-good and staging
repositories, or ``bootstrap`` for any other), it verifies each new root by the old one's threshold and
then timestamp, snapshot and targets. Rollback (a version lower than one seen), freeze and expiry (an
expired timestamp, snapshot, targets or final root), a signature threshold not met, mix-and-match
(a targets or snapshot file whose version or hash differs from what the snapshot or timestamp names)
and oversized metadata (python-tuf's ``UpdaterConfig`` length caps) are refused by python-tuf; every
refusal is a ``TrustRootError`` here (exit 2) and leaves the previously verified root in place.

The ``trusted_root.json`` target is then read, checked as any trusted root is (``TrustRoot.check``), and
written beside a record of when it was verified (``verified.json``), each atomically. Folder:
``$ATIP_CACHE_DIR/tuf/<quoted URL>/`` (else the user cache folder), 0700.

Fetching goes through ``net/fetch.py`` (the one HTTP client: https, or http on loopback, capped) by a
python-tuf ``FetcherInterface``; ``mirror`` reads the same paths from a local copy of the repository
instead (``--root-from DIR`` on a machine without network: the copy is verified exactly as a download).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from urllib.parse import quote, unquote
TYPE_CHECKING = False  # typing's constant without importing typing at run time (docs/caching.md)
if TYPE_CHECKING:
    from datetime import datetime
    from collections.abc import Iterator

from atip_trust._base.jsonio import parse_json
from atip_trust.state._deps import (
    datetime_mod,
    fetch,
    tempfile,
    tuf_config,
    tuf_exceptions,
    tuf_fetcher,
    tuf_metadata,
    tuf_updater,
)
from atip_trust._base.record import Record
from atip_trust._version import __version__
from atip_trust.errors import AtipTrustError, EnvironmentFailure, TrustRootError, UsageError
from atip_trust.signature.trustroot import TrustRoot, embedded_tuf_root
from atip_trust.state.dirs import user_cache_dir


#: The Sigstore TUF repositories (sigstore-python ``_internal/tuf.py``).
PRODUCTION_URL = "https://tuf-repo-cdn.sigstore.dev"
STAGING_URL = "https://tuf-repo-cdn.sigstage.dev"
INSTANCE_URLS = {"production": PRODUCTION_URL, "staging": STAGING_URL}
#: The target that holds the trusted root (Sigstore's TUF layout).
TARGET = "trusted_root.json"
#: Bytes one fetch may return: python-tuf's largest default cap (targets metadata, 5 MB) and then some.
_FETCH_CAP = 8 * 1024 * 1024


class VerifiedRoot(Record):
    """A trusted root the last TUF update verified: where it is, its digest, and when."""

    url: str
    path: str
    digest: str
    verified_at: datetime

    def to_json(self) -> dict[str, str]:
        return {"url": self.url, "path": self.path, "digest": self.digest,
                "verified_at": self.verified_at.isoformat()}


def store_dir(url: str) -> str:
    """The folder of one TUF repository's verified state (module docstring)."""
    base = os.environ.get("ATIP_CACHE_DIR") or user_cache_dir()
    return os.path.join(base, "tuf", quote(url.rstrip("/"), safe=""))


def cached(url: str) -> VerifiedRoot | None:
    """The root the last update of ``url`` verified, or None (never updated, or the files disagree)."""
    folder = store_dir(url)
    try:
        with open(os.path.join(folder, "verified.json"), "rb") as f:
            record = parse_json(f.read(), what="TUF record")
        with open(os.path.join(folder, TARGET), "rb") as f:
            digest = "sha256:" + hashlib.sha256(f.read()).hexdigest()
        when = datetime_mod.datetime.fromisoformat(str(record["verified_at"]))
    except (OSError, AtipTrustError, KeyError, TypeError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("digest") != digest:
        return None  # a root changed after it was verified is not the verified root
    return VerifiedRoot(url, os.path.join(folder, TARGET), digest, when)


def verified_at(path: str) -> datetime | None:
    """When the root at ``path`` was verified by a TUF update (it is a store's ``trusted_root.json``
    whose record names its bytes), else None."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.basename(path) != TARGET or os.path.basename(os.path.dirname(folder)) != "tuf":
        return None
    record = cached(unquote(os.path.basename(folder)))
    return record.verified_at if record is not None and os.path.samefile(record.path, path) else None


def _mirror_read(base_url: str, mirror: str, url: str) -> bytes:
    """``url`` (under ``base_url``) read from the same relative path in the local ``mirror`` folder."""
    if not url.startswith(base_url):
        raise tuf_exceptions.DownloadError(f"{url} is outside the repository {base_url}")
    parts = url[len(base_url):].split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise tuf_exceptions.DownloadError(f"{url}: not a path inside the mirror")
    path = os.path.join(mirror, *parts)
    try:
        with open(path, "rb") as f:
            data = f.read(_FETCH_CAP + 1)
    except FileNotFoundError:
        raise tuf_exceptions.DownloadHTTPError(f"{path}: not in the mirror", 404) from None
    except OSError as err:
        raise tuf_exceptions.DownloadError(f"{path}: {err.strerror}") from err
    if len(data) > _FETCH_CAP:
        raise tuf_exceptions.DownloadError(f"{path} is over {_FETCH_CAP} bytes")
    return data


def _net_read(url: str) -> bytes:
    """``url`` through net/fetch.py; a 404 is python-tuf's "no such version" (the root chain ends)."""
    try:
        answer = fetch.fetch_conditional(url, max_bytes=_FETCH_CAP)
    except AtipTrustError as err:
        raise tuf_exceptions.DownloadError(err.diagnostics()) from err
    if answer.status != 200:
        raise tuf_exceptions.DownloadHTTPError(f"{url}: HTTP {answer.status}", answer.status)
    return answer.body


@functools.lru_cache(maxsize=1)
def _fetcher_class() -> type:
    """python-tuf's ``FetcherInterface`` over ``_net_read`` or ``_mirror_read`` (made on first use, as
    python-tuf is imported then). Its public methods, and the length caps they apply, are python-tuf's."""

    class AtipFetcher(tuf_fetcher.FetcherInterface):
        def __init__(self, base_url: str, mirror: str | None) -> None:
            self.base_url, self.mirror = base_url.rstrip("/") + "/", mirror

        def _fetch(self, url: str) -> Iterator[bytes]:
            yield _net_read(url) if self.mirror is None else _mirror_read(self.base_url, self.mirror, url)

    return AtipFetcher


def _store_pair(files: dict[str, bytes]) -> None:
    """Write every file of ``files`` to a temporary file first, then rename each into place: a store that
    cannot take them (full, read-only, a file where a folder goes) fails before anything is replaced, so
    the previously verified root and its record stay together and usable. ``EnvironmentFailure``."""
    temps: list[tuple[str, str]] = []
    try:
        for path, data in files.items():
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
            temps.append((tmp, path))
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        for tmp, path in temps:
            os.replace(tmp, path)
    except OSError as err:
        for tmp, _ in temps:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        where = os.path.dirname(next(iter(files)))
        raise EnvironmentFailure(f"cannot write the TUF store {where}: {err.strerror or err} (the previously "
                                 "verified root is unchanged; free space or set ATIP_CACHE_DIR to a writable "
                                 "folder)", path=where) from err


def _damaged_root(metadata_dir: str) -> str | None:
    """Why the store's own ``metadata/root.json`` cannot be read as TUF metadata (a kill mid-write, a
    full disk, an edit), or None: python-tuf would otherwise stop every later update with a bare
    ``DeserializationError`` naming neither the file nor the way out."""
    path = os.path.join(metadata_dir, "root.json")
    try:
        with open(path, "rb") as f:
            tuf_metadata.Metadata.from_bytes(f.read(_FETCH_CAP + 1))
    except FileNotFoundError:
        return None
    except Exception as err:  # noqa: BLE001 - python-tuf's DeserializationError, OSError...
        return f"{path} is damaged ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})"
    return None


def update(url: str = PRODUCTION_URL, *, bootstrap: bytes | None = None, mirror: str | None = None,
           now: datetime | None = None) -> VerifiedRoot:
    """Refresh ``url``'s TUF metadata, verify its ``trusted_root.json`` and store it (module docstring).
    ``bootstrap``: the TUF root to start from when this repository was never updated here (default:
    sigstore's embedded one for the two Sigstore repositories). ``TrustRootError`` on any refusal."""
    url = url.rstrip("/")
    folder = store_dir(url)
    metadata_dir, targets_dir = os.path.join(folder, "metadata"), os.path.join(folder, "targets")
    try:
        for d in (folder, metadata_dir, targets_dir):
            os.makedirs(d, mode=0o700, exist_ok=True)
    except OSError as err:
        raise EnvironmentFailure(f"cannot create the TUF store {folder}: {err.strerror or err} (set "
                                 "ATIP_CACHE_DIR to a writable folder)", path=folder) from err
    first = not os.path.exists(os.path.join(metadata_dir, "root.json"))
    damaged = None if first else _damaged_root(metadata_dir)
    shipped = next((embedded_tuf_root(i) for i, u in INSTANCE_URLS.items() if u == url), None)
    if damaged is not None and bootstrap is None and shipped is None:
        raise TrustRootError(f"the TUF store of {url}: {damaged}; start over from the repository's first "
                             f"root: `atip-trust trust-root update --url {url} --tuf-root FILE`", path=metadata_dir)
    if damaged is not None:
        first = True  # start over: from the shipped root (public-good, staging) or the --tuf-root given
    if first and bootstrap is None:
        bootstrap = next((embedded_tuf_root(i) for i, u in INSTANCE_URLS.items() if u == url), None)
        if bootstrap is None:
            raise UsageError(f"no TUF root to start from for {url}: give the repository's initial root.json "
                             "(--tuf-root FILE); it is trusted as given")
    try:
        updater = tuf_updater.Updater(
            metadata_dir=metadata_dir, metadata_base_url=url, target_dir=targets_dir,
            target_base_url=url + "/targets/", fetcher=_fetcher_class()(url, mirror),
            config=tuf_config.UpdaterConfig(app_user_agent=f"atip-trust/{__version__}"),
            bootstrap=bootstrap if first else None)
        updater.refresh()
        info = updater.get_targetinfo(TARGET)
        if info is None:
            raise TrustRootError(f"the TUF repository {url} has no {TARGET} target")
        target = updater.find_cached_target(info) or updater.download_target(info)
    except TrustRootError:
        raise
    except OSError as err:  # python-tuf persisting metadata into a store that cannot take it
        raise EnvironmentFailure(f"cannot write the TUF store {folder}: {err.strerror or err} (the previously "
                                 "verified root is unchanged; free space or set ATIP_CACHE_DIR to a writable "
                                 "folder)", path=folder) from err
    except Exception as err:  # noqa: BLE001 - python-tuf's refusals (RepositoryError, DownloadError...)
        raise TrustRootError(f"TUF update from {url} refused: {type(err).__name__}: {err}") from err
    with open(target, "rb") as f:
        raw = f.read()
    TrustRoot.from_bytes(raw, name=f"{TARGET} from {url}")  # checked as any root is, before it is kept
    when = now or datetime_mod.datetime.now(datetime_mod.UTC)
    digest = "sha256:" + hashlib.sha256(raw).hexdigest()
    path = os.path.join(folder, TARGET)
    record = VerifiedRoot(url, path, digest, when)
    _store_pair({path: raw, os.path.join(folder, "verified.json"): json.dumps(record.to_json()).encode()})
    return record


__all__ = ["INSTANCE_URLS", "PRODUCTION_URL", "STAGING_URL", "TARGET", "VerifiedRoot", "cached", "store_dir",
           "update", "verified_at"]
