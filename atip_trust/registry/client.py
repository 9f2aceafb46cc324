"""The shim registry client (RFC §4.4-4.7): a shim for a binary, found by its sha256, trusted only as
far as policy says.

A registry is a static file host: ``<url>/.well-known/atip-registry.json`` (the manifest, §4.4.2) and
``<url>/shims/sha256/<hex>.json`` with ``<hex>.json.bundle`` beside it (§4.4.1, §4.9). A ``file://``
URL or an absolute path is a local folder laid out the same way (``shims/sha256/`` or ``sha256/``).

What makes a shim count (docs/decisions.md; docs/architecture.md, registries):

* **Policy names the registry and its signers.** ``RegistrySpec`` values come from policy
  (``trust.registries``); the manifest's own ``trust.signers`` are never read as anchors, and
  ``ATIP_REGISTRIES`` can only select among the registries policy names (an environment variable
  adds no trust).
* **Signed over the exact bytes.** The ``ShimVerifier`` the caller passes checks the bundle over the
  bytes that were received, against that registry's signers; the same bytes are then parsed.
* **Bound to the digest looked up.** ``binary.hash`` must equal it (§4.5): a validly signed shim for
  another binary is rejected.

Order (§4.6): by ``priority`` (lower first, then policy order). A registry in ``allowlist`` mode
(§4.8) ends the search whatever it answers: a tool it does not list (or a shim it serves that fails
verification, or an error) is not looked up elsewhere. A ``fallthrough`` registry's miss, rejection or
error moves on to the next; each leaves an ``Attempt`` naming why.

Network (net/fetch.py, the one HTTP client): https only (plain http for loopback hosts), same-origin
redirects, a timeout and a byte cap on every request, no credentials except the bearer token read from
the environment variable policy names (``tokenEnv``), which therefore never reaches another origin.
A failed request fails closed: no shim from that registry, never a stale or unverified one.

Cache (§4.7): per registry, ``<cache_dir>/<sha256(url)[:16]>/shims/sha256/<hex>.json`` and
``.json.bundle``, byte-for-byte as signed, written only after they verified (into a private temporary
file, then ``os.replace``), 0600 in 0700 directories; ``<hex>.meta.json`` keeps the ETag, the
Last-Modified date, the registry's ``Cache-Control`` freshness and when it was last checked with the
registry. A cached shim is verified again on every use (policy's signers may have changed since).

* Online (``--fetch``): within the TTL (24 h, the RFC's re-check interval, shortened by the
  registry's ``Cache-Control: max-age`` or ``no-cache``, never lengthened) the copy is used as is;
  after it, a conditional request (``If-None-Match`` and ``If-Modified-Since``) revalidates it (304:
  reused, checked now), a 404 removes it. ``no-store``: no copy is kept. ``ATIP_REFRESH=1``: TTL 0.
* Offline (no ``--fetch``, ``ATIP_OFFLINE``, or ``offline=True``): no request at all; a cached
  verified shim is used only while its last check is younger than the registry's
  ``maxCacheAgeHours`` (policy, default 7 days). Older, it counts as absent: the RFC's 24 h re-check
  cannot happen without the network, and a shim the registry withdrew must not keep relaxing gates
  for ever; the week is the margin for machines that fetch now and then, and policy can shorten it
  (0: never without the network).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from atip_trust._base.files import open_regular, private_dir, read_fd_capped, write_atomic
from atip_trust._base.jsonio import parse_json
from atip_trust._base.limits import LIMITS
from atip_trust._base.record import Record, field, fields_json, replace
from atip_trust.errors import AtipTrustError, UsageError
from atip_trust.facts.digest import Digest
from atip_trust.facts.metadata import MetadataDocument, parse_metadata
from atip_trust.net.fetch import env_flag, fetch_conditional

#: RFC §4.7: re-check a cached shim after this many seconds.
DEFAULT_TTL = 24 * 3600.0
#: Without the network (no ``--fetch``, or ``ATIP_OFFLINE``) a cached shim cannot be re-checked; it
#: counts as absent once its last check with the registry is older than this (policy
#: ``maxCacheAgeHours``, default 7 days): a shim the registry withdrew stops relaxing gates.
DEFAULT_MAX_CACHE_AGE = 7 * 24 * 3600.0
#: The manifest is small; a registry that sends more is refused.
MANIFEST_BYTES = 1024 * 1024
#: §4.4.2 default endpoints, relative to the registry URL.
DEFAULT_SHIMS = "/shims/sha256/{hash}.json"
MANIFEST_PATH = "/.well-known/atip-registry.json"

Outcome = Literal["found", "not-found", "rejected", "error", "offline"]


class RegistrySpec(Record):
    """One registry as *policy* names it (``trust.registries`` entry)."""

    url: str
    #: The policy's signer rules for this registry; opaque here, handed to the ``ShimVerifier``.
    signers: tuple[Any, ...]
    priority: int = 100
    mode: Literal["allowlist", "fallthrough"] = "fallthrough"
    name: str | None = None
    #: The environment variable holding a bearer token for this registry (never the token itself).
    token_env: str | None = None
    #: Seconds a cached shim may be used without re-checking it with the registry (offline use).
    max_cache_age: float = DEFAULT_MAX_CACHE_AGE

    @property
    def label(self) -> str:
        return self.name or self.url

    @property
    def is_local(self) -> bool:
        return self.url.startswith(("file://", "/"))


class SignatureVerdict(Record):
    """The ``ShimVerifier``'s answer about one shim's bytes and bundle."""

    ok: bool
    identity: str | None = None
    issuer: str | None = None
    #: Why not (expected and actual), or what passed.
    reason: str = ""


#: ``(shim_bytes, bundle_path, spec) -> SignatureVerdict``: the bundle verified over exactly these bytes
#: against ``spec.signers`` (admission/shims.py supplies the project's verifier).
ShimVerifier = Callable[[bytes, Path, RegistrySpec], SignatureVerdict]


class Attempt(Record):
    """What one registry answered for one lookup."""

    registry: str
    outcome: Outcome
    reason: str

    to_json = fields_json  # its fields are JSON data already


class ShimResult(Record):
    """A lookup's answer: a verified shim, or none and why."""

    digest: Digest
    document: MetadataDocument | None = None
    #: The verified bytes (what the signature covers and ``document`` was parsed from).
    raw: bytes | None = None
    registry: RegistrySpec | None = None
    signer: str | None = None
    issuer: str | None = None
    #: The shim and its bundle on disk (the cache, or a local registry's folder).
    shim_path: Path | None = None
    bundle_path: Path | None = None
    from_cache: bool = False
    attempts: tuple[Attempt, ...] = field(default_factory=tuple)

    @property
    def found(self) -> bool:
        return self.document is not None

    @property
    def reasons(self) -> list[str]:
        if not self.attempts:
            return ["policy names no shim registry (trust.registries)"]
        return [f"{a.registry}: {a.reason}" for a in self.attempts if a.outcome != "found"]

    def to_json(self) -> dict[str, Any]:
        return {
            "digest": str(self.digest),
            "found": self.found,
            "registry": self.registry.url if self.registry else None,
            "signer": self.signer,
            "issuer": self.issuer,
            "from_cache": self.from_cache,
            "attempts": [a.to_json() for a in self.attempts],
        }


