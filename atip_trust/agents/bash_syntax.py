"""The one boundary of tree-sitter and its bash grammar: a shell line in, its syntax tree out.

Why a grammar and not a lexer: the gate must know every program a line can execute, and a
hand-written splitter cannot keep up with bash's grammar (issue 22; Claude Code's own permission
check parses with tree-sitter-bash for the same reason). The grammar is not bash either, so the tree
is only trusted where the walker (``shell_model``) recognises every node and every byte of the line
is accounted for: :func:`parse` refuses a tree with an error or missing node, and
:func:`uncovered` names any input the tree skipped (a backslash-newline between words, for one).
"""

from __future__ import annotations

from collections.abc import Iterator
TYPE_CHECKING = False  # typing's constant without importing typing at run time (docs/caching.md)

from atip_trust.agents._deps import tree_sitter, tree_sitter_bash

if TYPE_CHECKING:
    from tree_sitter import Node as Node  # re-exported for the walker's annotations


class SyntaxRefused(ValueError):
    """The grammar could not read the line completely; the message says where."""


class _Parser:
    """One parser per process, made on first use (the language object is immutable)."""

    __slots__ = ("parser",)

    def __init__(self) -> None:
        self.parser: tree_sitter.Parser | None = None

    def get(self) -> tree_sitter.Parser:
        if self.parser is None:
            self.parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
        return self.parser


_PARSER = _Parser()


def parse(source: bytes) -> Node:
    """The root node of ``source``'s syntax tree; :class:`SyntaxRefused` when any part of it is an
    error or a node the grammar had to invent."""
    root = _PARSER.get().parse(source).root_node
    if root.has_error:
        bad = next((n for n in walk(root) if n.is_error or n.is_missing), root)
        raise SyntaxRefused(f"the shell grammar cannot read the line at byte {bad.start_byte} "
                            f"({source[bad.start_byte:bad.start_byte + 20]!r})")
    return root


def parse_lenient(source: bytes) -> Node:
    """The tree as far as the grammar could read it, errors and all (for best-effort reading only)."""
    return _PARSER.get().parse(source).root_node


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
        if leaf.child_count:
            continue
        gap = source[pos:leaf.start_byte]
        if gap.strip(b" \t\n"):
            return pos + len(gap) - len(gap.lstrip(b" \t\n"))
        pos = max(pos, leaf.end_byte)
    tail = source[pos:]
    if tail.strip(b" \t\n"):
        return pos + len(tail) - len(tail.lstrip(b" \t\n"))
    return None


__all__ = ["SyntaxRefused", "parse", "parse_lenient", "uncovered", "walk"]
