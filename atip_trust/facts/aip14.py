"""AIP-14 ``TOOL.md`` contracts (agenttool/v1): YAML frontmatter mapped onto RFC §3.6 effects.

A ``TOOL.md`` declares one tool's side-effect profile (``mutates``, ``risk_level``, ``idempotent``,
``cost_class``, ``requires``), its approval class and its time budget. This module reads the frontmatter
(``_base/yamlio.py``: safe loader, byte, node and depth caps, no anchors or aliases) and expresses it as
an RFC §3.6 effects object, so that the one walker (``facts/effects.py``) classifies it and the value
adding risk wins against the ATIP metadata's own effects.

AIP-14 says a manifest is untrusted until verified. ``contract_states(..., verified=False)`` keeps only
what adds risk: a contract nobody vouches for can tighten a decision, never relax one.

Mapping (docs/bridge.md, AIP-14); each row is a partial effects object, merged with risk winning:

==========================  =====================================================================
``risk_level: 0``           ``destructive: false, reversible: true, filesystem.write/delete: false``
``risk_level: 1``           ``destructive: false, filesystem.write: true`` (scoped writes)
``risk_level: 2``           ``destructive: false, network: true`` (external side effects)
``risk_level: 3``           ``destructive: true, reversible: false`` (irreversible)
``mutates: []``             ``filesystem.write/delete: false``, ``creates/modifies/deletes: []``
                            (AIP-14: empty is a pure read)
``mutates: [entry, ...]``   ``modifies: [entry, ...]``, any class (never read-only), and also:
``mutates: workspace:*``    ``filesystem.write: true``
``mutates: network:*``,     ``network: true``
``external:*``
``requires.network: [..]``  ``network: true``
``requires.tools: [..]``    ``subprocess: true``
``idempotent: b``           ``idempotent: b``
``cost_class: trivial``     ``cost: {billable: false, estimate: free}``
``cost_class: metered``     ``cost: {billable: true, estimate: low}``
``cost_class: expensive``   ``cost: {billable: true, estimate: high}``
``timeout_ms: n``           ``duration.timeout: "<n/1000>s"``
``approval: always``        ask (every call)
``approval: on-mutate``     ask when ``mutates`` is not empty
``approval: policy:<ref>``  ask (the named AIP-7 policy is not one atip-trust reads)
``approval: auto``          nothing: the host's policy still decides (AIP-14: "the more restrictive
                            answer wins")
==========================  =====================================================================

Fields AIP-14 moved to the DRIVER layer (``code``, ``run``, ``runner``, ``secrets``, ``network``,
``entry``) make the file invalid, as AIP-14 says; unknown other keys are tolerated as it requires.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
TYPE_CHECKING = False  # typing's constant without importing typing at run time (docs/caching.md)
if TYPE_CHECKING:
    from typing import Any, Literal

from atip_trust._base.record import Record, field
from atip_trust._base.files import read_capped
from atip_trust._base.yamlio import load_yaml
from atip_trust.errors import MetadataError
from atip_trust.facts.digest import hash_bytes
from atip_trust.facts.effects import classify, merge_declared
from atip_trust.facts.report import Reason
from atip_trust._base.limits import LIMITS

if TYPE_CHECKING:
    from atip_trust.facts.effects import State

_ID_RE = re.compile(r"[a-z0-9][a-z0-9.-]{1,79}")
_MOVED_TO_DRIVER = ("code", "run", "runner", "secrets", "network", "entry")
_COST: dict[str, dict[str, Any]] = {
    "trivial": {"billable": False, "estimate": "free"},
    "metered": {"billable": True, "estimate": "low"},
    "expensive": {"billable": True, "estimate": "high"},
}
_RISK: dict[int, dict[str, Any]] = {
    0: {"destructive": False, "reversible": True, "filesystem": {"write": False, "delete": False}},
    1: {"destructive": False, "filesystem": {"write": True}},
    2: {"destructive": False, "network": True},
    3: {"destructive": True, "reversible": False},
}


class ToolContract(Record):
    """One parsed ``TOOL.md``: identity, the effects it maps to, its approval class, the bytes' digest."""

    _no_repr = frozenset({"frontmatter"})

    id: str
    name: str
    version: str
    #: RFC §3.6 effects object (the mapping table above, merged with risk winning).
    effects: dict[str, Any]
    #: ``ask`` when the approval class asks for this tool (``always``, ``on-mutate`` with mutations,
    #: ``policy:<ref>``); ``auto`` otherwise.
    approval: Literal["auto", "ask"]
    approval_declared: str
    risk_level: int | None
    mutates: tuple[str, ...]
    cost_class: str | None
    timeout_ms: int | None
    #: ``sha256:<hex>`` of the exact bytes read (what a signature over the contract must cover).
    sha256: str
    source_name: str = "TOOL.md"
    frontmatter: dict[str, Any] = field(default_factory=dict)


