"""`atip-trust doctor` (cli/cmd_doctor.py): exit 1 exactly when a protection that is configured is not in
force — a hook that fails open or points at a missing program, an org policy that is refused, a required
audit log that cannot be written, a root older than the policy allows — and exit 0 with the hook that
`hook install` writes. Every machine location is a temporary folder (HOME, the project, XDG state, the
standard org policy path)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from atip_trust.cli.main import main
from atip_trust.policy import load

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX paths and modes")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(load, "standard_org_policy_path", lambda: str(tmp_path / "etc" / "org-policy.json"))
    for var, sub in (("HOME", "home"), ("XDG_STATE_HOME", "state")):
        monkeypatch.setenv(var, str(tmp_path / sub))
    monkeypatch.setenv("ATIP_TRUST_POLICY_SERIALS", str(tmp_path / "serials.json"))
    for var in ("ATIP_TRUST_ORG_POLICY", "ATIP_TRUST_POLICY", "CODEX_HOME"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / "project").mkdir()
    monkeypatch.chdir(tmp_path / "project")
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def doctor(capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    rc = main(["doctor", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert out["exit_code"] == rc
    return rc, out


def problems(out: dict[str, Any], area: str) -> list[str]:
    return [f["message"] for f in out["findings"] if f["area"] == area and f["status"] == "problem"]


def test_a_machine_with_nothing_configured_has_nothing_to_fix(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = doctor(capsys)
    assert rc == 0 and out["ok"], out
    areas = {f["area"] for f in out["findings"]}
    assert {"org policy", "trusted root", "agent hooks", "audit log", "PATH"} <= areas


def test_the_readme_bare_hook_fails_open_and_is_a_problem(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "atip-trust hook claude-code"}]}]}}))
    rc, out = doctor(capsys)
    (message,) = problems(out, "agent hooks")
    assert rc == 1 and "lets the call through" in message and "not named by an absolute path" in message


def test_the_installed_hook_is_in_force_until_its_program_goes(home: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    prog = tmp_path / "bin" / "atip-trust"
    prog.parent.mkdir()
    prog.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m atip_trust "$@"\n')
    prog.chmod(0o755)
    assert main(["hook", "install", "cursor", "--scope", "project", "--executable", str(prog)]) == 0
    capsys.readouterr()
    rc, out = doctor(capsys)
    assert rc == 0, problems(out, "agent hooks")
    (other,) = [f for f in out["findings"] if f["area"] == "agent hooks" and f["status"] == "warning"]
    assert other["details"]["fail_closed"] and other["details"]["program"] == str(prog)
    assert "is not the atip-trust running this check" in other["message"]  # a planted look-alike program
    prog.unlink()
    rc, out = doctor(capsys)
    assert rc == 1 and "missing or not executable: every call is blocked" in problems(out, "agent hooks")[0]


def test_the_hook_install_writes_by_default_is_in_force(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hook", "install", "gemini"]) == 0
    capsys.readouterr()
    rc, out = doctor(capsys)
    (ok,) = [f for f in out["findings"] if f["area"] == "agent hooks" and f["status"] == "ok"]
    assert rc == 0 and ok["message"].startswith("gemini: ") and "blocks" in ok["message"]


def test_cursor_without_fail_closed_is_named(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["hook", "install", "cursor", "--executable", sys.executable])
    capsys.readouterr()
    settings = home / ".cursor" / "hooks.json"
    doc = json.loads(settings.read_text())
    del doc["hooks"]["beforeShellExecution"][0]["failClosed"]
    settings.write_text(json.dumps(doc))
    rc, out = doctor(capsys)
    assert rc == 1 and "no failClosed" in problems(out, "agent hooks")[0]


def _claude_http(home: Path, **changes: Any) -> None:
    settings = home / ".claude" / "settings.json"
    doc = json.loads(settings.read_text())
    entry = doc["hooks"]["PreToolUse"][0]["hooks"][0]
    for key, value in changes.items():
        if value is None:
            del entry[key]
        else:
            entry[key] = value
    settings.write_text(json.dumps(doc))


def test_the_http_hook_install_writes_is_in_force(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hook", "install", "claude-code", "--http", "http://127.0.0.1:8787"]) == 0
    capsys.readouterr()
    rc, out = doctor(capsys)
    (ok,) = [f for f in out["findings"] if f["area"] == "agent hooks" and f["status"] == "ok"]
    assert rc == 0 and "http://127.0.0.1:8787/v1/hooks/claude-code" in ok["message"], out
    assert ok["details"]["kind"] == "http" and ok["details"]["fail_closed"]


@pytest.mark.parametrize(("changes", "named"), [
    ({"onFailure": None}, 'no onFailure: "block"'),  # a service that is down lets every line through
    ({"url": "http://192.0.2.7:8787/v1/hooks/claude-code"}, "not http:// on a loopback host"),
    ({"allowedEnvVars": []}, "ATIP_TRUST_TOKEN is not in allowedEnvVars"),
    ({"headers": None}, "no Authorization: Bearer $VARIABLE header"),
], ids=["no-on-failure", "not-loopback", "variable-not-allowed", "no-token-header"])
def test_an_http_hook_that_fails_open_or_cannot_authenticate_is_a_problem(
        home: Path, capsys: pytest.CaptureFixture[str], changes: dict[str, Any], named: str) -> None:
    assert main(["hook", "install", "claude-code", "--http", "http://127.0.0.1:8787"]) == 0
    capsys.readouterr()
    _claude_http(home, **changes)
    rc, out = doctor(capsys)
    (message,) = problems(out, "agent hooks")
    assert rc == 1 and named in message and "--http URL" in message, message


def write_org(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    path.chmod(0o644)


def test_an_org_policy_others_can_write_is_refused_and_named(home: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    org = tmp_path / "etc" / "org-policy.json"
    write_org(org, {"version": 1})
    assert doctor(capsys)[0] == 0
    org.chmod(0o666)
    rc, out = doctor(capsys)
    assert rc == 1 and "is read and refused" in problems(out, "org policy")[0]


def test_a_required_audit_log_under_a_file_cannot_be_written_and_is_a_problem(
        home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "not-a-folder").write_text("")
    write_org(tmp_path / "etc" / "org-policy.json",
              {"version": 1, "audit": {"log": str(tmp_path / "not-a-folder" / "audit.jsonl"), "required": True}})
    rc, out = doctor(capsys)
    assert rc == 1 and "audit.required" in problems(out, "audit log")[0]
    assert "not-a-folder is not a folder" in problems(out, "audit log")[0]


def test_a_required_audit_log_that_is_a_folder_is_a_problem(home: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a-folder").mkdir()
    write_org(tmp_path / "etc" / "org-policy.json",
              {"version": 1, "audit": {"log": str(tmp_path / "a-folder"), "required": True}})
    rc, out = doctor(capsys)
    assert rc == 1 and "not a regular file" in problems(out, "audit log")[0]


def test_a_root_older_than_the_policy_allows_is_a_problem(home: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    write_org(tmp_path / "etc" / "org-policy.json", {"version": 1, "trust": {"rootMaxAge": "1d"}})
    rc, out = doctor(capsys)
    assert rc == 1 and "rootMaxAge 1d" in problems(out, "trusted root")[0]


def test_relative_and_unsafe_path_entries_are_listed(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    shared = tmp_path / "shared-bin"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv("PATH", f"bin:{shared}:/usr/bin")
    rc, out = doctor(capsys)
    skipped = {f["path"]: f["details"]["reason"] for f in out["findings"] if f["area"] == "PATH" and f["details"]}
    assert skipped["bin"] == "path_entry_relative" and str(shared) in skipped
    assert rc == 0  # skipped by design: the scan protects itself


def test_text_output_is_one_screen_with_the_verdict_last(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "org policy:" and lines[-1].startswith("no problems")


def test_a_copilot_hook_in_any_file_of_its_hooks_folder_is_judged(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hooks = Path.cwd() / ".github" / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "guard.json").write_text(json.dumps({"version": 1, "hooks": {"preToolUse": [
        {"type": "command", "bash": "atip-trust hook copilot", "timeoutSec": 30}]}}))
    rc, out = doctor(capsys)
    (message,) = problems(out, "agent hooks")
    assert rc == 1 and "guard.json" in message and "lets the call through" in message
