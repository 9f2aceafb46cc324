"""What every subcommand shares, below them all (issue 35 item 4): the docs/contract.md exit codes, the
options accepted at every level of the command line, whether an ask can reach a person, and how an
exit-2 error is rendered (JSON, SARIF, one line on stderr). ``cli/main.py`` (the parser and the one catch
point) and each ``cmd_*`` module import it; it imports neither, so no command imports ``main`` back.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
TYPE_CHECKING = False  # typing's constant without importing typing at run time (docs/caching.md)
if TYPE_CHECKING:
    from typing import Any

from atip_trust.cli._deps import sarif
from atip_trust._version import __version__
from atip_trust.cli.output import FORMATS, json_text, one_line, write_report_files
from atip_trust.errors import (
    AtipTrustError,
    error_code,
    BundleError,
    MetadataError,
    PolicyError,
    TrustRootError,
)
from atip_trust.admission.interactive import can_ask

#: Exit codes: 0 verified/allowed, 1 failed/denied, 2 could not evaluate (also a denial), 3 ask.
EXIT_OK, EXIT_FAIL, EXIT_ERROR, EXIT_ASK = 0, 1, 2, 3

#: Defaults of the shared options, set once on the top-level parser (see the module docstring).
COMMON_DEFAULTS = {"format": "text", "verbose": False}


def add_common_options(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``--format`` and ``-v`` for every level of the command line. Their defaults are SUPPRESS, so a
    sub-parser that does not see the option leaves the value an outer level parsed (argparse copies
    every attribute a sub-parser sets over the outer namespace, defaults included)."""
    parser.add_argument(
        "--format", choices=FORMATS, default=argparse.SUPPRESS, help="output format (default: text)"
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
        help="print a traceback on errors; admit's text also lists every check that did not pass"
    )
    return parser


def is_interactive(args: argparse.Namespace | None = None) -> bool:
    """``--interactive {auto,always,never}`` (``--non-interactive`` is ``never``), read by
    ``admission.admit.can_ask``: auto asks only with a terminal on stdin and outside CI (CI runs with
    ``CI=true`` and no stdin; a policy's ``ask`` then becomes a denial, docs/contract.md)."""
    if args is not None and getattr(args, "non_interactive", False):
        return False
    return can_ask(getattr(args, "interactive", None) or "auto")


#: Which argument names the file an error of each kind is about (the first one given wins).
_ERROR_INPUTS: tuple[tuple[type[AtipTrustError], tuple[str, ...]], ...] = (
    (PolicyError, ("policy", "org_policy", "file")),
    (TrustRootError, ("trusted_root",)),
    (BundleError, ("bundle", "cert", "signature", "key")),
    (MetadataError, ("metadata", "file")),
)
_PRIMARY_INPUTS = ("artifact", "file", "tool", "files", "check")


def _first(value: Any) -> str | None:
    if isinstance(value, list | tuple):
        value = value[0] if value else None
    return value if isinstance(value, str) and value else None


def error_location(err: BaseException, args: argparse.Namespace | None) -> str | None:
    """The file an exit-2 error is about, for SARIF: the error's own path when it names a file (not a
    JSON path), else the input of that kind on the command line, else the command's main input."""
    where = err.path if isinstance(err, AtipTrustError) else None
    if where and not where.startswith("$") and where != "<stdout>":
        return where
    if args is None:
        return None
    names: tuple[str, ...] = ()
    for kind, attrs in _ERROR_INPUTS:
        if isinstance(err, kind):
            names = attrs
            break
    for name in (*names, *_PRIMARY_INPUTS):
        found = _first(getattr(args, name, None))
        if found:
            return found
    return None


def error_json(err: BaseException, command: str | None) -> dict[str, Any]:
    """An exit-2 error as JSON: a denial whose reason is the error (docs/contract.md)."""
    message, where = error_message(err)
    code = error_code(err)
    return {
        "command": command,
        "error": {"code": code, "type": type(err).__name__, "message": message, "path": where},
        "trust_level": None,
        "decision": {"behavior": "deny", "reasons": [{"code": code, "message": message}]},
    }


def error_message(err: BaseException) -> tuple[str, str | None]:
    """The one-line message of an error and the path it names (an unexpected one names its type only)."""
    if isinstance(err, AtipTrustError):
        return err.diagnostics(), err.path
    return f"internal error: {type(err).__name__}: {err} (run with -v for a traceback)", None


def error_sarif(err: BaseException, command: str | None, location: str | None) -> tuple[dict[str, Any], Any]:
    """An exit-2 error as one SARIF result at ``location`` (the working directory when no file is
    known), with its rule: a CI job that uploads the log sees why its gate failed."""
    message, where = error_message(err)
    code = error_code(err)
    rid = sarif.error_rule_id(code)
    result = sarif.sarif_result(rid, message, location, props={"command": command, "path": where},
                                identity=(command, where))
    return result, (rid, sarif.error_rule(code))


def render_error(err: BaseException, fmt: str, command: str | None, location: str | None = None) -> str:
    """The error in ``fmt`` as standard output or a report file holds it ("" for text: stderr has it)."""
    if fmt == "json":
        return json_text(error_json(err, command))
    if fmt == "sarif":
        result, (rid, rule) = error_sarif(err, command, location)
        return json_text(sarif.sarif_log([result], {rid: rule}, version=__version__))
    return ""


def report_error(
    err: BaseException, fmt: str, command: str | None, location: str | None = None,
    files: Mapping[str, str] | None = None,
) -> None:
    """Print an error in the requested format: JSON and SARIF on stdout, text on stderr (one line);
    and into the report files asked for (``--json-output``/``--sarif-output``), so the CI step that
    reads them finds the failure. A report file that cannot be written is one more line on stderr."""
    sys.stdout.write(render_error(err, fmt, command, location))
    try:
        write_report_files(files or {}, lambda f: render_error(err, f, command, location))
    except AtipTrustError as file_err:
        sys.stderr.write(f"atip-trust: error: {one_line(file_err.diagnostics())}\n")
    sys.stderr.write(f"atip-trust: error: {one_line(error_message(err)[0])}\n")


__all__ = ["EXIT_OK", "EXIT_FAIL", "EXIT_ERROR", "EXIT_ASK", "COMMON_DEFAULTS", "add_common_options",
           "is_interactive", "error_location", "error_json", "error_message", "error_sarif", "render_error",
           "report_error"]
