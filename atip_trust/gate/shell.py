"""A POSIX shell command line split into the simple commands it runs, without a shell.

An agent's shell tool hands ``sh -c`` a string; an admission is about one binary and its words. This
splits the string at the operators that separate commands (``;`` ``&&`` ``||`` ``|`` ``|&`` ``&``,
newlines, ``(`` ``)`` of subshells), drops what is not a command word (redirections and their
targets, ``NAME=value`` prefixes, ``#`` comments), and unwraps wrappers that run another command
(``sudo``, ``env``, ``xargs``, ``nice``, ``nohup``, ``timeout``, ``stdbuf``, ``time``, ``exec``,
``command``, ``sh -c``/``bash -c``): each wrapper and each wrapped command is a command to admit.

Quoting follows the shell (XCU 2.2): single quotes are literal, double quotes keep ``$`` and
backquote live, a backslash escapes one character. Whatever makes the argv unknowable without
running a shell is :class:`Unsplittable` (the hook then asks): command substitution (``$(``,
backquotes), parameter expansion (``$NAME``, ``${``), arithmetic, process substitution, here-documents,
a glob or ``~`` in a command name, control structures and function definitions (``if``, ``for``,
``{``, ``name()``), builtins that change what later words run (``alias``, ``hash``, ``eval``,
``source``, ``export``, ``set``...), and an assignment to ``PATH`` or to a variable that injects code
(gate/env.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
TYPE_CHECKING = False  # typing's constant without importing typing at run time (README "Verdict cache")

from atip_trust._base.lazy import lazy_import
from atip_trust._base.record import Record, init
from atip_trust._base.slotted import Slotted
from atip_trust.gate.env import is_injection
from atip_trust.limits import LIMITS

if TYPE_CHECKING:
    import shlex
else:
    # Only for ``visible_commands``' reading of a line this module's own lexer could not split.
    shlex = lazy_import("shlex")


class Unsplittable(ValueError):
    """The command line cannot be split into known argv without a shell; the reason says why."""


class SimpleCommand(Record):
    """One command the line runs: its argv, the assignments before it, and whether it is a builtin
    the shell runs itself (no binary to verify)."""

    __slots__ = ("argv", "assignments", "builtin", "via")
    argv: tuple[str, ...]
    assignments: tuple[tuple[str, str], ...]
    builtin: bool
    #: The wrapper this command was found inside (``sudo``), for reasons.
    via: str | None

    def __init__(self, argv: tuple[str, ...], assignments: tuple[tuple[str, str], ...] = (),
                 builtin: bool = False, via: str | None = None) -> None:
        init(self, argv, assignments, builtin, via)


#: Builtins that run no binary and change nothing later commands resolve (bash(1) SHELL BUILTIN
#: COMMANDS): the shell runs them itself, so there are no bytes to verify.
INERT_BUILTINS = frozenset({"cd", "pushd", "popd", "echo", "printf", "true", "false", ":", "pwd",
                            "test", "[", "exit", "return", "shift", "wait", "read", "umask", "dirs"})
#: Builtins and reserved words after which the argv of later commands is not what the text says.
OPAQUE_WORDS = frozenset({
    "alias", "unalias", "hash", "eval", "source", ".", "export", "set", "unset", "declare", "typeset",
    "readonly", "local", "shopt", "enable", "builtin", "trap", "let", "fc", "history", "bind",
    "coproc", "function", "select", "if", "then", "else", "elif", "fi", "for", "while", "until",
    "do", "done", "case", "esac", "{", "}", "[[", "]]", "!", "mapfile", "readarray", "getopts",
    "complete", "compgen", "ulimit", "kill", "jobs", "fg", "bg", "disown", "logout", "suspend",
    "times", "type", "caller", "command_not_found_handle",
})
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"})
SHELL_OWN_WRAPPERS = frozenset({"exec", "command", "time"})
_OPERATORS = ("&&", "||", "|&", ";;", ";", "|", "&", "(", ")", "\n")
_REDIRECTS = ("<<<", "<<-", "<<", "<>", ">>", ">|", ">&", "<&", "&>>", "&>", ">", "<")
_GLOB = set("*?[")


class _Word(Slotted):
    __slots__ = ("text", "quoted", "expands", "started", "plain")
    text: str
    #: Some part of the word was quoted (so ``=`` or a leading ``#`` is literal, ``{`` no keyword).
    quoted: bool
    #: An unquoted glob character or a leading unquoted ``~`` (the shell would expand the word).
    expands: bool
    started: bool
    #: How many characters came before the first quoted one (an assignment's name must be unquoted).
    plain: int | None

    def __init__(self, text: str = "", quoted: bool = False, expands: bool = False, started: bool = False,
                 plain: int | None = None) -> None:
        self.text = text
        self.quoted = quoted
        self.expands = expands
        self.started = started
        self.plain = plain

    def quote(self) -> None:
        if self.plain is None:
            self.plain = len(self.text)
        self.quoted = self.started = True


class _Token(Slotted):
    __slots__ = ("kind", "text", "quoted", "expands", "plain")
    kind: str  # "word", "op", "redir"
    text: str
    quoted: bool
    expands: bool
    plain: int | None

    def __init__(self, kind: str, text: str, quoted: bool = False, expands: bool = False,
                 plain: int | None = None) -> None:
        self.kind = kind
        self.text = text
        self.quoted = quoted
        self.expands = expands
        self.plain = plain


def _tokens(line: str) -> Iterator[_Token]:
    """The line's words and operators, with quotes removed and what the shell would expand marked."""
    i, n = 0, len(line)
    word = _Word()

    def flush() -> Iterator[_Token]:
        nonlocal word
        if word.started:
            yield _Token("word", word.text, word.quoted, word.expands, word.plain)
        word = _Word()

    while i < n:
        c = line[i]
        if c in " \t":
            yield from flush()
            i += 1
            continue
        if c == "#" and not word.started:
            while i < n and line[i] != "\n":
                i += 1
            continue
        if c == "\\":
            if i + 1 < n and line[i + 1] == "\n":  # line continuation
                i += 2
                continue
            if i + 1 >= n:
                raise Unsplittable("the line ends in a lone backslash")
            word.quote()
            word.text += line[i + 1]
            i += 2
            continue
        if c == "'":
            end = line.find("'", i + 1)
            if end < 0:
                raise Unsplittable("a single quote is not closed")
            word.quote()
            word.text += line[i + 1:end]
            i = end + 1
            continue
        if c == '"':
            i += 1
            word.quote()
            while True:
                if i >= n:
                    raise Unsplittable("a double quote is not closed")
                d = line[i]
                if d == '"':
                    i += 1
                    break
                if d == "\\" and i + 1 < n and line[i + 1] in '$`"\\\n':
                    if line[i + 1] != "\n":
                        word.text += line[i + 1]
                    i += 2
                    continue
                if d in "$`":
                    _expansion(line, i)
                word.text += d
                i += 1
            continue
        if c in "$`":
            _expansion(line, i)
            word.text += c
            word.started = True
            i += 1
            continue
        op = _operator_at(line, i)
        if op is not None:
            # A redirection's file descriptor number is part of it (2>file, 2>&1).
            if op in _REDIRECTS and word.started and not word.quoted and word.text.isdigit():
                word = _Word()
            else:
                yield from flush()
            if op in ("<(", ">("):
                raise Unsplittable("process substitution runs a command the line does not show as one")
            yield _Token("redir" if op in _REDIRECTS else "op", op)
            i += len(op)
            continue
        if c in _GLOB or (c == "~" and not word.started):
            word.expands = True
        if c == "{" and i + 1 < n and line[i + 1] != " " and "}" in line[i + 1:] and "," in line[i:]:
            word.expands = True  # brace expansion: {a,b}
        word.text += c
        word.started = True
        i += 1
    yield from flush()


