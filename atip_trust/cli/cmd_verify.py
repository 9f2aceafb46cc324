"""``atip-trust verify ARTIFACT``: signature and provenance verification of one file (CONTRACT.md).

Flag names follow cosign (identity) and slsa-verifier (provenance). Regexps must match the whole
string. Several ``--certificate-identity``/``-regexp`` values mean any one of them.
"""

from __future__ import annotations

import argparse
import re
import sys
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

from atip_trust._version import __version__
from atip_trust.cli.main import EXIT_FAIL, EXIT_OK
from atip_trust.cli.output import (
    dump_json,
    render_verify_text,
    reports_to_sarif,
)
from atip_trust.errors import UsageError
from atip_trust.evaluate import Constraints, Evidence, evaluate
from atip_trust.facts.artifact import Artifact, DigestSubject
from atip_trust.facts.digest import Digest
from atip_trust.facts.report import (
    Decision,
    Reason,
    TrustLevel,
    TrustReport,
)
from atip_trust.gate.verify_policy import apply_policy  # wired by the policy engine
from atip_trust.net.fetch import fetched_provenance
from atip_trust.policy.constraints import choose_trusted_root
from atip_trust.signature.identity import IdentityRule

_DIGEST_RE = re.compile(r"^sha(256|512):")

#: cosign's GitHub flags (v1 extensions) and the v2 claims, as ``--certificate-<name>``.
CLAIM_FLAGS = (
    "github_workflow_trigger",
    "github_workflow_sha",
    "github_workflow_name",
    "github_workflow_repository",
    "github_workflow_ref",
    "source_repository_uri",
    "source_repository_ref",
    "source_repository_digest",
    "build_signer_uri",
    "build_signer_digest",
    "runner_environment",
)


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
    ev.add_argument("--bundle", action="append", default=[], metavar="FILE",
                    help="Sigstore bundle (.json, .sigstore.json) or .jsonl of bundles; repeatable")
    ev.add_argument("--key", action="append", default=[], metavar="FILE",
                    help="trusted PEM public key (key-based signatures and public-key bundles)")
    ev.add_argument("--signature", metavar="FILE", help="detached signature (base64 or raw)")
    ev.add_argument("--metadata", metavar="FILE", help="ATIP metadata or shim making trust claims")
    ev.add_argument("--fetch", action="store_true",
                    help="fetch trust.provenance.url from --metadata over HTTPS (otherwise no network)")
    idg = p.add_argument_group("signer identity (full-match regexps)")
    idg.add_argument("--certificate-identity", action="append", default=[], metavar="ID")
    idg.add_argument("--certificate-identity-regexp", action="append", default=[], metavar="RE")
    idg.add_argument("--certificate-oidc-issuer", metavar="URL")
    idg.add_argument("--certificate-oidc-issuer-regexp", metavar="RE")
    for name in CLAIM_FLAGS:
        idg.add_argument(f"--certificate-{name.replace('_', '-')}", dest=f"claim_{name}",
                         metavar="VALUE")
    pv = p.add_argument_group("provenance (slsa-verifier names)")
    pv.add_argument("--builder-id", help="exact builder id, or a glob on the ref: ...@refs/tags/v*")
    pv.add_argument("--source-uri")
    pv.add_argument("--source-tag")
    pv.add_argument("--source-branch")
    pv.add_argument("--predicate-type")
    pv.add_argument("--min-slsa-level", type=int, metavar="N")
    tr = p.add_argument_group("trust root")
    tr.add_argument("--trusted-root", metavar="FILE", help="a Sigstore trusted_root.json")
    tr.add_argument("--staging", action="store_true", help="use the embedded staging root")
    p.add_argument("--policy", metavar="FILE", help="policy file (signers, builders, requirements)")
    p.add_argument("-q", "--quiet", action="store_true", help="text output: only the verdict line")
    p.set_defaults(func=run)


def identity_rules(args: argparse.Namespace) -> list[IdentityRule]:
    idents = [(i, None) for i in args.certificate_identity] + [
        (None, r) for r in args.certificate_identity_regexp
    ]
    issuer, issuer_re = args.certificate_oidc_issuer, args.certificate_oidc_issuer_regexp
    claims = {
        n: getattr(args, f"claim_{n}") for n in CLAIM_FLAGS if getattr(args, f"claim_{n}") is not None
    }
    if not idents and (issuer or issuer_re or claims):
        raise UsageError(
            "--certificate-identity or --certificate-identity-regexp is required with an issuer "
            "or certificate claim"
        )
    if idents and not (issuer or issuer_re):
        raise UsageError(
            "--certificate-oidc-issuer or --certificate-oidc-issuer-regexp is required with "
            "--certificate-identity"
        )
    if issuer and issuer_re:
        raise UsageError("give --certificate-oidc-issuer or --certificate-oidc-issuer-regexp, not both")
    return [
        IdentityRule(identity=i, identity_regexp=r, issuer=issuer, issuer_regexp=issuer_re,
                     claims=claims)
        for i, r in idents
    ]


