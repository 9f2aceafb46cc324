"""Entry point: argparse, one catch point, CONTRACT.md exit codes (STYLE.md practice 5).

Exit codes: 0 verified/allowed, 1 failed/denied, 2 could not evaluate (also a denial), 3 ask.
No error path returns 0; a traceback is printed only with ``-v``.

A reader that leaves early (``atip-trust verify ... | grep -q VERIFIED``, ``| head -1``) is not an
error of ours: the first write that meets a closed pipe points standard output at the null device, and
the command runs to its verdict, whose exit code is the one returned. This is handled here, once, for
every subcommand; a full disk or another write error is still an error (exit 2).

``--format`` and ``-v`` are accepted at every level of the command line (``policy --format json check
F`` and ``policy check F --format sarif``): the shared options default to "not given" in each
sub-parser, so a level that does not repeat them keeps what an outer level parsed.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import io
import os
import sys
from collections.abc import Callable, Sequence
TYPE_CHECKING = False  # typing's constant without importing typing at run time (README "Verdict cache")
if TYPE_CHECKING:
    from typing import Any

from atip_trust._base.lazy import lazy_import
from atip_trust._version import __version__
from atip_trust.cli.output import (
    FORMATS,
    dump_json,
    one_line,
)
from atip_trust.errors import (
    AtipTrustError,
    error_code,
    BundleError,
    EnvironmentFailure,
    MetadataError,
    PolicyError,
    TrustRootError,
    UntrustedInputError,
    UsageError,
)
from atip_trust.gate.interactive import can_ask

# SARIF only for an error reported with ``--format sarif``, a traceback only with ``-v`` (_base/lazy.py).
if TYPE_CHECKING:
    import traceback

    from atip_trust.cli import sarif
else:
    sarif = lazy_import("atip_trust.cli.sarif")
    traceback = lazy_import("traceback")

EXIT_OK, EXIT_FAIL, EXIT_ERROR, EXIT_ASK = 0, 1, 2, 3

#: Subcommand modules, each with ``register(subparsers, common)``; loaded in this order.
COMMANDS = ("hash", "metadata", "verify", "admit", "exec", "hook", "policy", "cache", "compile", "scan", "lock",
            "trust-root")


#: Flags of cosign, gh attestation and slsa-verifier that atip-trust spells differently or lacks: an
#: unknown flag among them gets a hint naming ours instead of only "unrecognized arguments".
FOREIGN_FLAGS = {
    "--certificate-chain": "atip-trust reads the chain from the bundle and the trusted root (--trusted-root)",
    # verify takes --cert with --signature; this hint is for the subcommands that do not (admit).
    "--cert": "only verify takes --cert with --signature; give a Sigstore bundle with --bundle",
    "--insecure-ignore-tlog": ("not supported: every signature needs its transparency-log proof, unless "
                               "the trusted root has no log (GitHub's) or the policy states "
                               "trust.requireTransparencyLog: false (RFC 3161 timestamps then stand)"),
    "--insecure-ignore-sct": "not supported: every certificate needs its SCT",
    "--offline": "atip-trust is always offline unless --fetch is given",
    "--rekor-url": "not needed: log entries are verified offline against --trusted-root",
    "--source-digest": "use --certificate-source-repository-digest",
    "--builder-id-regexp": "use --builder-id with a glob on the ref (…@refs/tags/v*)",
    "--digest-alg": "sha256 and sha512 are both computed",
    "--bundle-path": "use --bundle",
    "--cert-identity-regexp": "use --certificate-identity-regexp (or gh's --cert-identity-regex)",
    "--signer-repo": "use --certificate-identity-regexp on the signer workflow, or --repo",
    "--no-public-good": "use --trusted-root FILE",
}


def _terminal_columns() -> int:
    """shutil.get_terminal_size's answer (COLUMNS, else the terminal, else 80) without importing shutil:
    argparse builds a help formatter for every add_argument, and its default one imports shutil (with
    bz2, lzma and fnmatch) on each start — a few ms of a warm admission (README "Verdict cache"). Asked
    of the terminal once per value of COLUMNS, not once per argument."""
    return _columns(os.environ.get("COLUMNS", "0"))


@functools.lru_cache(maxsize=4)
def _columns(env: str) -> int:
    try:
        columns = int(env)
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns if sys.__stdout__ else 0
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class _Formatter(argparse.HelpFormatter):
    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         width if width is not None else _terminal_columns() - 2)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # No prefix matching: "--cert" must not silently mean "--certificate-identity".
        kwargs["allow_abbrev"] = False
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> Any:  # argparse's usage errors: exit 2, no traceback
        if message.startswith("unrecognized arguments:"):
            hints = [f"{flag}: {hint}" for flag, hint in FOREIGN_FLAGS.items()
                     if any(w == flag or w.startswith(flag + "=") for w in message.split()[2:])]
            if hints:
                message = f"{message} ({'; '.join(hints)})"
        raise UsageError(message)


#: Defaults of the shared options, set once on the top-level parser (see the module docstring).
COMMON_DEFAULTS = {"format": "text", "verbose": False}


def common_options() -> argparse.ArgumentParser:
    """``--format`` and ``-v`` for every level of the command line. Their defaults are SUPPRESS, so a
    sub-parser that does not see the option leaves the value an outer level parsed (argparse copies
    every attribute a sub-parser sets over the outer namespace, defaults included)."""
    common = _Parser(add_help=False)
    common.add_argument(
        "--format", choices=FORMATS, default=argparse.SUPPRESS, help="output format (default: text)"
    )
    common.add_argument(
        "-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
        help="print a traceback on errors"
    )
    return common


def command_of(argv: Sequence[str]) -> str | None:
    """The subcommand an argument list names: the first word that is one (global options before it
    take no value that could be a command name), or None."""
    for word in argv:
        if word in COMMANDS:
            return word
        if word == "--":
            return None
    return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or with ``only``, just that subcommand's parser: each subcommand
    module imports its own dependencies (sigstore, jsonschema, ...), so ``hash`` need not pay for
    ``verify``'s (README "Verdict cache": start-up is most of a warm admission)."""
    common = common_options()
    parser = _Parser(
        prog="atip-trust",
        description="Verify what a command-line tool is, who signed it and how it was built, "
        "and decide whether an agent may run it.",
        # Its own copy: set_defaults changes the default of the very action objects it holds, and the
        # sub-parsers' copies must keep SUPPRESS.
        parents=[common_options()],
    )
    parser.set_defaults(**COMMON_DEFAULTS)
    parser.add_argument("--version", action="version", version=f"atip-trust {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS if only is None else (only,):
        try:
            module = f"atip_trust.cli.cmd_{name.replace('-', '_')}"
            mod = importlib.import_module(module)
        except ModuleNotFoundError as err:
            if err.name == module:
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


def report_error(
    err: BaseException, fmt: str, command: str | None, location: str | None = None
) -> None:
    """Print an error in the requested format: JSON and SARIF on stdout, text on stderr (one line).

    In SARIF the error is a result like any denial, located at ``location`` (the working directory
    when no file is known), so a CI job that uploads the log sees why its gate failed.
    """
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
        rid = sarif.error_rule_id(code)
        result = sarif.sarif_result(rid, message, location, props={"command": command, "path": where},
                              identity=(command, where))
        dump_json(sarif.sarif_log([result], {rid: sarif.error_rule(code)}, version=__version__))
    sys.stderr.write(f"atip-trust: error: {one_line(message)}\n")


class _PipeGuard(io.FileIO):
    """Standard output's file descriptor, for which a reader that went away ends the output, not the
    command: on EPIPE the descriptor is pointed at the null device (so later writes, and the
    interpreter's final flush, succeed) and the write reports success."""

    reader_gone = False

    def write(self, data: Any) -> int:
        try:
            return super().write(data) or 0
        except BrokenPipeError:
            self.reader_gone = True
            _stdout_to_devnull(self.fileno())
            return len(memoryview(data).cast("B"))


def _stdout_to_devnull(fd: int) -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, fd)
        finally:
            os.close(devnull)
    except OSError:
        pass


