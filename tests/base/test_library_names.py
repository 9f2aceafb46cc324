"""docs/library.md's "Every public name" section names each name of ``atip_trust.__all__`` with one
example (issue 35, item 6): a heading per name, a Python block that parses, uses that name through
``atip_trust.``, and calls it (and the other public names it calls) only with attributes and keywords
they have. A name added to the API without its example, or an example left behind by a rename, fails.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import atip_trust

LIBRARY_DOC = Path(__file__).resolve().parents[2] / "docs" / "library.md"
SECTION = "## Every public name"


def _section() -> str:
    text = LIBRARY_DOC.read_text(encoding="utf-8")
    assert SECTION in text, f"docs/library.md has no {SECTION!r} section"
    rest = text.split(SECTION, 1)[1]
    return re.split(r"\n## ", rest, maxsplit=1)[0]


def examples() -> dict[str, str]:
    """name -> the code of the first Python block under its ``#### `name` `` heading."""
    found: dict[str, str] = {}
    for m in re.finditer(r"^#### `([^`]+)`\n+```python\n(.*?)^```", _section(), re.M | re.S):
        found.setdefault(m.group(1), m.group(2))
    return found


def _public_uses(tree: ast.AST) -> list[tuple[str, list[str], ast.Call | None]]:
    """(name, attribute chain after it, the call it is the function of) for each ``atip_trust.<name>...``."""
    calls = {id(n.func): n for n in ast.walk(tree) if isinstance(n, ast.Call)}
    uses = []
    for node in ast.walk(tree):
        chain: list[str] = []
        cur: ast.AST = node
        while isinstance(cur, ast.Attribute):
            chain.insert(0, cur.attr)
            cur = cur.value
        if isinstance(cur, ast.Name) and cur.id == "atip_trust" and chain and isinstance(node, ast.Attribute):
            uses.append((chain[0], chain[1:], calls.get(id(node))))
    return uses


def test_every_public_name_has_one_example_and_every_example_names_a_public_name() -> None:
    found = examples()
    assert sorted(found) == sorted(atip_trust.__all__), (
        f"missing: {sorted(set(atip_trust.__all__) - set(found))}; "
        f"not public: {sorted(set(found) - set(atip_trust.__all__))}")


def test_each_example_parses_and_uses_its_name() -> None:
    for name, code in examples().items():
        tree = ast.parse(code, filename=f"docs/library.md: {name}")
        assert name in {n for n, _, _ in _public_uses(tree)}, f"the example of {name} does not use atip_trust.{name}"


def test_each_example_reads_only_attributes_and_keywords_the_names_have() -> None:
    """``atip_trust.Digest.parse``, ``Evidence(bundles=...)``: checked against the real objects."""
    problems = []
    for name, code in examples().items():
        for used, chain, call in _public_uses(ast.parse(code)):
            assert used in atip_trust.__all__, f"{name}: atip_trust.{used} is not public"
            obj = getattr(atip_trust, used)
            for attr in chain:
                if not hasattr(obj, attr):
                    problems.append(f"{name}: atip_trust.{used}.{'.'.join(chain)}: no {attr!r}")
                    break
                obj = getattr(obj, attr)
            else:
                if call is not None and callable(obj):
                    sig = inspect.signature(obj)
                    keywords = {k.arg: None for k in call.keywords if k.arg is not None}
                    try:
                        sig.bind_partial(**keywords)
                    except TypeError as err:
                        problems.append(f"{name}: atip_trust.{used}{'.' if chain else ''}{'.'.join(chain)}(...): {err}")
    assert problems == []


def test_a_wrong_keyword_in_an_example_would_be_caught() -> None:
    """The check above can fail: a misspelt field of Evidence is found."""
    tree = ast.parse('atip_trust.Evidence(bundle=["x"])')
    ((used, chain, call),) = _public_uses(tree)
    assert call is not None
    try:
        inspect.signature(getattr(atip_trust, used)).bind_partial(bundle=None)
    except TypeError as err:
        assert "bundle" in str(err)
    else:
        raise AssertionError("Evidence took bundle=")
