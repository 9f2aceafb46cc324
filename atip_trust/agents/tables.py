"""The shell gate's use of facts/program_tables.py: a program with a table is unprovable when the line
tells it something outside the table (issue 32, item 3), and ``test``/``[`` that evaluate code are
unprovable (item 4).

Options are read as the program reads them (facts/program_tables.py says how): each word after the
program (after git's sub-command, for git) is an option, an option's value or an operand, and only an
option the table lists is admitted, with its value placed where the program places it. Operands are
not the table's business: what they name is data (a path, a revision, a message).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from atip_trust.agents.runners import git_globals, git_key, git_subcommand
from atip_trust.agents.words import Unprovable, Word
from atip_trust.facts.git_options import GIT_CONFIG_READS
from atip_trust.facts.program_tables import TABLES, Table, env_allowed, options_of

#: Characters a word's source text may start with when its expansion cannot start with '-'.
_NOT_AN_OPTION = re.compile(r"[A-Za-z0-9_./:@%+,=]")
_LONG_NAME = re.compile(r"--([A-Za-z0-9][A-Za-z0-9.-]*)(=?)")
#: What an option takes: nothing, a value (attached or the next word), an optional attached value.
_FLAG, _OPTIONAL, _VALUED = 0, 1, 2


class _Spec:
    """A table's option string (facts/program_tables.py: getopt's notation). Long options are looked up
    in the text as they are met (a hook answers one line: parsing every list would cost more than the
    few lookups it makes); the short letters are read once."""

    __slots__ = ("text", "short")

    def __init__(self, text: str) -> None:
        self.text = f" {text} "
        self.short: dict[str, int] = {}
        for token in text.split():
            if token.startswith("--"):
                continue
            i = 0
            while i < len(token):
                colons = len(token[i + 1:]) - len(token[i + 1:].lstrip(":"))
                _add(self.short, token[i], (_FLAG, _VALUED, _OPTIONAL)[min(colons, 2)])
                i += 1 + colons

    def long(self, name: str) -> int | None:
        """What ``--name`` takes, or None when it is not listed."""
        if not name or any(c.isspace() for c in name):
            return None
        kinds = [kind for suffix, kind in _SUFFIXES if f" --{name}{suffix}" in self.text]
        return min(kinds) if kinds else None


#: How a listed long option ends, and what it then takes.
_SUFFIXES = ((" ", _FLAG), ("=? ", _OPTIONAL), ("= ", _VALUED))


def _add(table: dict[str, int], name: str, kind: int) -> None:
    """Where two sub-commands' lists meet (git stash's ``-S`` is a flag, diff's ``-S`` takes a value),
    the kind that takes less wins: the next word is then checked rather than skipped as a value (the
    same holds for long options, :meth:`_Spec.long`)."""
    table[name] = min(kind, table.get(name, kind))


_SPECS: dict[str, _Spec] = {}


def _spec(text: str) -> _Spec:
    found = _SPECS.get(text)
    if found is None:
        found = _SPECS[text] = _Spec(text)
    return found


def check(name: str, words: Sequence[Word], env: Sequence[str]) -> tuple[str, ...]:
    """Refuse what ``words`` (``name``'s argv) and the line's variables ``env`` tell ``name`` that its
    table does not allow (module docstring); nothing for a program without a table. Returns the
    programs the options it is told make it run (``tar -z`` runs gzip), to be admitted in turn."""
    table = TABLES.get(name)
    if table is None:
        return ()
    for var in env:
        if not env_allowed(table, var):
            raise Unprovable(f"{name} is given {var}=, which is not in its table of variables known not to "
                             "make it run another program (docs/agents.md)")
    if table.options is None and name != "git":
        return ()  # a runner: runners.py reads its options
    start, sub = 1, None
    if name == "git":
        start, sub = _git(words, table)
        if sub is None:
            return ()
    elif table.subcommands:
        sub = _subcommand(name, words, table)
    spec = options_of(table, sub)
    if spec is None:
        raise Unprovable(f"{name} {sub}: not a sub-command in its table (docs/agents.md)")
    reader = _Reader(table, sub, words, _spec(spec))
    reader.read(start)
    if name == "git" and sub in _REMOTE_NAMING:
        _git_remotes(sub, reader.operands)
    if table.script and table.sandbox not in reader.options:
        _script(reader)
    return tuple(dict.fromkeys(program for option, program in table.implies if option in reader.options))


def _script(reader: _Reader) -> None:
    """Each command of the program's script (its script options' values, else its first operand) is one
    its table knows runs nothing (facts/program_tables.py ``Table.script``)."""
    table = reader.table
    scripts = [v for o, v in reader.values if o in table.script_options] or reader.operands[:1]
    for script in scripts:
        if not script.literal:
            raise Unprovable(f"{table.name}: the script {script.text!r} is not known before the shell runs")
        for command in re.split(r"[;\n]", script.text):
            if not re.fullmatch(table.script, command):
                raise Unprovable(f"{table.name} {script.text!r}: the command {command.strip()!r} is not one its "
                                 "table knows runs nothing (it may run the pattern space or write a file; "
                                 f"{table.sandbox} forbids both) (docs/agents.md)")


#: git sub-commands whose operands may be a repository URL (git-fetch(1) GIT URLS); ``remote`` stores one.
_REMOTE_NAMING = frozenset({"fetch", "pull", "push", "clone", "ls-remote", "remote"})
#: URL schemes git reaches itself or with its own helpers (git(1) GIT URLS); any other ``scheme://``, and
#: every ``transport::address``, runs the program ``git-remote-<transport>`` found on PATH
#: (gitremote-helpers(7)).
_GIT_SCHEMES = frozenset({"http", "https", "ftp", "ftps", "ssh", "git", "file", "git+ssh", "ssh+git"})
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


def _git_remotes(sub: str, operands: list[Word]) -> None:
    """A repository operand that names a remote helper program is unprovable, as is a repository not
    known before the shell runs (the first operand; every operand of ``git remote``)."""
    for k, w in enumerate(operands):
        if not w.literal:
            if k == 0 or sub == "remote":
                raise Unprovable(f"git {sub} {w.text}: the repository is not known before the shell runs, and "
                                 "a URL such as x::y runs the program git-remote-x")
            continue
        scheme = _SCHEME.match(w.text)
        if "::" in w.text or (scheme is not None and scheme.group(1).lower() not in _GIT_SCHEMES):
            helper = w.text.split("::", 1)[0] if "::" in w.text else scheme.group(1) if scheme else ""
            raise Unprovable(f"git {sub} {w.text}: runs the remote helper program git-remote-{helper} found "
                             "on PATH (gitremote-helpers(7))")


def _git(words: Sequence[Word], table: Table) -> tuple[int, str | None]:
    """git's own options (runners.py reads them; the table refuses some), and its sub-command."""
    for option, _ in git_globals(list(words)):
        why = _why_refused(table, option, None)
        if why is not None:
            raise Unprovable(f"git {option}: {why} (docs/agents.md)")
    i = git_subcommand(list(words))
    if i >= len(words):
        return i, None
    sub = words[i]
    if not sub.literal:
        raise Unprovable(f"git: the sub-command {sub.text!r} is not known before the shell runs")
    if sub.text in table.refused_subcommands or sub.text not in table.subcommands:
        raise Unprovable(f"git {sub.text} runs an alias, an extension or another program, or is not in "
                         "git's table (docs/agents.md)")
    if sub.text == "config":
        _git_config(words, i + 1)
    return i + 1, sub.text


