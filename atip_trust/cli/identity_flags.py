"""The signer-identity flags ``verify`` and ``admit`` share, with the names users already type.

cosign's names are ours (``--certificate-identity``, ``--certificate-identity-regexp``,
``--certificate-oidc-issuer``, ``--certificate-oidc-issuer-regexp``, ``--certificate-<claim>``); gh
attestation's are aliases where the meaning is the same: ``--cert-identity``, ``--cert-identity-regex``,
``--cert-oidc-issuer``, ``--signer-workflow`` (the workflow that signed: the certificate's SAN, any
ref), ``--deny-self-hosted-runners`` (runner environment ``github-hosted``), ``--owner`` / ``--repo``
(the certificate's source-repository owner / repository URI). Every regexp must match the whole string
(gh's signer-workflow was a prefix match, cli/cli#9507; cosign's regexps are unanchored).
"""

from __future__ import annotations

import argparse
import re
TYPE_CHECKING = False  # typing's constant without importing typing at run time (README "Verdict cache")
if TYPE_CHECKING:
    from typing import Any

from atip_trust.errors import UsageError
from atip_trust.signature.identity import IdentityRule

GITHUB_ISSUER = "https://token.actions.githubusercontent.com"

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

_CLAIM_HELP = {
    "github_workflow_trigger": "event that triggered the signing workflow (e.g. push)",
    "github_workflow_sha": "commit the signing workflow ran at",
    "github_workflow_name": "name of the signing workflow",
    "github_workflow_repository": "owner/repo of the signing workflow (v1 extension)",
    "github_workflow_ref": "git ref of the signing workflow run (e.g. refs/tags/v1.0.0)",
    "source_repository_uri": "source repository URI in the certificate",
    "source_repository_ref": "source repository ref in the certificate",
    "source_repository_digest": "source commit digest in the certificate",
    "build_signer_uri": "build signer URI (the reusable workflow that signed)",
    "build_signer_digest": "build signer digest",
    "runner_environment": "github-hosted or self-hosted; github-hosted refuses self-hosted runners",
}


def add_identity_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("signer identity (full-match regexps; cosign names, gh aliases)")
    g.add_argument("--certificate-identity", "--cert-identity", action="append", default=[],
                   metavar="ID", help="exact signer identity (certificate SAN); repeatable: any one")
    g.add_argument("--certificate-identity-regexp", "--cert-identity-regex", action="append",
                   default=[], metavar="RE", help="signer identity regexp (whole string); repeatable")
    g.add_argument("--certificate-oidc-issuer", "--cert-oidc-issuer", metavar="URL",
                   help="exact OIDC issuer of the signer's certificate")
    g.add_argument("--certificate-oidc-issuer-regexp", metavar="RE",
                   help="OIDC issuer regexp (whole string)")
    g.add_argument("--signer-workflow", action="append", default=[], metavar="[HOST/]OWNER/REPO/PATH",
                   help="gh: the workflow that signed, at any ref (issuer defaults to GitHub Actions)")
    g.add_argument("--deny-self-hosted-runners", action="store_true",
                   help="gh: require runner environment github-hosted")
    g.add_argument("--owner", metavar="OWNER", help="gh: the certificate's source repository owner")
    g.add_argument("--repo", metavar="OWNER/REPO", help="gh: the certificate's source repository")
    for name in CLAIM_FLAGS:
        g.add_argument(f"--certificate-{name.replace('_', '-')}", dest=f"claim_{name}", metavar="VALUE",
                       help=_CLAIM_HELP[name])


def _signer_workflow_regexp(value: str) -> str:
    host, _, rest = value.partition("/")
    if "." not in host:  # OWNER/REPO/PATH: github.com, as gh assumes
        host, rest = "github.com", value
    return f"https://{re.escape(host)}/{re.escape(rest.strip('/'))}@.+"


def identity_rules(args: argparse.Namespace) -> list[IdentityRule]:
    """The flags as signer rules (any one of the identities; all claims must hold)."""
    idents: list[tuple[str | None, str | None]] = [(i, None) for i in args.certificate_identity]
    idents += [(None, r) for r in args.certificate_identity_regexp]
    idents += [(None, _signer_workflow_regexp(w)) for w in args.signer_workflow]
    issuer, issuer_re = args.certificate_oidc_issuer, args.certificate_oidc_issuer_regexp
    if args.signer_workflow and not (issuer or issuer_re):
        issuer = GITHUB_ISSUER
    claims: dict[str, str] = {
        n: getattr(args, f"claim_{n}") for n in CLAIM_FLAGS if getattr(args, f"claim_{n}") is not None
    }
    if args.deny_self_hosted_runners:
        claims["runner_environment"] = "github-hosted"
    if args.owner:
        claims["source_repository_owner_uri"] = f"https://github.com/{args.owner}"
    if args.repo:
        claims["source_repository_uri"] = f"https://github.com/{args.repo}"
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


def signer_entries(rules: list[IdentityRule]) -> list[dict[str, Any]]:
    """The rules as policy ``trust.signers`` entries (schema/policy.schema.json)."""
    out: list[dict[str, Any]] = []
    for r in rules:
        entry: dict[str, Any] = {}
        for key, value in (("identity", r.identity), ("identityRegexp", r.identity_regexp),
                           ("issuer", r.issuer), ("issuerRegexp", r.issuer_regexp)):
            if value is not None:
                entry[key] = value
        if r.claims:
            entry["claims"] = dict(r.claims)
        out.append(entry)
    return out


__all__ = ["CLAIM_FLAGS", "add_identity_flags", "identity_rules", "signer_entries"]
