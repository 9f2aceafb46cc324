"""`atip-trust hook AGENT` through the CLI, with the hook JSON each agent really sends (agents/formats.py
cites the formats): verified programs are allowed, unsigned ones denied, a line is judged by every
command in it, anything unreadable is a denial in the agent's own format."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from atip_trust.agents.shell_model import Unprovable, programs

from gate_world import World, make_world

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell commands")

AGENTS = ("claude-code", "codex", "gemini", "copilot")


def hook_input(agent: str, command: str, cwd: str, tool: str | None = None) -> str:
    """The JSON each agent writes to its pre-tool hook's stdin for a shell command."""
    if agent == "claude-code":
        doc: dict[str, Any] = {
            "session_id": "abc123", "transcript_path": "/tmp/t.jsonl", "cwd": cwd,
            "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": tool or "Bash",
            "tool_input": {"command": command, "description": "run it"}, "tool_use_id": "toolu_01"}
    elif agent == "codex":
        doc = {"session_id": "s-1", "turn_id": "t-1", "transcript_path": "/tmp/t.jsonl", "cwd": cwd,
               "hook_event_name": "PreToolUse", "model": "gpt-5", "permission_mode": "default",
               "tool_name": tool or "Bash", "tool_use_id": "call-1", "tool_input": {"command": command}}
    elif agent == "gemini":
        doc = {"session_id": "g-1", "transcript_path": "/tmp/t.json", "cwd": cwd,
               "hook_event_name": "BeforeTool", "timestamp": "2026-01-01T00:00:00Z",
               "tool_name": tool or "run_shell_command",
               "tool_input": {"command": command, "description": "run it"}}
    else:  # Copilot CLI: toolArgs is the arguments' JSON text
        doc = {"timestamp": 1704614600000, "cwd": cwd, "toolName": tool or "bash",
               "toolArgs": json.dumps({"command": command, "description": "run it"})}
    return json.dumps(doc)


def decision(agent: str, stdout: str) -> tuple[str | None, str]:
    """(behavior, reason) from an agent's answer; (None, "") for no opinion."""
    if not stdout.strip():
        return None, ""
    out = json.loads(stdout)
    if agent in ("claude-code", "codex"):
        spec = out["hookSpecificOutput"]
        assert spec["hookEventName"] == "PreToolUse"
        return spec["permissionDecision"], spec["permissionDecisionReason"]
    if agent == "gemini":
        return out.get("decision"), out.get("reason", "")
    return out["permissionDecision"], out["permissionDecisionReason"]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return make_world(tmp_path_factory.mktemp("hooks"))


def hook(world: World, agent: str, stdin: str, *, signed: bool = True, policy: Path | None = None) -> Any:
    return world.run("hook", agent, "--policy", str(policy or world.policy), "--bundle-dir",
                     str(world.bundles), "--audit-log", str(world.audit), env=world.env(signed=signed),
                     stdin=stdin)


@pytest.mark.parametrize("agent", AGENTS)
def test_verified_gh_pr_list_is_allowed(world: World, agent: str) -> None:
    r = hook(world, agent, hook_input(agent, "gh pr list --state open", str(world.dir)))
    assert r.returncode == 0, r.stderr
    behavior, reason = decision(agent, r.stdout)
    if agent == "codex":  # Codex acts on deny only: an allow is silence, its own approval applies
        assert behavior is None and r.stdout == ""
    else:
        assert behavior == "allow" and "VERIFIED" in reason and "gh pr list" in reason


@pytest.mark.parametrize("agent", AGENTS)
def test_unsigned_gh_repo_delete_is_denied(world: World, agent: str) -> None:
    r = hook(world, agent, hook_input(agent, "gh repo delete example-org/tools --yes", str(world.dir)),
             signed=False)
    assert r.returncode == 0, r.stderr
    behavior, reason = decision(agent, r.stdout)
    assert behavior == "deny"
    assert "UNSIGNED" in reason and "gh repo delete" in reason


