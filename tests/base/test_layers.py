"""The package's import rules (docs/architecture.md, "Layers and modules"; docs/adr/0001-start-up.md):

- layers: imports point only downward or within their own folder, groups on one layer stay apart, every
  module is in a layer, and nothing below the public API imports the package root;
- rule 1: no ``_deps`` modules and no module aliases: a module is bound under its own last name, or
  ``<parent>_<name>`` where two modules of one last name meet (a deferred import's name included);
- rule 2: ``TYPE_CHECKING`` comes from typing (never ``TYPE_CHECKING = False``), its block after every
  import, and it is tested as ``if TYPE_CHECKING:`` and nothing else;
- rule 3: one way to defer: ``name = lazy_import("absolute.module")`` at module level, in the ``else`` of
  an ``if TYPE_CHECKING:`` that imports the same module under the same name, and only in the modules a
  fast path loads (``DEFERRING`` in tests/fast_path.py); a deferred import obeys every rule a plain one
  does;
- rule 4: no import statement inside a function (or a class body), whatever it imports;
- rule 5: each third-party package only in its boundary module(s) (``BOUNDARIES``), in every form:
  plain, type-only, deferred, by ``importlib``;
- rule 6: no import circle, over every edge that runs: a plain import (at module level or not), a
  deferred one and ``importlib.import_module("literal")``; an import under ``if TYPE_CHECKING:`` never
  runs and is no edge. ``importlib.import_module`` (or ``__import__``) is called by _base/lazy.py alone.

Each rule is numbered as in the import rules docs/contributing.md gives. A violation is one line:
``path:line: [rule] what, and what to do``, so that a package's owner can grep for its folder.

The checker is a plain function over a source tree so that the test of the test can run it on a
throw-away package with a planted violation of each rule (and a clean package that breaks none).
"""

from __future__ import annotations

import ast
import importlib.machinery
import importlib.util
import itertools
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import pytest

import fast_path

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

