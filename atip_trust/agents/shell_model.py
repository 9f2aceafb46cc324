"""The programs a bash line can execute, read from its syntax tree, or the reason that cannot be known.

The hook may only allow a line when it has identified every program the line can execute, each with
its words, and nothing in the line can change which program or which bytes run (issue 22). So the
walk is an allowlist: the node types below are read, any other node makes the line
:class:`Unprovable` (a function definition, ``case``, ``for``, ``[[``, a here-document, an
assignment standing alone...). Within what is read:

* every command word, and every word a runner treats as its command, must be literal (words.py);
* builtins that change lookup or loading (``read``, ``declare``, ``hash``, ``set``, ``source``...) and
  assignments to variables that do (``PATH=``, ``LD_*``, ``GIT_*``, runners.changes_lookup) refuse;
* ``test``/``[`` that evaluate a subscript (``test -v 'a[$(x)]'``) refuse, and a program with a table
  (facts/program_tables.py) refuses the variables, options and sub-commands outside it (agents/tables.py);
* runners are unwrapped by their own grammar (runners.py); ``sh -c STRING`` is parsed again;
* each program records whether a part of the line that can write files runs before it (writes.py
  says which parts can: an output redirection, a program not known to only read) and whether an
  earlier ``cd`` moved the directory relative names resolve in, for the hook's time-of-check rules.
  Order is time, not text (issue 32, item 5): inside a loop (``while``, ``until``, ``for``, ``find
  -exec``, ``xargs``) or a pipeline every part may run after every other, and a background job
  (``&``) runs alongside the rest of the line, so a writer there counts for every program of the
  loop or pipeline, and for every program of the line once any job runs in the background;
* ``for NAME in WORDS``, here-documents, and assignments or ``export`` standing alone are read (issue
  32, item 9) when the variable changes neither which program runs nor what it loads; a command
  substitution inside a double-quoted argument (Claude Code's ``git commit -m "$(cat <<'EOF' ...)"``)
  is walked as the line it is, its programs running before the command whose word it fills.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from atip_trust._base.limits import LIMITS
from atip_trust._base.record import Record, replace
from atip_trust.agents import bash_syntax, tables
from atip_trust.agents.runners import (
    DEFAULT_PATH,
    RUNNERS,
    SHELL_DEFAULT_PATH,
    SHELL_RUNNERS,
    Inner,
    changes_lookup,
    login_shell,
)
from atip_trust.agents.words import Unprovable, Word, word
from atip_trust.agents.writes import READ_ONLY, can_write

if TYPE_CHECKING:
    from atip_trust.agents.bash_syntax import Node


class Program(Record):
    """One program the line executes, with the words it gets and what the hook must know about it."""

    argv: tuple[str, ...]
    #: Every word is known and no runner appends words at run time.
    literal: bool = True
    #: Where a bare name is looked up: None for the line's PATH (runners.Inner.search).
    search: str | None = None
    #: The runners this program was found inside, outermost first (``("sudo", "env")``).
    via: tuple[str, ...] = ()
    #: Something earlier in the line (a program, an output redirection) can write files.
    after_writer: bool = False
    #: An earlier ``cd`` (or a runner's own directory change) makes a relative path mean another file.
    moved: bool = False
    #: A script a shell reads (``bash ./x.sh``), not a program it executes.
    script: bool = False
    #: Its behaviour depends on files the user can write (git: configuration and hooks; a login shell:
    #: its start-up files), :func:`reads_state`.
    state_dependent: bool = False
    #: Byte range of the command word in the line when it is a plain top-level command (for --pin).
    span: tuple[int, int] | None = None
    #: Variables the line sets for it, before it or through the runners that run it (agents/tables.py),
    #: or on their own earlier in the line (``export X=1; prog``). They reach a --pin launcher too.
    env: tuple[str, ...] = ()
    #: Counted as a part that cannot write because of its name (writes.py): hooks.py holds the line to
    #: that only when its bytes are that program's (issue 32, item 1 for item 5's table).
    quiet: bool = False
    #: It runs without PATH in its environment (``env -i``): what it runs searches a default path
    #: (runners.Inner.cleared; hooks.py re-reads a disguised runner with it).
    cleared: bool = False
    #: A program another one may run by name (facts/program_tables.py ``implies``: ``tar -x`` runs the
    #: decompressor an archive calls for): one not installed runs nothing, so hooks.py leaves it out.
    implied: bool = False


#: Builtins and keywords after which the line's later words or lookups are not what the text says
#: (bash(1) SHELL BUILTIN COMMANDS): they assign variables, define names, change options or read code.
STATEFUL_BUILTINS = frozenset({
    "read", "declare", "typeset", "local", "export", "readonly", "mapfile", "readarray", "getopts", "let",
    "hash", "alias", "unalias", "shopt", "enable", "trap", "set", "unset", "source", ".", "eval", "fc",
    "bind", "complete", "compgen", "compopt", "history", "coproc", "ulimit", "bg", "fg", "suspend",
    "caller", "wait",
})
#: Builtins that run no program and change nothing later commands resolve.
INERT_BUILTINS = frozenset({"echo", "true", "false", ":", "test", "[", "pwd", "type", "help", "times", "dirs",
                            "jobs", "exit", "return", "shift", "break", "continue", "kill", "umask", "logout",
                            "disown", "printf"})
DIRECTORY_BUILTINS = frozenset({"cd", "pushd", "popd"})
#: Statement nodes whose children are statements (and the keywords and operators between them).
_CONTAINERS = frozenset({"program", "list", "pipeline", "subshell", "compound_statement", "negated_command",
                         "do_group", "if_statement", "elif_clause", "else_clause", "while_statement"})
#: Statements whose parts may run in any order relative to one another (module docstring).
_LOOPS = frozenset({"while_statement", "for_statement", "pipeline"})
_TOKENS = frozenset({";", "&", "&&", "||", "|", "|&", "(", ")", "{", "}", "!", "if", "then", "else", "elif",
                     "fi", "while", "until", "do", "done", "\n", "comment"})
_OUTPUT = frozenset({">", ">>", "&>", "&>>", ">|", "<>"})
_OPERATORS = _OUTPUT | {"<", "<&", ">&", "<&-", ">&-"}
_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
MAX_SHELL_DEPTH = 3
MAX_NESTING = 200
#: Runners inside runners (``env nice timeout ... prog``): each is a level of the walk, and no real line
#: needs many; past this the line is unprovable rather than a recursion the input can deepen.
MAX_RUNNERS = 16
#: Variables that, assigned or exported on their own, change where programs find their configuration
#: (``HOME=. ; git status`` reads a repository-shipped .gitconfig) or what ``cd`` means; and ``ATIP_*``,
#: this project's own (a --pin launcher's policy and cache).
_CONFIG_PLACES = frozenset({"HOME", "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS", "XDG_DATA_HOME", "XDG_DATA_DIRS",
                            "ZDOTDIR", "CDPATH", "ENV", "SHELLOPTS", "BASHOPTS", "POSIXLY_CORRECT", "TMPDIR"})


class _Walk:
    """The walk's running state: what has happened earlier in the line, and the loops it is inside."""

    __slots__ = ("programs", "writer", "moved", "loops", "background", "wrote", "env", "search", "cleared")

    def __init__(self, env: tuple[str, ...] = (), cleared: bool = False) -> None:
        self.programs: list[Program] = []
        #: Where the names read here are looked up (None: the line's PATH), and whether PATH has been
        #: removed from the environment above (runners.Inner.cleared).
        self.cleared = cleared
        self.search: str | None = DEFAULT_PATH if cleared else None
        self.writer = False
        self.moved = False
        #: Variables assigned for the command being read (inherited by everything it runs), and those
        #: the line set on its own before it.
        self.env = env
        #: For each loop or pipeline the walk is inside: whether a part of it can write.
        self.loops: list[bool] = []
        #: A job runs in the background (``&``); some part of the line can write.
        self.background = False
        self.wrote = False

    def add(self, program: Program) -> None:
        if len(self.programs) >= LIMITS.command_words:
            raise Unprovable("the line runs too many programs to check each")
        self.programs.append(program)

    def write(self) -> None:
        """A part that can write files runs here (writes.py)."""
        self.writer = self.wrote = True
        if self.loops:
            self.loops[-1] = True

    def loop(self, body: Callable[[], None]) -> None:
        """Walk ``body`` as a loop or pipeline: a writer anywhere in it comes before all its programs."""
        first = len(self.programs)
        self.loops.append(False)
        body()
        wrote = self.loops.pop()
        if wrote:
            self._after_writer(first)
            if self.loops:
                self.loops[-1] = True

    def finish(self) -> list[Program]:
        """The programs, with a background job and a writer anywhere making every one after a writer."""
        if self.background and self.wrote:
            self._after_writer(0)
        return self.programs

    def _after_writer(self, first: int) -> None:
        self.programs[first:] = [p if p.after_writer else replace(p, after_writer=True)
                                 for p in self.programs[first:]]


