"""The public API is ``atip_trust.__all__``: at most 32 names (30 in issue 23; 32 since issue 35 made
``VerifyOptions`` and ``DecisionInput`` public, the types ``verify`` and ``decide`` take), read from the one table
``atip_trust._API``. Type checkers cannot read that table, so ``atip_trust/__init__.py`` also imports
the same names under ``TYPE_CHECKING``; this test checks that the two views name the same names from
the same modules, so the list is written once and checked, not kept in a third copy here. Every name
resolves, and ``import atip_trust`` loads nothing until a name is used.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import atip_trust

INIT = Path(atip_trust.__file__)
MAX_PUBLIC_NAMES = 32


def static_view(source: str) -> dict[str, str]:
    """name -> module of every ``from M import N`` under ``if TYPE_CHECKING:`` at the top level,
    leaving out the typing helpers the module uses itself."""
    found: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom) and stmt.module and stmt.module != "typing":
                    found.update({alias.asname or alias.name: stmt.module for alias in stmt.names})
    return found


def test_public_api_has_at_most_32_names() -> None:
    assert len(atip_trust.__all__) <= MAX_PUBLIC_NAMES, sorted(atip_trust.__all__)


def test_all_is_the_one_table() -> None:
    assert atip_trust.__all__ == sorted(atip_trust._API)


def test_static_view_names_the_same_names_from_the_same_modules() -> None:
    assert static_view(INIT.read_text(encoding="utf-8")) == atip_trust._API


def test_a_static_view_that_drifted_would_be_caught() -> None:
    source = INIT.read_text(encoding="utf-8")
    planted = source.replace("    from atip_trust.admission.held import HeldTool\n",
                             "    from atip_trust.admission.held import HeldTool\n"
                             "    from atip_trust.execution.child import run_verified\n", 1)
    assert planted != source
    assert static_view(planted) != atip_trust._API


def test_every_public_name_resolves_from_its_module() -> None:
    for name, module in atip_trust._API.items():
        value = getattr(atip_trust, name)
        assert value is not None, name
        assert value is getattr(sys.modules[module], name), name


def test_no_public_name_is_also_a_submodule() -> None:
    """``atip_trust.evaluation.evaluate`` was both a function in the list and the module atip_trust/evaluation/evaluate.py:
    once anything imported the module, ``from atip_trust import evaluate`` gave the module."""
    import importlib.util

    assert [n for n in atip_trust._API if importlib.util.find_spec(f"atip_trust.{n}") is not None] == []


def test_unknown_name_is_an_attribute_error() -> None:
    try:
        atip_trust.no_such_name  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as err:
        assert "no_such_name" in str(err)
    else:
        raise AssertionError("atip_trust.no_such_name resolved")


def test_import_atip_trust_loads_no_module_of_a_public_name() -> None:
    """Only the deferral itself (_base/lazy.py) is loaded; each name's module waits for its first use."""
    probe = "import sys, atip_trust; print(sorted(m for m in sys.modules if m.startswith('atip_trust')))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                         stdin=subprocess.DEVNULL, check=True).stdout
    assert out.strip() == "['atip_trust', 'atip_trust._base', 'atip_trust._base.lazy']"


def test_each_public_module_is_deferred_once_under_its_own_name() -> None:
    """``_MODULES`` (the deferred imports ``__getattr__`` reads) holds exactly the modules ``_API`` names,
    each key the module its deferred import loads: a name whose module were missing or misspelt there
    would be an AttributeError at its first use, not at import."""
    assert sorted(atip_trust._MODULES) == sorted(set(atip_trust._API.values()))
    assert all(lazy._lazy_name == name for name, lazy in atip_trust._MODULES.items())
