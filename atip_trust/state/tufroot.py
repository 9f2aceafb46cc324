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

Nothing in the store is believed because it is there (issue 33): the store is as writable as the rest
of the user's cache. The public-good and staging roots are re-verified on use (``cached``), as python-tuf's
client workflow run against the store as if it were the repository, starting from the TUF root shipped
with the package (``shipped_tuf_root``) and making no request: every root version by the one before it,
then timestamp, snapshot and targets, their signatures, thresholds, versions, hashes and expiry, and the
stored ``trusted_root.json`` against the length and hashes the targets metadata gives (as sigstore-rust
verifies its cached repository offline). A store that does not verify is not used: the root shipped with
the sigstore package is (``why_not``, ``instance_root``), exactly as with no store. A verification is
remembered in the process by the digests of every file it read, until the earliest expiry it saw; never
in a file (whoever can write the store could write that file too).
Every file of a store is read with the org policy's ownership and mode checks and never through a link.
``--tuf-root`` and ``--root-from`` serve custom repositories only (``--url``): the public-good and staging
stores always start from the shipped root, so they hold nothing the shipped root does not vouch for.

Fetching goes through ``net/fetch.py`` (the one HTTP client: https, or http on loopback, capped) by a
python-tuf ``FetcherInterface``; ``mirror`` reads the same paths from a local copy of the repository
instead (``--root-from DIR`` on a machine without network: the copy is verified exactly as a download).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote

from atip_trust._base.files import read_capped
from atip_trust._base.jsonio import parse_json
from atip_trust._base.lazy import lazy_import
from atip_trust._base.limits import LIMITS
from atip_trust._base.record import Record
from atip_trust._version import __version__
from atip_trust.errors import AtipTrustError, EnvironmentFailure, TrustRootError, UsageError
from atip_trust.signature.trustroot import TrustRoot, embedded_tuf_root
from atip_trust.state.dirs import user_cache_dir
from atip_trust.state.verdict_cache import cache_key

if TYPE_CHECKING:
    import datetime
    import tempfile
    from collections.abc import Callable, Iterator

    from tuf.api import exceptions, metadata
    from tuf.ngclient import config, fetcher, updater

    from atip_trust.net import fetch
else:
    datetime = lazy_import("datetime")  # only where a TUF-verified root is used (its verification time) or stored
    tempfile = lazy_import("tempfile")  # (with shutil and random) only when a root is stored
    # Python-tuf and our HTTP layer only when a root is refreshed or a stored one verified again.
    exceptions = lazy_import("tuf.api.exceptions")
    metadata = lazy_import("tuf.api.metadata")  # a store's own root.json, read back; a stored root's expiry
    config = lazy_import("tuf.ngclient.config")
    fetcher = lazy_import("tuf.ngclient.fetcher")
    updater = lazy_import("tuf.ngclient.updater")
    fetch = lazy_import("atip_trust.net.fetch")  # only for an update: an admission reads the cache only


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

    _no_repr = frozenset({"raw"})
    _no_compare = frozenset({"raw"})
    url: str
    path: str
    digest: str
    verified_at: datetime.datetime
    #: The bytes of ``path`` that were verified (None when not read: a record just written).
    raw: bytes | None = None

    def to_json(self) -> dict[str, str]:
        return {"url": self.url, "path": self.path, "digest": self.digest,
                "verified_at": self.verified_at.isoformat()}


def store_dir(url: str) -> str:
    """The folder of one TUF repository's verified state (module docstring)."""
    base = os.environ.get("ATIP_CACHE_DIR") or user_cache_dir()
    return os.path.join(base, "tuf", quote(url.rstrip("/"), safe=""))


def shipped_tuf_root(url: str) -> bytes | None:
    """The TUF root shipped with the package for ``url``: the one the sigstore package embeds for the
    public-good and staging repositories, None for any other. A module-level function so that tests
    can replace it in-process (as ``policy.load.standard_org_policy_path``)."""
    return next((embedded_tuf_root(i) for i, u in INSTANCE_URLS.items() if u.rstrip("/") == url), None)


def _store_file(folder: str, name: str, cap: int) -> bytes:
    """One file of a store, with the org policy's ownership and mode checks, never through a link;
    any failure is ``TrustRootError`` (the store is then not used)."""
    try:
        return read_capped(os.path.join(folder, name), cap, what=f"TUF store file {name}", follow_links=False,
                           owner_check=TrustRootError)
    except TrustRootError:
        raise
    except AtipTrustError as err:
        raise TrustRootError(f"the TUF store {folder} is not usable: {err.diagnostics()}", path=err.path) from err


