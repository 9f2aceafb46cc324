"""Policy's shim registries as a ``RegistryClient`` (registry/client.py, RFC §4.4-4.7).

The registry layer sits below policy, so it takes plain data: this module maps policy's
``trust.registries`` to ``RegistrySpec`` values (each with *its own* signers: a shim from one registry
is never checked against another registry's signers) and supplies the verifier, the same one a shim
in ``--shim-dir`` meets (metadata_trust.verify_signed_bytes: the bundle over the exact bytes, against
those signers, with the policy's trusted root).
"""

from __future__ import annotations

import os
from pathlib import Path

from atip_trust.admission.metadata_trust import verify_signed_bytes
from atip_trust.policy.constraints import choose_trusted_root
from atip_trust.policy.model import Policy
from atip_trust.registry.client import RegistryClient, RegistrySpec, ShimVerifier, SignatureVerdict
from atip_trust.signature.identity import IdentityRule
from atip_trust.signature.trustroot import TrustRoot
from atip_trust.state.paths import registry_cache_dir

PathLike = str | os.PathLike[str]


def registry_specs(policy: Policy) -> tuple[RegistrySpec, ...]:
    """Policy's registries, in policy order (the client sorts by priority, stably)."""
    return tuple(
        RegistrySpec(url=r.url, signers=tuple(r.signers), priority=r.priority, mode=r.mode,
                     name=r.name, token_env=r.token_env, max_cache_age=r.max_cache_age_hours * 3600.0)
        for r in policy.registries
    )


def shim_verifier(trust_root: TrustRoot) -> ShimVerifier:
    """The check every shim meets: a bundle over exactly these bytes by one of the registry's
    signers policy names."""

    def verify(raw: bytes, bundle: Path, spec: RegistrySpec) -> SignatureVerdict:
        rules = tuple(IdentityRule.coerce(s) for s in spec.signers)
        ok, signed, rep = verify_signed_bytes(raw, bundle, rules, trust_root)
        who = rep.signature.identity
        actual = (f"{who} (issuer {rep.signature.issuer})" if who else str(rep.signature.status))
        expected = "; ".join(r.describe() for r in rules)
        if ok:
            return SignatureVerdict(True, who, rep.signature.issuer,
                                    f"signed by {actual} over {signed}")
        return SignatureVerdict(False, who, rep.signature.issuer,
                                f"signature does not verify against {spec.label}'s signers in policy "
                                f"({rep.trust_level.name}): expected {expected}, actual {actual} over "
                                f"{signed}")

    return verify


def registry_client(
    policy: Policy,
    *,
    trust_root: TrustRoot | None = None,
    trusted_root: PathLike | None = None,
    staging: bool = False,
    cache_dir: PathLike | None = None,
    offline: bool | None = None,
) -> RegistryClient:
    """A client for ``policy``'s registries. ``trust_root``: the root to verify shim bundles with
    (default: the one policy pins, ``trusted_root`` choosing among them). ``cache_dir``: default
    ``$ATIP_CACHE_DIR/registry`` or the user cache dir (state/paths.py). ``offline``: None reads
    ``ATIP_OFFLINE``; True: cached verified shims only, each up to its registry's maxCacheAgeHours."""
    root = trust_root if trust_root is not None else choose_trusted_root(
        policy, os.fspath(trusted_root) if trusted_root is not None else None, staging)
    return RegistryClient(registry_specs(policy), shim_verifier(root),
                          cache_dir=cache_dir if cache_dir is not None else registry_cache_dir(),
                          offline=offline)


__all__ = ["registry_client", "registry_specs", "shim_verifier"]
