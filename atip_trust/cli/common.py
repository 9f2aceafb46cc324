"""What every subcommand shares, below them all (issue 35 item 4): the docs/contract.md exit codes, the
options accepted at every level of the command line, whether an ask can reach a person, how an exit-2
error is rendered (JSON, SARIF, one line on stderr), and the one catch point (docs/architecture.md
practice 5): ``run`` parses a command line with the parser built from the commands it is given, runs
the command and turns anything that escapes into exit 2. No error path returns 0; a traceback is
printed only with ``-v``.

``cli/main.py`` gives ``run`` every subcommand; ``serve`` gives it the ones a request may run
(service/app.py), so both answer through the same parser and catch point. This module imports no
command and not ``main``: no command imports ``main`` back, or another command.

``--format`` and ``-v`` are accepted at every level of the command line (``policy --format json check
F`` and ``policy check F --format sarif``): the shared options default to "not given" in each
sub-parser, so a level that does not repeat them keeps what an outer level parsed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from atip_trust._base.lazy import lazy_import
from atip_trust._version import __version__
from atip_trust.admission.interactive import can_ask
from atip_trust.cli.output import FORMATS, REPORT_FILE_FLAGS, json_text, one_line, write_report_files
from atip_trust.cli.parser import Parser
from atip_trust.cli.streams import GuardedStream, to_devnull
from atip_trust.errors import (
    AtipTrustError,
    BundleError,
    MetadataError,
    PolicyError,
    TrustRootError,
    error_code,
)

if TYPE_CHECKING:
    import traceback

    from atip_trust.admission import admit
    from atip_trust.cli import sarif
else:
    traceback = lazy_import("traceback")  # only with -v
    admit = lazy_import("atip_trust.admission.admit")  # an unparsed command line's audit line only
    sarif = lazy_import("atip_trust.cli.sarif")  # only for SARIF (the warm paths print JSON or text)

#: Exit codes: 0 verified/allowed, 1 failed/denied, 2 could not evaluate (also a denial), 3 ask.
EXIT_OK, EXIT_FAIL, EXIT_ERROR, EXIT_ASK = 0, 1, 2, 3
#: ``exec``: the tool tried to leave the boundary its verified effects give it (EFFECT_VIOLATION,
#: execution/exec.py ``EXIT_VIOLATION``, docs/sandbox.md).
EXIT_VIOLATION = 4

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


def common_options() -> argparse.ArgumentParser:
    """The shared options on a parser of their own (docs/make_cli_doc.py lists them from it)."""
    return add_common_options(Parser(add_help=False))


def command_of(argv: Sequence[str], names: Collection[str]) -> str | None:
    """The subcommand of ``names`` an argument list names: the first word that is one (global options
    before it take no value that could be a command name), or None."""
    for word in argv:
        if word in names:
            return word
        if word == "--":
            return None
    return None


#: Parsers built, by the subcommand given (or by every name, for the whole command line): a process
#: that runs several command lines (``atip-trust serve``, tests calling ``main`` in-process) builds
#: each once; argparse never changes a parser while parsing.
_PARSERS: dict[tuple[str, ...], argparse.ArgumentParser] = {}


def build_parser(commands: Mapping[str, ModuleType], only: str | None = None) -> argparse.ArgumentParser:
    """The command line of ``commands`` (name -> its module, each with ``register(subparsers)`` adding
    a parser that takes ``add_common_options``), or with ``only``, just that subcommand's parser: each
    subcommand module imports its own dependencies (sigstore, jsonschema, ...), so ``hash`` need not
    pay for ``verify``'s (docs/caching.md: start-up is most of a warm admission)."""
    key = (only,) if only is not None else tuple(commands)
    parser = _PARSERS.get(key)
    if parser is None:
        parser = _PARSERS[key] = _build_parser(commands, only)
    return parser