@pytest.mark.parametrize("agent", AGENTS)
def test_verified_command_chained_with_rm_is_not_allowed_as_a_whole(world: World, agent: str) -> None:
    r = hook(world, agent, hook_input(agent, "gh pr view 1; rm -rf ~", str(world.dir)))
    behavior, reason = decision(agent, r.stdout)
    assert behavior == "deny", r.stdout + r.stderr
    assert "rm -rf ~: deny (UNSIGNED)" in reason


@pytest.mark.parametrize("agent", AGENTS)
def test_a_line_that_cannot_be_split_asks_where_the_agent_can_ask_and_denies_where_not(world: World, agent: str) -> None:
    r = hook(world, agent, hook_input(agent, "gh pr list --repo $(gh pr view 1)", str(world.dir)))
    behavior, reason = decision(agent, r.stdout)
    assert behavior == ("ask" if agent in ("claude-code", "copilot") else "deny"), r.stdout
    assert "command substitution" in reason


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("tail", ["| sh", "$(true)", "`true`", "> $OUT"])
def test_an_unreadable_tail_does_not_soften_a_denied_program_into_a_question(
        world: World, agent: str, tail: str) -> None:
    """Appending something the splitter refuses must not turn the denial of a program the line
    plainly runs into an ask the user might approve without seeing it."""
    r = hook(world, agent, hook_input(agent, f"gh repo delete example-org/tools --yes {tail}", str(world.dir)),
             signed=False)
    behavior, reason = decision(agent, r.stdout)
    assert behavior == "deny", r.stdout + r.stderr
    assert "gh repo delete" in reason and "UNSIGNED" in reason


@pytest.mark.parametrize("agent", AGENTS)
def test_other_tools_get_no_opinion(world: World, agent: str) -> None:
    tool = {"claude-code": "Read", "codex": "apply_patch", "gemini": "read_file", "copilot": "view"}[agent]
    r = hook(world, agent, hook_input(agent, "unused", str(world.dir), tool=tool))
    assert r.returncode == 0, r.stderr
    assert r.stdout == ("{}\n" if agent == "gemini" else "")


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("stdin", ["", "not json", "[]", "SHELL-TOOL-WITHOUT-COMMAND",
                                   '{"toolName": "bash", "toolArgs": "{"}',
                                   '{"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": "gh pr list"}}'])
def test_malformed_hook_input_is_denied_in_the_agents_format(world: World, agent: str, stdin: str) -> None:
    if stdin == "SHELL-TOOL-WITHOUT-COMMAND":
        doc = json.loads(hook_input(agent, "x", str(world.dir)))
        doc.get("tool_input", {}).pop("command", None)
        doc["toolArgs"] = "{}" if agent == "copilot" else doc.get("toolArgs")
        stdin = json.dumps({k: v for k, v in doc.items() if v is not None})
    r = hook(world, agent, stdin)
    behavior, reason = decision(agent, r.stdout)
    assert behavior == "deny", (r.stdout, r.stderr)
    assert reason.startswith("atip-trust hook failed, so the call is denied")
    assert r.returncode == (0 if agent == "copilot" else 2)
    assert "denied" in r.stderr


def test_a_policy_that_does_not_load_is_a_denial(world: World, tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"version": 1, "nonsense": true}')
    r = hook(world, "claude-code", hook_input("claude-code", "gh pr list", str(world.dir)), policy=broken)
    assert r.returncode == 2 and decision("claude-code", r.stdout)[0] == "deny"


def test_each_program_admission_leaves_an_audit_line(world: World) -> None:
    before = world.audit.read_text().count("\n") if world.audit.exists() else 0
    hook(world, "claude-code", hook_input("claude-code", "gh pr list | grep x", str(world.dir)))
    lines = [json.loads(x) for x in world.audit.read_text().splitlines()[before:]]
    assert {(x["tool"], x["decision"]) for x in lines} >= {("gh", "allow"), ("sh", "allow"), ("grep", "deny")}


