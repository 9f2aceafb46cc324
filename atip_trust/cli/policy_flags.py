"""The flags ``admit``, ``exec``, ``hook`` and ``serve`` share: the policy and its trust anchors, the evidence
for the one tool decided for, and the audit log and verdict cache switches; and the composed policy they
name. In a module of their own, below the commands, so that no command imports another (issue 35 item 4).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from atip_trust._base.lazy import lazy_import
from atip_trust.admission.admit import load_admission_policy
from atip_trust.cli.identity_flags import add_identity_flags, gh_predicate_type, identity_rules, signer_entries
from atip_trust.facts.report import TrustLevel
from atip_trust.policy.model import Policy

if TYPE_CHECKING:
    from atip_trust.state import audit
else:
    audit = lazy_import("atip_trust.state.audit")  # only for --audit-log's help (its default path)


def add_policy_flags(p: argparse.ArgumentParser) -> None:
    """The policy and its trust anchors, as ``admit``, ``exec`` and ``hook`` take them."""
    p.add_argument("--policy", metavar="FILE", help="local policy (default: the embedded default.json)")
    p.add_argument("--org-policy", metavar="FILE",
                   help="an additional managed policy layer (the standard org policy still applies); "
                   "refused if group/other-writable or not owned by root or you")
    add_identity_flags(p)
    p.add_argument("--trusted-root", "--custom-trusted-root", metavar="FILE", help="a Sigstore trusted_root.json")
    p.add_argument("--staging", action="store_true", help="use the embedded staging root")
    p.add_argument("--min-trust-level", metavar="LEVEL",
                   choices=[lvl.name for lvl in TrustLevel], help="tighten: require at least LEVEL")
    p.add_argument("--predicate-type", metavar="URI",
                   help="tighten: require an attestation of this predicate type (with any of gh's flags "
                   "the default is https://slsa.dev/provenance/v1, as gh's)")


def add_evidence_flags(p: argparse.ArgumentParser) -> None:
    """Evidence for the one tool decided for."""
    p.add_argument("--metadata", metavar="FILE", help="ATIP metadata or shim for the tool")
    p.add_argument("--metadata-bundle", metavar="FILE",
                   help="Sigstore bundle over the metadata file, checked against the policy's signers")
    p.add_argument("-b", "--bundle", action="append", default=[], metavar="FILE",
                   help="Sigstore bundle for the tool (repeatable)")
    p.add_argument("--key", action="append", default=[], metavar="FILE",
                   help="PEM public key; when policy states trust.publicKeys it counts only if listed there")
    p.add_argument("--signature", metavar="FILE", help="detached signature for --key")
    p.add_argument("--shim-dir", metavar="DIR", help="local shim folder, looked up by digest")
    p.add_argument("--contract", metavar="TOOL.md",
                   help="AIP-14 contract for the tool (default: a TOOL.md beside --metadata naming the "
                   "tool); it can only tighten unless verified; its requires.tools are admitted too")
    p.add_argument("--contract-bundle", metavar="FILE",
                   help="Sigstore bundle over the contract (default: TOOL.md.bundle beside it), checked "
                   "against the policy's signers")
    p.add_argument("--vsa", action="append", default=[], metavar="FILE",
                   help="SLSA VSA (a signed verification summary, docs/vsa.md); counts only when signed by "
                   "a verifier in policy trust.verifiers; repeatable")


class _AuditLogAction(argparse.Action):
    """``--audit-log FILE`` (stored as given). Its help names the default path, found by platformdirs
    only when the help is shown: an admission that writes no audit line (or names its file) does not
    pay for that import (docs/caching.md)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)

    @property
    def help(self) -> str:
        return (f"audit log (default: {audit.default_audit_path()}; an org policy's audit.log takes "
                "precedence and cannot be changed)")

    @help.setter
    def help(self, _value: str | None) -> None:
        pass


def add_audit_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--audit-log", metavar="FILE", action=_AuditLogAction)
    p.add_argument("--no-audit", action="store_true", help="do not write an audit line")
    p.add_argument("--no-cache", action="store_true",
                   help="neither read nor write the verdict cache (ATIP_CACHE_DIR; "
                   "docs/caching.md): verify everything again")


def policy_from_args(args: argparse.Namespace) -> Policy:
    """The composed admission policy the flags name (admission/admit.py ``load_admission_policy``)."""
    return load_admission_policy(args.policy, org_policy=args.org_policy,
                                 min_trust_level=args.min_trust_level,
                                 signers=signer_entries(identity_rules(args)),
                                 cache=not getattr(args, "no_cache", False),
                                 predicate_type=gh_predicate_type(args))


__all__ = ["add_audit_flags", "add_evidence_flags", "add_policy_flags", "policy_from_args"]
