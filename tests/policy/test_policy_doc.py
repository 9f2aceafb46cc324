"""docs/policy.md is the schema, rendered: it cannot drift, and every example it shows is a valid policy
fragment."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import jsonschema
import pytest

import doc_scripts

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "schema" / "policy.schema.json").read_text(encoding="utf-8"))


def generator() -> ModuleType:
    return doc_scripts.generator("make_policy_doc")


def test_committed_policy_reference_is_what_the_schema_generates() -> None:
    committed = (ROOT / "docs" / "policy.md").read_text(encoding="utf-8")
    assert committed == generator().render(), "docs/policy.md is stale: run python docs/make_policy_doc.py"


def walk_keys(node: object, path: str = "#") -> list[str]:
    """Every key the schema defines under some ``properties``, as a JSON pointer."""
    found: list[str] = []
    if isinstance(node, dict):
        found += [f"{path}/properties/{key}" for key in node.get("properties", {})]
        for key, sub in node.items():
            found += walk_keys(sub, f"{path}/{key}")
    elif isinstance(node, list):
        for i, sub in enumerate(node):
            found += walk_keys(sub, f"{path}/{i}")
    return found


def test_every_key_is_documented_in_the_reference() -> None:
    text = (ROOT / "docs" / "policy.md").read_text(encoding="utf-8")
    missing = [p for p in walk_keys(SCHEMA) if f"| `{p.rsplit('/', 1)[1]}` |" not in text]
    assert missing == []


def test_every_key_has_a_description() -> None:
    def described(pointer: str) -> bool:
        node: object = SCHEMA
        for part in pointer.removeprefix("#/").split("/"):
            node = node[int(part)] if isinstance(node, list) else node[part]  # type: ignore[index]
        assert isinstance(node, dict)
        if "description" in node:
            return True
        ref = node.get("$ref", "")
        target = SCHEMA["$defs"].get(ref.rsplit("/", 1)[-1], {}) if ref.startswith("#/$defs/") else {}
        return "description" in target

    assert [p for p in walk_keys(SCHEMA) if not described(p)] == []


def test_every_example_in_the_reference_is_valid() -> None:
    doc = generator().Doc(SCHEMA)
    doc.render()
    validator = jsonschema.Draft202012Validator(SCHEMA)
    checked = 0
    for where, node, example in doc.examples():
        errors = list(validator.evolve(schema={**node, "$defs": SCHEMA["$defs"]}).iter_errors(example))
        assert errors == [], (where, example, [e.message for e in errors])
        checked += 1
    assert checked > 100
    jsonschema.validate(doc.policy_example(), SCHEMA)


def test_a_broken_example_would_be_caught() -> None:
    validator = jsonschema.Draft202012Validator(SCHEMA)
    node = SCHEMA["$defs"]["waiver"]
    with pytest.raises(jsonschema.ValidationError):
        validator.evolve(schema={**node, "$defs": SCHEMA["$defs"]}).validate({"tool": "gh"})