def _record(folder: str, url: str) -> VerifiedRoot:
    """The store's ``verified.json`` naming the bytes of its ``trusted_root.json`` (``TrustRootError``)."""
    try:
        record = parse_json(_store_file(folder, "verified.json", 64 * 1024), what="TUF record")
        raw = _store_file(folder, TARGET, LIMITS.trusted_root_bytes)
        when = datetime.datetime.fromisoformat(str(record["verified_at"]))
    except (AtipTrustError, KeyError, TypeError, ValueError) as err:
        why = err.diagnostics() if isinstance(err, AtipTrustError) else f"{type(err).__name__}: {err}"
        raise TrustRootError(f"the TUF store {folder} cannot be read: {why}") from err
    digest = "sha256:" + hashlib.sha256(raw).hexdigest()
    if not isinstance(record, dict) or record.get("digest") != digest:
        raise TrustRootError(f"the TUF store {folder}: {TARGET} is not the root its record names "
                             f"(expected {record.get('digest') if isinstance(record, dict) else None}, "
                             f"actual {digest})")
    return VerifiedRoot(url, os.path.join(folder, TARGET), digest, when, raw)


def _present(folder: str) -> bool:
    try:
        os.lstat(os.path.join(folder, TARGET))
    except FileNotFoundError:
        return False
    except OSError:
        return True  # cannot tell: read it, and refuse it loudly
    return True


def cached(url: str) -> VerifiedRoot | None:
    """The root the last update of ``url`` verified, or None (never updated, or a store that does not
    verify: ``why_not`` says why). For a repository whose TUF root ships with the package the store is
    verified again from that root (module docstring); for any other, its record must name its bytes
    and every file pass the ownership and mode checks."""
    try:
        return verified_store(url)
    except TrustRootError:
        return None


def why_not(url: str) -> str | None:
    """Why the store of ``url`` is not used (``cached`` gave None for it), or None (absent, or used)."""
    try:
        verified_store(url)
    except TrustRootError as err:
        return err.message
    return None


def verified_store(url: str) -> VerifiedRoot | None:
    """``cached``, raising ``TrustRootError`` for a store that exists and does not verify."""
    url = url.rstrip("/")
    folder = store_dir(url)
    if not _present(folder):
        return None
    record = _record(folder, url)
    shipped = shipped_tuf_root(url)
    if shipped is not None:
        _reverify(folder, url, shipped, record.raw or b"")
    return record


#: Store verifications this process made, by the digests of what they read (``_reverify``).
_VERIFIED: dict[str, float] = {}


def _store_files(folder: str) -> dict[str, bytes]:
    """Every metadata file of a store the offline workflow reads: the root versions python-tuf kept
    (``metadata/root_history/<N>.root.json``), timestamp, snapshot and targets."""
    meta = os.path.join(folder, "metadata")
    out: dict[str, bytes] = {}
    history = os.path.join(meta, "root_history")
    try:
        names = os.listdir(history)
    except FileNotFoundError:
        names = []
    except OSError as err:
        raise TrustRootError(f"the TUF store {history} cannot be read: {err.strerror or err}") from err
    for name in sorted(names):
        if name.endswith(".root.json") and name.split(".", 1)[0].isdigit():
            out[f"root_history/{name}"] = _store_file(history, name, _FETCH_CAP)
    for role in ("timestamp", "snapshot", "targets"):
        out[f"{role}.json"] = _store_file(meta, f"{role}.json", _FETCH_CAP)
    return out


def _reverify(folder: str, url: str, shipped: bytes, target: bytes) -> None:
    """Run the TUF client workflow against the store from ``shipped`` (module docstring); remembered in
    this process only (never in a file: whoever can write the store could write that too) by the
    digests of everything read, until the earliest expiry. ``TrustRootError`` naming the store."""
    files = _store_files(folder)
    key = cache_key({"kind": "tuf-store", "atip_trust": __version__, "url": url,
                     "shipped": hashlib.sha256(shipped).hexdigest(),
                     "target": hashlib.sha256(target).hexdigest(),
                     "files": {n: hashlib.sha256(b).hexdigest() for n, b in files.items()}})
    until = _VERIFIED.get(key)
    if until is not None and time.time() < until:
        return
    if len(_VERIFIED) >= 8:
        _VERIFIED.clear()
    _VERIFIED[key] = _offline_workflow(folder, url, shipped, files, target)


