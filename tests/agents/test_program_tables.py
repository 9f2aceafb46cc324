"""The program tables (facts/program_tables.py, issue 32) are what docs/agents.md shows, and every
program the gate models or the shipped policies name has one."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from atip_trust.agents import tables
from atip_trust.agents.runners import RUNNERS
from atip_trust.agents.shell_model import Unprovable, programs
from atip_trust.facts.git_options import GIT_SUBCOMMANDS
from atip_trust.facts.program_tables import TABLES, env_allowed

import doc_scripts

ROOT = Path(__file__).resolve().parents[2]


def generator() -> ModuleType:
    return doc_scripts.generator("make_agents_doc")


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


def _valued(text: str) -> list[str]:
    """The options the gate reads from a table's list as taking a value in the next word (agents/tables.py:
    where two lists meet, the kind that takes less)."""
    spec = tables._spec(text)
    names = {t.split("=", 1)[0] for t in text.split() if t.startswith("--")}
    return [f"-{c}" for c, kind in spec.short.items() if kind == tables._VALUED] + \
        [n for n in sorted(names) if spec.long(n[2:]) == tables._VALUED]


def _takes_next_word(argv: list[str], option: str, cwd: Path) -> bool:
    """The program reads the word after ``option`` as its value: it does not complain about it as an
    option of its own."""
    r = subprocess.run([*argv, option, "--bogus-xyz"], cwd=cwd, capture_output=True, text=True, timeout=20,
                       stdin=subprocess.DEVNULL, env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "LANG": "C"})
    said = r.stdout + r.stderr
    return not ("bogus-xyz" in said and any(k in said for k in ("unknown option", "unrecognized", "is unknown",
                                                                 "unknown switch", "invalid option")))


@pytest.mark.skipif(shutil.which("git") is None or shutil.which("tar") is None, reason="needs git and tar")
def test_an_option_the_tables_say_takes_a_value_takes_the_next_word(tmp_path: Path) -> None:
    """The arity in the tables is the installed programs' own: a word after an option the table says takes
    a value is that value to the program too (else the gate would skip a word the program reads as an
    option). Plumbing that would write or reach a network is run in a throw-away repository."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, timeout=30)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "--allow-empty",
                    "-m", "t"], cwd=tmp_path, check=True, timeout=30)  # git log reads options only with a commit
    wrong = []
    for sub in ("log", "diff", "show", "status", "grep", "blame", "branch", "tag", "commit", "rev-list",
                "shortlog", "ls-files", "format-patch"):
        for option in _valued(GIT_SUBCOMMANDS[sub]):
            if not _takes_next_word(["git", sub], option, tmp_path):
                wrong.append(f"git {sub} {option}")
    for name, argv in (("tar", ["tar", "-c", "-f", "/dev/null"]), ("sort", ["sort"]), ("sed", ["sed"])):
        options = TABLES[name].options
        assert options is not None
        wrong += [f"{name} {o}" for o in _valued(options) if o != "--pax-option"  # (it names the value's key)
                  and not _takes_next_word(argv, o, tmp_path)]
    assert not wrong, wrong
