"""The hook as a new user meets it: the README's snippet with the shipped default policy, the agent
formats Cursor and Copilot's VS Code shape add, policies that name a program or not, ``--pin``, and the
timeout that no library error handler may relabel."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from atip_trust.cli.cmd_hook import HookTimeout

from gate_world import World, make_world
from test_hooks import decision, hook_input
from verify_helpers import run_cli

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell commands")
ROOT = Path(__file__).resolve().parents[2]
EVERYDAY = ["ls -la", "git status", "cat README.md", "python3 -m pytest -q", "grep -rn TODO ."]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return make_world(tmp_path_factory.mktemp("agents"))


def readme_hook_command() -> list[str]:
    """The Claude Code hook with the flags the README's table installs it with, run from this checkout."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"`atip-trust hook install claude-code([^`]*)`", text)
    assert found, "the README installs no Claude Code hook"
    return [sys.executable, "-m", "atip_trust", "hook", "claude-code", *shlex.split(found.group(1))]


def run_hook(argv: list[str], stdin: str, env: dict[str, str], *, cwd: Path | None = None
             ) -> subprocess.CompletedProcess[str]:
    """The command line as given; ``python -m atip_trust ...`` in-process (verify_helpers.run_cli)."""
    if argv[:3] == [sys.executable, "-m", "atip_trust"]:
        return run_cli(argv[3:], input=stdin, env=env, cwd=cwd or ROOT, timeout=120)
    return subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, timeout=120, check=False,
                          cwd=cwd or ROOT)


@pytest.mark.parametrize("line", EVERYDAY)
def test_everyday_commands_are_never_denied_with_the_readme_snippet_and_the_default_policy(
        line: str, tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "CI": "true"}
    argv = [os.path.expanduser(w) if w.startswith("~") else w for w in readme_hook_command()]
    r = run_hook(argv, hook_input("claude-code", line, str(ROOT)), env)
    behavior, reason = decision("claude-code", r.stdout)
    assert r.returncode == 0, r.stderr
    assert behavior not in ("deny", "ask"), (line, r.stdout)  # no opinion: Claude Code's own rules decide


def world_policy(world: World, **extra: Any) -> Path:
    return world.write_policy(f"p{abs(hash(json.dumps(extra, sort_keys=True)))}", **extra)


def hook(world: World, agent: str, line: str, policy: Path, *flags: str, signed: bool = True
         ) -> subprocess.CompletedProcess[str]:
    return world.run("hook", agent, "--policy", str(policy), "--bundle-dir", str(world.bundles), "--no-audit",
                     *flags, env=world.env(signed=signed), stdin=hook_input(agent, line, str(world.dir))
                     if agent != "cursor" else cursor_input(line, str(world.dir)))


def cursor_input(line: str, cwd: str) -> str:
    return json.dumps({"hook_event_name": "beforeShellExecution", "conversation_id": "c-1",
                       "generation_id": "g-1", "workspace_roots": [cwd], "command": line, "cwd": cwd})


def test_an_unsigned_gh_repo_delete_is_denied_under_a_policy_that_names_gh(world: World) -> None:
    policy = world_policy(world, hooks={"unlisted": "passthrough"})
    r = hook(world, "claude-code", "gh repo delete example-org/tools --yes", policy, signed=False)
    assert decision("claude-code", r.stdout)[0] == "deny", r.stdout + r.stderr


def test_a_program_the_policy_does_not_name_gets_the_agents_own_answer(world: World) -> None:
    policy = world_policy(world, hooks={"unlisted": "passthrough"})
    r = hook(world, "claude-code", "grep -rn TODO .", policy)
    assert (r.returncode, r.stdout) == (0, "")


@pytest.mark.parametrize("unlisted", ["ask", "deny"])
def test_hooks_unlisted_makes_an_unnamed_program_asked_or_denied(world: World, unlisted: str) -> None:
    r = hook(world, "claude-code", "grep -rn TODO .", world_policy(world, hooks={"unlisted": unlisted}))
    behavior, reason = decision("claude-code", r.stdout)
    assert behavior == unlisted and "hooks.unlisted" in reason


