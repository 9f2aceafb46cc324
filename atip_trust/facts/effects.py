"""Effects, trusted only as far as their source (principle 10; RFC §3.6).

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
from typing import TYPE_CHECKING

from atip_trust._base.lazy import lazy_import

if TYPE_CHECKING:
    import copy
    from typing import Any, Literal, TypeGuard
else:
    copy = lazy_import("copy")  # only when declared effects are merged

#: Effect classes that capability gating knows (RFC §3.6: the metadata field that declares each one, in the comment).
EFFECT_CLASSES: tuple[str, ...] = (
    "destructive",  # destructive: true
    "nonReversible",  # reversible: false
    "nonIdempotent",  # idempotent: false
    "billable",  # cost.billable: true
    "network",  # network: true
    "filesystemWrite",  # filesystem.write: true
    "filesystemDelete",  # filesystem.delete: true
    "interactive",  # interactive.stdin required/password, prompts or tty
    "creates",  # creates: a non-empty list (AIP-14: none; docs/effects.md)
    "modifies",  # modifies: a non-empty list (AIP-14: any mutates entry)
    "deletes",  # deletes: a non-empty list
    "subprocess",  # subprocess: true (AIP-14: requires.tools)
)

#: Classes that must be declared safe (and verified) for the policy's read-only default. Network is left
#: out on purpose: a read (``gh pr view``) fetches over the network without changing anything.
READ_ONLY_CLASSES: tuple[str, ...] = ("destructive", "filesystemWrite", "filesystemDelete", "billable",
                                      "nonIdempotent")
#: Classes whose RFC §3.6 fields are optional descriptions (most tools leave them out): their absence
#: does not stop the read-only default, but a declaration of any (``deletes: ["issue"]``,
#: ``subprocess: true``) does, whatever the booleans say (issue 27).
NEVER_READ_ONLY: tuple[str, ...] = ("creates", "modifies", "deletes", "subprocess")


if TYPE_CHECKING:
    State = Literal["risky", "safe", "unknown"]


def _interactive_state(eff: Mapping[str, Any]) -> State:
    inter = eff.get("interactive")
    if not _is_mapping(inter):
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
    """Each effect class → risky / safe / unknown, from one RFC §3.6 effects object as declared.

    A flag counts only when it is a bool: ``is True`` / ``is False`` (``1`` or ``"true"`` is unknown).
    This runs on every decision (policy/decide.py): one dict, a call per class, no loops."""
    eff: Mapping[str, Any] = effects if _is_mapping(effects) else _EMPTY
    get = eff.get
    fs = get("filesystem")
    fs_get = fs.get if _is_mapping(fs) else _EMPTY.get
    cost = get("cost")
    billable = cost.get("billable") if _is_mapping(cost) else None
    if billable is None and _is_mapping(cost) and cost.get("estimate") == "free":
        billable = False  # RFC §3.6 cost.estimate "free": nothing is billed
    return {
        "destructive": _flag(get("destructive"), True),
        "nonReversible": _flag(get("reversible"), False),
        "nonIdempotent": _flag(get("idempotent"), False),
        "billable": _flag(billable, True),
        "network": _flag(get("network"), True),
        "filesystemWrite": _flag(fs_get("write"), True),
        "filesystemDelete": _flag(fs_get("delete"), True),
        "interactive": _interactive_state(eff),
        "creates": _listed(get("creates")),
        "modifies": _listed(get("modifies")),
        "deletes": _listed(get("deletes")),
        "subprocess": _flag(get("subprocess"), True),
    }


def _flag(value: Any, risky: bool) -> State:
    """A declared bool: risky when it is ``risky``, safe when it is the other; anything else unknown."""
    if type(value) is not bool:
        return "unknown"
    return "risky" if value is risky else "safe"


def _listed(value: Any) -> State:
    """creates / modifies / deletes: any entry is risky, whatever it names (an unknown resource type is a
    change too); an empty list declares none; anything else is unknown."""
    if type(value) is not list:
        return "unknown"
    return "risky" if value else "safe"


def read_only(effects: Mapping[str, Any] | Mapping[str, State] | None) -> bool:
    """Whether ``effects`` (an RFC §3.6 object or a class → state map) declare a read-only command:
    every ``READ_ONLY_CLASSES`` class declared safe, and no ``NEVER_READ_ONLY`` class declared. Whether
    the declaration may be believed (verified metadata) is the caller's question (policy/decide.py)."""
    if effects is None:
        return False
    states = merge_states(effects) if _is_state_map(effects) else classify(effects)
    return all(states[c] == "safe" for c in READ_ONLY_CLASSES) and not any(
        states[c] == "risky" for c in NEVER_READ_ONLY)


