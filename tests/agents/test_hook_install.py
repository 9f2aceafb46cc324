"""`atip-trust hook install AGENT` (agents/install.py): the settings it writes make the hook block whenever it
cannot answer — no atip-trust on the agent's PATH, the program removed, a broken interpreter, a crash, a
kill — while every answer the program does give reaches the agent unchanged. Each written command is run
as the agent runs it: by a real shell (sh and bash), with the agent's JSON on standard input."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from atip_trust.agents.formats import AGENTS, ERROR_EXIT
from atip_trust.agents.install import NO_ANSWER, SETTINGS

from gate_world import World, make_world
from test_hook_agents import cursor_input
from test_hooks import hook_input
from verify_helpers import run_cli

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell commands")
SHELLS = [s for s in ("/bin/sh", shutil.which("bash")) if s]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return make_world(tmp_path_factory.mktemp("install"))


def launcher(folder: Path, body: str = "") -> Path:
    """An ``atip-trust`` program outside every PATH the agent has: this checkout's CLI, or ``body``."""
    folder.mkdir(parents=True, exist_ok=True)
    prog = folder / "atip-trust"
    prog.write_text(body or f'#!/bin/sh\nexec "{sys.executable}" -m atip_trust "$@"\n')
    prog.chmod(0o755)
    return prog


