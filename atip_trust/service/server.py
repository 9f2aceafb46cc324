"""The sockets of ``atip-trust serve``: the standard library's HTTP server (``http.server``, no
hand-written parser) on a Unix socket and, when asked, on loopback TCP, with the checks a local
decision service needs (docs/serve.md, "Security"):

* Unix socket: created mode 0600 in a private folder, and every connection's peer credentials
  (``SO_PEERCRED``) must name this process's user;
* TCP: loopback addresses only, refused at start otherwise; every request carries the bearer token read
  from a 0600 file (compared in constant time); tokens are never read from the URL;
* both: the ``Host`` header must be a loopback name (DNS rebinding), a request with an ``Origin``
  (a browser's) is refused and no CORS header is ever sent; bodies need a ``Content-Length`` within the
  cap (no chunked bodies); each connection has a deadline for sending its request; a request is read
  and authenticated before it may take one of the ``max_connections`` decision slots, so connections
  that send nothing (or no token) never hold a slot: they are bounded on their own (``waiting_limit``,
  the oldest cut when a new one arrives) and cut at the deadline. A request that finds no slot within
  its deadline is answered 503, and on a hook path the agent's deny object (never a bare error);
* every request read is answered, also while stopping: the sockets stop accepting, the requests in
  flight are decided and answered, then the process exits.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
import socket
import stat
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler
from socketserver import TCPServer, ThreadingMixIn, UnixStreamServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from atip_trust.agents.formats import render_error
from atip_trust.errors import UsageError
from atip_trust.service.app import Response, Service

#: Query parameters that look like credentials: refused, so a token never ends up in a URL or a log.
_CREDENTIAL_PARAMS = frozenset({"token", "access_token", "apikey", "api_key", "key", "password", "auth"})
_LOOPBACK_NAMES = frozenset({"localhost", "localhost."})


def loopback_host(value: str) -> bool:
    """``Host`` names this machine's loopback: localhost, 127.0.0.0/8 or ::1, with an optional port."""
    host = value.strip().lower()
    if host.startswith("["):
        host = host[1:].partition("]")[0]
    elif host.count(":") == 1:
        host = host.partition(":")[0]
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def read_token(path: str) -> str:
    """The bearer token in ``path``: a regular file of this user (or root), mode 0600 or stricter."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        raise UsageError(f"cannot read the token file {path}: {err.strerror}") from err
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"the token file {path} is not a regular file")
        if st.st_mode & 0o077:
            raise UsageError(f"the token file {path} is mode {stat.S_IMODE(st.st_mode):o}: expected 600 "
                             "(readable by its owner only)")
        if st.st_uid not in (os.getuid(), 0):
            raise UsageError(f"the token file {path} belongs to uid {st.st_uid}, not to you")
        token = os.read(fd, 4097).decode("utf-8", "replace").strip()
    finally:
        os.close(fd)
    if len(token) < 16 or len(token) > 4096:
        raise UsageError(f"the token in {path} must be 16 to 4096 characters")
    return token


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = 1 << 16  # headers and body leave in one write (no delayed-ACK stall between them)
    server: Any  # _Unix or _Tcp (their shared settings below)
    timeout = 5.0  # each read; the whole request also has server.request_deadline

    def setup(self) -> None:
        super().setup()
        self._timer: threading.Timer | None = None
        self._arm()

    def _arm(self) -> None:
        """Cut the connection unless a whole request arrives within the deadline (slow senders)."""
        self._disarm()
        self._armed_at = time.monotonic()
        self._timer = threading.Timer(self.server.request_deadline, self._cut)
        self._timer.daemon = True
        self._timer.start()

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _cut(self) -> None:
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def finish(self) -> None:
        self._disarm()
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        if self.server.verbose:
            sys.__stderr__.write("atip-trust serve: " + (format % args) + "\n")  # type: ignore[union-attr]

    def do_GET(self) -> None:  # noqa: N802 - http.server's names
        self._serve()

    def do_POST(self) -> None:  # noqa: N802
        self._serve()

    def _serve(self) -> None:
        started = time.monotonic()
        refusal = self._refusal()
        if refusal is not None:
            self.close_connection = True
            self._send(refusal, started)
            return
        # Authenticated: no longer one of the waiting connections a newcomer may cut (its body is still
        # bounded by the deadline and the size cap).
        self.server.leave_waiting(self.connection)
        body = self._body()
        if isinstance(body, Response):
            self.close_connection = True
            self._send(body, started)
            return
        self._disarm()
        # Read and authenticated: only now may it wait for a decision slot, for what is left of its
        # deadline (a flood of idle or token-less connections never holds one).
        left = self.server.request_deadline - (time.monotonic() - self._armed_at)
        if not self.server.slots.acquire(timeout=max(left, 0.0)):
            self.close_connection = True
            self._send(Response(503, {"error": "the service is busy: no decision slot within the deadline"},
                                headers={"Retry-After": "1"}), started)
            return
        try:
            parts = urlsplit(self.path)
            query = dict(parse_qsl(parts.query))
            headers = {k.lower(): v for k, v in self.headers.items()}
            self._send(self.server.service.handle(self.command, parts.path, query, headers, body), started)
        finally:
            self.server.slots.release()
        self.server.enter_waiting(self.connection)  # kept alive: waiting for its next request again
        self._arm()

    def _refusal(self) -> Response | None:
        if not self.server.peer_ok(self.connection):
            return Response(403, {"error": "only the user who started the service may use it"})
        if not self.path.startswith("/"):
            # The absolute form (http://host/...) names a host of its own, which overrides Host (RFC 9112
            # section 3.2.2): a loopback Host would not vouch for it. Only origin-form paths are served.
            return Response(400, {"error": f"expected a request target of the form /path, actual {self.path[:100]!r}"})
        hosts = self.headers.get_all("Host") or []
        host = hosts[0] if len(hosts) == 1 else None  # two Host fields: 400 in RFC 9112 section 3.2
        if host is None or not loopback_host(host):
            return Response(421, {"error": f"the Host header must name a loopback host, actual {host!r}"})
        if self.headers.get("Origin") is not None:
            return Response(403, {"error": "requests from web pages (an Origin header) are refused"})
        if _CREDENTIAL_PARAMS & {k.lower() for k, _ in parse_qsl(urlsplit(self.path).query)}:
            return Response(400, {"error": "credentials go in the Authorization header, never in the URL"})
        token = self.server.token
        if token is not None:
            given = self.headers.get("Authorization", "")
            scheme, _, value = given.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), token.encode()):
                return Response(401, {"error": "a valid bearer token is required"},
                                headers={"WWW-Authenticate": 'Bearer realm="atip-trust"'})
        return None

    def _body(self) -> bytes | Response:
        if self.headers.get("Transfer-Encoding") is not None:
            return Response(411, {"error": "send a Content-Length, not a chunked body"})
        given = self.headers.get_all("Content-Length") or []
        if not given and self.command != "GET":
            return Response(411, {"error": "a Content-Length is required"})
        length_text = given[0].strip() if given else "0"
        # One field of ASCII digits (RFC 9112 section 6.3): two fields, or "+2" and "0_2" that int()
        # accepts, are where a proxy and this service could disagree on where the request ends.
        if len(given) > 1 or not (length_text.isascii() and length_text.isdigit()):
            return Response(400, {"error": f"expected one Content-Length of digits, actual {given!r}"})
        length = int(length_text)
        if length < 0 or length > self.server.max_request_bytes:
            return Response(413, {"error": f"the body may be at most {self.server.max_request_bytes} bytes, "
                                           f"actual {length}"})
        data = self.rfile.read(length) if length else b""
        if len(data) != length:
            return Response(400, {"error": "the body ended before its Content-Length"})
        return data

    def _hook_answer(self, response: Response) -> Response:
        """An http hook (Claude Code) reads any answer but a 2xx as a non-blocking error and runs the
        line unless its settings say ``onFailure: block``: so on a hook path (not the thin client's
        ``?form=command``, which decides in-process on any error) every refusal — size, Host, Origin,
        token, an unknown agent — is answered as the agent's deny object (docs/serve.md)."""
        parts = urlsplit(self.path)
        if response.status == 200 or not parts.path.startswith("/v1/hooks/") \
                or dict(parse_qsl(parts.query)).get("form") == "command":
            return response
        try:
            reason = json.loads(response.body).get("error") or ""
        except (ValueError, AttributeError):
            reason = ""
        agent = parts.path[len("/v1/hooks/"):]
        denial = render_error(agent, f"the service refused the request ({response.status}): {reason}")
        return Response(200, denial.stdout, "application/json")

    def _send(self, response: Response, started: float) -> None:
        response = self._hook_answer(response)
        try:
            self.send_response(response.status)
            self.send_header("Content-Type", response.content_type)
            self.send_header("Content-Length", str(len(response.body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            for name, value in response.headers.items():
                self.send_header(name, value)
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(response.body)
            self.wfile.flush()
        except OSError:
            self.close_connection = True  # the client left: its answer was decided (and audited)
        self.server.service.metrics.answered(response.status, time.monotonic() - started)


class _Settings:
    """What both servers share: the service, the limits and the checks."""

    service: Service
    token: str | None = None
    verbose = False
    max_request_bytes = 1 << 20
    request_deadline = 10.0
    request_queue_size = 128  # listen backlog: a burst of hooks connects at once
    daemon_threads = False  # server_close waits for every request in flight: each is answered
    block_on_close = True

    def setup_limits(self, max_connections: int) -> None:
        self.slots = threading.BoundedSemaphore(max_connections)
        # Connections not yet holding a read, authenticated request: bounded apart from the slots, and
        # a new one cuts the oldest, so a flood cannot keep a real client from being read at all.
        self.waiting_limit = 4 * max_connections
        self._waiting: dict[socket.socket, None] = {}  # insertion order: the oldest first
        self._waiting_lock = threading.Lock()

    def peer_ok(self, connection: socket.socket) -> bool:
        return True

    def enter_waiting(self, connection: socket.socket) -> None:
        with self._waiting_lock:
            self._waiting[connection] = None
            oldest = next(iter(self._waiting)) if len(self._waiting) > self.waiting_limit else None
            if oldest is not None:
                del self._waiting[oldest]
        if oldest is not None:
            try:  # its thread reads the end of the stream and leaves
                oldest.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def leave_waiting(self, connection: socket.socket) -> None:
        with self._waiting_lock:
            self._waiting.pop(connection, None)

    def process_request(self, request: Any, client_address: Any) -> None:
        self.enter_waiting(request)  # in the accepting thread: the order of arrival is the order of age
        super().process_request(request, client_address)  # type: ignore[misc]

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)  # type: ignore[misc]
        finally:
            self.leave_waiting(request)


class _Unix(_Settings, ThreadingMixIn, UnixStreamServer):
    def peer_ok(self, connection: socket.socket) -> bool:
        """``SO_PEERCRED``: the connecting process runs as this user (the socket's mode is the first
        fence, this the second: a mode changed by hand does not open the service to others)."""
        try:
            creds = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        except (OSError, AttributeError):
            return False
        _pid, uid, _gid = struct.unpack("3i", creds)
        return bool(uid == os.getuid())


class _Tcp(_Settings, ThreadingMixIn, TCPServer):
    allow_reuse_address = True

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, address = super().get_request()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # answers are small and final
        return conn, address


def default_socket() -> str:
    """``$XDG_RUNTIME_DIR/atip-trust/serve.sock`` (the per-user runtime folder), else a private folder
    under /tmp named by the user id."""
    base = os.environ.get("XDG_RUNTIME_DIR") or f"/tmp/atip-trust-{os.getuid()}"
    return os.path.join(base, "atip-trust", "serve.sock") if os.environ.get("XDG_RUNTIME_DIR") \
        else os.path.join(base, "serve.sock")


def _private_parent(path: str) -> None:
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, mode=0o700, exist_ok=True)
    st = os.lstat(parent)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise UsageError(f"the socket's folder {parent} must be a folder of yours that others cannot write")


def _clear_stale(path: str) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise UsageError(f"{path} exists and is not a socket: not replaced")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError:
        os.unlink(path)  # nobody listens: a service that died left it
        return
    finally:
        probe.close()
    raise UsageError(f"another service already listens on {path}")


def unix_server(path: str, service: Service) -> _Unix:
    _private_parent(path)
    _clear_stale(path)
    old = os.umask(0o177)  # created 0600: no moment where others could connect
    try:
        server = _Unix(path, _Handler)
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    server.service = service
    return server


def remove_socket(path: str) -> None:
    """Remove the socket file this service made (never another kind of file)."""
    try:
        if stat.S_ISSOCK(os.lstat(path).st_mode):
            os.unlink(path)
    except OSError:
        pass


def parse_http_address(text: str) -> tuple[str, int]:
    host, sep, port_text = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not (port_text.isascii() and port_text.isdigit()) or int(port_text) > 65535:
        raise UsageError(f"--http expects HOST:PORT on loopback (127.0.0.1:8787), actual {text!r}")
    if host == "localhost":
        host = "127.0.0.1"
    try:
        loopback = bool(ipaddress.ip_address(host).is_loopback)
    except ValueError:
        loopback = False
    if not loopback or ipaddress.ip_address(host).version != 4:
        raise UsageError(f"--http serves loopback IPv4 only (127.0.0.0/8), not {host!r}: a decision service "
                         "must not be reachable from another machine")
    return host, int(port_text)


def tcp_server(address: tuple[str, int], service: Service, token: str) -> _Tcp:
    server = _Tcp(address, _Handler)
    server.service, server.token = service, token
    return server


__all__ = ["default_socket", "loopback_host", "parse_http_address", "read_token", "remove_socket", "tcp_server",
           "unix_server"]