def programs(line: str) -> list[Program]:
    """Every program ``line`` can execute, in order, or :class:`Unprovable` (module docstring)."""
    state = _Walk()
    _line(line, state, depth=0, via=())
    return state.finish()


def programs_of_argv(argv: list[str], env: tuple[str, ...] = (), cleared: bool = False) -> list[Program]:
    """The programs an argv runs when it is executed directly (an agent's argv shell tool, such as
    Codex's ``["bash", "-lc", "..."]``): its words are literal, its runners unwrapped as in a line.
    ``env``: the variables set for it (the hook re-reads a program by its identity, agents/identity.py);
    ``cleared``: it runs without PATH (Program.cleared)."""
    if not argv or len(argv) > LIMITS.command_words or sum(map(len, argv)) > LIMITS.command_chars:
        raise Unprovable("the argv is empty or larger than the gate reads")
    if any("\x00" in w for w in argv):
        raise Unprovable("the argv holds a NUL character")
    state = _Walk(env, cleared)
    _dispatch([Word(w) for w in argv], state, 0, (), external=True, inner=Inner())
    return state.finish()


def visible_programs(line: str) -> list[Program]:
    """Best effort, for a line :func:`programs` refused: the programs its text plainly names (each
    command whose words read as literal, and what the runner table finds in them).

    Only ever used to *tighten* the answer for an unprovable line (an ask stays an ask unless one of
    these is denied), never to allow."""
    source = line[: LIMITS.command_chars].encode("utf-8", "surrogatepass")
    found: list[Program] = []
    for node in bash_syntax.walk(bash_syntax.parse_lenient(source)):
        if node.type != "command" or len(found) >= LIMITS.command_words:
            continue
        words: list[Word] = []
        for child in node.children:
            if child.type not in ("command_name", "word", "string", "raw_string", "concatenation", "number"):
                continue
            try:
                w = word(child.named_children[0] if child.type == "command_name" and child.named_children
                         else child)
            except Unprovable:
                break
            if not w.literal:
                break
            words.append(w)
        if not words:
            continue
        state = _Walk()
        try:
            _dispatch(words, state, 1, (), external=True, inner=Inner())
        except Unprovable:
            pass
        found.extend(state.programs or [Program(tuple(w.text for w in words))])
    return found


