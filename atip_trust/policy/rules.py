"""Command rules in the syntax agent users already write (principle 11).

Two notations, both matched against the command line ``[tool, *command]``:

* Claude Code ``permissions`` strings: ``Bash`` (every command), ``Bash(spec)``, or ``spec`` alone.
  ``spec`` follows Claude Code's shell-rule matching (code.claude.com/docs/en/permissions):
  - no ``*``: exact match of the whole command line;
  - ``prefix:*`` (legacy form): the prefix alone or followed by a space and anything (word boundary:
    ``npm:*`` does not match ``npmx``);
  - ``*`` elsewhere: any run of characters, spaces included (``\\*`` is a literal star); when the only
    wildcard is a trailing `` *`` it is optional, so ``gh pr view *`` matches ``gh pr view`` but not
    ``gh pr viewer``.
  - One deliberate deviation, which only tightens: in **deny and ask** rules a trailing `` *`` is always
    optional, so ``Bash(* --force *)`` also catches ``git push origin main --force`` (in Claude Code
    it does not: with two wildcards the trailing one is required). Allow rules keep Claude Code's
    reading exactly, so they never match more than they do there.
* Codex ``prefix_rule`` token patterns: ``["gh", "pr", ["view", "list"]]`` matches a command whose first
  tokens are those, an inner list giving alternatives (developers.openai.com/codex rules).

Rules are evaluated deny, then ask, then allow; a rule's specificity never changes the order (Claude Code:
"the first match in that order wins"; Codex: "the strictest decision wins") — ``decide.py`` does that.
The command line is compared as the argv joined by spaces, an argument with whitespace or quotes being
shell-quoted, so an argument that contains spaces cannot pose as several words. The argv is executed without a shell, so shell operators inside an argument are
literal; Claude Code's splitting of ``a && b`` does not apply.

Options before the sub-command (``git -C . push --force``, ``gh --repo o/r repo delete``) cannot hide it
from a deny or ask rule: those rules are also tried on the command with the leading options removed
(``command_variants``). Whether an option takes a value is unknown here, so both readings are tried
(``-C`` alone, and ``-C .``); a rule matching any reading applies. Allow rules see only the command as
given, so that no reading can widen what they admit.

Matching is linear in the length of the command (``glob_match``: anchored ends, then each middle piece
found leftmost with ``str.find``; no regexp, no backtracking), and the command's size is capped
(``limits.Limits.command_chars``/``command_words``): a longer command is denied, naming both sizes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from atip_trust._base.lazy import lazy_import
from atip_trust._base.limits import LIMITS
from atip_trust.errors import PolicyError
from atip_trust.facts.report import TrustLevel
from atip_trust.policy.model import CommandRule, SignerRule
from atip_trust.signature.identity import CLAIMS

if TYPE_CHECKING:
    import shlex
    from typing import Any

    from atip_trust.policy.model import RuleBehavior, RuleSource
else:
    shlex = lazy_import("shlex")  # only for words that need quoting or splitting by shell rules

# The patterns below are compiled by ``re`` where first matched (its own cache), not at import: a
# cache-hit admission matches few of them (docs/adr/0001-start-up.md).
_TOOL_SPEC = r"(?s)^([A-Za-z0-9_.:+-]+)\((.*)\)$"
#: Rule-tool names meaning "a shell command line" (Claude Code's Bash tool, and a neutral alias).
SHELL_TOOLS = frozenset({"Bash", "Shell", "Command"})


_NEEDS_QUOTES = r"[\s'\"\\]"


def _word(token: str) -> str:
    # Quote only what would otherwise change the word split (whitespace, quotes, backslashes, empty),
    # so that rules can still name literal characters such as '*' (``Bash(echo \*)``). Letters and
    # digits alone (most words) need no quotes: checked first, without the regexp.
    if token.isalnum():
        return token
    return shlex.quote(token) if not token or re.search(_NEEDS_QUOTES, token) else token


def command_line(tool: str, command: Sequence[str]) -> tuple[tuple[str, ...], str]:
    tokens = (tool, *command)
    return tokens, " ".join([_word(t) for t in tokens])


#: A command line that shlex (POSIX mode, no comments) splits exactly as on its blanks: no quotes,
#: backslashes or characters outside shlex's word characters, separated by its whitespace. A set of
#: characters, not a pattern: a cache-hit admission splits its command here.
_PLAIN_LINE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./- \t\r\n")


def split_command(command: str | Sequence[str] | None) -> tuple[str, ...]:
    """``"pr merge"`` → ``("pr", "merge")`` (shlex); a sequence is taken as argv as is."""
    if command is None:
        return ()
    if isinstance(command, str):
        if _PLAIN_LINE.issuperset(command):  # only those blanks: split() splits on them alone
            return tuple(command.split())
        try:
            return tuple(shlex.split(command))
        except ValueError as err:
            raise PolicyError(f"command {command!r} cannot be split into words: {err}") from err
    return tuple(command)


def _wildcard_parts(spec: str) -> tuple[str, ...]:
    """The literal pieces between unescaped ``*``; ``\\*`` and ``\\\\`` are literals (Claude Code's escaping)."""
    parts: list[str] = []
    buf: list[str] = []
    i = 0
    while i < len(spec):
        ch = spec[i]
        if ch == "\\" and i + 1 < len(spec) and spec[i + 1] in "*\\":
            buf.append(spec[i + 1])
            i += 2
            continue
        if ch == "*":
            parts.append("".join(buf))
            buf = []
        else:
            buf.append(ch)
        i += 1
    parts.append("".join(buf))
    return tuple(parts)


def glob_match(parts: Sequence[str], text: str) -> bool:
    """Whole-string match of ``parts[0] * parts[1] * ... * parts[-1]`` (``*``: any run of characters).

    Greedy and linear: the first and last pieces are anchored, and every middle piece is placed at its
    leftmost occurrence after the previous one. Leftmost placement is never worse for the pieces that
    follow, so no alternative needs to be tried (no backtracking, unlike ``re`` on ``.*a.*b.*``).
    """
    if len(parts) == 1:
        return text == parts[0]
    head, tail = parts[0], parts[-1]
    if len(text) < len(head) + len(tail) or not text.startswith(head) or not text.endswith(tail):
        return False
    pos, end = len(head), len(text) - len(tail)
    for piece in parts[1:-1]:
        found = text.find(piece, pos, end)
        if found < 0:
            return False
        pos = found + len(piece)
    return True


def _without_tail(parts: tuple[str, ...]) -> tuple[str, ...] | None:
    """``("gh pr view ", "")`` → ``("gh pr view",)``: the pattern with its trailing `` *`` removed."""
    if len(parts) >= 2 and parts[-1] == "" and parts[-2].endswith(" "):
        return (*parts[:-2], parts[-2][:-1])
    return None


def compile_rule(
    raw: Any,
    behavior: RuleBehavior,
    source: RuleSource,
    *,
    where: str,
) -> CommandRule:
    """Compile one entry of ``permissions.allow/ask/deny`` (string or object, schema-checked)."""
    min_level: TrustLevel | None = None
    signer: SignerRule | None = None
    if isinstance(raw, dict) and behavior != "allow":
        # A qualifier narrows when a rule applies. On a deny or ask rule that would let a *less* trusted
        # binary skip the denial or the question; the schema refuses it too, this keeps library callers
        # (compile_rule directly) to the same rule.
        for key in ("minTrustLevel", "signer"):
            if key in raw:
                raise PolicyError(qualifier_refusal(behavior), path=f"{where}.{key}")
    if isinstance(raw, dict):
        if "minTrustLevel" in raw:
            min_level = TrustLevel.parse(raw["minTrustLevel"])
        if "signer" in raw:
            signer = signer_from_json(raw["signer"], f"{where}.signer")
        if "prefix" in raw:
            alts = tuple(
                (tok,) if isinstance(tok, str) else tuple(tok) for tok in raw["prefix"]
            )
            return CommandRule(
                behavior=behavior,
                kind="tokens",
                text=repr([list(a) if len(a) > 1 else a[0] for a in alts]).replace("'", '"'),
                source=source,
                tokens=alts,
                min_trust_level=min_level,
                signer=signer,
            )
        text = raw["rule"]
    else:
        text = raw
    if not isinstance(text, str) or not text.strip():
        raise PolicyError("a command rule must be a non-empty string", path=where)
    # Only a text with "(" can be Tool(specifier): a plain rule compiles no pattern.
    m = re.match(_TOOL_SPEC, text) if "(" in text else None
    if m is not None:
        rule_tool, spec = m.group(1), m.group(2).strip()
        if not spec:
            raise PolicyError(
                f"rule {text!r} has an empty specifier; write {rule_tool!r} to match every command",
                path=where,
            )
        if rule_tool not in SHELL_TOOLS:
            # "gh(pr view *)" — Tool(specifier) with an ATIP tool name: the specifier is its command.
            spec = f"{rule_tool} {spec}"
    elif text in SHELL_TOOLS:
        return CommandRule(
            behavior=behavior, kind="any", text=text, source=source,
            min_trust_level=min_level, signer=signer,
        )
    elif "(" in text or ")" in text:
        raise PolicyError(
            f"rule {text!r} is not Tool(specifier) nor a plain command pattern", path=where
        )
    else:
        spec = text.strip()
    common: dict[str, Any] = {
        "behavior": behavior, "text": text, "source": source,
        "min_trust_level": min_level, "signer": signer, "pattern": spec,
    }
    if spec.endswith(":*") and spec.count("*") == 1:
        # Legacy "prefix:*": the prefix alone, or followed by a space and anything.
        return CommandRule(kind="prefix", parts=(spec[:-2] + " ", ""), tail_optional=True, **common)
    if "*" in spec.replace("\\*", ""):  # a "*" with no backslash just before it (an unescaped one)
        parts = _wildcard_parts(spec)
        # Claude Code: a trailing " *" that is the only wildcard is optional. Deny and ask rules make
        # every trailing " *" optional (only tightens; module docstring).
        optional = _without_tail(parts) is not None and (len(parts) == 2 or behavior != "allow")
        return CommandRule(kind="wildcard", parts=parts, tail_optional=optional, **common)
    common["pattern"] = re.sub(r"\\([*\\])", r"\1", spec)  # unescape \* and \\
    return CommandRule(kind="exact", **common)


def qualifier_refusal(behavior: str) -> str:
    return (
        f"a {behavior} rule cannot carry a trust qualifier (minTrustLevel, signer): it would let a less "
        f"trusted tool skip the {'denial' if behavior == 'deny' else 'question'}; put the condition on "
        "an allow rule instead"
    )


def rule_matches(rule: CommandRule, tokens: tuple[str, ...], line: str) -> bool:
    """Pattern match only; qualifiers (trust level, signer) are checked by the caller."""
    if rule.kind == "any":
        return True
    if rule.kind == "tokens":
        if len(tokens) < len(rule.tokens):
            return False
        return all(tok in alts for tok, alts in zip(tokens, rule.tokens))
    if rule.kind == "exact":
        return line == rule.pattern
    if not rule.parts:  # pragma: no cover - compile_rule always sets them
        return False
    if glob_match(rule.parts, line):
        return True
    short = _without_tail(rule.parts) if rule.tail_optional else None
    return short is not None and glob_match(short, line)


#: A compiled rule: ``(tokens, line) -> bool``, the same answer as ``rule_matches(rule, tokens, line)``.
Matcher = Callable[[tuple[str, ...], str], bool]


def compile_matcher(rule: CommandRule) -> Matcher:
    """``rule_matches`` for one rule, with its kind, pieces and optional tail settled once (when a
    policy is compiled, ``rules_for_tool``) instead of on every call. tests/policy/test_policy_rules.py checks
    that it answers as ``rule_matches`` does for every rule kind."""
    if rule.kind == "any":
        return _any_command
    if rule.kind == "tokens":
        return _tokens_matcher(rule.tokens)
    if rule.kind == "exact":
        pattern = rule.pattern

        def exact(_tokens: tuple[str, ...], line: str) -> bool:
            return line == pattern

        return exact
    parts = rule.parts
    if not parts:  # pragma: no cover - compile_rule always sets them
        return _no_command
    whole = _glob(parts)
    short = _without_tail(parts) if rule.tail_optional else None
    if short is None:
        return lambda _tokens, line: whole(line)
    alone = _glob(short)
    return lambda _tokens, line: whole(line) or alone(line)


def _glob(parts: tuple[str, ...]) -> Callable[[str], bool]:
    """``glob_match(parts, ·)``, written out for one, two and three pieces (``a``, ``a *``, ``* a *``)."""
    if len(parts) == 1:
        return parts[0].__eq__
    head, tail = parts[0], parts[-1]
    if len(parts) == 2:
        least = len(head) + len(tail)
        return lambda line: len(line) >= least and line.startswith(head) and line.endswith(tail)
    if len(parts) == 3:
        mid = parts[1]
        lh, lt = len(head), len(tail)
        least = lh + len(mid) + lt
        return lambda line: (len(line) >= least and line.startswith(head) and line.endswith(tail)
                             and line.find(mid, lh, len(line) - lt) >= 0)
    return lambda line: glob_match(parts, line)


def _any_command(_tokens: tuple[str, ...], _line: str) -> bool:
    return True


def _no_command(_tokens: tuple[str, ...], _line: str) -> bool:  # pragma: no cover - see compile_matcher
    return False


def _tokens_matcher(pattern: tuple[tuple[str, ...], ...]) -> Matcher:
    n = len(pattern)

    def tokens_match(tokens: tuple[str, ...], _line: str) -> bool:
        if len(tokens) < n:
            return False
        for tok, alts in zip(tokens, pattern):
            if tok not in alts:
                return False
        return True

    return tokens_match


def tool_head(tool: str) -> str:
    """The text every reading of a command line of ``tool`` starts with, up to its first space (what
    ``may_match`` compares ``CommandRule.first_word`` with): the tool word as the line quotes it."""
    return _word(tool).partition(" ")[0]


def rules_for_tool(rules: Sequence[CommandRule], tool: str) -> tuple[tuple[CommandRule, Matcher], ...]:
    """The rules of ``rules`` that can match some command of ``tool``, in order, each with its matcher.

    A rule is left out only when it cannot match any reading (``command_variants``) of any command line
    of ``tool``: its fixed first word is not the tool's (``may_match``: every reading keeps the tool
    word), or it is a token rule whose first position does not list the tool (every reading keeps
    ``tokens[0]``). tests/policy/test_policy_rules.py checks that no rule that matches is left out."""
    head = tool_head(tool)
    out: list[tuple[CommandRule, Matcher]] = []
    for rule in rules:
        if rule.kind == "tokens":
            if rule.tokens and tool not in rule.tokens[0]:
                continue
        else:
            word = rule.first_word
            if word is not None and word != head:
                continue
        out.append((rule, compile_matcher(rule)))
    return tuple(out)


def may_match(rule: CommandRule, line: str) -> bool:
    """False only when ``rule`` cannot match ``line`` nor any reading ``command_variants`` makes of it:
    every reading keeps the tool word the line starts with, and a rule that fixes its first word
    (``CommandRule.first_word``) matches only lines that start with that word, then a space or the end
    (``glob_match`` anchors ``parts[0]``, also with an optional tail; ``exact`` compares the whole
    line). A pre-check only: ``rule_matches`` decides."""
    head = rule.first_word
    return head is None or line.startswith(head) and (len(line) == len(head) or line[len(head)] == " ")


def _is_option(word: str) -> bool:
    # "-" alone is an operand by convention (stdin); "--" ends the options, and is skipped like one.
    return len(word) > 1 and word.startswith("-")


def command_variants(
    tokens: tuple[str, ...], line: str | None = None, *, max_candidates: int | None = None
) -> tuple[list[tuple[tuple[str, ...], str]], bool]:
    """The command as given, then each reading with the options before the sub-command removed.

    ``("git", "-C", ".", "push", "--force")`` → the original, ``git . push --force`` (``-C`` takes no
    value) and ``git push --force`` (``-C`` takes ``.``). Each reading is ``[tool] + words[j:]`` for a
    ``j`` that leading options (each alone, or with the word after it) can reach; at most one per word,
    so the count is linear. Returns the readings as (tokens, line) and False when there were more
    places the sub-command could start than ``max_candidates`` (default
    ``Limits.command_start_candidates``): the caller must not decide on a partial set.
    """

    cap = LIMITS.command_start_candidates if max_candidates is None else max_candidates
    tool, words = tokens[0], tokens[1:]
    n = len(words)
    if not words or not _is_option(words[0]):
        # The common case: the sub-command (or the first argument) comes first; one reading.
        return [(tokens, line if line is not None else command_line(tool, words)[1])], True
    quoted = [_word(t) for t in tokens]
    line = " ".join(quoted)
    out = [(tokens, line)]
    # Each reading's line is a suffix of the original after the tool: slice it, quote nothing twice.
    starts_at = [0] * (n + 1)
    pos = len(quoted[0]) + 1
    for k in range(n):
        starts_at[k] = pos
        pos += len(quoted[k + 1]) + 1
    starts_at[n] = len(line) + 1
    reach = [False] * (n + 1)
    reach[0] = True
    frontier = 0  # the furthest index leading options can reach; the walk stops past it
    starts = 0
    i = 0
    while i <= min(frontier, n):
        if reach[i]:
            if i < n and _is_option(words[i]):
                for nxt in (i + 1, min(i + 2, n)):
                    reach[nxt] = True
                    frontier = max(frontier, nxt)
            elif i > 0:
                starts += 1
                if starts > cap:
                    return out, False
                rest = line[starts_at[i]:]
                out.append(((tool, *words[i:]), f"{quoted[0]} {rest}" if rest else quoted[0]))
        i += 1
    return out, True


def command_too_large(tokens: tuple[str, ...], line: str) -> tuple[str, str] | None:
    """``(expected, actual)`` when the command is above the size caps, else None."""

    if len(line) > LIMITS.command_chars:
        return f"<= {LIMITS.command_chars} characters", f"{len(line)} characters"
    if len(tokens) > LIMITS.command_words:
        return f"<= {LIMITS.command_words} words", f"{len(tokens)} words"
    return None


def denied_command_rule(text: str, source: RuleSource, where: str) -> CommandRule:
    """``deniedCommands`` entries (RFC §10.2, ``"gh repo delete"``): a token prefix."""
    try:
        words = tuple(shlex.split(text))
    except ValueError as err:
        raise PolicyError(f"denied command {text!r} cannot be split: {err}", path=where) from err
    if not words:
        raise PolicyError("a denied command must name at least the tool", path=where)
    return CommandRule(
        behavior="deny", kind="tokens", text=text, source=source,
        tokens=tuple((w,) for w in words),
    )


def _check_regexp(pattern: str, where: str) -> None:
    try:
        re.compile(pattern)
    except re.error as err:
        raise PolicyError(f"invalid regular expression {pattern!r}: {err}", path=where) from err


def signer_from_json(raw: dict[str, Any], where: str) -> SignerRule:
    for key in ("identityRegexp", "issuerRegexp"):
        if key in raw:
            _check_regexp(raw[key], f"{where}.{key}")
    for key in raw.get("claims", {}):
        if key not in CLAIMS:
            raise PolicyError(
                f"unknown certificate claim {key!r}; expected one of {', '.join(CLAIMS)}",
                path=f"{where}.claims",
            )
    return SignerRule(
        identity=raw.get("identity"),
        identity_regexp=raw.get("identityRegexp"),
        issuer=raw.get("issuer"),
        issuer_regexp=raw.get("issuerRegexp"),
        claims=dict(raw.get("claims", {})),
    )


__all__ = []
