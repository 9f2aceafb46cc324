"""Options as GNU ``getopt_long`` reads them, for the command runners the shell gate models.

A runner's options decide where its command starts and what it does with it, so they are read with
the same rules the runner uses (getopt(3)): clustered short options (``-iv``), a short option's value
attached or in the next word (``-n10``, ``-n 10``), optional values only attached, long options with
``=VALUE`` or the next word, unambiguous *abbreviations* of long options (``--spl`` is
``--split-string`` to env), ``--`` ending the options, and, as each modelled runner asks with a
leading ``+`` in its option string, no permutation: the first operand ends the options.
An option the table does not know, an ambiguous abbreviation or a word whose text is not known
(``$x`` could be any option) is :class:`Unprovable`.

agents/declared.py reads a governed tool's options with the same two steps (``long_option``,
``short_cluster``), from a Grammar per sub-command built from its verified ATIP metadata.
"""

from __future__ import annotations

from atip_trust._base.record import Record
from atip_trust.agents.words import Unprovable, Word


class Grammar(Record):
    """A runner's options (getopt's option string and long-option table)."""

    #: Short options without a value, with a required value, with an optional (attached) value.
    flags: str = ''
    valued: str = ''
    optional: str = ''
    long_flags: tuple[str, ...] = ()
    long_valued: tuple[str, ...] = ()
    long_optional: tuple[str, ...] = ()


class Parsed(Record):
    """The options found (``-x`` or ``--name``, with the value or None) and where operands start."""

    options: tuple[tuple[str, str | None], ...]
    rest: int

    def has(self, *names: str) -> bool:
        return any(name in names for name, _ in self.options)

    def values(self, *names: str) -> list[str | None]:
        return [value for name, value in self.options if name in names]


def long_option(word: str, grammar: Grammar, who: str) -> tuple[str, str]:
    """The canonical long option ``word`` names (exact, or its one unambiguous abbreviation), and its
    kind: ``flag``, ``valued`` or ``optional``."""
    given = word[2:].split("=", 1)[0]
    table = [(n, "flag") for n in grammar.long_flags] + [(n, "valued") for n in grammar.long_valued] + \
        [(n, "optional") for n in grammar.long_optional]
    exact = [t for t in table if t[0] == given]
    found = exact if exact else [t for t in table if given and t[0].startswith(given)]
    if len(found) != 1:
        what = "ambiguous" if found else "not one whose meaning is known here"
        raise Unprovable(f"{who} option {word!r} is {what}")
    return found[0]


def short_cluster(text: str, words: list[Word], i: int, grammar: Grammar, who: str,
                   out: list[tuple[str, str | None]]) -> int:
    """One ``-abc`` word; returns the index of the next word."""
    j = 1
    while j < len(text):
        c = text[j]
        if c in grammar.flags:
            out.append((f"-{c}", None))
            j += 1
            continue
        if c in grammar.optional:
            out.append((f"-{c}", text[j + 1:] or None))
            return i + 1
        if c in grammar.valued:
            if j + 1 < len(text):
                out.append((f"-{c}", text[j + 1:]))
                return i + 1
            if i + 1 >= len(words) or not words[i + 1].literal:
                raise Unprovable(f"{who} option -{c} has no value the line shows")
            out.append((f"-{c}", words[i + 1].text))
            return i + 2
        raise Unprovable(f"{who} option -{c} (in {text!r}) is not one whose meaning is known here")
    return i + 1


def parse_options(words: list[Word], start: int, grammar: Grammar, who: str) -> Parsed:
    """Read ``words[start:]`` as ``who``'s options up to its first operand (module docstring)."""
    out: list[tuple[str, str | None]] = []
    i = start
    while i < len(words):
        w = words[i]
        if not w.literal:
            raise Unprovable(f"{who}: the word {w.text!r} is not known before the shell runs, and "
                             "could be an option")
        text = w.text
        if text == "--":
            return Parsed(tuple(out), i + 1)
        if not text.startswith("-") or text == "-":
            break
        if text.startswith("--"):
            name, kind = long_option(text, grammar, who)
            if "=" in text:
                if kind == "flag":
                    raise Unprovable(f"{who} option --{name} takes no value")
                out.append((f"--{name}", text.split("=", 1)[1]))
                i += 1
            elif kind == "valued":
                if i + 1 >= len(words) or not words[i + 1].literal:
                    raise Unprovable(f"{who} option --{name} has no value the line shows")
                out.append((f"--{name}", words[i + 1].text))
                i += 2
            else:
                out.append((f"--{name}", None))
                i += 1
            continue
        i = short_cluster(text, words, i, grammar, who, out)
    return Parsed(tuple(out), i)


__all__ = ["Grammar", "Parsed", "long_option", "parse_options", "short_cluster"]