def frontmatter_bytes(data: bytes, source_name: str = "TOOL.md") -> bytes:
    """The YAML between the opening ``---`` line and the next ``---`` (or ``...``) line."""
    lines = data.splitlines(keepends=True)
    if not lines or lines[0].rstrip(b"\r\n") != b"---":
        raise MetadataError("a TOOL.md starts with a '---' line opening its YAML frontmatter", path=source_name)
    for i, line in enumerate(lines[1:], start=1):
        if line.rstrip(b"\r\n") in (b"---", b"..."):
            return b"".join(lines[1:i])
    raise MetadataError("the frontmatter is not closed by a '---' line", path=source_name)


def _need(fm: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    value = fm.get(key)
    if not isinstance(value, kind) or isinstance(value, bool) != (kind is bool):
        raise MetadataError(f"{key}: expected {kind.__name__}, got {type(value).__name__} {value!r}",
                            path=where)
    return value


def parse_tool_md(data: bytes, *, source_name: str = "TOOL.md") -> ToolContract:
    """Parse a ``TOOL.md`` (bytes already read, capped); MetadataError naming the field on any problem."""
    if len(data) > LIMITS.tool_md_bytes:
        raise MetadataError(f"{len(data)} bytes, over the cap of {LIMITS.tool_md_bytes} bytes", path=source_name)
    fm = load_yaml(frontmatter_bytes(data, source_name), cap=LIMITS.tool_md_bytes,
                   what=f"{source_name} frontmatter")
    if not isinstance(fm, dict):
        raise MetadataError(f"the frontmatter must be a mapping, got {type(fm).__name__}", path=source_name)
    for key in ("name", "id", "description", "version"):
        _need(fm, key, str, source_name)
    for key in ("inputs", "outputs"):
        _need(fm, key, dict, source_name)
    if not _ID_RE.fullmatch(fm["id"]):
        raise MetadataError(f"id: {fm['id']!r} is not lowercase letters, digits, dashes and dots (2-80)",
                            path=source_name)
    moved = [k for k in _MOVED_TO_DRIVER if k in fm]
    if moved:
        raise MetadataError(f"{', '.join(moved)}: these fields belong to the AIP-30 DRIVER, not the "
                            "TOOL.md contract (AIP-14 calls such a file invalid)", path=source_name)

    parts: list[dict[str, Any]] = []
    risk = fm.get("risk_level")
    if risk is not None:
        if not isinstance(risk, int) or isinstance(risk, bool) or risk not in _RISK:
            raise MetadataError(f"risk_level: expected 0, 1, 2 or 3, got {risk!r}", path=source_name)
        parts.append(_RISK[risk])
    mutates_raw = fm.get("mutates", [])
    if not isinstance(mutates_raw, list) or not all(isinstance(m, str) and ":" in m for m in mutates_raw):
        raise MetadataError(f"mutates: expected a list of '<class>:<scope>' strings, got {mutates_raw!r}",
                            path=source_name)
    mutates = tuple(mutates_raw)
    if "mutates" in fm and not mutates:
        parts.append({"filesystem": {"write": False, "delete": False}, "creates": [], "modifies": [],
                      "deletes": []})
    if mutates:
        # Every entry is a modification, whatever its class (``database:``, ``secret:``, one AIP-14 may
        # add later): a contract that mutates anything is never read-only (docs/effects.md).
        parts.append({"modifies": list(mutates)})
    for m in mutates:
        cls = m.split(":", 1)[0]
        if cls == "workspace":
            parts.append({"filesystem": {"write": True}})
        elif cls in ("network", "external"):
            parts.append({"network": True})
    requires = fm.get("requires", {})
    if not isinstance(requires, dict):
        raise MetadataError(f"requires: expected a mapping, got {requires!r}", path=source_name)
    if requires.get("network"):
        parts.append({"network": True})
    if requires.get("tools"):
        parts.append({"subprocess": True})  # it runs the other tools it requires
    if "idempotent" in fm:
        parts.append({"idempotent": _need(fm, "idempotent", bool, source_name)})
    cost = fm.get("cost_class")
    if cost is not None:
        if cost not in _COST:
            raise MetadataError(f"cost_class: expected one of {sorted(_COST)}, got {cost!r}", path=source_name)
        parts.append({"cost": dict(_COST[cost])})
    timeout = fm.get("timeout_ms")
    if timeout is not None:
        if not isinstance(timeout, int) or isinstance(timeout, bool) or timeout <= 0:
            raise MetadataError(f"timeout_ms: expected a positive integer, got {timeout!r}", path=source_name)
        parts.append({"duration": {"timeout": f"{timeout / 1000:g}s"}})
    approval_declared = fm.get("approval", "auto")
    if not isinstance(approval_declared, str) or not (
            approval_declared in ("auto", "always", "on-mutate") or approval_declared.startswith("policy:")):
        raise MetadataError(f"approval: expected auto, always, on-mutate or policy:<ref>, got "
                            f"{approval_declared!r}", path=source_name)
    asks = approval_declared == "always" or approval_declared.startswith("policy:") or (
        approval_declared == "on-mutate" and bool(mutates))
    return ToolContract(
        id=fm["id"], name=fm["name"], version=fm["version"], effects=merge_declared(parts),
        approval="ask" if asks else "auto", approval_declared=approval_declared,
        risk_level=risk, mutates=mutates, cost_class=cost, timeout_ms=timeout,
        sha256=str(hash_bytes(data, "sha256")), source_name=source_name, frontmatter=fm)


def load_tool_md(path: str | Path) -> ToolContract:
    """Read a ``TOOL.md`` once (a regular file, capped) and parse it."""
    data = read_capped(path, LIMITS.tool_md_bytes, what="TOOL.md")
    return parse_tool_md(data, source_name=str(path))


def contract_states(contract: ToolContract, *, verified: bool) -> dict[str, State]:
    """The contract's effect classes; unverified, its "safe" claims count as unknown (it only tightens)."""
    states = classify(contract.effects)
    if not verified:
        states = {cls: ("unknown" if st == "safe" else st) for cls, st in states.items()}
    return states


def approval_reason(contract: ToolContract) -> Reason | None:
    """The question the contract's approval class asks (``always``, ``policy:<ref>``, ``on-mutate`` with
    mutations), as the reason admission and the call validator both give; None for ``auto``."""
    if contract.approval != "ask":
        return None
    return Reason("APPROVAL_REQUIRED", f"the AIP-14 contract {contract.id!r} asks for approval "
                  f"(approval: {contract.approval_declared})", rule=f"aip14:{contract.id}.approval",
                  expected="approval: auto", actual=contract.approval_declared)


__all__ = ["ToolContract", "approval_reason", "contract_states", "frontmatter_bytes", "load_tool_md",
           "parse_tool_md"]
