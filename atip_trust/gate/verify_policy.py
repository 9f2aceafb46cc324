"""``verify --policy FILE``: the policy's trust anchors become the verifier's constraints, and the policy
decides.

The policy is the only source of trust anchors (DESIGN.md principle 1); flags given with it are kept and
the stricter requirement wins (``policy.constraints.constraints_from_policy``). The managed org policy
(``policy.load.org_layers``: the standard path, ``ATIP_TRUST_ORG_POLICY``) is composed over it, as for
``admit``. The decision is ``decide(policy, report, purpose="verify")``: requirements, tool and digest rules,
waivers, mode and the minimum trust level apply; command rules do not (they govern running commands).
``verify`` never asks anyone: exit 3 belongs to ``admit``/``exec`` (CONTRACT.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atip_trust.facts.report import Decision, TrustReport
from atip_trust.policy.compose import compose
from atip_trust.policy.constraints import choose_trusted_root, constraints_from_policy
from atip_trust.policy.decide import decide
from atip_trust.policy.load import load_layer, org_layers
from atip_trust.policy.model import Policy
from atip_trust.signature.trustroot import TrustRoot


@dataclass(frozen=True)
class VerifyPolicy:
    """A loaded policy applied to ``verify``: the constraints to verify with, and the decision."""

    policy: Policy
    constraints: Any

    def trust_root(self, staging: bool, path: str | None) -> TrustRoot:
        """The policy's ``trust.trustedRoots``; ``--trusted-root``/``--staging`` may only pick one of the
        roots it pins (``policy.constraints.choose_trusted_root``, shared with ``admit``)."""
        return choose_trusted_root(self.policy, path, staging)

    def decide(self, report: TrustReport, artifact: str) -> Decision:
        return decide_verify(self.policy, report, artifact)


def load_verify_policy(path: str) -> Policy:
    """The local policy under every org layer (standard org-policy path, ``ATIP_TRUST_ORG_POLICY``)."""
    return compose([load_layer(path, source="local"), *org_layers()])


def apply_policy(path: str, constraints: Any) -> VerifyPolicy:
    """Load the policy (with the org layers) and merge its anchors into ``constraints``."""
    policy = load_verify_policy(path)
    return VerifyPolicy(policy, constraints_from_policy(policy, constraints))


def decide_verify(policy: Policy, report: TrustReport, artifact: str) -> Decision:
    """``Policy.decide`` for the trust question about these bytes (``purpose="verify"``), never interactive.

    Command rules, effects, capability gating and the no-match default decide whether a *command may
    run* (``admit``/``exec``); ``verify`` answers whether the artifact is what policy trusts: COMPROMISED,
    signers, tool and digest rules, requirements and waivers, the minimum level (VERIFIED unless the
    policy states one), and the mode.
    """
    return decide(
        policy,
        report,
        tool_name=Path(artifact).name or artifact,
        command=[],
        effects=None,
        effects_verified=False,
        interactive=False,  # an ask would become a deny with ASK_WITHOUT_USER; no verify step asks
        purpose="verify",
    )


__all__ = ["VerifyPolicy", "apply_policy", "decide_verify", "load_verify_policy"]
