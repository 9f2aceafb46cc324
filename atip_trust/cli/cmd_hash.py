"""``atip-trust hash FILE...``: digests exactly as ``sha256sum``/``sha512sum`` compute them."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..artifact import Artifact
from ..digest import ALGORITHMS
from ..errors import AtipTrustError
from .main import EXIT_ERROR, EXIT_OK, report_error
from .output import dump_json


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("hash", parents=[common], help="print sha256:<hex> of files")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--algorithm", choices=ALGORITHMS, default="sha256")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    rc = EXIT_OK
    rows: list[dict[str, Any]] = []
    for name in args.files:
        try:
            with Artifact.open(name) as art:
                d = art.digest(args.algorithm)
        except AtipTrustError as err:
            # Keep going through the other files; the run fails as a whole.
            rc = EXIT_ERROR
            if args.format == "text":
                report_error(err, "text", "hash")
            rows.append({"path": name, "error": err.diagnostics()})
            continue
        rows.append({"path": name, "digest": str(d)})
        if args.format == "text":
            sys.stdout.write(f"{d}  {name}\n")
    if args.format != "text":
        dump_json(rows)
    return rc
