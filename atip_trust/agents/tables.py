"""The shell gate's use of facts/program_tables.py: a program with a table is unprovable when the line
tells it something outside the table (issue 32, item 3), and ``test``/``[`` that evaluate code are
unprovable (item 4).

Options are matched as the program reads them, over-approximating (facts/program_tables.py): any
prefix of a refused long option, with or without ``=value``; a refused short letter anywhere in a
cluster; for GNU tar a first word without a dash is a cluster too; and a word that is not literal could
be any option. Whether a word is an option's value is not decided here: a value that looks like a
refused option is asked about, never let through.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from atip_trust.agents.runners import git_subcommand
from atip_trust.agents.words import Unprovable, Word
from atip_trust.facts.program_tables import TABLES, Table, env_allowed

#: Characters a word's source text may start with when its expansion cannot start with '-'.
_NOT_AN_OPTION = re.compile(r"[A-Za-z0-9_./:@%+,=]")
_LONG_WITH_VALUE = re.compile(r"--[A-Za-z0-9][A-Za-z0-9-]*=")


def check(name: str, words: Sequence[Word], env: Sequence[str]) -> None:
    """Refuse what ``words`` (``name``'s argv) and the line's variables ``env`` tell ``name`` that its
    table does not allow (module docstring); nothing for a program without a table."""
    table = TABLES.get(name)
    if table is None:
        return
    for var in env:
        if not env_allowed(table, var):
            raise Unprovable(f"{name} is given {var}=, which is not in its table of variables known not to "
                             "make it run another program (docs/agents.md)")
    if not (table.refused or table.refused_subcommands or table.subcommands):
        return
    sub = _subcommand(name, words, table)
    subname = words[sub].text if sub is not None else ""
    if sub is not None and (subname in table.refused_subcommands or
                            (table.subcommands and subname not in table.subcommands)):
        raise Unprovable(f"{name} {subname} runs an alias, an extension or another program "
                         "(docs/agents.md)")
    for i in range(1, len(words)):
        w = words[i]
        if not w.literal:
            named = _LONG_WITH_VALUE.match(w.text)  # --name="$x": the name is literal, only the value is not
            if named is not None:
                why = _refused(table, named.group(0), subname if sub is not None and i > sub else None)
                if why is not None:
                    raise Unprovable(f"{name} {w.text}: {why} (docs/agents.md)")
                continue
            if not _NOT_AN_OPTION.match(w.text) and not _is_value(table, words[i - 1]):
                raise Unprovable(f"{name}: the word {w.text!r} is not known before the shell runs and "
                                 "could be an option that names a program")
            continue
        text = w.text
        if i == 1 and table.bundled_first and text and not text.startswith("-"):
            text = "-" + text  # tar cIf: the first word is a cluster of options
        after = subname if sub is not None and i > sub else None
        why = _refused(table, text, after)
        if why is not None:
            raise Unprovable(f"{name} {subname + ' ' if after else ''}{w.text}: {why} (docs/agents.md)")


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


def _is_value(table: Table, prev: Word) -> bool:
    """The word after ``prev`` is an option's value: ``prev`` is an option the table says takes one, or a
    short cluster ending in one (``-am``)."""
    if not prev.literal or not prev.text.startswith("-"):
        return False
    text = prev.text
    if text in table.valued:
        return True
    return not text.startswith("--") and len(text) > 2 and f"-{text[-1]}" in table.valued


def _subcommand(name: str, words: Sequence[Word], table: Table) -> int | None:
    if name == "git":
        i: int | None = git_subcommand(list(words))
    elif table.refused_subcommands or table.subcommands:
        i = next((k for k in range(1, len(words)) if not words[k].text.startswith("-")), None)
    else:
        return None
    if i is None or i >= len(words):
        return None
    if not words[i].literal:
        raise Unprovable(f"{name}: the sub-command {words[i].text!r} is not known before the shell runs")
    return i


def _refused(table: Table, text: str, after: str | None) -> str | None:
    """Why ``text`` names a refused option of ``table`` (given after the sub-command ``after``), or None."""
    if not text.startswith("-") or text in ("-", "--"):
        return None
    for r in table.refused:
        if r.after and after not in r.after:
            continue
        if r.option.startswith("--"):
            given = text[2:].split("=", 1)[0] if text.startswith("--") else ""
            if given and r.option[2:].startswith(given):
                return f"{r.option} {r.why}"
        elif not text.startswith("--") and r.option[1] in text[1:]:
            return f"{r.option} {r.why}"
    return None


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
