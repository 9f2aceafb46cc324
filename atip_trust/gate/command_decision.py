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
TYPE_CHECKING = False  # typing's constant without importing typing at run time (README "Verdict cache")
if TYPE_CHECKING:
    from typing import Any

from atip_trust.facts.effects import command_lookup
from atip_trust.facts.report import Decision, TrustReport
from atip_trust.policy.decide import decide
from atip_trust.policy.model import Policy


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
) -> Decision:
    """allow / ask / deny for ``command`` (words) of ``tool_name``, whose bytes ``report`` describes.

    ``metadata``: the parsed metadata object (None: no metadata, effects unknown); ``effects_verified``
    and ``metadata_source``: what verifying the metadata established (gate/metadata_trust.py)."""
    words = list(command)
    states, effects_unknown, omitted = (None, None, None) if metadata is None else command_lookup(metadata, words)
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
    )


__all__ = ["decide_command"]
