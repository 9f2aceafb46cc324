"""RFC §3.6 interactive effects at execution: a command that needs a terminal or input on stdin is
refused with ``INTERACTIVE_REQUIRED`` when none is provided, never run to hang or fail silently —
by ``atip-trust exec`` (a real subprocess, stdin as the caller gives it) and by the call loop (whose
child never has a stdin or a terminal, so no person's "yes" can help)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from atip_trust.facts.effects import interactive_need

from gate_world import World, make_world
from test_bridge_loop import Loop, loop, response, shown  # noqa: F401 - loop: the call loop's fixture


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


def _tool_with_metadata(world: World, effects: dict[str, Any]) -> tuple[Path, Path]:
    sentinel = world.dir / "ran"
    world.tool("tool", f"#!/bin/sh\necho ran >> {sentinel}\necho \"ran $*\"\n".encode())
    meta = world.dir / "tool.json"
    meta.write_text(json.dumps({"atip": {"version": "0.6"}, "name": "tool", "version": "1",
                                "description": "A tool", "commands": {
                                    "login": {"description": "Log in", "effects": effects},
                                    "status": {"description": "Status",
                                               "effects": {"interactive": {"stdin": "none", "tty": False}}}}}))
    return meta, sentinel


def _exec(world: World, meta: Path, *argv: str, stdin: int | str) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, "-m", "atip_trust", "exec", "--policy", str(world.policy), "--bundle-dir",
            str(world.bundles), "--audit-log", str(world.audit), "--metadata", str(meta), "--", *argv]
    if isinstance(stdin, str):
        return subprocess.run(args, capture_output=True, text=True, env=world.env(), input=stdin, timeout=120)
    return subprocess.run(args, capture_output=True, text=True, env=world.env(), stdin=stdin, timeout=120)


#: (declared interactive effects, stdin given to exec, runs?).
RFC_3_6_INTERACTIVE_TABLE: list[tuple[dict[str, Any], int | str, bool]] = [
    ({"stdin": "password"}, subprocess.DEVNULL, False),
    ({"stdin": "required"}, subprocess.DEVNULL, False),
    ({"tty": True}, subprocess.DEVNULL, False),
    ({"tty": True}, "piped input\n", False),  # a pipe is no terminal
    ({"stdin": "password"}, "hunter2\n", True),  # input is provided: the tool reads it
    ({"stdin": "required"}, "data\n", True),
    ({"stdin": "optional", "prompts": True}, subprocess.DEVNULL, True),  # a prompt on EOF is the tool's "no"
]


@pytest.mark.parametrize(("inter", "stdin", "runs"), RFC_3_6_INTERACTIVE_TABLE)
def test_rfc_3_6_exec_refuses_an_interactive_command_without_its_input(
        world: World, inter: dict[str, Any], stdin: int | str, runs: bool) -> None:
    meta, sentinel = _tool_with_metadata(world, {"interactive": inter})
    r = _exec(world, meta, "tool", "login", stdin=stdin)
    if runs:
        assert r.returncode == 0 and r.stdout == "ran login\n", r.stdout + r.stderr
        return
    assert r.returncode == 1, r.stdout + r.stderr
    assert "INTERACTIVE_REQUIRED" in r.stdout + r.stderr and not sentinel.exists()
    line = json.loads(world.audit.read_text().splitlines()[-1])
    assert line["decision"] == "deny" and "INTERACTIVE_REQUIRED" in {x["code"] for x in line["reasons"]}


def test_rfc_3_6_exec_runs_the_tools_other_commands_without_stdin(world: World) -> None:
    meta, sentinel = _tool_with_metadata(world, {"interactive": {"stdin": "password"}})
    r = _exec(world, meta, "tool", "status", stdin=subprocess.DEVNULL)
    assert r.returncode == 0 and r.stdout == "ran status\n", r.stdout + r.stderr


@pytest.mark.parametrize("inter", [{"stdin": "password"}, {"stdin": "required"}, {"tty": True}])
def test_rfc_3_6_the_call_loop_skips_an_interactive_command_even_when_a_person_would_confirm(
        loop: Loop, inter: dict[str, Any]) -> None:
    lp = loop
    meta = json.loads(lp.meta.read_text())
    meta["commands"]["pr"]["commands"]["view"]["effects"] = {"network": True, "interactive": inter}
    lp.meta.write_text(json.dumps(meta))
    policy = lp.policy()
    surface = lp.surface("openai", policy)
    [out] = lp.call("openai", response("openai", "gh_pr_view", {"ref": "1"}), surface, policy,
                    confirm=lambda _call, _decision: True)
    result = shown("openai", out.message)
    assert out.status == "denied" and result["error"]["class"] == "interactive_required", result
    assert "INTERACTIVE_REQUIRED" in {v["code"] for v in result["violations"]}
    assert lp.runs() == 0
    line = json.loads(lp.audit.read_text().splitlines()[-1])
    assert line["decision"] == "deny" and line["via"] == "bridge"


def test_rfc_3_6_interactive_need_table() -> None:
    assert interactive_need({"interactive": {"stdin": "password"}}) is not None
    assert interactive_need({"interactive": {"tty": True}}) is not None
    assert interactive_need({"interactive": {"stdin": "optional", "prompts": True}}) is None
    assert interactive_need({"interactive": {"tty": "yes"}}) is None  # not a boolean: no claim
    assert interactive_need(None) is None and interactive_need({}) is None
