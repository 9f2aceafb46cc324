"""Attacks on ``atip-trust doctor``'s "agent hooks" verdict: settings that hold atip-trust's installed,
fail-closed hook entry where the agent never runs it for a shell line. doctor must not call them ``ok``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from atip_trust.cli.main import main

from test_doctor import doctor, home, problems  # noqa: F401 - the fixture

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX paths and modes")


def _installed(home: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, dict[str, Any]]:
    assert main(["hook", "install", "claude-code"]) == 0
    capsys.readouterr()
    settings = home / ".claude" / "settings.json"
    return settings, json.loads(settings.read_text())


@pytest.mark.parametrize("matcher", ["Read", "Edit|Write", "bash", "NotBash"])
def test_the_installed_hook_under_another_tools_matcher_is_a_problem(
        home: Path, capsys: pytest.CaptureFixture[str], matcher: str) -> None:  # noqa: F811
    """The wrapper entry moved under a group whose matcher is not the shell tool: Bash lines run
    unhooked, yet the entry alone looks fail-closed."""
    settings, doc = _installed(home, capsys)
    doc["hooks"]["PreToolUse"][0]["matcher"] = matcher
    settings.write_text(json.dumps(doc))
    rc, out = doctor(capsys)
    assert rc == 1 and any("matcher" in m for m in problems(out, "agent hooks")), out


@pytest.mark.parametrize("matcher", ["Bash", "*", "", "Bash|Edit", "Ba.*"])
def test_a_matcher_that_covers_the_shell_tool_stays_in_force(
        home: Path, capsys: pytest.CaptureFixture[str], matcher: str) -> None:  # noqa: F811
    settings, doc = _installed(home, capsys)
    doc["hooks"]["PreToolUse"][0]["matcher"] = matcher
    settings.write_text(json.dumps(doc))
    rc, out = doctor(capsys)
    assert rc == 0, problems(out, "agent hooks")


def test_hooks_disabled_by_the_settings_are_a_problem(home: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    """Claude Code's ``disableAllHooks: true`` turns every hook off: the entry beside it guards nothing."""
    settings, doc = _installed(home, capsys)
    settings.write_text(json.dumps({**doc, "disableAllHooks": True}))
    rc, out = doctor(capsys)
    assert rc == 1 and any("disableAllHooks" in m for m in problems(out, "agent hooks")), out


def test_hooks_disabled_by_the_projects_local_settings_are_a_problem(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    """The hook is installed in the user's settings; the project's ``.claude/settings.local.json`` (not
    checked in, read by Claude Code after the others) turns every hook off."""
    _installed(home, capsys)
    local = Path.cwd() / ".claude" / "settings.local.json"
    local.parent.mkdir()
    local.write_text(json.dumps({"disableAllHooks": True}))
    rc, out = doctor(capsys)
    assert rc == 1 and any("disableAllHooks" in m and "settings.local.json" in m
                           for m in problems(out, "agent hooks")), out
