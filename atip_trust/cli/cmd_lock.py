"""``atip-trust lock [DIR...] [--policy FILE] [--accept-change TOOL]...``: pin the tool surface.

Discovers as ``scan`` does and writes ``atip-trust.lock`` (discovery/lock.py says what it holds and which
changes need approval). With a lock already there, a change that needs approval (signer or source
changed, unsigned new bytes, a gained destructive or network effect, a new tool, a locked tool still
there that the scan skipped as unsafe) is refused with a
diff, old -> new per field, unless ``--accept-change TOOL`` names that tool; then nothing is written
(exit 1). A tool whose verification failed (tampered bytes) is never locked: exit 1, nothing written.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from atip_trust._version import __version__
from atip_trust.cli.common import EXIT_FAIL, EXIT_OK, add_common_options
from atip_trust.cli.discovery_flags import add_discovery_flags, run_discovery
from atip_trust.cli.output import json_text, one_line
from atip_trust.discovery.lock import compare, entries_of, read_lock, unscanned, write_lock


def register(sub: Any) -> None:
    p = add_common_options(sub.add_parser(
        "lock", help="write atip-trust.lock: each tool's digest, signer, source and effects",
        description="Discover the tools (as scan does) and write the lock file. An update signed by "
        "the same signer from the same source repository passes; a signer or source change, an "
        "unsigned update, a new destructive or network effect, or a new tool needs "
        "--accept-change TOOL. Exit 0 written, 1 refused (nothing written), 2 error.",
    ))
    add_discovery_flags(p)
    p.add_argument("--accept-change", action="append", default=[], metavar="TOOL",
                   help="approve the changes of TOOL (repeatable)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    path = os.fspath(args.lock_file)
    old = read_lock(path) if os.path.lexists(path) else None
    surface = run_discovery(args)
    new = entries_of(surface)
    failed = [r for r in surface.rows if r.trust == "failed"]
    changes = compare(old, new, args.accept_change, present=unscanned(surface, old)) \
        if old is not None else []
    shown = [c for c in changes if c.kind != "unchanged"]
    refused = bool(failed) or any(c.blocking for c in changes)
    if not refused:
        write_lock(path, new, generator=f"atip-trust {__version__}")
    if args.format == "json":
        sys.stdout.write(json_text({
            "command": "lock", "file": path, "written": not refused, "tools": len(new),
            "changes": [c.to_json() for c in shown],
            "failed": [{"name": r.name, "path": r.path, "reason": r.placement_reason, "error": r.error}
                       for r in failed]}))
    else:
        lines = [ln for c in shown for ln in c.lines()]
        lines += [f"{r.name}: not locked: verification failed ({r.placement_reason}) {r.path}"
                  for r in failed]
        lines.append(f"{'refused, nothing written' if refused else 'wrote'} {path}: {len(new)} tools")
        sys.stdout.write("".join(one_line(x) + "\n" for x in lines))
    return EXIT_FAIL if refused else EXIT_OK