class _GuardedStdout:
    """Route the process's real standard output through ``_PipeGuard`` while a command runs.

    Only the interpreter's own stdout is wrapped (tests that capture output into a buffer are left
    alone); encoding, error handler and line buffering stay as they were. (A class rather than
    ``contextlib.contextmanager``: contextlib is not imported on a warm admission, README "Verdict
    cache".)
    """

    def __enter__(self) -> None:
        self.original = original = sys.stdout
        self.wrapped: io.TextIOWrapper | None = None
        try:
            self.fd = original.fileno() if original is sys.__stdout__ and original is not None else -1
        except (AttributeError, ValueError, io.UnsupportedOperation):
            self.fd = -1
        if self.fd < 0:
            return
        original.flush()
        raw = _PipeGuard(self.fd, "w", closefd=False)
        self.wrapped = sys.stdout = io.TextIOWrapper(
            io.BufferedWriter(raw), encoding=original.encoding, errors=original.errors,
            line_buffering=bool(getattr(original, "line_buffering", False)),
        )

    def __exit__(self, *exc: object) -> None:
        wrapped = self.wrapped
        if wrapped is None:
            return
        sys.stdout = self.original
        try:
            wrapped.flush()
        except (OSError, ValueError):
            # main() reported the failed write; what is still buffered is lost either way, so let it
            # go to the null device rather than fail again here or at the interpreter's exit.
            _stdout_to_devnull(self.fd)
        try:
            wrapped.detach()
        except (OSError, ValueError):
            pass