def _line(line: str, state: _Walk, depth: int, via: tuple[str, ...]) -> None:
    if len(line) > LIMITS.command_chars:
        raise Unprovable(f"the command line is longer than {LIMITS.command_chars} characters")
    if "\x00" in line:
        raise Unprovable("the command line holds a NUL character")
    source = line.encode("utf-8", "surrogatepass")
    try:
        root = bash_syntax.parse(source)
    except bash_syntax.SyntaxRefused as why:
        raise Unprovable(str(why)) from None
    skipped = bash_syntax.uncovered(root, source)
    if skipped is not None:
        raise Unprovable(f"the shell grammar skipped input at byte {skipped} "
                         f"({source[skipped:skipped + 20]!r}) that bash would read")
    _statement(root, state, depth, via, 0)


def _statement(node: Node, state: _Walk, depth: int, via: tuple[str, ...], nesting: int) -> None:
    if nesting > MAX_NESTING:
        raise Unprovable("the line nests deeper than the gate follows")
    kind = node.type
    if kind in _LOOPS and (kind != "pipeline" or node.named_child_count > 1):
        state.loop(lambda: _compound(node, state, depth, via, nesting))
        return
    if kind in _CONTAINERS:
        _compound(node, state, depth, via, nesting)
        return
    if kind == "comment":
        return
    if kind == "variable_assignment":
        _standing_assignment(node, state)
        return
    if kind == "declaration_command":
        _export(node, state)
        return
    if kind == "redirected_statement":
        body = node.child_by_field_name("body")
        prev: Node | None = None
        for child in node.children:
            if body is None or child.id != body.id:
                if _glued(prev, child):
                    raise Unprovable(f"the shell grammar split {_text(node)[:40]!r} where bash reads one word")
                _redirect(child, state)
                prev = child
            else:
                prev = child.children[-1] if child.type == "command" and child.children else child
        if body is not None:
            _statement(body, state, depth, via, nesting + 1)
        return
    if kind == "command":
        _command(node, state, depth, via, nesting)
        return
    raise Unprovable(f"the line holds {kind.replace('_', ' ')} ({_text(node)[:40]!r}), which the gate "
                     "does not read: it cannot know what runs")


