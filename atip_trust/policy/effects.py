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

from atip_trust.policy.model import EFFECT_CLASSES

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
) -> tuple[list[dict[str, Any]], bool]:
    """RFC §3.3 walk: every effects object on the path (tool level first), and whether it was found.

    Each level is kept separately so that ``merge_states`` lets the value adding risk win (a command's
    ``destructive: false`` cannot cancel the tool's ``destructive: true``). Words after a leaf command
    are its arguments (RFC §3.4); a word that is not a sub-command of a command *group* means the command
    is not declared (found = False), and its effects are unknown, hence risky.
    """
    if not isinstance(metadata, Mapping):
        return [], False
    levels: list[dict[str, Any]] = []
    eff = metadata.get("effects")
    if isinstance(eff, Mapping):
        levels.append(dict(eff))
    node_map: Any = metadata.get("commands")
    if not command:
        root = node_map.get("") if isinstance(node_map, Mapping) else None
        if isinstance(root, Mapping) and isinstance(root.get("effects"), Mapping):
            levels.append(dict(root["effects"]))
        return levels, True
    consumed = 0
    for word in command:
        node = node_map.get(word) if isinstance(node_map, Mapping) else None
        if not isinstance(node, Mapping):
            break
        consumed += 1
        if isinstance(node.get("effects"), Mapping):
            levels.append(dict(node["effects"]))
        node_map = node.get("commands")
    if consumed == 0:
        root = node_map.get("") if isinstance(node_map, Mapping) else None
        if isinstance(root, Mapping):
            # The tool's root command ("" in RFC §4.5) takes the words as arguments.
            if isinstance(root.get("effects"), Mapping):
                levels.append(dict(root["effects"]))
            return levels, True
        return levels, False
    if consumed < len(command) and isinstance(node_map, Mapping) and node_map:
        return levels, False
    return levels, True


def states_for_command(
    metadata: Mapping[str, Any] | None, command: Sequence[str]
) -> tuple[dict[str, State], bool]:
    """Class states for ``command`` (risk wins across levels); all unknown when undeclared."""
    levels, found = command_effects(metadata, command)
    if not found:
        return {cls: "unknown" for cls in EFFECT_CLASSES}, False
    return merge_states(*(classify(e) for e in levels)), True


__all__ = ["states_for_command"]
