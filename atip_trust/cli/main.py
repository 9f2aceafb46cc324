"""Entry point: argparse, one catch point, the exit codes of docs/contract.md (docs/architecture.md
practice 5). No error path returns 0; a traceback is printed only with ``-v``.

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
TYPE_CHECKING = False  # typing's constant without importing typing at run time (docs/caching.md)
if TYPE_CHECKING:
    from typing import Any

from atip_trust.cli._deps import admit_mod, traceback
from atip_trust._version import __version__
from atip_trust.cli.output import FORMATS, REPORT_FILE_FLAGS, one_line
from atip_trust.errors import UsageError
from atip_trust.cli.common import (
    COMMON_DEFAULTS,
    EXIT_ASK,
    EXIT_ERROR,
    EXIT_FAIL,
    EXIT_OK,
    add_common_options,
    error_json,
    error_location,
    error_sarif,
    is_interactive,
    render_error,
    report_error,
)


#: Subcommand modules, each with ``register(subparsers)`` (each parser it adds takes
#: ``add_common_options``); loaded in this order.
COMMANDS = ("hash", "metadata", "verify", "verify-vsa", "admit", "exec", "hook", "policy", "cache", "compile",
            "scan", "lock", "trust-root", "doctor", "serve")


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
    "--builder-id-regexp": "use --builder-id with a glob on the ref (…@refs/tags/v*)",
    "--digest-alg": "only verify takes it: sha256 and sha512 are both computed",
    "-d": "gh's --digest-alg: only verify takes it (sha256 and sha512 are both computed)",
    "--bundle-path": "use --bundle",
    "--cert-identity-regexp": "use --certificate-identity-regexp (or gh's --cert-identity-regex)",
    "--no-public-good": "use --trusted-root FILE",
    # gh attestation verify
    "-b": "gh's -b is --bundle: verify, admit and exec take it; scan and hook read --bundle-dir",
    "-o": "gh's -o is --owner: verify, admit, exec and hook take it",
    "-R": "gh's -R is --repo: verify, admit, exec and hook take it",
    "-t": "gh's --template: no Go templates; use --format json (or --json-output FILE) and a JSON tool",
    "--template": "no Go templates; use --format json (or --json-output FILE) and a JSON tool",
    "--jq": "only verify takes gh's --jq; use --format json (or --json-output FILE) and pipe it to jq",
    "--bundle-from-oci": "not supported: download the bundle (gh attestation download) and give --bundle",
    "--hostname": "not needed: nothing is fetched from GitHub; give the bundle with --bundle",
    "--limit": "not needed: nothing is fetched from GitHub; give the bundles with --bundle",
    "-L": "gh's --limit is not needed: nothing is fetched from GitHub; give the bundles with --bundle",
    "--signer-repo": "verify, admit, exec and hook take gh's --signer-repo",
    "--signer-digest": "verify, admit, exec and hook take gh's --signer-digest",
    "--source-ref": "verify, admit, exec and hook take gh's --source-ref",
    "--source-digest": "verify, admit, exec and hook take gh's --source-digest",
    # cosign verify-blob / verify-blob-attestation
    "--new-bundle-format": "not needed: every Sigstore bundle format (v0.1-v0.3) is read as given by --bundle",
    "--use-signed-timestamps": "not needed: a bundle's RFC 3161 timestamps are verified against the trusted "
                               "root's timestamp authorities (--trusted-root)",
    "--ca-roots": "use --trusted-root FILE: a trusted_root.json naming the CA (with its logs); "
                  "cosign trusted-root create makes one",
    "--ca-intermediates": "use --trusted-root FILE: a trusted_root.json with the CA's chain",
    # slsa-verifier verify-artifact
    "--source-versioned-tag": "use --source-tag with the exact tag, or the policy's trust.sources with a "
                              "ref glob (refs/tags/v1.*)",
    "--print-provenance": "only verify takes it; use --format json (or --json-output FILE): the provenance "
                          "facts are under \"provenance\" and each attestation",
}


def _terminal_columns() -> int:
    """shutil.get_terminal_size's answer (COLUMNS, else the terminal, else 80) without importing shutil:
    argparse builds a help formatter for every add_argument, and its default one imports shutil (with
    bz2, lzma and fnmatch) on each start — a few ms of a warm admission (docs/caching.md). Asked
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

    #: Each subcommand's parser by name (set on the top-level parser by ``build_parser``).
    commands: dict[str, argparse.ArgumentParser] = {}

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        return super().parse_known_args(None if args is None else self.values_as_given(list(args)), namespace)

    def values_as_given(self, argv: list[str]) -> list[str]:
        """An option that takes one value takes the next word as that value even when the word starts
        with ``-`` (``admit TOOL --command -la``, ``--certificate-identity-regexp '-bot$'``): argparse
        alone reads such a word as an unknown option and refuses the line. The pair is handed on as
        ``--command=-la``. A word that is itself one of this parser's options stays an option (give
        ``--command=-v`` for that), and nothing after ``--`` or, for a parser whose last positional
        takes the rest (``exec``'s tool arguments, the subcommand), after its first positional is
        touched: those words belong to the tool or the subcommand."""
        rest_follows = any(not a.option_strings and a.nargs in (argparse.REMAINDER, argparse.PARSER)
                           for a in self._actions)
        out, i = list(argv), 0
        while i < len(out):
            word = out[i]
            if word == "--":
                break
            action = self._option_string_actions.get(word)
            if action is not None:
                if action.nargs in (None, 1) and i + 1 < len(out):
                    value = out[i + 1]
                    if value.startswith("-") and value != "--" and not self._is_option(value):
                        out[i:i + 2] = [f"{word}={value}"]
                    else:
                        i += 1  # the value: never taken for a positional below
                i += 1
            elif word.startswith("-") and len(word) > 1:
                i += 1
            elif rest_follows:
                break
            else:
                i += 1
        return out

    def _is_option(self, word: str) -> bool:
        return word in self._option_string_actions or word.split("=", 1)[0] in self._option_string_actions

    def positionals(self, argv: Sequence[str]) -> list[str]:
        """The positional words of ``argv`` as this parser reads them (option values skipped), for an
        audit line of a command line that could not be parsed in full."""
        argv = self.values_as_given(list(argv))
        found: list[str] = []
        i = 0
        while i < len(argv):
            word = argv[i]
            if word == "--":
                found.extend(argv[i + 1:])
                break
            action = self._option_string_actions.get(word)
            if action is not None:
                i += 2 if action.nargs in (None, 1) else 1
                continue
            if not (word.startswith("-") and len(word) > 1):
                found.append(word)
            i += 1
        return found

    def error(self, message: str) -> Any:  # argparse's usage errors: exit 2, no traceback
        if message.startswith("unrecognized arguments:"):
            hints = [f"{flag}: {hint}" for flag, hint in FOREIGN_FLAGS.items()
                     if any(w == flag or w.startswith(flag + "=") for w in message.split()[2:])]
            if hints:
                message = f"{message} ({'; '.join(hints)})"
        raise UsageError(message)


