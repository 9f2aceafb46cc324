"""Reading untrusted JSON with caps enforced before parsing (practice 2 and 4), and writing
the canonical JSON that atip-trust hashes.

``json``'s exceptions are mapped here, once, into the error tree (the OS's in ``files.py``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Collection
from typing import TYPE_CHECKING

from atip_trust._base.files import path_name, read_capped
from atip_trust._base.lazy import lazy_import
from atip_trust.errors import InputTooLargeError, MalformedInputError

if TYPE_CHECKING:
    import base64
    import binascii
    from typing import Any, Literal, TypeVar, overload

    T = TypeVar("T")
else:
    base64 = lazy_import("base64")  # only for a JSON field that carries bytes: never on a cache hit
    binascii = lazy_import("binascii")  # (with base64)


#: A JSON string (compiled by ``re`` where first used, which the warm path never is: docs/adr/0001-start-up.md).
_STRING = rb'(?s)"(?:[^"\\]|\\.)*"'
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


def check_depth(data: bytes, max_depth: int, *, what: str = "document") -> None:
    """Refuse JSON nested deeper than ``max_depth`` without recursing (json.loads would hit
    RecursionError on a 10,000-deep document). Brackets inside strings are not counted.

    Strings are removed with one regex pass and every non-bracket byte with ``bytes.translate``, so
    the Python-level loop only sees brackets (this runs on every bundle, on the hot path).
    """
    if data.count(b"[") + data.count(b"{") <= max_depth:
        return  # cannot nest deeper than the number of openers
    brackets = re.sub(_STRING, b"", data).translate(None, _NOT_BRACKET)
    depth = 0
    for byte in brackets:
        if byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > max_depth:
                raise InputTooLargeError(f"{what} nests deeper than {max_depth} levels", path="$")
        else:
            depth -= 1


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # Duplicate keys let two parsers see two different documents; refuse them.
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r}")
        out[k] = v
    return out


#: One decoder for every document: ``json.loads`` with options builds a new one per call.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_no_duplicates)


def parse_json(data: bytes, *, what: str = "document", max_depth: int = 64) -> Any:
    """Strict UTF-8, strict JSON (no NaN, no duplicate keys), bounded depth."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise MalformedInputError(
            f"{what} is not valid UTF-8 (byte {err.start}: {data[err.start:err.start + 1]!r})",
            path="$",
        ) from err
    if text.startswith("\ufeff"):
        raise MalformedInputError(f"{what} starts with a byte-order mark", path="$")
    check_depth(data, max_depth, what=what)
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError as err:
        raise MalformedInputError(
            f"{what} is not valid JSON: {err.msg} at line {err.lineno} column {err.colno}", path="$"
        ) from err
    except (ValueError, RecursionError) as err:
        raise MalformedInputError(f"{what} is not valid JSON: {err}", path="$") from err


def load_json_file(
    path: str | os.PathLike[str], cap: int, *, what: str = "document", max_depth: int = 64
) -> Any:
    data = read_capped(path, cap, what=what)
    try:
        return parse_json(data, what=what, max_depth=max_depth)
    except MalformedInputError as err:
        # Keep the JSON path but say which file.
        err.message = f"{path_name(os.fspath(path))}: {err.message}"
        raise


_TYPE_NAMES: dict[type, str] = {
    dict: "JSON object", list: "list", str: "string", int: "integer", bool: "boolean", float: "number",
}


def _type_name(value: Any) -> str:
    return "null" if value is None else _TYPE_NAMES.get(type(value), type(value).__name__)


def expect_object(
    value: Any,
    path: str,
    *,
    allowed: Collection[str] | None = None,
    error: type[MalformedInputError] = MalformedInputError,
) -> dict[str, Any]:
    """``value`` as a JSON object, else ``error`` at ``path``; with ``allowed``, an unknown key is
    refused too (strict parsers: a field we do not read must not carry meaning someone else reads)."""
    if not isinstance(value, dict):
        raise error(f"expected a JSON object, got {_type_name(value)}", path=path)
    if allowed is not None:
        unknown = sorted(set(value) - set(allowed))
        if unknown:
            raise error(f"unknown field {unknown[0]!r} (expected one of {sorted(allowed)})", path=path)
    return value