def _build_parser(commands: Mapping[str, ModuleType], only: str | None) -> argparse.ArgumentParser:
    parser = Parser(
        prog="atip-trust",
        description="Verify what a command-line tool is, who signed it and how it was built, "
        "and decide whether an agent may run it.",
    )
    # Its own options, not the subcommands' parent: set_defaults changes the default of the very action
    # objects it holds, and the sub-parsers' copies must keep SUPPRESS.
    add_common_options(parser)
    parser.set_defaults(**COMMON_DEFAULTS)
    parser.add_argument("--version", action="version", version=f"atip-trust {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name in commands if only is None else (only,):
        commands[name].register(sub)
    parser.commands = dict(sub.choices)
    return parser


def run(argv: Sequence[str], commands: Mapping[str, ModuleType], *,
        started: Callable[[], None] | None = None) -> int:
    """Run one command line of ``commands``, standard output and error guarded against a reader that
    leaves (cli/streams.py); ``started`` is called once its command is about to run (cli/launch.py)."""
    with GuardedStream("stdout"), GuardedStream("stderr"):
        rc = _run(list(argv), commands, started)
        try:
            sys.stdout.flush()
        except (OSError, ValueError) as err:  # a full disk, say: the output the verdict needs is lost
            sys.stderr.write(f"atip-trust: error: cannot write to standard output: {one_line(str(err))}\n")
            return EXIT_ERROR
        return rc


def _early_format(argv: list[str]) -> tuple[str, dict[str, str]]:
    """``--format`` and the report files (``--json-output``/``--sarif-output``) as given, known before
    parsing, so that an error before parsing ends honours them too."""
    fmt = "text"
    files: dict[str, str] = {}
    for i, a in enumerate(argv):
        if a == "--":
            break
        flag, eq, value = a.partition("=")
        if not eq and i + 1 < len(argv):
            value = argv[i + 1]
        if flag == "--format" and value in FORMATS:
            fmt = value
        for kind, spelled in REPORT_FILE_FLAGS.items():
            if flag == spelled and value:
                files[kind] = value
    return fmt, files


def _run(argv: list[str], commands: Mapping[str, ModuleType], started: Callable[[], None] | None) -> int:
    verbose = "-v" in argv or "--verbose" in argv
    fmt, files = _early_format(argv)
    command: str | None = None
    args: argparse.Namespace | None = None
    parser: argparse.ArgumentParser | None = None
    try:
        if argv and argv[0] == "--version":  # nothing else to import
            sys.stdout.write(f"atip-trust {__version__}\n")
            return EXIT_OK
        parser = build_parser(commands, command_of(argv, commands))
        args = parser.parse_args(argv)
        args.cli_argv = tuple(argv)  # the words as given (``serve`` forwards its policy flags verbatim)
        command = args.command
        if command is None:
            parser.print_help(sys.stderr)
            return EXIT_ERROR
        if started is not None:  # the command's modules are loaded and its arguments parsed (launch.py)
            started()
        rc = int(args.func(args))
        if rc not in (EXIT_OK, EXIT_FAIL, EXIT_ERROR, EXIT_ASK, EXIT_VIOLATION):
            return EXIT_ERROR
        return rc
    except SystemExit as exc:  # --help / --version exit 0 through argparse; keep theirs
        return int(exc.code) if isinstance(exc.code, int) else EXIT_ERROR
    except KeyboardInterrupt:
        sys.stderr.write("atip-trust: interrupted\n")
        return EXIT_ERROR
    except BrokenPipeError:
        # Standard output was not the process's own (no guard): the reader left before the verdict
        # could be known, which is not a verdict; stay quiet and fail closed.
        to_devnull(sys.__stdout__.fileno() if sys.__stdout__ is not None else 1)
        return EXIT_ERROR
    except BaseException as err:  # noqa: BLE001 - the one catch point: nothing escapes as exit 0
        if verbose:
            traceback.print_exc()
        if args is None and parser is not None:
            try:
                _audit_usage_error(err, argv, parser, commands)
            except Exception as audit_err:  # noqa: BLE001 - never mask the error being reported
                sys.stderr.write(f"atip-trust: warning: no audit line: {type(audit_err).__name__}\n")
        report_error(err, fmt, command, error_location(err, args), files)
        return EXIT_ERROR


#: Commands whose every refusal leaves an audit line (docs/cli-guide.md, "admit"): a command line that does not
#: parse is one too, a denial (exit 2), recorded with what could be read of it.
AUDITED_COMMANDS = ("admit", "exec", "hook")


def _audit_usage_error(err: BaseException, argv: list[str], parser: argparse.ArgumentParser,
                       commands: Collection[str]) -> None:
    name = command_of(argv, commands)
    sub = getattr(parser, "commands", {}).get(name) if name in AUDITED_COMMANDS else None
    if name is None or not isinstance(sub, Parser):
        return
    words = argv[argv.index(name) + 1:]
    ours = words[:words.index("--")] if "--" in words else words
    if "--no-audit" in ours:
        return
    given: dict[str, str] = {}
    read = sub.values_as_given(ours)
    for i, word in enumerate(read):
        flag, eq, value = word.partition("=")
        if flag in ("--audit-log", "--command") and (eq or i + 1 < len(read)):
            given[flag] = value if eq else read[i + 1]
    found = sub.positionals(words)
    tool = found[0] if found and name != "hook" else None
    command: list[str] | str | None = found[1:] if name == "exec" else given.get("--command")
    warning = admit.audit_failure(err, tool=tool, command=command, audit_log=given.get("--audit-log"))
    if warning is not None:
        sys.stderr.write(f"atip-trust: warning: {one_line(warning)}\n")


__all__ = ["AUDITED_COMMANDS", "COMMON_DEFAULTS", "EXIT_ASK", "EXIT_ERROR", "EXIT_FAIL", "EXIT_OK", "EXIT_VIOLATION",
           "add_common_options", "build_parser", "command_of", "common_options", "error_json", "error_location",
           "error_message", "error_sarif", "is_interactive", "render_error", "report_error", "run"]