class _Rejected(Exception):
    """A shim (or bundle) that was received but does not count; the message says why."""


def _norm(url: str) -> str:
    return url.strip().rstrip("/")


def search_order(specs: Sequence[RegistrySpec]) -> tuple[RegistrySpec, ...]:
    """Policy's registries in the order they are asked (RFC §4.6: ``priority``, lower first, then
    policy order), cut after the first ``allowlist`` registry (§4.8): its answer is final, so no
    registry after it is ever asked."""
    ordered = sorted(specs, key=lambda s: s.priority)  # stable: equal priorities keep policy's order
    for i, spec in enumerate(ordered):
        if spec.mode == "allowlist":
            return tuple(ordered[:i + 1])
    return tuple(ordered)


def select_registries(specs: Sequence[RegistrySpec], env: str | None) -> tuple[RegistrySpec, ...]:
    """The registries a lookup asks, in order: policy's ``search_order``, narrowed by
    ``ATIP_REGISTRIES`` (comma-separated URLs, RFC §4.6) to those it lists.

    The variable can only narrow, never relax: a URL policy does not name is a ``UsageError`` (a
    registry needs its signers in policy), and so is one that policy's order puts after an
    ``allowlist`` registry (leaving that registry out would let a fall-through registry answer for a
    tool the allowlist does not list: an unsigned tool's command could flip from deny to allow)."""
    order = search_order(specs)
    if env is None or not env.strip():
        return order
    wanted = [_norm(u) for u in env.split(",") if u.strip()]
    known = {_norm(s.url): s for s in specs}
    unknown = [u for u in wanted if u not in known]
    if unknown:
        raise UsageError(
            f"ATIP_REGISTRIES names {', '.join(unknown)}, which policy does not name "
            f"(trust.registries: {', '.join(known) or 'none'}); a registry needs its signers in "
            "policy, so the environment can only choose among policy's registries")
    asked = {_norm(s.url) for s in order}
    beyond = [u for u in wanted if u not in asked]
    if beyond:
        final = order[-1]
        raise UsageError(
            f"ATIP_REGISTRIES names {', '.join(beyond)}, which policy's order puts after the allowlist "
            f"registry {final.label} (trust.registries mode \"allowlist\": its answer is final); "
            "leaving it out would let another registry vouch for tools it does not list, and the "
            f"environment can only narrow. Expected a selection among: {', '.join(sorted(asked))}")
    return tuple(s for s in order if _norm(s.url) in wanted)


