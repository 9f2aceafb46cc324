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
An ``execute`` field (the removed ``defineTool`` body) is reported with a migration warning pointing
at AIP-30 (AIP-14 conformance rule 2). The field limits are checked: ``name`` 1-80 characters,
``description`` at most 2000, ``version`` semver. ``id@major`` is the contract's identity (AIP-14
"Stable identity"), the key audit lines and the verdict cache use.

Governance AIP-14 states and this module applies:

* ``implements`` (an AIP-39 action, inline or a workspace path beside the TOOL.md): the action's
  ``mutates``, ``risk_level``, ``approval`` and ``requires`` are the floor the tool inherits; a tool that
  would widen it (lower ``risk_level``, drop a ``mutates`` entry or a required network/secret/tool,
  relax ``approval``) is rejected when parsed, as ``validateImplementor`` does. An action reference
  this host cannot resolve (a bare id, a registry ref) is rejected too: its floor is unknown.
* ``driver_constraints``: a contract that forbids the ``cli`` driver kind, or requires kinds without
  ``cli``, is denied for a command-line tool (``driver_reason``).
* ``timeout_ms``: 30000 when absent (the AIP-14 default ceiling).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from atip_trust._base.files import read_capped
from atip_trust._base.limits import LIMITS
from atip_trust._base.record import Record, field
from atip_trust._base.yamlio import load_yaml
from atip_trust.errors import MetadataError
from atip_trust.facts.digest import hash_bytes
from atip_trust.facts.effects import classify, merge_declared
from atip_trust.facts.report import Reason

if TYPE_CHECKING:
    from typing import Any, Literal

    from atip_trust.facts.effects import State

_ID_RE = re.compile(r"[a-z0-9][a-z0-9.-]{1,79}")
#: semver 2.0.0 (AIP-14 ``version``: "semver string").
_SEMVER_RE = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
                        r"(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?")
#: AIP-14 ``timeout_ms`` default: the hard wall-clock ceiling when a contract declares none.
DEFAULT_TIMEOUT_MS = 30000
#: AIP-14 approval classes by strictness (``auto`` < ``on-mutate`` < ``always``); ``policy:<ref>``
#: defers to a policy atip-trust does not read, so it asks, as ``always`` does.
_APPROVAL_RANK = {"auto": 0, "on-mutate": 1, "always": 2}
_DRIVER_KINDS = frozenset({"cli", "http", "mcp", "sdk", "builtin"})
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
    #: What the contract should change but is not refused for (AIP-14 conformance rule 2's migration
    #: warning for ``execute``).
    warnings: tuple[str, ...] = ()
    #: ``driver_constraints.forbid`` and ``require_kind`` (driver kinds), as declared.
    forbid: tuple[str, ...] = ()
    require_kind: tuple[str, ...] | None = None
    #: The AIP-39 action id whose floor the contract inherited (``implements``), or None.
    implements: str | None = None

    @property
    def identity(self) -> str:
        """``id@major`` (AIP-14 "Stable identity": caches, audit logs and grants key on it)."""
        return f"{self.id}@{self.version.split('.', 1)[0]}"


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
    _check_identity(fm, source_name)
    moved = [k for k in _MOVED_TO_DRIVER if k in fm]
    if moved:
        raise MetadataError(f"{', '.join(moved)}: these fields belong to the AIP-30 DRIVER, not the "
                            "TOOL.md contract (AIP-14 calls such a file invalid)", path=source_name)
    warnings = (("execute: a TOOL.md contract carries no body (AIP-14 conformance rule 2): move it to an "
                 "AIP-30 DRIVER.md that implements this tool; the field is ignored"),) if "execute" in fm else ()
    implements = None
    if fm.get("implements") is not None:
        fm, implements = _implemented(fm, source_name)
    forbid, require_kind = _driver_constraints(fm.get("driver_constraints", {}), source_name)

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
    else:
        timeout = DEFAULT_TIMEOUT_MS  # AIP-14: the ceiling a contract that declares none still has
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
        sha256=str(hash_bytes(data, "sha256")), source_name=source_name, frontmatter=fm,
        warnings=warnings, forbid=forbid, require_kind=require_kind, implements=implements)


def _check_identity(fm: Mapping[str, Any], where: str) -> None:
    """AIP-14 required fields and their limits: ``name`` 1-80 characters, ``id`` 2-80 of lowercase
    letters, digits, dashes and dots, ``description`` at most 2000 characters, ``version`` semver."""
    for key in ("name", "id", "description", "version"):
        _need(fm, key, str, where)
    for key in ("inputs", "outputs"):
        _need(fm, key, dict, where)
    if not _ID_RE.fullmatch(fm["id"]):
        raise MetadataError(f"id: {fm['id']!r} is not lowercase letters, digits, dashes and dots (2-80)",
                            path=where)
    if not 1 <= len(fm["name"]) <= 80:
        raise MetadataError(f"name: expected 1-80 characters, got {len(fm['name'])}", path=where)
    if len(fm["description"]) > 2000:
        raise MetadataError(f"description: expected at most 2000 characters, got {len(fm['description'])}",
                            path=where)
    if not _SEMVER_RE.fullmatch(fm["version"]):
        raise MetadataError(f"version: expected a semver string (MAJOR.MINOR.PATCH), got {fm['version']!r}",
                            path=where)