#: Third-party top-level package -> the module prefixes allowed to import it (rule 5). A third-party
#: package not named here may not be imported at all until it is given its boundary.
BOUNDARIES: dict[str, tuple[str, ...]] = {
    "sigstore": ("atip_trust.signature",),
    "sigstore_models": ("atip_trust.signature",),
    "rfc3161_client": ("atip_trust.signature",),
    "cryptography": ("atip_trust.signature",),
    "httpx": ("atip_trust.net",),
    "httpcore": ("atip_trust.net",),  # httpx's transport: the connection deadline's socket (net/fetch.py)
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

#: The deferred-import function, and the one module that may import by a computed name (it is what
#: every deferred import calls).
LAZY_IMPORT = "lazy_import"
LAZY_CLASS = "LazyModule"
LAZY_MODULE = "atip_trust._base.lazy"
IMPORTERS = ("import_module", "__import__")
#: A deferred import bound in the package root's table under its own module name (_Reader.api_table).
KEYED = "<keyed by its module name>"

#: The tags a message starts with, one per rule, so that a count per rule is a grep.
LAYER, ALIAS, DEPS, TC, DEFER, IN_FUNCTION, THIRD_PARTY, CIRCLE, IMPORTLIB = (
    "[layers]", "[R1 alias]", "[R1 _deps]", "[R2 TYPE_CHECKING]", "[R3 defer]", "[R4 in function]",
    "[R5 third-party]", "[R6 circle]", "[R6 importlib]")

_DEFER_SHAPE = ('write it as the import rules show: `if TYPE_CHECKING: from cryptography import x509` / '
                '`else: x509 = lazy_import("cryptography.x509")`')


@dataclass(frozen=True)
class Imp:
    source: str  # importing module
    target: str  # imported module (absolute)
    line: int
    in_function: bool
    type_checking: bool
    kind: str = "import"  # "import", "lazy" (lazy_import) or "importlib" (import_module with a literal)


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _is_module(root: Path, name: str) -> bool:
    p = root.joinpath(*name.split("."))
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def _is_outside_module(name: str) -> bool:
    """Whether ``name`` (not ours) is a module, found from its top-level package's files without importing
    anything but, for a standard-library module that is no package (``os``), that module itself."""
    parts = name.split(".")
    try:
        spec = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    if spec.submodule_search_locations is None:  # os.path: an attribute of a plain module
        if parts[0] not in sys.stdlib_module_names or len(parts) != 2:
            return False
        return isinstance(getattr(importlib.import_module(parts[0]), parts[1], None), ModuleType)
    folders = [Path(p) for p in spec.submodule_search_locations]
    for part in parts[1:]:
        if any((f / part).is_dir() for f in folders):  # a package, or a namespace package
            folders = [f / part for f in folders if (f / part).is_dir()]
        elif any((f / (part + suffix)).is_file() for f in folders for suffix in importlib.machinery.all_suffixes()):
            return part == parts[-1]
        else:
            return False
    return True


def _names_allowed(module: str) -> tuple[str, ...]:
    """The names ``module`` may be bound under: its last component, or ``<parent>_<last>``."""
    parts = module.split(".")
    return (parts[-1], f"{parts[-2]}_{parts[-1]}") if len(parts) > 1 else (parts[-1],)


def _call_name(node: ast.AST) -> str | None:
    if not isinstance(node, ast.Call):
        return None
    fn = node.func
    return fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else None


def _literal(call: ast.Call) -> str | None:
    """The one positional string argument of ``call``, or None."""
    arg = call.args[0] if len(call.args) == 1 and not call.keywords else None
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value else None


def _is_tc_test(test: ast.expr) -> bool:
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"


def _mentions_tc(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "TYPE_CHECKING"
               or isinstance(n, ast.Attribute) and n.attr == "TYPE_CHECKING" for n in ast.walk(node))


@dataclass
class _Reader:
    """One module's imports (every form) and its violations of rules 1-4 and of importlib's use."""

    root: Path
    path: Path
    deferring: frozenset[str]
    imps: list[Imp] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    mod: str = ""
    tc_block_line: int = 0  # the first module-level ``if TYPE_CHECKING:``
    tc_imported: bool = False  # ``from typing import TYPE_CHECKING`` at module level
    tc_assigned: bool = False  # ``TYPE_CHECKING = False`` (reported once, where it is assigned)
    late: list[int] = field(default_factory=list)  # lines of imports after the TYPE_CHECKING block

    def __post_init__(self) -> None:
        self.mod = _module_name(self.root, self.path)

    def say(self, line: int, tag: str, text: str) -> None:
        self.problems.append(f"{self.path.relative_to(self.root)}:{line}: {tag} {self.mod} {text}")

    def read(self) -> None:
        tree = ast.parse(self.path.read_text(encoding="utf-8"))
        if self.mod.rsplit(".", 1)[-1] == "_deps":
            self.say(1, DEPS, "is a _deps module: delete it; each user imports the module itself "
                              "(or, on a fast path, defers it in its own body)")
        for stmt in tree.body:
            if isinstance(stmt, ast.ImportFrom) and stmt.module == "typing" and not stmt.level \
                    and any(a.name == "TYPE_CHECKING" and a.asname is None for a in stmt.names):
                self.tc_imported = True
        for stmt in tree.body:
            self.visit(stmt, "module", False, None)
        if self.late:  # one line a module: the fix is one move
            lines = ", ".join(map(str, self.late))
            self.say(self.late[0], TC, f"imports after its `if TYPE_CHECKING:` block (line {self.tc_block_line}), "
                                       f"at line(s) {lines}: move those imports above it")

    def visit(self, node: ast.AST, scope: str, tc: bool, pair: dict[str, str] | None = None) -> None:
        """``scope``: "module", "class" or "function"; ``tc``: under ``if TYPE_CHECKING:``; ``pair``: for a
        statement of that block's ``else``, the names its body binds (name -> module)."""
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            self.import_statement(node, scope, tc)
            return
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "TYPE_CHECKING" for t in targets):
                self.tc_assigned = True
                self.say(node.lineno, TC, "assigns TYPE_CHECKING: import it instead "
                                          "(`from typing import TYPE_CHECKING` in the import block)")
                return
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                    and _call_name(node.value) in (LAZY_IMPORT, LAZY_CLASS):
                one = node.targets[0] if len(node.targets) == 1 else None
                self.deferred(node.value, scope, tc, one.id if isinstance(one, ast.Name) else None, pair)
                return
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Dict) \
                and scope == "module" and self.mod == PKG:
            self.api_table(node.value, tc)
            return
        if isinstance(node, ast.If) and _mentions_tc(node.test):
            self.tc_block(node, scope, tc)
            return
        if isinstance(node, ast.Call):
            name = _call_name(node)
            if name in (LAZY_IMPORT, LAZY_CLASS):
                self.deferred(node, scope, tc, None, None)
            elif name in IMPORTERS and self.mod != LAZY_MODULE:
                self.importlib_call(node, scope, tc)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            scope = "function"
        elif isinstance(node, ast.ClassDef) and scope == "module":
            scope = "class"
        for sub in ast.iter_child_nodes(node):
            self.visit(sub, scope, tc)

    def api_table(self, table: ast.Dict, tc: bool) -> None:
        """The package root's public API may defer its modules in a table keyed by each module's own name
        (``{"atip_trust.policy.model": lazy_import("atip_trust.policy.model")}``): there, a name bound
        per module would shadow the public function of the same name (``admit``, ``verify``)."""
        for key, value in zip(table.keys, table.values, strict=True):
            if isinstance(value, ast.Call) and _call_name(value) == LAZY_IMPORT and isinstance(key, ast.Constant) \
                    and key.value == _literal(value):
                self.deferred(value, "module", tc, KEYED, None)
                continue
            for part in (key, value):
                if part is not None:
                    self.visit(part, "module", tc)

    def tc_block(self, node: ast.If, scope: str, tc: bool) -> None:
        if not _is_tc_test(node.test):
            self.say(node.lineno, TC, f"tests `{ast.unparse(node.test)}`: write `if TYPE_CHECKING:` "
                                      "(type-only imports) with an `else:` for what runs")
        elif not self.tc_imported and not self.tc_assigned:
            self.say(node.lineno, TC, "reads TYPE_CHECKING without importing it: "
                                      "`from typing import TYPE_CHECKING` in the import block")
        if scope == "module" and not self.tc_block_line and _is_tc_test(node.test):
            self.tc_block_line = node.lineno
        inner_tc = tc or _is_tc_test(node.test)
        for sub in node.body:
            self.visit(sub, scope, inner_tc, None)
        bound = self.bindings(node.body) if _is_tc_test(node.test) else None
        for sub in node.orelse:
            self.visit(sub, scope, tc, bound)

    def bindings(self, body: list[ast.stmt]) -> dict[str, str]:
        out: dict[str, str] = {}
        for stmt in body:
            if isinstance(stmt, ast.Import):
                for a in stmt.names:
                    out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(stmt, ast.ImportFrom):
                target = self.resolve(stmt)
                for a in stmt.names:
                    out[a.asname or a.name] = f"{target}.{a.name}"
        return out

    def resolve(self, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        base = self.mod.split(".") if self.path.name == "__init__.py" else self.mod.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        return ".".join(base + ([node.module] if node.module else []))

    def import_statement(self, node: ast.Import | ast.ImportFrom, scope: str, tc: bool) -> None:
        in_fn = scope != "module"
        if in_fn:
            where = "a function" if scope == "function" else "a class body"
            self.say(node.lineno, IN_FUNCTION, f"has `{ast.unparse(node)}` inside {where}: move it to the top "
                                               "(deferred per rule 3 if this module is on a fast path)")
        elif self.tc_block_line and not tc and node.lineno > self.tc_block_line:
            self.late.append(node.lineno)
        if isinstance(node, ast.Import):
            for a in node.names:
                self.imps.append(Imp(self.mod, a.name, node.lineno, in_fn, tc))
                if a.asname and a.asname not in _names_allowed(a.name):
                    self.alias(node.lineno, a.name, a.asname)
            return
        target = self.resolve(node)
        if target.rsplit(".", 1)[-1] == "_deps":
            self.say(node.lineno, DEPS, f"imports from {target}: import (or, on a fast path, defer) the "
                                        "module each name stands for, under its own name")
        ours = target.split(".")[0] == PKG
        for a in node.names:
            full = f"{target}.{a.name}"
            # "from pkg import submodule" imports the submodule
            self.imps.append(Imp(self.mod, full if ours and _is_module(self.root, full) else target,
                                 node.lineno, in_fn, tc))
            if a.name == LAZY_IMPORT and a.asname:
                self.say(node.lineno, DEFER, f"imports {LAZY_IMPORT} as {a.asname}: use its own name, "
                                             "which the checks read")
            elif a.asname and a.asname not in _names_allowed(full) and (
                    _is_module(self.root, full) if ours else _is_outside_module(full)):
                self.alias(node.lineno, full, a.asname)

    def alias(self, line: int, module: str, name: str) -> None:
        allowed = _names_allowed(module)
        self.say(line, ALIAS, f"binds module {module} as {name}: bind it as {allowed[0]}"
                              + (f" (or {allowed[1]} where two modules named {allowed[0]} meet)"
                                 if len(allowed) > 1 else ""))

    def deferred(self, call: ast.Call, scope: str, tc: bool, name: str | None,
                 pair: dict[str, str] | None) -> None:
        line = call.lineno
        if _call_name(call) == LAZY_CLASS:
            if self.mod != LAZY_MODULE:
                self.say(line, DEFER, f"makes a {LAZY_CLASS} itself: call {LAZY_IMPORT}")
            return
        target = _literal(call)
        if target is None or target.startswith("."):
            self.say(line, DEFER, f"calls {LAZY_IMPORT} without one literal absolute module name: "
                                  f'name it, `x509 = {LAZY_IMPORT}("cryptography.x509")`')
            return
        self.imps.append(Imp(self.mod, target, line, scope != "module", tc, kind="lazy"))
        if scope != "module":
            self.say(line, DEFER, f"defers {target} inside a {scope}: defer it at module level")
        elif self.mod not in self.deferring:
            self.say(line, DEFER, f"defers {target}, but no fast path loads {self.mod} (tests/fast_path.py "
                                  "DEFERRING): import it plainly at the top")
        elif name == KEYED:
            pass  # the public API's table (api_table)
        elif name is None:
            self.say(line, DEFER, f"defers {target} without binding it to a name: {_DEFER_SHAPE}")
        elif name not in _names_allowed(target):
            self.alias(line, target, name)
        elif pair is None or pair.get(name) != target:
            self.say(line, DEFER, f"defers {target} outside the `else` of an `if TYPE_CHECKING:` that imports "
                                  f"it as {name}: {_DEFER_SHAPE}")
        if target.split(".")[0] == PKG and not _is_module(self.root, target):
            self.say(line, DEFER, f"defers {target}, which is no module of the package")

    def importlib_call(self, call: ast.Call, scope: str, tc: bool) -> None:
        target = _literal(call)
        if target is None:
            self.say(call.lineno, IMPORTLIB, f"imports by a computed name ({_call_name(call)}): name each "
                                             "module in a plain import (or a deferred one on a fast path)")
            return
        self.imps.append(Imp(self.mod, target, call.lineno, scope != "module", tc, kind="importlib"))
        self.say(call.lineno, IMPORTLIB, f"imports {target} through {_call_name(call)}: write a plain import "
                                         "(or a deferred one on a fast path)")


def _layer(mod: str) -> tuple[int, str] | None:
    for prefix, layer, group in LAYERS:
        if mod == prefix or mod.startswith(prefix + "."):
            return layer, group
    return None


def _where(root: Path, pkg: str, imp: Imp) -> str:
    path = root.joinpath(*imp.source.split("."))
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    return f"{path.relative_to(root)}:{imp.line}"


def _check_import(root: Path, pkg: str, imp: Imp) -> list[str]:
    """Rule 5 and the layers for one import of any kind."""
    mod, top = imp.source, imp.target.split(".")[0]
    how = {"import": "imports", "lazy": "defers", "importlib": "imports (importlib)"}[imp.kind]
    where = _where(root, pkg, imp)
    if top != pkg:
        if top in sys.stdlib_module_names:
            return []
        allowed = BOUNDARIES.get(top)
        if allowed is None:
            return [f"{where}: {THIRD_PARTY} {mod} {how} {top}, a third-party package with no boundary: "
                    "give it one in BOUNDARIES (tests/base/test_layers.py) and import it only there"]
        if not any(mod == a or mod.startswith(a + ".") for a in allowed):
            return [f"{where}: {THIRD_PARTY} {mod} {how} {top}; only {', '.join(allowed)} may: "
                    f"call what they offer instead"]
        return []
    if mod == pkg:
        return []  # the lazy public API (__init__) may name any layer
    src, dst = _layer(mod), _layer(imp.target)
    if src is None:
        return [f"{where}: {LAYER} {mod} is in no layer: add it to LAYERS (tests/base/test_layers.py)"]
    if dst is None:
        if imp.target != pkg:
            return [f"{where}: {LAYER} {imp.target} is in no layer: add it to LAYERS (tests/base/test_layers.py)"]
        return [f"{where}: {LAYER} {mod} imports the package root {pkg}: import the module that defines the name"]
    if dst[0] > src[0] or (dst[0] == src[0] and dst[1] != src[1]):
        return [f"{where}: {LAYER} upward import: {mod} (layer {src[0]} {src[1]}) {how} {imp.target} "
                f"(layer {dst[0]} {dst[1]}): move the shared code down, or the caller up"]
    return []


#: An edge of the import graph: importing module -> imported module -> (line, kind).
Graph = dict[str, dict[str, tuple[int, str]]]


def check_layers(root: Path, pkg: str = PKG, deferring: frozenset[str] = fast_path.DEFERRING) -> list[str]:
    """Every violation in the package under ``root`` as one line each (empty: the rules hold).
    ``deferring``: the modules that may defer an import (tests/fast_path.py)."""
    problems: list[str] = []
    graph: Graph = {}
    for path in sorted((root / pkg).rglob("*.py")):
        reader = _Reader(root, path, deferring)
        reader.read()
        problems.extend(reader.problems)
        edges = graph.setdefault(reader.mod, {})
        for imp in reader.imps:
            problems.extend(_check_import(root, pkg, imp))
            if not imp.type_checking and imp.target.split(".")[0] == pkg and imp.target != reader.mod:
                edges.setdefault(imp.target, (imp.line, imp.kind))
    problems.extend(_cycles(root, graph))
    return problems


def _components(graph: Graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        work: list[tuple[str, list[str]]] = [(start, sorted(graph[start], reverse=True))]
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in graph:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, sorted(graph[nxt], reverse=True)))
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
                    out.append(sorted(comp))
    return out


