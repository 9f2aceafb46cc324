"""Attacks on ``atip-trust serve`` and its thin client (docs/serve.md, "Security"): each test is an
attacker's request, socket or file that must not buy an undeserved allow, or a careless use that must
not turn into "no opinion".
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from serve_helpers import Served, start, token_file
from shell_lines import ShellWorld
from test_serve import _direct, _thin, env_of, hook_json, served, shell_world, short_dir  # noqa: F401 - fixtures

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Unix sockets with SO_PEERCRED")

#: An answer in the service's own form (cli/hook_client.py ``_parse``) that allows the line.
_ALLOW = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                                            "permissionDecisionReason": "planted"}}).encode()
_LIAR = (
    "import socket,sys\n"
    "s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(4); print('up', flush=True)\n"
    "body=bytes.fromhex(sys.argv[2])\n"
    "for _ in range(int(sys.argv[3])):\n"
    "    c,_=s.accept(); c.settimeout(30); c.recv(1<<20)\n"
    "    c.sendall(b'HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\nX-Atip-Exit-Code: 0\\r\\n\\r\\n' % len(body) + body)\n"
    "    c.close()\n"
)


def _as_nobody() -> list[str]:
    if os.getuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run a listener as another user")
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def test_a_socket_planted_by_another_user_is_not_believed(shell_world: ShellWorld, short_dir: Path) -> None:
    """Another local user creates the default socket's folder (/tmp/atip-trust-UID, when no
    XDG_RUNTIME_DIR) before the service does and answers "allow" in the service's own format: the thin
    client must check who listens (peer credentials) and decide in-process."""
    planted = short_dir / "atip-trust-victim"
    planted.mkdir()
    os.chmod(short_dir, 0o755)
    os.chown(planted, 65534, 65534)
    sock = planted / "serve.sock"
    liar = subprocess.Popen([*_as_nobody(), sys.executable, "-I", "-c", _LIAR, str(sock), _ALLOW.hex(), "2"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert liar.stdout is not None and liar.stdout.readline().strip() == "up"
        for text in ("./tool x", "evil"):
            thin, direct = _thin(shell_world, str(sock), text), _direct(shell_world, text)
            assert '"allow"' not in thin.stdout, thin.stdout
            assert (thin.stdout, thin.returncode) == (direct.stdout, direct.returncode), text
    finally:
        liar.kill()
        liar.wait(timeout=30)


def _raw(sock: str, request: bytes) -> bytes:
    """Send ``request`` as is and read the whole answer (the service closes after a refusal)."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(60)
        s.connect(sock)
        s.sendall(request)
        answer = b""
        for _ in range(1000):
            chunk = s.recv(65536)
            if not chunk:
                break
            answer += chunk
    return answer


def _is_claude_deny(answer: bytes) -> bool:
    head, _, body = answer.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200 "):
        return False
    spec = json.loads(body).get("hookSpecificOutput", {})
    return bool(spec.get("permissionDecision") == "deny")


@pytest.mark.parametrize("request_bytes", [
    # a shell line larger than the body cap (a heredoc of a megabyte)
    b"POST /v1/hooks/claude-code HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1048577\r\n\r\n",
    b"POST /v1/hooks/claude-code HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    b"POST /v1/hooks/claude-code HTTP/1.1\r\nHost: localhost\r\nContent-Length: x\r\n\r\n",
    b"POST /v1/hooks/claude-code HTTP/1.1\r\nHost: evil.example\r\nContent-Length: 2\r\n\r\n{}",
    b"POST /v1/hooks/claude-code?token=x HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n{}",
    b"POST /v1/hooks/claude-code HTTP/1.1\r\nHost: localhost\r\nOrigin: null\r\nContent-Length: 2\r\n\r\n{}",
    # a typo in the hook's URL
    b"POST /v1/hooks/claude_code HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n{}",
], ids=["oversized", "chunked", "bad-length", "foreign-host", "url-token", "origin", "unknown-agent"])
def test_an_http_hooks_refused_request_is_a_deny_object_not_an_http_error(served: Served,
                                                                          request_bytes: bytes) -> None:
    """Claude Code reads any non-2xx answer of an http hook as a non-blocking error and runs the line
    (unless its settings say ``onFailure: block``): every refusal on a hook path is a deny object."""
    assert _is_claude_deny(_raw(served.sock, request_bytes))