def build_constraints(args: argparse.Namespace) -> Constraints:
    if args.min_slsa_level is not None and not 0 <= args.min_slsa_level <= 3:
        # SLSA v1.0 Build track has levels 0-3; RFC §3.2.2's level 4 has no v1.0 counterpart.
        raise UsageError(f"--min-slsa-level must be 0 to 3 (SLSA v1.0 Build levels), got {args.min_slsa_level}")
    return Constraints(
        signers=tuple(identity_rules(args)),
        keys=tuple(Path(k) for k in args.key),
        builder_id=args.builder_id,
        source_uri=args.source_uri,
        source_tag=args.source_tag,
        source_branch=args.source_branch,
        predicate_type=args.predicate_type,
        min_slsa_level=args.min_slsa_level,
    )


def verdict(rep: TrustReport) -> Decision:
    """Without a policy, ``verify`` allows exactly VERIFIED and says why anything else is denied."""
    if rep.trust_level is TrustLevel.VERIFIED:
        return Decision("allow", [Reason("VERIFIED", "all requested checks passed")],
                        report_digest=rep.digest(), rule_source="cli")
    reasons = [
        Reason(f"{rep.trust_level.name}", f"trust level {rep.trust_level.name}, VERIFIED required",
               expected="VERIFIED", actual=rep.trust_level.name)
    ]
    for c in rep.checks:
        if c.failed:
            reasons.append(Reason(f"CHECK_{c.name.upper().replace('.', '_')}_{c.status.upper()}",
                                  c.message or c.name, expected=c.expected, actual=c.actual))
    return Decision("deny", reasons, report_digest=rep.digest(), rule_source="cli")


def run(args: argparse.Namespace) -> int:
    if args.signature and not args.key:
        raise UsageError("--signature needs --key: the public key to verify it with")
    if args.fetch and not args.metadata:
        raise UsageError("--fetch needs --metadata: the document whose trust.provenance.url to fetch")
    constraints = build_constraints(args)
    evidence = Evidence(
        bundles=tuple(Path(b) for b in args.bundle),
        signature=Path(args.signature) if args.signature else None,
        metadata=Path(args.metadata) if args.metadata else None,
    )
    applied = None
    if args.policy:
        applied = apply_policy(args.policy, constraints)  # with the org layers, as admit
        constraints = applied.constraints
        trust_root = applied.trust_root(args.staging, args.trusted_root)
    else:
        trust_root = choose_trusted_root(None, args.trusted_root, args.staging)
    subject: Artifact | DigestSubject
    if _DIGEST_RE.match(args.artifact) and not Path(args.artifact).exists():
        # A digest instead of a file, as `cosign --digest` / `gh attestation verify`: attestations
        # are matched by subject digest; nothing is opened.
        subject = DigestSubject(Digest.parse(args.artifact))
    else:
        # A file, as cosign verify-blob takes it: a bare name is a file here, not a PATH lookup.
        subject = Artifact.open(Path(args.artifact))
    fetched: list[dict[str, Any]] = []
    with subject, ExitStack() as stack:
        if args.fetch:
            # The only network use (CONTRACT.md), and only now that every local input is checked.
            # The fetched bytes are one more untrusted --bundle, read from a private temporary
            # directory that is removed when this block ends.
            material = stack.enter_context(fetched_provenance(args.metadata))
            fetched = [m.to_json() for m in material]
            evidence = replace(evidence, bundles=evidence.bundles + tuple(m.path for m in material))
        rep = evaluate(subject, evidence, constraints, trust_root)
    # With --policy the policy decides (exit 0 only for allow); without, VERIFIED only.
    rep.decision = applied.decide(rep, args.artifact) if applied is not None else verdict(rep)
    out = rep.to_json()
    out["trusted_root"] = {"name": trust_root.name, "digest": trust_root.digest}
    if args.fetch:
        out["fetched"] = fetched
    if args.format == "json":
        dump_json(out)
    elif args.format == "sarif":
        dump_json(reports_to_sarif([rep], version=__version__))
    else:
        render_verify_text(out, sys.stdout, quiet=args.quiet)
    return EXIT_OK if rep.decision.behavior == "allow" else EXIT_FAIL