def _driver_constraints(raw: Any, where: str) -> tuple[tuple[str, ...], tuple[str, ...] | None]:
    if not isinstance(raw, dict):
        raise MetadataError(f"driver_constraints: expected a mapping, got {raw!r}", path=where)
    out: list[tuple[str, ...] | None] = []
    for key in ("forbid", "require_kind"):
        value = raw.get(key)
        if value is None:
            out.append(None)
            continue
        if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
            raise MetadataError(f"driver_constraints.{key}: expected a list of driver kinds, got {value!r}",
                                path=where)
        out.append(tuple(value))
    unknown = [k for k in (out[1] or ()) if k not in _DRIVER_KINDS]
    if unknown:
        raise MetadataError(f"driver_constraints.require_kind: {unknown} are not AIP-14 driver kinds "
                            f"({', '.join(sorted(_DRIVER_KINDS))})", path=where)
    return out[0] or (), out[1]


def _action(ref: Any, where: str) -> dict[str, Any]:
    """The AIP-39 action ``implements`` names: inline, or an ``ACTION.md`` at a workspace path relative
    to the TOOL.md. A bare id or registry ref names an action this host has no copy of: its floor is
    unknown, so the contract is refused (``validateImplementor``: "unknown action")."""
    if isinstance(ref, dict) and isinstance(ref.get("inline"), dict):
        return dict(ref["inline"])
    if isinstance(ref, str) and ref.startswith(("./", "../")) and where != "TOOL.md":
        path = Path(where).parent / ref
        data = read_capped(path, LIMITS.tool_md_bytes, what="ACTION.md")
        action = load_yaml(frontmatter_bytes(data, str(path)), cap=LIMITS.tool_md_bytes,
                           what=f"{path} frontmatter")
        if not isinstance(action, dict):
            raise MetadataError(f"implements: {path} frontmatter is not a mapping", path=where)
        return action
    raise MetadataError(f"implements: unknown action {ref!r}: only an inline action or an ACTION.md at a "
                        "path beside the TOOL.md can be resolved here, and a contract whose action floor is "
                        "unknown is refused (AIP-14 validateImplementor)", path=where)


def _implemented(fm: dict[str, Any], where: str) -> tuple[dict[str, Any], str]:
    """AIP-14 "Action implementation": the tool view with the action's floor merged in; a tool that
    widens the action (lower risk, fewer mutates or requires, a laxer approval) is rejected."""
    action = _action(fm["implements"], where)
    name = str(action.get("id", fm["implements"]))
    merged = dict(fm)
    a_risk, t_risk = action.get("risk_level"), fm.get("risk_level")
    if isinstance(a_risk, int) and not isinstance(a_risk, bool):
        if isinstance(t_risk, int) and t_risk < a_risk:
            raise MetadataError(f"widens risk_level: action {name} {a_risk}, tool {t_risk} (AIP-14: a tool "
                                "MAY raise, MUST NOT lower)", path=where)
        merged["risk_level"] = max(a_risk, t_risk if isinstance(t_risk, int) else a_risk)
    a_mut = action.get("mutates") or []
    if "mutates" in fm and isinstance(a_mut, list):
        dropped = [m for m in a_mut if m not in (fm.get("mutates") or [])]
        if dropped:
            raise MetadataError(f"drops mutates: {dropped} of action {name} (AIP-14: a tool MUST include "
                                "all action mutates)", path=where)
    elif a_mut:
        merged["mutates"] = list(a_mut)
    a_app, t_app = str(action.get("approval", "auto")), fm.get("approval")
    rank = _APPROVAL_RANK.get
    if t_app is not None and rank(str(t_app), 2) < rank(a_app, 2):
        raise MetadataError(f"relaxes approval: action {name} {a_app}, tool {t_app} (AIP-14: a tool MAY "
                            "narrow, MUST NOT relax)", path=where)
    if t_app is None:
        merged["approval"] = a_app
    a_req, t_req = action.get("requires") or {}, fm.get("requires") or {}
    if isinstance(a_req, dict) and isinstance(t_req, dict):
        req = dict(t_req)
        for key in ("network", "secrets", "tools"):
            floor = a_req.get(key) or []
            if key in t_req and [x for x in floor if x not in (t_req.get(key) or [])]:
                raise MetadataError(f"requires.{key}: the tool removes what action {name} requires (AIP-14: "
                                    "MUST NOT remove)", path=where)
            if floor and key not in t_req:
                req[key] = list(floor)
        merged["requires"] = req
    return merged, name


def driver_reason(contract: ToolContract) -> Reason | None:
    """The denial a contract's ``driver_constraints`` give a command-line tool: ``cli`` forbidden, or
    required kinds that do not include it (AIP-14: "this tool MUST NOT be served via ..."); None
    when a CLI may serve it."""
    if "cli" in contract.forbid:
        why = "driver_constraints.forbid names cli"
    elif contract.require_kind is not None and "cli" not in contract.require_kind:
        why = f"driver_constraints.require_kind is {list(contract.require_kind)}, without cli"
    else:
        return None
    return Reason("AIP14_DRIVER_FORBIDDEN", f"the AIP-14 contract {contract.identity!r} may not be served by a "
                  f"command-line tool: {why}", rule=f"aip14:{contract.id}.driver_constraints",
                  expected="cli allowed", actual=why)


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


__all__ = ["DEFAULT_TIMEOUT_MS", "ToolContract", "approval_reason", "driver_reason", "contract_states", "frontmatter_bytes", "load_tool_md",
           "parse_tool_md"]
