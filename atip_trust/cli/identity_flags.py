"""The signer-identity flags ``verify`` and ``admit`` share, with the names users already type.

cosign's names are ours (``--certificate-identity``, ``--certificate-identity-regexp``,
``--certificate-oidc-issuer``, ``--certificate-oidc-issuer-regexp``, ``--certificate-<claim>``); gh
attestation verify's flags are accepted with gh's meaning (cli/cli pkg/cmd/attestation/verify,
``newEnforcementCriteria``):

- ``--owner``/``-o`` O and ``--repo``/``-R`` O/R: the certificate's source-repository owner URI
  (``https://github.com/O``; with ``--repo``, O is the repository's owner) and, for ``--repo``, its
  source-repository URI; and, when no other signer identity is given, gh's identity pattern: the SAN
  under ``https://github.com/O/`` (or ``.../O/R/``), case-insensitive, from the GitHub Actions issuer;
- ``--signer-repo`` O/R: the SAN under ``https://github.com/O/R/`` (a reusable workflow's repository);
  ``--signer-workflow`` [HOST/]O/R/PATH: the workflow that signed, at any ref;
- ``--signer-digest``, ``--source-ref``, ``--source-digest``: the certificate's build-signer digest,
  source-repository ref and source-repository digest (``--certificate-build-signer-digest``, ...);
- ``--cert-identity``, ``--cert-identity-regex``, ``--cert-oidc-issuer`` (aliases of cosign's);
  ``--deny-self-hosted-runners``: runner environment ``github-hosted``.

The issuer defaults to GitHub Actions' whenever the identity comes from gh's flags, and any of gh's own
flags (``GH_FLAGS``) makes ``https://slsa.dev/provenance/v1`` the required predicate type unless
``--predicate-type`` is given, as gh enforces it: a signed attestation of another kind (a PyPI publish
attestation, an SBOM) is then not enough. Every regexp must match the whole string (gh's signer-workflow
was a prefix match, cli/cli#9507; cosign's regexps are unanchored).
"""

from __future__ import annotations

import argparse
import re
from typing import TYPE_CHECKING, Any

from atip_trust._base.lazy import lazy_import
from atip_trust.errors import UsageError
from atip_trust.signature.identity import IdentityRule

if TYPE_CHECKING:
    from atip_trust.provenance import slsa
else:
    # Only with gh's identity flags: the provenance model is not loaded by a warm admission.
    slsa = lazy_import("atip_trust.provenance.slsa")


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


#: gh attestation verify's own spellings: any one of them means gh's semantics (module docstring).
GH_FLAGS = frozenset({
    "--cert-identity", "--cert-identity-regex", "--cert-oidc-issuer", "--signer-workflow", "--signer-repo",
    "--signer-digest", "--source-ref", "--source-digest", "--deny-self-hosted-runners", "--owner", "-o",
    "--repo", "-R",
})

#: gh's flag for each certificate claim flag of cosign's that means the same.
_GH_CLAIM_ALIASES = {"build_signer_digest": "--signer-digest", "source_repository_ref": "--source-ref",
                     "source_repository_digest": "--source-digest"}


