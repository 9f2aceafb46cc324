"""``atip-trust verify ARTIFACT``: signature and provenance verification of one file (docs/cli-guide.md).

Flag names follow cosign (identity) and slsa-verifier (provenance). Regexps must match the whole
string. Several ``--certificate-identity``/``-regexp`` values mean any one of them.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from typing import TYPE_CHECKING, Any

from atip_trust._base.lazy import lazy_import
from atip_trust._version import __version__
from atip_trust.admission.options import VerifyOptions
from atip_trust.admission.verify import Verification, provenance_statement, verify
from atip_trust.cli import jq
from atip_trust.cli.common import (
    EXIT_ERROR,
    EXIT_FAIL,
    EXIT_OK,
    add_common_options,
    error_json,
    error_location,
    error_message,
    error_sarif,
)
from atip_trust.cli.identity_flags import (
    add_identity_flags,
    builder_signers,
    gh_predicate_type,
    identity_rules,
)
from atip_trust.cli.output import (
    add_report_file_flags,
    check_line,
    json_text,
    one_line,
    render_verify_text,
    report_files,
    write_report_files,
)
from atip_trust.cli.vsa_flags import add_emit_flags, check_emit_flags, emit
from atip_trust.errors import EnvironmentFailure, UntrustedInputError, UsageError
from atip_trust.evaluation.inputs import Constraints, Evidence

if TYPE_CHECKING:
    import pathlib

    from atip_trust.cli import sarif
else:
    pathlib = lazy_import("pathlib")  # only for --key files (docs/caching.md)
    sarif = lazy_import("atip_trust.cli.sarif")  # only for SARIF


def register(sub: Any) -> None:
    p = add_common_options(sub.add_parser(
        "verify",
        help="verify an artifact's signatures and provenance",
        description="Verify one artifact against Sigstore bundles, a key and signature, and SLSA "
        "provenance; assign its trust level. Exit 0 VERIFIED, 1 anything else, 2 cannot evaluate.",
    ))
    p.add_argument("artifact", metavar="ARTIFACT", nargs="+",
                   help="file to verify, or sha256:<hex> to verify attestations by subject digest; "
                   "several: each is verified with the same evidence and flags, a result each, and the "
                   "exit code is the worst")
    ev = p.add_argument_group("evidence")
    ev.add_argument("-b", "--bundle", "--provenance-path", action="append", default=[], metavar="FILE",
                    help="Sigstore bundle (.json, .sigstore.json) or .jsonl of bundles; repeatable")
    ev.add_argument("--key", action="append", default=[], metavar="FILE",
                    help="trusted PEM public key (key-based signatures and public-key bundles)")
    ev.add_argument("--signature", metavar="FILE",
                    help="detached signature: with --key (base64 or raw), or with --cert (base64, as "
                    "cosign sign-blob --output-signature writes it)")
    ev.add_argument("--cert", "--certificate", metavar="FILE",
                    help="signing certificate of --signature (PEM or cosign's base64 of PEM; cosign "
                    "sign-blob --output-certificate). Checked, but a certificate and signature carry "
                    "no log entry: alone they fail 'tlog'; give the bundle with them (--bundle)")
    ev.add_argument("--metadata", metavar="FILE", help="ATIP metadata or shim making trust claims")
    ev.add_argument("--fetch", action="store_true",
                    help="fetch trust.integrity.signature.bundle and trust.provenance.url from "
                    "--metadata over HTTPS (otherwise no network; ATIP_OFFLINE forbids it)")
    add_identity_flags(p)
    pv = p.add_argument_group("provenance (slsa-verifier names)")
    pv.add_argument("--builder-id", help="exact builder id, or a glob on the ref: ...@refs/tags/v*")
    pv.add_argument("--source-uri", help="source repository the provenance must name (github.com/o/r)")
    pv.add_argument("--source-tag", help="tag the provenance must name as its source ref")
    pv.add_argument("--source-branch", help="branch the provenance must name as its source ref")
    pv.add_argument("--predicate-type", help="attestation predicate type to require (default: any SLSA "
                    "provenance; with any of gh's flags, https://slsa.dev/provenance/v1 as gh requires)")
    pv.add_argument("--min-slsa-level", type=int, metavar="N",
                    help="minimum SLSA Build level (0-3), from the trusted-builder map only")
    tr = p.add_argument_group("trust root")
    tr.add_argument("--trusted-root", "--custom-trusted-root", metavar="FILE", help="a Sigstore trusted_root.json")
    tr.add_argument("--staging", action="store_true", help="use the embedded staging root")
    p.add_argument("--policy", metavar="FILE", help="policy file (signers, builders, requirements)")
    add_emit_flags(p)
    p.add_argument("-q", "--quiet", action="store_true", help="text output: only the verdict line")
    p.add_argument("-d", "--digest-alg", "--digest", choices=("sha256", "sha512"), metavar="ALG",
                   help="gh's digest algorithm (sha256 or sha512): accepted; both are always computed and "
                   "an attestation subject matches by either")
    p.add_argument("--jq", metavar="EXPR",
                   help="gh: print the values EXPR selects from the JSON report, one per line (paths "
                   f"only: {jq.SUBSET})")
    p.add_argument("--print-provenance", action="store_true",
                   help="slsa-verifier: print the verified provenance statement (in-toto JSON, one line "
                   "per VERIFIED artifact) on standard output; the text report goes to standard error")
    add_report_file_flags(p)
    p.add_argument("--no-cache", action="store_true",
                   help="neither read nor write the verdict cache (ATIP_CACHE_DIR; "
                   "docs/caching.md): verify everything again")
    p.set_defaults(func=run)


def build_constraints(args: argparse.Namespace) -> Constraints:
    if args.min_slsa_level is not None and not 0 <= args.min_slsa_level <= 3:
        # SLSA v1.0 Build track has levels 0-3; RFC §3.2.2's level 4 has no v1.0 counterpart.
        raise UsageError(f"--min-slsa-level must be 0 to 3 (SLSA v1.0 Build levels), got {args.min_slsa_level}")
    signers = identity_rules(args)
    min_level = args.min_slsa_level
    provenance_only = any(v is not None for v in (args.builder_id, args.source_uri, args.source_tag,
                                                   args.source_branch))
    if provenance_only and not (signers or args.key or args.policy):
        # slsa-verifier's verify-artifact names no signer: a trusted builder signs (identity_flags
        # builder_signers), and the builder the provenance names must be one the map trusts.
        signers = builder_signers()
        min_level = 1 if min_level is None else min_level
    return Constraints(
        signers=tuple(signers),
        keys=tuple(pathlib.Path(k) for k in args.key),
        builder_id=args.builder_id,
        source_uri=args.source_uri,
        source_tag=args.source_tag,
        source_branch=args.source_branch,
        predicate_type=gh_predicate_type(args),
        min_slsa_level=min_level,
    )


def run(args: argparse.Namespace) -> int:
    if args.cert and args.key:
        raise UsageError("give --cert (keyless: a certificate) or --key (a public key) with "
                         "--signature, not both")
    if args.cert and not args.signature:
        raise UsageError("--cert needs --signature: the detached signature its key made")
    if args.signature and not (args.key or args.cert):
        raise UsageError("--signature needs --key (the public key to verify it with) or --cert (the "
                         "signing certificate)")
    if args.print_provenance and args.fetch:
        raise UsageError("--print-provenance prints a statement from the --bundle files; give the bundle "
                         "instead of --fetch")
    if args.jq is not None and args.print_provenance:
        raise UsageError("give --jq or --print-provenance, not both")
    if args.fetch and not args.metadata:
        raise UsageError("--fetch needs --metadata: the document whose trust.provenance.url and "
                         "trust.integrity.signature.bundle to fetch")
    constraints = build_constraints(args)
    check_emit_flags(args)
    results: list[Verification | BaseException] = []
    for artifact in args.artifact:
        try:
            results.append(_verify_one(args, artifact, constraints))
        except (UntrustedInputError, EnvironmentFailure) as err:
            if len(args.artifact) == 1:
                raise  # one artifact: the one catch point reports it (cli/common.py)
            results.append(err)  # about this artifact: the others still get their result
    _shared_pass(args, constraints, results)
    if args.emit_vsa and isinstance(results[0], Verification):
        emit(args, results[0], constraints)  # whatever the verdict (docs/vsa.md)
    write_report_files(report_files(args), lambda fmt: _render(args, results, fmt))
    if args.jq is not None:
        sys.stdout.write(jq.jq_text(json.loads(_render(args, results, "json")), args.jq))
    elif args.print_provenance:
        _print_provenance(args, results)
    elif args.format == "text":
        _write_text(args, results, sys.stdout)
    else:
        sys.stdout.write(_render(args, results, args.format))
    return max(_exit_code(res) for res in results)


def _write_text(args: argparse.Namespace, results: list[Verification | BaseException], stream: Any) -> None:
    for res in results:
        if isinstance(res, BaseException):
            sys.stderr.write(f"atip-trust: error: {one_line(error_message(res)[0])}\n")
        else:
            render_verify_text(res.to_json(), stream, quiet=args.quiet)


def _print_provenance(args: argparse.Namespace, results: list[Verification | BaseException]) -> None:
    """slsa-verifier's ``--print-provenance``: the statement of each VERIFIED artifact's passing
    provenance on standard output, the report on standard error."""
    _write_text(args, results, sys.stderr)
    for res in results:
        if isinstance(res, Verification) and res.exit_code == 0:
            statement = provenance_statement(res.report, args.bundle)
            if statement is not None:
                sys.stdout.write(json.dumps(statement, separators=(",", ":")) + "\n")


def _verify_one(args: argparse.Namespace, artifact: str, constraints: Constraints,
                shared_with: tuple[str, ...] = ()) -> Verification:
    return verify(
        artifact,
        policy=args.policy,
        evidence=Evidence(bundles=args.bundle, signature=args.signature, certificate=args.cert,
                          metadata=args.metadata),
        options=VerifyOptions(constraints=constraints, trusted_root=args.trusted_root, staging=args.staging,
                              fetch=args.fetch, cache=not args.no_cache, shared_with=shared_with),
    )


def _shared_pass(args: argparse.Namespace, constraints: Constraints,
                 results: list[Verification | BaseException]) -> None:
    """Several artifacts, one set of evidence (docs/ci.md): an artifact found COMPROMISED only by a
    bundle that signs or names another artifact of this run is verified again knowing those digests,
    so that bundle is about that artifact (UNSIGNED here, not COMPROMISED). Only failed ones are
    verified twice; a real mismatch (a digest no artifact of the run has) stays COMPROMISED."""
    if args.fetch:
        return  # fetched material is new each time: what was fetched is not fetched again
    digests = {i: f"sha256:{r.report.digests['sha256']}" for i, r in enumerate(results)
               if isinstance(r, Verification) and r.report.digests.get("sha256")}
    for i, r in enumerate(results):
        if not isinstance(r, Verification) or r.report.trust_level.name != "COMPROMISED":
            continue
        others = tuple(sorted({d for j, d in digests.items() if j != i} - {digests.get(i)}))
        if others:
            results[i] = _verify_one(args, args.artifact[i], constraints, others)


def _exit_code(res: Verification | BaseException) -> int:
    """Worst first: could not evaluate (2) > failed (1) > verified (0)."""
    if isinstance(res, BaseException):
        return EXIT_ERROR
    return EXIT_OK if res.exit_code == 0 else EXIT_FAIL


def _render(args: argparse.Namespace, results: list[Verification | BaseException], fmt: str) -> str:
    """JSON: the result object (docs/contract.md), or for several artifacts ``{"results": [...]}`` in the
    order given, an error as its error object; SARIF: one log, a result per failed check, denial
    reason and error; text: each report as ``--format text`` prints it."""
    if fmt == "json":
        docs = [error_json(r, "verify") if isinstance(r, BaseException) else r.to_json() for r in results]
        if len(args.artifact) == 1:
            return json_text(docs[0])
        return json_text({"command": "verify", "results": docs,
                          "exit_code": max(_exit_code(r) for r in results)})
    if fmt == "sarif":
        found: list[dict[str, Any]] = []
        rules: dict[str, Any] = {}
        for artifact, r in zip(args.artifact, results, strict=True):
            if isinstance(r, BaseException):
                result, (rid, rule) = error_sarif(r, "verify", error_location(r, None) or artifact)
                found.append(result)
                rules[rid] = rule
            else:
                more, used = sarif.report_results(r.report.to_json(decision=r.decision), check_line)
                found.extend(more)
                rules.update(used)
        return json_text(sarif.sarif_log(found, rules, version=__version__))
    out = io.StringIO()
    for r in results:
        if not isinstance(r, BaseException):
            render_verify_text(r.to_json(), out, quiet=args.quiet)
    return out.getvalue()
