"""``atip-trust scan [DIR...] [--policy FILE] [--fail-on deny|ask] [--locked]``: the tool surface.

Flags -> ``discovery.discover.discover`` (safe scan, open once, admit, verify before probe) -> render.
One row per tool: its trust named as JSON names it (the trust level, VERIFIED / UNSIGNED / ...; ``failed``
when it could not be evaluated), probe probed / not probed / failed (each with its reason), the decision
and its first reason (the cause); then what the safe scan skipped and why, and a summary grouped by state,
decision and reason. A rich progress bar and table on a terminal, plain lines on a pipe, ``--format
json|sarif`` for CI (also ``--json-output``/``--sarif-output`` beside the text).

Exit codes: 0, unless ``--fail-on deny`` finds a denied or blocked tool or an unsafe directory (1),
``--fail-on ask`` also turns an ask into 3, or ``--locked`` finds drift that needs approval (1); 2
when the scan cannot be evaluated (a policy that does not load, a lock file that does not parse).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from typing import Any

from rich.table import Table

from atip_trust._version import __version__
from atip_trust.cli.common import EXIT_ASK, EXIT_FAIL, EXIT_OK, add_common_options
from atip_trust.cli.discovery_flags import add_discovery_flags, console, run_discovery
from atip_trust.cli.output import (
    add_report_file_flags,
    is_terminal,
    json_text,
    one_line,
    report_files,
    rich_text,
    write_report_files,
)
from atip_trust.cli.sarif import surface_to_sarif
from atip_trust.discovery.discover import ToolRow, ToolSurface, update_local_registry
from atip_trust.discovery.lock import (
    Change,
    compare,
    entries_of,
    read_lock,
    unscanned,
)

#: Skip reasons that are findings (a place someone else can write), not bookkeeping.
UNSAFE_SKIPS = frozenset({"directory_writable", "directory_foreign_owner", "ancestor_writable",
                          "ancestor_foreign_owner", "symlink_into_unsafe_directory", "file_writable",
                          "file_foreign_owner", "symlink_foreign_owner", "symlink_in_unsafe_directory"})


def register(sub: Any) -> None:
    p = add_common_options(sub.add_parser(
        "scan", help="list the tools an agent may see: verify before probing, decide for each",
        description="Scan PATH (or DIRs) safely: skip relative entries and directories others can "
        "write; verify each tool with the policy's anchors before it is ever run; run TOOL --agent "
        "only for tools the policy vouches for (discovery.probe), bounded in time and output. "
        "Exit 0; with --fail-on deny: 1 when a tool is denied or blocked or a directory is unsafe; "
        "--fail-on ask: also 3 for an ask; --locked: 1 when the surface drifted from the lock file.",
    ))
    add_discovery_flags(p)
    p.add_argument("--fail-on", choices=("deny", "ask"), default=None,
                   help="exit non-zero (1 deny, 3 ask) when a tool gets this decision or a stricter one")
    p.add_argument("--locked", action="store_true",
                   help="compare with the lock file: a change that needs approval fails (exit 1)")
    p.add_argument("--update-registry", nargs="?", const="", default=None, metavar="FILE",
                   help="index every tool that verified and has metadata in the local registry.json "
                   "(RFC §4.3; default $XDG_DATA_HOME/agent-tools/registry.json): name -> path and digest, "
                   "an index only, never evidence; admit and scan deny a tool whose bytes differ from the "
                   "digest it records, and this scan pins what verifies now")
    p.add_argument("--surface", action="store_true",
                   help="with --format json: print the tool-surface object (summary; loaded, not probed, "
                   "blocked and skipped entries with reason codes; lock drift) instead of the list of one "
                   "verification object per tool")
    add_report_file_flags(p)
    p.set_defaults(func=run)


def exit_code(surface: ToolSurface, fail_on: str | None, changes: list[Change] | None) -> int:
    rc = EXIT_OK
    if fail_on is not None:
        denied = any(r.decision == "deny" or r.placement == "blocked" for r in surface.rows) or \
            any(s.reason in UNSAFE_SKIPS for s in surface.skipped)
        if denied:
            rc = EXIT_FAIL
        elif fail_on == "ask" and any(r.decision == "ask" for r in surface.rows):
            rc = EXIT_ASK
    if changes is not None and any(c.blocking for c in changes):
        rc = EXIT_FAIL
    return rc


def summary(surface: ToolSurface) -> dict[str, int]:
    return {"tools": len(surface.rows), "loaded": len(surface.loaded),
            "not_probed": len(surface.not_probed), "without_metadata": len(surface.without_metadata),
            "blocked": len(surface.blocked), "skipped": len(surface.skipped),
            "verified": sum(r.trust == "verified" for r in surface.rows),
            "unverified": sum(r.trust == "unverified" for r in surface.rows),
            "failed": sum(r.trust == "failed" for r in surface.rows)}


def run(args: argparse.Namespace) -> int:
    changes: list[Change] | None = None
    old = read_lock(args.lock_file) if args.locked else None  # a bad lock file: exit 2, before work
    surface = run_discovery(args)
    if args.update_registry is not None:
        indexed = update_local_registry(surface, args.update_registry or None)
        sys.stderr.write(f"atip-trust: indexed {len(indexed)} tool(s) in the local registry\n")
    if old is not None:
        changes = [c for c in compare(old, entries_of(surface, include_failed=True),
                                      present=unscanned(surface, old))
                   if c.kind != "unchanged"]
    rc = exit_code(surface, args.fail_on, changes)
    write_report_files(report_files(args), lambda fmt: _render(args, surface, changes, rc, fmt))
    if args.format == "text":
        render_text(surface, changes)
    else:
        sys.stdout.write(_render(args, surface, changes, rc, args.format))
    return rc


def _render(args: argparse.Namespace, surface: ToolSurface, changes: list[Change] | None, rc: int,
            fmt: str) -> str:
    """The scan as JSON or SARIF (``fmt``), as standard output or a report file holds it."""
    if fmt == "json" and not args.surface:
        # docs/contract.md: a list of verification objects, one per tool, with the tool's name.
        return json_text([row.contract_json() for row in surface.rows])
    if fmt == "json":
        return json_text({
            "command": "scan", "summary": summary(surface), "surface": surface.to_json(),
            "lock": None if changes is None else {
                "file": os.fspath(args.lock_file), "drift": any(c.blocking for c in changes),
                "changes": [c.to_json() for c in changes]},
            "exit_code": rc})
    return json_text(surface_to_sarif(  # sarif
        surface.to_json(), [c.to_json() for c in changes or []], lock_file=os.fspath(args.lock_file),
        version=__version__))


def _state(r: ToolRow) -> str:
    """The row's trust as JSON names it: its ``trust_level`` (VERIFIED, UNSIGNED, ...), or ``failed``
    (JSON's ``trust``) for a tool that could not be evaluated (``trust_level`` null)."""
    return r.trust_level or r.trust


def _reason(r: ToolRow) -> str:
    """Why: the decision's first reason code (the cause, policy/decide.py), else the placement's reason."""
    first = r.reasons[0].get("code") if r.reasons else None
    return str(first) if first else r.placement_reason


def _row_cells(r: ToolRow) -> list[str]:
    probe = r.probe if r.probe_reason in ("metadata",) else f"{r.probe} ({r.probe_reason})"
    where = r.path if r.path == r.resolved else f"{r.path} -> {r.resolved}"
    why = r.error or (r.probe_message if r.placement != "loaded" else "")
    return [r.name, _state(r), probe, r.decision, _reason(r), f"{r.placement} ({r.placement_reason})", where,
            why]


def summary_lines(surface: ToolSurface) -> list[str]:
    """The totals, then one line per (state, decision, reason) with its count, most first: what a scan of
    a thousand tools comes to, in the names JSON uses."""
    counts = summary(surface)
    states = Counter(_state(r) for r in surface.rows)
    groups = Counter((_state(r), r.decision, _reason(r)) for r in surface.rows)
    head = (f"{counts['tools']} tools: " + (", ".join(f"{n} {s}" for s, n in states.most_common()) or "none")
            + f"; {counts['loaded']} loaded, {counts['not_probed']} not probed, {counts['without_metadata']} "
            f"without metadata, {counts['blocked']} blocked; {counts['skipped']} skipped")
    width = max((len(s) for s, _, _ in groups), default=0)
    return [head] + [f"  {n:>5}  {s:<{width}}  {d:<5}  {why}" for (s, d, why), n in
                     sorted(groups.items(), key=lambda kv: (-kv[1], kv[0]))]


def render_text(surface: ToolSurface, changes: list[Change] | None) -> None:
    totals = summary_lines(surface)
    lock_lines = [ln for c in changes or [] for ln in c.lines()]
    if is_terminal(sys.stdout):
        screen = console(sys.stdout)
        # The reason codes fit a terminal; the messages and paths are in --format json and on a pipe.
        table = Table("tool", "trust", "probe", "decision", "reason", "surface")
        for r in surface.rows:
            cells = [rich_text(x) for x in _row_cells(r)[:6]]
            colour = "green" if r.trust_level == "VERIFIED" else "red" if _state(r) in ("COMPROMISED", "failed") \
                else "yellow"
            cells[1] = f"[{colour}]{cells[1]}[/]"
            table.add_row(*cells)
        screen.print(table)
        for s in surface.skipped:
            screen.print(f"skipped {rich_text(s.path)}: {rich_text(s.reason)}: {rich_text(s.message)}")
        for line in lock_lines:
            screen.print(rich_text(line))
        screen.print(f"[bold]{rich_text(totals[0])}[/bold]")
        for line in totals[1:]:
            screen.print(rich_text(line))
        return
    out = []
    for r in surface.rows:
        cells = _row_cells(r)
        out.append(one_line("  ".join(cells[:6]) + f"  {cells[6]}" + (f"  {cells[7]}" if cells[7] else "")))
    for s in surface.skipped:
        out.append(one_line(f"skipped  {s.path}  {s.reason}: {s.message}"))
    out.extend(one_line(line) for line in lock_lines)
    out.extend(one_line(line) for line in totals)
    sys.stdout.write("".join(x + "\n" for x in out))