def test_no_opinion_never_hides_a_denied_program_on_the_same_line(world: World) -> None:
    policy = world_policy(world, hooks={"unlisted": "passthrough"})
    r = hook(world, "claude-code", "grep x . ; gh repo delete example-org/tools --yes", policy, signed=False)
    assert decision("claude-code", r.stdout)[0] == "deny"


def test_a_deny_rule_that_matches_an_unnamed_program_still_denies(world: World) -> None:
    policy = world_policy(world, hooks={"unlisted": "passthrough"},
                          permissions={"deny": ["Bash(* --force *)", "Bash(* --force)"]})
    r = hook(world, "claude-code", "grep --force x", policy)
    assert decision("claude-code", r.stdout)[0] == "deny", r.stdout


@pytest.mark.parametrize(("line", "expected"), [("gh pr list", "allow"), ("gh repo delete x", "deny"),
                                                ("gh pr list $(id)", "ask"), ("grep x .", None)])
def test_cursor_before_shell_execution_is_answered_in_cursors_format(world: World, line: str,
                                                                     expected: str | None) -> None:
    policy = world_policy(world, hooks={"unlisted": "passthrough"})
    r = hook(world, "cursor", line, policy, signed=expected != "deny")
    out = json.loads(r.stdout)
    assert out.get("permission") == expected, r.stdout
    if expected is not None:
        assert out["user_message"] and out["agent_message"]


def test_copilots_vs_code_shaped_input_is_read(world: World) -> None:
    doc = {"hook_event_name": "PreToolUse", "tool_name": "bash", "tool_input": {"command": "gh pr list"},
           "cwd": str(world.dir)}
    r = world.run("hook", "copilot", "--policy", str(world.policy), "--bundle-dir", str(world.bundles),
                  "--no-audit", env=world.env(), stdin=json.dumps(doc))
    assert json.loads(r.stdout)["permissionDecision"] == "allow", r.stdout + r.stderr


def test_the_hook_timeout_is_not_an_exception_a_library_handler_can_catch() -> None:
    assert not issubclass(HookTimeout, Exception)


