"""What the model is told about risk, and what it is shown of a tool's output.

``generate_safety_prompt`` is the reference's system-prompt section, from the same merged effects the
compiled descriptions carry (tool and group levels apply to each command, risk winning, RFC §3.6).

``create_result_filter`` redacts secrets, then truncates (RFC §8.2: results go back to a model that
must not see credentials). Beyond the reference (docs/bridge.md):

* redaction runs over the whole output *before* the cut, so a secret straddling the limit is redacted
  whole, and the cut moves back to the start of a ``[REDACTED]`` marker it would split; the limit counts
  characters (code points), so no character is cut in two;
* the marker is ``\\n[TRUNCATED]`` as the API specification says (the reference code appends
  ``[TRUNCATED]`` with no newline);
* every built-in pattern runs in linear time: each starts with a literal or a one-character class and has
  one unbounded repetition of a class disjoint from what follows it, so nothing backtracks more than a
  constant per position (bench/bridge.py measures 10 MB of near misses). JavaScript's variable-width
  lookbehind ``(?<=api[_-]?key[=:\\s])`` is written as a captured prefix kept in the output;
* ``password: value`` (a colon or ``=`` followed by spaces, the YAML and log form) is redacted too; the
  reference's lookbehind requires the value right after one separator character and leaves it visible;
* the forms machines print are redacted too (the reference misses them all): a quoted value after a key
  naming a secret (``{"password": "…"}``, ``"token"``, ``"api_key"``, AWS STS's ``"SecretAccessKey"`` and
  ``"SessionToken"``), keys with words around the keyword (``aws_secret_access_key = …``,
  ``export AWS_SECRET_ACCESS_KEY=…``, ``DB_PASSWORD=…``), and temporary AWS key IDs (``ASIA…``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from atip_trust._base.record import Record
from atip_trust.bridge.compile import command_effects, tool_document
from atip_trust.facts.flatten import flatten_commands
from atip_trust.facts.metadata import MetadataDocument

REDACTED = "[REDACTED]"
TRUNCATED = "\n[TRUNCATED]"
DEFAULT_MAX_RESULT_LENGTH = 100_000

_KEYWORD_VALUE = r"(?:[=:][ \t]*|\s)"

#: A secret's key as machines print it, from its keyword on (``password``, ``DB_PASSWORD``, ``api_key``,
#: ``aws_secret_access_key``, ``AWS_SECRET_ACCESS_KEY``, ``SecretAccessKey``, ``SessionToken``,
#: ``client-secret``: what precedes the keyword stays as it is), the rest of the key bounded
#: (``{0,40}``), its own closing quote (JSON, a Python dict), ``:`` or ``=`` (JSON, YAML, INI, shell),
#: and the value's opening quote if any: group 1, kept.
_SECRET_KEY = (r"((?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key"
               r"|credential)[A-Za-z0-9_.-]{0,40}[\"']?[ \t]*[=:][ \t]*[\"']?)")
#: The value, replaced: inside double or single quotes up to the closing one (escapes skipped as pairs,
#: the unrolled loop: each character looked at once; the closing quote stays), or unquoted up to the next
#: blank (not a ``{`` or ``[``: a nested object is not a value to hide, its own keys are looked at).
_SECRET_VALUE = (r"""(?:(?<=")[^"\\\n]*(?:\\.[^"\\\n]*)*|(?<=')[^'\\\n]*(?:\\.[^'\\\n]*)*"""
                 r"""|(?<=[=: \t])(?=[^\s"'{\[])\S+)""")

#: Built-in secret patterns: (pattern, keep group 1). The reference's list, in its order, between
#: ours (module docstring).
DEFAULT_REDACT_PATTERNS: tuple[tuple[re.Pattern[str], bool], ...] = (
    # Beyond the reference, first (module docstring): a value under a key that names a secret. Before
    # the reference's patterns, which would take ``"a`` of ``PASSWORD="a b"`` and leave `` b"`` visible.
    # One pass, and linear: the keyword is a literal, what follows it is bounded or a single class.
    (re.compile(_SECRET_KEY + _SECRET_VALUE, re.IGNORECASE), True),
    (re.compile(r"Bearer\s+[A-Za-z0-9\-._~+/]+=*"), False),
    (re.compile(r"Basic\s+[A-Za-z0-9+/]+=*"), False),
    (re.compile(r"ghp_[A-Za-z0-9]+"), False),
    (re.compile(r"gho_[A-Za-z0-9]+"), False),
    (re.compile(r"ghs_[A-Za-z0-9]+"), False),
    (re.compile(r"ghu_[A-Za-z0-9]+"), False),
    (re.compile(r"ghr_[A-Za-z0-9]+"), False),
    (re.compile(r"AKIA[A-Z0-9]{16}"), False),
    (re.compile(rf"(password{_KEYWORD_VALUE})[^\s]+", re.IGNORECASE), True),
    (re.compile(rf"(secret{_KEYWORD_VALUE})[^\s]+", re.IGNORECASE), True),
    (re.compile(rf"(token{_KEYWORD_VALUE})[^\s]+", re.IGNORECASE), True),
    (re.compile(rf"(api[_-]?key{_KEYWORD_VALUE})[^\s]+", re.IGNORECASE), True),
    # Beyond the reference: AWS temporary key IDs.
    (re.compile(r"ASIA[A-Z0-9]{16}"), False),
)


class ResultFilter(Record):
    """Redact, then truncate (see the module docstring)."""

    max_length: int
    patterns: tuple[tuple[re.Pattern[str], bool], ...]

    def filter(self, result: str | bytes, tool_name: str = "") -> str:
        """``result`` made safe to show a model (bytes are read as UTF-8, bad bytes replaced)."""
        text = result.decode("utf-8", "replace") if isinstance(result, bytes) else str(result)
        for pattern, keep_prefix in self.patterns:
            text = pattern.sub(_keep_prefix if keep_prefix else REDACTED, text)
        if len(text) <= self.max_length:
            return text
        cut = self.max_length
        # A cut inside a marker would show a fragment that reads like output; cut before it instead.
        start = text.rfind(REDACTED, max(0, cut - len(REDACTED) + 1), cut + len(REDACTED) - 1)
        if start != -1 and start < cut < start + len(REDACTED):
            cut = start
        return text[:cut] + TRUNCATED


def _keep_prefix(match: re.Match[str]) -> str:
    return match.group(1) + REDACTED


def create_result_filter(
    tools: Sequence[Mapping[str, Any] | MetadataDocument] = (),
    max_length: int = DEFAULT_MAX_RESULT_LENGTH,
    redact_secrets: bool = True,
    redact_patterns: Sequence[str | re.Pattern[str] | tuple[re.Pattern[str], bool]] = (),
) -> ResultFilter:
    """A filter with the built-in secret patterns (``redact_secrets``) and then ``redact_patterns``
    (whole matches replaced). ``tools`` is reserved for tool-specific rules, as in the reference.

    Caller patterns run with Python's backtracking engine: a pattern with nested unbounded repetition
    can take exponential time on hostile output; keep them to one unbounded class per pattern."""
    if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 0:
        raise ValueError(f"max_length must be a non-negative integer, got {max_length!r}")
    patterns = list(DEFAULT_REDACT_PATTERNS) if redact_secrets else []
    for p in redact_patterns:
        # The reference's idiom ``[*DEFAULT_REDACT_PATTERNS, re.compile(...)]`` hands back built-in
        # entries, which here are (pattern, keep group 1) pairs: taken as they are.
        if isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], re.Pattern) and isinstance(p[1], bool):
            patterns.append(p)
        elif isinstance(p, (str, re.Pattern)):
            patterns.append((p if isinstance(p, re.Pattern) else re.compile(p), False))
        else:
            raise ValueError(f"a redact pattern is a string, a compiled pattern or an entry of "
                             f"DEFAULT_REDACT_PATTERNS, got {type(p).__name__}")
    return ResultFilter(max_length, tuple(patterns))


