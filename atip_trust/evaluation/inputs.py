"""What one evaluation is given (``evaluation/evaluate.py``): the untrusted ``Evidence`` offered about an artifact, and
the ``Constraints`` (trust anchors and requirements, from flags or policy) it is held to.

Its own module so that an admission that reuses a cached trust report (docs/caching.md) builds
its constraints without loading the evaluation itself; ``atip_trust.evaluation.evaluate`` re-exports both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from atip_trust._base.record import Record
from atip_trust.signature.identity import match_identities

if TYPE_CHECKING:
    import os
    from collections.abc import Sequence
    from pathlib import Path

    from atip_trust.facts.metadata import MetadataDocument
    from atip_trust.facts.report import Check
    from atip_trust.provenance.slsa import AllowedSource, BuilderMap
    from atip_trust.signature.identity import CertificateFacts, IdentityRule

    PathLike = str | os.PathLike[str]


class Evidence(Record):
    """Untrusted material offered about the artifact: paths as text or ``os.PathLike`` (read where they
    are used: a warm admission makes its cache key from the text alone, docs/caching.md)."""

    #: Sigstore bundles (or files of them): one path or several (a ``str`` is one path).
    bundles: PathLike | Sequence[PathLike] = ()
    #: A detached signature (cosign ``--signature``), checked against ``Constraints.keys``, or with
    #: ``certificate`` against that certificate (signature/certificate_pair.py).
    signature: PathLike | None = None
    #: The signing certificate of ``signature`` (cosign ``--cert``): a pair that carries no log entry.
    certificate: PathLike | None = None
    #: ATIP metadata or shim whose ``trust``/``binary`` sections make claims: a path (read once), its
    #: bytes (a tool's ``--agent`` answer) or a document already read, so that a caller that also
    #: verifies the document's own signature (metadata_trust.py) checks claims from the very bytes it
    #: verified.
    metadata: PathLike | bytes | MetadataDocument | None = None
    #: The Sigstore bundle signing ``metadata`` itself (admission: its effects count only when signed).
    metadata_bundle: PathLike | None = None
    #: An AIP-14 ``TOOL.md`` and its bundle (admission/admit.py; default: beside the metadata).
    contract: PathLike | None = None
    contract_bundle: PathLike | None = None
    #: SLSA verification summary attestations (admission/vsa.py, docs/vsa.md): one path or several.
    vsas: PathLike | Sequence[PathLike] = ()


class SignerSet(Record):
    """Signer rules of one origin (``flags``, a policy layer), any one of which must match."""

    source: str
    rules: tuple[IdentityRule, ...]


class Constraints(Record):
    """Trust anchors and requirements: from CLI flags or policy, never from the evidence."""

    #: Allowed keyless signers: any one of them.
    signers: tuple[IdentityRule, ...] = ()
    #: Further signer sets a keyless signer must ALSO satisfy, one rule of each (``verify --policy``
    #: with identity flags: the policy's signers and the flags' both hold; flags only tighten).
    also_signers: tuple[SignerSet, ...] = ()
    #: Trusted public keys (PEM files), for detached signatures and public-key bundles.
    keys: tuple[Path, ...] = ()
    builder_id: str | None = None
    source_uri: str | None = None
    source_tag: str | None = None
    source_branch: str | None = None
    predicate_type: str | None = None
    min_slsa_level: int | None = None
    require_provenance: bool = False
    #: Allowed (repository, refs) pairs from policy ``trust.sources``: provenance must come from one
    #: of them. None: no such requirement; an empty tuple allows no source (fail closed).
    sources: tuple[AllowedSource, ...] | None = None
    #: Trusted-builder map from policy; None: the shipped map (policies/trusted-builders.json).
    builders: BuilderMap | None = None

    @property
    def wants_provenance(self) -> bool:
        return self.require_provenance or any(
            v is not None
            for v in (self.builder_id, self.source_uri, self.source_tag, self.source_branch,
                      self.predicate_type, self.min_slsa_level, self.sources)
        )

    @property
    def has_anchor(self) -> bool:
        return bool(self.signers or self.keys or self.also_signers)

    def match_signer(
        self, facts: CertificateFacts, *, evidence: str | None = None
    ) -> tuple[bool, list[Check]]:
        """Whether a keyless signer satisfies ``signers`` and every set in ``also_signers``, with the
        checks to report: the passing ones, and for a failing set its expected and actual values."""
        rule, checks = match_identities(self.signers, facts, evidence=evidence)
        ok = rule is not None
        for extra in self.also_signers:
            hit, more = match_identities(extra.rules, facts, evidence=evidence,
                                         origin=extra.source)
            ok = ok and hit is not None
            checks.extend(more)
        return ok, checks


__all__ = ["Constraints", "Evidence", "SignerSet"]
