"""The one boundary of tree-sitter and its bash grammar: a shell line in, its syntax tree out.

Why a grammar and not a lexer: the gate must know every program a line can execute, and a
hand-written splitter cannot keep up with bash's grammar (issue 22; Claude Code's own permission
check parses with tree-sitter-bash for the same reason). The grammar is not bash either, so the tree
is only trusted where the walker (``shell_model``) recognises every node and every byte of the line
is accounted for: :func:`parse` refuses a tree with an error or missing node, and
:func:`uncovered` names any input the tree skipped (a backslash-newline between words, for one).

The grammar's C parser is not linear on every input: a chain of ``a=(b=(`` spends time per token that
grows with the line, and an open pipeline (``ls|`` repeated) makes its error recovery allocate memory
quadratically at the end of input (issue 32: 14.6 s for 64 KiB; 1.3 GB for 30 KB, then SIGSEGV). A
Python signal cannot interrupt it, so every parse runs under a :class:`Budget` checked from the
parser's own progress callback: CPU time and peak memory may grow only linearly with the bytes read
so far, and a parse over budget is cancelled (:class:`OverBudget`, a denial naming the cause).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from importlib.machinery import ExtensionFileLoader, ModuleSpec, PathFinder
from types import ModuleType
from typing import TYPE_CHECKING

from atip_trust._base.lazy import lazy_import

if TYPE_CHECKING:
    import resource

    import tree_sitter
    import tree_sitter_bash
    from tree_sitter import Node as Node  # re-exported for the walker's annotations
    from tree_sitter import Parser
else:
    resource = lazy_import("resource")  # only for a line long enough to parse under a budget
    # The packages themselves only when a binding is not laid out as expected (_new_parser below):
    # their __init__s import importlib.resources and typing, which the hook's warm path never loads.
    tree_sitter = lazy_import("tree_sitter")
    tree_sitter_bash = lazy_import("tree_sitter_bash")  # (with tree_sitter)


class SyntaxRefused(ValueError):
    """The grammar could not read the line completely; the message says where."""


class OverBudget(Exception):
    """The grammar took more CPU time or memory than its budget for the line's size; the message
    names which, and how much of the line it had read."""


#: The parse budget: CPU seconds and bytes of peak memory growth, each ``BASE + PER_KB`` per KiB read
#: so far. Ordinary lines parse at about 0.2 ms and well under 100 KiB per KiB (bench/hook.py); the
#: budget is ten times that and more, so only inputs that make the parser super-linear reach it.
CPU_BASE, CPU_PER_KB = 0.25, 0.002
MEMORY_BASE, MEMORY_PER_KB = 96 * 1024 * 1024, 1024 * 1024
#: '|' characters a line may hold. An open pipeline of N parts makes the grammar's error recovery at the
#: end of input allocate memory growing with N squared in one step, between two progress callbacks
#: (1,000 parts: 33 MB; 4,000: 238 MB); a count before parsing is the only place to stop it.
MAX_BARS = 1024
#: Lines up to this many bytes are parsed without the budget: at this size the slowest known shape costs
#: tens of milliseconds, and an ordinary line pays no callback.
UNBUDGETED = 2048
#: Bytes handed to the parser per read (it asks again for the rest). Small, because a tree parsed from a
#: callback reads each node's ``text`` back through it: a large chunk copied for every word read made the
#: walk grow faster than the line.
_CHUNK = 128


class Budget:
    """The progress callback of one parse: True (cancel) once CPU time or peak memory outgrow the
    budget for the bytes read so far (module docstring)."""

    __slots__ = ("cpu0", "rss0", "why")

    def __init__(self) -> None:
        self.cpu0 = time.process_time()
        self.rss0 = _peak_rss()
        self.why = ""

    def __call__(self, offset: int, has_error: bool) -> bool:
        kb = offset / 1024
        cpu = time.process_time() - self.cpu0
        if cpu > CPU_BASE + CPU_PER_KB * kb:
            self.why = (f"the shell grammar used {cpu:.2f} s of CPU time to read {offset} bytes of the line, "
                        f"over its budget of {CPU_BASE:g} s + {CPU_PER_KB * 1000:g} ms per KiB")
            return True
        grown = _peak_rss() - self.rss0
        if grown > MEMORY_BASE + MEMORY_PER_KB * kb:
            self.why = (f"the shell grammar grew memory by {grown >> 20} MiB to read {offset} bytes of the "
                        f"line, over its budget of {MEMORY_BASE >> 20} MiB + {MEMORY_PER_KB >> 20} MiB per KiB")
            return True
        return False


def _peak_rss() -> int:
    """This process's peak resident memory in bytes (Linux reports KiB; macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