def _operator_at(line: str, i: int) -> str | None:
    for op in ("<(", ">(", *_REDIRECTS, *_OPERATORS):
        if line.startswith(op, i):
            return op
    return None


def _expansion(line: str, i: int) -> None:
    """``$`` or a backquote: what it expands to is not in the text. A lone ``$`` (before a space,
    a quote or the end) is literal, as in the shell."""
    if line[i] == "`":
        raise Unsplittable("a backquoted command substitution runs a command the hook cannot see")
    nxt = line[i + 1] if i + 1 < len(line) else ""
    if nxt == "(":
        raise Unsplittable("$( ) command substitution runs a command the hook cannot see")
    if nxt == "{" or nxt == "_" or nxt.isalnum() or nxt in "@*#?-$!":
        raise Unsplittable("a parameter expansion ($NAME) makes the words unknown until the shell runs")
    if nxt == "'":
        raise Unsplittable("$'...' quoting is not POSIX: the words cannot be read safely")


def split_commands(line: str, *, depth: int = 0) -> list[SimpleCommand]:
    """Every simple command ``line`` runs, in order (wrappers and what they wrap each one), or
    :class:`Unsplittable` naming the construct that prevents a safe split."""
    if len(line) > LIMITS.command_chars:
        raise Unsplittable(f"the command line is longer than {LIMITS.command_chars} characters")
    if "\x00" in line:
        raise Unsplittable("the command line holds a NUL character")
    out: list[SimpleCommand] = []
    current: list[_Token] = []
    at_start = True
    for tok in _tokens(line):
        if tok.kind == "op":
            if tok.text == "(" and current:
                raise Unsplittable("'(' after a word: a function definition, which changes what a "
                                   "name runs")
            if tok.text == ";;":
                raise Unsplittable("';;' belongs to a case statement")
            out.extend(_simple(current, depth))
            current = []
            at_start = True
            continue
        if tok.kind == "word" and at_start and not tok.quoted and tok.text in OPAQUE_WORDS:
            raise Unsplittable(f"{tok.text!r} changes how the shell reads or resolves what follows")
        at_start = False
        current.append(tok)
        if len(out) + len(current) > LIMITS.command_words:
            raise Unsplittable("the command line has too many words")
    out.extend(_simple(current, depth))
    return out