def _compound(node: Node, state: _Walk, depth: int, via: tuple[str, ...], nesting: int) -> None:
    """A statement made of statements. ``a && b && c`` nests to the left in the grammar's tree; its
    chain is followed in a loop, so a long list is not a deep one."""
    chain = [node]
    while node.type == "list" and node.children and node.children[0].type == "list":
        node = node.children[0]
        chain.append(node)
    children = [c for n in reversed(chain) for c in (n.children[1:] if n is not chain[-1] else n.children)]
    if chain[0].type == "for_statement":
        _for_head(chain[0], state)
    for child in children:
        if child.type == "&":
            state.background = True
            continue
        if child.type in _TOKENS or (chain[0].type == "for_statement" and child.type != "do_group"):
            continue
        _statement(child, state, depth, via, nesting + 1)


def _for_head(node: Node, state: _Walk) -> None:
    """``for NAME [in WORDS]``: NAME is assigned each word in turn, which may not change what runs (and,
    as it may be exported already, later programs are checked with it, agents/tables.py)."""
    name = node.child_by_field_name("variable")
    if name is None or name.type != "variable_name" or not node.children or node.children[0].type != "for":
        raise Unprovable(f"the loop {_text(node)[:40]!r} is not 'for NAME in WORDS'")
    _settable(_text(name))
    state.env = (*state.env, _text(name))
    for value in node.children_by_field_name("value"):
        word(value)  # a substitution among the words runs code


def _settable(name: str) -> None:
    """A variable the line may set on its own (module docstring): none that changes what runs."""
    if changes_lookup(name) or name in _CONFIG_PLACES or name.startswith("ATIP_"):
        raise Unprovable(f"the line sets {name}, which changes which program runs, what it loads or where "
                         "it finds its configuration")


def _standing_assignment(node: Node, state: _Walk) -> None:
    """``NAME=VALUE`` on its own: later programs may see NAME (it may be exported already), so it joins
    the variables every later program of the line is checked with (agents/tables.py)."""
    name = node.child_by_field_name("name")
    if name is None or name.type != "variable_name":
        raise Unprovable(f"the assignment {_text(node)[:40]!r} is not to a plain name")
    _settable(_text(name))
    state.env = (*state.env, _assignment(node))