def _check_endpoint(value: Any, where: str) -> str:
    """A manifest endpoint is an absolute path on the registry's own origin with one ``{hash}``."""
    if not isinstance(value, str) or not value.startswith("/") or value.startswith("//") \
            or value.count("{hash}") != 1 or ".." in value or "?" in value or "#" in value \
            or not value.isprintable() or "\\" in value:
        raise _Rejected(f"manifest {where} must be a path like {DEFAULT_SHIMS!r} on the registry's "
                        f"own origin, got {value!r}")
    return value


def _read_private(path: Path, cap: int) -> bytes | None:
    """A cache file's bytes, or None when absent or not to be trusted (a link, another owner, a
    group- or other-writable mode)."""
    try:
        fd, st = open_regular(path, what="cached shim", follow_links=False)
    except AtipTrustError:
        return None
    try:
        if st.st_uid != os.getuid() or stat.S_IMODE(st.st_mode) & (stat.S_IWGRP | stat.S_IWOTH):
            return None
        return read_fd_capped(fd, cap, what="cached shim")
    except AtipTrustError:
        return None
    finally:
        os.close(fd)


def _write_temp(directory: Path, data: bytes) -> Path:
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".part", dir=directory)  # 0600
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    return Path(tmp)


def _unlink(*paths: Path | None) -> None:
    for p in paths:
        if p is not None:
            try:
                p.unlink()
            except OSError:
                pass


