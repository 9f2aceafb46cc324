"""The deferred imports of ``atip_trust.evaluation``, each written once (docs/adr/0001-start-up.md).

Every name below is a module imported on its first attribute read (_base/lazy.py); the package's
modules take it from here (``from atip_trust.evaluation._deps import ...``) rather than importing it, so
that a cache-hit admission, which never reads it, never pays for it. The comment says when it is read.
"""

from __future__ import annotations

from atip_trust._base.lazy import lazy_import

TYPE_CHECKING = False  # typing's constant without importing typing at run time
if TYPE_CHECKING:
    from atip_trust.facts import metadata as metadata_mod
    from atip_trust.provenance import slsa
    from atip_trust.signature import bundle as bundles_mod
    from atip_trust.signature import certificate_pair, keys
    from atip_trust.signature import keyless as keyless_mod
    from atip_trust.signature import legacy_bundle as legacy_mod
else:
    metadata_mod = lazy_import("atip_trust.facts.metadata")  # only when there is metadata
    # Only with an attestation, or a policy's sources or builders.
    slsa = lazy_import("atip_trust.provenance.slsa")
    # The verifiers (sigstore, cryptography): when evidence is first checked, never on a cache hit.
    bundles_mod = lazy_import("atip_trust.signature.bundle")
    certificate_pair = lazy_import("atip_trust.signature.certificate_pair")  # (a verifier)
    keyless_mod = lazy_import("atip_trust.signature.keyless")  # (a verifier)
    keys = lazy_import("atip_trust.signature.keys")  # (a verifier)
    legacy_mod = lazy_import("atip_trust.signature.legacy_bundle")  # (a verifier)

__all__ = [
    "bundles_mod",
    "certificate_pair",
    "keyless_mod",
    "keys",
    "legacy_mod",
    "metadata_mod",
    "slsa",
]
