"""How far a tool's metadata (or shim) may be trusted for *this* artifact (principle 1, 10).

Declared effects may relax gating, and a declared ``trust.source`` may satisfy policy's
``requirements.metadataSources``, only when both hold:

* **signed**: a Sigstore bundle over the metadata's *exact bytes* verifies against signers policy names
  (registry signers for a shim found by digest, RFC §4.9; the policy's ``trust.signers`` for
  ``--metadata-bundle``). The bytes are those of the ``MetadataDocument`` that was parsed: the file is
  read once (``metadata.load_metadata``), the signature is checked over ``doc.raw`` and the claims and
  effects come from ``doc.doc``, so a file swapped between reads cannot pair one document's signature
  with another document's effects.
* **bound to this artifact**: the signed document names this artifact's digest (``binary.hash`` or
  ``trust.integrity.checksum``, RFC §3.2.2 / §4.5) and this tool's name. A validly signed document about
  another tool lends nothing; one with no digest at all cannot say which binary it describes. A digest
  that differs is tampering and is already COMPROMISED by evaluation/evaluate.py's claims step.

Each outcome is a ``Check`` (``metadata.signature``, ``metadata.binding``) with expected and actual values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from atip_trust._base.files import read_capped
from atip_trust._base.limits import LIMITS
from atip_trust._base.record import Record, field
from atip_trust.evaluation.evaluate import Constraints, Evidence, evaluate
from atip_trust.facts.aip14 import ToolContract, parse_tool_md
from atip_trust.facts.artifact import DigestSubject
from atip_trust.facts.digest import Digest, hash_bytes
from atip_trust.facts.metadata import MetadataDocument
from atip_trust.facts.report import Check, TrustLevel, TrustReport
from atip_trust.signature.identity import IdentityRule
from atip_trust.signature.trustroot import TrustRoot

if TYPE_CHECKING:
    from atip_trust.facts.digest import Algorithm


class MetadataTrust(Record):
    """The verdict on one metadata document for one artifact."""

    #: Signed by a signer policy names AND bound to this artifact's digest and name.
    verified: bool
    #: Digest of the bytes the signature was checked over (``doc.sha256``), None when none was checked.
    signed_digest: Digest | None = None
    #: ``trust.source`` of a verified document (RFC §3.2.2 source values); None unless ``verified``.
    source: str | None = None
    checks: list[Check] = field(default_factory=list)


def verify_signed_bytes(
    raw: bytes, bundle: Path, rules: Sequence[IdentityRule], trust_root: TrustRoot
) -> tuple[bool, Digest, TrustReport]:
    """Does ``bundle`` sign exactly ``raw``, by one of ``rules``? The bytes in hand are hashed (never
    a file read again), and the bundle is verified over that digest as any artifact's would be."""
    signed = hash_bytes(raw, "sha256")
    rep = evaluate(DigestSubject(signed), Evidence(bundles=(bundle,)), Constraints(signers=tuple(rules)),
                   trust_root)
    return rep.trust_level is TrustLevel.VERIFIED, signed, rep


def _signature_check(
    doc: MetadataDocument,
    bundle: Path | None,
    signers: Sequence[Any],
    trust_root: TrustRoot,
    who: str,
) -> tuple[bool, Digest | None, Check]:
    name = doc.source_name
    if bundle is None:
        return False, None, Check("metadata.signature", "skip",
                                  f"{doc.kind} has no signature bundle: its effects are claims only",
                                  expected=f"a bundle signed by {who}", actual=None, evidence=name)
    rules = tuple(IdentityRule.coerce(s) for s in signers)
    if not rules:
        return False, None, Check("metadata.signature", "fail",
                                  f"policy names no {who}: nobody can vouch for this {doc.kind}",
                                  expected=f"{who} in policy", actual=None, evidence=name)
    ok, signed, rep = verify_signed_bytes(doc.raw, bundle, rules, trust_root)  # the parsed bytes
    return ok, signed, Check(
        "metadata.signature", "pass" if ok else "fail",
        f"{doc.kind} bytes are signed by {who}" if ok else
        f"{doc.kind} signature does not verify against {who} ({rep.trust_level.name})",
        expected=[r.describe() for r in rules],
        actual=f"{rep.signature.identity} (issuer {rep.signature.issuer}) over {signed}"
        if rep.signature.identity else f"{rep.signature.status} over {signed}",
        evidence=str(bundle))


