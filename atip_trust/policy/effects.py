"""Effects, trusted only as far as their source (DESIGN.md principle 10; RFC §3.6).

A declared effect can *relax* capability gating only when the metadata declaring it is verified (a shim
signed by a registry signer named in policy, or metadata covered by a signature policy trusts). Otherwise a
"safe" claim is disregarded and the class counts as risky: unverified claims can only tighten, as Gemini CLI
lets extension-supplied rules only tighten and as MCP treats tool annotations as untrusted.

Tool-level and command-level effects merge per field: a command inherits the tool's value where it says
nothing; where both speak, the value that adds risk wins; where neither does, the class is unknown, and
unknown is risky (Agent Tool: "a tool should not be treated as ... non-destructive ... unless it says so").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from .model import EFFECT_CLASSES

State = Literal["risky", "safe", "unknown"]


def _get(eff: Mapping[str, Any], dotted: str) -> Any:
    cur: Any = eff
    for part in dotted.split("."):
        if not isinstance(cur, Mapping) or part not in cur:
            return None
        cur = cur[part]
    return cur


def _bool_state(val: Any, risky_when: bool) -> State:
    if not isinstance(val, bool):
        return "unknown"
    return "risky" if val is risky_when else "safe"


def _interactive_state(eff: Mapping[str, Any]) -> State:
    inter = eff.get("interactive")
    if not isinstance(inter, Mapping):
        return "unknown"
    stdin = inter.get("stdin")
    prompts = inter.get("prompts")
    tty = inter.get("tty")
    if stdin in ("required", "password") or prompts is True or tty is True:
        return "risky"
    if stdin in ("none", "optional") and prompts is False and tty is False:
        return "safe"
    return "unknown"


def classify(effects: Mapping[str, Any] | None) -> dict[str, State]:
    """Each effect class → risky / safe / unknown, from one RFC §3.6 effects object as declared."""
    eff: Mapping[str, Any] = effects if isinstance(effects, Mapping) else {}
    fs = eff.get("filesystem")
    fs_map: Mapping[str, Any] = fs if isinstance(fs, Mapping) else {}
    return {
        "destructive": _bool_state(eff.get("destructive"), True),
        "nonReversible": _bool_state(eff.get("reversible"), False),
        "nonIdempotent": _bool_state(eff.get("idempotent"), False),
        "billable": _bool_state(_get(eff, "cost.billable"), True),
        "network": _bool_state(eff.get("network"), True),
        "filesystemWrite": _bool_state(fs_map.get("write"), True),
        "filesystemDelete": _bool_state(fs_map.get("delete"), True),
        "interactive": _interactive_state(eff),
    }


def merge_states(*layers: Mapping[str, State]) -> dict[str, State]:
    """Per class: any risky → risky; else any safe → safe; else unknown (risk-adding values win)."""
    out: dict[str, State] = {}
    for cls in EFFECT_CLASSES:
        states = [layer.get(cls, "unknown") for layer in layers]
        if "risky" in states:
            out[cls] = "risky"
        elif "safe" in states:
            out[cls] = "safe"
        else:
            out[cls] = "unknown"
    return out


def merge_effects(
    tool_effects: Mapping[str, Any] | None, command_effects: Mapping[str, Any] | None
) -> dict[str, State]:
    return merge_states(classify(tool_effects), classify(command_effects))


def effective_states(
    effects: Mapping[str, Any] | Mapping[str, State] | None, *, verified: bool
) -> tuple[dict[str, State], list[str]]:
    """States policy may act on, and the classes whose "safe" claim was disregarded as unverified.

    ``effects`` is either an RFC §3.6 effects object or an already merged class → state map.
    """
    if effects is not None and effects and all(k in EFFECT_CLASSES for k in effects) and all(
        v in ("risky", "safe", "unknown") for v in effects.values()
    ):
        states: dict[str, State] = merge_states(effects)
    else:
        states = classify(effects)
    disregarded: list[str] = []
    if not verified:
        for cls, st in list(states.items()):
            if st == "safe":
                disregarded.append(cls)
                states[cls] = "risky"
    for cls, st in list(states.items()):
        if st == "unknown":
            states[cls] = "risky"
    return states, disregarded


def command_effects(
    metadata: Mapping[str, Any] | None, command: Sequence[str]
) -> tuple[dict[str, Any] | None, dict[str, Any] | None, bool]:
    """Minimal RFC §3.3 walk: (tool-level effects, the named command's effects, command found).

    Used only when ``atip_trust.metadata`` is not available. A command path that does not exist in the
    metadata gives (tool effects, None, False): the caller treats its effects as unknown.
    """
    if not isinstance(metadata, Mapping):
        return None, None, False
    tool_eff = metadata.get("effects")
    tool_eff = dict(tool_eff) if isinstance(tool_eff, Mapping) else None
    if not command:
        return tool_eff, None, True
    node: Any = metadata
    for word in command:
        cmds = node.get("commands") if isinstance(node, Mapping) else None
        if not isinstance(cmds, Mapping) or word not in cmds:
            # Stop at the deepest known command: trailing words may be arguments (RFC §3.4).
            break
        node = cmds[word]
    else:
        eff = node.get("effects") if isinstance(node, Mapping) else None
        return tool_eff, dict(eff) if isinstance(eff, Mapping) else None, True
    if node is metadata:
        return tool_eff, None, False
    eff = node.get("effects") if isinstance(node, Mapping) else None
    return tool_eff, dict(eff) if isinstance(eff, Mapping) else None, True


__all__ = ["classify", "merge_states", "merge_effects", "effective_states", "command_effects", "State"]