def _shortest_cycle(graph: Graph, comp: set[str], start: str) -> list[str]:
    """The shortest path start -> ... -> start inside one component (breadth first)."""
    prev: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt_frontier = []
        for node in frontier:
            for nxt in sorted(graph[node]):
                if nxt == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return [*reversed(path), start]
                if nxt in comp and nxt not in prev:
                    prev[nxt] = node
                    nxt_frontier.append(nxt)
        frontier = nxt_frontier
    return [start, start]  # unreachable: every module of a component is on a cycle through it


def _cycles(root: Path, graph: Graph) -> list[str]:
    """Rule 6: one line per import circle, as a path whose every step names the importing line (and how
    it imports, when not plainly), until every module of each knot is on a printed circle."""
    out = []
    for comp in _components(graph):
        members, covered = set(comp), set()
        for start in comp:
            if start in covered:
                continue
            cycle = _shortest_cycle(graph, members, start)
            covered.update(cycle)
            steps = []
            for a, b in itertools.pairwise(cycle):
                line, kind = graph[a][b]
                steps.append(f"{a}:{line}" + ("" if kind == "import" else f" ({kind})"))
            path = root.joinpath(*start.split("."))
            path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
            knot = f" (one knot of {len(comp)} modules: {', '.join(comp)})" if len(comp) > len(cycle) - 1 else ""
            out.append(f"{path.relative_to(root)}:{graph[start][cycle[1]][0]}: {CIRCLE} import circle "
                       f"{' -> '.join([*steps, start])}{knot}: move what they share into a module below them")
    return out


