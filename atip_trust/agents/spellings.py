"""Options as the program reads them, for the policy's deny and ask rules (issue 32, item 2).

A rule is written in one spelling (``git push -f *``, ``* --force *``); a program accepts many: git's
parse-options and getopt split short-option clusters (``-fu`` is ``-f -u``), accept ``--name=value`` for
``--name value``, and take any unambiguous prefix of a long option (``--force-w`` is
``--force-with-lease``). So beside the command as given, deny and ask rules are tried on its other
readings (policy/decide.py already tries the readings of *leading* options, rules.command_variants):

* every ``-abc`` word split into ``-a -b -c`` and every ``--name=value`` into ``--name value``;
* every ``--prefix`` replaced by each long option a deny or ask rule of this program names that starts
  with it (one word at a time).

Whether ``-n10`` is ``-n 10`` or a cluster, whether a word is an option's value, is not decided: every
reading counts, which can only add a deny or a question, never an allow (allow rules see the command as
given, as in decide.py). The shipped policies name each force push git has (policies/ci.json,
policies/enterprise-strict.json).

Where the tool's verified ATIP metadata declares its options (agents/declared.py), that declaration
replaces the guessing: the command is read as the tool reads it (which option takes a value, each
option's aliases, the sub-command path), the rules are written in the same canonical spelling, and an
option the declaration does not know makes the program a question when any deny or ask rule names it
(a rule could depend on that option).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from atip_trust.agents.declared import Declaration
from atip_trust.agents.words import Unprovable
from atip_trust.policy.model import CommandRule, Policy
from atip_trust.policy.rules import (
    command_line,
    command_variants,
    rule_matches,
    rules_for_tool,
)

_LONG = re.compile(r"--[A-Za-z0-9][A-Za-z0-9-]*")
#: At most this many readings per command (each one word's expansion): a bound on hostile input.
MAX_READINGS = 64


def _split(word: str) -> list[str]:
    if word.startswith("--"):
        return word.split("=", 1) if "=" in word and len(word) > 2 else [word]
    if word.startswith("-") and len(word) > 2:
        return [f"-{c}" for c in word[1:]]
    return [word]


def _named_options(rules: Sequence[CommandRule]) -> list[str]:
    found: dict[str, None] = {}
    for rule in rules:
        texts = [t for alts in rule.tokens for t in alts] if rule.kind == "tokens" else [rule.pattern]
        for text in texts:
            found.update(dict.fromkeys(_LONG.findall(text)))
    return list(found)


def readings(argv: Sequence[str], named: Sequence[str]) -> list[tuple[str, ...]]:
    """The other readings of ``argv`` (module docstring), the command as given left out."""
    split = tuple(part for w in argv[1:] for part in _split(w))
    base = (argv[0], *split)
    out: dict[tuple[str, ...], None] = {}
    if base != tuple(argv):
        out[base] = None
    for i, word in enumerate(base[1:], 1):
        if not word.startswith("--") or len(word) < 3:
            continue
        for option in named:
            if option != word and option.startswith(word) and len(out) < MAX_READINGS:
                out[(*base[:i], option, *base[i + 1:])] = None
    return list(out)


def strictest_reading(policy: Policy, name: str, argv: Sequence[str], declared: Declaration | None = None, *,
                      given: bool = False) -> tuple[str, str] | None:
    """``("deny" | "ask", why)`` when a deny or ask rule of ``policy`` for the program ``name`` matches a
    reading of ``argv`` (module docstring) other than the command as given (that one too when ``given``:
    a caller whose admission matched the rules under another name), or None. ``declared``: the tool's
    verified declaration of its options, read instead of getopt's conventions."""
    deny = [r for r, _ in rules_for_tool(policy.deny_rules, name)]
    ask = [r for r, _ in rules_for_tool(policy.ask_rules, name)]
    if not deny and not ask:
        return None
    if declared is not None:
        try:
            found = declared.readings([name, *argv[1:]])
        except Unprovable as why:
            return "ask", f"{why}; a deny or ask rule for {name} could depend on it, so it cannot be proved"
        deny, ask = [declared.rule(r) for r in deny], [declared.rule(r) for r in ask]
    else:
        found = [(name, *r[1:]) for r in readings(argv, _named_options([*deny, *ask]))]
    if given:
        found = [(name, *argv[1:]), *found]
    return _first_match(found, deny, ask)


def _first_match(found: Sequence[tuple[str, ...]], deny: list[CommandRule], ask: list[CommandRule]
                 ) -> tuple[str, str] | None:
    """The first deny rule any reading matches, else the first ask rule."""
    answer: tuple[str, str] | None = None
    for reading in found:
        tokens, line = command_line(reading[0], reading[1:])
        variants, _ = command_variants(tokens, line)
        for behavior, rules in (("deny", deny), ("ask", ask)):
            for rule in rules:
                if any(rule_matches(rule, vt, vl) for vt, vl in variants):
                    why = f"read as {' '.join(reading)!r} (as the program reads its options), it " \
                          f"matches the {behavior} rule {rule.text!r}"
                    if behavior == "deny":
                        return behavior, why
                    answer = answer or (behavior, why)
    return answer


__all__ = ["MAX_READINGS", "readings", "strictest_reading"]