def cli(*argv: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli(argv, env=env, cwd=cwd, timeout=120)  # in-process, as a fresh child would run it


def commands(agent: str, settings: Path) -> list[str]:
    """The shell commands the agent would run for a shell call, read from its settings file."""
    row = SETTINGS[agent]
    text = settings.read_text(encoding="utf-8")
    doc: Any = tomllib.loads(text) if row.form == "toml" else json.loads(text)
    out = []
    for item in doc["hooks"][row.event]:
        if row.matcher is not None:
            assert item["matcher"] == row.matcher
            out += [h[row.command_key] for h in item["hooks"]]
        else:
            out.append(item[row.command_key])
    return out


def agent_input(agent: str, line: str, cwd: str) -> str:
    return cursor_input(line, cwd) if agent == "cursor" else hook_input(agent, line, cwd)


def as_agent(command: str, agent: str, line: str, env: dict[str, str], shell: str = "/bin/sh",
             cwd: str = "/") -> subprocess.CompletedProcess[str]:
    """Run ``command`` as the agent does: its shell, its JSON on standard input."""
    return subprocess.run([shell, "-c", command], input=agent_input(agent, line, cwd), capture_output=True,
                          text=True, env=env, timeout=120, cwd=cwd)


def behavior(agent: str, stdout: str) -> str | None:
    if not stdout.strip():
        return None
    out = json.loads(stdout)
    if agent in ("claude-code", "codex"):
        return str(out["hookSpecificOutput"]["permissionDecision"])
    key = {"gemini": "decision", "cursor": "permission", "copilot": "permissionDecision"}[agent]
    return out.get(key)


def blocked(agent: str, r: subprocess.CompletedProcess[str]) -> bool:
    """The agent's blocking answer: exit 2 with the reason on stderr (Claude Code, Codex, Gemini CLI), or a
    deny in its JSON (Copilot CLI, Cursor)."""
    if ERROR_EXIT[agent]:
        return r.returncode == 2 and NO_ANSWER in r.stderr
    return r.returncode == 0 and behavior(agent, r.stdout) == "deny" and NO_ANSWER in r.stdout


def passthrough(world: World) -> Path:
    """The world's policy with the shipped default's answer for programs it does not name: no opinion."""
    return world.write_policy("install", hooks={"unlisted": "passthrough"})


def install(agent: str, home: Path, world: World, prog: Path, *flags: str) -> Path:
    env = {**world.env(), "HOME": str(home)}
    env.pop("CODEX_HOME", None)
    r = cli("hook", "install", agent, "--policy", str(passthrough(world)), "--bundle-dir", str(world.bundles),
            "--no-audit", "--executable", str(prog), *flags, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    settings = home / SETTINGS[agent].user
    assert settings.is_file(), r.stdout
    return settings


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize(("line", "signed"), [("gh pr list", True), ("gh repo delete x", False),
                                               ("grep x .", True)])
def test_the_installed_hook_gives_the_programs_own_answer_with_no_atip_trust_on_the_agents_path(
        agent: str, line: str, signed: bool, world: World, tmp_path: Path) -> None:
    prog = launcher(tmp_path / "prog")
    (command,) = commands(agent, install(agent, tmp_path / "home", world, prog))
    env = world.env(signed=signed)
    assert shutil.which("atip-trust", path=env["PATH"]) is None
    direct = subprocess.run([str(prog), "hook", agent, "--policy", str(passthrough(world)), "--bundle-dir",
                             str(world.bundles), "--no-audit"], input=agent_input(agent, line, str(world.dir)),
                            capture_output=True, text=True, env=env, timeout=120)
    for shell in SHELLS:
        r = as_agent(command, agent, line, env, shell, str(world.dir))
        assert (r.returncode, r.stdout) == (direct.returncode, direct.stdout), (shell, r.stderr)
    expected = {"gh pr list": "allow", "gh repo delete x": "deny", "grep x .": None}[line]
    if agent == "codex" and expected == "allow":
        expected = None  # Codex acts on allow only with a rewrite (--pin): no opinion
    assert behavior(agent, direct.stdout) == expected, direct.stdout + direct.stderr


@pytest.mark.parametrize("agent", AGENTS)
def test_the_installed_hook_blocks_once_the_program_is_removed(agent: str, world: World, tmp_path: Path) -> None:
    prog = launcher(tmp_path / "prog")
    (command,) = commands(agent, install(agent, tmp_path / "home", world, prog))
    prog.unlink()
    for shell in SHELLS:
        r = as_agent(command, agent, "gh pr list", world.env(), shell)
        assert blocked(agent, r), (shell, r.returncode, r.stdout, r.stderr)
        assert "exit 127" in r.stderr


BROKEN = {
    "interpreter_missing": "#!/nonexistent/python3\n",  # a removed virtualenv: exit 127 from the kernel
    "not_executable": None,
    "crash": "#!/bin/sh\necho 'Traceback (most recent call last):' >&2\nexit 1\n",
    "killed": "#!/bin/sh\nkill -9 $$\n",
    "usage_error": "#!/bin/sh\necho 'atip-trust: error: unrecognized arguments' >&2\nexit 2\n",
    "half_an_answer": "#!/bin/sh\nprintf '{\"permission'\nkill -9 $$\n",
}


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("how", sorted(BROKEN))
def test_a_program_that_does_not_answer_is_the_agents_blocking_answer(agent: str, how: str, world: World,
                                                                      tmp_path: Path) -> None:
    prog = launcher(tmp_path / "prog")
    (command,) = commands(agent, install(agent, tmp_path / "home", world, prog))
    if how == "not_executable":
        prog.chmod(0o644)
    else:
        prog.write_text(BROKEN[how])
    r = as_agent(command, agent, "gh pr list", world.env())
    if how == "usage_error" and ERROR_EXIT[agent] == 2:
        assert r.returncode == 2  # the program's own exit 2 blocks these agents as it is
    else:
        assert blocked(agent, r), (r.returncode, r.stdout, r.stderr)


@pytest.mark.parametrize("agent", ["gemini", "cursor"])
def test_an_empty_answer_is_no_answer_where_no_opinion_is_braces(agent: str, world: World, tmp_path: Path) -> None:
    prog = launcher(tmp_path / "prog")
    (command,) = commands(agent, install(agent, tmp_path / "home", world, prog))
    prog.write_text("#!/bin/sh\nexit 0\n")
    assert blocked(agent, as_agent(command, agent, "gh pr list", world.env()))


def test_the_agents_own_fail_closed_settings_are_written(world: World, tmp_path: Path) -> None:
    prog = launcher(tmp_path / "prog")
    claude = json.loads(install("claude-code", tmp_path / "h1", world, prog).read_text())
    assert claude["hooks"]["PreToolUse"][0]["hooks"][0]["onFailure"] == "block"
    cursor = json.loads(install("cursor", tmp_path / "h2", world, prog).read_text())
    assert cursor["version"] == 1 and cursor["hooks"]["beforeShellExecution"][0]["failClosed"] is True


def test_install_merges_keeps_other_settings_replaces_a_bare_hook_and_is_idempotent(world: World,
                                                                                   tmp_path: Path) -> None:
    home = tmp_path / "home"
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    other = {"type": "command", "command": "/usr/local/bin/lint-hook"}
    bare = {"type": "command", "command": "atip-trust hook claude-code --bundle-dir ~/.config/atip-trust/bundles"}
    settings.write_text(json.dumps({"model": "opus", "permissions": {"allow": ["Bash(ls *)"]},
                                    "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [other, bare]}],
                                              "Stop": [{"hooks": [other]}]}}))
    settings.chmod(0o600)
    before = settings.read_bytes()
    prog = launcher(tmp_path / "prog")
    install("claude-code", home, world, prog)
    doc = json.loads(settings.read_text())
    assert doc["model"] == "opus" and doc["permissions"] == {"allow": ["Bash(ls *)"]}
    assert doc["hooks"]["Stop"] == [{"hooks": [other]}]
    cmds = commands("claude-code", settings)
    assert cmds[0] == other["command"] and len(cmds) == 2 and cmds[1].startswith("/bin/sh -c ")
    assert bare["command"] not in cmds  # the README's bare form fails open: replaced
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600
    (backup,) = list(settings.parent.glob("settings.json.atip-trust-*.bak"))
    assert backup.read_bytes() == before
    after = settings.read_bytes()
    r = cli("hook", "install", "claude-code", "--policy", str(passthrough(world)), "--bundle-dir", str(world.bundles),
            "--no-audit", "--executable", str(prog), env={**world.env(), "HOME": str(home)})
    assert "unchanged" in r.stdout and settings.read_bytes() == after
    assert len(list(settings.parent.glob("*.bak"))) == 1
    r = cli("hook", "install", "claude-code", "--uninstall", env={**world.env(), "HOME": str(home)})
    assert r.returncode == 0 and "removed" in r.stdout
    left = json.loads(settings.read_text())
    assert left["hooks"]["PreToolUse"] == [{"matcher": "Bash", "hooks": [other]}] and left["model"] == "opus"


@pytest.mark.parametrize("agent", ["copilot", "cursor", "gemini"])
def test_uninstall_removes_a_file_that_install_created(agent: str, world: World, tmp_path: Path) -> None:
    settings = install(agent, tmp_path / "home", world, launcher(tmp_path / "prog"))
    r = cli("hook", "install", agent, "--uninstall", env={**world.env(), "HOME": str(tmp_path / "home")})
    assert r.returncode == 0 and not settings.exists(), r.stdout + r.stderr
    r = cli("hook", "install", agent, "--uninstall", env={**world.env(), "HOME": str(tmp_path / "home")})
    assert r.returncode == 0 and "no atip-trust hook" in r.stdout and not settings.exists()


def test_codex_config_toml_gets_a_block_of_its_own_beside_the_users_settings(world: World, tmp_path: Path) -> None:
    home = tmp_path / "home"
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('model = "gpt-5"\n\n[mcp_servers.docs]\ncommand = "docs-server"\n')
    prog = launcher(tmp_path / "prog")
    install("codex", home, world, prog)
    doc = tomllib.loads(config.read_text())
    assert doc["model"] == "gpt-5" and doc["mcp_servers"]["docs"]["command"] == "docs-server"
    (command,) = commands("codex", config)
    prog.unlink()
    assert blocked("codex", as_agent(command, "codex", "gh pr list", world.env()))
    cli("hook", "install", "codex", "--uninstall", env={**world.env(), "HOME": str(home)})
    assert config.read_text() == 'model = "gpt-5"\n\n[mcp_servers.docs]\ncommand = "docs-server"\n'


def test_print_shows_the_file_and_writes_nothing(world: World, tmp_path: Path) -> None:
    r = cli("hook", "install", "gemini", "--print", "--scope", "project", env={**world.env(), "HOME": str(tmp_path)},
            cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["hooks"]["BeforeTool"][0]["matcher"] == "run_shell_command"
    assert not (tmp_path / ".gemini").exists()


def test_a_settings_file_that_does_not_parse_is_left_alone(world: World, tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text('{"hooks": [oops')
    r = cli("hook", "install", "claude-code", "--settings", str(settings), env=world.env())
    assert r.returncode == 2 and "not valid JSON" in r.stderr
    assert settings.read_text() == '{"hooks": [oops'


def test_relative_policy_and_bundle_paths_are_written_absolute(world: World, tmp_path: Path) -> None:
    (tmp_path / "p.json").write_text('{"version": 1}')
    r = cli("hook", "install", "claude-code", "--print", "--policy", "p.json", "--bundle-dir", "b", "--pin",
            "-R", "example-org/tools", env={**world.env(), "HOME": str(tmp_path)}, cwd=tmp_path)
    (command,) = [h["command"] for g in json.loads(r.stdout)["hooks"]["PreToolUse"] for h in g["hooks"]]
    assert f"--policy {tmp_path / 'p.json'}" in command and f"--bundle-dir {tmp_path / 'b'}" in command
    assert " --pin" in command and "-R example-org/tools" in command  # gh's spelling kept: gh's defaults


def test_install_flags_are_refused_on_a_plain_hook_call(world: World) -> None:
    r = cli("hook", "claude-code", "--uninstall", env=world.env())
    assert r.returncode == 2 and "hook install" in (r.stdout + r.stderr)


def test_the_settings_path_follows_home_scope_and_codex_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from atip_trust.agents.install import settings_path
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    assert settings_path("copilot", "user") == str(tmp_path / ".copilot/hooks/atip-trust.json")
    assert settings_path("copilot", "project", str(tmp_path / "repo")) == str(tmp_path / "repo/.github/hooks/atip-trust.json")
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "cx"))
    assert settings_path("codex", "user") == str(tmp_path / "cx" / "config.toml")
    assert os.path.isabs(settings_path("cursor", "project"))


def readme_rows() -> list[tuple[str, str, str]]:
    """(agent, install command, settings file) from the README's agent table."""
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| [^|]+ \| `(atip-trust hook install ([\w-]+)[^`]*)` \| `([^`]+)`", text, re.M)
    return [(agent, command, path) for command, agent, path in rows]


def test_the_readme_table_installs_every_agent() -> None:
    assert sorted(agent for agent, _, _ in readme_rows()) == sorted(AGENTS)


@pytest.mark.parametrize(("agent", "line", "where"), readme_rows())
def test_the_readme_install_command_as_written_gives_a_hook_that_blocks_without_its_program(
        agent: str, line: str, where: str, world: World, tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    env = {**world.env(), "HOME": str(home)}
    env.pop("CODEX_HOME", None)
    r = cli(*shlex.split(line)[1:], env=env, cwd=project)
    assert r.returncode == 0, r.stdout + r.stderr
    settings = Path(where.replace("~", str(home), 1)) if where.startswith("~") else project / where
    assert settings.is_file(), (where, r.stdout)
    (command,) = commands(agent, settings)
    words = shlex.split(command)
    assert words[:2] == ["/bin/sh", "-c"] and os.path.isabs(words[3]) and os.access(words[3], os.X_OK)
    answer = as_agent(command, agent, "ls -la", world.env(), cwd=str(world.dir))
    assert not blocked(agent, answer) and answer.returncode == 0, answer.stdout + answer.stderr
    gone = shlex.join([*words[:3], str(tmp_path / "removed" / "atip-trust"), *words[4:]])
    assert blocked(agent, as_agent(gone, agent, "ls -la", world.env()))


@pytest.mark.parametrize("agent", ["claude-code", "cursor"])
def test_paths_with_spaces_quotes_and_dollars_survive_the_shell(agent: str, world: World, tmp_path: Path) -> None:
    odd = tmp_path / "it's a $HOME `dir`"
    prog = launcher(odd / "bin")
    policy = odd / "p o l.json"
    policy.write_bytes(passthrough(world).read_bytes())
    env = {**world.env(), "HOME": str(tmp_path / "home")}
    r = cli("hook", "install", agent, "--policy", str(policy), "--bundle-dir", str(world.bundles), "--no-audit",
            "--executable", str(prog), env=env)
    assert r.returncode == 0, r.stderr
    (command,) = commands(agent, tmp_path / "home" / SETTINGS[agent].user)
    answer = as_agent(command, agent, "gh pr list", world.env(), cwd=str(world.dir))
    assert behavior(agent, answer.stdout) == "allow", answer.stdout + answer.stderr
    prog.unlink()
    assert blocked(agent, as_agent(command, agent, "gh pr list", world.env()))