_EMPTY: Mapping[str, Any] = {}


def _is_mapping(value: object) -> TypeGuard[Mapping[str, Any]]:
    # A plain dict first: the ABC check costs more, and JSON documents are dicts.
    return type(value) is dict or isinstance(value, Mapping)


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


def effective_states(
    effects: Mapping[str, Any] | Mapping[str, State] | None, *, verified: bool
) -> tuple[dict[str, State], list[str]]:
    """States policy may act on, and the classes whose "safe" claim was disregarded as unverified.

    ``effects`` is either an RFC §3.6 effects object or an already merged class → state map.
    """
    if effects is None:  # no declaration (most tools): every class unknown, so risky; nothing disregarded
        return dict(_ALL_RISKY), []
    states: dict[str, State] = merge_states(effects) if _is_state_map(effects) else classify(effects)
    disregarded: list[str] = []
    for cls, st in states.items():  # assigning to existing keys only: the dict's size stays
        if st == "safe":
            if not verified:
                disregarded.append(cls)
                states[cls] = "risky"
        elif st == "unknown":
            states[cls] = "risky"
    return states, disregarded


_CLASS_NAMES = frozenset(EFFECT_CLASSES)
_ALL_RISKY: dict[str, State] = {cls: "risky" for cls in classify(None)}


def _is_state_map(effects: object) -> TypeGuard[Mapping[str, State]]:
    """True for a non-empty class → state map (``merge_states``' output), not an RFC §3.6 object."""
    if not effects or not _is_mapping(effects):
        return False
    for key, value in effects.items():
        if key not in _CLASS_NAMES or value not in ("risky", "safe", "unknown"):
            return False
    return True


def walk_command(
    metadata: Mapping[str, Any] | None, command: Sequence[str]
) -> tuple[list[dict[str, Any]], str | None]:
    """``_walk`` without saying whether the words name an undeclared command."""
    levels, why, _ = _walk(metadata, command)
    return levels, why


def _walk(
    metadata: Mapping[str, Any] | None, command: Sequence[str]
) -> tuple[list[dict[str, Any]], str | None, bool]:
    """RFC §3.3 walk: every effects object on the path (tool level first), or why there is none.

    Returns ``(levels, None, False)`` when ``command`` names one declared command unambiguously, and
    ``(levels so far, reason, undeclared)`` when it does not; the caller treats the effects as unknown
    (risky). ``undeclared`` is True when a word is simply not in the document (a partial document's
    omitted command, RFC §3.1.1), False when the words are ambiguous or there is no document.
    Each level is kept separately so that ``merge_states`` lets the value adding risk win (a command's
    ``destructive: false`` cannot cancel the tool's ``destructive: true``). Words after a leaf command
    are its arguments (RFC §3.4). Not declared, hence unknown:

    * a word that is not a sub-command of a command *group* (``pr delete-all`` when ``pr`` has
      ``view``/``list``);
    * a word before the command path that is not a sub-command (an option: ``gh --yes=true repo
      delete``). Its arity is unknown, so the words cannot be matched to one declared command: the
      tool's root command with arguments, or ``repo delete`` with a global option. The root command
      (``""``, RFC §4.5) takes words as its arguments only when none of them names a sub-command.
    """
    if not isinstance(metadata, Mapping):
        return [], "no metadata declares the tool's commands", False
    levels: list[dict[str, Any]] = []
    eff = metadata.get("effects")
    if isinstance(eff, Mapping):
        levels.append(dict(eff))
    node_map: Any = metadata.get("commands")
    top: Mapping[str, Any] = node_map if isinstance(node_map, Mapping) else {}
    root = top.get("")
    if not command:
        if isinstance(root, Mapping) and isinstance(root.get("effects"), Mapping):
            levels.append(dict(root["effects"]))
        return levels, None, False
    consumed = 0
    for word in command:
        node = node_map.get(word) if isinstance(node_map, Mapping) and word else None
        if not isinstance(node, Mapping):
            break
        consumed += 1
        if isinstance(node.get("effects"), Mapping):
            levels.append(dict(node["effects"]))
        node_map = node.get("commands")
    if consumed == 0:
        named = next((w for w in command[1:] if w and isinstance(top.get(w), Mapping)), None)
        if named is not None:
            return levels, (
                f"{command[0]!r} comes before the sub-command word {named!r} and is not a sub-command "
                "itself: its arity is unknown, so the words match no one declared command"
            ), False
        if isinstance(root, Mapping):
            # The tool's root command ("" in RFC §4.5) takes the words as arguments.
            if isinstance(root.get("effects"), Mapping):
                levels.append(dict(root["effects"]))
            return levels, None, False
        return levels, f"{command[0]!r} is not a declared command of the tool", True
    if consumed < len(command) and isinstance(node_map, Mapping) and node_map:
        path = " ".join(command[:consumed])
        return levels, f"{command[consumed]!r} is not a declared sub-command of {path!r}", True
    return levels, None, False


