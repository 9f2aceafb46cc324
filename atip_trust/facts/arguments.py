"""A command's declared arguments and options (RFC §3.4, §3.5, §3.7): checking a call's values, building
the argv that runs it, and reading an argv back into values.

One place for three callers that must agree: the call validator (``agents/calls.py``, violations
``ARGUMENT_INVALID``), the tool call -> argv mapping (``bridge/argv.py``) and a hook that sees an argv
and asks which arguments it carries. A provider's tool call names a leaf command of the flat list
(``facts/flatten.py``); its arguments are the command's options and positional arguments by name.

Where this differs from the reference executor (atip-execute ``buildCommandArray``), each time to fail
closed (docs/bridge.md):

* options first, then positional arguments; a positional value starting with ``-`` comes after one
  ``--``, so ``--exec=evil`` given as a file name is never read as an option (the reference puts the
  positionals first and passes such a value through as is);
* an option value starting with ``-`` is written ``--flag=value`` (a parser would otherwise read it as
  the next option); an option with only short flags cannot carry such a value and the call is refused;
* values are checked against the declared type, enum, ``required`` and ``variadic``, never coerced
  (``"123"`` is not an integer, ``True`` is not ``1``); an unknown argument name is an error, not a
  warning passed through; ``None`` (a strict-mode provider's "not given", RFC §8.2 rule 2) omits an
  optional value;
* an optional positional left out before one that is given is refused: its slot would be read as the
  one left out;
* no shell is involved anywhere: the argv is a list of words, and a NUL byte (which no argv can carry)
  is refused.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from atip_trust._base.limits import LIMITS
from atip_trust._base.record import Record
from atip_trust.errors import MetadataError, UsageError
from atip_trust.facts.flatten import FlatCommand

if TYPE_CHECKING:
    from typing import Any, Literal

#: RFC §3.7 types; the path-like ones are strings on a command line.
_STRING_TYPES = frozenset({"string", "file", "directory", "url"})
KNOWN_TYPES = _STRING_TYPES | {"integer", "number", "boolean", "enum", "array"}
#: A flag as a command line spells it: one or two dashes, then no space, ``=`` or NUL.
_FLAG_RE = re.compile(r"--?[^\s=\x00-][^\s=\x00]*")
_INT_RE = re.compile(r"-?[0-9]+")


class Param(Record):
    """One declared option or positional argument of a command."""

    name: str
    kind: Literal["option", "argument"]
    type: str
    required: bool
    variadic: bool
    enum: tuple[Any, ...] | None
    flags: tuple[str, ...]
    where: str

    @property
    def many(self) -> bool:
        """Takes a list: a variadic argument, or an array / variadic (repeatable) option. A variadic
        boolean is a flag, given or not (the compiled schema says boolean, bridge/compile.py)."""
        return (self.variadic and self.type != "boolean") or self.type == "array"

    @property
    def flag(self) -> str:
        """The flag written on the command line: the long form when there is one (as the reference)."""
        return next((f for f in self.flags if f.startswith("--")), self.flags[0])


def declared_params(cmd: FlatCommand) -> tuple[list[Param], list[Param]]:
    """The command's options and positional arguments, in declaration order; MetadataError when a
    declaration cannot be turned into an argv safely (no flags, a flag that is not one, a name twice)."""
    node = cmd.command
    options: list[Param] = []
    arguments: list[Param] = []
    seen: dict[str, str] = {}
    for key, out in (("options", options), ("arguments", arguments)):
        raw = node.get(key, [])
        if not isinstance(raw, Sequence) or isinstance(raw, (str, bytes)):
            raise MetadataError(f"{cmd.json_path}.{key}: must be an array, got {type(raw).__name__}")
        for i, decl in enumerate(raw):
            where = f"{cmd.json_path}.{key}[{i}]"
            if not isinstance(decl, Mapping):
                raise MetadataError(f"{where}: must be an object, got {type(decl).__name__}")
            name, typ = decl.get("name"), decl.get("type")
            if not isinstance(name, str) or not name:
                raise MetadataError(f"{where}.name: must be a non-empty string, got {name!r}")
            if name in seen:
                raise MetadataError(f"{where}.name: {name!r} is declared twice (also {seen[name]}); a "
                                    "call's argument must name exactly one option or argument")
            seen[name] = where
            if typ not in KNOWN_TYPES:
                raise MetadataError(f"{where}.type: {typ!r} is not an RFC §3.7 type "
                                    f"({', '.join(sorted(KNOWN_TYPES))})")
            enum = decl.get("enum")
            if enum is not None and (not isinstance(enum, list) or not enum):
                raise MetadataError(f"{where}.enum: must be a non-empty array, got {enum!r}")
            if typ == "enum" and enum is None:
                raise MetadataError(f"{where}.enum: type enum needs its allowed values")
            flags: tuple[str, ...] = ()
            if key == "options":
                rawf = decl.get("flags")
                if not isinstance(rawf, list) or not rawf:
                    raise MetadataError(f"{where}.flags: an option needs at least one flag, got {rawf!r}")
                for f in rawf:
                    if not isinstance(f, str) or not _FLAG_RE.fullmatch(f):
                        raise MetadataError(f"{where}.flags: {f!r} is not a flag (-x or --name, no "
                                            "space or '=')")
                flags = tuple(rawf)
            out.append(Param(
                name=name, kind="option" if key == "options" else "argument", type=typ,
                # RFC §3.4: arguments are required unless they say not; §3.5: options are optional.
                required=decl.get("required", key == "arguments") is True,
                variadic=decl.get("variadic") is True, enum=tuple(enum) if enum is not None else None,
                flags=flags, where=where))
    for word in cmd.argv_prefix:
        if word.startswith("-") or "\x00" in word:
            raise MetadataError(f"{cmd.json_path}: command word {word!r} would read as an option")
    return options, arguments


def _same(a: Any, b: Any) -> bool:
    # Python says True == 1 and 1 == 1.0; a declared enum value matches only a value of its own type,
    # or the string that is its very argv word: RFC §8.2 rule 4 compiles every enum to a string, so a
    # model that follows the schema sends "2" for a declared 2, and the command line gets the same word.
    if type(a) is type(b):
        return bool(a == b)
    return isinstance(a, str) and isinstance(b, (int, float)) and not isinstance(b, bool) and _word(b) == a


def _scalar_problem(p: Param, value: Any, what: str) -> str | None:
    if p.enum is not None and not any(_same(value, e) for e in p.enum):
        return f"{what}: {value!r} is not one of {list(p.enum)}"
    typ = p.type
    if typ in _STRING_TYPES or (typ == "enum" and isinstance(value, str)):
        ok = isinstance(value, str)
    elif typ == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif typ == "number":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    elif typ == "boolean":
        ok = isinstance(value, bool)
    else:  # enum (checked above) or an array's item: a string or a finite number
        ok = isinstance(value, str) or (isinstance(value, (int, float)) and not isinstance(value, bool)
                                        and math.isfinite(value))
    if not ok:
        expected = "string or number" if typ in ("array", "enum") else typ
        return f"{what}: expected {expected}, got {type(value).__name__} {value!r}"
    if isinstance(value, str) and "\x00" in value:
        return f"{what}: contains a NUL byte, which no argv can carry"
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as err:
            # A lone surrogate (JSON "\ud800" decodes to one): no UTF-8 argv can carry it.
            return (f"{what}: character {err.start} is {value[err.start]!r}, a lone surrogate that "
                    "cannot be encoded as UTF-8; expected text that an argv can carry")
    return None


def _value_problems(p: Param, value: Any) -> list[str]:
    what = f"{p.kind} {p.name!r}"
    if p.many:
        if not isinstance(value, list):
            return [f"{what}: expected an array, got {type(value).__name__} {value!r}"]
        if p.required and not value:
            return [f"{what}: required, got an empty array"]
        if p.type == "boolean":
            return [f"{what}: a boolean cannot be repeated"]
        return [msg for i, item in enumerate(value)
                if (msg := _scalar_problem(p, item, f"{what}[{i}]")) is not None]
    msg = _scalar_problem(p, value, what)
    return [msg] if msg is not None else []


def argument_problems(cmd: FlatCommand, arguments: Any) -> list[str]:
    """Every way ``arguments`` does not fit the command's declarations (empty when it fits)."""
    options, positionals = declared_params(cmd)
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        return [f"the arguments must be an object, got {type(arguments).__name__}"]
    problems: list[str] = []
    known = {p.name: p for p in options + positionals}
    for key in arguments:
        if key not in known:
            problems.append(f"{key!r} is not an option or argument of {' '.join(cmd.path) or cmd.name!r} "
                            f"(declared: {sorted(known) or 'none'})")
    for p in options + positionals:
        value = arguments.get(p.name)
        if value is None:
            if p.required:
                problems.append(f"{p.kind} {p.name!r} is required")
            continue
        problems.extend(_value_problems(p, value))
    missing: Param | None = None
    for p in positionals:
        if arguments.get(p.name) is None:
            missing = missing or p
        elif missing is not None:
            problems.append(f"argument {p.name!r} is given without the earlier argument {missing.name!r}: "
                            f"its position would be read as {missing.name!r}")
    return problems