def test_package_layers_hold() -> None:
    """The real tree. A failure lists every violation, one a line: ``path:line: [rule] module what``."""
    problems = check_layers(ROOT)
    assert not problems, f"{len(problems)} violations of the import rules:\n" + "\n".join(problems)


def test_every_module_is_in_a_layer() -> None:
    for path in (ROOT / PKG).rglob("*.py"):
        mod = _module_name(ROOT, path)
        assert mod == PKG or _layer(mod) is not None, f"{mod} is in no layer"


def test_every_deferring_module_exists() -> None:
    """DEFERRING (tests/fast_path.py) names real modules of the package (tests/base/test_startup.py
    checks, more slowly, that a fast path loads each)."""
    assert not [m for m in fast_path.DEFERRING if not _is_module(ROOT, m)], sorted(fast_path.DEFERRING)


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


#: In a planted tree every module may defer but this one (the stand-in for a module no fast path loads).
_COLD = "atip_trust.registry.client"


def _check_planted(root: Path) -> list[str]:
    every = frozenset(_module_name(root, p) for p in (root / PKG).rglob("*.py"))
    return check_layers(root, deferring=every - {_COLD})


def _deferred(name: str, module: str, typed: str | None = None) -> str:
    """A module that defers ``module`` as ``name`` the one sanctioned way (``typed``: its
    ``TYPE_CHECKING`` half, ``import module`` when not given)."""
    return ("from typing import TYPE_CHECKING\n\nfrom atip_trust._base.lazy import lazy_import\n\n"
            f"if TYPE_CHECKING:\n    {typed or f'import {module}'}\nelse:\n"
            f"    {name} = lazy_import({module!r})\n")


