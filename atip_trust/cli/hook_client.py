"""``atip-trust hook AGENT --via-service``: the command hook as a thin client of ``atip-trust serve``.

The agent starts this process for every shell line, so it loads almost nothing (``_socket``, not
``socket``, which pulls in ``enum``; no ``json``, no ``http.client``): it reads the hook input, sends it
with this hook's own flags, working folder and PATH to the service's Unix socket, and replays the
service's answer — standard output, standard error and exit status — which is the answer the CLI
itself computes for those flags (service/app.py). The request and the answer are HTTP/1.1 with the
words hex-encoded in headers, written and read here by hand only because the standard library's client
costs more start-up than the whole decision (docs/serve.md, "Command hooks").

When the service cannot be reached, runs as another user, or answers anything but a well-formed 200,
this process decides in-process, exactly as ``atip-trust hook`` without the flag would: never "no opinion"
(``main`` returns None and cli/launch.py runs that hook; this module imports no command line of its own).
"""

from __future__ import annotations

import _socket
import io
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from atip_trust.agents.formats import HookAnswer

_CAP = 1024 * 1024 + 1  # the hook input cap (agents/formats.py STDIN_CAP) plus one: larger is refused
DEFAULT_TIMEOUT = 25  # seconds: cmd_hook.py's (not imported: the thin path loads almost nothing)


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


#: Environment variables a decision reads besides PATH (which is sent): an org policy or policy named
#: by the environment, CI (an ask is a deny there), the state, cache and agent-tools folders. The
#: service answers only a client whose values equal its own; any other is decided here, as the CLI
#: in that environment would decide it.
_DECISION_ENV = ("CI", "HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME",
                 "XDG_CONFIG_DIRS", "XDG_DATA_DIRS", "CODEX_HOME")


def decision_env(environ: dict[str, str] | os._Environ[str]) -> str:
    """The decision's environment (``_DECISION_ENV`` and every ``ATIP_*`` name), as one comparable text."""
    names = sorted(n for n in environ if n in _DECISION_ENV or n.startswith("ATIP_"))
    return "\0".join(f"{n}={environ[n]}" for n in names)


def _hex(text: str) -> str:
    return text.encode("utf-8", "surrogateescape").hex()


class _Late(Exception):
    """The service took the whole ``--timeout``."""


def _timeout(flags: list[str]) -> float:
    """The hook's ``--timeout`` (cmd_hook.py ``DEFAULT_TIMEOUT`` when not given; 0: none)."""
    value = next((flags[i + 1] for i, w in enumerate(flags[:-1]) if w == "--timeout"), None)
    value = next((w.partition("=")[2] for w in flags if w.startswith("--timeout=")), value)
    try:
        return float(value) if value is not None else float(DEFAULT_TIMEOUT)
    except ValueError:
        return float(DEFAULT_TIMEOUT)


def _ask(path: str, agent: str, flags: list[str], data: bytes) -> tuple[bytes, str, int] | None:
    """The service's (stdout, stderr, exit status), or None when it gave no well-formed answer.
    ``_Late`` when it gave none within the hook's ``--timeout``: the CLI would have denied by then,
    and an agent's own timeout (Copilot CLI's 30 s) lets a call without an answer through."""
    wait = _timeout(flags)
    deadline = time.monotonic() + (wait if wait > 0 else 60.0)
    head = (f"POST /v1/hooks/{agent}?form=command HTTP/1.1\r\nHost: localhost\r\n"
            f"Content-Length: {len(data)}\r\nConnection: close\r\n"
            f"X-Atip-Argv: {_hex(chr(0).join(flags))}\r\nX-Atip-Cwd: {_hex(os.getcwd())}\r\n"
            f"X-Atip-Path: {_hex(os.environ.get('PATH', ''))}\r\nX-Atip-Env: {_hex(decision_env(os.environ))}\r\n\r\n")
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        s.settimeout(max(deadline - time.monotonic(), 0.001))
        s.connect(path)
        if not _ours(s, path):
            return None
        s.sendall(head.encode("ascii") + data)
        chunks = []
        while True:
            s.settimeout(max(deadline - time.monotonic(), 0.001))
            chunk = s.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    except TimeoutError as err:
        if wait > 0:
            raise _Late() from err
        return None
    except OSError:
        return None
    finally:
        s.close()
    return _parse(b"".join(chunks))


def _ours(s: _socket.socket, path: str) -> bool:
    """The process listening on ``path`` runs as this user. Another local user may create the default
    socket's folder (/tmp/atip-trust-UID) first, or a ``--socket`` may be a symlink to their socket:
    their answer is not believed (and the hook input is not sent to them). Linux names the listener
    (``SO_PEERCRED``: pid, uid, gid); elsewhere the socket file must be this user's, in a folder of theirs
    that others cannot write."""
    uid = os.getuid()
    peercred = getattr(_socket, "SO_PEERCRED", None)
    if peercred is not None:
        creds = s.getsockopt(_socket.SOL_SOCKET, peercred, 12)
        return int.from_bytes(creds[4:8], sys.byteorder) == uid
    st, parent = os.lstat(path), os.lstat(os.path.dirname(os.path.abspath(path)))
    return st.st_uid == uid and parent.st_uid == uid and not parent.st_mode & 0o022 \
        and st.st_mode & 0o170000 == 0o140000


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


def main(argv: list[str], deny: Callable[[str, str], HookAnswer]) -> int | None:
    """``argv``: the words after the program name, starting with ``hook``. The exit status of the answer
    replayed, or None when the service gave none: standard input then holds the input already read and
    ``sys.argv`` the hook's command line without the client's flags, for the caller to decide in-process.
    ``deny(agent, message)``: the agent's denial when the service answered too late (agents/formats.py
    ``render_error``, given by the caller: loading the hook formats here would cost every thin call)."""
    agent, flags, sock = _split(argv)
    stdin = sys.stdin.buffer if sys.stdin is not None else None
    data = stdin.read(_CAP) if stdin is not None else b""
    try:
        answer = _ask(sock or default_socket(), agent, flags, data) if len(data) < _CAP else None
    except _Late:
        late = deny(agent, f"no answer within {_timeout(flags):g} s (--timeout)")
        answer = (late.stdout.encode(), late.stderr, late.exit_code)
    if answer is None:
        _in_process(argv, data)
        return None
    out, err, code = answer
    sys.stdout.buffer.write(out)
    sys.stdout.flush()
    if err:
        sys.stderr.write(err)
    return code


def _in_process(argv: list[str], data: bytes) -> None:
    """Ready the hook to be decided here, on the input already read (the service could not answer)."""
    sys.stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="surrogateescape")
    agent, flags, _ = _split(argv)
    sys.argv = [sys.argv[0], "hook", agent, *flags]  # --pin rebuilds the launcher from the command line


__all__ = ["default_socket", "main"]