def _binding_check(
    doc: MetadataDocument, digests: Mapping[Algorithm, Digest], tool_name: str
) -> Check:
    claims = doc.claims
    declared = [d for d in (claims.binary.hash if claims.binary else None, claims.checksum) if d is not None]
    have = [str(digests[a]) for a in sorted(digests)]
    if not declared:
        return Check("metadata.binding", "fail",
                     f"the {doc.kind} names no binary digest (binary.hash or trust.integrity.checksum): "
                     "it cannot say which binary it describes", expected=have, actual=None,
                     evidence=doc.source_name)
    for want in declared:
        if digests.get(want.algorithm) != want:
            return Check("metadata.binding", "fail", f"the {doc.kind} describes another binary",
                         expected=have, actual=str(want), evidence=doc.source_name)
    if doc.name_problem(tool_name) is not None:
        return Check("metadata.binding", "fail", f"the {doc.kind} describes another tool",
                     expected=tool_name, actual=doc.name, evidence=doc.source_name)
    return Check("metadata.binding", "pass", f"the {doc.kind} names this binary and tool",
                 expected=have, actual=[str(d) for d in declared], evidence=doc.source_name)


def verify_metadata(
    doc: MetadataDocument,
    bundle: Path | None,
    signers: Sequence[Any],
    trust_root: TrustRoot,
    *,
    digests: Mapping[Algorithm, Digest],
    tool_name: str,
    signer_kind: Literal["registry", "policy"],
) -> MetadataTrust:
    """Check ``doc``'s own signature over its exact bytes and its binding to the artifact.

    ``digests``: the artifact's digests by algorithm; ``tool_name``: the name being admitted;
    ``signer_kind``: whose signature counts, for the messages (``registry``: a shim's registry signers,
    ``policy``: the policy's ``trust.signers``).
    """
    who = "a registry signer named in policy" if signer_kind == "registry" else "a signer named in policy"
    signed_ok, signed, sig_check = _signature_check(doc, bundle, signers, trust_root, who)
    binding = _binding_check(doc, digests, tool_name)
    verified = signed_ok and binding.status == "pass"
    return MetadataTrust(
        verified=verified,
        signed_digest=signed,
        source=doc.claims.source if verified else None,
        checks=[sig_check, binding],
    )


def verify_contract(
    path: Path,
    bundle: Path | None,
    signers: Sequence[Any],
    trust_root: TrustRoot,
    *,
    tool_name: str,
) -> tuple[ToolContract, bool, list[Check]]:
    """An AIP-14 ``TOOL.md`` read once, and whether it is verified as metadata is: a bundle over its
    exact bytes by a signer policy names, and bound to this tool (its ``name`` or ``id`` is the tool's
    name; a contract has no binary digest). Unverified, it can only tighten (``aip14.contract_states``)."""
    data = read_capped(path, LIMITS.tool_md_bytes, what="TOOL.md")
    contract = parse_tool_md(data, source_name=str(path))
    rules = tuple(IdentityRule.coerce(s) for s in signers)
    if bundle is None or not rules:
        sig = Check("contract.signature", "skip" if bundle is None else "fail",
                    "the TOOL.md has no signature bundle: it can only tighten" if bundle is None else
                    "policy names no signer: nobody can vouch for this TOOL.md",
                    expected="a bundle signed by a signer named in policy", actual=None, evidence=str(path))
        ok = False
    else:
        ok, signed, rep = verify_signed_bytes(data, bundle, rules, trust_root)
        sig = Check("contract.signature", "pass" if ok else "fail",
                    "the TOOL.md bytes are signed by a signer named in policy" if ok else
                    f"the TOOL.md signature does not verify against policy's signers ({rep.trust_level.name})",
                    expected=[r.describe() for r in rules],
                    actual=f"{rep.signature.identity} (issuer {rep.signature.issuer}) over {signed}"
                    if rep.signature.identity else f"{rep.signature.status} over {signed}", evidence=str(bundle))
    bound = tool_name in (contract.name, contract.id)
    binding = Check("contract.binding", "pass" if bound else "fail",
                    "the TOOL.md names this tool" if bound else "the TOOL.md describes another tool",
                    expected=tool_name, actual=[contract.name, contract.id], evidence=str(path))
    checks = [sig, binding]
    checks += [Check("contract.migration", "skip", w, expected="no execute field (AIP-30 DRIVER)",
                     actual="execute", evidence=str(path)) for w in contract.warnings]
    if contract.implements is not None:
        checks.append(Check("contract.implements", "pass", f"the TOOL.md implements action "
                            f"{contract.implements!r} without widening it; the action's floor is inherited",
                            expected=contract.implements, actual=contract.identity, evidence=str(path)))
    requires = contract.frontmatter.get("requires")
    secrets = requires.get("secrets") if isinstance(requires, dict) else None
    if secrets:
        # AIP-14 requires.secrets: no effect class (reading a credential changes nothing), but an
        # admin reading the report should see which credentials the tool says it uses.
        checks.append(Check("contract.requires.secrets", "skip", "the TOOL.md says the tool uses these "
                            "secrets (reported, not gated)", expected=None, actual=secrets, evidence=str(path)))
    return contract, ok and bound, checks


__all__ = ["MetadataTrust", "verify_contract", "verify_metadata", "verify_signed_bytes"]