def _word(value: Any) -> str:
    return value if isinstance(value, str) else repr(value)  # int/float: shortest round-trip form


def command_argv(tool: str, cmd: FlatCommand, arguments: Any) -> list[str]:
    """``[tool, *command words, *options, [--], *positionals]``; UsageError naming every problem."""
    problems = argument_problems(cmd, arguments)
    args: Mapping[str, Any] = arguments or {}
    options, positionals = declared_params(cmd)
    argv = [tool, *cmd.argv_prefix]
    for p in options:
        value = args.get(p.name) if not problems else None
        if value is None or value is False:
            continue
        if value is True:
            argv.append(p.flag)
            continue
        for item in value if isinstance(value, list) else [value]:
            word = _word(item)
            if word.startswith("-"):
                if not p.flag.startswith("--"):
                    problems.append(f"option {p.name!r}: value {word!r} starts with '-' and the option has "
                                    f"only short flags {list(p.flags)}: it would be read as an option")
                    continue
                argv.append(f"{p.flag}={word}")
            else:
                argv += [p.flag, word]
    separated = False
    for p in positionals:
        value = args.get(p.name) if not problems else None
        for item in (value if isinstance(value, list) else [] if value is None else [value]):
            word = _word(item)
            if word.startswith("-") and not separated:
                argv.append("--")  # POSIX utility guideline 10: the words after it are operands
                separated = True
            argv.append(word)
    if problems:
        raise UsageError(f"tool call {cmd.name!r} does not fit its declaration: " + "; ".join(problems))
    chars = sum(len(w) + 1 for w in argv)
    if len(argv) > LIMITS.command_words or chars > LIMITS.command_chars:
        raise UsageError(f"tool call {cmd.name!r}: argv of {len(argv)} words, {chars} characters is over "
                         f"the limit ({LIMITS.command_words} words, {LIMITS.command_chars} characters)")
    return argv


