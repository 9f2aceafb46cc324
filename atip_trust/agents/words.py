"""A bash word as the program will receive it: quote removal done, expansions found.

Bash turns a word into argv entries by expansion, word splitting, pathname expansion and quote
removal (bash(1) EXPANSION; POSIX XCU 2.6). The gate may only vouch for words whose result it knows
without running anything: a *literal* word is one where none of those steps can change the text.
Anything that expands (``$x``, ``~``, a glob, a brace list) is still a word, marked not literal; a
construct that *runs code* while expanding (command, process and arithmetic substitution, a
``${...}`` beyond a plain name: subscripts are arithmetic, ``@P`` is prompt expansion) makes the
whole line unprovable (:class:`Unprovable`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from atip_trust._base.record import Record

if TYPE_CHECKING:
    from atip_trust.agents.bash_syntax import Node


class Unprovable(ValueError):
    """The gate cannot know every program the line executes; the message says what prevents it."""


class Word(Record):
    """One word of a command: its text after quote removal (the source text when not literal)."""

    text: str
    #: No expansion can change the text: it is exactly the argv entry the program gets.
    literal: bool = True
    #: Not literal, but one word (double-quoted) whose command substitutions run only read-only programs
    #: (shell_model._data_word): as a data option's value it cannot change what runs (issue 32, item 9).
    data: bool = False


#: Characters that, unquoted, make bash expand a word (pathname expansion, extglob, parameter and
#: command substitution the grammar did not show as a node).
_GLOB = frozenset("*?[")
_ACTIVE = frozenset("$`()")
#: Expansion nodes that run nothing: the word's value is unknown but no code runs to produce it.
_INERT_EXPANSIONS = frozenset({"simple_expansion", "ansi_c_string", "translated_string", "brace_expression"})
#: Nodes whose expansion runs code (bash(1) Command Substitution, Process Substitution, Arithmetic
#: Expansion: array subscripts and arithmetic evaluate variable values recursively).
_CODE_EXPANSIONS = frozenset({"command_substitution", "process_substitution", "arithmetic_expansion"})
_DQ_ESCAPES = frozenset('$`"\\')


def _unquote_bare(raw: str, out: list[tuple[str, bool]]) -> None:
    """An unquoted stretch: a backslash quotes the next character, backslash-newline vanishes."""
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        if c == "\\" and i + 1 < n:
            if raw[i + 1] != "\n":
                out.append((raw[i + 1], True))
            i += 2
            continue
        if c in " \t\n":
            # Unquoted blanks end a word (a newline, the command) in bash; the grammar has been seen to
            # read "ls<newline>\\x" as one command with the argument "<newline>x", and "{<tab>{" as one word.
            raise Unprovable(f"the shell grammar read a blank inside the word {raw[:40]!r}, where bash "
                             "splits it")
        out.append((c, False))
        i += 1


def _unquote_double(raw: str, out: list[tuple[str, bool]]) -> None:
    """Inside double quotes a backslash quotes only ``$ ` " \\`` and newline (XCU 2.2.3)."""
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        if c == "\\" and i + 1 < n and (raw[i + 1] in _DQ_ESCAPES or raw[i + 1] == "\n"):
            if raw[i + 1] != "\n":
                out.append((raw[i + 1], True))
            i += 2
            continue
        # ``$`` or a backquote the grammar left inside string content would expand: not literal.
        out.append((c, c not in _ACTIVE or c in "()"))
        i += 1


def _expansion(node: Node) -> None:
    """``${name}`` is inert; anything more inside the braces may run code (module docstring)."""
    inner = [c for c in node.children if c.type not in ("${", "}")]
    if len(inner) != 1 or inner[0].type not in ("variable_name", "special_variable_name"):
        raise Unprovable(f"the expansion {_text(node)!r} can run code while it expands")


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "surrogateescape")


def _parts(node: Node, out: list[tuple[str, bool]], subs: list[Node] | None = None) -> bool:
    """Append ``node``'s characters (with whether each was quoted) to ``out``; False when some part
    expands to a value only the running shell knows. ``subs``: where a command substitution inside
    double quotes is handed back to the caller to walk (:func:`word`), instead of being refused."""
    kind = node.type
    if kind in ("word", "number"):
        _unquote_bare(_text(node), out)
        return True
    if kind == "raw_string":
        out.extend((c, True) for c in _text(node)[1:-1])
        return True
    if kind == "string":
        known = True
        for child in node.children:
            if child.type == '"':
                continue
            if child.type == "string_content":
                _unquote_double(_text(child), out)
            elif child.type == "command_substitution" and subs is not None:
                subs.append(child)  # quoted: one word whatever it prints, no splitting, no globbing
                known = False
            else:
                known = _parts(child, out) and known
        out.append(("", True))  # "" is a word even when empty
        return known
    if kind == "concatenation":
        known, end = True, node.start_byte
        for child in node.children:
            if child.start_byte != end:
                raise Unprovable(f"the grammar split the word {_text(node)!r} where bash does not")
            end = child.end_byte
            known = _parts(child, out, subs) and known
        return known
    if kind in _CODE_EXPANSIONS:
        what = kind.replace("_", " ")
        why = " (it evaluates variables' values as code)" if kind == "arithmetic_expansion" else ""
        raise Unprovable(f"the {what} {_text(node)[:60]!r} runs code while the line is expanded{why}: "
                         "what it runs is not in the text")
    if kind == "expansion":
        _expansion(node)
        out.append((_text(node), False))
        return False
    if kind in _INERT_EXPANSIONS:
        out.append((_text(node), False))
        return False
    raise Unprovable(f"a word of kind {kind!r} ({_text(node)[:40]!r}) is not one the gate reads")


def _expands(chars: list[tuple[str, bool]]) -> bool:
    """Unquoted characters bash would expand: a glob or extglob, a leading ``~``, a brace list."""
    bare = [c for c, quoted in chars if not quoted and c]
    if any(c in _GLOB or c in _ACTIVE for c in bare):
        return True
    if chars and chars[0] == ("~", False):
        return True
    # bash also expands a tilde after an unquoted '=' or ':' (an assignment-like argument: y=~/x).
    if any(c == "~" and not quoted and i and chars[i - 1] in (("=", False), (":", False))
           for i, (c, quoted) in enumerate(chars)):
        return True
    depth_open = False
    seen_sep = False
    prev = ""
    for c, quoted in chars:
        if quoted:
            prev = ""
            continue
        if c == "{":
            depth_open, seen_sep = True, False
        elif depth_open and (c == "," or (c == "." and prev == ".")):
            seen_sep = True
        elif c == "}" and depth_open and seen_sep:
            return True
        prev = c
    return False


def _contiguous(node: Node) -> None:
    """A word's tokens touch one another: a gap inside a word node is the grammar joining what bash
    splits (it has been seen to read ``>$ --force`` as one target, ``$-`` then ``-force``)."""
    end = None
    stack = [node]
    while stack:
        n = stack.pop()
        if n.child_count and n.type != "command_substitution":  # its inside is a line, walked on its own
            stack.extend(reversed(n.children))
            continue
        if end is not None and n.start_byte != end:
            raise Unprovable(f"the shell grammar read {_text(node)[:40]!r} as one word across a gap")
        end = n.end_byte


def word(node: Node, subs: list[Node] | None = None) -> Word:
    """The argv entry bash makes of ``node`` (module docstring). With ``subs``, a command substitution
    inside double quotes is appended there for the caller to walk as a line of its own, and the word
    is not literal; without it, any substitution is refused."""
    chars: list[tuple[str, bool]] = []
    known = _parts(node, chars, subs)  # first: a substitution is refused for what it is
    _contiguous(node)
    if not known or _expands(chars):
        return Word(_text(node), literal=False)
    return Word("".join(c for c, _ in chars))


__all__ = ["Unprovable", "Word", "word"]