class _ShimCache:
    """One registry's cached shims (module docstring, "Cache")."""

    def __init__(self, root: Path, spec: RegistrySpec) -> None:
        key = hashlib.sha256(_norm(spec.url).encode("utf-8")).hexdigest()[:16]
        self.dir = root / key / "shims" / "sha256"
        self.root = root / key

    def paths(self, hexdigest: str) -> tuple[Path, Path, Path]:
        base = self.dir / f"{hexdigest}.json"
        return base, Path(f"{base}.bundle"), self.dir / f"{hexdigest}.meta.json"

    def read(self, hexdigest: str) -> tuple[bytes, Path, dict[str, Any]] | None:
        shim, bundle, meta = self.paths(hexdigest)
        raw = _read_private(shim, LIMITS.metadata_bytes)
        meta_raw = _read_private(meta, MANIFEST_BYTES)
        if raw is None or meta_raw is None or not bundle.is_file():
            return None
        try:
            info = parse_json(meta_raw, what="cached shim metadata")
        except AtipTrustError:
            return None
        return (raw, bundle, info) if isinstance(info, dict) else None

    def usable(self) -> bool:
        return private_dir(self.root, create=True) and private_dir(self.dir, create=True)

    def drop(self, hexdigest: str) -> None:
        _unlink(*self.paths(hexdigest))

    def touch(self, hexdigest: str, info: dict[str, Any]) -> None:
        """Rewrite the meta file (a 304: checked again now)."""
        _, _, meta = self.paths(hexdigest)
        try:
            write_atomic(meta, json.dumps(info).encode("utf-8"))
        except OSError:
            pass


def _age(info: dict[str, Any]) -> float | None:
    """Seconds since the cached shim was last checked with its registry; None when unknown or in the
    future (a clock that went back, a meta file written by hand): such a copy is never fresh."""
    checked = info.get("checked")
    if isinstance(checked, bool) or not isinstance(checked, (int, float)):
        return None
    age = time.time() - checked
    return age if age >= 0 else None


def _max_age(info: dict[str, Any]) -> float:
    """The registry's own ``Cache-Control`` freshness for a cached shim (``inf``: none given)."""
    value = info.get("max_age")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else float("inf")


def _finite(seconds: float | None) -> float | None:
    """A freshness as the meta file keeps it (JSON has no infinity: None means none given)."""
    return seconds if seconds is not None and seconds != float("inf") else None


def _cache_control(header: str | None) -> float | None:
    """RFC §4.7 / RFC 9111 ``Cache-Control`` of a registry answer, as the seconds a copy stays fresh:
    ``max-age=N`` (``s-maxage`` is for shared caches), ``0`` for ``no-cache`` (revalidate every time),
    None for ``no-store`` (keep no copy). A registry can shorten the 24 h re-check, never lengthen it
    (the client takes the smaller). No header, or one that does not parse: ``inf`` (the client's TTL)."""
    fresh = float("inf")
    for part in (header or "").lower().split(","):
        key, _, value = part.strip().partition("=")
        if key == "no-store":
            return None
        if key == "no-cache":
            fresh = 0.0
        elif key == "max-age" and value.strip().strip('"').isascii() and value.strip().strip('"').isdigit():
            # ASCII digits only (RFC 9111 delta-seconds = 1*DIGIT): str.isdigit takes "³", which float()
            # then refuses (an internal error), and a full-width "３", which it reads as 3.
            fresh = min(fresh, float(value.strip().strip('"')))
    return fresh


