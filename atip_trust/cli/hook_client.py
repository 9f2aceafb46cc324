"""``atip-trust hook AGENT --via-service``: the command hook as a thin client of ``atip-trust serve``.

The agent starts this process for every shell line, so it loads almost nothing (``_socket``, not
``socket``, which pulls in ``enum``; no ``json``, no ``http.client``): it reads the hook input, sends it
with this hook's own flags, working folder and PATH to the service's Unix socket, and replays the
service's answer — standard output, standard error and exit status — which is the answer the CLI
itself computes for those flags (service/app.py). The request and the answer are HTTP/1.1 with the
words hex-encoded in headers, written and read here by hand only because the standard library's client
costs more start-up than the whole decision (docs/serve.md, "Command hooks").

When the service cannot be reached, or answers anything but a well-formed 200, this process decides
in-process, exactly as ``atip-trust hook`` without the flag would: never "no opinion".
"""

from __future__ import annotations

import io
import os
import sys

import _socket

from atip_trust.cli._deps import cli_main

_CAP = 1024 * 1024 + 1  # the hook input cap (agents/formats.py STDIN_CAP) plus one: larger is refused
#: The agents' hook formats (agents/formats.py AGENTS, not imported: it would load the record machinery;
#: tests/service/test_serve.py checks the two lists agree).
AGENTS = ("claude-code", "codex", "gemini", "copilot", "cursor")


def wanted(argv: list[str]) -> bool:
    """``hook AGENT … --via-service`` (not ``hook install … --via-service``, which writes that command)."""
    return len(argv) > 1 and argv[0] == "hook" and argv[1] in AGENTS and "--via-service" in argv


def _split(argv: list[str]) -> tuple[str, list[str], str | None]:
    """(agent, the hook flags to forward, the socket named by --socket)."""
    agent = argv[1] if len(argv) > 1 else ""
    flags: list[str] = []
    sock: str | None = None
    words = iter(argv[2:])
    for word in words:
        if word == "--via-service":
            continue
        if word == "--socket":
            sock = next(words, None)
        elif word.startswith("--socket="):
            sock = word.partition("=")[2]
        else:
            flags.append(word)
    return agent, flags, sock


def default_socket() -> str:
    """The socket ``serve`` listens on by default (service/server.py ``default_socket``)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(runtime, "atip-trust", "serve.sock")
    return os.path.join(f"/tmp/atip-trust-{os.getuid()}", "serve.sock")


def _hex(text: str) -> str:
    return text.encode("utf-8", "surrogateescape").hex()


def _ask(path: str, agent: str, flags: list[str], data: bytes) -> tuple[bytes, str, int] | None:
    """The service's (stdout, stderr, exit status), or None when it gave no well-formed answer."""
    head = (f"POST /v1/hooks/{agent}?form=command HTTP/1.1\r\nHost: localhost\r\n"
            f"Content-Length: {len(data)}\r\nConnection: close\r\n"
            f"X-Atip-Argv: {_hex(chr(0).join(flags))}\r\nX-Atip-Cwd: {_hex(os.getcwd())}\r\n"
            f"X-Atip-Path: {_hex(os.environ.get('PATH', ''))}\r\n\r\n")
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        s.settimeout(60.0)
        s.connect(path)
        s.sendall(head.encode("ascii") + data)
        chunks = []
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        s.close()
    return _parse(b"".join(chunks))


def _parse(raw: bytes) -> tuple[bytes, str, int] | None:
    head, sep, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    if not sep or not lines[0].startswith("HTTP/1.1 200 "):
        return None
    fields = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if colon:
            fields[name.strip().lower()] = value.strip()
    try:
        length, code = int(fields["content-length"]), int(fields["x-atip-exit-code"])
        err = bytes.fromhex(fields.get("x-atip-stderr", "")).decode("utf-8", "replace")
    except (KeyError, ValueError):
        return None
    if len(body) != length or code not in (0, 1, 2, 3):
        return None
    return body, err, code


def main(argv: list[str]) -> int:
    """``argv``: the words after the program name, starting with ``hook``."""
    agent, flags, sock = _split(argv)
    stdin = sys.stdin.buffer if sys.stdin is not None else None
    data = stdin.read(_CAP) if stdin is not None else b""
    answer = _ask(sock or default_socket(), agent, flags, data) if len(data) < _CAP else None
    if answer is None:
        return _in_process(argv, data)
    out, err, code = answer
    sys.stdout.buffer.write(out)
    sys.stdout.flush()
    if err:
        sys.stderr.write(err)
    return code


def _in_process(argv: list[str], data: bytes) -> int:
    """The hook decided here, on the input already read (the service could not answer)."""
    sys.stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="surrogateescape")
    agent, flags, _ = _split(argv)
    words = ["hook", agent, *flags]
    sys.argv = [sys.argv[0], *words]  # --pin rebuilds the launcher from the command line
    return cli_main.main(words)


__all__ = ["AGENTS", "default_socket", "main", "wanted"]
