"""``atip-trust serve``: the same verdicts as the CLI, always fresh, and a service nobody else can use.

A real service process (tests/service/serve_helpers.py) answers over its Unix socket and loopback HTTP;
the CLI's answers for the same input are the oracle (in-process ``cli()``: the same parser and catch
point as the console script).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from atip_trust.cli.main import main

from serve_helpers import Served, start, token_file
from shell_lines import ShellWorld, line, make_world
from verify_helpers import cli, run_cli

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Unix sockets with SO_PEERCRED")


def hook_json(command: str, cwd: str) -> str:
    return json.dumps({"session_id": "s", "transcript_path": "/tmp/t.jsonl", "cwd": cwd,
                       "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": {"command": command}, "tool_use_id": "toolu_1"})


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A folder with a short path (a Unix socket's path is limited to 108 bytes)."""
    folder = Path(tempfile.mkdtemp(prefix="ats", dir="/tmp"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def shell_world(tmp_path_factory: pytest.TempPathFactory) -> ShellWorld:
    return make_world(tmp_path_factory.mktemp("serve-world"))


def _bundle_dir(world: ShellWorld) -> str:
    return str(world.bundles)


def env_of(world: ShellWorld) -> dict[str, str]:
    """This test run's environment (its private verdict cache and agent-tools tree) with the world's."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith(("LD_", "PYTHON"))}, **world.env}


@pytest.fixture
def served(shell_world: ShellWorld, short_dir: Path) -> Iterator[Served]:
    svc = start(short_dir / "s.sock", "--policy", str(shell_world.policy), "--bundle-dir",
                _bundle_dir(shell_world), "--no-audit", env=env_of(shell_world))
    try:
        yield svc
    finally:
        assert svc.stop() == 0


def test_service_answers_the_oracle_lines_as_the_cli_does(shell_world: ShellWorld, served: Served,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The differential: 150 hostile lines (fixtures/shell_lines.py), each answered by the service's http
    hook and by the CLI, byte for byte the same answer."""
    rng = random.Random(38)
    for key, value in shell_world.env.items():
        monkeypatch.setenv(key, value)
    differ = []
    behaviours: set[str] = set()
    for _ in range(150):
        text = line(rng)
        body = hook_json(text, str(shell_world.dir))
        status, _, service_out = served.request("POST", "/v1/hooks/claude-code", body)
        assert status == 200
        out, err = io.StringIO(), io.StringIO()
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(body.encode())))
        monkeypatch.setattr(sys, "argv", ["atip-trust", "hook", "claude-code"])
        with redirect_stdout(out), redirect_stderr(err):
            main(["hook", "claude-code", "--policy", str(shell_world.policy), "--bundle-dir",
                  _bundle_dir(shell_world), "--no-audit"])
        if service_out.decode() != out.getvalue():
            differ.append((text, service_out.decode(), out.getvalue()))
        answer = json.loads(out.getvalue()) if out.getvalue().strip() else {}
        behaviours.add(answer.get("hookSpecificOutput", {}).get("permissionDecision", "none"))
    assert not differ, differ[:3]
    assert "allow" in behaviours and behaviours & {"ask", "deny"}  # both kinds of answer: the comparison bites


def _thin(world: ShellWorld, sock: str, command: str, *extra: str) -> subprocess.CompletedProcess[str]:
    code = "from atip_trust.cli.launch import main; raise SystemExit(main())"
    return subprocess.run([sys.executable, "-I", "-c", code, "hook", "claude-code", "--via-service",
                           "--socket", sock, "--policy", str(world.policy), "--bundle-dir", _bundle_dir(world),
                           "--no-audit", *extra],
                          input=hook_json(command, str(world.dir)), capture_output=True, text=True,
                          env=env_of(world), timeout=120, cwd=world.dir)


def _direct(world: ShellWorld, command: str) -> subprocess.CompletedProcess[str]:
    return run_cli(["hook", "claude-code", "--policy", str(world.policy), "--bundle-dir", _bundle_dir(world),
                    "--no-audit"], input=hook_json(command, str(world.dir)), env=env_of(world), timeout=120,
                   cwd=world.dir)  # in-process, as a fresh child would run it


THIN_LINES = ("tool x", "evil", "ls && tool y", "./tool x", "./gh pr", "tool $(evil)")


def test_via_service_replays_the_clis_answer_and_exit_status(shell_world: ShellWorld, served: Served) -> None:
    for text in THIN_LINES:
        thin, direct = _thin(shell_world, served.sock, text), _direct(shell_world, text)
        assert (thin.stdout, thin.returncode) == (direct.stdout, direct.returncode), text


