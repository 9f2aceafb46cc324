"""The one jsonschema boundary: the shipped JSON Schemas (2020-12), compiled once, and their errors.

Every caller validates through :func:`validator`; no other module imports ``jsonschema`` or
``referencing`` (tests/base/test_layers.py enforces it). Two things are fixed here for every schema:

* ``pattern`` is ECMA-262 (JSON Schema §6.3.3), where ``$`` matches only at the very end; Python's ``$``
  also matches before a final newline, so ``"gh\\n"`` would pass ``^[a-z]+$``. A trailing ``$`` is
  anchored at the very end (``\\Z``).
* a broken or unreadable shipped schema is an ``EnvironmentFailure`` (the installation is damaged), never
  a verdict about the input; a recursion overflow while validating is the input's fault
  (``InputTooLargeError``; depth is capped before parsing, this is a backstop).

jsonschema is imported on first validation (_base/lazy.py), not with this module: a warm admission
whose policy digest was validated before (state/verdict_cache.py) never validates, so never pays for it.

Errors are handed out as jsonschema's own ``ValidationError`` objects (typed ``SchemaError`` here, an
alias for ``Any``): callers read ``absolute_path``, ``validator``, ``instance``, ``schema``, ``message``,
``context``, ``relative_schema_path`` and pick the one to report with :func:`best_match`.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from atip_trust._base.lazy import lazy_import
from atip_trust._base.shipped import shipped_file
from atip_trust.errors import EnvironmentFailure, InputTooLargeError

if TYPE_CHECKING:
    from typing import Any, Literal

    import jsonschema  # type: ignore[import-untyped]
    from jsonschema import exceptions as jsonschema_exceptions
    from referencing import exceptions as referencing_exceptions

    #: A jsonschema ``ValidationError`` (the package is untyped).
    SchemaError = Any
else:
    # Only for a policy not validated before (the verdict cache remembers one found valid).
    jsonschema = lazy_import("jsonschema")
    jsonschema_exceptions = lazy_import("jsonschema.exceptions")  # (with jsonschema)
    referencing_exceptions = lazy_import("referencing.exceptions")  # (with jsonschema)


@functools.cache
def _compile_pattern(pattern: str) -> re.Pattern[str]:
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + r"\Z"
    return re.compile(pattern)


def _pattern_keyword(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not _compile_pattern(pattern).search(instance):
        yield jsonschema_exceptions.ValidationError(f"{instance!r} does not match {pattern!r}")


@functools.cache
def _validator_class() -> Any:
    """Draft 2020-12 with the ECMA-262 ``pattern`` (module docstring), built on first use."""
    return jsonschema.validators.extend(jsonschema.Draft202012Validator, {"pattern": _pattern_keyword})


class Validator:
    """One compiled schema. ``errors(doc)`` lists every error (empty: valid)."""

    def __init__(self, name: str, schema: Any) -> None:
        self.name = name
        self._v = _validator_class()(schema)

    def errors(self, doc: Any, *, what: str = "document") -> list[SchemaError]:
        try:
            return list(self._v.iter_errors(doc))
        except (jsonschema_exceptions.SchemaError, referencing_exceptions.Unresolvable) as err:
            raise EnvironmentFailure(f"atip-trust's own schema {self.name} is broken: {err}") from err
        except RecursionError as err:
            raise InputTooLargeError(f"{what} nests too deeply to validate", path="$") from err


def load_schema(name: Literal["atip-metadata.schema.json", "policy.schema.json"] | str) -> Any:
    """The parsed shipped schema ``schema/<name>``, checked against the 2020-12 meta-schema."""
    path = shipped_file("schema", name)
    try:
        schema = json.loads(path.read_bytes())
        jsonschema.Draft202012Validator.check_schema(schema)
    except OSError as err:
        raise EnvironmentFailure(f"cannot read atip-trust's own schema {name}: {err.strerror}",
                                 path=str(path)) from err
    except (ValueError, jsonschema_exceptions.SchemaError) as err:
        raise EnvironmentFailure(f"atip-trust's own schema {name} is broken: {err}") from err
    return schema


@functools.cache
def validator(name: str, transform: Callable[[Any], Any] | None = None) -> Validator:
    """The compiled validator for ``schema/<name>``, built once per process (per ``transform``)."""
    schema = load_schema(name)
    return Validator(name, transform(schema) if transform is not None else schema)


def best_match(errors: list[SchemaError]) -> SchemaError | None:
    """jsonschema's choice of the most relevant error among ``errors`` (and their sub-errors)."""
    return jsonschema_exceptions.best_match(errors)


__all__ = ["SchemaError", "Validator", "best_match", "load_schema", "validator"]