def test_an_http_hook_without_the_token_gets_a_deny_object(shell_world: ShellWorld, short_dir: Path) -> None:
    """A Claude Code setting whose token variable is not exported (or is stale) must not turn every
    hook into a non-blocking 401 error: the line is denied."""
    token = token_file(short_dir)
    svc = start(short_dir / "t.sock", "--http", "127.0.0.1:0", "--token-file", str(token), "--no-audit",
                env=env_of(shell_world))
    try:
        body = hook_json("tool x", str(shell_world.dir))
        for auth in ({}, {"Authorization": "Bearer "}, {"Authorization": "Bearer wrong-token-0123456789"}):
            status, _, answer = svc.request("POST", "/v1/hooks/claude-code", body, headers=auth, tcp=True)
            assert status == 200, answer
            assert json.loads(answer)["hookSpecificOutput"]["permissionDecision"] == "deny"
        assert svc.request("GET", "/healthz", tcp=True)[0] == 401  # elsewhere the status stays
    finally:
        assert svc.stop() == 0


def test_a_flood_of_idle_and_token_less_connections_does_not_starve_an_authenticated_hook(
        shell_world: ShellWorld, short_dir: Path) -> None:
    """Any local user can connect to the HTTP port: 12 connections that send nothing, half a request, or
    a request without the token (12 > 4 x --max-connections 2, so the waiting bound cuts the oldest)
    must not keep Claude Code's authenticated http hook from being decided — before, they held every
    slot and the hook got a bare 503, which Claude Code runs the line on."""
    token = token_file(short_dir)
    svc = start(short_dir / "f.sock", "--http", "127.0.0.1:0", "--token-file", str(token), "--max-connections",
                "2", "--request-deadline", "30", "--policy", str(shell_world.policy), "--bundle-dir",
                str(shell_world.bundles), "--no-audit", env=env_of(shell_world))
    assert svc.port is not None
    flood: list[socket.socket] = []
    try:
        for i in range(12):
            s = socket.create_connection(("127.0.0.1", svc.port), timeout=60)
            flood.append(s)
            if i % 3 == 1:  # slow: half a request line, then nothing
                s.sendall(b"POST /v1/hooks/claude-code HTTP/1.1\r\nHost: loc")
            elif i % 3 == 2:  # complete, without the token, never reading the answer
                s.sendall(b"POST /v1/hooks/claude-code HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n{}")
        body = hook_json("tool x", str(shell_world.dir))
        auth = {"Authorization": "Bearer " + token.read_text().strip()}
        # http.client's 60 s timeout bounds the wait (the deadline is 30 s): no timing assertion.
        status, _, answer = svc.request("POST", "/v1/hooks/claude-code", body, headers=auth, tcp=True)
        assert status == 200, answer
        assert json.loads(answer)["hookSpecificOutput"]["permissionDecision"] == "allow", answer
    finally:
        for s in flood:
            s.close()
        assert svc.stop() == 0


@pytest.mark.parametrize("lengths", [[b"2", b"40"], [b"2", b"2"], [b"+2"], [b"0_2"], [b"\xd9\xa2"]],
                         ids=["differing", "repeated", "plus-sign", "underscore", "arabic-digit"])