def _offline_workflow(folder: str, url: str, shipped: bytes, files: dict[str, bytes], target: bytes) -> float:
    """python-tuf's ``Updater`` over the store's files as a repository that makes no request (its own
    metadata folder a scratch one, so the store is never written); the earliest expiry it saw."""
    def serve(wanted: str) -> bytes:
        name = wanted[len(url) + 1:] if wanted.startswith(url + "/") else ""
        head, _, rest = name.partition(".")
        if rest == "root.json" and head.isdigit():
            data = files.get(f"root_history/{head}.root.json")
        elif rest in ("snapshot.json", "targets.json") and head.isdigit():
            data = files.get(rest)  # consistent snapshots: python-tuf checks the version it asked for
        else:
            data = files.get(name)
        if data is None:
            raise exceptions.DownloadHTTPError(f"{name or wanted}: not in the store {folder}", 404)
        return data

    try:
        with tempfile.TemporaryDirectory(prefix="atip-tuf-") as scratch:
            client = updater.Updater(
                metadata_dir=scratch, metadata_base_url=url, target_dir=None,
                target_base_url=url + "/targets/", fetcher=_fetcher_class()(url, None, serve),
                config=config.UpdaterConfig(app_user_agent=f"atip-trust/{__version__}"), bootstrap=shipped)
            client.refresh()
            info = client.get_targetinfo(TARGET)
            if info is None:
                raise TrustRootError(f"the TUF store {folder}: the targets metadata names no {TARGET}")
            info.verify_length_and_hashes(target)

    except TrustRootError:
        raise
    except Exception as err:  # noqa: BLE001 - python-tuf's refusals (RepositoryError, LengthOrHashMismatch...)
        raise TrustRootError(f"the TUF store {folder} does not verify from the TUF root shipped with the "
                             f"package: {type(err).__name__}: {err}; `atip-trust trust-root update` "
                             "refreshes it") from err
    return _earliest_expiry(files, shipped)


def _earliest_expiry(files: dict[str, bytes], shipped: bytes) -> float:
    """The earliest ``expires`` of the verified roles (the newest root, timestamp, snapshot, targets):
    past it the store must be verified again (and is then refused as expired)."""
    roots = sorted((int(n.split("/")[1].split(".")[0]), b) for n, b in files.items() if n.startswith("root_history/"))
    chosen = [roots[-1][1] if roots else shipped] + [files[f"{r}.json"] for r in ("timestamp", "snapshot", "targets")]
    return min(metadata.Metadata.from_bytes(b).signed.expires.timestamp() for b in chosen)


def verified_at(path: str) -> datetime.datetime | None:
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
        raise exceptions.DownloadError(f"{url} is outside the repository {base_url}")
    parts = url[len(base_url):].split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise exceptions.DownloadError(f"{url}: not a path inside the mirror")
    path = os.path.join(mirror, *parts)
    try:
        with open(path, "rb") as f:
            data = f.read(_FETCH_CAP + 1)
    except FileNotFoundError:
        raise exceptions.DownloadHTTPError(f"{path}: not in the mirror", 404) from None
    except OSError as err:
        raise exceptions.DownloadError(f"{path}: {err.strerror}") from err
    if len(data) > _FETCH_CAP:
        raise exceptions.DownloadError(f"{path} is over {_FETCH_CAP} bytes")
    return data


def _net_read(url: str) -> bytes:
    """``url`` through net/fetch.py; a 404 is python-tuf's "no such version" (the root chain ends)."""
    try:
        answer = fetch.fetch_conditional(url, max_bytes=_FETCH_CAP)
    except AtipTrustError as err:
        raise exceptions.DownloadError(err.diagnostics()) from err
    if answer.status != 200:
        raise exceptions.DownloadHTTPError(f"{url}: HTTP {answer.status}", answer.status)
    return answer.body


