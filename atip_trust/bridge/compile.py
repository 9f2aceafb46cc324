"""ATIP metadata -> provider tool definitions for OpenAI, Gemini and Anthropic (RFC §8.2).

The output is the reference atip-bridge's, key for key and character for character
(fixtures/bridge/golden/, made by fixtures/bridge/make_golden.mjs from the reference itself):

* one definition per leaf command, named by ``facts.flatten`` (the one flat-name list);
* the description followed by a safety suffix, ``[⚠️ DESTRUCTIVE | ⚠️ NOT REVERSIBLE | ⚠️ NOT
  IDEMPOTENT | 💰 BILLABLE | 🔒 READ-ONLY]`` as far as each applies (RFC §8.2 rule 1), READ-ONLY only
  when network and filesystem writes are both explicitly false;
* OpenAI descriptions limited to 1024 characters, counted as the API counts them (UTF-16 code units,
  JavaScript's ``length``), the base description cut and ``...`` added so that the suffix survives;
* types coerced to JSON Schema (RFC §8.2 rule 4: file, directory and url become strings with a note in
  the description, enum a string with ``enum``); arguments required unless ``required: false``, options
  optional unless ``required: true``;
* OpenAI strict mode: every property required, the optional ones nullable (``["string", "null"]``),
  ``additionalProperties: false`` and ``strict: true``.

Where the reference is unsafe or wrong this module does better (docs/bridge.md, each with a test):

* metadata is schema-checked first (``facts.metadata``); invalid metadata is a ``MetadataError`` naming
  the JSON path, where the reference checks four fields;
* the root command ``""`` (RFC §4.5) is named after the tool (``tool``, not ``tool_``); a flat name that
  collides, or is outside ``^[a-zA-Z0-9_-]{1,64}$``, is an error, within one tool and across the tools
  of ``compile_tools`` (the reference lets the later one silently replace the earlier);
* an argument and an option of one command with the same name is an error (the reference keeps one
  property and lists the name twice in ``required``);
* the suffix is computed from the effects of the whole path, tool level first, the value adding risk
  winning (RFC §3.6, ``effects.merge_declared``): the same effects the policy engine decides with, so the
  model is told what admission assumes; the reference reads the leaf's effects only;
* commands keep declaration order; JavaScript puts integer-like keys (``"2"``, ``"10"``) first;
* a missing description is ``""`` (the reference writes ``"undefined"``);
* the 1024 cut never splits a UTF-16 surrogate pair (the reference can leave half an emoji).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from atip_trust.errors import MetadataError, UsageError
from atip_trust.facts.effects import NEVER_READ_ONLY, classify, merge_declared
from atip_trust.facts.flatten import FlatCommand, flatten_commands
from atip_trust.facts.metadata import MetadataDocument, parse_metadata

Provider = Literal["openai", "gemini", "anthropic"]
PROVIDERS: tuple[Provider, ...] = ("openai", "gemini", "anthropic")

#: OpenAI's description limit, in UTF-16 code units (the API counts JavaScript string length).
OPENAI_DESCRIPTION_MAX_LENGTH = 1024

#: Safety flags of the description suffix (RFC §8.2 rule 1), exactly as the reference spells them.
SAFETY_FLAGS: Mapping[str, str] = {
    "DESTRUCTIVE": "\u26a0\ufe0f DESTRUCTIVE",
    "NOT_REVERSIBLE": "\u26a0\ufe0f NOT REVERSIBLE",
    "NOT_IDEMPOTENT": "\u26a0\ufe0f NOT IDEMPOTENT",
    "DELETES_FILES": "\U0001f5d1\ufe0f DELETES FILES",
    "BILLABLE": "\U0001f4b0 BILLABLE",
    "INTERACTIVE": "\u2328\ufe0f NEEDS A TERMINAL OR INPUT",
    "READ_ONLY": "\U0001f512 READ-ONLY",
}

#: RFC §8.2 rule 4: ATIP type -> (JSON Schema type, description note).
_COERCE: Mapping[str, tuple[str, str]] = {
    "string": ("string", ""),
    "integer": ("integer", ""),
    "number": ("number", ""),
    "boolean": ("boolean", ""),
    "file": ("string", " (file path)"),
    "directory": ("string", " (directory path)"),
    "url": ("string", " (URL)"),
    "enum": ("string", ""),
    "array": ("array", ""),
}


def utf16_len(text: str) -> int:
    """Length as JavaScript (and the providers' limits) count it: UTF-16 code units."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def _utf16_prefix(text: str, units: int) -> str:
    """The longest prefix of at most ``units`` UTF-16 code units that ends on a whole character."""
    if units <= 0:
        return ""
    if utf16_len(text) == len(text):
        return text[:units]
    used = 0
    for i, ch in enumerate(text):
        used += 2 if ord(ch) > 0xFFFF else 1
        if used > units:
            return text[:i]
    return text


def tool_document(tool: Mapping[str, Any] | MetadataDocument) -> dict[str, Any]:
    """The schema-checked metadata object: a ``MetadataDocument`` as parsed, or a mapping checked now
    (``MetadataError`` naming the JSON path of the first problem)."""
    if isinstance(tool, MetadataDocument):
        return _described(tool.doc)
    if not isinstance(tool, Mapping):
        raise MetadataError(f"tool metadata must be a JSON object, got {type(tool).__name__}", path="$")
    try:
        data = json.dumps(tool, allow_nan=False).encode()
    except (TypeError, ValueError) as err:
        raise MetadataError(f"tool metadata is not JSON data: {err}", path="$") from err
    return _described(parse_metadata(data, source_name=str(tool.get("name", "<metadata>"))).doc)


def _described(doc: dict[str, Any]) -> dict[str, Any]:
    """The tool-level ``description`` is required to compile, as RFC §3.2, its schema and the reference
    atip-bridge require (``metadata check`` tolerates it as a warning: it carries no trust meaning, but
    a compiled tool without it says nothing of what it is)."""
    if not isinstance(doc.get("description"), str):
        got = "missing" if "description" not in doc else type(doc["description"]).__name__
        raise MetadataError(f"the tool-level description is required to compile (RFC §3.2): expected a "
                            f"string, got {got}", path="$.description")
    return doc


def command_effects(fc: FlatCommand) -> dict[str, Any]:
    """The effects of one command as compiled: every level of its path merged, risk winning."""
    return merge_declared(fc.effect_levels)


def safety_suffix(effects: Mapping[str, Any] | None) -> str:
    """``[flag | flag]`` for the risky effects declared (RFC §8.2 rule 1), or ``""``."""
    if not effects:
        return ""
    flags: list[str] = []
    cost = effects.get("cost")
    fs = effects.get("filesystem")
    if effects.get("destructive") is True:
        flags.append(SAFETY_FLAGS["DESTRUCTIVE"])
    if effects.get("reversible") is False:
        flags.append(SAFETY_FLAGS["NOT_REVERSIBLE"])
    if effects.get("idempotent") is False:
        flags.append(SAFETY_FLAGS["NOT_IDEMPOTENT"])
    deletes = isinstance(fs, Mapping) and fs.get("delete") is True
    if deletes:
        # RFC §3.6: filesystem.delete is a HIGH translation priority field; the reference drops it.
        flags.append(SAFETY_FLAGS["DELETES_FILES"])
    if isinstance(cost, Mapping) and cost.get("billable") is True:
        flags.append(SAFETY_FLAGS["BILLABLE"])
    inter = effects.get("interactive")
    if isinstance(inter, Mapping) and (inter.get("tty") is True or inter.get("stdin") in ("required", "password")):
        # RFC §3.6 HIGH: a command that needs a terminal or typed input cannot run here (the call loop
        # refuses it, INTERACTIVE_REQUIRED); the model is told before it tries. ``prompts`` alone is no
        # need (a prompt on end of file is the tool's "no"), so it adds nothing.
        flags.append(SAFETY_FLAGS["INTERACTIVE"])
    # Read-only only when both are explicitly false: an empty filesystem object says nothing. A declared
    # creation, modification, deletion or subprocess is never read-only (docs/effects.md), which the
    # reference's flag does not check.
    declared = classify(effects)
    if effects.get("network") is False and isinstance(fs, Mapping) and fs.get("write") is False and not deletes \
            and not any(declared[c] == "risky" for c in NEVER_READ_ONLY):
        flags.append(SAFETY_FLAGS["READ_ONLY"])
    return f"[{' | '.join(flags)}]" if flags else ""


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


#: RFC §8.3: a command's ``examples`` go into its description; at most this many, each cut to
#: ``EXAMPLE_MAX_LENGTH`` characters, so they never crowd out the description (and, for OpenAI, are
#: the first text the 1024 cut takes: the safety suffix always survives).
MAX_EXAMPLES = 3
EXAMPLE_MAX_LENGTH = 200


def _examples(command: Mapping[str, Any]) -> str:
    raw = command.get("examples")
    shown = [e if len(e) <= EXAMPLE_MAX_LENGTH else e[:EXAMPLE_MAX_LENGTH - 3] + "..."
             for e in (raw if isinstance(raw, list) else []) if isinstance(e, str) and e.strip()][:MAX_EXAMPLES]
    return "Examples: " + "; ".join(f"`{e}`" for e in shown) if shown else ""


def describe(fc: FlatCommand, *, note: str = "", limit: int | None = None) -> str:
    """The command's description and its examples (RFC §8.3), then its safety suffix and ``note``
    (kept whole, like the suffix), cut to ``limit`` UTF-16 units as the reference cuts for OpenAI."""
    base = " ".join(p for p in (_text(fc.command.get("description")), _examples(fc.command)) if p)
    tail = " ".join(p for p in (safety_suffix(command_effects(fc)), note) if p)
    text = f"{base} {tail}" if tail and base else base or tail
    if limit is not None and utf16_len(text) > limit:
        cut = _utf16_prefix(base, max(0, limit - utf16_len(tail) - 4)) + "..."
        text = f"{cut} {tail}" if tail else cut
    return text


def _parameters(fc: FlatCommand, strict: bool) -> tuple[dict[str, Any], list[str]]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    for kind in ("arguments", "options"):
        params = fc.command.get(kind)
        for i, param in enumerate(params if isinstance(params, list) else []):
            name = param["name"]
            if name in properties:
                raise MetadataError(
                    f"{fc.json_path}.{kind}[{i}]: parameter name {name!r} is declared twice in this "
                    "command; a tool call's argument must map to exactly one parameter")
            ptype, note = _COERCE.get(param.get("type"), ("string", ""))
            desc = _text(param.get("description")) + note
            is_required = param.get("required") is not False if kind == "arguments" \
                else param.get("required") is True
            item = _item_schema(param, ptype)
            if item is not None:
                ptype = "array"
            prop: dict[str, Any] = {
                "type": [ptype, "null"] if strict and not is_required else ptype,
                "description": desc.lstrip() if "description" not in param else desc,
            }
            if item is not None:
                prop["items"] = item
            elif param.get("enum") is not None:
                prop["enum"] = enum_words(param["enum"]) if ptype == "string" else param["enum"]
            properties[name] = prop
            if strict or is_required:
                required.append(name)
    return properties, required


def _item_schema(param: Mapping[str, Any], ptype: str) -> dict[str, Any] | None:
    """The ``items`` of a parameter that takes a list, None for one that does not. A ``variadic``
    parameter takes a list of its own type, an ``array`` a list of strings (both what the argv builder,
    facts/arguments.py, accepts: a model that follows the schema can always make the call; the reference
    compiles a variadic to a single string the call cannot carry and leaves arrays without ``items``,
    which OpenAI's strict mode refuses). A variadic boolean is a flag: it takes no list."""
    if param.get("type") == "array":
        item: dict[str, Any] = {"type": "string"}
    elif param.get("variadic") is True and ptype != "boolean":
        item = {"type": ptype}
    else:
        return None
    if param.get("enum") is not None:
        item["enum"] = enum_words(param["enum"]) if item["type"] == "string" else param["enum"]
    return item


def enum_words(values: Sequence[Any]) -> list[Any]:
    """A string-typed parameter's ``enum`` as the strings a model can send (RFC §8.2 rule 4: enum is a
    string): a declared ``2`` is offered as ``"2"``, its argv word, which the argv builder accepts for
    it (facts/arguments.py). The reference lists ``2`` under ``type: string``, which no value can
    satisfy. An integer or number parameter's enum keeps its numbers."""
    return [v if isinstance(v, (str, bool)) else repr(v) for v in values]


def compile_command(fc: FlatCommand, provider: Provider, *, strict: bool = False, note: str = "") -> dict[str, Any]:
    """One provider tool definition for one flat command (``note`` is appended after the suffix)."""
    if provider == "openai":
        properties, required = _parameters(fc, strict)
        fn: dict[str, Any] = {
            "name": fc.name,
            "description": describe(fc, note=note, limit=OPENAI_DESCRIPTION_MAX_LENGTH),
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        }
        if strict:
            fn["strict"] = True
        return {"type": "function", "function": fn}
    properties, required = _parameters(fc, False)
    schema_key = "parameters" if provider == "gemini" else "input_schema"
    return {
        "name": fc.name,
        "description": describe(fc, note=note),
        schema_key: {"type": "object", "properties": properties, "required": required},
    }


def check_provider(provider: str) -> Provider:
    for p in PROVIDERS:
        if provider == p:
            return p
    raise UsageError(f"unknown provider: expected one of {', '.join(PROVIDERS)}, got {provider!r}")


def _compile(tool: Mapping[str, Any] | MetadataDocument, provider: Provider, strict: bool) -> list[dict[str, Any]]:
    return [compile_command(fc, provider, strict=strict) for fc in flatten_commands(tool_document(tool))]


def to_openai(tool: Mapping[str, Any] | MetadataDocument, strict: bool = False) -> list[dict[str, Any]]:
    """OpenAI function tools, one per leaf command (``strict``: OpenAI's strict mode)."""
    return _compile(tool, "openai", strict)


def to_gemini(tool: Mapping[str, Any] | MetadataDocument) -> list[dict[str, Any]]:
    """Gemini function declarations, one per leaf command."""
    return _compile(tool, "gemini", False)


def to_anthropic(tool: Mapping[str, Any] | MetadataDocument) -> list[dict[str, Any]]:
    """Anthropic tools (``input_schema``), one per leaf command."""
    return _compile(tool, "anthropic", False)


def tool_name_of(definition: Mapping[str, Any]) -> str:
    """The name of a compiled provider tool (OpenAI nests it under ``function``)."""
    fn = definition.get("function")
    return str(fn["name"] if isinstance(fn, Mapping) else definition["name"])


def check_unique(names: Sequence[str], origins: Sequence[str]) -> None:
    """A name given by two tools is an error naming both: a call must reach exactly one command."""
    seen: dict[str, str] = {}
    for name, origin in zip(names, origins, strict=True):
        if name in seen:
            raise MetadataError(f"flattened name {name!r} is given by both {seen[name]} and {origin}; "
                                "a tool call must name exactly one command")
        seen[name] = origin


def compile_tools(
    tools: Sequence[Mapping[str, Any] | MetadataDocument], provider: str, strict: bool = False
) -> dict[str, Any]:
    """``{"provider": P, "tools": [...]}`` for every command of every tool, in order. ``strict``
    applies to OpenAI only."""
    chosen = check_provider(provider)
    out: list[dict[str, Any]] = []
    origins: list[str] = []
    for i, tool in enumerate(tools):
        compiled = _compile(tool, chosen, strict)
        out.extend(compiled)
        origins.extend(f"tools[{i}]" for _ in compiled)
    check_unique([tool_name_of(d) for d in out], origins)
    return {"provider": chosen, "tools": out}


__all__ = [
    "OPENAI_DESCRIPTION_MAX_LENGTH",
    "PROVIDERS",
    "SAFETY_FLAGS",
    "Provider",
    "compile_command",
    "compile_tools",
    "safety_suffix",
    "to_anthropic",
    "to_gemini",
    "to_openai",
]