def _export(node: Node, state: _Walk) -> None:
    """``export NAME[=VALUE]...`` with no options: each name settable, each value free of code."""
    keyword = node.children[0].type if node.children else ""
    if keyword != "export":
        raise Unprovable(f"{keyword!r} changes variables, names or options that decide what later words run")
    for child in node.children[1:]:
        if child.type == "variable_assignment":
            _standing_assignment(child, state)
        elif child.type == "variable_name":
            _settable(_text(child))
            state.env = (*state.env, _text(child))
        else:
            raise Unprovable(f"export {_text(child)[:40]!r}: only plain names and assignments are read")


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "surrogateescape")


def _redirect(node: Node, state: _Walk) -> None:
    """A redirection: ``>FILE`` and its kin write a file before the command runs."""
    if node.type == "herestring_redirect":
        if len(node.named_children) != 1:
            raise Unprovable(f"the here-string {_text(node)[:40]!r} is read with other than one word")
        word(node.named_children[0])  # a substitution in it runs code
        return
    if node.type == "heredoc_redirect":
        _heredoc(node, state)
        return
    if node.type != "file_redirect":
        raise Unprovable(f"the redirection {_text(node)[:40]!r} ({node.type.replace('_', ' ')}) is not "
                         "one the gate reads")
    ops = [c.type for c in node.children if not c.is_named]
    if len(ops) != 1 or ops[0] not in _OPERATORS:
        raise Unprovable(f"the redirection {_text(node)[:40]!r} is not one the gate reads")
    targets = node.children_by_field_name("destination")
    if ops[0] in ("<&-", ">&-"):
        if targets:  # bash: the next word is the command's argument, which the grammar took as a target
            raise Unprovable(f"the redirection {_text(node)[:40]!r} is read with a target it does not take")
        return  # a descriptor closed
    if len(targets) != 1 or len(node.named_children) > 1 + (node.child_by_field_name("descriptor") is not None):
        # bash takes one word as the target; the grammar has been seen to read the command's later
        # arguments ("cmd < f --force") as more targets, which would hide them from the rules.
        raise Unprovable(f"the redirection {_text(node)[:40]!r} is read with other than one target word")
    descriptor = node.child_by_field_name("descriptor")
    if descriptor is not None and not _text(descriptor).isdigit():
        raise Unprovable(f"the redirection {_text(node)[:40]!r} has a descriptor bash reads as a word")
    value = word(targets[0])
    if ops[0] in ("<&", ">&"):
        # bash reads "<& -x" and ">& file" in ways of its own: only a descriptor number or '-' is read.
        if not value.literal or not (value.text.isdigit() or value.text == "-"):
            raise Unprovable(f"the redirection {_text(node)[:40]!r} copies to something other than a "
                             "descriptor number")
        return  # 2>&1: a descriptor copied (or closed), no file opened
    if ops[0] in _OUTPUT and (not value.literal or value.text not in _HARMLESS_TARGETS):
        state.write()


def _heredoc(node: Node, state: _Walk) -> None:
    """``<<WORD`` / ``<<-WORD``: standard input from the lines that follow (bash(1) Here Documents). With
    the delimiter quoted the body is taken as written; unquoted, bash expands it, so a substitution in
    it runs code (refused, as in a word) while a plain ``$name`` only fills in text. Redirections written
    after the delimiter on the same line belong to the command."""
    for child in node.children:
        kind = child.type
        if kind in ("<<", "<<-", "heredoc_start", "heredoc_end", "heredoc_content"):
            continue
        if kind == "heredoc_body":
            start = node.child_by_field_name("heredoc_start") or next(
                (c for c in node.children if c.type == "heredoc_start"), None)
            quoted = start is not None and any(q in _text(start) for q in "'\\\"")
            if not quoted:
                for part in child.named_children or [child]:
                    if part.type not in ("heredoc_content", "heredoc_body"):
                        word(part)  # $name passes; $(...), $((...)) and ${x[...]} are refused
                    elif any(c in _text(part) for c in "$`"):
                        raise Unprovable(f"the here-document {_text(node)[:40]!r} holds an expansion the "
                                         "grammar left as text; bash expands it")
            continue
        if kind in ("file_redirect", "herestring_redirect"):
            _redirect(child, state)
            continue
        raise Unprovable(f"the here-document {_text(node)[:40]!r} holds {kind.replace('_', ' ')}, which the "
                         "gate does not read")


