"""The trusted tool surface: provider tools for only the commands policy admits (RFC §8, §10).

The reference bridge compiles every command of every tool. Here each leaf command of each verified
tool is decided first, exactly as running it would be decided (admission/command_decision.py, the step
``admit`` ends with: the command's effects walked in the metadata, trusted only when the metadata is
verified, then policy/decide.py), once per (tool digest, command):

* allow: compiled;
* ask: compiled with a note that a person must confirm (``bridge.askAs: "confirm"``, the default: the
  call is admitted again when it runs, and without a person there it is denied), or blocked
  (``bridge.askAs: "block"``);
* deny: left out, so a model never sees it, and listed under ``blocked`` with the machine-readable
  reason ``policy_blocked`` (the Agent Tool surface vocabulary) and the decision's reasons.

Asks are decided as if a person could answer (``interactive=True``): whether one can is known when the
call runs, not when the surface is compiled. ``bridge.stateTrustLevel`` adds the tool's trust level to
each description.

``build_surface`` returns the same JSON (``Surface.to_json()``, what ``compile_surface`` returns) and
the flat name -> (tool, command) map of what was offered: the call loop (bridge/loop.py) runs a call
only when its name is in that map, with the admission and evidence the surface was compiled from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from atip_trust._base.record import Record, field
from atip_trust.admission.admit import Admission
from atip_trust.admission.command_decision import decide_command
from atip_trust.admission.options import AdmitOptions
from atip_trust.bridge.compile import (
    check_provider,
    check_unique,
    compile_command,
    tool_document,
)
from atip_trust.evaluation.inputs import Evidence
from atip_trust.facts.flatten import FlatCommand, flatten_commands
from atip_trust.facts.metadata import MetadataDocument
from atip_trust.facts.report import Decision, TrustReport
from atip_trust.policy.model import Policy

#: Description note for a command policy asks about (kept whole by the OpenAI length limit).
CONFIRM_NOTE = "[REQUIRES USER CONFIRMATION: ask the user before calling]"


class SurfaceTool(Record):
    """A tool's metadata with what verifying the tool established (``admit`` computes all of it)."""

    _no_compare = frozenset({"admission", "evidence", "options", "bundle_dir"})
    _no_repr = frozenset({"admission", "evidence", "options", "bundle_dir"})

    metadata: Mapping[str, Any] | MetadataDocument
    report: TrustReport
    #: The metadata's effects were verified (signed and bound to this tool).
    effects_verified: bool = False
    #: The metadata source verification established (RFC §3.2.2 ``trust.source``), or None.
    metadata_source: str | None = None
    #: The name policy rules match (default: the metadata's ``name``).
    name: str | None = None
    #: The admission the report came from: a call is validated against it (bridge/loop.py).
    admission: Admission | None = None
    #: What ``admit`` was given (``metadata``, ``metadata_bundle``, ``bundles``; ``keys``,
    #: ``trusted_root``, ``shim_dir``, ...) and the folder of bundles by digest: the tool is admitted
    #: again with them when a call runs (the loop's own ``cache``, ``audit`` and interactivity apply).
    evidence: Evidence = Evidence()
    options: AdmitOptions = AdmitOptions()
    bundle_dir: str | None = None

    @classmethod
    def from_admission(cls, admission: Admission, metadata: Mapping[str, Any] | MetadataDocument,
                       evidence: Evidence | None = None, options: AdmitOptions | None = None,
                       bundle_dir: str | None = None) -> SurfaceTool:
        return cls(metadata, admission.report, admission.effects_verified, admission.metadata_source,
                   admission.tool, admission,
                   Evidence() if evidence is None else evidence,
                   AdmitOptions() if options is None else options, bundle_dir)


class SurfaceCommand(Record):
    """One command a model was offered: the tool it belongs to and its declaration."""

    name: str
    tool: SurfaceTool
    command: FlatCommand
    #: ``allow``, or ``ask`` (compiled with the confirmation note).
    behavior: str


class Surface(Record):
    """A compiled surface: what ``compile_surface`` returns (``to_json``), and the offered commands."""

    provider: str
    tools: list[dict[str, Any]]
    blocked: list[dict[str, Any]]
    commands: Mapping[str, SurfaceCommand] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"provider": self.provider, "tools": self.tools, "blocked": self.blocked}


def _decision_key(tool: SurfaceTool, name: str, words: tuple[str, ...]) -> tuple[str, str, tuple[str, ...]]:
    digest = tool.report.digests.get("sha256") or tool.report.digest()
    return digest, name, words


def blocked_entry(name: str, tool: str, command: Sequence[str], decision: Decision) -> dict[str, Any]:
    return {
        "name": name,
        "tool": tool,
        "command": list(command),
        "reason": "policy_blocked",
        "behavior": decision.behavior,
        "reasons": [r.to_json() for r in decision.reasons],
    }


def compile_surface(
    tools_with_reports: Sequence[SurfaceTool], policy: Policy, provider: str, strict: bool = False
) -> dict[str, Any]:
    """``{"provider", "tools", "blocked"}``: provider tools for the commands ``policy`` allows (or asks
    about, as ``bridge.askAs`` says), and ``blocked: [{name, tool, command, reason, behavior, reasons}]``."""
    return build_surface(tools_with_reports, policy, provider, strict).to_json()


def build_surface(
    tools_with_reports: Sequence[SurfaceTool], policy: Policy, provider: str, strict: bool = False
) -> Surface:
    """``compile_surface`` as a ``Surface``: the same JSON and the flat name -> command map."""
    chosen = check_provider(provider)
    offered: dict[str, SurfaceCommand] = {}
    compiled: list[dict[str, Any]] = []
    names: list[str] = []
    origins: list[str] = []
    blocked: list[dict[str, Any]] = []
    decisions: dict[tuple[str, str, tuple[str, ...]], Decision] = {}
    for i, tool in enumerate(tools_with_reports):
        doc = tool_document(tool.metadata)
        tool_name = tool.name or str(doc["name"])
        trust_note = f"[trust: {tool.report.trust_level.name}]" if policy.bridge_state_trust_level else ""
        for fc in flatten_commands(doc):
            names.append(fc.name)
            origins.append(f"tools[{i}] ({tool_name})")
            words = fc.argv_prefix
            key = _decision_key(tool, tool_name, words)
            decision = decisions.get(key)
            if decision is None:
                decision = decide_command(
                    policy, tool.report, tool_name=tool_name, metadata=doc, command=words,
                    effects_verified=tool.effects_verified, metadata_source=tool.metadata_source,
                    interactive=True,
                )
                decisions[key] = decision
            behavior = decision.behavior
            if behavior == "deny" or (behavior == "ask" and policy.bridge_ask_as == "block"):
                blocked.append(blocked_entry(fc.name, tool_name, words, decision))
                continue
            note = " ".join(n for n in (CONFIRM_NOTE if behavior == "ask" else "", trust_note) if n)
            compiled.append(compile_command(fc, chosen, strict=strict, note=note))
            offered[fc.name] = SurfaceCommand(fc.name, tool, fc, behavior)
    check_unique(names, origins)
    return Surface(chosen, compiled, blocked, offered)


__all__ = ["CONFIRM_NOTE", "Surface", "SurfaceCommand", "SurfaceTool", "build_surface", "compile_surface"]