def command_effects(
    metadata: Mapping[str, Any] | None, command: Sequence[str]
) -> tuple[list[dict[str, Any]], bool]:
    """``walk_command`` as (levels, found): found is False when the command is not declared."""
    levels, why = walk_command(metadata, command)
    return levels, why is None


def states_for_command(
    metadata: Mapping[str, Any] | None, command: Sequence[str]
) -> tuple[dict[str, State], bool]:
    """Class states for ``command`` (risk wins across levels); all unknown when undeclared."""
    states, why = command_states(metadata, command)
    return states, why is None


def command_states(
    metadata: Mapping[str, Any] | None, command: Sequence[str]
) -> tuple[dict[str, State], str | None]:
    """Class states for ``command`` (risk wins across levels), or all unknown and the reason why."""
    states, why, _ = command_lookup(metadata, command)
    return states, why


#: RFC §3.1.1 ``omitted.safetyAssumption`` values that let an omitted command take effects at all, and
#: the effects each gives (merged with the tool level and any group walked): ``known-safe`` "no
#: destructive effects"; ``same-as-included`` the tool's own profile. Both are safe *claims*, so they
#: relax nothing unless the metadata is verified (``effective_states``; policy/decide.py asks otherwise).
OMITTED_EFFECTS: dict[str, dict[str, Any]] = {"known-safe": {"destructive": False}, "same-as-included": {}}


def omitted_assumption(metadata: Mapping[str, Any] | None) -> str:
    """A partial document's ``omitted.safetyAssumption``; ``unknown`` when absent or not a known value
    (RFC §3.1.1: the agent handling's default)."""
    omitted = metadata.get("omitted") if isinstance(metadata, Mapping) else None
    value = omitted.get("safetyAssumption") if isinstance(omitted, Mapping) else None
    return value if value in ("known-safe", "known-unsafe", "same-as-included") else "unknown"


def command_lookup(
    metadata: Mapping[str, Any] | None, command: Sequence[str]
) -> tuple[dict[str, State], str | None, str | None]:
    """The one lookup of a command's effects (admit, exec, hooks, the bridge's surface and the call
    validator): ``(states, why unknown, omitted)``.

    ``omitted`` is the RFC §3.1.1 safety assumption when the words name a command absent from a
    *partial* document (``partial: true``): ``known-safe``/``same-as-included`` give the command
    ``OMITTED_EFFECTS`` on top of the levels walked (``why`` None); ``unknown``/``known-unsafe`` (or
    none) leave every class unknown and policy/decide.py asks (RFC: "require confirmation")."""
    levels, why, undeclared = _walk(metadata, command)
    omitted = None
    if why is not None and undeclared and isinstance(metadata, Mapping) and metadata.get("partial") is True:
        omitted = omitted_assumption(metadata)
        if omitted in OMITTED_EFFECTS:
            return merge_states(*(classify(e) for e in [*levels, OMITTED_EFFECTS[omitted]])), None, omitted
        why = f"{why}, and the partial document says omitted commands are {omitted} (RFC §3.1.1)"
    if why is not None:
        return {cls: "unknown" for cls in EFFECT_CLASSES}, why, omitted
    return merge_states(*(classify(e) for e in levels)), None, None