def _simple(tokens: list[_Token], depth: int) -> list[SimpleCommand]:
    """One simple command: redirections and assignments taken out, wrappers unwrapped."""
    words: list[_Token] = []
    assignments: list[tuple[str, str]] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.kind == "redir":
            if tok.text in ("<<", "<<-"):
                raise Unsplittable("a here-document's body cannot be told apart from commands without a shell")
            if i + 1 >= len(tokens) or tokens[i + 1].kind != "word":
                raise Unsplittable(f"the redirection {tok.text!r} has no target")
            i += 2
            continue
        if not words and tok.kind == "word" and _is_assignment(tok):
            name, _, value = tok.text.partition("=")
            _check_assignment(name)
            assignments.append((name, value))
            i += 1
            continue
        words.append(tok)
        i += 1
    if not words:
        if assignments:
            raise Unsplittable("an assignment with no command sets a shell variable later commands may use")
        return []
    first = words[0]
    if first.expands:
        raise Unsplittable(f"the command name {first.text!r} would be expanded by the shell")
    argv = tuple(w.text for w in words)
    if not first.quoted and first.text in OPAQUE_WORDS:
        raise Unsplittable(f"{first.text!r} changes how the shell reads or resolves what follows")
    if not first.quoted and first.text in INERT_BUILTINS:
        return [SimpleCommand(argv, tuple(assignments), builtin=True)]
    # exec, command and time are the shell's own: no binary of that name runs, only what they wrap.
    own = not first.quoted and first.text in SHELL_OWN_WRAPPERS
    return [SimpleCommand(argv, tuple(assignments), builtin=own), *unwrap(argv, depth)]


def _is_assignment(tok: _Token) -> bool:
    """``NAME=value`` with NAME unquoted (XCU 2.9.1: a quoted name is a command word)."""
    name, eq, _ = tok.text.partition("=")
    unquoted = tok.plain is None or tok.plain > len(name)
    return bool(eq) and bool(name) and unquoted and (name[0].isalpha() or name[0] == "_") and \
        all(ch.isalnum() or ch == "_" for ch in name)