_HEAD = "from typing import TYPE_CHECKING\n\nfrom atip_trust._base.lazy import lazy_import\n\n"


@pytest.mark.parametrize(
    ("files", "rule", "expected"),
    [
        # the layers
        ({"facts/digest.py": "from atip_trust.policy import model\n", "policy/model.py": ""},
         LAYER, "upward import"),
        ({"facts/digest.py": "from ..policy.model import X\n", "policy/model.py": "X = 1\n"},
         LAYER, "upward import"),
        ({"signature/keys.py": "from atip_trust.provenance.slsa import X\n",
          "provenance/slsa.py": "X = 1\n"}, LAYER, "upward import"),
        ({"newthing/x.py": "from atip_trust.facts import digest\n", "facts/digest.py": ""},
         LAYER, "in no layer"),
        ({"facts/digest.py": "from atip_trust import Digest\n"}, LAYER, "imports the package root"),
        ({"facts/digest.py": _deferred("model", "atip_trust.policy.model",
                                       "from atip_trust.policy import model"), "policy/model.py": ""},
         LAYER, "defers atip_trust.policy.model"),
        ({"signature/keys.py": _deferred("slsa", "atip_trust.provenance.slsa",
                                         "from atip_trust.provenance import slsa"), "provenance/slsa.py": ""},
         LAYER, "upward import"),
        # rule 1: no _deps, no aliases
        ({"facts/_deps.py": "X = 1\n"}, DEPS, "is a _deps module"),
        ({"facts/digest.py": "from atip_trust.facts._deps import hmac\n", "facts/_deps.py": "hmac = 1\n"},
         DEPS, "imports from atip_trust.facts._deps"),
        ({"facts/digest.py": "import datetime as datetime_mod\n"}, ALIAS, "as datetime_mod: bind it as datetime"),
        ({"admission/admit.py": "from atip_trust.state import audit as audit_mod\n", "state/audit.py": ""},
         ALIAS, "as audit_mod"),
        ({"admission/admit.py": "from ..state import audit as log\n", "state/audit.py": ""}, ALIAS, "as log"),
        ({"facts/digest.py": "from os import path as p\n"}, ALIAS, "binds module os.path as p"),
        ({"facts/digest.py": _deferred("datetime_mod", "datetime")}, ALIAS, "binds module datetime as datetime_mod"),
        # rule 2: TYPE_CHECKING from typing, its block after the imports
        ({"facts/digest.py": "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    import json\n"},
         TC, "assigns TYPE_CHECKING"),
        ({"facts/digest.py": "if TYPE_CHECKING:\n    import json\n"}, TC, "without importing it"),
        ({"facts/digest.py": "from typing import TYPE_CHECKING\nif not TYPE_CHECKING:\n    import json\n"},
         TC, "tests `not TYPE_CHECKING`"),
        ({"facts/digest.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import json\nimport os\n"},
         TC, "imports after its `if TYPE_CHECKING:` block (line 2), at line(s) 4"),
        # rule 3: one way to defer
        ({"registry/client.py": _deferred("hmac", "hmac")}, DEFER, "no fast path loads atip_trust.registry.client"),
        ({"facts/digest.py": _HEAD + "NAME = 'hmac'\nif TYPE_CHECKING:\n    import hmac\nelse:\n"
                                     "    hmac = lazy_import(NAME)\n"}, DEFER, "without one literal absolute"),
        ({"facts/digest.py": _HEAD + "def f():\n    return lazy_import('hmac')\n"}, DEFER, "inside a function"),
        ({"facts/digest.py": _HEAD + "hmac = lazy_import('hmac')\n"}, DEFER, "outside the `else`"),
        ({"facts/digest.py": _deferred("hmac", "hmac", "import json")}, DEFER, "outside the `else`"),
        ({"facts/digest.py": _HEAD + "print(lazy_import('hmac').new)\n"}, DEFER, "without binding it"),
        ({"facts/digest.py": _deferred("report", "atip_trust.facts.report",
                                       "from atip_trust.facts import report")}, DEFER, "no module of the package"),
        ({"facts/digest.py": "from atip_trust._base.lazy import lazy_import as defer\n"}, DEFER, "as defer"),
        ({"facts/digest.py": _HEAD + "M = {'hmac': lazy_import('hmac')}\n"}, DEFER, "without binding"),
        ({"__init__.py": _HEAD + "M = {'atip_trust.facts.digest': lazy_import('atip_trust.facts.report')}\n",
          "facts/digest.py": "", "facts/report.py": ""}, DEFER, "without binding"),
        # rule 4: no import in a function
        ({"policy/a.py": "def f():\n    from atip_trust.facts.digest import D\n", "facts/digest.py": "D = 1\n"},
         IN_FUNCTION, "inside a function"),
        ({"facts/digest.py": "def f():\n    import json\n    return json\n"}, IN_FUNCTION, "`import json` inside"),
        ({"signature/keys.py": "f = lambda: __import__('json')\n"}, IMPORTLIB, "json through __import__"),
        ({"facts/digest.py": "class C:\n    import json\n"}, IN_FUNCTION, "inside a class body"),
        ({"signature/keys.py": "def f():\n    from cryptography import x509\n"}, IN_FUNCTION,
         "`from cryptography import x509` inside"),
        # rule 5: each third-party package at its boundary
        ({"facts/digest.py": "import httpx\n"}, THIRD_PARTY, "only atip_trust.net may"),
        ({"policy/load.py": "import jsonschema\n"}, THIRD_PARTY, "only atip_trust._base.schema may"),
        ({"admission/admit.py": "from sigstore.verify import Verifier\n"}, THIRD_PARTY, "only atip_trust.signature"),
        ({"facts/digest.py": "import attr\n"}, THIRD_PARTY, "no boundary"),
        ({"policy/load.py": _deferred("jsonschema", "jsonschema")}, THIRD_PARTY, "defers jsonschema"),
        ({"cli/render.py": _deferred("x509", "cryptography.x509", "from cryptography import x509")},
         THIRD_PARTY, "only atip_trust.signature may"),
        ({"cli/render.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from sigstore import models\n"},
         THIRD_PARTY, "only atip_trust.signature may"),
        # rule 6: no circle, over every edge that runs
        ({"policy/a.py": "from atip_trust.policy.b import X\nY = 1\n",
          "policy/b.py": "from atip_trust.policy.a import Y\nX = 1\n"},
         CIRCLE, "atip_trust.policy.a:1 -> atip_trust.policy.b:1 -> atip_trust.policy.a"),
        ({"policy/a.py": _deferred("b", "atip_trust.policy.b", "from atip_trust.policy import b"),
          "policy/b.py": "from atip_trust.policy import a\n"},
         CIRCLE, "atip_trust.policy.a:8 (lazy) -> atip_trust.policy.b:1 -> atip_trust.policy.a"),
        ({"policy/a.py": "def f():\n    from atip_trust.policy import b\n",
          "policy/b.py": "from atip_trust.policy import a\n"}, (CIRCLE, IN_FUNCTION), "atip_trust.policy.a:2 ->"),
        ({"cli/main.py": "import importlib\nimportlib.import_module('atip_trust.cli.cmd_x')\n",
          "cli/cmd_x.py": "from atip_trust.cli import main\n"},
         (CIRCLE, IMPORTLIB), "atip_trust.cli.main:2 (importlib) -> atip_trust.cli.cmd_x"),
        ({"cli/main.py": "import importlib\n\nfor n in ('x',):\n    importlib.import_module('atip_trust.cli.' + n)\n"},
         IMPORTLIB, "computed name"),
        ({"cli/main.py": "from importlib import import_module\nimport_module('atip_trust.cli.cmd_x')\n",
          "cli/cmd_x.py": ""}, IMPORTLIB, "write a plain import"),
    ],
    ids=["upward-absolute", "upward-relative", "same-layer-other-group", "no-layer", "package-root",
         "lazy-upward", "lazy-other-group",
         "deps-module", "deps-import", "alias-stdlib", "alias-own", "alias-relative", "alias-from-module",
         "alias-lazy",
         "type-checking-assigned", "type-checking-not-imported", "type-checking-negated",
         "import-after-type-checking",
         "lazy-off-fast-path", "lazy-non-literal", "lazy-in-function", "lazy-without-pair", "lazy-wrong-pair",
         "lazy-unbound", "lazy-no-module", "lazy-renamed", "lazy-table-outside-root", "lazy-table-misnamed",
         "function-import-own", "function-import-stdlib", "function-dunder-import", "class-body-import",
         "function-import-third-party-at-boundary",
         "httpx-outside-net", "jsonschema-outside-boundary", "sigstore-outside-signature",
         "third-party-without-boundary", "lazy-jsonschema-outside-boundary", "lazy-cryptography-in-cli",
         "type-only-sigstore-in-cli",
         "circle-plain", "circle-lazy", "circle-function-import", "circle-importlib", "importlib-computed",
         "importlib-literal"],
)
def test_the_import_check_catches_a_planted_violation(
    tmp_path: Path, files: dict[str, str], rule: str | tuple[str, ...], expected: str
) -> None:
    """Each plant breaks one rule: the check reports it under that rule's tag, and nothing else (a
    circle closed by a function's import or by importlib breaks two rules, and is reported under both)."""
    tags = (rule,) if isinstance(rule, str) else rule
    problems = _check_planted(_plant(tmp_path, files))
    assert any(tags[0] in p and expected in p for p in problems), problems
    assert all(any(t in p for t in tags) for p in problems), problems
    # Every message says where: the planted file and line.
    assert all(p.startswith(f"{PKG}/") and p.split(":")[1].isdigit() for p in problems), problems