def _subcommand(name: str, words: Sequence[Word], table: Table) -> str:
    """The sub-command: the first word, and the second after a first word with two-word refusals
    (``gh pr checkout``). They must lead the line: gh (cobra) takes a word after an option it does not
    know at that level as the option's value, so ``gh pr -t x checkout`` is ``pr checkout``; an option
    before them, with words after it, is unprovable."""
    pairs = {r.split()[0] for r in table.refused_subcommands if " " in r}
    found: list[str] = []
    for k in range(1, len(words)):
        w = words[k]
        if found and found[0] not in pairs:
            break
        if not w.literal:
            raise Unprovable(f"{name}: the sub-command {w.text!r} is not known before the shell runs")
        if w.text.startswith("-"):
            if k + 1 < len(words):
                raise Unprovable(f"{' '.join([name, *found, w.text])}: an option before the sub-command; which "
                                 f"word {name} takes for the sub-command depends on it")
            break
        found.append(w.text)
        if len(found) == 2:
            break
    if not found:
        return ""
    first, pair = found[0], " ".join(found)
    if first in table.refused_subcommands or pair in table.refused_subcommands or \
            first not in table.subcommands:
        raise Unprovable(f"{name} {pair} runs an alias, an extension or another program (docs/agents.md)")
    return first


