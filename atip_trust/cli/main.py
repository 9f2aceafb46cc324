"""Entry point: argparse, one catch point, CONTRACT.md exit codes (STYLE.md practice 5).

Exit codes: 0 verified/allowed, 1 failed/denied, 2 could not evaluate (also a denial), 3 ask.
No error path returns 0; a traceback is printed only with ``-v``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any

from atip_trust._version import __version__
from atip_trust.cli.output import (
    FORMATS,
    dump_json,
    one_line,
    sarif_log,
    sarif_result,
)
from atip_trust.errors import AtipTrustError, UsageError, error_code
from atip_trust.gate.interactive import can_ask

EXIT_OK, EXIT_FAIL, EXIT_ERROR, EXIT_ASK = 0, 1, 2, 3

#: Subcommand modules, each with ``register(subparsers, common)``; loaded in this order.
COMMANDS = ("hash", "metadata", "verify", "admit", "policy", "cache")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse's usage errors: exit 2, no traceback
        raise UsageError(message)


def common_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--format", choices=FORMATS, default="text", help="output format (default: text)"
    )
    common.add_argument(
        "-v", "--verbose", action="store_true", help="print a traceback on errors"
    )
    return common


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="atip-trust",
        description="Verify what a command-line tool is, who signed it and how it was built, "
        "and decide whether an agent may run it.",
    )
    parser.add_argument("--version", action="version", version=f"atip-trust {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    common = common_options()
    for name in COMMANDS:
        try:
            mod = importlib.import_module(f"atip_trust.cli.cmd_{name}")
        except ModuleNotFoundError as err:
            if err.name == f"atip_trust.cli.cmd_{name}":
                continue  # subcommand not built yet
            raise
        mod.register(sub, common)
    return parser


def is_interactive(args: argparse.Namespace | None = None) -> bool:
    """``--interactive {auto,always,never}`` (``--non-interactive`` is ``never``), read by
    ``gate.admit.can_ask``: auto asks only with a terminal on stdin and outside CI (CI runs with
    ``CI=true`` and no stdin; a policy's ``ask`` then becomes a denial, CONTRACT.md)."""
    if args is not None and getattr(args, "non_interactive", False):
        return False
    return can_ask(getattr(args, "interactive", None) or "auto")


def report_error(err: BaseException, fmt: str, command: str | None) -> None:
    """Print an error in the requested format: JSON and SARIF on stdout, text on stderr (one line)."""
    if isinstance(err, AtipTrustError):
        message = err.diagnostics()
        where = err.path
    else:
        message = f"internal error: {type(err).__name__}: {err} (run with -v for a traceback)"
        where = None
    code = error_code(err)
    if fmt == "json":
        dump_json(
            {
                "command": command,
                "error": {"code": code, "type": type(err).__name__, "message": message, "path": where},
                "trust_level": None,
                "decision": {"behavior": "deny", "reasons": [{"code": code, "message": message}]},
            }
        )
    elif fmt == "sarif":
        rid = f"atip-trust/error/{code.lower()}"
        dump_json(
            sarif_log([sarif_result(rid, message, None)], {rid: code}, version=__version__)
        )
    sys.stderr.write(f"atip-trust: error: {one_line(message)}\n")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    verbose = "-v" in argv or "--verbose" in argv
    fmt = "text"
    for i, a in enumerate(argv):  # known before parsing, so parse errors honour --format too
        if a == "--format" and i + 1 < len(argv) and argv[i + 1] in FORMATS:
            fmt = argv[i + 1]
        elif a.startswith("--format=") and a.split("=", 1)[1] in FORMATS:
            fmt = a.split("=", 1)[1]
    command: str | None = None
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        command = args.command
        if command is None:
            parser.print_help(sys.stderr)
            return EXIT_ERROR
        rc = int(args.func(args))
        if rc not in (EXIT_OK, EXIT_FAIL, EXIT_ERROR, EXIT_ASK):
            return EXIT_ERROR
        return rc
    except SystemExit as exc:  # --help / --version exit 0 through argparse; keep theirs
        return int(exc.code) if isinstance(exc.code, int) else EXIT_ERROR
    except KeyboardInterrupt:
        sys.stderr.write("atip-trust: interrupted\n")
        return EXIT_ERROR
    except BaseException as err:  # noqa: BLE001 - the one catch point: nothing escapes as exit 0
        if verbose:
            traceback.print_exc()
        report_error(err, fmt, command)
        return EXIT_ERROR


__all__ = ["main", "build_parser", "is_interactive", "common_options", "report_error"]
