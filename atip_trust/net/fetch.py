"""Fetching named material over HTTPS, for ``verify --fetch`` (principle 5).

ATIP metadata may name where its provenance lives (RFC §3.2.2 ``trust.provenance.url``) and where the
binary's signature bundle lives (``trust.integrity.signature.bundle``). Those URLs are *claims* from an
untrusted document, so fetching them is opt-in (``--fetch``; docs/network.md: no network
request unless told to fetch something by URL) and every step is bounded:

(1) the URL is checked before any connection: ``https://`` only (plain ``http://`` only for loopback
    hosts), no user-info (it would become an ``Authorization`` header);
(2) one GET with a User-Agent ``atip-trust/<version>``, no cookies, no credentials, no ``.netrc``,
    ``Accept-Encoding: identity`` (a compressed body would make the byte cap a cap on the *wire* bytes
    only: a 64 KiB gzip chunk can inflate to tens of MiB before we could count it);
(3) redirects are followed by hand, at most ``MAX_REDIRECTS``, and only to the same scheme, host and
    port (an off-host redirect could point a pinned-looking URL anywhere; https → http is a downgrade);
(4) only status 200 is accepted;
(5) the body is streamed and reading stops at the byte cap (``Content-Length`` is not trusted, but a
    declared length over the cap is refused before reading);
(6) one wall-clock deadline (the timeout) covers the whole request, every redirect hop included:
    connect, TLS handshake, status line and headers, body. A per-read timeout alone is not a deadline
    (a server that sends one header byte every half second never trips it), so every socket the
    request opens is registered with a watchdog that shuts it down when the deadline passes; the
    blocked read then returns and the fetch fails as timed out. Only name resolution
    (``getaddrinfo``) cannot be interrupted; it is bounded by the system resolver's own timeout;
(7) the bytes are written to a private (0700) temporary directory as ``.json`` or ``.jsonl`` and handed
    to the ordinary bundle loader (``bundle.load_bundles``), so fetched material meets exactly the caps
    and checks of a local ``--bundle``. Nothing fetched is trusted for being fetched: the signature
    over it is what counts.

``ATIP_OFFLINE`` (any value but empty, ``0``, ``false``, ``no``, ``off``) refuses every request
before a connection is made: this module is the one HTTP client, so no network path escapes it.

Every httpx exception is mapped here, once, into ``NetworkError`` (or ``InputTooLargeError`` for the
byte cap), naming the URL.

Proxies: ``trust_env`` is off (it would also read ``.netrc`` credentials and send them), but
``HTTPS_PROXY`` / ``ALL_PROXY`` and ``NO_PROXY`` are honoured for ``https://`` URLs, read through the
standard library, as cosign (Go's ``ProxyFromEnvironment``), pip and uv do: CI and enterprise networks
often have no other way out, and a CONNECT tunnel keeps TLS end to end. Loopback URLs never go through a
proxy. ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` are honoured for the same networks (TLS-inspecting proxies);
the default CA bundle is certifi's.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import ssl
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import httpcore
import httpx

from atip_trust._base.jsonio import parse_json
from atip_trust._base.limits import LIMITS
from atip_trust._base.record import Record
from atip_trust._version import __version__
from atip_trust.errors import InputTooLargeError, NetworkError, UsageError
from atip_trust.facts.digest import Digest, hash_bytes
from atip_trust.facts.metadata import load_metadata

if TYPE_CHECKING:
    from typing import Any

#: Redirects followed (same origin only). httpx's default is 20; five covers a CDN hop or two.
MAX_REDIRECTS = 5

#: Loopback hosts for which plain ``http://`` is allowed, so tests can use a local HTTP server
#: (pytest-httpserver). pip and uv likewise treat localhost as secure. Traffic to these never leaves
#: the machine; 127.0.0.0/8 and ::1 are recognised as addresses too.
LOOPBACK_NAMES = frozenset({"localhost"})

_REDIRECTS = frozenset({301, 302, 303, 307, 308})


def _version() -> str:
    return __version__


def env_flag(name: str) -> bool:
    """An on/off environment variable: unset, empty, ``0``, ``false``, ``no``, ``off`` are off; any
    other value is on (``ATIP_OFFLINE=maybe`` means no network: the safe reading)."""
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")


def check_online(url: str) -> None:
    """``ATIP_OFFLINE`` forbids the network: refuse before any connection (``NetworkError``)."""
    if env_flag("ATIP_OFFLINE"):
        raise NetworkError(f"refusing to fetch {_printable(url)}: ATIP_OFFLINE is set, no network "
                           "request is made (unset it, or pass the material as a local file)")


class _Watchdog:
    """Step (6): shut down every socket of one request when its deadline passes.

    Each socket is registered as a duplicate descriptor (``shutdown`` acts on the connection, not the
    descriptor), so the watchdog keeps working after TLS wraps the original socket object. The timer
    thread only calls ``shutdown``; the requesting thread sees its blocked read end and closes."""

    def __init__(self, deadline: float) -> None:
        self.fired = False
        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []
        self._timer = threading.Timer(max(0.0, deadline - time.monotonic()), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def add(self, sock: socket.socket) -> None:
        dup = sock.dup()
        with self._lock:
            self._socks.append(dup)
            late = self.fired
        if late:
            self._shut(dup)

    @staticmethod
    def _shut(sock: socket.socket) -> None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already closed by the peer or by us

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            socks = list(self._socks)
        for sock in socks:
            self._shut(sock)

    def close(self) -> None:
        self._timer.cancel()
        with self._lock:
            socks, self._socks = self._socks, []
        for sock in socks:
            sock.close()


def _watched_backend(inner: httpcore.NetworkBackend, watch: _Watchdog) -> httpcore.NetworkBackend:
    """httpcore's network backend, with each new connection's socket handed to ``watch``."""
    def watched(stream: httpcore.NetworkStream) -> httpcore.NetworkStream:
        sock = stream.get_extra_info("socket")
        try:
            if not isinstance(sock, socket.socket):
                raise OSError("the connection exposes no socket")
            watch.add(sock)
        except OSError as err:
            # A connection the watchdog cannot shut would have no deadline: refuse it (httpx maps
            # this to ConnectError, hence NetworkError).
            stream.close()
            raise httpcore.ConnectError(f"cannot bound the connection by the deadline: {err}") from err
        return stream

    class Watched(httpcore.NetworkBackend):
        def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                        local_address: str | None = None,
                        socket_options: Any = None) -> httpcore.NetworkStream:
            return watched(inner.connect_tcp(host, port, timeout=timeout, local_address=local_address,
                                             socket_options=socket_options))

        def connect_unix_socket(self, path: str, timeout: float | None = None,
                                socket_options: Any = None) -> httpcore.NetworkStream:
            return watched(inner.connect_unix_socket(path, timeout=timeout, socket_options=socket_options))

        def sleep(self, seconds: float) -> None:
            inner.sleep(seconds)

    return Watched()


def is_loopback(host: str) -> bool:
    """True for ``localhost``, 127.0.0.0/8 and ``::1``."""
    h = host.lower().strip("[]")
    if h in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def _printable(text: str) -> str:
    """A URL from untrusted metadata, safe to print: control characters escaped."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)


