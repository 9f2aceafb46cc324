"""Reading untrusted YAML (AIP-14 ``TOOL.md`` frontmatter): the one PyYAML boundary.

PyYAML's ``SafeLoader`` builds only plain data (no Python objects, no tags that run code). On top of it,
before anything is built, the event stream is checked (practice 2: caps before parsing builds a tree):

* a byte cap (the caller's) and a cap on events (``Limits.yaml_events``) and on nesting depth
  (``Limits.json_depth``): the tree built is bounded by the input, whatever its spelling;
* no anchors and no aliases: an alias expands a node again wherever it is named, so a few lines can
  stand for billions of nodes ("billion laughs"); a contract has no use for them;
* no explicit tags (``!!python/...`` is refused by SafeLoader anyway; ``!!binary``, ``!!set`` and custom
  tags have no JSON meaning);

and while building: no duplicate keys (two readers would see two contracts), no merge keys (``<<``),
keys must be strings, and only JSON values come out (a YAML 1.1 timestamp such as ``2026-01-01`` is
refused rather than turned into a ``date``; quote it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import yaml

from atip_trust._base.limits import LIMITS
from atip_trust.errors import InputTooLargeError, MalformedInputError

if TYPE_CHECKING:
    from typing import Any


#: More digits than any integer a contract means (a 64-bit value has 20); Python refuses to convert
#: more than 4,300 with a bare ``ValueError`` (CVE-2020-10735 limit), and a long one costs quadratic time.
_MAX_INT_DIGITS = 100


class _LongInteger:
    """An integer scalar too long to convert: kept as a marker so ``_check_json`` can name its path."""

    def __init__(self, digits: int, line: int) -> None:
        self.digits, self.line = digits, line


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys, merge keys and non-string keys, and keeps an overlong
    integer as a ``_LongInteger`` marker instead of converting it."""

    def construct_yaml_int(self, node: yaml.ScalarNode) -> Any:
        text = str(self.construct_scalar(node))
        digits = sum(c.isalnum() for c in text)
        if digits > _MAX_INT_DIGITS:
            return _LongInteger(digits, node.start_mark.line + 1)
        return super().construct_yaml_int(node)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise MalformedInputError(f"line {key_node.start_mark.line + 1}: merge keys (<<) are refused")
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                raise MalformedInputError(f"line {key_node.start_mark.line + 1}: keys must be strings, "
                                          f"got {type(key).__name__} {key!r}")
            if key in seen:
                raise MalformedInputError(f"line {key_node.start_mark.line + 1}: duplicate key {key!r}")
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_StrictLoader.add_constructor("tag:yaml.org,2002:int", _StrictLoader.construct_yaml_int)


def _check_events(text: str, what: str) -> None:
    count = depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        count += 1
        if count > LIMITS.yaml_events:
            raise InputTooLargeError(f"{what} has more than {LIMITS.yaml_events} YAML nodes")
        line = event.start_mark.line + 1 if event.start_mark is not None else 0
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise MalformedInputError(f"{what}, line {line}: YAML anchors and aliases are refused "
                                      "(an alias repeats a node wherever it is named)")
        tag = getattr(event, "tag", None)
        if tag is not None:  # the parser sets a tag only where the text writes one
            raise MalformedInputError(f"{what}, line {line}: explicit YAML tag {tag!r} is refused")
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > LIMITS.json_depth:
                raise InputTooLargeError(f"{what} nests deeper than {LIMITS.json_depth} levels")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


def _check_json(value: Any, path: str) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _check_json(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_json(v, f"{path}[{i}]")
    elif isinstance(value, _LongInteger):
        raise MalformedInputError(f"{path}: an integer of {value.digits} digits (line {value.line}) is refused "
                                  f"(at most {_MAX_INT_DIGITS})", path=path)
    elif not (value is None or isinstance(value, (str, bool, int, float))):
        raise MalformedInputError(f"{path}: {type(value).__name__} {value!r} is not a JSON value "
                                  "(quote it to make it a string)", path=path)


def load_yaml(data: bytes, *, cap: int, what: str = "YAML") -> Any:
    """One YAML document from untrusted bytes, as JSON values; caps and refusals in the module docstring."""
    if len(data) > cap:
        raise InputTooLargeError(f"{what} is {len(data)} bytes, over the cap of {cap} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise MalformedInputError(f"{what} is not UTF-8: {err}") from err
    try:
        _check_events(text, what)
        value = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - _StrictLoader is a SafeLoader
    except yaml.YAMLError as err:
        raise MalformedInputError(f"{what} is not valid YAML: {err}") from err
    except RecursionError as err:  # pragma: no cover - the depth cap comes first
        raise InputTooLargeError(f"{what} nests too deeply") from err
    _check_json(value, "$")
    return value


__all__ = ["load_yaml"]