def interactive_need(effects: Mapping[str, Any] | None) -> tuple[Literal["tty", "stdin"], str] | None:
    """What an RFC §3.6 effects object (``merge_declared`` along the command's path) says the command
    cannot run without, as (kind, text), or None: ``interactive.tty: true`` a terminal (``tty``);
    ``stdin: password`` or ``required`` input on stdin (``stdin``; "Use PTY, pipe input, or skip"). A
    claim that adds a need is believed from any metadata (it can only stop a run). ``prompts: true`` is
    no need: a prompt reading an empty stdin gets end of file, which is the tool's "no"."""
    inter = effects.get("interactive") if _is_mapping(effects) else None
    if not _is_mapping(inter):
        return None
    if inter.get("tty") is True:
        return "tty", "a terminal (interactive.tty: true)"
    stdin = inter.get("stdin")
    if stdin in ("password", "required"):
        return "stdin", f"input on stdin (interactive.stdin: {stdin})"
    return None


def command_interactive_need(
    metadata: Mapping[str, Any] | None, command: Sequence[str]
) -> tuple[Literal["tty", "stdin"], str] | None:
    """``interactive_need`` for the declared command ``command`` names (None when it names none: its
    effects are unknown, which the ``interactive`` capability gate already counts as risky)."""
    levels, why = walk_command(metadata, command)
    return interactive_need(merge_declared(levels)) if why is None else None


#: For each RFC §3.6 field, the value that adds risk (nested fields as ``parent.child``).
_RISKY_VALUE: dict[str, Any] = {
    "destructive": True, "reversible": False, "idempotent": False, "network": True,
    "subprocess": True, "filesystem.write": True, "filesystem.delete": True, "cost.billable": True,
    "interactive.prompts": True, "interactive.tty": True,
}
#: ``interactive.stdin``, least to most demanding.
_STDIN_ORDER = ("none", "optional", "required", "password")


def _riskier(dotted: str, old: Any, new: Any) -> Any:
    if dotted in ("creates", "modifies", "deletes") and isinstance(old, list) and isinstance(new, list):
        return old + [x for x in new if x not in old]  # every level's declared changes
    if dotted in _RISKY_VALUE:
        risky = _RISKY_VALUE[dotted]
        return risky if risky in (old, new) and isinstance(risky, bool) else new
    if dotted == "interactive.stdin" and old in _STDIN_ORDER and new in _STDIN_ORDER:
        return max(old, new, key=_STDIN_ORDER.index)
    return new  # a field that carries no risk (duration, notes): the deeper declaration is more precise


def merge_declared(levels: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """RFC §3.6 effects objects along a command path merged into one, the value adding risk winning
    where two levels speak (as ``merge_states`` does per class); nested objects merge one level down."""
    out: dict[str, Any] = {}
    for level in levels:
        for key, value in level.items():
            if isinstance(value, Mapping) and isinstance(out.get(key), dict):
                inner: dict[str, Any] = dict(out[key])
                for sub, sv in value.items():
                    inner[sub] = _riskier(f"{key}.{sub}", inner[sub], sv) if sub in inner else copy.deepcopy(sv)
                out[key] = inner
            elif key in out and not isinstance(value, Mapping):
                out[key] = _riskier(key, out[key], copy.deepcopy(value))
            else:
                out[key] = copy.deepcopy(dict(value) if isinstance(value, Mapping) else value)
    return out


__all__ = ["command_interactive_need", "command_lookup", "interactive_need", "read_only", "states_for_command"]