def _origin(u: httpx.URL) -> tuple[str, str, int]:
    port = u.port if u.port is not None else (443 if u.scheme == "https" else 80)
    return (u.scheme, u.host.lower(), port)


def _show(u: httpx.URL) -> str:
    scheme, host, port = _origin(u)
    host = f"[{host}]" if ":" in host else host
    default = (scheme == "https" and port == 443) or (scheme == "http" and port == 80)
    return f"{scheme}://{host}" if default else f"{scheme}://{host}:{port}"


def check_url(url: str) -> httpx.URL:
    """Step (1): parse and refuse what we will not fetch, before any connection is made."""
    try:
        u = httpx.URL(url)
    except (httpx.InvalidURL, ValueError, TypeError) as err:
        raise NetworkError(f"refusing to fetch {_printable(url)!r}: not a valid URL ({err})") from err
    scheme = u.scheme.lower()
    if scheme == "https":
        pass
    elif scheme == "http":
        if not is_loopback(u.host):
            raise NetworkError(
                f"refusing to fetch {_printable(url)}: plain http:// is allowed only for loopback hosts "
                "(127.0.0.1, ::1, localhost); use https://"
            )
    else:
        raise NetworkError(
            f"refusing to fetch {_printable(url)}: scheme {u.scheme or '(none)'!r} is not allowed; "
            "expected https://"
        )
    if not u.host:
        raise NetworkError(f"refusing to fetch {_printable(url)}: the URL has no host")
    if u.userinfo:
        # httpx would turn user:password@ into an Authorization header; we send no credentials.
        raise NetworkError(
            f"refusing to fetch {_show(u)}{u.raw_path.decode('ascii', 'replace')}: the URL carries "
            "credentials (user-info); atip-trust sends none"
        )
    return u


