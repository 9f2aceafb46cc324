"""Tool calls out of a provider's response, tool results back into the provider's message format.

``parse_tool_call`` reads OpenAI ``choices[0].message.tool_calls`` (arguments a JSON string),
Gemini ``candidates[0].content.parts[].functionCall`` (the function name is the id) and Anthropic
``content[]`` blocks of type ``tool_use``, as the reference does. A response of the wrong shape is a
``ToolCallParseError`` naming the provider and the JSON path; beyond the reference (docs/bridge.md), so
is a call whose name is not a string or whose arguments are not a JSON object (OpenAI's string is parsed
strictly: no duplicate keys, no NaN), where the reference would hand such a call on.

``handle_tool_result`` wraps a result as the reference does: JSON text for OpenAI and Anthropic
(``JSON.stringify``: compact, a string quoted), the value itself for Gemini.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from atip_trust._base.jsonio import parse_json
from atip_trust._base.record import Record, field, fields_json
from atip_trust.bridge.compile import check_provider
from atip_trust.errors import MalformedInputError, UntrustedInputError


class ToolCallParseError(MalformedInputError):
    """A provider response that is not the shape that provider sends."""

    def __init__(self, message: str, *, provider: str, path: str = "$", response: Any = None) -> None:
        super().__init__(f"{provider} response: {message}", path=path)
        self.provider = provider
        #: The response that could not be parsed, as the reference's parse error carries it.
        self.response = response


class ToolCall(Record):
    """One call the model asked for: its id (Gemini: the function name), flat name and arguments."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    to_json = fields_json  # its fields are JSON data already


def _list_at(obj: Any, key: str, provider: str, path: str) -> list[Any]:
    value = obj.get(key) if isinstance(obj, Mapping) else None
    if not isinstance(value, list):
        raise ToolCallParseError(f"expected a {key} array", provider=provider, path=f"{path}.{key}")
    return value


def _string(value: Any, what: str, provider: str, path: str) -> str:
    if not isinstance(value, str) or not value:
        raise ToolCallParseError(f"expected {what} as a non-empty string, got {type(value).__name__}",
                                 provider=provider, path=path)
    return value


def _arguments(value: Any, provider: str, path: str) -> dict[str, Any]:
    if value is None:
        return {}
    if provider == "openai" and isinstance(value, str):
        try:
            value = parse_json(value.encode("utf-8", "surrogatepass"), what="tool call arguments")
        except UntrustedInputError as err:
            raise ToolCallParseError(f"arguments are not valid JSON: {err.message}",
                                     provider=provider, path=path) from err
    if not isinstance(value, dict):
        raise ToolCallParseError(f"expected arguments as a JSON object, got {type(value).__name__}",
                                 provider=provider, path=path)
    return value


def _first_list(response: Mapping[str, Any], outer: str, inner: str, key: str, provider: str) -> list[Any]:
    """``response[outer][0][inner][key]`` (OpenAI's tool_calls, Gemini's parts); ``[]`` where the model
    asked for no tool. ``response[outer]`` itself must be a list."""
    items = _list_at(response, outer, provider, "$")
    first = items[0] if items else None
    container = first.get(inner) if isinstance(first, Mapping) else None
    found = container.get(key) if isinstance(container, Mapping) else None
    return found if isinstance(found, list) else []


def parse_tool_call(provider: str, response: Any) -> list[ToolCall]:
    """The tool calls in a provider's response (``[]`` when it asks for none); a ``ToolCallParseError``
    carries the ``response`` it could not read."""
    chosen = check_provider(provider)
    try:
        return _parse_calls(chosen, response)
    except ToolCallParseError as err:
        err.response = response
        raise


def _parse_calls(chosen: str, response: Any) -> list[ToolCall]:
    if not isinstance(response, Mapping):
        raise ToolCallParseError(f"expected an object, got {type(response).__name__}", provider=chosen)
    calls: list[ToolCall] = []
    if chosen == "openai":
        for i, tc in enumerate(_first_list(response, "choices", "message", "tool_calls", chosen)):
            where = f"$.choices[0].message.tool_calls[{i}]"
            fn = tc.get("function") if isinstance(tc, Mapping) else None
            if not isinstance(fn, Mapping):
                raise ToolCallParseError("expected a function object", provider=chosen, path=f"{where}.function")
            calls.append(ToolCall(_string(tc.get("id"), "id", chosen, f"{where}.id"),
                                  _string(fn.get("name"), "name", chosen, f"{where}.function.name"),
                                  _arguments(fn.get("arguments"), chosen, f"{where}.function.arguments")))
    elif chosen == "gemini":
        for i, part in enumerate(_first_list(response, "candidates", "content", "parts", chosen)):
            # The REST API's camelCase, and the snake case RFC §7.2 and the Python SDK write.
            key = next((k for k in ("functionCall", "function_call") if isinstance(part, Mapping) and part.get(k)),
                       None)
            if key is None:
                continue
            fc = part[key]
            where = f"$.candidates[0].content.parts[{i}].{key}"
            if not isinstance(fc, Mapping):
                raise ToolCallParseError("expected functionCall as an object", provider=chosen, path=where)
            name = _string(fc.get("name"), "name", chosen, f"{where}.name")
            calls.append(ToolCall(name, name, _arguments(fc.get("args"), chosen, f"{where}.args")))
    else:
        for i, block in enumerate(_list_at(response, "content", chosen, "$")):
            if not isinstance(block, Mapping) or block.get("type") != "tool_use":
                continue
            where = f"$.content[{i}]"
            calls.append(ToolCall(_string(block.get("id"), "id", chosen, f"{where}.id"),
                                  _string(block.get("name"), "name", chosen, f"{where}.name"),
                                  _arguments(block.get("input"), chosen, f"{where}.input")))
    return calls


def _stringify(result: Any) -> str:
    # JSON.stringify: compact, non-ASCII kept as is.
    try:
        return json.dumps(result, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as err:
        raise MalformedInputError(f"a tool result must be JSON data: {err}") from err


def handle_tool_result(provider: str, id: str, result: Any, *, is_error: bool = False) -> dict[str, Any]:
    """The message that returns ``result`` for call ``id`` (Gemini: the function name) to the model.
    ``is_error``: the call was refused or failed; Anthropic's ``tool_result`` says so with its
    ``is_error`` flag (the other providers have none: the result's ``ok: false`` says it)."""
    chosen = check_provider(provider)
    if chosen == "openai":
        return {"role": "tool", "tool_call_id": id, "content": _stringify(result)}
    if chosen == "gemini":
        return {"role": "user", "parts": [{"function_response": {"name": id, "response": result}}]}
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": id, "content": _stringify(result)}
    if is_error:
        block["is_error"] = True
    return {"role": "user", "content": [block]}


__all__ = ["ToolCall", "ToolCallParseError", "handle_tool_result", "parse_tool_call"]