def test_no_answer_in_time_is_a_denial_naming_the_timeout(world: World) -> None:
    """stdin is held open and never written: the hook waits for it until --timeout, whatever the speed
    of the machine, and the answer names the timeout (not a relabelled error from inside the library)."""
    proc = subprocess.Popen([sys.executable, "-m", "atip_trust", "hook", "claude-code", "--policy",
                             str(world.policy), "--timeout", "1", "--no-audit"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=world.env())
    try:
        proc.wait(timeout=120)  # stdin stays open: the hook has nothing to read until its timeout
        out, err = proc.stdout.read(), proc.stderr.read()  # type: ignore[union-attr]
    finally:
        proc.kill()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            stream.close()  # type: ignore[union-attr]
    assert proc.returncode == 2
    behavior, reason = decision("claude-code", out)
    assert behavior == "deny" and "no answer within 1 s" in reason, out + err


def test_pin_rewrites_an_allowed_line_to_run_the_admitted_bytes(world: World) -> None:
    r = hook(world, "claude-code", "gh pr list --state open > out.txt", world.policy, "--pin")
    spec = json.loads(r.stdout)["hookSpecificOutput"]
    assert spec["permissionDecision"] == "allow", r.stdout + r.stderr
    rewritten = spec["updatedInput"]["command"]
    assert "--expect-digest sha256:" in rewritten and str(world.signed_bin / "gh") in rewritten
    assert rewritten.endswith("pr list --state open > out.txt")
    ran = subprocess.run(["bash", "-c", rewritten], cwd=world.dir, env=world.env(), capture_output=True,
                         text=True, timeout=120, check=False)
    assert ran.returncode == 0, ran.stderr
    assert (world.dir / "out.txt").read_text() == "gh pr list --state open\n"


def test_a_pinned_program_swapped_after_the_hook_does_not_run(world: World, tmp_path: Path) -> None:
    w = make_world(tmp_path)
    r = hook(w, "claude-code", "gh pr list", w.policy, "--pin")
    rewritten = json.loads(r.stdout)["hookSpecificOutput"]["updatedInput"]["command"]
    (w.signed_bin / "gh").write_bytes(b'#!/bin/sh\necho swapped > "$0.ran"\n')  # after the check
    ran = subprocess.run(["bash", "-c", rewritten], cwd=w.dir, env=w.env(), capture_output=True, text=True,
                         timeout=120, check=False)
    assert ran.returncode != 0
    assert not (w.signed_bin / "gh.ran").exists()


def test_pin_asks_for_a_program_it_cannot_rewrite(world: World) -> None:
    allow = [{"rule": r, "minTrustLevel": "VERIFIED"} for r in ("gh pr *", "sh *", "sh")]
    r = hook(world, "claude-code", "sh -c 'gh pr list'", world_policy(world, permissions={"allow": allow}), "--pin")
    behavior, reason = decision("claude-code", r.stdout)
    assert behavior == "ask" and "--pin" in reason


def test_codex_allows_only_with_a_pinned_command(world: World) -> None:
    plain = hook(world, "codex", "gh pr list", world.policy)
    assert plain.stdout == ""
    pinned = json.loads(hook(world, "codex", "gh pr list", world.policy, "--pin").stdout)["hookSpecificOutput"]
    assert pinned["permissionDecision"] == "allow" and "updatedInput" in pinned


def test_pin_is_refused_for_an_agent_that_cannot_rewrite(world: World) -> None:
    r = hook(world, "gemini", "gh pr list", world.policy, "--pin")
    assert r.returncode == 2 and json.loads(r.stdout)["decision"] == "deny"


@pytest.mark.parametrize(("rule", "warned"), [("python3 *", True), ("make test *", True), ("Bash(npm run:*)", True),
                                              ("gh pr *", False), ("env *", False), ("python3 --version", False)])
def test_policy_check_warns_when_an_allow_rule_lets_an_unmodelled_runner_run_anything(
        tmp_path: Path, rule: str, warned: bool) -> None:
    """Allowing ``python3 *`` allows every program the script it is given runs; the gate cannot see
    inside it (runners it models, such as env, are unwrapped instead)."""
    policy = tmp_path / "p.json"
    policy.write_text(json.dumps({"version": 1, "permissions": {"allow": [rule]}}))
    for action in ("check", "explain"):
        r = run_cli(["policy", action, str(policy)], timeout=120)
        assert r.returncode == 0, r.stderr
        assert ("Warning: allow rule" in r.stdout and "whatever it is given" in r.stdout) is warned, r.stdout


@pytest.mark.parametrize(("rule", "warned"), [("jq *", True), ("Bash(helm list *)", True), ("gh pr *", False),
                                              ("git status", False), ("tar -cf *", False), ("python3 *", False)])
def test_policy_check_warns_about_an_allow_rule_over_a_program_without_a_table(
        tmp_path: Path, rule: str, warned: bool) -> None:
    """Issue 32: a program the gate has no table for may be told (a variable, an option) to run another
    one; allowing it is flagged (an unmodelled runner gets its own, stronger warning instead)."""
    policy = tmp_path / "p.json"
    policy.write_text(json.dumps({"version": 1, "permissions": {"allow": [rule]}}))
    for action in ("check", "explain"):
        r = subprocess.run([sys.executable, "-m", "atip_trust", "policy", action, str(policy)],
                           capture_output=True, text=True, timeout=120, check=False)
        assert r.returncode == 0, r.stderr
        assert ("is not written (docs/agents.md)" in r.stdout) is warned, r.stdout


def test_a_local_policy_cannot_loosen_the_orgs_hooks_unlisted(tmp_path: Path) -> None:
    """A hostile local layer saying passthrough does not undo an org layer's deny (strictest wins)."""
    from atip_trust.policy.compose import compose
    from atip_trust.policy.load import load_layer
    org, local = tmp_path / "org.json", tmp_path / "local.json"
    org.write_text(json.dumps({"version": 1, "hooks": {"unlisted": "deny"}}))
    local.write_text(json.dumps({"version": 1, "hooks": {"unlisted": "passthrough"}}))
    composed = compose([load_layer(str(org), source="org"), load_layer(str(local), source="local")])
    assert composed.hooks_unlisted == "deny"
    assert compose([load_layer(str(local), source="local")]).hooks_unlisted == "passthrough"