_SECTIONS: tuple[tuple[str, str, str], ...] = (
    ("destructive", "Destructive Operations",
     "The following commands permanently destroy data. Always confirm with the user before executing:"),
    ("nonReversible", "Non-Reversible Operations", "The following commands cannot be undone:"),
    ("nonIdempotent", "Non-Idempotent Operations",
     "The following commands have different effects on repeated execution:"),
    ("billable", "Billable Operations", "The following commands may incur costs:"),
    ("network", "Network Operations", "The following commands require network access:"),
    ("interactive", "Interactive Operations", "The following commands require user input:"),
)


def _categories(effects: Mapping[str, Any]) -> list[str]:
    cost = effects.get("cost")
    inter = effects.get("interactive")
    found = {
        "destructive": effects.get("destructive") is True,
        "nonReversible": effects.get("reversible") is False,
        "nonIdempotent": effects.get("idempotent") is False,
        "billable": isinstance(cost, Mapping) and cost.get("billable") is True,
        "network": effects.get("network") is True,
        "interactive": isinstance(inter, Mapping)
        and (inter.get("stdin") == "required" or inter.get("prompts") is True),
    }
    return [k for k, v in found.items() if v]


def generate_safety_prompt(tools: Sequence[Mapping[str, Any] | MetadataDocument]) -> str:
    """A markdown "Tool Safety Summary" listing the commands in each risk category ("" for no tools)."""
    if not tools:
        return ""
    lines: dict[str, list[str]] = {key: [] for key, _, _ in _SECTIONS}
    for tool in tools:
        for fc in flatten_commands(tool_document(tool)):
            desc = fc.command.get("description")
            entry = f"- `{fc.name}`: {desc if isinstance(desc, str) else ''}"
            for key in _categories(command_effects(fc)):
                lines[key].append(entry)
    out = ["## Tool Safety Summary"]
    for key, title, lead in _SECTIONS:
        if lines[key]:
            out += ["", f"### {title}", lead, *lines[key]]
    patterns = [line for tool in tools for line in _patterns(tool_document(tool))]
    if patterns:
        out += ["", "### Usage Patterns", "Tested sequences the tools' authors describe:", *patterns]
    return "\n".join(out)


