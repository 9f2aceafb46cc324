"""`atip-trust hook install claude-code --http URL [--token-env VAR]` (agents/install.py, docs/serve.md):
Claude Code's http hook form, posting to a running `atip-trust serve`. The entry sends the token from
an environment variable the agent may expand and blocks when the service cannot answer; only loopback
URLs are written; installing either form replaces the other, twice changes nothing, --uninstall removes it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from gate_world import World, make_world
from test_hook_install import cli, launcher

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX paths")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return make_world(tmp_path_factory.mktemp("install-http"))


def _install(home: Path, world: World, *flags: str) -> Any:
    r = cli("hook", "install", "claude-code", *flags, env={**world.env(), "HOME": str(home)})
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def _entries(home: Path) -> list[dict[str, Any]]:
    doc = json.loads((home / ".claude" / "settings.json").read_text())
    return [h for g in doc["hooks"]["PreToolUse"] for h in g["hooks"]]


def test_the_http_form_sends_the_token_from_an_allowed_variable_and_blocks_on_failure(world: World,
                                                                                       tmp_path: Path) -> None:
    _install(tmp_path, world, "--http", "http://127.0.0.1:8787", "--token-env", "MY_TOKEN")
    doc = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    (group,) = doc["hooks"]["PreToolUse"]
    assert group["matcher"] == "Bash"
    assert group["hooks"] == [{"type": "http", "url": "http://127.0.0.1:8787/v1/hooks/claude-code",
                               "headers": {"Authorization": "Bearer $MY_TOKEN"}, "allowedEnvVars": ["MY_TOKEN"],
                               "onFailure": "block"}]


def test_the_http_form_replaces_the_command_form_and_back_keeping_other_hooks_idempotent(world: World,
                                                                                        tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    other = {"type": "http", "url": "http://127.0.0.1:9000/other-hook"}
    settings.write_text(json.dumps({"model": "opus", "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [other]}]}}))
    prog = launcher(tmp_path / "prog")
    _install(tmp_path, world, "--executable", str(prog))
    entries = _entries(tmp_path)
    assert entries[0] == other and len(entries) == 2 and entries[1]["command"].startswith("/bin/sh -c ")
    _install(tmp_path, world, "--http", "http://localhost:8787/v1/hooks/claude-code")
    entries = _entries(tmp_path)
    assert entries[0] == other and len(entries) == 2 and entries[1]["type"] == "http"  # one atip-trust hook
    assert entries[1]["headers"] == {"Authorization": "Bearer $ATIP_TRUST_TOKEN"}  # the default variable
    after = settings.read_bytes()
    r = _install(tmp_path, world, "--http", "http://localhost:8787/v1/hooks/claude-code")
    assert "unchanged" in r.stdout and settings.read_bytes() == after
    _install(tmp_path, world, "--executable", str(prog))
    entries = _entries(tmp_path)
    assert entries[0] == other and len(entries) == 2 and entries[1]["type"] == "command"
    _install(tmp_path, world, "--http", "http://127.0.0.1:8787")
    r = _install(tmp_path, world, "--uninstall")
    assert "removed" in r.stdout
    left = json.loads(settings.read_text())
    assert left == {"model": "opus", "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [other]}]}}


@pytest.mark.parametrize("url", [
    "http://10.0.0.5:8787",  # another machine: the service never binds there, an attacker might
    "http://attacker.example:8787/v1/hooks/claude-code",
    "http://127.0.0.1.attacker.example:8787",
    "https://127.0.0.1:8787",  # the service speaks plain HTTP on loopback only
    "http://user:t0ken@127.0.0.1:8787",  # a credential in the URL ends up in logs
    "http://127.0.0.1:8787/v1/hooks/claude-code?token=x",
    "http://127.0.0.1:8787/v1/admit",  # not the hook's endpoint
    "http://127.0.0.1:port",
])
def test_a_url_that_is_not_the_loopback_services_hook_is_refused_and_nothing_written(world: World, tmp_path: Path,
                                                                                    url: str) -> None:
    r = cli("hook", "install", "claude-code", "--http", url, env={**world.env(), "HOME": str(tmp_path)})
    assert r.returncode == 2 and "--http" in r.stderr, r.stdout + r.stderr
    assert not (tmp_path / ".claude").exists()


@pytest.mark.parametrize("flags", [
    ["--token-env", "A B"], ["--token-env", "1X"], ["--token-env", "$X"],  # not a variable's name
    ["--token-env", "X"],  # without --http
    ["--http", "http://127.0.0.1:8787", "--policy", "p.json"],  # the service's flags, not the hook's
])
def test_bad_http_install_flags_are_refused(world: World, tmp_path: Path, flags: list[str]) -> None:
    r = cli("hook", "install", "claude-code", *flags, env={**world.env(), "HOME": str(tmp_path)}, cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert not (tmp_path / ".claude").exists()


@pytest.mark.parametrize("agent", ["codex", "gemini", "copilot", "cursor"])
def test_agents_without_http_hooks_refuse_the_http_form(world: World, tmp_path: Path, agent: str) -> None:
    r = cli("hook", "install", agent, "--http", "http://127.0.0.1:8787", env={**world.env(), "HOME": str(tmp_path)})
    assert r.returncode == 2 and "no http hooks" in r.stderr, r.stderr
