"""cli/ without the cycle (issue 35 item 4, in part): what the subcommands share lives below them
(cli/common.py and the *_flags.py modules), and no command imports another or ``main`` back — ``serve``
excepted, which answers with the whole command line. ``main`` still loads the command it is given by its
module name (importlib): a function-level import is what tests/base/test_layers.py refuses until the one
way to defer an import (item 2) is settled."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from atip_trust.cli.main import COMMANDS

CLI = Path(__file__).resolve().parents[2] / "atip_trust" / "cli"

#: Commands allowed to import ``cli.main``, and why.
MAY_IMPORT_MAIN = {"cmd_serve": "serve parses each forwarded request with the whole command line"}


def imported(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth (function-level imports included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


@pytest.mark.parametrize("path", sorted(CLI.glob("cmd_*.py")), ids=lambda p: p.stem)
def test_a_command_imports_no_other_command_and_not_main(path: Path) -> None:
    mods = imported(path)
    others = sorted(m for m in mods if m.startswith("atip_trust.cli.cmd_") and m != f"atip_trust.cli.{path.stem}")
    assert not others, f"{path.name} imports another command: {others} (share it from a module below both)"
    if path.stem not in MAY_IMPORT_MAIN:
        assert "atip_trust.cli.main" not in mods, f"{path.name} imports cli.main: take it from cli/common.py"


def test_the_shared_modules_import_no_command_and_not_main() -> None:
    for name in ("common.py", "policy_flags.py", "discovery_flags.py", "identity_flags.py", "vsa_flags.py",
                 "output.py"):
        mods = imported(CLI / name)
        assert not [m for m in mods if m.startswith(("atip_trust.cli.cmd_", "atip_trust.cli.main"))], name


def test_every_command_main_names_is_a_module_that_registers_and_every_module_is_named() -> None:
    for name in COMMANDS:
        module = importlib.import_module(f"atip_trust.cli.cmd_{name.replace('-', '_')}")
        assert callable(module.register), name
    assert {p.stem for p in CLI.glob("cmd_*.py")} == {f"cmd_{n.replace('-', '_')}" for n in COMMANDS}
