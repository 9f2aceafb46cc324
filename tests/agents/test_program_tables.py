"""The program tables (facts/program_tables.py, issue 32) are what docs/agents.md shows, and every
program the gate models or the shipped policies name has one."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from atip_trust.agents.runners import RUNNERS
from atip_trust.agents.shell_model import Unprovable, programs
from atip_trust.facts.program_tables import TABLES, env_allowed

ROOT = Path(__file__).resolve().parents[2]


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_agents_doc", ROOT / "docs" / "make_agents_doc.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_committed_agents_doc_shows_the_tables_the_gate_uses() -> None:
    committed = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
    assert committed == generator().render(), "docs/agents.md is stale: run python docs/make_agents_doc.py"


def test_every_runner_and_every_program_a_shipped_policy_names_has_a_table() -> None:
    named: set[str] = set()
    for path in (ROOT / "policies").glob("*.json"):
        data = json.loads(path.read_text())
        perms = data.get("permissions", {})
        for rule in (*perms.get("allow", []), *perms.get("ask", []), *perms.get("deny", [])):
            text = rule if isinstance(rule, str) else rule.get("rule") or " ".join(
                p if isinstance(p, str) else p[0] for p in rule.get("prefix", []))
            first = text.removeprefix("Bash(").split(" ", 1)[0]
            if first and "*" not in first:
                named.add(first)
        named.update(c.split()[0] for c in data.get("requirements", {}).get("deniedCommands", []))
        named.update(t["name"] for t in data.get("tools", {}).get("deny", []) if "name" in t)
    from atip_trust.facts.programs import is_unmodelled_runner
    # A script of the user's own (policies/signed-scripts.json's deploy.sh, an example to rename) is no
    # system program a table could model; its interpreter (sh, bash, python3) is.
    own_scripts = {n for n in named if n.endswith((".sh", ".py"))}
    missing = {n for n in named - own_scripts if n not in TABLES and not is_unmodelled_runner(n)}
    assert set(RUNNERS) <= set(TABLES)
    assert not missing, f"programs the shipped policies name without a table: {missing}"


@pytest.mark.parametrize("line", ["HOME=. bash -lc ls", "HOME=. sh -c ls", "SUDO_ASKPASS=./evil sudo -A /bin/ls",
                                  "env ZDOTDIR=. bash -c ls"])
def test_a_runner_is_refused_the_variables_it_reads_itself(line: str) -> None:
    with pytest.raises(Unprovable, match="table|changes which program runs"):
        programs(line)


def test_a_runner_passes_other_variables_on_to_what_it_runs() -> None:
    assert env_allowed(TABLES["env"], "X") and not env_allowed(TABLES["git"], "X")
    assert [p.argv for p in programs("X=1 env tool")] == [("env", "tool"), ("tool",)]