@pytest.mark.parametrize(("line", "argvs"), [
    ("gh pr view 1; rm -rf ~", [["gh", "pr", "view", "1"], ["rm", "-rf", "~"]]),
    ("NO_COLOR=1 gh pr list 2>&1 | xargs -n1 echo && (cd /tmp || true)",
     [["gh", "pr", "list"], ["xargs", "-n1", "echo"], ["echo"]]),
    ("sudo -u root /usr/bin/gh repo delete x", [["sudo", "-u", "root", "/usr/bin/gh", "repo", "delete", "x"],
                                                ["/usr/bin/gh", "repo", "delete", "x"]]),
    ("bash -c 'gh pr list && rm x'", [["bash", "-c", "gh pr list && rm x"], ["gh", "pr", "list"], ["rm", "x"]]),
    ("echo 'a;b' \"c|d\" # ; rm -rf /", []),
])
def test_shell_lines_split_into_every_command_they_run(line: str, argvs: list[list[str]]) -> None:
    assert [list(p.argv) for p in programs(line)] == argvs


@pytest.mark.parametrize("line", [
    "gh $(echo repo) delete", "gh `echo repo` delete", "LD_PRELOAD=/tmp/x.so gh pr list",
    "PATH=/tmp/evil gh pr list", "gh() { rm -rf ~; }; gh pr list", "alias gh=rm; gh pr list",
    "cat <<EOF\n$(rm -rf ~)\nEOF", "env -S 'rm -rf ~'", "sudo -s", "x=$(rm -rf ~)", "g* pr list",
    "export HOME=.; git status", "for PATH in /tmp; do ls; done", "echo \"$(rm -rf ~)\"",
    "export ATIP_TRUST_POLICY=./p.json; gh pr list", "XDG_CONFIG_HOME=.; git status",
    "eval 'rm -rf ~'", "diff <(ls) <(ls)", "sudo -u root gh repo delete x", "gh $CMD",
])
def test_lines_that_cannot_be_proven_are_refused_by_the_model(line: str) -> None:
    with pytest.raises(Unprovable):
        programs(line)


@pytest.mark.parametrize("line", ["jq $CMD", "bash -lc 'rm -rf ~'", "ls *.py", "jq . {1,2}"])
def test_words_the_shell_expands_are_marked_unknown(line: str) -> None:
    assert not programs(line)[-1].literal


def test_a_bundle_about_another_file_planted_under_this_files_digest_does_not_admit_it(tmp_path: Path) -> None:
    """Evidence about another file: the signed gh's bundle copied into the bundle folder under the
    unsigned gh's digest. The folder is only an index; the bundle still has to be about these bytes."""
    import hashlib
    import shutil
    w = make_world(tmp_path)
    signed = (w.signed_bin / "gh").read_bytes()
    unsigned = (w.unsigned_bin / "gh").read_bytes()
    good = w.bundles / "sha256" / f"{hashlib.sha256(signed).hexdigest()}.sigstore.json"
    shutil.copyfile(good, w.bundles / "sha256" / f"{hashlib.sha256(unsigned).hexdigest()}.sigstore.json")
    r = hook(w, "claude-code", hook_input("claude-code", "gh pr list", str(w.dir)), signed=False)
    behavior, reason = decision("claude-code", r.stdout)
    assert behavior == "deny", r.stdout + r.stderr
    assert "allowed" not in reason


@pytest.mark.parametrize("line", [
    "gh pr list\nrm -rf ~",                   # a newline is a command separator
    "gh pr list && env rm -rf ~",             # a wrapper running an unsigned program
    "gh pr list | xargs rm -rf",              # xargs runs its operand
    "gh pr list; sh -c 'rm -rf ~'",           # sh -c is split again
    "gh pr list & nohup rm -rf ~",            # background + wrapper
])
def test_a_crafted_line_that_hides_an_unsigned_program_behind_a_verified_one_is_not_allowed(
        world: World, line: str) -> None:
    r = hook(world, "claude-code", hook_input("claude-code", line, str(world.dir)))
    behavior, _ = decision("claude-code", r.stdout)
    assert behavior in ("deny", "ask"), (line, r.stdout)
    assert behavior != "allow"
