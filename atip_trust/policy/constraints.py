"""What verification needs from a policy, as ``evaluate.Constraints`` (DESIGN.md principle 1).

The policy is the only source of trust anchors; this is the one place that hands them to the verifier.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from .model import Policy


def builder_map(policy: Policy) -> Any:
    """The policy's trusted builders as a ``provenance.BuilderMap``; None when policy states none."""
    if not any(layer.trusted_builders is not None for layer in policy.layers):
        return None
    from ..provenance import BuilderMap

    return BuilderMap.from_json(
        {"builders": [{"id": b.id, "level": b.level} for b in policy.trusted_builders]},
        origin="policy:",
    )


def trusted_root_choice(policy: Policy) -> tuple[bool, str | None]:
    """(staging?, path or None) from ``trust.trustedRoots`` (first entry; default public-good)."""
    if not policy.trusted_roots:
        return False, None
    first = policy.trusted_roots[0]
    if first == "production":
        return False, None
    if first == "staging":
        return True, None
    return False, first


def constraints_from_policy(policy: Policy, base: Any = None) -> Any:
    """Merge policy anchors into ``evaluate.Constraints`` (flags in ``base`` are kept and tightened).

    Signers: the policy's when it states any list (even empty: nobody), else the flags'. Keys: PEM paths
    (key digests are checked by ``decide`` against the report, not here). Requirements: the stricter.
    """
    from ..evaluate import Constraints
    from ..identity import IdentityRule

    c = base if base is not None else Constraints()
    signers = c.signers
    if policy.signers_declared:
        signers = tuple(IdentityRule.coerce(s) for s in policy.signers)
    keys = tuple(c.keys) + tuple(Path(k.path) for k in policy.public_keys if k.path)
    req = policy.requirements
    min_slsa = c.min_slsa_level
    if req.min_slsa_level is not None:
        min_slsa = max(min_slsa or 0, req.min_slsa_level)
    source_uri, source_tag, source_branch = c.source_uri, c.source_tag, c.source_branch
    if len(policy.sources) == 1 and source_uri is None:
        src = policy.sources[0]
        source_uri = src.repository
        if len(src.refs) == 1:
            ref = src.refs[0]
            if ref.startswith("refs/tags/") and source_tag is None:
                source_tag = ref[len("refs/tags/"):]
            elif ref.startswith("refs/heads/") and source_branch is None:
                source_branch = ref[len("refs/heads/"):]
    builders = builder_map(policy)
    return dataclasses.replace(
        c,
        signers=signers,
        keys=keys,
        min_slsa_level=min_slsa,
        predicate_type=c.predicate_type or req.predicate_type,
        require_provenance=bool(getattr(c, "require_provenance", False) or req.provenance_required),
        source_uri=source_uri,
        source_tag=source_tag,
        source_branch=source_branch,
        builders=builders if builders is not None else c.builders,
    )


__all__ = ["constraints_from_policy"]