# Bash's parser, built from the two compiled bindings alone (issue 32 Measure, docs/adr/0001-start-up.md).
# Why: the grammar package's ``__init__`` (tree_sitter_bash) imports importlib.resources for highlight
# queries this project never reads, which brings pathlib, tempfile, shutil, random and zipfile; the
# bindings package's ``__init__`` (tree_sitter) imports typing for one Protocol. Together they were a fifth
# of the instructions of a warm hook answer. The parser and the grammar live in the compiled ``_binding``
# of each package, so those are loaded by their files, and registered in ``sys.modules`` under their own
# names: a later ``import tree_sitter`` (a test, a tool) finds the same binding and so the same types.
# When a binding is not found as its package lays it out, the package is imported as usual: slower, same
# parser.


def _binding(package: str) -> ModuleType | None:
    """``package``'s compiled ``_binding`` module, loaded without running the package's ``__init__``;
    None when the package is not laid out that way (then the caller imports the package itself)."""
    name = package + "._binding"
    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded
    outer = PathFinder.find_spec(package)  # finds, does not execute
    if outer is None or not outer.submodule_search_locations:
        return None
    spec = PathFinder.find_spec(name, list(outer.submodule_search_locations))
    if spec is None or not isinstance(spec.loader, ExtensionFileLoader) or spec.origin is None:
        return None
    loader = ExtensionFileLoader(name, spec.origin)
    module = loader.create_module(ModuleSpec(name, loader, origin=spec.origin))
    loader.exec_module(module)
    sys.modules[name] = module
    return module


def _new_parser() -> Parser:
    """A tree-sitter parser for bash's grammar."""
    core, bash = _binding("tree_sitter"), _binding("tree_sitter_bash")
    if core is None or bash is None:
        return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    parser: Parser = core.Parser(core.Language(bash.language()))
    return parser


class _Parser:
    """One parser per process, made on first use (the language object is immutable)."""

    __slots__ = ("parser",)

    def __init__(self) -> None:
        self.parser: Parser | None = None

    def get(self) -> Parser:
        if self.parser is None:
            self.parser = _new_parser()
        return self.parser


_PARSER = _Parser()
#: The last line parsed under the budget and its tree: a line refused by :func:`parse` is read again at
#: once by :func:`parse_lenient` (hooks.py, the programs its text plainly names), and a second budgeted
#: parse of the same bytes would double the cost of the slowest lines.
_LAST: list[tuple[bytes, Node]] = []


def _budgeted(source: bytes) -> Node:
    """The root of ``source``'s tree, parsed under a :class:`Budget` (:class:`OverBudget` past it)."""
    bars = source.count(b"|")
    if bars > MAX_BARS:
        raise OverBudget(f"the line holds {bars} '|' characters; the shell grammar is given at most {MAX_BARS} "
                         "(its memory grows with the square of a pipeline's length)")
    parser = _PARSER.get()
    if len(source) <= UNBUDGETED:
        return parser.parse(source).root_node
    if _LAST and _LAST[0][0] == source:
        return _LAST[0][1]
    budget = Budget()
    try:
        tree = parser.parse(lambda offset, _point: source[offset:offset + _CHUNK], progress_callback=budget)
    except ValueError:  # py-tree-sitter's answer to a cancelled parse
        tree = None
    if tree is None:
        parser.reset()  # a cancelled parser would otherwise resume this parse on its next call
        raise OverBudget(budget.why or "the shell grammar did not finish reading the line")
    _LAST[:] = [(source, tree.root_node)]
    return tree.root_node


def parse(source: bytes) -> Node:
    """The root node of ``source``'s syntax tree; :class:`SyntaxRefused` when any part of it is an
    error or a node the grammar had to invent, :class:`OverBudget` when reading it costs too much."""
    root = _budgeted(source)
    if root.has_error:
        bad = next((n for n in walk(root) if n.is_error or n.is_missing), root)
        raise SyntaxRefused(f"the shell grammar cannot read the line at byte {bad.start_byte} "
                            f"({source[bad.start_byte:bad.start_byte + 20]!r})")
    return root


def parse_lenient(source: bytes) -> Node:
    """The tree as far as the grammar could read it, errors and all (for best-effort reading only);
    :class:`OverBudget` as :func:`parse`."""
    return _budgeted(source)


def walk(node: Node) -> Iterator[Node]:
    """Every node under ``node``, depth first, in source order (iterative: no recursion limit)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def uncovered(root: Node, source: bytes) -> int | None:
    """The offset of the first byte no leaf of the tree holds and that is not a blank or a newline
    between tokens, or None. Bash reads such a byte; the tree did not (``a\\<newline>b`` is one word
    to bash and two to the grammar)."""
    pos = 0
    for leaf in walk(root):
        if leaf.child_count and leaf.type != "heredoc_body":  # a body's text is all the document's
            continue
        gap = source[pos:leaf.start_byte]
        if gap.strip(b" \t\n"):
            return pos + len(gap) - len(gap.lstrip(b" \t\n"))
        pos = max(pos, leaf.end_byte)
    tail = source[pos:]
    if tail.strip(b" \t\n"):
        return pos + len(tail) - len(tail.lstrip(b" \t\n"))
    return None


__all__ = ["Budget", "OverBudget", "SyntaxRefused", "parse", "parse_lenient", "uncovered", "walk"]