#: RFC §8.3: ``patterns`` go to the system prompt; at most this many per tool, this many steps each,
#: each text cut to ``_PATTERN_TEXT`` characters (a prompt section, not a manual).
_MAX_PATTERNS, _MAX_STEPS, _PATTERN_TEXT = 5, 6, 200


def _cut(text: Any) -> str:
    value = text if isinstance(text, str) else ""
    return value if len(value) <= _PATTERN_TEXT else value[:_PATTERN_TEXT - 3] + "..."


def _patterns(doc: Mapping[str, Any]) -> list[str]:
    raw = doc.get("patterns")
    out: list[str] = []
    for pattern in (raw if isinstance(raw, list) else [])[:_MAX_PATTERNS]:
        if not isinstance(pattern, Mapping):
            continue
        steps = pattern.get("steps")
        words = [f"`{_cut(st.get('command'))}`" for st in (steps if isinstance(steps, list) else [])[:_MAX_STEPS]
                 if isinstance(st, Mapping)]
        out.append(f"- {_cut(pattern.get('name'))} ({doc.get('name')}): {_cut(pattern.get('description'))}"
                   + (f" Steps: {' -> '.join(words)}" if words else ""))
    return out


__all__ = [
    "DEFAULT_MAX_RESULT_LENGTH",
    "DEFAULT_REDACT_PATTERNS",
    "REDACTED",
    "TRUNCATED",
    "ResultFilter",
    "create_result_filter",
    "generate_safety_prompt",
]
