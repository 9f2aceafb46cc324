"""The package's layers (docs/architecture.md, "Layers and modules"): imports point only downward, no import circles, no
intra-package import hidden in a function, and each third-party package enters through its one boundary.

A deferred import (``name = lazy_import("module")``, _base/lazy.py) is written once per package, in that
package's ``_deps.py`` (docs/adr/0001-start-up.md), and nowhere else. There it must be at module level,
name a literal module and point downward; a third-party package may be deferred there only when its
boundary lies inside that package (signature/_deps.py may defer cryptography, cli/_deps.py may not).
A module that takes a name from its package's ``_deps`` (``from atip_trust.signature._deps import
x509``) is read as importing the module that name stands for, with every check of a plain import
(so only the boundary module itself may use jsonschema through _base/_deps.py), and a ``_deps`` is
private to its package. A deferred import is not an edge of the circle check (nothing is imported while
the importing module runs).

The checker is a plain function over a source tree so that the test of the test can run it on a
throw-away package with a planted violation.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

PKG = "atip_trust"
ROOT = Path(__file__).resolve().parents[2]

#: (module prefix, layer, group). A module may import from a lower layer, or from its own group.
#: Groups on one layer never import each other (signature and provenance stay independent).
LAYERS: tuple[tuple[str, int, str], ...] = (
    ("atip_trust.errors", 0, "base"),
    ("atip_trust._version", 0, "base"),
    ("atip_trust._base", 0, "base"),
    ("atip_trust.facts", 1, "facts"),
    ("atip_trust.signature", 2, "signature"),
    ("atip_trust.provenance", 2, "provenance"),
    ("atip_trust.net", 2, "net"),
    ("atip_trust.evaluation", 3, "evaluation"),
    ("atip_trust.state", 3, "state"),
    ("atip_trust.registry", 3, "registry"),
    ("atip_trust.policy", 4, "policy"),
    ("atip_trust.admission", 5, "admission"),  # verify, admit, held tools: may this run?
    ("atip_trust.execution", 6, "execution"),  # run the admitted bytes
    ("atip_trust.discovery", 7, "discovery"),  # which tools an agent may see (probes run through execution)
    ("atip_trust.agents", 8, "agents"),  # hooks and call checks admit (and pin through exec) what agents run
    ("atip_trust.bridge", 9, "bridge"),  # above agents: the loop checks calls, probes and runs them
    ("atip_trust.cli", 10, "cli"),
    ("atip_trust.service", 10, "cli"),  # serve: answers with the CLI's own entry point (service/app.py)
    ("atip_trust.__main__", 10, "cli"),
)

#: Third-party top-level package -> the module prefixes allowed to import it.
BOUNDARIES: dict[str, tuple[str, ...]] = {
    "sigstore": ("atip_trust.signature",),
    "sigstore_models": ("atip_trust.signature",),
    "rfc3161_client": ("atip_trust.signature",),
    "cryptography": ("atip_trust.signature",),
    "httpx": ("atip_trust.net",),
    "jsonschema": ("atip_trust._base.schema",),
    "referencing": ("atip_trust._base.schema",),
    "in_toto_attestation": ("atip_trust.provenance",),
    "google": ("atip_trust.provenance",),
    "platformdirs": ("atip_trust.state",),
    "rich": ("atip_trust.cli",),
    "yaml": ("atip_trust._base.yamlio",),
    "tree_sitter": ("atip_trust.agents.bash_syntax",),
    "tree_sitter_bash": ("atip_trust.agents.bash_syntax",),
    "tuf": ("atip_trust.state.tufroot",),
}


@dataclass(frozen=True)
class Imp:
    source: str  # importing module
    target: str  # imported module (absolute)
    line: int
    in_function: bool
    type_checking: bool
    lazy: bool = False
    #: "call": a lazy_import call in this module; "deps": a name taken from a package's _deps.
    via: str = ""


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


#: The deferred-import function of _base/lazy.py, by the name a call site uses.
LAZY_IMPORT = "lazy_import"
#: The one module per package that may call it (docs/adr/0001-start-up.md).
DEPS = "_deps"


def _deps_tables(root: Path, pkg: str) -> dict[str, dict[str, str]]:
    """Each ``<package>._deps`` module -> {name it binds: module that name defers}."""
    out: dict[str, dict[str, str]] = {}
    for path in sorted((root / pkg).rglob(f"{DEPS}.py")):
        table = out.setdefault(_module_name(root, path), {})
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            call = _lazy_call(node.value) if isinstance(node, ast.Assign) else None
            if call is not None and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and call.args and isinstance(call.args[0], ast.Constant):
                table[node.targets[0].id] = str(call.args[0].value)
    return out


def _lazy_call(node: ast.AST) -> ast.Call | None:
    if not isinstance(node, ast.Call):
        return None
    fn = node.func
    name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else None
    return node if name == LAZY_IMPORT else None


def _imports(root: Path, path: Path, problems: list[str] | None = None,
             deps: dict[str, dict[str, str]] | None = None) -> list[Imp]:
    mod = _module_name(root, path)
    is_pkg = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: list[Imp] = []

    def visit(node: ast.AST, in_fn: bool, tc: bool) -> None:
        call = _lazy_call(node)
        if call is not None:
            arg = call.args[0] if len(call.args) == 1 and not call.keywords else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value:
                out.append(Imp(mod, arg.value, node.lineno, in_fn, tc, lazy=True, via="call"))
            elif problems is not None:
                problems.append(f"{path.relative_to(root)}:{node.lineno}: {mod} calls {LAZY_IMPORT} "
                                "without one literal module name")
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for a in node.names:
                full = f"{target}.{a.name}"
                # "from pkg import submodule" imports the submodule
                out.append(Imp(mod, full if _is_module(root, full) else target, node.lineno, in_fn, tc))
                table = (deps or {}).get(target)
                if table is not None:  # a name from a package's _deps: the module it defers
                    if a.name in table:
                        out.append(Imp(mod, table[a.name], node.lineno, in_fn, tc, lazy=True, via="deps"))
                    elif problems is not None:
                        problems.append(f"{path.relative_to(root)}:{node.lineno}: {mod} takes {a.name} "
                                        f"from {target}, which defers no such name")
            return
        if isinstance(node, ast.Import):
            for a in node.names:
                out.append(Imp(mod, a.name, node.lineno, in_fn, tc))
            return
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in node.body:
                visit(sub, in_fn, True)
            for sub in node.orelse:
                visit(sub, in_fn, tc)
            return
        fn = in_fn or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for sub in ast.iter_child_nodes(node):
            visit(sub, fn, tc)

    visit(tree, False, False)
    return out


def _is_module(root: Path, name: str) -> bool:
    p = root.joinpath(*name.split("."))
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def _layer(mod: str) -> tuple[int, str] | None:
    for prefix, layer, group in LAYERS:
        if mod == prefix or mod.startswith(prefix + "."):
            return layer, group
    return None


def check_layers(root: Path, pkg: str = PKG) -> list[str]:
    """Every violation in the package under ``root`` as one line each (empty: the layers hold)."""
    problems: list[str] = []
    graph: dict[str, set[str]] = {}
    files = sorted((root / pkg).rglob("*.py"))
    deps = _deps_tables(root, pkg)
    for path in files:
        mod = _module_name(root, path)
        graph.setdefault(mod, set())
        is_deps = mod.rsplit(".", 1)[-1] == DEPS
        home = mod.rsplit(".", 1)[0]  # the package a _deps module speaks for
        for imp in _imports(root, path, problems, deps):
            top = imp.target.split(".")[0]
            where = f"{path.relative_to(root)}:{imp.line}"
            if imp.lazy and imp.in_function:
                problems.append(f"{where}: {mod} defers {imp.target} inside a function (module level only)")
            if imp.via == "call" and not is_deps:
                problems.append(f"{where}: {mod} defers {imp.target} outside its package's {DEPS}.py "
                                "(one boundary per package)")
            if imp.target.rsplit(".", 1)[-1] == DEPS and imp.target.rsplit(".", 1)[0] != mod.rsplit(".", 1)[0] \
                    and imp.target.rsplit(".", 1)[0] != mod:
                problems.append(f"{where}: {mod} imports {imp.target}, which is private to its package")
            if top != pkg:
                allowed = BOUNDARIES.get(top)
                # A package's _deps may name a third-party package whose boundary lies inside it; its
                # users are then checked one by one (the name they take stands for the module).
                if allowed is not None and not any(
                    mod == a or mod.startswith(a + ".") or (is_deps and (a == home or a.startswith(home + ".")))
                    for a in allowed
                ):
                    problems.append(f"{where}: {mod} imports {top}; only {', '.join(allowed)} may")
                continue
            if mod == pkg:
                continue  # the lazy public API (__init__) may name any layer
            if imp.in_function and not imp.type_checking:
                problems.append(f"{where}: {mod} imports {imp.target} inside a function")
            src, dst = _layer(mod), _layer(imp.target)
            if src is None:
                problems.append(f"{where}: {mod} is in no layer (add it to LAYERS)")
                continue
            if dst is None:
                if imp.target != pkg:
                    problems.append(f"{where}: {imp.target} is in no layer (add it to LAYERS)")
                else:
                    problems.append(f"{where}: {mod} imports the package root {pkg}")
                continue
            if dst[0] > src[0] or (dst[0] == src[0] and dst[1] != src[1]):
                problems.append(
                    f"{where}: upward import: {mod} (layer {src[0]} {src[1]}) imports "
                    f"{imp.target} (layer {dst[0]} {dst[1]})"
                )
            if not imp.type_checking and not imp.in_function and not imp.lazy:
                graph[mod].add(imp.target)
    problems.extend(_cycles(graph))
    return problems


def _cycles(graph: dict[str, set[str]]) -> list[str]:
    """Import circles among modules (Tarjan's strongly connected components, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[str] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, list[str]]] = [(start, sorted(graph.get(start, ())))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in graph:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, sorted(graph.get(nxt, ()))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append("import circle: " + " -> ".join(sorted(comp)))
    return out


def test_package_layers_hold() -> None:
    problems = check_layers(ROOT)
    assert not problems, "\n".join(problems)


def test_every_module_is_in_a_layer() -> None:
    for path in (ROOT / PKG).rglob("*.py"):
        mod = _module_name(ROOT, path)
        assert mod == PKG or _layer(mod) is not None, f"{mod} is in no layer"


def _plant(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = tmp_path / PKG / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    for d in (tmp_path / PKG).rglob("*"):
        if d.is_dir() and not (d / "__init__.py").exists():
            (d / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / PKG / "__init__.py").touch()
    return tmp_path


_LAZY = "from atip_trust._base import lazy\nfrom atip_trust._base.lazy import lazy_import\n"


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"facts/digest.py": "from atip_trust.policy import model\n", "policy/model.py": ""},
         "upward import"),
        ({"facts/digest.py": "from ..policy.model import X\n", "policy/model.py": "X = 1\n"},
         "upward import"),
        ({"signature/keys.py": "from atip_trust.provenance.slsa import X\n",
          "provenance/slsa.py": "X = 1\n"}, "upward import"),
        ({"policy/a.py": "from atip_trust.policy.b import X\nY = 1\n",
          "policy/b.py": "from atip_trust.policy.a import Y\nX = 1\n"}, "import circle"),
        ({"policy/a.py": "def f():\n    from atip_trust.facts.digest import D\n",
          "facts/digest.py": "D = 1\n"}, "inside a function"),
        ({"facts/digest.py": "import httpx\n"}, "only atip_trust.net may"),
        ({"policy/load.py": "import jsonschema\n"}, "only atip_trust._base.schema may"),
        ({"admission/admit.py": "from sigstore.verify import Verifier\n"}, "only atip_trust.signature may"),
        ({"newthing/x.py": "from atip_trust.facts import digest\n", "facts/digest.py": ""},
         "in no layer"),
        ({"facts/_deps.py": _LAZY + "model = lazy_import('atip_trust.policy.model')\n",
          "policy/model.py": ""}, "upward import"),
        ({"facts/_deps.py": _LAZY + "slsa = lazy_import('atip_trust.provenance.slsa')\n",
          "provenance/slsa.py": ""}, "upward import"),
        ({"policy/_deps.py": _LAZY + "jsonschema = lazy_import('jsonschema')\n"},
         "only atip_trust._base.schema may"),
        ({"admission/_deps.py": _LAZY + "verify = lazy.lazy_import('sigstore.verify')\n"},
         "only atip_trust.signature may"),
        ({"cli/_deps.py": _LAZY + "x509 = lazy_import('cryptography.x509')\n"},
         "only atip_trust.signature may"),
        ({"_base/_deps.py": _LAZY + "jsonschema = lazy_import('jsonschema')\n",
          "_base/yamlio.py": "from atip_trust._base._deps import jsonschema\n"},
         "only atip_trust._base.schema may"),
        ({"signature/_deps.py": _LAZY + "x509 = lazy_import('cryptography.x509')\n",
          "policy/load.py": "from atip_trust.signature._deps import x509\n"}, "private to its package"),
        ({"evaluation/_deps.py": _LAZY + "decide = lazy_import('atip_trust.policy.decide')\n",
          "evaluation/evaluate.py": "from atip_trust.evaluation._deps import decide\n",
          "policy/decide.py": ""}, "upward import"),
        ({"facts/_deps.py": _LAZY + "hmac = lazy_import('hmac')\n",
          "facts/digest.py": "from atip_trust.facts._deps import hmac, queue\n"}, "defers no such name"),
        ({"facts/digest.py": _LAZY + "hmac = lazy_import('hmac')\n"}, "outside its package's _deps.py"),
        ({"policy/_deps.py": _LAZY + "NAME = 'atip_trust.facts.digest'\nD = lazy_import(NAME)\n"},
         "without one literal module name"),
        ({"policy/_deps.py": _LAZY + "def f():\n    return lazy_import('atip_trust.facts.digest')\n",
          "facts/digest.py": ""}, "inside a function"),
    ],
    ids=["upward-absolute", "upward-relative", "same-layer-other-group", "circle", "function-import",
         "httpx-outside-net", "jsonschema-outside-boundary", "sigstore-outside-signature", "no-layer",
         "lazy-upward", "lazy-other-group", "lazy-jsonschema-outside-boundary",
         "lazy-sigstore-outside-signature", "lazy-cryptography-in-cli-deps",
         "lazy-jsonschema-used-outside-boundary", "deps-of-another-package", "deps-name-upward",
         "deps-unknown-name", "lazy-outside-deps", "lazy-non-literal", "lazy-in-function"],
)
def test_the_layer_check_catches_a_planted_violation(
    tmp_path: Path, files: dict[str, str], expected: str
) -> None:
    problems = check_layers(_plant(tmp_path, files))
    assert any(expected in p for p in problems), problems


