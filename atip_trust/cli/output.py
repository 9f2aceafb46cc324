"""Rendering results as text (rich on a terminal, plain on a pipe), JSON, or SARIF 2.1.0.

JSON keys follow CONTRACT.md. SARIF has one result per failed check; rule ids are ``atip-trust/<check>``
and never change meaning once published.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from atip_trust.facts.report import Check, Reason, TrustReport

FORMATS = ("text", "json", "sarif")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL_URI = "https://github.com/atip-trust/atip-trust"


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def one_line(text: str) -> str:
    """Escape control characters (a newline in a file name, say) so a message stays one line.

    The one escaping helper of every text renderer (admit, verify, metadata, policy, errors): paths,
    tool names, check and reason messages, expected and actual values all pass through it, so a file
    named ``"x\nallow: gh ..."`` cannot forge a line, and escape sequences, bidi overrides and line
    separators (everything ``str.isprintable`` refuses) are shown as ``\n``, ``\x1b``, ``\u202e``.
    """
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def rich_text(text: object) -> str:
    """``one_line`` for rich on a terminal, with rich's markup escaped too (``[red]`` in a name is text)."""
    from rich.markup import escape

    return escape(one_line(str(text)))


def json_text(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n"


def dump_json(obj: Any, stream: TextIO | None = None) -> None:
    out = stream or sys.stdout
    out.write(json_text(obj))


def rule_id(check_name: str) -> str:
    return f"atip-trust/{check_name}"


def sarif_log(
    results: list[dict[str, Any]], rules: dict[str, str], *, version: str
) -> dict[str, Any]:
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "atip-trust",
                        "version": version,
                        "informationUri": TOOL_URI,
                        "rules": [
                            {"id": rid, "shortDescription": {"text": text}}
                            for rid, text in sorted(rules.items())
                        ],
                    }
                },
                "results": results,
            }
        ],
    }


def sarif_result(
    rid: str, message: str, uri: str | None, *, level: str = "error", props: dict[str, Any] | None = None
) -> dict[str, Any]:
    res: dict[str, Any] = {"ruleId": rid, "level": level, "message": {"text": message}}
    if uri:
        res["locations"] = [{"physicalLocation": {"artifactLocation": {"uri": uri}}}]
    if props:
        res["properties"] = props
    return res


def check_line(c: Check) -> str:
    line = f"{c.status.upper():5} {c.name}"
    if c.message:
        line += f": {c.message}"
    if c.expected is not None or c.actual is not None:
        line += f" (expected {c.expected!r}, actual {c.actual!r})"
    if c.evidence:
        line += f" [{c.evidence}]"
    return one_line(line)


def reports_to_sarif(reports: list[TrustReport], *, version: str) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    rules: dict[str, str] = {}
    for rep in reports:
        for c in rep.checks:
            if not c.failed:
                continue
            rid = rule_id(c.name)
            rules.setdefault(rid, f"atip-trust check '{c.name}'")
            results.append(
                sarif_result(
                    rid,
                    check_line(c),
                    rep.path,
                    props={
                        "expected": c.expected,
                        "actual": c.actual,
                        "trust_level": rep.trust_level.name,
                        "evidence": c.evidence,
                    },
                )
            )
    return sarif_log(results, rules, version=version)


def print_report_text(rep: TrustReport, stream: TextIO) -> None:
    dec = rep.decision
    head = f"{rep.path}: {rep.trust_level.name}"
    if dec is not None:
        head += f" -> {dec.behavior}"
    if is_terminal(stream):
        from rich.console import Console
        from rich.table import Table

        console = Console(file=stream)
        console.print(f"[bold]{rich_text(head)}[/bold]  sha256:{rich_text(rep.digests.get('sha256', '?'))}",
                      highlight=False)
        table = Table(show_header=True, header_style="bold")
        for col in ("status", "check", "detail", "expected", "actual"):
            table.add_column(col, overflow="fold")
        for c in rep.checks:
            style = {"pass": "green", "fail": "red", "error": "red", "skip": "dim"}[c.status]
            table.add_row(
                f"[{style}]{c.status}[/{style}]",
                rich_text(c.name),
                rich_text(c.message + (f" [{c.evidence}]" if c.evidence else "")),
                "" if c.expected is None else rich_text(c.expected),
                "" if c.actual is None else rich_text(c.actual),
            )
        console.print(table)
        if dec is not None:
            for r in dec.reasons:
                console.print(rich_text(reason_line(r, dec.behavior)), highlight=False)
        return
    stream.write(one_line(head + f"  sha256:{rep.digests.get('sha256', '?')}") + "\n")
    for c in rep.checks:
        stream.write("  " + check_line(c) + "\n")
    if dec is not None:
        for r in dec.reasons:
            stream.write(reason_line(r, dec.behavior) + "\n")


def reason_line(r: Reason, behavior: str | None = None) -> str:
    """One decision reason as one escaped line: ``  [behavior: ]CODE: message (expected …, actual …) [rule]``."""
    line = f"  {behavior}: " if behavior else "  "
    line += f"{r.code}: {r.message}"
    if r.expected is not None or r.actual is not None:
        line += f" (expected {r.expected!r}, actual {r.actual!r})"
    if r.rule:
        line += f" [{r.rule}]"
    return one_line(line)


__all__ = [
    "FORMATS",
    "one_line",
    "rich_text",
    "reason_line",
    "is_terminal",
    "dump_json",
    "json_text",
    "rule_id",
    "sarif_log",
    "sarif_result",
    "check_line",
    "reports_to_sarif",
    "print_report_text",
]