def _glued(prev: Node | None, child: Node) -> bool:
    """Two of a command's parts with nothing between them, where bash would read one word: the grammar
    has been seen to split ``/{\\?`` in two, to end a here-string's word early, and to read ``x2>f`` as
    ``x`` and ``2>f`` (bash: ``x2``, ``>f``)."""
    if prev is None or prev.end_byte != child.start_byte or not prev.is_named or not child.is_named:
        return False
    if child.type not in _REDIRECTS:
        return True  # a word glued to a word or to a redirection's target is one word to bash
    if prev.type not in _REDIRECTS and re.fullmatch(r"\{[A-Za-z_][A-Za-z0-9_]*\}|[0-9]+", _text(prev)):
        return True  # bash: {x}<<<y and 0<f are the redirection's descriptor, not a word (issue 32)
    return prev.type not in _REDIRECTS and child.child_by_field_name("descriptor") is not None


_REDIRECTS = frozenset({"file_redirect", "herestring_redirect", "heredoc_redirect"})
#: Runners that run their command again and again (find -exec per file, xargs per batch): a loop.
_REPEATS = frozenset({"find", "xargs"})


def _command(node: Node, state: _Walk, depth: int, via: tuple[str, ...], nesting: int) -> None:
    name_node: Node | None = None
    words: list[Word] = []
    assigned: list[str] = []
    subs: list[Node] = []
    owners: list[int] = []  # the word each substitution fills
    prev: Node | None = None
    for child in node.children:
        if _glued(prev, child):
            raise Unprovable(f"the shell grammar split {_text(node)[:40]!r} where bash reads one word")
        prev = child
        kind = child.type
        if kind == "variable_assignment":
            assigned.append(_assignment(child))
        elif kind in ("file_redirect", "herestring_redirect", "heredoc_redirect"):
            _redirect(child, state)
        elif kind == "command_name":
            name_node = child
            inner = child.named_children
            if len(inner) != 1:
                raise Unprovable(f"the command name {_text(child)!r} is not one word")
            words.append(word(inner[0]))
        elif child.is_named:
            found = len(subs)
            words.append(word(child, subs))
            if len(subs) > found and not _fills_option(words):
                raise Unprovable(f"the command substitution in {_text(child)[:40]!r} gives the command a word "
                                 "that is not an option's value: what it prints decides what runs")
            owners.extend([len(words) - 1] * (len(subs) - found))
        else:
            # A bare token inside a command (the grammar reads a lone "$" so, and drops it): bash passes
            # it on as a word, so the words would not be the ones checked.
            raise Unprovable(f"the shell grammar read {_text(child)!r} inside a command as a token")
    if name_node is None or not words:
        raise Unprovable(f"{_text(node)[:40]!r} sets variables without running a command")
    only_read: dict[int, bool] = {}
    for sub, owner in zip(subs, owners):  # they run first, each a line of its own (module docstring)
        before = len(state.programs)
        for statement in sub.named_children:
            _statement(statement, state, depth, via, nesting + 1)
        only_read[owner] = only_read.get(owner, True) and _only_reads(state.programs[before:])
    for i, quiet in only_read.items():
        if quiet:
            words[i] = replace(words[i], data=True)
    keyword = _text(name_node) == words[0].text  # a quoted 'time' is a program, not the keyword
    span = (name_node.start_byte, name_node.end_byte) if depth == 0 and not via else None
    outer = state.env
    state.env = (*outer, *assigned)
    try:
        _dispatch(words, state, depth, via, external=False, keyword=keyword, span=span)
    finally:
        state.env = outer


