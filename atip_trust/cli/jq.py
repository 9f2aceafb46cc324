"""``--jq EXPR``: gh attestation verify's filter over the JSON report, for the path expressions CI steps use.

gh runs a full jq (gojq); atip-trust takes the subset that selects values, so that
``verify … --jq '.trust_level'`` or ``--jq '.results[].trust_level'`` works as typed: ``.``, ``.name``,
``."quoted name"``, ``.[N]`` (negative counts from the end), ``.[]`` (each element or value), chained
(``.a.b[0]``) and joined with ``|``. Anything else (functions, ``select``, arithmetic) is refused with a
usage error naming this subset (exit 2), never guessed. Output as jq prints it with ``-r`` off except
for strings, which gh prints raw: one value per line, strings without quotes, the rest as compact JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from atip_trust.errors import UsageError

_STEP = re.compile(r'\.(?:([A-Za-z_][A-Za-z0-9_]*)|"((?:[^"\\]|\\.)*)")|\[\s*(-?\d+)?\s*\]|\.(?=\[)')
SUBSET = '., .name, ."name", .[N], .[] chained and joined with |'


def _steps(expr: str) -> list[tuple[str, Any]]:
    """The path steps of one ``|``-free expression: ("key", name), ("index", n) or ("each", None)."""
    text = expr.strip()
    if text == ".":
        return []
    steps: list[tuple[str, Any]] = []
    pos = 0
    while pos < len(text):
        m = _STEP.match(text, pos)
        if m is None or m.end() == pos:
            raise UsageError(f"--jq: {expr.strip()!r} is not a path this --jq reads (expected {SUBSET}; "
                             "for more, use --format json and pipe it to jq)")
        name, quoted, index = m.group(1), m.group(2), m.group(3)
        if name is not None:
            steps.append(("key", name))
        elif quoted is not None:
            steps.append(("key", json.loads(f'"{quoted}"')))
        elif m.group(0).startswith("["):
            steps.append(("index", int(index)) if index is not None else ("each", None))
        pos = m.end()
    return steps


def _apply(value: Any, steps: list[tuple[str, Any]]) -> Iterator[Any]:
    if not steps:
        yield value
        return
    (kind, arg), rest = steps[0], steps[1:]
    if kind == "key":
        if value is not None and not isinstance(value, dict):
            raise UsageError(f"--jq: cannot index {type(value).__name__} with {arg!r}")
        yield from _apply(None if value is None else value.get(arg), rest)
    elif kind == "index":
        if value is not None and not isinstance(value, list):
            raise UsageError(f"--jq: cannot index {type(value).__name__} with a number")
        yield from _apply(value[arg] if value is not None and -len(value) <= arg < len(value) else None, rest)
    else:
        if isinstance(value, dict):
            items: list[Any] = list(value.values())
        elif isinstance(value, list):
            items = value
        else:
            raise UsageError(f"--jq: cannot iterate over {type(value).__name__}")
        for item in items:
            yield from _apply(item, rest)


def jq_values(doc: Any, expr: str) -> list[Any]:
    """The values ``expr`` selects from ``doc`` (every ``|`` stage applied to each value of the last)."""
    values = [doc]
    for stage in expr.split("|"):
        steps = _steps(stage)
        values = [out for v in values for out in _apply(v, steps)]
    return values


def jq_text(doc: Any, expr: str) -> str:
    """The selected values, one per line: strings raw (as gh prints them), the rest as compact JSON."""
    lines = [v if isinstance(v, str) else json.dumps(v, separators=(",", ":")) for v in jq_values(doc, expr)]
    return "".join(f"{line}\n" for line in lines)


__all__ = ["SUBSET", "jq_text", "jq_values"]