def _git_config(words: Sequence[Word], start: int) -> None:
    """``git config KEY VALUE`` sets configuration: only a key that runs nothing (runners.git_key)."""
    rest = words[start:]
    if any(w.literal and w.text in GIT_CONFIG_READS for w in rest):
        return
    operands = [w for w in rest if not w.text.startswith("-")]
    if not operands:
        return
    if not operands[0].literal:
        raise Unprovable(f"git config {operands[0].text}: the key is not known before the shell runs")
    try:
        git_key(operands[0].text)
    except Unprovable:
        raise Unprovable(f"git config {operands[0].text}: a key that can make git run another program (or "
                         "that is not known here)") from None


class _Reader:
    """One reading of a command's options against its table (module docstring): what it found."""

    __slots__ = ("table", "sub", "who", "spec", "words", "options", "operands", "values")

    def __init__(self, table: Table, sub: str | None, words: Sequence[Word], spec: _Spec) -> None:
        self.table, self.sub, self.words, self.spec = table, sub, words, spec
        self.who = f"{table.name} {sub}" if sub else table.name
        self.options: list[str] = []
        self.operands: list[Word] = []
        self.values: list[tuple[str, Word]] = []

    def read(self, start: int) -> None:
        """Every option in ``words[start:]`` is in the table, each value placed as the program places it."""
        words, i = self.words, start
        if self.table.bundled_first and i < len(words) and words[i].literal and words[i].text[:1] not in ("-", ""):
            i = self._bundle(i)  # tar cf out.tar: letters without a dash
        while i < len(words):
            w = words[i]
            text = w.text
            if not w.literal:
                if not self._option_with_unknown_value(w):
                    self.operands.append(w)
                i += 1
            elif text == "--":
                self.operands.extend(words[i + 1:])
                return
            elif not text.startswith("-") or text == "-" or (self.table.numbers and text[1:].isdigit()):
                self.operands.append(w)
                i += 1
            elif text.startswith("--"):
                i += self._long(i)
            else:
                i += self._cluster(i)

    def _refuse(self, option: str, given: str = "") -> Unprovable:
        return Unprovable(f"{self.who} {given or option}: {_unlisted(self.table, self.sub, option)} (docs/agents.md)")

    def _long(self, i: int) -> int:
        """One ``--name[=value]`` word; returns how many words it takes."""
        text = self.words[i].text
        name, eq, value = text[2:].partition("=")
        kind = self.spec.long(name)
        if kind is None and self.table.negatable and name.startswith("no-") and not name.startswith("no-no-"):
            kind = _FLAG if self.spec.long(name[3:]) is not None else None
        if kind is None:
            raise self._refuse("--" + name)
        self.options.append("--" + name)
        if eq:
            if kind == _FLAG:
                raise Unprovable(f"{self.who} --{name} takes no value, and is given {value!r}")
            self._value("--" + name, Word(value))
            return 1
        if kind == _VALUED:
            if i + 1 < len(self.words):
                self._value("--" + name, self.words[i + 1])
            return 2
        return 1

    def _cluster(self, i: int) -> int:
        """One ``-abc`` word, each letter an option until one that takes a value; returns the words taken."""
        text = self.words[i].text
        for j in range(1, len(text)):
            letter = text[j]
            kind = self.spec.short.get(letter)
            if kind is None:
                raise self._refuse("-" + letter, f"-{letter} (in {text})" if len(text) > 2 else "")
            self.options.append("-" + letter)
            if kind == _FLAG:
                continue
            if j + 1 < len(text):
                self._value("-" + letter, Word(text[j + 1:]))
                return 1
            if kind == _VALUED:
                if i + 1 < len(self.words):
                    self._value("-" + letter, self.words[i + 1])
                return 2
            return 1
        return 1

    def _bundle(self, i: int) -> int:
        """GNU tar's old style (``tar cIf PROG out.tar``): every letter of the first word is an option, and
        each that takes a value takes the next word in turn (tar(1) Old style)."""
        text, at = self.words[i].text, i + 1
        for letter in text:
            kind = self.spec.short.get(letter)
            if kind is None:
                raise self._refuse("-" + letter, text)
            self.options.append("-" + letter)
            if kind == _VALUED:
                if at < len(self.words):
                    self._value("-" + letter, self.words[at])
                at += 1
        return at

    def _option_with_unknown_value(self, w: Word) -> bool:
        """A word that is not literal where an option may stand: ``--name="$x"`` is that option (True;
        the value is not known); a word that cannot start with '-' is an operand (False); anything else
        could be any option."""
        named = _LONG_NAME.match(w.text)
        if named is not None and named.group(2):
            kind = self.spec.long(named.group(1))
            if kind is None or kind == _FLAG:
                raise self._refuse("--" + named.group(1))
            self.options.append("--" + named.group(1))
            self._value("--" + named.group(1), Word(w.text[named.end():], literal=False))
            return True
        if _NOT_AN_OPTION.match(w.text):
            return False
        raise Unprovable(f"{self.who}: the word {w.text!r} is not known before the shell runs and could be an "
                         "option that names a program")

    def _value(self, option: str, value: Word) -> None:
        self.values.append((option, value))
        for c in self.table.checked:
            if c.option == option and (not value.literal or re.search(c.pattern, value.text)):
                shown = value.text if value.literal else f"{value.text} (not known before the shell runs)"
                raise Unprovable(f"{self.who} {option} {shown}: {c.why} (docs/agents.md)")


