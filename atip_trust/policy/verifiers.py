"""``trust.verifiers``: who may vouch for a tool with a SLSA Verification Summary Attestation (docs/vsa.md).

Each entry names one verifier: its public key (``publicKey``, a PEM file; ``keyId``, the id its
signatures carry, as ``verify-vsa --public-key-id``) or its Sigstore identity (``identity`` /
``identityRegexp`` and ``issuer`` / ``issuerRegexp``, optional ``claims``: a signer rule, matched as
``trust.signers`` are, on the Fulcio certificate of a VSA in a Sigstore bundle), its ``id`` (the VSA's
``verifier.id``), the ``resourceUris`` it may vouch for (absent: any), the SLSA Build level its VSA must
state at least (``minLevel``), how old a VSA may be (``maxAge``, required: a summary is a snapshot, never
forever) and which ``policyDigests`` count (absent: any policy the verifier applied).

Verifiers are trust anchors like the others (policy/anchors.py): an org layer that states them fixes the
whole anchor set; when org layers fix the set, only the verifiers every one of them grants count (a
second ``--org-policy`` cannot add one), a local list is ignored; otherwise every layer's count.
"""

from __future__ import annotations

from atip_trust._base.record import Record
from atip_trust.policy.model import Policy, SignerRule
from atip_trust.policy.rules import signer_from_json

_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}


class VerifierRule(Record):
    """One ``trust.verifiers`` entry, paths resolved against its policy file's directory."""

    id: str
    #: The key that signs its DSSE envelopes, or None for a keyless verifier (``signer``).
    public_key: str | None
    key_id: str | None
    #: None: any resource URI.
    resource_uris: tuple[str, ...] | None
    min_level: int
    #: Seconds.
    max_age: int
    max_age_text: str
    #: None: any policy digest; else ``sha256:<hex>`` strings.
    policy_digests: tuple[str, ...] | None
    source: str
    #: Keyless: the Sigstore identity whose certificate must sign the VSA's bundle; None for a key.
    signer: SignerRule | None = None

    def describe(self) -> str:
        """The verifier as a report names it: its id, and its identity when keyless."""
        s = self.signer
        if s is None:
            return self.id
        ident = s.identity if s.identity is not None else f"/{s.identity_regexp}/"
        return f"{self.id} ({ident})"


def _age(text: str) -> int:
    return int(text[:-1]) * _UNITS[text[-1]]


def verifier_rules(policy: Policy) -> list[VerifierRule]:
    """The verifiers whose VSAs count under ``policy``: its anchor set's (module docstring)."""
    rules: list[VerifierRule] = []
    for e in policy.verifiers:
        v = e.entry
        uris = v.get("resourceUris")
        digests = v.get("policyDigests")
        rules.append(VerifierRule(
            id=v["id"], public_key=e.key_path,
            signer=None if e.key_path else signer_from_json(v, f"$.trust.verifiers[{e.index}]"),
            key_id=v.get("keyId"), resource_uris=tuple(uris) if uris is not None else None,
            min_level=int(v.get("minLevel", 0)), max_age=_age(v["maxAge"]), max_age_text=v["maxAge"],
            policy_digests=tuple(digests) if digests is not None else None, source=e.source))
    return rules


__all__ = ["VerifierRule", "verifier_rules"]