def _parse_value(p: Param, text: str, what: str) -> tuple[Any, str | None]:
    if p.enum is not None:
        hit = next((e for e in p.enum if _word(e) == text), None)
        return (hit, None) if hit is not None else (text, f"{what}: {text!r} is not one of {list(p.enum)}")
    if p.type == "integer":
        return (int(text), None) if _INT_RE.fullmatch(text) else (text, f"{what}: {text!r} is not an integer")
    if p.type == "number":
        try:
            num = float(text)
        except ValueError:
            return text, f"{what}: {text!r} is not a number"
        return (num, None) if math.isfinite(num) else (text, f"{what}: {text!r} is not a finite number")
    return text, None


def parse_argv(cmd: FlatCommand, words: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
    """The words after a command's path read back into its arguments, strictly: declared flags only
    (``--flag value``, ``--flag=value``, a boolean flag alone), ``--`` ends the options, positionals in
    declared order. Returns (arguments, problems); an undeclared option or clustered short flags
    (``-abc``) is a problem, never guessed."""
    options, positionals = declared_params(cmd)
    by_flag = {f: p for p in options for f in p.flags}
    args: dict[str, Any] = {}
    problems: list[str] = []
    operands: list[str] = []
    i, ended = 0, False
    while i < len(words):
        word = words[i]
        i += 1
        if ended or len(word) < 2 or not word.startswith("-"):
            operands.append(word)
            continue
        if word == "--":
            ended = True
            continue
        flag, eq, inline = word.partition("=") if word.startswith("--") else (word, "", "")
        p = by_flag.get(flag)
        if p is None:
            problems.append(f"{word!r} is not a declared option of {' '.join(cmd.path) or cmd.name!r}")
            continue
        what = f"option {p.name!r}"
        if p.type == "boolean":
            if eq:
                problems.append(f"{what}: a boolean flag takes no value, got {word!r}")
            elif p.name in args:
                problems.append(f"{what}: given twice")
            args[p.name] = True
            continue
        if eq:
            text = inline
        elif i < len(words):
            text, i = words[i], i + 1
        else:
            problems.append(f"{what}: {flag} needs a value")
            continue
        value, problem = _parse_value(p, text, what)
        if problem is not None:
            problems.append(problem)
        if p.many:
            args.setdefault(p.name, []).append(value)
        elif p.name in args:
            problems.append(f"{what}: given twice")
        else:
            args[p.name] = value
    for p in positionals:
        if not operands:
            break
        what = f"argument {p.name!r}"
        taken, operands = (operands, []) if p.many else (operands[:1], operands[1:])
        values = []
        for text in taken:
            value, problem = _parse_value(p, text, what)
            values.append(value)
            if problem is not None:
                problems.append(problem)
        args[p.name] = values if p.many else values[0]
    if operands:
        problems.append(f"{len(operands)} more positional word(s) than {' '.join(cmd.path) or cmd.name!r} "
                        f"declares: {operands[:3]!r}")
    return args, problems


__all__ = ["Param", "argument_problems", "command_argv", "declared_params", "parse_argv"]