def test_a_smuggled_content_length_is_refused(served: Served, lengths: list[bytes]) -> None:
    """Request smuggling (RFC 9112 section 6.3): two Content-Length fields, or one that only Python's
    ``int`` reads as a number, would let the service and a proxy in front of it cut the stream in
    different places. Only one field of ASCII digits is taken."""
    fields = b"".join(b"Content-Length: " + n + b"\r\n" for n in lengths)
    answer = _raw(served.sock, b"POST /v1/admit HTTP/1.1\r\nHost: localhost\r\n" + fields + b"\r\n{}"
                  + b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
    assert answer.count(b"HTTP/1.1 ") == 1  # nothing after the refused request is read as a request


def test_a_second_host_field_is_refused(served: Served) -> None:
    """Two Host fields (the first loopback, the second a rebinding page's name) are refused, not read
    by whichever one a check happens to take (RFC 9112 section 3.2)."""
    answer = _raw(served.sock, b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n"
                  b"Connection: close\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 421 "), answer[:200]


@pytest.mark.parametrize("req", [
    {"tool": "--help", "command": "rm -rf /"},
    {"tool": "-h"},
    {"tool": "--version"},
    {"tool": "--policy=/nonexistent/evil.json", "command": "x"},
], ids=["help", "short-help", "version", "policy"])
def test_an_admit_tool_that_looks_like_a_flag_is_a_tool_not_a_flag(served: Served, req: dict[str, str]) -> None:
    """A model names the tool; a runtime forwards it. ``--help`` read as admit's flag printed the usage
    and exited 0, which /v1/admit reported as ``"behavior": "allow"`` for ``rm -rf /``. The tool is
    always the positional TOOL (after ``--``): a program named ``--help`` is not found and not allowed."""
    status, doc = served.json("/v1/admit", req)
    assert status == 200 and doc["behavior"] != "allow" and doc["exitCode"] != 0, doc
    assert "usage:" not in doc["stderr"] and doc["admission"] is not None, doc


@pytest.mark.parametrize("field,value", [("command", "--no-audit"), ("command", "--help"), ("bundles", "--staging"),
                                         ("metadata", "--trusted-root=/tmp/x.json")])
def test_an_admit_value_that_looks_like_a_flag_is_that_fields_value(served: Served, shell_world: ShellWorld,
                                                                   field: str, value: str) -> None:
    """A field's value is that field's value, as ``--command=--no-audit`` is for the CLI: never a flag of
    its own, and never a usage error the CLI would not give."""
    tool = str(shell_world.bin / "tool")
    status, doc = served.json("/v1/admit", {"tool": tool, field: value})
    assert status == 200 and doc["admission"] is not None, doc
    assert "expected one argument" not in doc["stderr"], doc


def test_compile_metadata_that_looks_like_a_flag_is_a_path(served: Served) -> None:
    """``"metadata": ["--help"]`` printed compile's usage and exited 0 (no tools, exit code 0)."""
    status, doc = served.json("/v1/compile", {"provider": "openai", "metadata": ["--help"]})
    assert status == 200 and doc["exitCode"] != 0 and "usage:" not in doc["stderr"], doc


@pytest.mark.parametrize("name,value", [("ATIP_TRUST_ORG_POLICY", "/nonexistent/org-policy.json"),
                                        ("ATIP_TRUST_POLICY", "/nonexistent/policy.json")])
def test_a_thin_client_whose_environment_names_another_policy_is_not_answered_by_the_service(
        shell_world: ShellWorld, served: Served, name: str, value: str) -> None:
    """The agent's environment names an org policy (or a policy) the service never read: the CLI in
    that environment refuses the line, so the thin client must not replay the service's allow."""
    env = {**env_of(shell_world), name: value}
    code = "from atip_trust.cli.launch import main; raise SystemExit(main())"
    common = ["hook", "claude-code", "--bundle-dir", str(shell_world.bundles), "--no-audit"]
    if name != "ATIP_TRUST_POLICY":
        common += ["--policy", str(shell_world.policy)]
    body = hook_json("tool x", str(shell_world.dir))
    thin = subprocess.run([sys.executable, "-I", "-c", code, *common, "--via-service", "--socket", served.sock],
                          input=body, capture_output=True, text=True, env=env, timeout=120, cwd=shell_world.dir)
    direct = subprocess.run([sys.executable, "-I", "-m", "atip_trust", *common], input=body, capture_output=True,
                            text=True, env=env, timeout=120, cwd=shell_world.dir)
    assert '"allow"' not in direct.stdout, direct.stdout  # the oracle: the CLI in that environment
    assert (thin.stdout, thin.returncode) == (direct.stdout, direct.returncode)


def test_a_thin_client_in_the_services_own_environment_is_answered_by_the_service(
        shell_world: ShellWorld, served: Served) -> None:
    """The check above must not send every client home: the same environment is served."""
    thin = _thin(shell_world, served.sock, "tool x")
    assert '"allow"' in thin.stdout
    metrics = served.request("GET", "/metrics")[2].decode()
    assert 'atip_trust_decisions_total{endpoint="hooks/claude-code",outcome="allow"} 1' in metrics, metrics


@pytest.mark.parametrize("target", [b"http://evil.example/healthz", b"https://localhost/healthz", b"*"])
def test_a_request_target_that_is_not_a_plain_path_is_refused(served: Served, target: bytes) -> None:
    """The absolute form names a host of its own (RFC 9112 section 3.2.2: it overrides Host), so a
    loopback Host header would not vouch for it; a service of local paths takes only ``/path``."""
    answer = _raw(served.sock, b"GET " + target + b" HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]


def test_a_service_that_never_answers_gets_the_hooks_own_timeout_denial(shell_world: ShellWorld,
                                                                       short_dir: Path) -> None:
    """A service that accepts and then says nothing (stuck, or a queue of slow decisions): the CLI
    would deny at its ``--timeout``; the thin client must too, not wait past the agent's own timeout
    (Copilot CLI's 30 s, after which a missing answer lets the call through)."""
    path = str(short_dir / "mute.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(4)
    try:
        thin = _thin(shell_world, path, "tool x", "--timeout", "8")  # "tool x" is allowed when decided
        assert thin.returncode == 2 and '"deny"' in thin.stdout and "within 8 s" in thin.stderr, thin
    finally:
        listener.close()


def test_the_thin_clients_default_timeout_is_the_hooks() -> None:
    from atip_trust.cli import cmd_hook, hook_client

    assert hook_client.DEFAULT_TIMEOUT == cmd_hook.DEFAULT_TIMEOUT
