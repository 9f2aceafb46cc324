"""A real ``atip-trust serve`` process for the service tests, and a client over its Unix socket or TCP.

The service is started as the user would start it (``python -m atip_trust serve ...``), in the
foreground, and stopped with SIGTERM; its readiness is its first line on standard output, read with a
bounded wait.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

READY_WAIT = 60.0  # seconds: a bound, not a timing assertion (a loaded machine starts Python slowly)


class UnixConnection(http.client.HTTPConnection):
    """``http.client`` over a Unix socket (Host: localhost, as curl --unix-socket sends)."""

    def __init__(self, path: str, timeout: float = 60.0) -> None:
        super().__init__("localhost", timeout=timeout)
        self.socket_path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.socket_path)


class Served:
    """A running service: its socket, its HTTP port (when asked), and requests to it."""

    def __init__(self, proc: subprocess.Popen[str], sock: str, port: int | None) -> None:
        self.proc, self.sock, self.port = proc, sock, port

    def request(self, method: str, path: str, body: bytes | str | dict[str, Any] | None = None, *,
                headers: dict[str, str] | None = None, tcp: bool = False) -> tuple[int, dict[str, str], bytes]:
        if isinstance(body, dict):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode()
        conn: http.client.HTTPConnection = (http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                                            if tcp else UnixConnection(self.sock))
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
        finally:
            conn.close()

    def json(self, path: str, body: dict[str, Any] | bytes | str, **kw: Any) -> tuple[int, Any]:
        status, _, data = self.request("POST", path, body, **kw)
        return status, json.loads(data) if data.strip() else None

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
            raise AssertionError("serve did not stop within 60 s of SIGTERM") from None


def start(sock: Path, *flags: str, env: dict[str, str] | None = None, python: str = sys.executable) -> Served:
    """Start ``atip-trust serve --socket SOCK FLAGS`` and wait for its "listening" lines."""
    proc = subprocess.Popen([python, "-I", "-m", "atip_trust", "serve", "--socket", str(sock), *flags],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    assert proc.stdout is not None
    want = 2 if "--http" in flags else 1
    fd, seen = proc.stdout.fileno(), b""
    while seen.count(b"\n") < want:  # raw reads: a buffered reader would hide a second line from select
        ready, _, _ = select.select([fd], [], [], READY_WAIT)
        chunk = os.read(fd, 4096) if ready else b""
        if not chunk:
            proc.kill()
            _, err = proc.communicate(timeout=10)
            raise AssertionError(f"serve did not start: {err}")
        seen += chunk
    lines = seen.decode().splitlines()
    port = None
    for line in lines:
        if "http://" in line:
            port = int(line.rsplit(":", 1)[1])
    return Served(proc, str(sock), port)


@contextlib.contextmanager
def serving(*flags: str, env: dict[str, str] | None = None) -> Iterator[Served]:
    """A service on a socket in a short private folder (a socket path may hold 108 bytes at most),
    stopped and its folder removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="ats", dir="/tmp"))
    served = start(folder / "s.sock", *flags, env=env)
    try:
        yield served
    finally:
        served.stop()
        shutil.rmtree(folder, ignore_errors=True)


def token_file(folder: Path, token: str = "t0ken-for-the-tests-0123456789") -> Path:
    path = folder / "token"
    path.write_text(token + "\n")
    os.chmod(path, 0o600)
    return path


__all__ = ["Served", "UnixConnection", "serving", "start", "token_file"]