class RegistryClient:
    """Look shims up by digest in policy's registries (module docstring)."""

    def __init__(
        self,
        registries: Sequence[RegistrySpec],
        verify: ShimVerifier,
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        offline: bool | None = None,
        ttl: float | None = None,
        timeout: float = LIMITS.fetch_timeout,
        max_bytes: int = LIMITS.metadata_bytes,
    ) -> None:
        """``cache_dir``: where verified shims are kept (None: no cache; offline then finds nothing
        remote). ``offline``: no network (None: ``ATIP_OFFLINE``). ``ttl``: seconds a cached shim is
        used without asking (None: 24 h, 0 with ``ATIP_REFRESH=1``). ``timeout`` and ``max_bytes``:
        per request (connect, each read and the whole request; bytes of one body)."""
        self.registries: tuple[RegistrySpec, ...] = select_registries(
            registries, os.environ.get("ATIP_REGISTRIES"))
        self.verify = verify
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.offline = env_flag("ATIP_OFFLINE") if offline is None else offline
        self.ttl = (0.0 if env_flag("ATIP_REFRESH") else DEFAULT_TTL) if ttl is None else ttl
        self.timeout = timeout
        self.max_bytes = max_bytes
        self._manifests: dict[str, str | _Rejected] = {}
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    # -- the lookup -------------------------------------------------------------------------------
    def lookup(self, digest: Digest) -> ShimResult:
        """The first verified shim for ``digest`` (a sha256 ``Digest``) in priority order; an
        allowlist registry ends the search whatever it answers. Never raises for what a registry
        does: its failures are ``Attempt`` values."""
        if digest.algorithm != "sha256":
            raise UsageError(f"shims are looked up by sha256 (RFC §4.1), got {digest.algorithm}")
        attempts: list[Attempt] = []
        for spec in self.registries:
            result, attempt = self._one(spec, digest)
            if attempt.outcome != "found" and spec.mode == "allowlist":
                attempt = Attempt(attempt.registry, attempt.outcome,
                                  f"{attempt.reason}; allowlist registry: no other registry is asked")
            attempts.append(attempt)
            if result is not None:
                return replace(result, attempts=tuple(attempts))
            if spec.mode == "allowlist":
                break
        return ShimResult(digest=digest, attempts=tuple(attempts))

    def _one(self, spec: RegistrySpec, digest: Digest) -> tuple[ShimResult | None, Attempt]:
        try:
            if spec.is_local:
                return self._local(spec, digest)
            return self._remote(spec, digest)
        except _Rejected as why:
            return None, Attempt(spec.label, "rejected", str(why))
        except AtipTrustError as err:
            return None, Attempt(spec.label, "error", err.diagnostics())

    def _accept(self, spec: RegistrySpec, digest: Digest, raw: bytes, bundle: Path | None,
                where: str) -> tuple[MetadataDocument, SignatureVerdict]:
        """Bound to the digest (§4.5), then signed by a registry signer policy names; or ``_Rejected``."""
        try:
            doc = parse_metadata(raw, source_name=where, lookup_digest=digest)
        except AtipTrustError as err:
            raise _Rejected(f"shim at {where} refused: {err.diagnostics()}") from err
        if bundle is None:
            raise _Rejected(f"shim at {where} is unsigned (no .bundle): expected a bundle signed by "
                            f"a signer policy names for {spec.label}")
        if not spec.signers:
            raise _Rejected(f"policy names no signers for {spec.label}: nobody can vouch for its shims")
        verdict = self.verify(raw, bundle, spec)
        if not verdict.ok:
            raise _Rejected(f"shim at {where} refused: {verdict.reason}")
        return doc, verdict

    # -- a local folder -----------------------------------------------------------------------------
    def _local(self, spec: RegistrySpec, digest: Digest) -> tuple[ShimResult | None, Attempt]:
        base = Path(unquote(urlsplit(spec.url).path)) if spec.url.startswith("file://") else Path(spec.url)
        for shim in (base / "shims" / "sha256" / f"{digest.hex}.json",
                     base / "sha256" / f"{digest.hex}.json"):
            if not shim.is_file():
                continue
            raw = _read_private(shim, LIMITS.metadata_bytes)
            if raw is None:
                raise _Rejected(f"{shim} is not a regular file this user or root owns and only "
                                "they can write")
            bundle = Path(f"{shim}.bundle")
            doc, verdict = self._accept(spec, digest, raw, bundle if bundle.is_file() else None,
                                        str(shim))
            return self._found(spec, digest, doc, raw, verdict, shim, bundle, cached=False)
        return None, Attempt(spec.label, "not-found", f"no shim for {digest} in {base}")

    # -- a remote registry --------------------------------------------------------------------------
    def _headers(self, spec: RegistrySpec) -> dict[str, str]:
        token = os.environ.get(spec.token_env, "") if spec.token_env else ""
        return {"Authorization": f"Bearer {token.strip()}"} if token.strip() else {}

    def _shim_url(self, spec: RegistrySpec, digest: Digest) -> str:
        """The shim's URL by the manifest's ``endpoints.shims`` (checked, same origin), fetched once
        per client; a registry without a readable manifest is not asked further."""
        base = _norm(spec.url)
        got = self._manifests.get(base)
        if got is None:
            try:
                got = self._manifest(spec)
            except _Rejected as why:
                got = why
            self._manifests[base] = got
        if isinstance(got, _Rejected):
            raise got
        return base + got.replace("{hash}", digest.hex)

    def _manifest(self, spec: RegistrySpec) -> str:
        url = _norm(spec.url) + MANIFEST_PATH
        answer = fetch_conditional(url, headers=self._headers(spec), timeout=self.timeout,
                                   max_bytes=min(self.max_bytes, MANIFEST_BYTES))
        if answer.status != 200:
            raise _Rejected(f"{url} answered {answer.status}: not an ATIP registry (RFC §4.4.2 "
                            "manifest expected)")
        try:
            doc = parse_json(answer.body, what="registry manifest", max_depth=LIMITS.json_depth)
        except AtipTrustError as err:
            raise _Rejected(f"{url}: {err.diagnostics()}") from err
        if not isinstance(doc, dict) or not isinstance(doc.get("atip"), dict):
            raise _Rejected(f"{url} is not an ATIP registry manifest (expected an object with "
                            "\"atip\")")
        endpoints = doc.get("endpoints", {})
        if not isinstance(endpoints, dict):
            raise _Rejected(f"{url}: endpoints must be an object")
        shims = _check_endpoint(endpoints.get("shims", DEFAULT_SHIMS), "endpoints.shims")
        # The bundle sits beside the shim (§4.4.1, §4.9); a manifest cannot move it elsewhere.
        if endpoints.get("signatures", shims + ".bundle") != shims + ".bundle":
            raise _Rejected(f"{url}: endpoints.signatures must be endpoints.shims + \".bundle\", got "
                            f"{endpoints.get('signatures')!r}")
        return shims

    def _remote(self, spec: RegistrySpec, digest: Digest) -> tuple[ShimResult | None, Attempt]:
        cache = _ShimCache(self.cache_dir, spec) if self.cache_dir is not None else None
        cached = cache.read(digest.hex) if cache is not None else None
        hit: tuple[ShimResult, Attempt] | None = None
        info: dict[str, Any] = {}
        if cached is not None and cache is not None:
            raw, bundle, info = cached
            try:
                doc, verdict = self._accept(spec, digest, raw, bundle, f"cache {cache.dir}")
            except _Rejected:
                cache.drop(digest.hex)  # not what was verified when stored: never used, fetched anew
                info = {}
            else:
                shim_path, _, _ = cache.paths(digest.hex)
                hit = self._found(spec, digest, doc, raw, verdict, shim_path, bundle, cached=True)
        age = _age(info)
        if self.offline:
            if hit is not None and age is not None and age < spec.max_cache_age:
                return hit
            why = (f"no cached verified shim for {digest}" if hit is None else
                   f"the cached shim for {digest} was last checked with the registry "
                   + (f"{age / 3600:.1f} h ago" if age is not None else "at an unknown time")
                   + f", over its maximum age of {spec.max_cache_age / 3600:g} h (trust.registries "
                   "maxCacheAgeHours): it counts as absent until --fetch checks it again")
            return None, Attempt(spec.label, "offline", f"offline (no --fetch, or ATIP_OFFLINE): {why}")
        if hit is not None and age is not None and age < min(self.ttl, _max_age(info)):
            return hit

        url = self._shim_url(spec, digest)
        headers = self._headers(spec)
        if hit is not None:
            # RFC §4.7: revalidate with a conditional request (ETag, and Last-Modified).
            for key, header in (("etag", "If-None-Match"), ("last_modified", "If-Modified-Since")):
                if isinstance(info.get(key), str):
                    headers[header] = info[key]
        answer = fetch_conditional(url, headers=headers, timeout=self.timeout, max_bytes=self.max_bytes)
        if answer.status == 304:
            if hit is None or cache is None:
                raise _Rejected(f"{url} answered 304 Not Modified to a request that was not "
                                "conditional")
            fresh = _cache_control(answer.cache_control)
            cache.touch(digest.hex, {**info, "checked": time.time(), "max_age": _finite(fresh)})
            return hit
        if answer.status == 404:
            if cache is not None:
                cache.drop(digest.hex)  # withdrawn by the registry: the cached copy goes too
            return None, Attempt(spec.label, "not-found", f"{url}: 404, no shim for {digest}")
        bundle_answer = fetch_conditional(url + ".bundle", headers=self._headers(spec),
                                          timeout=self.timeout, max_bytes=self.max_bytes)
        if bundle_answer.status != 200:
            raise _Rejected(f"shim at {url} is unsigned: {url}.bundle answered {bundle_answer.status}; "
                            f"expected a bundle signed by a signer policy names for {spec.label}")
        max_age = _cache_control(answer.cache_control)
        if max_age is None and cache is not None:
            cache.drop(digest.hex)  # no-store: the registry asks that no copy be kept
        return self._store(spec, digest, cache if max_age is not None else None, url, answer.body,
                           bundle_answer.body, meta={"etag": answer.etag, "max_age": _finite(max_age),
                                                     "last_modified": answer.last_modified})

    def _scratch(self) -> Path:
        """Without a usable cache: one private temporary folder for this client's shims (removed
        with the client), so that a result's ``bundle_path`` stays readable while it is in use."""
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="atip-trust-shims-")
        return Path(self._tmp.name)

    def _store(self, spec: RegistrySpec, digest: Digest, cache: _ShimCache | None, url: str,
               raw: bytes, bundle_bytes: bytes, *, meta: dict[str, Any]) -> tuple[ShimResult, Attempt]:
        """Verify the received pair from private temporary files, then move them into place: only
        verified bytes are ever stored under a shim's name."""
        usable = cache is not None and cache.usable()
        where = cache.dir if cache is not None and usable else self._scratch()
        tmp_shim: Path | None = _write_temp(where, raw)
        tmp_bundle: Path | None = _write_temp(where, bundle_bytes)
        try:
            assert tmp_shim is not None and tmp_bundle is not None
            doc, verdict = self._accept(spec, digest, raw, tmp_bundle, url)
            if cache is not None and usable:
                shim_path, bundle_path, _ = cache.paths(digest.hex)
            else:
                shim_path = where / f"{digest.hex}.json"
                bundle_path = where / f"{digest.hex}.json.bundle"
            os.replace(tmp_bundle, bundle_path)
            tmp_bundle = None
            os.replace(tmp_shim, shim_path)
            tmp_shim = None
            if cache is not None and usable:
                cache.touch(digest.hex, {"url": url, **meta, "checked": time.time()})
            return self._found(spec, digest, doc, raw, verdict, shim_path, bundle_path, cached=False)
        finally:
            _unlink(tmp_shim, tmp_bundle)

    @staticmethod
    def _found(spec: RegistrySpec, digest: Digest, doc: MetadataDocument, raw: bytes,
               verdict: SignatureVerdict, shim: Path, bundle: Path, *,
               cached: bool) -> tuple[ShimResult, Attempt]:
        how = "cached copy, verified again" if cached else "verified"
        return (ShimResult(digest=digest, document=doc, raw=raw, registry=spec, signer=verdict.identity,
                           issuer=verdict.issuer, shim_path=shim, bundle_path=bundle, from_cache=cached),
                Attempt(spec.label, "found", f"shim for {digest} signed by {verdict.identity} ({how})"))


__all__ = [
    "Attempt",
    "DEFAULT_MAX_CACHE_AGE",
    "DEFAULT_TTL",
    "RegistryClient",
    "RegistrySpec",
    "ShimResult",
    "ShimVerifier",
    "SignatureVerdict",
    "env_flag",
    "search_order",
    "select_registries",
]