def _only_reads(programs: list[Program]) -> bool:
    """A substitution's programs are all named at its top, with known words, and only read
    (writes.READ_ONLY: ``cat`` of a here-document): what it prints is data, nothing else it does matters.
    Each is still admitted on its own; writes.py's table follows bytes there (hooks.py)."""
    return all(p.literal and not p.via and "/" not in p.argv[0] and p.argv[0] in READ_ONLY for p in programs)


def _fills_option(words: list[Word]) -> bool:
    """The last word, holding a command substitution, is an option's value: ``-m "$(...)"`` (after a
    literal option word) or ``--message="$(...)"``."""
    last = words[-1].text
    if last.startswith("--") and "=" in last.split("$(", 1)[0].split("`", 1)[0]:
        return True
    return len(words) > 2 and words[-2].literal and words[-2].text.startswith("-") and words[-2].text != "--"


def _assignment(node: Node) -> str:
    name = node.child_by_field_name("name")
    text = _text(name) if name is not None else ""
    if name is None or name.type != "variable_name":
        raise Unprovable(f"the assignment {_text(node)[:40]!r} is not to a plain name")
    if changes_lookup(text):
        raise Unprovable(f"{text}= before a command changes which program runs or what it loads")
    value = node.child_by_field_name("value")
    if value is not None:
        word(value)  # a substitution in the value runs code
    return text


def _dispatch(words: list[Word], state: _Walk, depth: int, via: tuple[str, ...], *, external: bool,
              keyword: bool = False, span: tuple[int, int] | None = None, inner: Inner | None = None,
              implied: bool = False) -> None:
    """One command's words: a builtin, a shell runner, or a program (and what a runner runs)."""
    if len(via) > MAX_RUNNERS:
        raise Unprovable(f"the line nests more than {MAX_RUNNERS} runners ({' '.join(via[:4])} ...)")
    first = words[0]
    if not first.literal:
        raise Unprovable(f"the program name {first.text!r} is not known before the shell runs")
    name = first.text
    if not name:
        raise Unprovable("the program name is empty")
    if not external and "/" not in name and _builtin(words, state, depth, via, keyword):
        return
    base = name.rsplit("/", 1)[-1]
    open_args = inner is not None and inner.open_args
    script = inner is not None and inner.script
    model = RUNNERS.get(base)
    modelled = model is not None and not script
    writes = can_write(base, tuple(w.text for w in words), runner=modelled)
    state.add(Program(
        argv=tuple(w.text for w in words), literal=not open_args and all(
            w.literal or tables.data_value(base, words, i) for i, w in enumerate(words)),
        search=inner.search if inner is not None and inner.search is not None else state.search, via=via,
        after_writer=state.writer, cleared=state.cleared or (inner is not None and inner.cleared),
        moved=state.moved or (inner is not None and inner.chdir), script=inner is not None and inner.script,
        state_dependent=reads_state(base, words), span=span, env=state.env, quiet=not writes, implied=implied))
    by_name = () if script else tables.check(base, words, state.env)
    before, wrote = state.writer, False
    for program in by_name:  # tar -z runs gzip, found on the same PATH (facts/program_tables.py implies)
        # Alternatives (``tar -x`` runs the one decompressor its archive calls for), each started by this
        # program: none comes after another, whatever each may write.
        state.writer = before
        _dispatch([Word(program)], state, depth, (*via, base), external=True,
                  inner=Inner(search=inner.search if inner is not None and inner.search is not None
                              else state.search), implied=True)
        wrote = wrote or state.writer
    state.writer = before or wrote
    if model is not None and modelled:
        outcome = model(words)
        if open_args and not outcome.inner:
            raise Unprovable(f"{via[-1] if via else 'a runner'} feeds its input to {base}: the program "
                             "it runs comes from that input")
        if outcome.writes:
            state.write()
        if outcome.background:
            state.background = True  # it returns before what it runs has run (runners.Outcome)
        outer = state.env
        state.env = (*outer, *outcome.env)
        try:
            if base in _REPEATS and outcome.inner:
                state.loop(lambda: _inner(outcome.inner, state, depth, (*via, base), open_args))
            else:
                _inner(outcome.inner, state, depth, (*via, base), open_args)
        finally:
            state.env = outer
    if writes:
        state.write()  # it may write files before the next program runs (writes.py)


