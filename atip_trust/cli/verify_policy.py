"""``verify --policy FILE``: the policy's trust anchors become the verifier's constraints.

The policy is the only source of trust anchors (DESIGN.md principle 1); flags given with it are kept and
the stricter requirement wins (``policy.constraints.constraints_from_policy``).
"""

from __future__ import annotations

from typing import Any

from ..policy import load_policy
from ..policy.constraints import constraints_from_policy, trusted_root_choice


def apply_policy(path: str, constraints: Any) -> tuple[Any, str | None]:
    """(constraints with the policy's anchors, trusted-root path from the policy or None)."""
    policy = load_policy(path)
    _staging, root_path = trusted_root_choice(policy)
    return constraints_from_policy(policy, constraints), root_path


__all__ = ["apply_policy"]
