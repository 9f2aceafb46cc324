"""``create_validator``: the reference bridge's validator API (RFC §11.2) over the one call-time gate.

The reference builds its own index and policy flags; here every answer is ``agents/calls.py``'s — the
policy's decision for the call's argv plus the checks only a call has — so a validator and ``admit`` can
never disagree. A flat name is looked up among the given tools (``facts/flatten.py``); a name no tool
declares is an ``UNKNOWN_COMMAND`` violation against the tool whose name prefixes it (or the first tool:
the result is the same denial), never a pass-through.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from atip_trust.agents.calls import CallDecision, check_call, validate_call
from atip_trust.bridge.surface import SurfaceTool
from atip_trust.errors import UsageError
from atip_trust.facts.flatten import flatten_commands
from atip_trust.facts.metadata import MetadataDocument
from atip_trust.policy.model import Policy


def _doc(meta: Mapping[str, Any] | MetadataDocument) -> Mapping[str, Any]:
    return meta.doc if isinstance(meta, MetadataDocument) else meta


class Validator:
    """``validate(tool_name, args)`` -> ``CallDecision`` (``.valid``, ``.violations``, ``.behavior``)."""

    def __init__(self, tools: Sequence[SurfaceTool], policy: Policy,
                 delegation: Mapping[str, Any] | None = None) -> None:
        if not tools:
            raise UsageError("create_validator needs at least one tool")
        self.policy, self.delegation, self.tools = policy, delegation, list(tools)
        self._index: dict[str, SurfaceTool] = {}
        for t in self.tools:
            for c in flatten_commands(_doc(t.metadata)):
                self._index[c.name] = t

    def _owner(self, name: str) -> SurfaceTool:
        hit = self._index.get(name)
        if hit is not None:
            return hit
        for t in self.tools:
            tool = str(_doc(t.metadata).get("name", ""))
            if name == tool or name.startswith(tool + "_"):
                return t
        return self.tools[0]

    def validate(self, tool_name: str, args: Mapping[str, Any] | None = None) -> CallDecision:
        t = self._owner(tool_name)
        if t.admission is not None:
            return check_call(t.admission, t.metadata, tool_name, args, self.policy, self.delegation)
        return validate_call(t.metadata, tool_name, args, policy=self.policy, report=t.report,
                             tool_name=t.name, effects_verified=t.effects_verified,
                             metadata_source=t.metadata_source, delegation=self.delegation)


def create_validator(tools: Sequence[SurfaceTool], policy: Policy,
                     delegation: Mapping[str, Any] | None = None) -> Validator:
    """The reference's ``createValidator(tools, policy)`` with the verified facts each tool carries."""
    return Validator(tools, policy, delegation)


__all__ = ["Validator", "create_validator"]