def reads_state(base: str, words: list[Word]) -> bool:
    """The program ``base`` with ``words`` reads files that choose what it runs and that a line can
    write (Program.state_dependent): git (configuration, hooks), a login shell (``~/.profile``: found by
    tests/attacks/test_shell_redteam_oracle.py, ``echo ./x > ~/.profile; bash -lc true``)."""
    return base == "git" or (base in ("sh", "bash", "dash") and login_shell(words))


def _builtin(words: list[Word], state: _Walk, depth: int, via: tuple[str, ...], keyword: bool) -> bool:
    """True when bash runs ``words`` itself (a builtin, or one of its own runners)."""
    name = words[0].text
    if name in STATEFUL_BUILTINS:
        raise Unprovable(f"{name!r} changes variables, names or options that decide what later words run")
    if name in DIRECTORY_BUILTINS:
        state.moved = True
        return True
    if name == "printf" and len(words) > 1 and (not words[1].literal or words[1].text.startswith("-v")):
        raise Unprovable("printf -v assigns a variable")
    if name in ("test", "["):
        tables.check_test(words)
    if name in INERT_BUILTINS:
        return True
    if name == "builtin":
        if len(words) < 2 or not words[1].literal:
            raise Unprovable("builtin with no name the line shows")
        if words[1].text not in INERT_BUILTINS | DIRECTORY_BUILTINS | STATEFUL_BUILTINS:
            raise Unprovable(f"builtin {words[1].text!r} is not a builtin the gate knows")
        return _builtin(words[1:], state, depth, via, keyword=False)
    model = SHELL_RUNNERS.get(name)
    if model is None or (name == "time" and not keyword):
        return False
    outcome = model(words)
    # exec replaces the shell with a program (never a builtin); command and time may run a builtin.
    external = name == "exec"
    for inner in outcome.inner:
        _dispatch(list(inner.words), state, depth, (*via, name), external=external, inner=inner)
    return True


def _inner(inners: tuple[Inner, ...], state: _Walk, depth: int, via: tuple[str, ...], open_args: bool) -> None:
    for inner in inners:
        if inner.shell_string is not None:
            if depth + 1 > MAX_SHELL_DEPTH:
                raise Unprovable(f"sh -c nested more than {MAX_SHELL_DEPTH} deep")
            saved_search = state.search
            if state.cleared:  # a shell without PATH searches its own default (runners.SHELL_DEFAULT_PATH)
                state.search = SHELL_DEFAULT_PATH.get(via[-1] if via else "sh", SHELL_DEFAULT_PATH["sh"])
            try:
                _line(inner.shell_string, state, depth + 1, via)
            finally:
                state.search = saved_search
            continue
        if open_args and not inner.open_args:
            inner = replace(inner, open_args=True)
        if inner.chdir and "/" in inner.words[0].text and not inner.words[0].text.startswith("/"):
            raise Unprovable(f"{via[-1]} changes directory before it runs {inner.words[0].text!r}")
        # A runner's directory change holds for everything it runs, however deep (env -C d nice ./x,
        # and a relative PATH entry read there: found by the oracle, issue 32 item 6).
        saved, saved_search, saved_cleared = state.moved, state.search, state.cleared
        state.moved = saved or inner.chdir
        state.cleared = saved_cleared or inner.cleared
        state.search = DEFAULT_PATH if state.cleared else None  # the runner's own execvp(3)
        try:
            _dispatch(list(inner.words), state, depth, via, external=True, inner=inner)
        finally:
            state.moved, state.search, state.cleared = saved, saved_search, saved_cleared


__all__ = ["DIRECTORY_BUILTINS", "INERT_BUILTINS", "Program", "STATEFUL_BUILTINS", "Unprovable", "programs",
           "programs_of_argv", "reads_state", "visible_programs"]