def test_the_layer_check_accepts_downward_imports(tmp_path: Path) -> None:
    root = _plant(tmp_path, {
        "policy/a.py": "from atip_trust.facts.digest import D\nfrom atip_trust.policy.b import X\n"
                       "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                       "    from atip_trust.facts.digest import D as E\n",
        "policy/b.py": "X = 1\n",
        "facts/digest.py": "import hashlib\nD = 1\n",
    })
    assert check_layers(root) == []


def test_a_boundary_package_may_defer_its_dependency_through_its_deps(tmp_path: Path) -> None:
    """signature/_deps.py defers cryptography and a signature module uses it; _base/_deps.py defers
    jsonschema for _base/schema.py, the one module that may use it."""
    root = _plant(tmp_path, {
        "_base/lazy.py": "def lazy_import(name):\n    return name\n",
        "signature/_deps.py": _LAZY + "x509 = lazy_import('cryptography.x509')\n",
        "signature/identity.py": "from atip_trust.signature._deps import x509\n",
        "_base/_deps.py": _LAZY + "jsonschema = lazy_import('jsonschema')\n",
        "_base/schema.py": "from atip_trust._base._deps import jsonschema\n",
    })
    assert check_layers(root) == []


def test_a_deferred_import_is_no_import_circle(tmp_path: Path) -> None:
    """Two modules of one folder that defer each other's import are not a circle (neither runs the
    other while it is imported); one plain import back would be."""
    root = _plant(tmp_path, {
        "_base/lazy.py": "def lazy_import(name):\n    return name\n",
        "policy/_deps.py": _LAZY + "b = lazy_import('atip_trust.policy.b')\n",
        "policy/a.py": "from atip_trust.policy._deps import b\n",
        "policy/b.py": "from atip_trust.policy import a\n",
    })
    assert check_layers(root) == []


if __name__ == "__main__":  # pragma: no cover - a quick look at the tree
    print("\n".join(check_layers(ROOT)) or "layers hold", file=sys.stderr)
