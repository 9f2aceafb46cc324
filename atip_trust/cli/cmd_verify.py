"""``atip-trust verify ARTIFACT``: signature and provenance verification of one file (README).

Flag names follow cosign (identity) and slsa-verifier (provenance). Regexps must match the whole
string. Several ``--certificate-identity``/``-regexp`` values mean any one of them.
"""

from __future__ import annotations

import argparse
import sys
TYPE_CHECKING = False  # typing's constant without importing typing at run time (README "Verdict cache")
if TYPE_CHECKING:
    from typing import Any

from atip_trust._version import __version__
from atip_trust.cli.main import EXIT_FAIL, EXIT_OK
from atip_trust.cli.output import (
    dump_json,
    render_verify_text,
    reports_to_sarif,
)
from atip_trust._base.lazy import lazy_import
from atip_trust.cli.identity_flags import add_identity_flags, identity_rules
from atip_trust.errors import UsageError
from atip_trust.gate.verify import verify
from atip_trust.inputs import Constraints

if TYPE_CHECKING:
    import pathlib
else:
    pathlib = lazy_import("pathlib")  # only for --key files (README "Verdict cache")


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "verify",
        parents=[common],
        help="verify an artifact's signatures and provenance",
        description="Verify one artifact against Sigstore bundles, a key and signature, and SLSA "
        "provenance; assign its trust level. Exit 0 VERIFIED, 1 anything else, 2 cannot evaluate.",
    )
    p.add_argument("artifact", metavar="ARTIFACT",
                   help="file to verify, or sha256:<hex> to verify attestations by subject digest")
    ev = p.add_argument_group("evidence")
    ev.add_argument("--bundle", "--provenance-path", action="append", default=[], metavar="FILE",
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
    pv.add_argument("--predicate-type", help="attestation predicate type to require")
    pv.add_argument("--min-slsa-level", type=int, metavar="N",
                    help="minimum SLSA Build level (0-3), from the trusted-builder map only")
    tr = p.add_argument_group("trust root")
    tr.add_argument("--trusted-root", "--custom-trusted-root", metavar="FILE", help="a Sigstore trusted_root.json")
    tr.add_argument("--staging", action="store_true", help="use the embedded staging root")
    p.add_argument("--policy", metavar="FILE", help="policy file (signers, builders, requirements)")
    p.add_argument("-q", "--quiet", action="store_true", help="text output: only the verdict line")
    p.add_argument("--no-cache", action="store_true",
                   help="neither read nor write the verdict cache (ATIP_CACHE_DIR; README "
                   "\"Verdict cache\"): verify everything again")
    p.set_defaults(func=run)


def build_constraints(args: argparse.Namespace) -> Constraints:
    if args.min_slsa_level is not None and not 0 <= args.min_slsa_level <= 3:
        # SLSA v1.0 Build track has levels 0-3; RFC §3.2.2's level 4 has no v1.0 counterpart.
        raise UsageError(f"--min-slsa-level must be 0 to 3 (SLSA v1.0 Build levels), got {args.min_slsa_level}")
    return Constraints(
        signers=tuple(identity_rules(args)),
        keys=tuple(pathlib.Path(k) for k in args.key),
        builder_id=args.builder_id,
        source_uri=args.source_uri,
        source_tag=args.source_tag,
        source_branch=args.source_branch,
        predicate_type=args.predicate_type,
        min_slsa_level=args.min_slsa_level,
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
    if args.fetch and not args.metadata:
        raise UsageError("--fetch needs --metadata: the document whose trust.provenance.url and "
                         "trust.integrity.signature.bundle to fetch")
    result = verify(
        args.artifact,
        constraints=build_constraints(args),
        bundles=args.bundle,
        signature=args.signature,
        certificate=args.cert,
        metadata=args.metadata,
        policy=args.policy,
        trusted_root=args.trusted_root,
        staging=args.staging,
        fetch=args.fetch,
        cache=not args.no_cache,
    )
    if args.format == "json":
        dump_json(result.to_json())
    elif args.format == "sarif":
        dump_json(reports_to_sarif([result.report], version=__version__))
    else:
        render_verify_text(result.to_json(), sys.stdout, quiet=args.quiet)
    return EXIT_OK if result.exit_code == 0 else EXIT_FAIL