if TYPE_CHECKING:
    @overload
    def get_field(
        obj: dict[str, Any], key: str, type_: type[T], *, path: str, required: Literal[True] = ...,
        nonempty: bool = ..., error: type[MalformedInputError] = ...,
    ) -> T: ...
    @overload
    def get_field(
        obj: dict[str, Any], key: str, type_: type[T], *, path: str, required: Literal[False],
        nonempty: bool = ..., error: type[MalformedInputError] = ...,
    ) -> T | None: ...
    @overload
    def get_field(
        obj: dict[str, Any], key: str, type_: type[T], *, path: str, required: bool,
        nonempty: bool = ..., error: type[MalformedInputError] = ...,
    ) -> T | None: ...


def get_field(
    obj: dict[str, Any],
    key: str,
    type_: type[T],
    *,
    path: str,
    required: bool = True,
    nonempty: bool = False,
    error: type[MalformedInputError] = MalformedInputError,
) -> T | None:
    """``obj[key]`` of type ``type_``, else ``error`` naming the JSON path ``path`` + key.

    A missing key is an error when ``required``, else None (so is an explicit null). ``bool`` is never
    an ``int`` here. ``nonempty``: an empty string, list or object is refused too.
    """
    where = join_path(path, key)
    if key not in obj or (obj[key] is None and not required):
        if required:
            raise error("required field is missing", path=where)
        return None
    value = obj[key]
    wrong = not isinstance(value, type_) or (isinstance(value, bool) and type_ is int)
    if wrong or (nonempty and not value):
        kind = _TYPE_NAMES.get(type_, type_.__name__)
        kind = f"a non-empty {kind}" if nonempty else f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"
        shown = f"{value!r:.60}" if isinstance(value, str) else _type_name(value)
        raise error(f"expected {kind}, got {shown}", path=where)
    result: T = value
    return result


def b64_bytes(value: Any, path: str, *, error: type[MalformedInputError] = MalformedInputError) -> bytes:
    """A protobuf-JSON ``bytes`` value: standard base64 with padding (RFC 4648 §4), strictly decoded."""
    if not isinstance(value, str):
        raise error(f"expected a base64 string, got {_type_name(value)}", path=path)
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as err:
        raise error(f"not valid standard base64: {err}", path=path) from err


def canonical_json(obj: Any, *, ascii_only: bool = True, stringify: bool = False) -> bytes:
    """Sorted keys, no whitespace: the one byte form that atip-trust hashes and signs checks against.

    For documents whose keys are ASCII and whose numbers are integers (every caller's), this is the
    RFC 8785 form; Rekor's SET payload (``tlog.set_payload``) is checked against it byte for byte.
    The two parameters are where callers genuinely differ:

    * ``ascii_only``: ``\\uXXXX`` escapes for non-ASCII text (True) or raw UTF-8 (False). Policy
      digests have always hashed UTF-8 (``policy.load.canonical_digest``): changing it would change
      the digest of every policy with non-ASCII text. Everything else escapes.
    * ``stringify``: write a value JSON has no type for (a ``datetime``, a ``Path``) as ``str(value)``
      instead of refusing it. The report digest and the audit line hold such facts; a policy document
      or a SET payload never does, so for them a stray object is a bug and raises ``TypeError``.
    """
    return json.dumps(
        obj,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=ascii_only,
        default=str if stringify else None,
    ).encode("utf-8")


def canonical_digest(obj: Any, *, ascii_only: bool = True, stringify: bool = False) -> str:
    """``sha256:<hex>`` of ``canonical_json(obj, ...)`` (same parameters, same reasons)."""
    raw = canonical_json(obj, ascii_only=ascii_only, stringify=stringify)
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def json_path(parts: list[str | int] | tuple[str | int, ...]) -> str:
    """Render a jsonschema-style path as ``$.a.b[0]``."""
    out = "$"
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        elif p.isidentifier():
            out += f".{p}"
        else:
            out += f"[{json.dumps(p)}]"
    return out


def join_path(base: str, *parts: str | int) -> str:
    """``join_path("$.a", "b", 0)`` is ``$.a.b[0]``: a child's path under an already rendered one."""
    return base + json_path(parts)[1:]


__all__ = [
    "b64_bytes",
    "expect_object",
    "get_field",
    "join_path",
    "check_depth",
    "parse_json",
    "load_json_file",
    "json_path",
    "canonical_json",
    "canonical_digest",
]
