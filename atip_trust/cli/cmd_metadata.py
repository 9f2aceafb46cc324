"""``atip-trust metadata check FILE [--strict] [--digest sha256:<hex>]``.

Validates an ATIP metadata document or shim and prints the trust *claims* it makes (claims, not
expectations: docs/architecture.md principle 1). Exit 0 when valid, 2 when not, naming the JSON path of the first
error. With ``--digest`` the file must be a shim whose ``binary.hash`` is that digest (RFC §4.5), as when
it was looked up by digest in a registry.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rich.console import Console
from rich.table import Table

from atip_trust._version import __version__
from atip_trust.cli.common import EXIT_ERROR, EXIT_OK, add_common_options
from atip_trust.cli.output import (
    dump_json,
    is_terminal,
    one_line,
    rich_text,
)
from atip_trust.cli.sarif import Rule, sarif_log, sarif_result
from atip_trust.errors import AtipTrustError, MalformedInputError, UsageError
from atip_trust.facts.digest import Digest
from atip_trust.facts.metadata import MetadataDocument, load_metadata

#: SARIF rule ids (stable: never reuse one for another meaning).
RULE_INVALID = "atip-trust/metadata/invalid"
RULE_UNREADABLE = "atip-trust/metadata/unreadable"
RULE_WARNING = "atip-trust/metadata/warning"
_RULES = {
    RULE_INVALID: Rule(
        "ATIP metadata or shim is malformed",
        "The document is not valid ATIP metadata or a valid shim (RFC §3, §4): bad JSON, a schema error, "
        "or a binary.hash that differs from the digest it was looked up by.",
        "The message names the JSON path of the first error; fix the document or obtain a valid one."),
    RULE_UNREADABLE: Rule(
        "ATIP metadata or shim could not be read",
        "The file could not be opened or read, is too large, or is not a regular file.",
        "Check the path and its permissions."),
    RULE_WARNING: Rule(
        "ATIP metadata is valid but incomplete",
        "The document validates, with a warning: a missing description, or a field newer than the ATIP "
        "version it declares. --strict turns warnings into errors.",
        "Complete the document, or declare the ATIP version whose fields it uses."),
}


def register(sub: Any) -> None:
    p = add_common_options(sub.add_parser("metadata", help="ATIP metadata and shims"))
    group = p.add_subparsers(dest="metadata_command", metavar="SUBCOMMAND", required=True)
    c = add_common_options(group.add_parser(
        "check",
        help="validate ATIP metadata or a shim and print the trust claims it makes",
        description="Validate an ATIP --agent document or shim (ATIP 0.1 to 0.6) against atip-trust's "
        "schema and print the trust claims it makes. Claims are not verified here.",
    ))
    c.add_argument("file", metavar="FILE", help="ATIP metadata (--agent output) or shim, JSON")
    c.add_argument(
        "--strict",
        action="store_true",
        help="treat warnings (missing descriptions, fields newer than the declared version) as errors",
    )
    c.add_argument(
        "--digest",
        metavar="sha256:<hex>",
        help="the file was looked up by this digest: require binary.hash to equal it",
    )
    c.set_defaults(func=run)


def _parse_digest(text: str | None) -> Digest | None:
    if text is None:
        return None
    try:
        return Digest.parse(text)
    except MalformedInputError as err:
        raise UsageError(f"--digest: {err.message}") from err


def run(args: argparse.Namespace) -> int:
    lookup = _parse_digest(args.digest)  # a usage error is reported by main's catch point
    try:
        doc = load_metadata(args.file, strict=args.strict, lookup_digest=lookup)
    except AtipTrustError as err:
        _print_failure(args, err)
        return EXIT_ERROR
    _print_success(args, doc)
    return EXIT_OK


def _print_failure(args: argparse.Namespace, err: AtipTrustError) -> None:
    message = err.diagnostics()
    if args.format == "json":
        dump_json(
            {
                "path": args.file,
                "valid": False,
                "version": None,
                "kind": None,
                "claims": None,
                "warnings": [],
                "error": {"type": type(err).__name__, "message": err.message, "location": err.path},
            }
        )
    elif args.format == "sarif":
        rid = RULE_INVALID if isinstance(err, MalformedInputError) else RULE_UNREADABLE
        dump_json(
            sarif_log(
                [sarif_result(rid, message, args.file, props={"location": err.path},
                              identity=(err.path,))],
                {rid: _RULES[rid]},
                version=__version__,
            )
        )
    # One line on stderr in every format, so a pipeline's log says why.
    sys.stderr.write(f"atip-trust: error: {one_line(message)}\n")


def _claim_rows(doc: MetadataDocument) -> list[tuple[str, str]]:
    c = doc.claims
    rows: list[tuple[str, str]] = [
        ("source", _show(c.source)),
        ("verified", _show(c.verified)),
        ("checksum", _show(c.checksum)),
    ]
    for label, sig in (("signature", c.signature), ("shim signature", c.shim_signature)):
        if sig is None:
            rows.append((label, "-"))
        else:
            rows.append((f"{label}.type", _show(sig.type)))
            rows.append((f"{label}.identity", _show(sig.identity)))
            rows.append((f"{label}.issuer", _show(sig.issuer)))
            rows.append((f"{label}.bundle", _show(sig.bundle)))
    if c.provenance is None:
        rows.append(("provenance", "-"))
    else:
        rows.append(("provenance.url", _show(c.provenance.url)))
        rows.append(("provenance.format", _show(c.provenance.format)))
        rows.append(("provenance.builder", _show(c.provenance.builder)))
        rows.append(("provenance.slsaLevel", _show(c.provenance.slsa_level)))
    if c.binary is not None:
        rows.append(("binary.hash", _show(c.binary.hash)))
        rows.append(("binary.name", _show(c.binary.name)))
        rows.append(("binary.version", _show(c.binary.version)))
        rows.append(("binary.platform", _show(c.binary.platform)))
    return rows


def _show(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _print_success(args: argparse.Namespace, doc: MetadataDocument) -> None:
    if args.format == "json":
        dump_json(
            {
                "path": args.file,
                "valid": True,
                "version": doc.version,
                "kind": doc.kind,
                "name": doc.name,
                "claims": doc.claims.to_json(),
                "warnings": doc.warnings,
            }
        )
        return
    if args.format == "sarif":
        # Valid: no failed checks, so no results; warnings are notes.
        results = [
            sarif_result(RULE_WARNING, w, args.file, level="note", identity=(w,))
            for w in doc.warnings
        ]
        rules = {RULE_WARNING: _RULES[RULE_WARNING]}
        dump_json(sarif_log(results, rules if results else {}, version=__version__))
        return
    head = f"{args.file}: valid ATIP {doc.version} {doc.kind} for {doc.name or '?'}"
    note = "trust claims (declared by the document, not verified):"
    rows = _claim_rows(doc)
    out = sys.stdout
    if is_terminal(out):
        console = Console(file=out)
        console.print(f"[bold]{rich_text(head)}[/bold]", highlight=False)
        table = Table(title=note, show_header=True, header_style="bold")
        table.add_column("claim")
        table.add_column("value", overflow="fold")
        for key, value in rows:
            table.add_row(rich_text(key), rich_text(value))
        console.print(table)
        for w in doc.warnings:
            console.print(f"[yellow]warning[/yellow]: {rich_text(w)}", highlight=False)
        return
    out.write(one_line(head) + "\n")
    out.write(f"  {note}\n")
    for key, value in rows:
        out.write(one_line(f"    {key}: {value}") + "\n")
    for w in doc.warnings:
        out.write(one_line(f"  warning: {w}") + "\n")
