"""Command rules in the syntax agent users already write (DESIGN.md principle 11).

Two notations, both matched against the command line ``[tool, *command]``:

* Claude Code ``permissions`` strings: ``Bash`` (every command), ``Bash(spec)``, or ``spec`` alone.
  ``spec`` follows Claude Code's shell-rule matching (code.claude.com/docs/en/permissions):
  - no ``*``: exact match of the whole command line;
  - ``prefix:*`` (legacy form): the prefix alone or followed by a space and anything (word boundary:
    ``npm:*`` does not match ``npmx``);
  - ``*`` elsewhere: any run of characters, spaces included (``\\*`` is a literal star); when the only
    wildcard is a trailing `` *`` it is optional, so ``gh pr view *`` matches ``gh pr view`` but not
    ``gh pr viewer``.
* Codex ``prefix_rule`` token patterns: ``["gh", "pr", ["view", "list"]]`` matches a command whose first
  tokens are those, an inner list giving alternatives (developers.openai.com/codex rules).

Rules are evaluated deny, then ask, then allow; a rule's specificity never changes the order (Claude Code:
"the first match in that order wins"; Codex: "the strictest decision wins") — ``decide.py`` does that.
The command line is compared as the argv joined by spaces, an argument with whitespace or quotes being
shell-quoted, so an argument that contains spaces cannot pose as several words. The argv is executed without a shell, so shell operators inside an argument are
literal; Claude Code's splitting of ``a && b`` does not apply.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from typing import Any

from atip_trust.errors import PolicyError
from atip_trust.facts.report import TrustLevel
from atip_trust.policy.model import (
    CommandRule,
    RuleBehavior,
    RuleSource,
    SignerRule,
)
from atip_trust.signature.identity import CLAIMS

_TOOL_SPEC = re.compile(r"^([A-Za-z0-9_.:+-]+)\((.*)\)$", re.DOTALL)
#: Rule-tool names meaning "a shell command line" (Claude Code's Bash tool, and a neutral alias).
SHELL_TOOLS = frozenset({"Bash", "Shell", "Command"})


_NEEDS_QUOTES = re.compile(r"[\s'\"\\]")


def _word(token: str) -> str:
    # Quote only what would otherwise change the word split (whitespace, quotes, backslashes, empty),
    # so that rules can still name literal characters such as '*' (``Bash(echo \*)``).
    return shlex.quote(token) if not token or _NEEDS_QUOTES.search(token) else token


def command_line(tool: str, command: Sequence[str]) -> tuple[tuple[str, ...], str]:
    tokens = (tool, *command)
    return tokens, " ".join(_word(t) for t in tokens)


def split_command(command: str | Sequence[str] | None) -> tuple[str, ...]:
    """``"pr merge"`` → ``("pr", "merge")`` (shlex); a sequence is taken as argv as is."""
    if command is None:
        return ()
    if isinstance(command, str):
        try:
            return tuple(shlex.split(command))
        except ValueError as err:
            raise PolicyError(f"command {command!r} cannot be split into words: {err}") from err
    return tuple(command)


def _wildcard_regex(spec: str) -> re.Pattern[str]:
    # Split on unescaped '*'; '\*' and '\\' are literals (Claude Code's escaping).
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
    stars = len(parts) - 1
    if stars == 1 and parts[1] == "" and parts[0].endswith(" "):
        # "cmd *": trailing wildcard optional, with a word boundary.
        head = parts[0][:-1]
        return re.compile(re.escape(head) + r"(?: .*)?", re.DOTALL)
    return re.compile(".*".join(re.escape(p) for p in parts), re.DOTALL)


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
    m = _TOOL_SPEC.match(text)
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
        prefix = spec[:-2]
        return CommandRule(
            kind="prefix", regex=re.compile(re.escape(prefix) + r"(?: .*)?", re.DOTALL), **common
        )
    if re.search(r"(?<!\\)\*", spec):
        return CommandRule(kind="wildcard", regex=_wildcard_regex(spec), **common)
    common["pattern"] = re.sub(r"\\([*\\])", r"\1", spec)  # unescape \* and \\
    return CommandRule(kind="exact", **common)


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
    if rule.regex is None:  # pragma: no cover - compile_rule always sets it
        return False
    return rule.regex.fullmatch(line) is not None


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