def _check_assignment(name: str) -> None:
    if name == "PATH":
        raise Unsplittable("PATH= before a command changes which file the name runs")
    if is_injection(name):
        raise Unsplittable(f"{name}= before a command makes the verified program load or run other code")


class _Wrapper(Record):
    """Options of a command that runs another: flags, options that take a value, and how many
    positional operands come before the command (``timeout DURATION``)."""

    __slots__ = ("flags", "valued", "operands", "opaque", "assigns")
    flags: frozenset[str]
    valued: frozenset[str]
    operands: int
    #: Options after which the wrapped command is not what the words say.
    opaque: frozenset[str]
    #: Leading ``NAME=value`` words are assignments (env).
    assigns: bool

    def __init__(self, flags: frozenset[str] = frozenset(), valued: frozenset[str] = frozenset(),
                 operands: int = 0, opaque: frozenset[str] = frozenset(), assigns: bool = False) -> None:
        init(self, flags, valued, operands, opaque, assigns)


WRAPPERS: dict[str, _Wrapper] = {
    # sudo(8): -i / -s run a shell, -e edits files, -l lists; -D changes the directory, -C fds
    "sudo": _Wrapper(flags=frozenset("-E -H -n -S -b -P -A -k -K -B -N".split()),
                     valued=frozenset("-u -g -C -D -h -p -r -t -T -U -c".split()),
                     opaque=frozenset("-i -s -e -l -v --login --shell --edit --list".split())),
    "doas": _Wrapper(flags=frozenset({"-n"}), valued=frozenset({"-u", "-a", "-C"}),
                     opaque=frozenset({"-s"})),
    # env(1): -S splits a string, -P changes the search path, -C the directory
    "env": _Wrapper(flags=frozenset("-i -0 --ignore-environment --null".split()),
                    valued=frozenset({"-u", "--unset"}),
                    opaque=frozenset("-S --split-string -P -C --chdir".split()), assigns=True),
    # xargs(1): appends words read from stdin to the command
    "xargs": _Wrapper(flags=frozenset("-0 -r -t -p -x --null --no-run-if-empty --verbose "
                                      "--interactive --exit".split()),
                      valued=frozenset("-n -L -P -s -d -a -E -I --max-args --max-lines "
                                       "--max-procs --max-chars --delimiter --arg-file".split())),
    "nice": _Wrapper(valued=frozenset({"-n", "--adjustment"})),
    "nohup": _Wrapper(),
    "time": _Wrapper(flags=frozenset({"-p"})),
    "timeout": _Wrapper(flags=frozenset({"--preserve-status", "--foreground", "-v", "--verbose"}),
                        valued=frozenset({"-s", "-k", "--signal", "--kill-after"}), operands=1),
    "stdbuf": _Wrapper(valued=frozenset({"-i", "-o", "-e", "--input", "--output", "--error"})),
    "exec": _Wrapper(flags=frozenset({"-c", "-l"}), valued=frozenset({"-a"})),
    "command": _Wrapper(flags=frozenset({"-p"}), opaque=frozenset({"-v", "-V"})),
    "setsid": _Wrapper(flags=frozenset({"-f", "-w", "-c", "--fork", "--wait", "--ctty"})),
}


