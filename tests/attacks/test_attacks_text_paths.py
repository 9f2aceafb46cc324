"""Attacks on the warm paths now that they carry paths as text (docs/caching.md).

A tool's name (what policy rules match) is the last component of the path as given, read the way pathlib
reads it; the default folders are platformdirs'. Each test spells its input the way an attacker would to
slip past a rule or into a directory they control, through the CLI in a real subprocess, twice where a
second run is a cache hit (the path these changes made faster).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from verify_helpers import run_cli

SPELLINGS = ["bin//tool", "./bin/./tool", "bin/../bin/tool", "{tmp}/bin//tool", "{tmp}/bin/./tool"]


def _run(args: list[str], cwd: Path, env: dict[str, str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli(args, cwd=cwd, env=env, input=stdin, timeout=120)


@pytest.fixture
def denied_tool(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """``bin/tool`` (leaves a marker when it runs), a policy that allows every command but denies the tool
    ``tool`` by name, and an environment with a private cache."""
    (tmp_path / "bin").mkdir()
    tool = tmp_path / "bin" / "tool"
    tool.write_text(f"#!/bin/sh\ntouch {tmp_path / 'ran'}\n")
    tool.chmod(0o755)
    allowing = {"version": 1, "permissions": {"allow": ["tool", "tool *", "sh"]}}  # sh: its #! interpreter
    (tmp_path / "allowing.json").write_text(json.dumps(allowing))  # the control: it allows the tool
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({**allowing, "tools": {"deny": [{"name": "tool"}]}}))
    env = {**os.environ, "ATIP_CACHE_DIR": str(tmp_path / "cache"), "CI": "true"}
    env.pop("ATIP_TRUST_ORG_POLICY", None)
    return tmp_path, policy, env


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_a_deny_by_name_holds_however_the_path_to_the_tool_is_spelled(
        denied_tool: tuple[Path, Path, dict[str, str]], spelling: str) -> None:
    tmp, policy, env = denied_tool
    target = spelling.format(tmp=tmp)
    for _ in range(2):  # a miss, then a cache hit
        r = _run(["admit", target, "--command", "status", "--policy", str(policy), "--no-audit", "--format",
                  "json"], tmp, env)
        assert r.returncode == 1, r.stdout + r.stderr
        out = json.loads(r.stdout)
        assert out["tool"] == "tool" and "TOOL_DENIED" in [x["code"] for x in out["decision"]["reasons"]], out


def test_the_control_policy_without_the_name_rule_allows_the_same_tool(
        denied_tool: tuple[Path, Path, dict[str, str]]) -> None:
    """So the denials above are the name rule's, not something else's."""
    tmp, _, env = denied_tool
    for spelling in SPELLINGS:
        r = _run(["admit", spelling.format(tmp=tmp), "--command", "status", "--policy",
                  str(tmp / "allowing.json"), "--no-audit", "--format", "json"], tmp, env)
        assert r.returncode == 0, r.stdout + r.stderr
    r = _run(["exec", "--policy", str(tmp / "allowing.json"), "--no-audit", "--", "./bin//tool"], tmp, env)
    assert r.returncode == 0 and (tmp / "ran").exists(), r.stdout + r.stderr


@pytest.mark.parametrize("spelling", ["./bin//tool", "{tmp}/bin/./tool"])
def test_exec_refuses_a_tool_denied_by_name_however_its_path_is_spelled_and_never_runs_it(
        denied_tool: tuple[Path, Path, dict[str, str]], spelling: str) -> None:
    tmp, policy, env = denied_tool
    r = _run(["exec", "--policy", str(policy), "--no-audit", "--", spelling.format(tmp=tmp)], tmp, env)
    assert r.returncode == 1, r.stdout + r.stderr
    assert not (tmp / "ran").exists()


@pytest.mark.parametrize("command", ["bin//tool --x", "./bin/./tool", "{tmp}/bin//tool"])
def test_an_agent_hook_denies_a_tool_denied_by_name_however_the_command_spells_its_path(
        denied_tool: tuple[Path, Path, dict[str, str]], command: str) -> None:
    tmp, policy, env = denied_tool
    request = json.dumps({"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                          "cwd": str(tmp), "tool_input": {"command": command.format(tmp=tmp)}})
    for _ in range(2):
        r = _run(["hook", "claude-code", "--policy", str(policy), "--no-audit"], tmp, env, stdin=request)
        answer = json.loads(r.stdout)["hookSpecificOutput"]
        assert answer["permissionDecision"] == "deny" and "TOOL_DENIED" in answer["permissionDecisionReason"], answer


def test_a_relative_xdg_folder_cannot_put_the_verdict_cache_or_audit_log_in_the_working_directory(
        denied_tool: tuple[Path, Path, dict[str, str]]) -> None:
    """A shared working directory (another user's checkout) must not receive the cache, where planted
    entries would be read back as trust reports, or the audit log, where lines could be removed."""
    tmp, policy, env = denied_tool
    shared, home = tmp / "shared", tmp / "home"
    shared.mkdir()
    home.mkdir()
    env = {k: v for k, v in env.items() if k != "ATIP_CACHE_DIR"}
    env.update(HOME=str(home), XDG_CACHE_HOME="cache", XDG_STATE_HOME="state")
    for _ in range(2):
        r = _run(["admit", str(tmp / "bin" / "tool"), "--command", "status", "--policy", str(policy)], shared, env)
        assert r.returncode == 1, r.stdout + r.stderr
    assert sorted(p.name for p in shared.iterdir()) == []
    assert (home / ".cache" / "atip-trust" / "verdicts").is_dir()
    assert (home / ".local" / "state" / "atip-trust" / "audit.jsonl").is_file()


def test_verify_does_not_serve_a_cached_pass_once_the_bundle_path_holds_evidence_about_another_file(
        tmp_path: Path) -> None:
    """The cache key names the evidence by its path as given, and by its bytes: swapping in another
    file's (valid) bundle under the same name after a cached pass is a miss, and fails."""
    import testsigstore

    id_, iss = ("https://github.com/acme/tool/.github/workflows/release.yml@refs/tags/v1.0.0",
                "https://token.actions.githubusercontent.com")
    ts = testsigstore.TestSigstore(seed=11)
    tool, other = tmp_path / "tool", tmp_path / "other"
    tool.write_bytes(b"#!/bin/sh\necho tool\n")
    other.write_bytes(b"#!/bin/sh\necho other\n")
    bundle = tmp_path / "tool.sigstore.json"
    good = json.dumps(ts.sign_artifact(tool.read_bytes(), identity=id_, issuer=iss))
    bundle.write_text(good)
    root = ts.write_trusted_root(tmp_path / "trusted_root.json")
    env = {**os.environ, "ATIP_CACHE_DIR": str(tmp_path / "cache")}
    argv = ["verify", "./tool", "--bundle", "./tool.sigstore.json", "--trusted-root", str(root),
            "--certificate-identity", id_, "--certificate-oidc-issuer", iss, "--format", "json"]
    runs = [json.loads(_run(argv, tmp_path, env).stdout) for _ in range(2)]
    assert [(r["trust_level"], r["cache"]) for r in runs] == [("VERIFIED", "miss"), ("VERIFIED", "hit")]
    bundle.write_text(json.dumps(ts.sign_artifact(other.read_bytes(), identity=id_, issuer=iss)))
    r = _run(argv, tmp_path, env)
    out = json.loads(r.stdout)
    assert r.returncode == 1 and out["cache"] == "miss" and out["trust_level"] != "VERIFIED", out