def _unlisted(table: Table, sub: str | None, option: str) -> str:
    why = _why_refused(table, option, sub)
    if why is not None:
        return why
    return "not in its table of options known not to make it run another program"


def _why_refused(table: Table, option: str, sub: str | None) -> str | None:
    """Why ``option`` (or an abbreviation of it) is left out of ``table``, when the table says."""
    for r in table.refused:
        if r.after and sub not in r.after:
            continue
        if option == r.option or (option.startswith("--") and len(option) > 3 and r.option.startswith(option)):
            return f"{r.option} {r.why}"
    return None


def data_value(name: str, words: Sequence[Word], i: int) -> bool:
    """``words[i]`` is a data word (words.Word.data) that is the value of an option ``name``'s table says
    is plain data, after a sub-command where it is: ``-m "$(...)"`` or ``--message="$(...)"`` after
    ``git commit`` (issue 32, item 9). Clusters and abbreviations are not read: a question, not a guess."""
    table = TABLES.get(name)
    w = words[i]
    if table is None or not w.data or i < 2:
        return False
    prev, glued = words[i - 1], any(o.startswith("--") and w.text.startswith(o + "=") for o in table.data)
    option = i if glued else i - 1
    if not glued:
        before = words[i - 2]  # not an option that takes "-m" as its own value (git commit -F -m ...)
        if not (prev.literal and prev.text in table.data) or not before.literal or \
                (before.text.startswith("-") and before.text not in _FLAGS):
            return False
    if not table.data_after:
        return True
    sub = git_subcommand(list(words)) if name == "git" else None
    return sub is not None and sub < option and words[sub].literal and words[sub].text in table.data_after


#: Options known to take no value, so a ``-m`` after them is an option (git-commit(1)).
_FLAGS = frozenset({"-a", "--all", "-q", "--quiet", "-s", "--signoff", "-v", "--verbose", "--amend",
                    "--allow-empty", "-n", "--no-verify"})


#: ``test``/``[`` operators whose operand is a variable name: bash evaluates a subscript in it as
#: arithmetic, which runs command substitutions (bash(1) CONDITIONAL EXPRESSIONS, -v and -R).
_NAME_OPERATORS = frozenset({"-v", "-R"})


def check_test(words: Sequence[Word]) -> None:
    """``test``/``[`` evaluate code when ``-v``/``-R`` (or a word that may expand to one) is followed by
    a word that may hold a subscript: one that is not literal, or holds ``[`` (item 4)."""
    for i in range(1, len(words) - 1):
        w, operand = words[i], words[i + 1]
        if (w.literal and w.text not in _NAME_OPERATORS) or (operand.literal and "[" not in operand.text):
            continue
        raise Unprovable(f"{words[0].text} {w.text} {operand.text}: with -v bash evaluates a subscript in "
                         "the name as arithmetic, which runs the substitutions in it")


__all__ = ["check", "check_test"]