def _proxy_for(u: httpx.URL) -> str | None:
    """``HTTPS_PROXY``/``ALL_PROXY`` for an https URL unless ``NO_PROXY`` names its host; never loopback."""
    if u.scheme != "https" or is_loopback(u.host):
        return None
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get("https") or proxies.get("all")
    if not proxy:
        return None
    host = u.host if u.port is None else f"{u.host}:{u.port}"
    if urllib.request.proxy_bypass(host):  # NO_PROXY (and the OS settings on macOS/Windows)
        return None
    return proxy


def _client(u: httpx.URL, timeout: float, watch: _Watchdog) -> httpx.Client:
    """A fresh client per request: no cookie jar carried across redirects, no environment, no auth;
    every connection it opens (to the host or to the proxy) is watched by ``watch`` (step 6)."""
    proxy = _proxy_for(u)
    try:
        verify: ssl.SSLContext = httpx.create_ssl_context(trust_env=True)
        transport = httpx.HTTPTransport(verify=verify, proxy=proxy, trust_env=False)
        pool = getattr(transport, "_pool", None)
        if pool is None or not hasattr(pool, "_network_backend"):
            # httpx/httpcore changed shape: without the watchdog there is no deadline; fail closed.
            raise NetworkError(f"cannot bound a request to {_show(u)} by a deadline with this "
                               "httpx/httpcore version (no connection pool network backend)")
        pool._network_backend = _watched_backend(pool._network_backend, watch)
        return httpx.Client(
            transport=transport,
            trust_env=False,
            follow_redirects=False,
            timeout=httpx.Timeout(timeout),
            verify=verify,
            headers={
                "User-Agent": f"atip-trust/{_version()}",
                "Accept": "application/json, application/jsonl, */*;q=0.1",
                "Accept-Encoding": "identity",
            },
        )
    except (ImportError, ValueError, OSError, ssl.SSLError) as err:
        # A SOCKS proxy without socksio, a malformed proxy URL, an unreadable SSL_CERT_FILE.
        # The proxy URL may hold credentials: name only its scheme and host.
        where = ""
        if proxy:
            try:
                where = f" through proxy {_show(httpx.URL(proxy))}"
            except (httpx.InvalidURL, ValueError):
                where = " through the configured proxy"
        raise NetworkError(f"cannot set up a connection to {_show(u)}{where}: {err}") from err


def redirect_target(current: httpx.URL, location: str | None, status: int = 302) -> httpx.URL:
    """Step (3): where a redirect from ``current`` leads, if we follow it at all.

    Only the same scheme, host and port: an off-host redirect could send a metadata-named URL anywhere,
    and https → http would drop TLS. (httpx would follow either by default and only strip the
    ``Authorization`` header.)
    """
    if not location:
        raise NetworkError(f"{current} answered {status} without a Location header")
    try:
        target = current.join(location)
    except (httpx.InvalidURL, ValueError) as err:
        raise NetworkError(
            f"{current} redirected to an invalid URL {_printable(location)!r}: {err}"
        ) from err
    if _origin(target) != _origin(current):
        if target.host.lower() == current.host.lower() and current.scheme == "https" \
                and target.scheme == "http":
            why = "a downgrade from https to http"
        elif target.host.lower() != current.host.lower():
            why = f"another host ({target.host}, not {current.host})"
        else:
            why = "another scheme or port"
        raise NetworkError(
            f"refusing redirect from {_show(current)} to {_show(target)}: {why}; only redirects "
            "to the same scheme, host and port are followed"
        )
    return target