class _Spelled(argparse.Action):
    """Store a value (append, when the default is a list; ``True`` for a flag of ``nargs=0``) and note
    which of gh's spellings the command line used (``gh_flags``): gh's flags carry gh's defaults."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if self.nargs == 0:
            values = True
        if isinstance(self.default, list):
            values = [*(getattr(namespace, self.dest, None) or []), values]
        setattr(namespace, self.dest, values)
        if option_string in GH_FLAGS:
            namespace.gh_flags = (*getattr(namespace, "gh_flags", ()), option_string)


def add_identity_flags(p: argparse.ArgumentParser) -> None:
    p.set_defaults(gh_flags=())
    g = p.add_argument_group("signer identity (full-match regexps; cosign names, gh's flags with gh's "
                             "meaning)")
    g.add_argument("--certificate-identity", "--cert-identity", action=_Spelled, default=[],
                   metavar="ID", help="exact signer identity (certificate SAN); repeatable: any one")
    g.add_argument("--certificate-identity-regexp", "--cert-identity-regex", action=_Spelled,
                   default=[], metavar="RE", help="signer identity regexp (whole string); repeatable")
    g.add_argument("--certificate-oidc-issuer", "--cert-oidc-issuer", action=_Spelled, metavar="URL",
                   help="exact OIDC issuer of the signer's certificate")
    g.add_argument("--certificate-oidc-issuer-regexp", metavar="RE",
                   help="OIDC issuer regexp (whole string)")
    g.add_argument("--signer-workflow", action=_Spelled, default=[], metavar="[HOST/]OWNER/REPO/PATH",
                   help="gh: the workflow that signed, at any ref (issuer defaults to GitHub Actions)")
    g.add_argument("--signer-repo", action=_Spelled, metavar="OWNER/REPO",
                   help="gh: the repository of the (reusable) workflow that signed: the SAN is under "
                   "https://github.com/OWNER/REPO/ (issuer defaults to GitHub Actions)")
    g.add_argument("--deny-self-hosted-runners", action=_Spelled, nargs=0, default=False,
                   help="gh: require runner environment github-hosted")
    g.add_argument("-o", "--owner", action=_Spelled, metavar="OWNER",
                   help="gh: the certificate's source repository owner; alone, also gh's identity: a "
                   "workflow of OWNER's, from GitHub Actions")
    g.add_argument("-R", "--repo", action=_Spelled, metavar="OWNER/REPO",
                   help="gh: the certificate's source repository (and its owner); alone, also gh's "
                   "identity: a workflow of that repository, from GitHub Actions")
    for name in CLAIM_FLAGS:
        spellings = [f"--certificate-{name.replace('_', '-')}"]
        if name in _GH_CLAIM_ALIASES:
            spellings.append(_GH_CLAIM_ALIASES[name])
        g.add_argument(*spellings, dest=f"claim_{name}", action=_Spelled, metavar="VALUE",
                       help=_CLAIM_HELP[name])


def gh_predicate_type(args: argparse.Namespace) -> str | None:
    """The predicate type gh would enforce: ``--predicate-type`` if given, else SLSA provenance v1 when
    any of gh's flags was used, else None (no filter: any SLSA provenance, as cosign and slsa-verifier)."""
    given: str | None = getattr(args, "predicate_type", None)
    if given is not None or not getattr(args, "gh_flags", ()):
        return given
    return slsa.SLSA_PROVENANCE_V1


def _github_under(path: str) -> str:
    """gh's SAN pattern for an owner or repository: any workflow under ``https://github.com/PATH/``
    (GitHub's names are case-insensitive, and gh matches them so)."""
    return f"(?i)https://github\\.com/{re.escape(path.strip('/'))}/.+"


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
    if args.signer_repo:
        if idents:  # gh: --cert-identity, --cert-identity-regex, --signer-repo, --signer-workflow: one
            raise UsageError("give --signer-repo or a signer identity (--certificate-identity, "
                             "--certificate-identity-regexp, --signer-workflow), not both")
        idents = [(None, _github_under(args.signer_repo))]
    repo = args.repo.strip("/") if args.repo else None
    if repo is not None and repo.count("/") != 1:
        raise UsageError(f"--repo expects OWNER/REPO, actual {args.repo!r}")
    owner = repo.split("/")[0] if repo else args.owner
    gh_identity = bool(args.signer_workflow or args.signer_repo)
    if not idents and (repo or owner):
        # gh's default signer: a workflow of the repository (or of the owner), newEnforcementCriteria.
        idents = [(None, _github_under(repo or owner or ""))]
        gh_identity = True
    issuer, issuer_re = args.certificate_oidc_issuer, args.certificate_oidc_issuer_regexp
    if gh_identity and not (issuer or issuer_re):
        issuer = GITHUB_ISSUER
    claims: dict[str, str] = {
        n: getattr(args, f"claim_{n}") for n in CLAIM_FLAGS if getattr(args, f"claim_{n}") is not None
    }
    if args.deny_self_hosted_runners:
        claims["runner_environment"] = "github-hosted"
    if owner:
        claims["source_repository_owner_uri"] = f"https://github.com/{owner}"
    if repo:
        claims["source_repository_uri"] = f"https://github.com/{repo}"
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


def builder_signers() -> list[IdentityRule]:
    """slsa-verifier's signer when only provenance flags are given (``verify-artifact
    --provenance-path P --source-uri S``): a trusted builder of the trusted-builder map
    (policies/trusted-builders.json), i.e. a certificate issued to one of its signer workflows by its
    issuer. The builder the provenance names must then be in the map too (the caller requires a
    level), and the map's signer binding ties it to this certificate (provenance/slsa.py)."""
    rules: list[IdentityRule] = []
    for entry in slsa.BuilderMap.default().entries:
        binding = entry.binding
        if binding.issuer is None:
            continue  # an entry without an issuer names no keyless signer (key-bound builders)
        rules += [IdentityRule(identity_regexp=w.regexp, issuer=binding.issuer) for w in binding.workflows]
    return rules


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


__all__ = ["CLAIM_FLAGS", "GH_FLAGS", "add_identity_flags", "builder_signers", "gh_predicate_type", "identity_rules",
           "signer_entries"]