def test_via_service_decides_in_process_when_no_service_listens(shell_world: ShellWorld, short_dir: Path) -> None:
    """Never "no opinion" because the service is down: the hook decides itself."""
    for text in ("./tool x", "tool x"):
        thin, direct = _thin(shell_world, str(short_dir / "absent.sock"), text), _direct(shell_world, text)
        assert (thin.stdout, thin.returncode) == (direct.stdout, direct.returncode), text
    assert '"deny"' in _thin(shell_world, str(short_dir / "absent.sock"), "./tool x").stdout


def test_via_service_decides_in_process_when_the_socket_answers_garbage(shell_world: ShellWorld,
                                                                      short_dir: Path) -> None:
    """A socket that answers something else (an attacker's listener, a half-dead service) is not
    believed: a 200 without the service's headers is decided in-process."""
    path = str(short_dir / "liar.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(4)

    def lie() -> None:
        for _ in range(2):
            conn, _ = listener.accept()
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")  # "no opinion", no exit code
            conn.close()

    t = threading.Thread(target=lie, daemon=True)
    t.start()
    try:
        thin = _thin(shell_world, path, "./tool x")
        assert thin.returncode == 0 and '"deny"' in thin.stdout
    finally:
        listener.close()


def test_a_changed_tool_flips_the_next_answer(shell_world: ShellWorld, served: Served) -> None:
    """Freshness: the signed ``tool`` is allowed; its bytes replaced by unsigned ones, the very next
    request denies (the service re-checks the bytes as the CLI does)."""
    tool = shell_world.bin / "tool"
    original = tool.read_bytes()
    body = hook_json("tool x", str(shell_world.dir))
    try:
        assert b'"allow"' in served.request("POST", "/v1/hooks/claude-code", body)[2]
        tool.write_bytes(original + b"\n# rebuilt, never signed\n")
        assert b'"allow"' not in served.request("POST", "/v1/hooks/claude-code", body)[2]
    finally:
        tool.write_bytes(original)
    assert b'"allow"' in served.request("POST", "/v1/hooks/claude-code", body)[2]


def test_a_changed_policy_flips_the_next_answer(shell_world: ShellWorld, short_dir: Path) -> None:
    policy = short_dir / "policy.json"
    doc = json.loads(shell_world.policy.read_text())
    policy.write_text(json.dumps(doc))
    svc = start(short_dir / "p.sock", "--policy", str(policy), "--bundle-dir", _bundle_dir(shell_world),
                "--no-audit", env=env_of(shell_world))
    body = hook_json("tool x", str(shell_world.dir))
    try:
        assert b'"allow"' in svc.request("POST", "/v1/hooks/claude-code", body)[2]
        doc["permissions"]["allow"] = [r for r in doc["permissions"]["allow"]
                                       if not str(r.get("rule", r)).startswith("tool")]
        policy.write_text(json.dumps(doc))
        assert b'"allow"' not in svc.request("POST", "/v1/hooks/claude-code", body)[2]
        svc.proc.send_signal(signal.SIGHUP)  # a reload forgets everything and still answers
        assert b'"allow"' not in svc.request("POST", "/v1/hooks/claude-code", body)[2]
    finally:
        assert svc.stop() == 0


def test_a_removed_bundle_flips_the_next_answer(shell_world: ShellWorld, short_dir: Path) -> None:
    bundles = short_dir / "bundles"
    shutil.copytree(_bundle_dir(shell_world), bundles)
    svc = start(short_dir / "b.sock", "--policy", str(shell_world.policy), "--bundle-dir", str(bundles),
                "--no-audit", env=env_of(shell_world))
    body = hook_json("tool x", str(shell_world.dir))
    try:
        assert b'"allow"' in svc.request("POST", "/v1/hooks/claude-code", body)[2]
        digest = hashlib.sha256((shell_world.bin / "tool").read_bytes()).hexdigest()
        removed = [p for p in (bundles / "sha256").iterdir() if p.name.startswith(digest)]
        assert removed
        for p in removed:
            p.unlink()
        assert b'"allow"' not in svc.request("POST", "/v1/hooks/claude-code", body)[2]
    finally:
        assert svc.stop() == 0


def test_admit_endpoint_gives_the_clis_decision(shell_world: ShellWorld, served: Served,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in shell_world.env.items():
        monkeypatch.setenv(key, value)
    for tool in ("tool", "evil"):
        status, doc = served.json("/v1/admit", {"tool": str(shell_world.bin / tool), "command": "x"})
        run = cli("admit", str(shell_world.bin / tool), "--command", "x", "--format", "json",
                  "--policy", str(shell_world.policy), "--no-audit")
        assert status == 200 and doc["exitCode"] == run.code
        assert doc["admission"]["decision"] == run.json["decision"]


def test_admit_endpoint_refuses_unknown_fields_and_bad_json(served: Served) -> None:
    assert served.json("/v1/admit", {"tool": "ls", "polciy": "x"})[0] == 400
    assert served.json("/v1/admit", b"{not json")[0] == 400
    assert served.json("/v1/admit", {"tool": 3})[0] == 400
    assert served.request("GET", "/v1/admit")[0] == 405
    assert served.request("POST", "/v1/nothing", b"{}")[0] == 404


# -- security ---------------------------------------------------------------------------------------

def test_http_needs_the_bearer_token(shell_world: ShellWorld, short_dir: Path) -> None:
    token = token_file(short_dir)
    svc = start(short_dir / "t.sock", "--http", "127.0.0.1:0", "--token-file", str(token), "--no-audit",
                env=env_of(shell_world))
    try:
        assert svc.request("GET", "/healthz", tcp=True)[0] == 401
        assert svc.request("GET", "/healthz", tcp=True, headers={"Authorization": "Bearer wrong"})[0] == 401
        good = {"Authorization": "Bearer " + token.read_text().strip()}
        assert svc.request("GET", "/healthz", tcp=True, headers=good)[0] == 200
        # Never from the URL, even the right token.
        url = "/healthz?token=" + token.read_text().strip()
        assert svc.request("GET", url, tcp=True, headers=good)[0] == 400
        # DNS rebinding: a page on evil.example resolving to 127.0.0.1 sends its own Host.
        assert svc.request("GET", "/healthz", tcp=True, headers={**good, "Host": "evil.example"})[0] == 421
        # A browser's request (it carries an Origin) is refused, and no CORS header is ever sent.
        status, headers, _ = svc.request("GET", "/healthz", tcp=True,
                                         headers={**good, "Origin": "https://evil.example"})
        assert status == 403 and not any(h.startswith("access-control") for h in headers)
    finally:
        assert svc.stop() == 0


@pytest.mark.parametrize("address", ["0.0.0.0:0", "192.0.2.1:0", "[::]:0", "example.com:80", "127.0.0.1"])
def test_a_non_loopback_address_is_refused_at_start(short_dir: Path, address: str) -> None:
    token = token_file(short_dir)
    run = cli("serve", "--socket", str(short_dir / "x.sock"), "--http", address, "--token-file", str(token))
    assert run.code == 2 and ("loopback" in run.err or "HOST:PORT" in run.err)


def test_a_token_file_others_can_read_is_refused(short_dir: Path) -> None:
    token = token_file(short_dir)
    os.chmod(token, 0o644)
    run = cli("serve", "--socket", str(short_dir / "x.sock"), "--http", "127.0.0.1:0", "--token-file", str(token))
    assert run.code == 2 and "mode 644" in run.err


def test_http_without_a_token_file_is_refused(short_dir: Path) -> None:
    run = cli("serve", "--socket", str(short_dir / "x.sock"), "--http", "127.0.0.1:0")
    assert run.code == 2 and "--token-file" in run.err


def test_the_socket_is_private_and_another_users_connection_is_refused(served: Served, short_dir: Path) -> None:
    """Mode 0600 keeps others out; and if someone opens the mode by hand, the peer-credential check
    still refuses a process of another user (run as ``nobody``)."""
    assert os.stat(served.sock).st_mode & 0o777 == 0o600
    if os.getuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to connect as another user")
    os.chmod(Path(served.sock).parent, 0o755)
    client = ("import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "
              "s.sendall(b'GET /healthz HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n'); "
              "print(s.recv(100).split(b'\\r\\n')[0].decode())")
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-I", "-c", client,
                 served.sock]
    denied = subprocess.run(as_nobody, capture_output=True, text=True, timeout=60)
    assert denied.returncode != 0 and "Permission denied" in denied.stderr  # the mode
    os.chmod(served.sock, 0o666)
    refused = subprocess.run(as_nobody, capture_output=True, text=True, timeout=60)
    assert refused.stdout.strip() == "HTTP/1.1 403 Forbidden", refused  # the peer credentials
    assert served.request("GET", "/healthz")[0] == 200  # its owner still gets answers


def test_an_oversized_body_is_refused_unread(served: Served) -> None:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(60)
        s.connect(served.sock)
        s.sendall(b"POST /v1/admit HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1048577\r\n\r\n")
        answer = b""
        for _ in range(100):  # the service closes the connection after its answer
            chunk = s.recv(4096)
            if not chunk:
                break
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 413") and b"at most" in answer


def test_a_chunked_or_lengthless_body_is_refused(served: Served) -> None:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(60)
        s.connect(served.sock)
        s.sendall(b"POST /v1/admit HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n"
                  b"2\r\n{}\r\n0\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 411")


def test_a_slow_request_is_cut_off(shell_world: ShellWorld, short_dir: Path) -> None:
    """A client that sends half a request and waits is disconnected at the deadline (1 s here), so
    slow senders cannot hold the service's connections."""
    svc = start(short_dir / "d.sock", "--request-deadline", "1", "--no-audit", env=env_of(shell_world))
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(30)  # a bound on the test, far above the deadline
            s.connect(svc.sock)
            s.sendall(b"POST /v1/admit HTTP/1.1\r\nHost: loc")
            assert s.recv(100) == b""  # closed by the service, not by our timeout (that would raise)
        assert svc.request("GET", "/healthz")[0] == 200
    finally:
        assert svc.stop() == 0


def test_healthz_and_metrics(served: Served, shell_world: ShellWorld) -> None:
    served.request("POST", "/v1/hooks/claude-code", hook_json("./tool x", str(shell_world.dir)))
    status, headers, body = served.request("GET", "/metrics")
    text = body.decode()
    assert status == 200 and headers["content-type"].startswith("text/plain")
    assert 'atip_trust_decisions_total{endpoint="hooks/claude-code",outcome="deny"} 1' in text
    assert "atip_trust_request_seconds_bucket" in text and "atip_trust_verdict_cache_hits_total" in text


def test_sigterm_answers_requests_in_flight_then_exits_zero(shell_world: ShellWorld, short_dir: Path) -> None:
    svc = start(short_dir / "g.sock", "--no-audit", env=env_of(shell_world))
    results: list[int] = []

    def ask() -> None:
        results.append(svc.request("POST", "/v1/hooks/claude-code", hook_json("ls", str(shell_world.dir)))[0])

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    rc = svc.stop()
    for t in threads:
        t.join(timeout=60)
    assert rc == 0
    # Each request was either answered (200) or arrived after the sockets closed (never half-answered).
    assert all(r == 200 for r in results)


def _audit_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def test_audit_lines_are_the_clis(shell_world: ShellWorld, short_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log_service, log_cli = short_dir / "service.jsonl", short_dir / "cli.jsonl"
    svc = start(short_dir / "a.sock", "--policy", str(shell_world.policy), "--audit-log", str(log_service),
                env=env_of(shell_world))
    try:
        assert svc.json("/v1/admit", {"tool": str(shell_world.bin / "evil")})[0] == 200
    finally:
        assert svc.stop() == 0
    for key, value in shell_world.env.items():
        monkeypatch.setenv(key, value)
    cli("admit", str(shell_world.bin / "evil"), "--policy", str(shell_world.policy), "--audit-log", str(log_cli))
    ours, theirs = _audit_lines(log_service), _audit_lines(log_cli)
    assert len(ours) == len(theirs) == 1
    assert sorted(ours[0]) == sorted(theirs[0])
    volatile = {"time", "ts", "timestamp", "decision_id", "decided_at", "pid"}
    assert {k: v for k, v in ours[0].items() if k not in volatile} == \
        {k: v for k, v in theirs[0].items() if k not in volatile}


def _load(svc: Served, clients: int, each: int, tool: str) -> list[int]:
    statuses: list[int] = []
    lock = threading.Lock()

    def client() -> None:
        from serve_helpers import UnixConnection
        conn = UnixConnection(svc.sock)
        body = json.dumps({"tool": tool}).encode()
        for _ in range(each):
            conn.request("POST", "/v1/admit", body)
            resp = conn.getresponse()
            resp.read()
            with lock:
                statuses.append(resp.status)
        conn.close()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=1800)
    return statuses


@pytest.mark.parametrize("clients,each", [
    pytest.param(16, 25, id="400-requests"),
    pytest.param(16, 1250, id="20000-requests", marks=pytest.mark.slow),
])
def test_load_loses_no_answer_and_no_audit_line(shell_world: ShellWorld, short_dir: Path, clients: int,
                                                each: int) -> None:
    log = short_dir / "load.jsonl"
    svc = start(short_dir / "l.sock", "--policy", str(shell_world.policy), "--audit-log", str(log),
                env=env_of(shell_world))
    try:
        statuses = _load(svc, clients, each, str(shell_world.bin / "tool"))
    finally:
        assert svc.stop() == 0
    assert len(statuses) == clients * each and set(statuses) == {200}
    assert len(_audit_lines(log)) == clients * each


def test_the_thin_clients_agent_list_is_the_hook_formats() -> None:
    from atip_trust.agents.formats import AGENTS
    from atip_trust.cli.launch import AGENTS as CLIENT_AGENTS
    assert CLIENT_AGENTS == AGENTS


def test_hook_install_keeps_via_service_in_the_installed_command(tmp_path: Path) -> None:
    """``hook install AGENT --via-service`` is an install, not a thin-client call: the flag must reach the
    installed command (an earlier launcher took it for a client call and dropped it)."""
    code = "from atip_trust.cli.launch import main; raise SystemExit(main())"
    run = subprocess.run([sys.executable, "-c", code, "hook", "install", "claude-code", "--via-service", "--print"],
                         capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(tmp_path)})
    assert run.returncode == 0, run.stderr
    assert "hook claude-code --via-service" in run.stdout
