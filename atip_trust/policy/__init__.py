"""Policy engine: the only source of trust anchors, and decisions with reasons (issue 5).

Load once, decide many times::

    policy = load_policy("policies/default.json")
    decision = policy.decide(report, tool_name="gh", command="pr view 1", interactive=False)
"""

from __future__ import annotations

import os

from .audit import append_audit, audit_error_record, audit_record
from .compose import cli_layer, compose
from .constraints import constraints_from_policy
from .decide import to_agent_tool
from .effects import states_for_command
from .explain import explain_policy
from .load import layer_from_document, load_layer, org_layers, standard_org_policy_path
from .model import (
    BuilderRule,
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
    managed: bool = False,
) -> Policy:
    """Load a local policy, optionally under an org (managed) policy and CLI flags; compose them.

    ``managed=True`` also composes the machine's managed policy as ``admit`` does (the standard
    org-policy path when it exists, and ``ATIP_TRUST_ORG_POLICY``). Every org file is refused when
    group/other-writable or owned by neither root nor the current user.
    """
    layers = [load_layer(path, source="local")]
    if managed:
        layers.extend(org_layers())
    if org is not None:
        layers.append(load_layer(org, source="org"))
    if cli is not None:
        layers.append(cli)
    return compose(layers)


__all__ = [
    "BuilderRule",
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
    "audit_error_record",
    "audit_record",
    "cli_layer",
    "compose",
    "constraints_from_policy",
    "explain_policy",
    "layer_from_document",
    "load_layer",
    "load_policy",
    "org_layers",
    "standard_org_policy_path",
    "states_for_command",
    "to_agent_tool",
]