def main(argv: Sequence[str] | None = None, *, started: Callable[[], None] | None = None) -> int:
    """Run one command line; ``started`` is called once its command is about to run (cli/launch.py)."""
    with _GuardedStdout():
        rc = _main(list(sys.argv[1:] if argv is None else argv), started)
        try:
            sys.stdout.flush()
        except (OSError, ValueError) as err:  # a full disk, say: the output the verdict needs is lost
            sys.stderr.write(f"atip-trust: error: cannot write to standard output: {one_line(str(err))}\n")
            return EXIT_ERROR
        return rc


def _main(argv: list[str], started: Callable[[], None] | None = None) -> int:
    verbose = "-v" in argv or "--verbose" in argv
    fmt = "text"
    for i, a in enumerate(argv):  # known before parsing, so parse errors honour --format too
        if a == "--format" and i + 1 < len(argv) and argv[i + 1] in FORMATS:
            fmt = argv[i + 1]
        elif a.startswith("--format=") and a.split("=", 1)[1] in FORMATS:
            fmt = a.split("=", 1)[1]
    command: str | None = None
    args: argparse.Namespace | None = None
    try:
        if argv and argv[0] == "--version":  # nothing else to import
            sys.stdout.write(f"atip-trust {__version__}\n")
            return EXIT_OK
        parser = build_parser(command_of(argv))
        args = parser.parse_args(argv)
        command = args.command
        if command is None:
            parser.print_help(sys.stderr)
            return EXIT_ERROR
        if started is not None:  # the command's modules are loaded and its arguments parsed (launch.py)
            started()
        rc = int(args.func(args))
        if rc not in (EXIT_OK, EXIT_FAIL, EXIT_ERROR, EXIT_ASK):
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
        _stdout_to_devnull(sys.__stdout__.fileno() if sys.__stdout__ is not None else 1)
        return EXIT_ERROR
    except BaseException as err:  # noqa: BLE001 - the one catch point: nothing escapes as exit 0
        if verbose:
            traceback.print_exc()
        report_error(err, fmt, command, error_location(err, args))
        return EXIT_ERROR


__all__ = ["main", "build_parser", "is_interactive", "common_options", "report_error", "error_location"]
