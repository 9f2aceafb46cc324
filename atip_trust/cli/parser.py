"""How ``atip-trust`` reads its words: the parser class every level of the command line is built from
(no prefix matching, an option's value may start with ``-``, hints for the flags of cosign, gh and
slsa-verifier), and its help formatter. Below the commands and the one catch point (cli/common.py), so
that ``main`` and ``serve`` build the same parser from the same commands (issue 35 item 4).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Sequence
from typing import Any

from atip_trust.errors import UsageError

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


class Formatter(argparse.HelpFormatter):
    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         width if width is not None else _terminal_columns() - 2)


class Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # No prefix matching: "--cert" must not silently mean "--certificate-identity".
        kwargs["allow_abbrev"] = False
        kwargs.setdefault("formatter_class", Formatter)
        super().__init__(*args, **kwargs)

    #: Each subcommand's parser by name (set on the top-level parser by cli/common.py ``build_parser``).
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


__all__ = ["FOREIGN_FLAGS", "Formatter", "Parser"]