def common_options() -> argparse.ArgumentParser:
    """The shared options on a parser of their own (docs/make_cli_doc.py lists them from it)."""
    return add_common_options(_Parser(add_help=False))


def command_of(argv: Sequence[str]) -> str | None:
    """The subcommand an argument list names: the first word that is one (global options before it
    take no value that could be a command name), or None."""
    for word in argv:
        if word in COMMANDS:
            return word
        if word == "--":
            return None
    return None


#: Parsers built, by ``only``: a process that runs several command lines (``atip-trust serve``, tests
#: calling ``main`` in-process) builds each once; argparse never changes a parser while parsing.
_PARSERS: dict[str | None, argparse.ArgumentParser] = {}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = _PARSERS.get(only)
    if parser is None:
        parser = _PARSERS[only] = _build_parser(only)
    return parser


def _build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or with ``only``, just that subcommand's parser: each subcommand
    module imports its own dependencies (sigstore, jsonschema, ...), so ``hash`` need not pay for
    ``verify``'s (docs/caching.md: start-up is most of a warm admission)."""
    parser = _Parser(
        prog="atip-trust",
        description="Verify what a command-line tool is, who signed it and how it was built, "
        "and decide whether an agent may run it.",
    )
    # Its own options, not the subcommands' parent: set_defaults changes the default of the very action
    # objects it holds, and the sub-parsers' copies must keep SUPPRESS.
    add_common_options(parser)
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
        mod.register(sub)
    parser.commands = dict(sub.choices)
    return parser


