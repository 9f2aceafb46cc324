"""Copilot's VS Code-shaped hook input (issue 34, item 8): the terminal tool is ``run_in_terminal`` (or
``runInTerminal``; ``Bash`` in a Claude-compatible hooks file), not the CLI's ``bash``. Each is read and
decided as a shell command, so a denied program is denied under any of these names instead of getting no
opinion; the answer carries VS Code's ``hookSpecificOutput`` beside the CLI's top-level fields. The
README's Copilot settings line, the shared gate world (tests/gate_world.py), the real CLI."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import pytest

from gate_world import World, make_world

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell commands")
ROOT = Path(__file__).resolve().parents[2]
NAMES = ("run_in_terminal", "runInTerminal", "Bash")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return make_world(tmp_path_factory.mktemp("copilot"))


def readme_copilot_words() -> list[str]:
    """The hook the README's agent table installs for Copilot (``hook install copilot …``): ``hook
    copilot`` with the install line's hook flags (the install-only ones dropped)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"`atip-trust hook install copilot([^`]*)`", text)
    assert found, "the README installs no Copilot hook"
    words = shlex.split(found.group(1))
    for flag in ("--scope", "--settings"):
        while flag in words:
            at = words.index(flag)
            del words[at:at + 2]
    return ["hook", "copilot", *words]


def vscode_input(world: World, tool: str, line: str) -> str:
    return json.dumps({"hook_event_name": "PreToolUse", "tool_name": tool, "tool_use_id": "tool-1",
                       "tool_input": {"command": line, "explanation": "list PRs", "isBackground": False},
                       "cwd": str(world.dir), "sessionId": "s-1"})


def ask(world: World, tool: str, line: str, *, signed: bool = True) -> dict[str, object]:
    r = world.run(*readme_copilot_words(), "--policy", str(world.policy), "--bundle-dir", str(world.bundles),
                  "--no-audit", env=world.env(signed=signed), stdin=vscode_input(world, tool, line))
    assert r.returncode == 0, r.stderr
    out: dict[str, object] = json.loads(r.stdout) if r.stdout.strip() else {}
    return out


@pytest.mark.parametrize("tool", NAMES)
def test_vs_code_terminal_tool_names_are_decided(world: World, tool: str) -> None:
    out = ask(world, tool, "gh pr list")
    assert out.get("permissionDecision") == "allow", out
    spec = out["hookSpecificOutput"]
    assert isinstance(spec, dict) and spec["permissionDecision"] == "allow"


@pytest.mark.parametrize("tool", NAMES)
def test_an_unsigned_program_under_a_vs_code_tool_name_is_denied_not_waved_through(world: World,
                                                                                   tool: str) -> None:
    out = ask(world, tool, "gh pr list", signed=False)  # the same name on PATH, bytes nobody signed
    assert out.get("permissionDecision") == "deny", out
    spec = out["hookSpecificOutput"]
    assert isinstance(spec, dict) and spec["permissionDecision"] == "deny"


def test_other_vs_code_tools_still_get_no_opinion(world: World) -> None:
    r = world.run("hook", "copilot", "--policy", str(world.policy), "--no-audit", env=world.env(),
                  stdin=json.dumps({"hook_event_name": "PreToolUse", "tool_name": "editFiles",
                                    "tool_input": {"files": ["src/main.ts"]}}))
    assert r.returncode == 0 and r.stdout.strip() == "", r.stdout
