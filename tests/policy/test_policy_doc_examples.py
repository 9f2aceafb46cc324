"""Every example docs/policy.md shows is a policy the loader takes (issue 34, item 5): each key's and each
section's example is put where it sits in a policy (its section's example around it), written beside the
files it names (a PEM key at ``keys/…``, a trusted root at ``roots/…``) and loaded by the real loader, the
trusted roots it names parsed as roots. Schema validity alone let ``audit.log: "text"`` and a PEM key as
``trustedRoots[].path`` through."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from atip_trust.policy.compose import compose
from atip_trust.policy.constraints import choose_trusted_root
from atip_trust.policy.load import load_layer

import doc_scripts
import testsigstore

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "schema" / "policy.schema.json").read_text(encoding="utf-8"))


def generator() -> ModuleType:
    return doc_scripts.generator("make_policy_doc")


def placements() -> dict[str, list[str]]:
    """Where each definition first sits in a policy, as keys from the top (``[]``: inside a list)."""
    found: dict[str, list[str]] = {}

    def walk(node: Any, path: list[str], depth: int) -> None:
        if not isinstance(node, dict) or depth > 8:
            return
        ref = node.get("$ref", "")
        if ref.startswith("#/$defs/") and ref.count("/") == 2:
            name = ref.rsplit("/", 1)[1]
            if name in found:
                return
            found[name] = path
            node = SCHEMA["$defs"][name]
        for key, sub in node.get("properties", {}).items():
            walk(sub, [*path, key], depth + 1)
        if "items" in node:
            walk(node["items"], [*path, "[]"], depth + 1)
        for alt in node.get("anyOf", []) + node.get("oneOf", []):
            walk(alt, path, depth + 1)

    for key, sub in SCHEMA["properties"].items():
        walk(sub, [key], 0)
    return found


def placed(path: list[str], value: Any) -> dict[str, Any]:
    for key in reversed(path):
        value = [value] if key == "[]" else {key: value}
    assert isinstance(value, dict)
    return value


SKIPPED: list[str] = []


def cases() -> list[tuple[str, dict[str, Any]]]:
    """(where, policy document) for every example of the reference."""
    doc = generator().Doc(SCHEMA)
    doc.render()
    examples = list(doc.examples())
    sections = {where: ex for where, _, ex in examples if where in dict(doc.sections)}
    where_of = placements()
    out: list[tuple[str, dict[str, Any]]] = []
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for where, _, example in examples:
        if where == "policy":
            out.append((where, example))
            continue
        if where in sections or "." not in where:  # a section, or a top-level key of the policy
            section, key, body = where, "", example
        else:
            section, _, key = where.rpartition(".")
            body = copy.deepcopy(sections[section])
            if not isinstance(body, dict):
                continue
            body[key] = example
            node = dict(doc.sections)[section]
            if list(validator.evolve(schema={**node, "$defs": SCHEMA["$defs"]}).iter_errors(body)):
                # One of exclusive alternatives (identity or identityRegexp, rule or prefix) beside the
                # section's own choice: the key's example alone is schema-checked by test_policy_doc.py.
                SKIPPED.append(where)
                continue
        path = [section] if section in SCHEMA["properties"] else where_of.get(section) or section.split(".")
        if path == ["version"]:
            continue
        out.append((where, {"version": 1, **placed(path, body)}))
    return out


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("policy-doc")
    pem = ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    (base / "keys").mkdir()
    for name in ("release.pub", "ci-vsa.pub"):
        (base / "keys" / name).write_bytes(pem)
    (base / "roots").mkdir()
    testsigstore.TestSigstore(seed=3405).write_trusted_root(base / "roots" / "trusted_root.json")
    return base


CASES = cases()


def test_the_reference_has_examples_to_load() -> None:
    assert len(CASES) > 100 and any(w == "audit.log" for w, _ in CASES)
    assert any(w == "trustedRoot.path" for w, _ in CASES)
    assert len(SKIPPED) <= 12, SKIPPED  # only exclusive alternatives are left to the schema test


@pytest.mark.parametrize(("where", "document"), CASES, ids=[w for w, _ in CASES])
def test_each_example_of_the_reference_loads(folder: Path, where: str, document: dict[str, Any]) -> None:
    path = folder / f"{where.replace('/', '_')}.json"
    path.write_text(json.dumps(document))
    policy = compose([load_layer(path, source="local")])
    if policy.trusted_roots:
        choose_trusted_root(policy, None, False).check()  # a root named by the example is a root
    audit = document.get("audit")
    if isinstance(audit, dict) and "log" in audit:
        assert audit["log"].endswith(".jsonl") and "/" in audit["log"]  # a file, not a format name