def _read_capped(resp: httpx.Response, url: str, max_bytes: int, deadline: float,
                 timeout: float, watch: _Watchdog) -> bytes:
    """Step (5): stop at ``max_bytes`` whatever the headers say."""
    declared = resp.headers.get("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > max_bytes:
        raise InputTooLargeError(
            f"{url} declares {int(declared)} bytes (Content-Length), over the fetch cap of "
            f"{max_bytes} bytes"
        )
    encoding = resp.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise NetworkError(
            f"{url} was sent with Content-Encoding {encoding!r}; expected identity (requested with "
            "Accept-Encoding: identity, so the byte cap applies to the bytes we parse)"
        )
    chunks: list[bytes] = []
    total = 0
    # No chunk_size: httpx would buffer up to it before yielding, hiding a slow drip from the deadline.
    for chunk in resp.iter_raw():
        total += len(chunk)
        if total > max_bytes:
            raise InputTooLargeError(
                f"{url} sent more than the fetch cap of {max_bytes} bytes"
            )
        chunks.append(chunk)
        if time.monotonic() > deadline:
            raise NetworkError(f"fetching {url} timed out: not complete after {timeout} s")
    if watch.fired:
        # The watchdog's shutdown reads as end of file: a body that ends at the end of the
        # connection (no Content-Length, HTTP/1.0 style) would look complete, but it was cut.
        raise NetworkError(f"fetching {url} timed out: not complete after {timeout} s")
    return b"".join(chunks)


def _request(
    url: str,
    *,
    timeout: float,
    max_bytes: int,
    max_redirects: int,
    headers: Mapping[str, str] | None = None,
    answers: frozenset[int] = frozenset({200}),
) -> tuple[int, bytes, str, dict[str, str]]:
    """Steps (1)-(6). Returns the status (one of ``answers``), the body (read only for 200), the final
    URL (after same-origin redirects) and the response's ``ETag`` / ``Last-Modified`` /
    ``Cache-Control`` headers.

    ``headers`` go with every hop; every hop is on the first URL's origin (step 3), so a credential
    among them never reaches another host."""
    current = check_url(url)
    check_online(url)
    deadline = time.monotonic() + timeout
    watch = _Watchdog(deadline)
    try:
        return _hops(current, url, timeout=timeout, deadline=deadline, watch=watch, max_bytes=max_bytes,
                     max_redirects=max_redirects, headers=headers, answers=answers)
    finally:
        watch.close()


def _hops(current: httpx.URL, url: str, *, timeout: float, deadline: float, watch: _Watchdog,
          max_bytes: int, max_redirects: int, headers: Mapping[str, str] | None,
          answers: frozenset[int]) -> tuple[int, bytes, str, dict[str, str]]:
    """``_request``'s redirect loop, each hop under the one deadline."""
    for _hop in range(max_redirects + 1):
        shown = str(current)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise NetworkError(f"fetching {shown} timed out: not complete after {timeout} s")
        try:
            with _client(current, remaining, watch) as client, \
                    client.stream("GET", current, headers=dict(headers or {})) as resp:
                if resp.status_code in _REDIRECTS:
                    current = redirect_target(current, resp.headers.get("location"),
                                              resp.status_code)
                    continue
                if resp.status_code not in answers:
                    want = " or ".join(str(a) for a in sorted(answers))
                    raise NetworkError(
                        f"fetching {shown} failed: expected status {want}, got {resp.status_code} "
                        f"{resp.reason_phrase}".rstrip()
                    )
                kept = {k: v for k in ("etag", "last-modified", "cache-control")
                        if (v := resp.headers.get(k)) is not None}
                body = (_read_capped(resp, shown, max_bytes, deadline, timeout, watch)
                        if resp.status_code == 200 else b"")
                if watch.fired:
                    raise NetworkError(f"fetching {shown} timed out: not complete after {timeout} s")
                return resp.status_code, body, shown, kept
        except (httpx.HTTPError, httpx.InvalidURL) as err:
            raise _map_error(err, shown, current, timeout, watch) from err
    raise NetworkError(f"fetching {_printable(url)}: more than {max_redirects} redirects")


def _map_error(err: Exception, shown: str, current: httpx.URL, timeout: float,
               watch: _Watchdog) -> NetworkError:
    """An httpx exception as the ``NetworkError`` that names the URL (the caller raises it)."""
    if watch.fired:
        # The watchdog shut the connection: whatever httpx saw (EOF, reset), it is the deadline.
        return NetworkError(f"fetching {shown} timed out: not complete after {timeout} s (connect, "
                            "TLS, headers and body share one deadline)")
    if isinstance(err, httpx.TimeoutException):
        return NetworkError(f"fetching {shown} timed out after {timeout} s ({type(err).__name__})")
    if isinstance(err, httpx.ProxyError):
        return NetworkError(f"fetching {shown} failed at the proxy: {err}")
    if isinstance(err, httpx.ConnectError):
        return NetworkError(f"cannot connect to {_show(current)} to fetch {shown}: {err}")
    if isinstance(err, httpx.InvalidURL):
        return NetworkError(f"refusing to fetch {shown}: {err}")
    # Remaining transport and protocol errors (read errors, protocol violations, ...).
    return NetworkError(f"fetching {shown} failed: {type(err).__name__}: {err}")


def _get(url: str, *, timeout: float, max_bytes: int, max_redirects: int) -> tuple[bytes, str]:
    """Steps (1)-(6), status 200 only. Returns the body and the final URL."""
    _status, body, final, _headers = _request(url, timeout=timeout, max_bytes=max_bytes,
                                              max_redirects=max_redirects)
    return body, final


class HttpAnswer(Record):
    """One conditional GET's answer (``fetch_conditional``)."""

    url: str
    final_url: str
    #: 200 (``body`` holds the bytes), 304 (not modified since the ``If-None-Match`` ETag) or 404.
    status: int
    body: bytes
    etag: str | None
    last_modified: str | None
    #: The ``Cache-Control`` header as sent (RFC §4.7: honoured by the registry cache).
    cache_control: str | None = None


def fetch_conditional(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = LIMITS.fetch_timeout,
    max_bytes: int = LIMITS.fetch_bytes,
    max_redirects: int = MAX_REDIRECTS,
) -> HttpAnswer:
    """GET ``url`` under the rules of this module's docstring, for a caller that keeps a cache (the
    shim registry client, RFC §4.7): ``headers`` (``If-None-Match``, ``If-Modified-Since``,
    ``Authorization``) are sent to
    ``url``'s origin only (redirects to any other origin are refused before a connection is made);
    200, 304 and 404 are answers, any other status is a ``NetworkError``."""
    for key, value in (headers or {}).items():
        if not value.isprintable() or not key.replace("-", "").isalnum():
            # A CR/LF in a header (an ETag echoed from a cache file, a token from the environment)
            # would split the request; name the header only, never its value (it may be a secret).
            raise NetworkError(f"refusing to fetch {_printable(url)}: header {key!r} holds a control "
                               "character")
    status, body, final, kept = _request(url, timeout=timeout, max_bytes=max_bytes,
                                         max_redirects=max_redirects, headers=headers,
                                         answers=frozenset({200, 304, 404}))
    return HttpAnswer(url=url, final_url=final, status=status, body=body, etag=kept.get("etag"),
                      last_modified=kept.get("last-modified"), cache_control=kept.get("cache-control"))


def fetch_bytes(
    url: str,
    *,
    timeout: float = LIMITS.fetch_timeout,
    max_bytes: int = LIMITS.fetch_bytes,
    max_redirects: int = MAX_REDIRECTS,
) -> bytes:
    """GET ``url`` into memory under the rules of this module's docstring.

    Raises ``NetworkError`` (refused URL, connection failure, timeout, status other than 200, off-origin
    redirect, too many redirects) or ``InputTooLargeError`` (over ``max_bytes``), each naming the URL.
    """
    return _get(url, timeout=timeout, max_bytes=max_bytes, max_redirects=max_redirects)[0]


class FetchedMaterial(Record):
    """One fetched document, written where the bundle loader can read it."""

    url: str
    final_url: str
    path: Path
    sha256: Digest
    size: int

    def to_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "final_url": self.final_url,
            "sha256": str(self.sha256),
            "bytes": self.size,
            "file": self.path.name,
        }


