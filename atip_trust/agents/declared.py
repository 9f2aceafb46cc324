"""Options as a tool's verified ATIP metadata declares them (issue 32, item 2).

A deny rule is written in one spelling (``gh repo delete --yes *``); the tool reads many. Where the
program's admission verified its ATIP metadata (signed by a signer policy names and bound to these
bytes and this name: admission/metadata_trust.py, ``Admission.effects_verified``) and that metadata
declares options (RFC §3.3 ``commands``, §3.5 ``options`` with ``flags`` and ``type``, §3.1
``globalOptions``), the command is read as that declaration says, not guessed:

* the sub-command path is followed through ``commands`` while no operand has been seen; a word that
  is an option's value (``gh -R delete repo list``: ``delete`` is ``--repo``'s value) is never taken
  for a sub-command;
* the options known at a point are ``globalOptions`` (and the root command ``""``'s) and those of every
  command on the path so far; each is read with getopt's own two steps (agents/getopt.py
  ``long_option``, ``short_cluster``) from a :class:`~atip_trust.agents.getopt.Grammar` built for that
  level: a ``boolean`` option is a flag, any other type takes a value (attached, ``=value`` or the next
  word), short clusters split, an unambiguous prefix of a long option is that option;
* every spelling of an option (``-y``, ``--yes``, ``--ye``, ``-fy``) becomes one canonical word: its
  ``--long`` flag (else its longest flag). The policy's deny and ask rules are rewritten the same way
  (:meth:`Declaration.rule`: ``gh repo delete -y *`` reads ``gh repo delete --yes *``), so a rule and a
  command meet in one spelling;
* an option the declaration does not know at that point, an ambiguous prefix or an option with no value
  is :class:`~atip_trust.agents.words.Unprovable`: a rule could depend on it, so agents/spellings.py
  makes the program a question (``gh --undeclared repo delete x``).

Two readings come out, each starting with the program and its sub-command path: the options (canonical,
values after them) before the operands, and options and operands in the order written. Both are only
ever matched against deny and ask rules (an allow rule sees the command as given: policy/decide.py), so
the declaration can add a denial or a question, never an allow; metadata that is not verified is never
read here (it could otherwise hide an option from a rule). A declaration is built once per metadata
digest (``declaration_of``) and each sub-command level on first use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from atip_trust._base.record import replace
from atip_trust.agents.getopt import Grammar, long_option, short_cluster
from atip_trust.agents.words import Unprovable, Word
from atip_trust.policy.model import CommandRule
from atip_trust.policy.rules import compile_rule

if TYPE_CHECKING:
    from atip_trust.admission.admit import Admission

#: Spelled flag -> (canonical word, takes a value).
Table = dict[str, tuple[str, bool]]
#: At most this many declarations (by metadata digest) are kept per process.
MAX_CACHED = 64


def _option_specs(node: Any, key: str = "options") -> list[tuple[list[str], bool]]:
    """The ``(flags, takes a value)`` of the RFC §3.5 options listed under ``node[key]``."""
    raw = node.get(key) if isinstance(node, Mapping) else None
    out: list[tuple[list[str], bool]] = []
    for option in raw if isinstance(raw, list) else ():
        if not isinstance(option, Mapping) or not isinstance(option.get("flags"), list):
            continue
        flags = [f for f in option["flags"] if isinstance(f, str) and len(f) > 1 and f[0] == "-" and " " not in f]
        if flags:
            out.append((flags, option.get("type") != "boolean"))
    return out


def _canonical(flags: Sequence[str]) -> str:
    longs = [f for f in flags if f.startswith("--")]
    return max(longs or flags, key=len)


def _grammar(table: Table) -> Grammar:
    short = {f[1]: valued for f, (_, valued) in table.items() if len(f) == 2 and f[1] != "-"}
    longs = {f[2:]: valued for f, (_, valued) in table.items() if f.startswith("--") and len(f) > 2}
    return Grammar(flags="".join(c for c, v in short.items() if not v),
                   valued="".join(c for c, v in short.items() if v),
                   long_flags=tuple(n for n, v in longs.items() if not v),
                   long_valued=tuple(n for n, v in longs.items() if v))


class _Level:
    """The options known at one point of the sub-command path, and the sub-commands below it."""

    __slots__ = ("commands", "grammar", "table")

    def __init__(self, table: Table, commands: Any) -> None:
        self.table = table
        self.grammar = _grammar(table)
        self.commands: Mapping[str, Any] = commands if isinstance(commands, Mapping) else {}


class Reading:
    """One command as the declaration reads it."""

    __slots__ = ("dashdash", "operands", "options", "path", "program", "written")

    def __init__(self, program: str) -> None:
        self.program = program
        self.path: list[str] = []
        self.options: list[str] = []
        self.operands: list[str] = []
        #: Options (with their values) and operands in the order written.
        self.written: list[str] = []
        self.dashdash = False

    def forms(self) -> list[tuple[str, ...]]:
        head = (self.program, *self.path)
        grouped = (*head, *self.options, *(("--",) if self.dashdash else ()), *self.operands)
        return list(dict.fromkeys((grouped, (*head, *self.written))))


class Declaration:
    """A tool's declared options (module docstring), read from one verified metadata document."""

    __slots__ = ("_levels", "_rules", "doc", "who")

    def __init__(self, who: str, doc: Mapping[str, Any]) -> None:
        self.who = who
        self.doc = doc
        self._levels: dict[tuple[str, ...], _Level] = {}
        self._rules: dict[CommandRule, CommandRule] = {}

    @classmethod
    def of(cls, who: str, doc: Mapping[str, Any]) -> Declaration | None:
        """The declaration in ``doc``, or None when it declares no option at all (then getopt's
        conventions apply: agents/spellings.py)."""
        commands = doc.get("commands")
        stack: list[Any] = [doc.get("globalOptions") and {"options": doc.get("globalOptions")}]
        stack += list(commands.values()) if isinstance(commands, Mapping) else []
        seen = 0
        while stack and seen < 100_000:  # bounded by the document's size (facts/metadata.py caps it)
            node = stack.pop()
            seen += 1
            if _option_specs(node):
                return cls(who, doc)
            sub = node.get("commands") if isinstance(node, Mapping) else None
            stack += list(sub.values()) if isinstance(sub, Mapping) else []
        return None

    def level(self, path: tuple[str, ...]) -> _Level:
        found = self._levels.get(path)
        if found is not None:
            return found
        if not path:
            commands = self.doc.get("commands")
            commands = commands if isinstance(commands, Mapping) else {}
            specs = _option_specs(self.doc, "globalOptions") + _option_specs(commands.get(""))
            table: Table = {}
            below: Any = {k: v for k, v in commands.items() if k != ""}
        else:
            parent = self.level(path[:-1])
            node = parent.commands[path[-1]]
            specs, table, below = _option_specs(node), dict(parent.table), node.get("commands")
        for flags, valued in specs:
            table.update({f: (_canonical(flags), valued) for f in flags})
        found = self._levels[path] = _Level(table, below)
        return found

    def read(self, argv: Sequence[str]) -> Reading:
        """``argv`` as the tool reads it, or :class:`Unprovable` (module docstring)."""
        out = Reading(argv[0])
        words = [Word(w) for w in argv]
        i = 1
        while i < len(words):
            text = words[i].text
            level = self.level(tuple(out.path))
            if out.dashdash or not text.startswith("-") or text == "-":
                if not out.dashdash and not out.operands and isinstance(level.commands.get(text), Mapping):
                    out.path.append(text)
                else:
                    out.operands.append(text)
                    out.written.append(text)
                i += 1
            elif text == "--":
                out.dashdash = True
                i += 1
            else:
                i = self._option(words, i, level, out)
        return out

    def _option(self, words: list[Word], i: int, level: _Level, out: Reading) -> int:
        """The option word at ``i`` (with its value); returns the next index."""
        text = words[i].text
        found: list[tuple[str, str | None]] = []
        exact = level.table.get(text.split("=", 1)[0])
        try:
            if text.startswith("--") or (exact is not None and len(text.split("=", 1)[0]) > 2):
                name = f"--{long_option(text, level.grammar, self.who)[0]}" if text.startswith("--") \
                    else text.split("=", 1)[0]  # a declared one-dash long flag (-name)
                valued = level.table[name][1]
                if "=" in text:
                    found.append((name, text.split("=", 1)[1] if valued else None))
                elif valued:
                    if i + 1 >= len(words):
                        raise Unprovable(f"{self.who} option {name} has no value the line shows")
                    found.append((name, words[i + 1].text))
                    i += 1
                else:
                    found.append((name, None))
                i += 1
            else:
                i = short_cluster(text, words, i, level.grammar, self.who, found)
        except Unprovable as why:
            raise Unprovable(f"{why}: {self.who}'s verified ATIP metadata declares its options, and not "
                             "this one here") from None
        for name, value in found:
            spelled = [level.table[name][0], *([value] if value is not None else [])]
            out.options += spelled
            out.written += spelled
        return i

    def readings(self, argv: Sequence[str]) -> list[tuple[str, ...]]:
        """The command's readings (module docstring), or :class:`Unprovable`."""
        return self.read(argv).forms()

    def rule(self, rule: CommandRule) -> CommandRule:
        """``rule`` with each option it spells written as the canonical word (module docstring); a word
        holding a wildcard, and an option not declared where it stands, are kept as written. Worked out
        once per rule."""
        found = self._rules.get(rule)
        if found is None:
            found = self._rules[rule] = self._rule(rule)
        return found

    def _rule(self, rule: CommandRule) -> CommandRule:
        if rule.kind == "any":
            return rule
        if rule.kind == "tokens":
            path: list[str] = []
            positions: list[tuple[str, ...]] = []
            for k, alternatives in enumerate(rule.tokens):
                level = self.level(tuple(path))
                positions.append(tuple(self._spelled(a, level) for a in alternatives) if k else alternatives)
                if k and isinstance(level.commands.get(alternatives[0]), Mapping):
                    path.append(alternatives[0])
            return replace(rule, tokens=tuple(positions))
        words = rule.pattern.split(" ")
        canonical = " ".join(self._rule_words(words))
        if canonical == rule.pattern:
            return rule
        return replace(compile_rule(canonical, rule.behavior, rule.source, where=f"{rule.text} (as declared)"),
                       text=rule.text)

    def _rule_words(self, words: list[str]) -> list[str]:
        out = words[:1]
        path: list[str] = []
        operand = False
        i = 1
        while i < len(words):
            word = words[i]
            level = self.level(tuple(path))
            if "*" in word or not word.startswith("-") or word in ("-", "--"):
                plain = "*" not in word and not word.startswith("-")
                if plain and not operand and isinstance(level.commands.get(word), Mapping):
                    path.append(word)
                else:
                    operand = True  # past a wildcard or an operand, no word is a sub-command
                out.append(word)
                i += 1
                continue
            try:
                reading = Reading(words[0])
                nxt = self._option([Word(w) for w in words], i, level, reading)
            except Unprovable:
                out.append(word)  # not declared here: as written
                i += 1
                continue
            out += reading.options
            i = nxt
        return out

    def _spelled(self, word: str, level: _Level) -> str:
        spelled = level.table.get(word)
        return spelled[0] if spelled is not None else word


_CACHE: dict[str, Declaration | None] = {}


def declaration_of(admission: Admission) -> Declaration | None:
    """The declaration of the admitted tool's verified metadata, or None (no metadata, metadata that is
    not verified, or one that declares no option): built once per metadata digest."""
    doc = admission.metadata
    if doc is None or not admission.effects_verified:
        return None
    key = str(doc.sha256)
    if key not in _CACHE:
        if len(_CACHE) >= MAX_CACHED:
            _CACHE.clear()
        _CACHE[key] = Declaration.of(doc.name or admission.tool, doc.doc)
    return _CACHE[key]


__all__ = ["Declaration", "Reading", "declaration_of"]
