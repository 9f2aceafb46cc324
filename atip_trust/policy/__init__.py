"""Policy engine: the only source of trust anchors, and decisions with reasons (issue 5).

Load once, decide many times::

    policy = load_policy("policies/default.json")
    decision = policy.decide(report, tool_name="gh", command="pr view 1", interactive=False)
"""

from __future__ import annotations

import os

from .audit import append_audit, audit_record, default_audit_path
from .compose import cli_layer, compose
from .decide import decide, to_agent_tool
from .effects import (
    command_effects,
    effective_states,
    merge_effects,
    states_for_command,
)
from .load import canonical_digest, layer_from_document, load_layer
from .model import (
    EFFECT_CLASSES,
    BuilderRule,
    CommandRule,
    Gate,
    Policy,
    PolicyLayer,
    PublicKeyRule,
    RegistryRule,
    Requirements,
    SignerRule,
    SourceRule,
    Waiver,
)


def load_policy(
    path: str | os.PathLike[str],
    *,
    org: str | os.PathLike[str] | None = None,
    cli: PolicyLayer | None = None,
) -> Policy:
    """Load a local policy, optionally under an org (managed) policy and CLI flags; compose them."""
    layers = [load_layer(path, source="local")]
    if org is not None:
        layers.append(load_layer(org, source="org"))
    if cli is not None:
        layers.append(cli)
    return compose(layers)


__all__ = [
    "EFFECT_CLASSES",
    "BuilderRule",
    "CommandRule",
    "Gate",
    "Policy",
    "PolicyLayer",
    "PublicKeyRule",
    "RegistryRule",
    "Requirements",
    "SignerRule",
    "SourceRule",
    "Waiver",
    "append_audit",
    "audit_record",
    "canonical_digest",
    "cli_layer",
    "command_effects",
    "compose",
    "decide",
    "default_audit_path",
    "effective_states",
    "layer_from_document",
    "load_layer",
    "load_policy",
    "merge_effects",
    "states_for_command",
    "to_agent_tool",
]