@functools.lru_cache(maxsize=1)
def _fetcher_class() -> type:
    """python-tuf's ``FetcherInterface`` over ``_net_read`` or ``_mirror_read`` (made on first use, as
    python-tuf is imported then). Its public methods, and the length caps they apply, are python-tuf's."""

    class AtipFetcher(fetcher.FetcherInterface):
        def __init__(self, base_url: str, mirror: str | None,
                     serve: Callable[[str], bytes] | None = None) -> None:
            self.base_url, self.mirror, self.serve = base_url.rstrip("/") + "/", mirror, serve

        def _fetch(self, url: str) -> Iterator[bytes]:
            if self.serve is not None:  # the store itself, verified offline (``_offline_workflow``)
                yield self.serve(url)
            else:
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
            metadata.Metadata.from_bytes(f.read(_FETCH_CAP + 1))
    except FileNotFoundError:
        return None
    except Exception as err:  # noqa: BLE001 - python-tuf's DeserializationError, OSError...
        return f"{path} is damaged ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})"
    return None


def update(url: str = PRODUCTION_URL, *, bootstrap: bytes | None = None, mirror: str | None = None,
           now: datetime.datetime | None = None) -> VerifiedRoot:
    """Refresh ``url``'s TUF metadata, verify its ``trusted_root.json`` and store it (module docstring).
    ``bootstrap``: the TUF root to start from when this custom repository was never updated here; the
    public-good and staging repositories always start from the shipped root (``shipped_tuf_root``), and
    ``bootstrap`` or ``mirror`` for them is ``UsageError``. ``TrustRootError`` on any refusal."""
    url = url.rstrip("/")
    shipped = shipped_tuf_root(url)
    if shipped is not None and (bootstrap is not None or mirror is not None):
        # The public-good and staging stores hold only what the shipped root vouches for (module docstring).
        raise UsageError(f"{url} starts from the TUF root shipped with the package: a TUF root to start from "
                         "(--tuf-root) and a copied repository (--root-from) serve custom repositories "
                         "only (--url)")
    folder = store_dir(url)
    metadata_dir, targets_dir = os.path.join(folder, "metadata"), os.path.join(folder, "targets")
    try:
        for d in (folder, metadata_dir, targets_dir):
            os.makedirs(d, mode=0o700, exist_ok=True)
    except OSError as err:
        raise EnvironmentFailure(f"cannot create the TUF store {folder}: {err.strerror or err} (set "
                                 "ATIP_CACHE_DIR to a writable folder)", path=folder) from err
    # A shipped root is where every update starts (never the store's own root.json, which the user's
    # cache holds); a custom repository starts from its stored root once it has one.
    first = shipped is not None or not os.path.exists(os.path.join(metadata_dir, "root.json"))
    damaged = None if first else _damaged_root(metadata_dir)
    if damaged is not None and bootstrap is None:
        raise TrustRootError(f"the TUF store of {url}: {damaged}; start over from the repository's first "
                             f"root: `atip-trust trust-root update --url {url} --tuf-root FILE`", path=metadata_dir)
    if damaged is not None:
        first = True  # start over from the --tuf-root given
    if first and bootstrap is None:
        bootstrap = shipped
        if bootstrap is None:
            raise UsageError(f"no TUF root to start from for {url}: give the repository's initial root.json "
                             "(--tuf-root FILE); it is trusted as given")
    try:
        client = updater.Updater(
            metadata_dir=metadata_dir, metadata_base_url=url, target_dir=targets_dir,
            target_base_url=url + "/targets/", fetcher=_fetcher_class()(url, mirror),
            config=config.UpdaterConfig(app_user_agent=f"atip-trust/{__version__}"),
            bootstrap=bootstrap if first else None)
        client.refresh()
        info = client.get_targetinfo(TARGET)
        if info is None:
            raise TrustRootError(f"the TUF repository {url} has no {TARGET} target")
        target = client.find_cached_target(info) or client.download_target(info)
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
    when = now or datetime.datetime.now(datetime.UTC)
    digest = "sha256:" + hashlib.sha256(raw).hexdigest()
    path = os.path.join(folder, TARGET)
    record = VerifiedRoot(url, path, digest, when, raw)
    _store_pair({path: raw, os.path.join(folder, "verified.json"): json.dumps(record.to_json()).encode()})
    return record


__all__ = ["INSTANCE_URLS", "PRODUCTION_URL", "STAGING_URL", "TARGET", "VerifiedRoot", "cached", "shipped_tuf_root",
           "store_dir", "update", "verified_at", "verified_store", "why_not"]