def unwrap(argv: tuple[str, ...], depth: int = 0) -> list[SimpleCommand]:
    """The commands a wrapper runs (each admitted as well as the wrapper itself); ``sh -c STRING``
    is split again, at most twice deep."""
    name = argv[0].rsplit("/", 1)[-1]
    if name in SHELLS:
        return _shell_c(argv, depth, name)
    spec = WRAPPERS.get(name)
    if spec is None:
        return []
    i, operands = 1, spec.operands
    assignments: list[tuple[str, str]] = []
    while i < len(argv):
        word = argv[i]
        flag = word.split("=", 1)[0] if word.startswith("--") else word
        if word == "--":
            i += 1
            break
        if word in spec.opaque or flag in spec.opaque:
            raise Unsplittable(f"{name} {word} runs something other than the command its words name")
        if word in spec.flags:
            i += 1
            continue
        if word in spec.valued:
            i += 2
            continue
        if flag in spec.valued and "=" in word:
            i += 1
            continue
        if word.startswith("-") and len(word) > 1:
            if len(word) > 2 and not word.startswith("--") and word[:2] in spec.valued:
                i += 1  # -n10: an option with its value attached
                continue
            raise Unsplittable(f"{name} option {word!r} is not one whose meaning is known here")
        if spec.assigns and "=" in word and _is_assignment(_Token("word", word, plain=len(word))):
            key = word.split("=", 1)[0]
            _check_assignment(key)
            assignments.append((key, word.split("=", 1)[1]))
            i += 1
            continue
        if operands:
            operands -= 1
            i += 1
            continue
        break
    rest = argv[i:]
    if not rest:
        return []
    if name in SHELL_OWN_WRAPPERS and rest[0] in INERT_BUILTINS:
        return [SimpleCommand(rest, tuple(assignments), builtin=True, via=name)]
    if rest[0] in OPAQUE_WORDS:
        raise Unsplittable(f"{name} runs {rest[0]!r}, a shell word, not a program")
    # Any other wrapper runs its command with execvp(3): even 'xargs echo' runs the program echo.
    inner = SimpleCommand(rest, tuple(assignments), via=name)
    return [inner, *unwrap(rest, depth)]


def _shell_c(argv: tuple[str, ...], depth: int, name: str) -> list[SimpleCommand]:
    """``sh -c STRING [NAME ARGS...]``: the string is a command line of its own."""
    if len(argv) > 1 and argv[1].startswith("-") and argv[1] != "-c":
        raise Unsplittable(f"{name} {argv[1]}: shell options before -c or a script are not read here")
    if len(argv) >= 3 and argv[1] == "-c":
        if depth >= 2:
            raise Unsplittable(f"{name} -c nested more than twice")
        if len(argv) > 3:
            raise Unsplittable(f"{name} -c with positional parameters: the words depend on $1...")
        return [SimpleCommand(c.argv, c.assignments, c.builtin, via=name)
                for c in split_commands(argv[2], depth=depth + 1)]
    if len(argv) == 1:
        raise Unsplittable(f"{name} with no -c reads commands from standard input")
    return []  # sh SCRIPT: the script file is an argument; sh itself is admitted


__all__ = ["INERT_BUILTINS", "OPAQUE_WORDS", "SimpleCommand", "Unsplittable", "WRAPPERS", "split_commands",
           "unwrap"]


_LENIENT_SPLIT = re.compile(r"\$\(|`|&&|\|\||[;&|()\n]")
_NAME = re.compile(r"[A-Za-z0-9_./+-]+")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def visible_commands(line: str) -> list[SimpleCommand]:
    """Best effort, for a line ``split_commands`` refused: the programs its text plainly names.

    Used only to *tighten* the answer for an unsplittable line (an ask stays an ask unless one of
    these programs is denied), never to allow: appending ``| sh`` or ``$(...)`` to a line must not turn
    the denial of a program it runs into a question. Segments between operators are read with
    ``shlex``; one that does not parse, or whose command word is not a plain name, is skipped.
    """
    out: list[SimpleCommand] = []
    for segment in _LENIENT_SPLIT.split(line[: LIMITS.command_chars])[: LIMITS.command_words]:
        try:
            words = shlex.split(segment, comments=True, posix=True)
        except ValueError:
            continue
        while words and _ASSIGNMENT.match(words[0]):
            words = words[1:]
        if not words or not _NAME.fullmatch(words[0]) or words[0] in OPAQUE_WORDS:
            continue
        argv = tuple(words)
        out.append(SimpleCommand(argv, builtin=argv[0] in INERT_BUILTINS))
        try:
            out.extend(unwrap(argv))
        except Unsplittable:
            pass
    return out

