"""The default install stays out of the way (issue 32, item 9): the README's hook command for each agent
with the shipped default policy, on the lines an agent runs all day, answers no deny to any agent and
no question to Claude Code (its own permissions decide). Codex and Gemini turn a question into a denial,
so for them no opinion is the only answer that keeps out of the way."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from test_hook_agents import cursor_input
from test_hooks import decision, hook_input

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell commands")
ROOT = Path(__file__).resolve().parents[2]
COMMIT = ('git commit -m "$(cat <<\'EOF\'\nFix the parser budget\n\nCo-Authored-By: Claude <noreply@anthropic.com>\n'
          'EOF\n)"')
EVERYDAY = [
    "ls", "ls -la", "git status", "git diff", "git diff --stat HEAD~1", "git log --oneline -n 5", "git add -A",
    "git commit -m 'fix: budget'", COMMIT, "cat README.md", "grep -rn TODO .", "find . -name '*.py' -maxdepth 2",
    "pytest -q", "python3 -m pytest -q", "npm test", "make", "cargo build", "sed -n '1,20p' README.md",
    "head -n 20 README.md", "tail -n 5 README.md", "wc -l README.md", "jq .version package.json", "docker ps",
    "kubectl get pods", "pip install -e .", "for f in *.py; do wc -l \"$f\"; done", "export FOO=1",
    "export FOO=1 && npm test", "cat > notes.txt <<'EOF'\nhello $USER\nEOF", "git add -A && git commit -m x",
    "ls && git status", "grep x README.md | head", "some-tool-that-is-not-installed --flag",
]
AGENTS = ("claude-code", "codex", "gemini", "copilot", "cursor")


def readme_command(agent: str) -> list[str]:
    """The hook command the README's table installs for ``agent`` (its ``hook install`` flags minus those
    that only say where the settings go), run from this checkout."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(rf"`atip-trust hook install {agent}([^`]*)`", text)
    assert found, f"the README installs no {agent} hook"
    words, flags = [os.path.expanduser(w) for w in shlex.split(found.group(1))], []
    while words:
        word = words.pop(0)
        if word in ("--scope", "--settings", "--executable"):
            words.pop(0)
        elif word not in ("--print", "--uninstall"):
            flags.append(word)
    return [sys.executable, "-m", "atip_trust", "hook", agent, *flags]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("home")


@pytest.mark.parametrize("agent", AGENTS)
def test_everyday_lines_under_the_readme_snippet_and_the_default_policy(agent: str, home: Path) -> None:
    env = {**os.environ, "HOME": str(home), "CI": "true", "ATIP_CACHE_DIR": str(home / "cache")}
    env.pop("XDG_CONFIG_HOME", None)
    argv = readme_command(agent)
    refused = {}
    for line in EVERYDAY:
        stdin = cursor_input(line, str(ROOT)) if agent == "cursor" else hook_input(agent, line, str(ROOT))
        r = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, timeout=120, check=False,
                           cwd=ROOT)
        behavior, reason = decision(agent, r.stdout if r.stdout.strip() != "{}" else "")
        if r.returncode != 0 or behavior == "deny" or (agent == "claude-code" and behavior == "ask"):
            refused[line] = (r.returncode, behavior, reason[:300], r.stderr[-300:])
    assert not refused, json.dumps(refused, indent=1)


def _decide(policy_path: str, line: str, agent: str, cwd: Path) -> str | None:
    from atip_trust.admission.admit import load_admission_policy
    from atip_trust.admission.options import AdmitOptions
    from atip_trust.agents.formats import HookRequest
    from atip_trust.agents.hooks import Options, decide_command
    verdict = decide_command(HookRequest(agent, "Bash", line, cwd=str(cwd)),
                             policy=load_admission_policy(policy_path), options=Options(admit=AdmitOptions(audit=False)))
    return None if verdict is None else verdict.behavior


UNPROVABLE = ["eval ls", "$CMD --help", "source ./env.sh && make", "ls $(pwd)", "f() { ls; }; f"]


@pytest.mark.parametrize("line", UNPROVABLE)
def test_a_line_it_cannot_prove_is_no_business_of_a_policy_that_names_no_program(line: str, tmp_path: Path) -> None:
    """Codex and Gemini turn a question into a denial: under the shipped default (which names no program)
    a line whose programs cannot all be known gets no opinion; a policy that names one still asks."""
    from atip_trust.policy.load import default_policy_path
    assert _decide(default_policy_path(), line, "codex", tmp_path) in (None, "passthrough")
    named = tmp_path / "names-gh.json"
    named.write_text(json.dumps({"version": 1, "permissions": {"deny": ["gh repo delete *"]}}))
    assert _decide(str(named), line, "codex", tmp_path) == "ask"


def test_a_program_that_is_not_installed_and_not_governed_gets_no_opinion(tmp_path: Path) -> None:
    named = tmp_path / "names-gh.json"
    named.write_text(json.dumps({"version": 1, "permissions": {"deny": ["gh repo delete *"]}}))
    assert _decide(str(named), "no-such-tool-anywhere --x", "claude-code", tmp_path) in (None, "passthrough")
    assert _decide(str(named), "./build/no-such-tool", "claude-code", tmp_path) in (None, "passthrough")
    # ...unless the line itself can make it first: then what runs is not known.
    assert _decide(str(named), "cp /bin/ls ./made && ./made", "claude-code", tmp_path) == "ask"