class _PipeGuard(io.FileIO):
    """Standard output's (or error's) file descriptor, for which a reader that went away ends the
    output, not the command: on EPIPE the descriptor is pointed at the null device (so later writes,
    and the interpreter's final flush, succeed) and the write reports success. The exit code stays
    the verdict's whenever the reader leaves (docs/cli-guide.md: ``exec … 2>&1 | head -1`` is 1 for a
    refusal every time, not 2 when ``head`` happens to exit before the last reason line)."""

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


class _GuardedStream:
    """Route the process's real standard output (``name="stdout"``) or error through ``_PipeGuard``
    while a command runs.

    Only the interpreter's own stream is wrapped (tests that capture output into a buffer are left
    alone); encoding, error handler and line buffering stay as they were (standard error is line
    buffered, as Python's own). (A class rather than ``contextlib.contextmanager``: contextlib is not
    imported on a warm admission, docs/caching.md.)
    """

    def __init__(self, name: str = "stdout") -> None:
        self.name = name

    def __enter__(self) -> None:
        self.original = original = getattr(sys, self.name)
        self.wrapped: io.TextIOWrapper | None = None
        try:
            own = getattr(sys, f"__{self.name}__")
            self.fd = original.fileno() if original is own and original is not None else -1
        except (AttributeError, ValueError, io.UnsupportedOperation):
            self.fd = -1
        if self.fd < 0:
            return
        original.flush()
        raw = _PipeGuard(self.fd, "w", closefd=False)
        line_buffered = self.name == "stderr" or bool(getattr(original, "line_buffering", False))
        self.wrapped = io.TextIOWrapper(io.BufferedWriter(raw), encoding=original.encoding,
                                        errors=original.errors, line_buffering=line_buffered)
        setattr(sys, self.name, self.wrapped)

    def __exit__(self, *exc: object) -> None:
        wrapped = self.wrapped
        if wrapped is None:
            return
        setattr(sys, self.name, self.original)
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
    with _GuardedStream("stdout"), _GuardedStream("stderr"):
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
    files: dict[str, str] = {}  # --json-output / --sarif-output, for an error before parsing ends
    for i, a in enumerate(argv):  # known before parsing, so parse errors honour --format too
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
    command: str | None = None
    args: argparse.Namespace | None = None
    parser: argparse.ArgumentParser | None = None
    try:
        if argv and argv[0] == "--version":  # nothing else to import
            sys.stdout.write(f"atip-trust {__version__}\n")
            return EXIT_OK
        parser = build_parser(command_of(argv))
        args = parser.parse_args(argv)
        args.cli_argv = tuple(argv)  # the words as given (``serve`` forwards its policy flags verbatim)
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
        if args is None and parser is not None:
            try:
                _audit_usage_error(err, argv, parser)
            except Exception as audit_err:  # noqa: BLE001 - never mask the error being reported
                sys.stderr.write(f"atip-trust: warning: no audit line: {type(audit_err).__name__}\n")
        report_error(err, fmt, command, error_location(err, args), files)
        return EXIT_ERROR


#: Commands whose every refusal leaves an audit line (docs/cli-guide.md, "admit"): a command line that does not
#: parse is one too, a denial (exit 2), recorded with what could be read of it.
AUDITED_COMMANDS = ("admit", "exec", "hook")


def _audit_usage_error(err: BaseException, argv: list[str], parser: argparse.ArgumentParser) -> None:
    name = command_of(argv)
    sub = getattr(parser, "commands", {}).get(name) if name in AUDITED_COMMANDS else None
    if name is None or not isinstance(sub, _Parser):
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
    warning = admit_mod.audit_failure(err, tool=tool, command=command, audit_log=given.get("--audit-log"))
    if warning is not None:
        sys.stderr.write(f"atip-trust: warning: {one_line(warning)}\n")


__all__ = ["main", "build_parser", "is_interactive", "common_options", "report_error", "error_location",
           "error_json", "error_sarif", "render_error"]
