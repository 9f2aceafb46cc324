"""One command's decision from a trust report: the step ``admit`` ends with, shared with the bridge.

``admit`` verifies a tool and then decides for the command it was asked about; the bridge's compiled
surface (bridge/surface.py) decides for every command of a tool already verified. Both go through this
function so that a command a model is offered is decided exactly as running it would be: its effects
walked in the metadata (RFC §3.3, §3.6; an undeclared command's effects are unknown, hence risky; one
omitted from a partial document takes them from ``omitted.safetyAssumption``, RFC §3.1.1), the
metadata's effects trusted only when verified, then policy/decide.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from atip_trust._base.lazy import lazy_import
from atip_trust.facts.effects import command_lookup, merge_states
from atip_trust.facts.report import Decision, Reason, TrustReport
from atip_trust.policy.decide import decide
from atip_trust.policy.model import Policy

if TYPE_CHECKING:
    from atip_trust.facts import aip14
    from atip_trust.facts.aip14 import ToolContract
    from atip_trust.policy.model import RuleBehavior
else:
    aip14 = lazy_import("atip_trust.facts.aip14")  # only with a contract: its YAML reader is not warm


def decide_command(
    policy: Policy,
    report: TrustReport,
    *,
    tool_name: str,
    metadata: Mapping[str, Any] | None,
    command: Sequence[str],
    effects_verified: bool,
    metadata_source: str | None,
    interactive: bool,
    report_digest: str | None = None,
    contract: ToolContract | None = None,
    contract_verified: bool = False,
    declared: Sequence[tuple[RuleBehavior, Reason]] = (),
) -> Decision:
    """allow / ask / deny for ``command`` (words) of ``tool_name``, whose bytes ``report`` describes.

    ``metadata``: the parsed metadata object (None: no metadata, effects unknown); ``effects_verified``
    and ``metadata_source``: what verifying the metadata established (admission/metadata_trust.py).
    ``contract``: an AIP-14 ``TOOL.md`` for the tool (``contract_verified``: signed and bound): its
    classes merge with the command's, risk winning; unverified, or beside unverified metadata, it only
    tightens; without metadata a verified contract speaks for the tool. Its approval class asks.
    ``declared``: further verdicts from the tool's declarations (required tools, admission/admit.py)."""
    words = list(command)
    states, effects_unknown, omitted = (None, None, None) if metadata is None else command_lookup(metadata, words)
    extra = list(declared)
    if contract is not None:
        if metadata is None:
            effects_verified, states = contract_verified, aip14.contract_states(contract, verified=contract_verified)
        elif states is not None:
            trusted = contract_verified and effects_verified
            states = merge_states(states, aip14.contract_states(contract, verified=trusted))
        asked = aip14.approval_reason(contract)
        if asked is not None:
            extra.append(("ask", asked))
        refused = aip14.driver_reason(contract)
        if refused is not None:
            extra.append(("deny", refused))  # a contract only tightens, so even an unsigned one denies
    return decide(
        policy,
        report,
        tool_name=tool_name,
        command=words,
        effects=states,
        effects_verified=effects_verified,
        interactive=interactive,
        metadata_source=metadata_source,
        effects_unknown=effects_unknown,
        report_digest=report_digest,
        effects_omitted=omitted,
        declared=extra,
    )


__all__ = ["decide_command"]