def test_the_import_check_accepts_a_package_that_keeps_every_rule(tmp_path: Path) -> None:
    """Downward and same-folder imports, a deferred import written the one way (a third-party one at its
    boundary), a ``<parent>_<name>`` alias where two modules of one name meet, a function's alias,
    type-only imports both ways (no circle: they never run), _base/lazy.py's computed import, and the
    public API's table of deferred modules in the package root."""
    root = _plant(tmp_path, {
        "_base/lazy.py": "import importlib\n\n\ndef lazy_import(name):\n    return importlib.import_module(name)\n",
        "policy/a.py": "from __future__ import annotations\n\nfrom typing import TYPE_CHECKING\n\n"
                       "from atip_trust.facts.digest import D\nfrom atip_trust.policy.b import X\n\n"
                       "if TYPE_CHECKING:\n    from atip_trust.policy.c import Z\n",
        "policy/b.py": "X = 1\n",
        "policy/c.py": "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from atip_trust.policy.a import X\n"
                       "Z = 1\n",
        "facts/digest.py": "import hashlib\nfrom os import path\nfrom json import dumps as dump_json\nD = 1\n",
        "signature/identity.py": _deferred("x509", "cryptography.x509", "from cryptography import x509"),
        "signature/keyless.py": _deferred("sigstore_verify", "sigstore.verify",
                                          "import sigstore.verify as sigstore_verify"),
        "agents/identity.py": "",
        "agents/hooks.py": "from atip_trust.agents import identity\nfrom atip_trust.signature import identity as "
                           "signature_identity\n",
        "_base/schema.py": _deferred("jsonschema", "jsonschema"),
        "state/dirs.py": _deferred("datetime", "datetime") + "import_time = 1\n",
        "__init__.py": _HEAD + "_MODULES: dict = {'atip_trust.policy.b': lazy_import('atip_trust.policy.b')}\n",
    })
    assert _check_planted(root) == []


if __name__ == "__main__":  # pragma: no cover - the tree's violations, one a line (PYTHONPATH=tests)
    print("\n".join(p for p in check_layers(ROOT) if len(sys.argv) < 2 or sys.argv[1] in p) or "the rules hold")
