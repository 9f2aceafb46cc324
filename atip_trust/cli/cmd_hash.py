"""``atip-trust hash FILE...``: digests exactly as ``sha256sum``/``sha512sum`` compute them.

Each file is opened once, refused unless it is a regular file (without blocking on a FIFO), and hashed
from that descriptor (``Artifact``). One bad file fails the run (exit 2) but the others are still hashed.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from atip_trust._version import __version__
from atip_trust.cli.main import EXIT_ERROR, EXIT_OK
from atip_trust.cli.output import (
    dump_json,
    one_line,
    sarif_log,
    sarif_result,
)
from atip_trust.errors import AtipTrustError, UntrustedInputError
from atip_trust.facts.artifact import Artifact
from atip_trust.facts.digest import ALGORITHMS

#: SARIF rule ids (stable).
RULE_UNREADABLE = "atip-trust/hash/unreadable"
RULE_NOT_REGULAR = "atip-trust/hash/not-a-regular-file"
_RULES = {
    RULE_UNREADABLE: "the file could not be opened or read",
    RULE_NOT_REGULAR: "the path is not a regular file",
}


def sum_line(digest: str, name: str) -> bytes:
    """One output line as GNU ``sha256sum`` writes it, as bytes.

    A file name containing a backslash, newline or carriage return is escaped (``\\``, ``\n``,
    ``\r``) and the line starts with a backslash, so a name like ``"x\nsha256:<forged>  /usr/bin/gh"``
    cannot forge a second line for whoever parses the output. Other bytes are written raw, as the file
    system has them (``os.fsencode`` undoes Python's surrogate escaping of non-UTF-8 names).
    """
    raw = os.fsencode(name)
    prefix = b""
    if any(c in raw for c in (b"\\", b"\n", b"\r")):
        prefix = b"\\"
        raw = raw.replace(b"\\", b"\\\\").replace(b"\n", b"\\n").replace(b"\r", b"\\r")
    return prefix + digest.encode("ascii") + b"  " + raw + b"\n"


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("hash", parents=[common], help="print sha256:<hex> of files")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--algorithm", choices=ALGORITHMS, default="sha256")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    rc = EXIT_OK
    rows: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for name in args.files:
        try:
            with Artifact.open(name) as art:
                d = art.digest(args.algorithm)
        except AtipTrustError as err:
            # Keep going through the other files; the run fails as a whole.
            rc = EXIT_ERROR
            sys.stderr.write(f"atip-trust: error: {one_line(err.diagnostics())}\n")
            rows.append({"path": name, "error": err.diagnostics()})
            rid = RULE_NOT_REGULAR if isinstance(err, UntrustedInputError) else RULE_UNREADABLE
            results.append(sarif_result(rid, err.diagnostics(), name))
            continue
        rows.append({"path": name, "digest": str(d)})
        if args.format == "text":
            sys.stdout.flush()
            sys.stdout.buffer.write(sum_line(str(d), name))
    if args.format == "json":
        dump_json(rows)
    elif args.format == "sarif":
        used = {r["ruleId"] for r in results}
        dump_json(
            sarif_log(results, {k: v for k, v in _RULES.items() if k in used}, version=__version__)
        )
    return rc