def bundle_suffix(data: bytes) -> str:
    """``.json`` when the body is one JSON document (pretty-printed or not), else ``.jsonl``.

    The parse here only chooses the suffix; ``load_bundles`` parses again under its own caps.
    """
    try:
        parse_json(data, what="fetched document", max_depth=LIMITS.json_depth)
    except Exception:  # noqa: BLE001 - any failure: not one document; the loader reports it
        lines = [ln for ln in data.split(b"\n") if ln.strip()]
        return ".jsonl" if len(lines) > 1 else ".json"
    return ".json"


def _write_private(dest_dir: Path, name: str, data: bytes) -> Path:
    path = dest_dir / name
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                 | getattr(os, "O_CLOEXEC", 0), 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


def declared_urls(metadata: str | os.PathLike[str]) -> list[tuple[str, str]]:
    """What ``--fetch`` fetches, as ``(kind, url)``: the binary's signature bundle the metadata
    declares (RFC §3.2.2 ``trust.integrity.signature.bundle``) and its provenance
    (``trust.provenance.url``), once each. ``UsageError`` when it declares neither: the caller asked
    to fetch and there is nothing to fetch (fail closed)."""
    claims = load_metadata(metadata).claims
    found: list[tuple[str, str]] = []
    if claims.signature is not None and claims.signature.bundle:
        found.append(("signature", claims.signature.bundle))
    if claims.provenance is not None and claims.provenance.url \
            and claims.provenance.url not in [u for _, u in found]:
        found.append(("provenance", claims.provenance.url))
    if not found:
        raise UsageError(
            "--fetch was given but the metadata declares no trust.provenance.url and no "
            "trust.integrity.signature.bundle: nothing to fetch (drop --fetch, or pass the material "
            "with --bundle)",
            path=os.fspath(metadata),
        )
    return found


