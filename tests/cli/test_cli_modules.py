"""cli/ without the cycle (issue 35 item 4): what the subcommands share lives below them (cli/common.py with
the one catch point, cli/parser.py, cli/streams.py and the *_flags.py modules), and no command imports
another or ``main`` back. ``main`` names each command it runs by its own module (a deferred import,
_base/lazy.py, so a command line loads only its subcommand's); ``serve`` answers through the shared catch
point with the commands a request runs (service/app.py), not through ``main``. Import circles themselves
are tests/base/test_layers.py's."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from atip_trust.cli import main
from atip_trust.cli.main import COMMANDS

CLI = Path(__file__).resolve().parents[2] / "atip_trust" / "cli"

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
    assert "atip_trust.cli.main" not in mods, f"{path.name} imports cli.main: take it from cli/common.py"


def test_the_shared_modules_import_no_command_and_not_main() -> None:
    for name in ("common.py", "parser.py", "streams.py", "policy_flags.py", "discovery_flags.py",
                 "identity_flags.py", "vsa_flags.py", "output.py"):
        mods = imported(CLI / name)
        assert not [m for m in mods if m.startswith(("atip_trust.cli.cmd_", "atip_trust.cli.main"))], name


def test_the_service_answers_without_main() -> None:
    """serve's requests run through cli/common.py's catch point with the commands themselves: neither the
    service nor the thin hook client imports ``main`` (which imports ``serve``), so no circle closes."""
    for path in [*sorted((CLI.parent / "service").glob("*.py")), CLI / "hook_client.py"]:
        assert "atip_trust.cli.main" not in imported(path), path.name


def deferred(path: Path) -> dict[str, str]:
    """``name = lazy_import("module")`` at the top level of ``path`` (an ``else:`` of ``if TYPE_CHECKING``
    included): name -> module."""
    found: dict[str, str] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                and getattr(node.value.func, "id", None) == "lazy_import" and isinstance(node.targets[0], ast.Name):
            arg = node.value.args[0]
            assert isinstance(arg, ast.Constant), ast.dump(node)
            found[node.targets[0].id] = str(arg.value)
    return found


def test_main_names_each_command_by_its_module_and_imports_none_by_a_computed_name() -> None:
    """Each command ``main`` runs is the module deferred under its own name (no string built at run time,
    no importlib), and each ``cmd_*.py`` is one ``main`` runs."""
    source = (CLI / "main.py").read_text(encoding="utf-8")
    assert "importlib" not in source
    cmds = {name: module for name, module in deferred(CLI / "main.py").items() if name.startswith("cmd_")}
    assert cmds == {p.stem: f"atip_trust.cli.{p.stem}" for p in CLI.glob("cmd_*.py")}
    for name, module in COMMANDS.items():
        assert module is getattr(main, f"cmd_{name.replace('-', '_')}"), name
        assert callable(module.register), name


def test_a_command_line_loads_only_the_command_it_names() -> None:
    """The parser of one subcommand is built from that module alone: ``hash`` loads no other command."""
    probe = ("import sys; from atip_trust.cli.main import build_parser; build_parser('hash'); "
             "print(sorted(m for m in sys.modules if m.startswith('atip_trust.cli.cmd_')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                         stdin=subprocess.DEVNULL, check=True).stdout
    assert out.strip() == "['atip_trust.cli.cmd_hash']"