def fetch_provenance(
    metadata: str | os.PathLike[str],
    dest_dir: str | os.PathLike[str],
    *,
    timeout: float = LIMITS.fetch_timeout,
    max_bytes: int = LIMITS.fetch_bytes,
) -> list[FetchedMaterial]:
    """Fetch what the metadata declares (``declared_urls``: its signature bundle, its provenance) into
    ``dest_dir``, one bundle file each (``fetched-signature.json``, ``fetched-provenance.json``).

    Pass each ``FetchedMaterial.path`` to ``Evidence(bundles=...)``; the material is untrusted. Each
    URL has its own deadline; any failure fails the whole fetch (the caller asked for all of it).
    """
    out: list[FetchedMaterial] = []
    for kind, url in declared_urls(metadata):
        data, final = _get(url, timeout=timeout, max_bytes=max_bytes, max_redirects=MAX_REDIRECTS)
        path = _write_private(Path(dest_dir), f"fetched-{kind}" + bundle_suffix(data), data)
        out.append(FetchedMaterial(url=url, final_url=final, path=path, sha256=hash_bytes(data),
                                   size=len(data)))
    return out


@contextmanager
def fetched_provenance(
    metadata: str | os.PathLike[str],
    *,
    timeout: float = LIMITS.fetch_timeout,
    max_bytes: int = LIMITS.fetch_bytes,
) -> Iterator[list[FetchedMaterial]]:
    """``fetch_provenance`` into a private temporary directory (0700) removed on exit."""
    with tempfile.TemporaryDirectory(prefix="atip-trust-fetch-") as tmp:
        os.chmod(tmp, 0o700)  # mkdtemp makes it 0700 already; say so whatever the umask
        yield fetch_provenance(metadata, tmp, timeout=timeout, max_bytes=max_bytes)


# Public API: the fetch itself and its result. check_url, redirect_target, is_loopback, bundle_suffix
# and declared_urls are importable for tests and callers who want the same rules, but not re-exported.
__all__ = [
    "FetchedMaterial",
    "HttpAnswer",
    "check_url",
    "fetch_bytes",
    "fetch_conditional",
    "fetch_provenance",
    "fetched_provenance",
]
