"""ATIP metadata and shim intake: the RFC's examples pass, malformed documents fail naming the JSON path,
caps apply before parsing, and what a document says about trust comes out as typed claims."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import referencing
from jsonschema import Draft202012Validator

from atip_trust._base.limits import LIMITS
from atip_trust.errors import InputTooLargeError, MetadataError, UntrustedInputError
from atip_trust.facts.artifact import Artifact
from atip_trust.facts.digest import Digest
from atip_trust.facts.metadata import (
    BinaryClaim,
    MetadataDocument,
    ProvenanceClaim,
    SignatureClaim,
    load_metadata,
    parse_metadata,
)

from make_metadata_fixtures import (
    CURL_HASH,
    CURL_SCRIPT,
    EMPTY_HASH,
    VALID,
    Case,
    malformed_cases,
)

ROOT = Path(__file__).resolve().parents[2]
VALID_FILES = sorted(VALID.glob("*.json"))
#: The RFC examples that leave out descriptions its own tables call required (fixtures/metadata/valid/README.md).
INCOMPLETE = {
    "gh-rfc-v0.6.json": "$.commands.pr.commands.create.options[0]",
    "gh-rfc-v0.3-atip-0.1.json": "$.commands.pr.commands.create.options[0]",
    "minimal-hello.json": '$.commands[""].arguments[0]',
    "curl-legacy-shim-atip-0.1.json": '$.commands[""].options[0]',
    "curl-shim-rfc-v0.6.json": '$.commands[""].arguments[0]',
}
COMPLETE = {"minimal-mytool-atip-0.1.json", "curl-community-shim-complete.json"}


def doc_of(name: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads((VALID / name).read_text())
    return out


def parse_obj(obj: Any, **kw: Any) -> MetadataDocument:
    return parse_metadata(json.dumps(obj).encode(), **kw)


def test_fixture_inventory_is_complete() -> None:
    assert {p.name for p in VALID_FILES} == set(INCOMPLETE) | COMPLETE
    assert len(malformed_cases()) >= 20


# The RFC's own examples ------------------------------------------------------------------------


@pytest.mark.parametrize("path", VALID_FILES, ids=lambda p: p.name)
def test_rfc_example_is_accepted(path: Path) -> None:
    doc = load_metadata(path)
    raw = json.loads(path.read_bytes())
    expected_version = raw["atip"] if isinstance(raw["atip"], str) else raw["atip"]["version"]
    assert doc.version == expected_version
    assert doc.is_shim == ("binary" in raw)
    assert doc.raw == path.read_bytes()
    assert doc.name in ("gh", "hello", "mytool", "curl")


@pytest.mark.parametrize("name,first", sorted(INCOMPLETE.items()))
def test_missing_descriptions_are_warnings_and_strict_refuses_them(name: str, first: str) -> None:
    doc = load_metadata(VALID / name)
    assert doc.warnings, "the RFC example omits descriptions; expected warnings"
    assert all("'description' is a required property" in w for w in doc.warnings)
    assert doc.warnings[0].startswith(first + ": ")
    with pytest.raises(MetadataError) as info:
        load_metadata(VALID / name, strict=True)
    assert info.value.path == first
    assert "'description' is a required property" in info.value.message


@pytest.mark.parametrize("name", sorted(COMPLETE))
def test_complete_examples_pass_strict(name: str) -> None:
    doc = load_metadata(VALID / name, strict=True)
    assert doc.warnings == []


def test_only_descriptions_are_tolerated_other_required_fields_are_not() -> None:
    obj = doc_of("gh-rfc-v0.6.json")
    del obj["commands"]["pr"]["commands"]["list"]["options"][0]["type"]
    with pytest.raises(MetadataError) as info:
        parse_obj(obj)
    assert info.value.path == "$.commands.pr.commands.list.options[0]"
    assert "'type' is a required property" in info.value.message


def test_missing_root_description_is_a_warning_too() -> None:
    obj = doc_of("minimal-mytool-atip-0.1.json")
    del obj["description"]
    assert parse_obj(obj).warnings == [
        "$: 'description' is a required property (missing description accepted; --strict refuses it)"
    ]


# Protocol versions ----------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["0.1", "0.2", "0.3", "0.4", "0.5", "0.6"])
@pytest.mark.parametrize("spelling", ["string", "object"])
def test_both_version_spellings_for_every_version(version: str, spelling: str) -> None:
    obj = doc_of("minimal-mytool-atip-0.1.json")
    obj["atip"] = version if spelling == "string" else {"version": version, "minAgentVersion": "0.1"}
    assert parse_obj(obj, strict=True).version == version


def test_fields_newer_than_the_declared_version_are_warnings() -> None:
    obj = doc_of("gh-rfc-v0.6.json")
    obj["atip"] = "0.3"
    doc = parse_obj(obj)
    assert any(w.startswith("$.trust: trust is an ATIP 0.4 field") for w in doc.warnings)
    assert any(w.startswith("$.trust.integrity: ") for w in doc.warnings)


def test_unknown_feature_is_refused_but_x_feature_is_not() -> None:
    obj = doc_of("minimal-mytool-atip-0.1.json")
    obj["atip"] = {"version": "0.6", "features": ["x-acme-thing"]}
    parse_obj(obj, strict=True)
    obj["atip"]["features"] = ["telepathy"]
    with pytest.raises(MetadataError) as info:
        parse_obj(obj)
    assert info.value.path == "$.atip.features[0]"


def test_x_extensions_are_allowed_at_every_level() -> None:
    obj = doc_of("gh-rfc-v0.6.json")
    obj["x-acme"] = {"anything": [1, 2]}
    obj["atip"]["x-acme"] = 1
    obj["trust"]["x-acme"] = 1
    obj["trust"]["integrity"]["x-acme"] = 1
    obj["trust"]["integrity"]["signature"]["x-acme"] = 1
    obj["commands"]["pr"]["x-acme"] = 1
    obj["commands"]["pr"]["commands"]["list"]["effects"]["x-acme"] = 1
    obj["commands"]["pr"]["commands"]["list"]["options"][0]["x-acme"] = 1
    doc = parse_obj(obj)
    assert doc.claims.signature is not None


# Claims -----------------------------------------------------------------------------------------


def test_gh_claims_are_extracted_as_typed_data() -> None:
    c = load_metadata(VALID / "gh-rfc-v0.6.json").claims
    assert c.source == "native"
    assert c.verified is True
    assert c.checksum == Digest.parse(EMPTY_HASH)
    assert c.signature == SignatureClaim(
        type="cosign",
        identity="https://github.com/cli/cli/.github/workflows/release.yml@refs/tags/v2.45.0",
        issuer="https://token.actions.githubusercontent.com",
        bundle=None,
    )
    assert c.shim_signature is None
    assert c.provenance == ProvenanceClaim(
        url=f"https://github.com/cli/cli/attestations/{EMPTY_HASH}",
        format=None,
        builder=None,
        slsa_level=3,
    )
    assert c.binary is None
    assert c.to_json()["checksum"] == EMPTY_HASH


def test_shim_claims_come_from_binary_and_the_shim_signature() -> None:
    doc = load_metadata(VALID / "curl-shim-rfc-v0.6.json")
    assert doc.kind == "shim"
    assert doc.name == "curl"  # from binary.name: the RFC §4.5 shim has no top-level name
    c = doc.claims
    assert c.binary == BinaryClaim(
        hash=Digest.parse(CURL_HASH), name="curl", version="8.4.0", platform="darwin-arm64"
    )
    # RFC §4.5 puts the shim maintainers' signature directly under trust.
    assert c.shim_signature == SignatureClaim(
        type="cosign", identity="shim-maintainers@atip.dev", issuer="https://accounts.google.com"
    )
    assert c.signature is None and c.checksum is None


def test_shim_integrity_signature_is_the_shim_signature() -> None:
    c = load_metadata(VALID / "curl-community-shim-complete.json").claims
    assert c.shim_signature is not None
    assert c.shim_signature.bundle == "https://atip.dev/shims/curl.json.bundle"
    assert c.signature is None


def test_full_provenance_claim() -> None:
    obj = doc_of("gh-rfc-v0.6.json")
    obj["trust"]["provenance"].update(
        {"format": "slsa-provenance-v1", "builder": "https://github.com/actions/runner"}
    )
    prov = parse_obj(obj).claims.provenance
    assert prov == ProvenanceClaim(
        url=f"https://github.com/cli/cli/attestations/{EMPTY_HASH}",
        format="slsa-provenance-v1",
        builder="https://github.com/actions/runner",
        slsa_level=3,
    )


def test_sha512_checksum_claim() -> None:
    obj = doc_of("gh-rfc-v0.6.json")
    obj["trust"]["integrity"]["checksum"] = "sha512:" + "ab" * 64
    assert parse_obj(obj).claims.checksum == Digest("sha512", bytes.fromhex("ab" * 64))


def test_no_trust_section_means_no_claims() -> None:
    c = load_metadata(VALID / "minimal-mytool-atip-0.1.json").claims
    assert c.to_json() == {
        "source": None,
        "verified": None,
        "checksum": None,
        "signature": None,
        "shim_signature": None,
        "provenance": None,
        "binary": None,
    }


# Shim lookup by digest (RFC §3.2.2 step 4, §4.5) ------------------------------------------------


def test_shim_looked_up_by_its_own_binary_digest_is_accepted(tmp_path: Path) -> None:
    script = tmp_path / "curl"
    script.write_bytes(CURL_SCRIPT)
    with Artifact.open(script) as art:
        digest = art.sha256
    assert str(digest) == CURL_HASH  # the fixture describes a real file
    doc = load_metadata(VALID / "curl-shim-rfc-v0.6.json", lookup_digest=digest)
    assert doc.claims.binary is not None and doc.claims.binary.hash == digest


def test_shim_served_for_another_binary_is_refused() -> None:
    other = Digest.parse(EMPTY_HASH)
    with pytest.raises(MetadataError) as info:
        load_metadata(VALID / "curl-shim-rfc-v0.6.json", lookup_digest=other)
    assert info.value.path == "$.binary.hash"
    assert f"expected {EMPTY_HASH}, got {CURL_HASH}" in info.value.message


def test_lookup_compares_algorithms_too() -> None:
    with pytest.raises(MetadataError):
        load_metadata(
            VALID / "curl-shim-rfc-v0.6.json",
            lookup_digest=Digest("sha512", bytes(64)),
        )


# Malformed documents: one mutation each, each names where -------------------------------------


@pytest.mark.parametrize("case", malformed_cases(), ids=lambda c: c.name)
def test_malformed_document_is_refused_naming_the_json_path(case: Case) -> None:
    lookup = Digest.parse(case.lookup) if case.lookup else None
    with pytest.raises(UntrustedInputError) as info:
        parse_metadata(case.data, lookup_digest=lookup)
    assert isinstance(info.value, MetadataError)
    assert info.value.path == case.path
    assert case.says in info.value.diagnostics()
    assert info.value.diagnostics().startswith(case.path + ": ")
    assert "\n" not in info.value.diagnostics()


@pytest.mark.parametrize("case", malformed_cases()[:3], ids=lambda c: c.name)
def test_committed_invalid_fixtures_match_the_generator(case: Case) -> None:
    assert (ROOT / "fixtures" / "metadata" / "invalid" / f"{case.name}.json").read_bytes() == case.data


def test_100_mb_file_is_refused_by_the_byte_cap_before_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as f:
        f.truncate(100 * 1024 * 1024)  # sparse: costs no disk
    read_bytes = 0
    real_read = os.read

    def counting_read(fd: int, n: int) -> bytes:
        nonlocal read_bytes
        data = real_read(fd, n)
        read_bytes += len(data)
        return data

    monkeypatch.setattr(os, "read", counting_read)
    with pytest.raises(InputTooLargeError) as info:
        load_metadata(big)
    assert read_bytes == 0
    assert info.value.path == str(big)
    assert f"over the cap of {LIMITS.metadata_bytes} bytes" in info.value.message


def test_oversized_bytes_are_refused_before_parsing() -> None:
    data = b'{"x-pad": "' + b"a" * LIMITS.metadata_bytes + b'"}'
    with pytest.raises(InputTooLargeError):
        parse_metadata(data)


@pytest.mark.parametrize("shape", ["array", "object", "inside-a-valid-document"])
def test_10000_deep_nesting_is_refused_without_recursion(tmp_path: Path, shape: str) -> None:
    n = 10_000
    if shape == "array":
        data = b"[" * n + b"]" * n
    elif shape == "object":
        data = b'{"a":' * n + b"1" + b"}" * n
    else:
        body = (VALID / "minimal-mytool-atip-0.1.json").read_bytes().rstrip()[:-1]
        data = body + b', "x-deep": ' + b"[" * n + b"]" * n + b"}"
    path = tmp_path / "deep.json"
    path.write_bytes(data)
    with pytest.raises(InputTooLargeError) as info:
        load_metadata(path)
    assert info.value.path == "$"
    assert f"deeper than {LIMITS.json_depth}" in info.value.message


def test_brackets_inside_strings_do_not_count_as_depth() -> None:
    obj = doc_of("minimal-mytool-atip-0.1.json")
    obj["x-note"] = "[" * 10_000
    parse_obj(obj, strict=True)


# Commands and effects --------------------------------------------------------------------------


def test_commands_lists_every_declared_path() -> None:
    doc = load_metadata(VALID / "gh-rfc-v0.6.json")
    assert doc.commands() == [
        ("pr",),
        ("pr", "list"),
        ("pr", "create"),
        ("pr", "merge"),
        ("repo",),
        ("repo", "delete"),
    ]
    assert load_metadata(VALID / "curl-shim-rfc-v0.6.json").commands() == [()]


def test_effects_for_a_declared_command() -> None:
    doc = load_metadata(VALID / "gh-rfc-v0.6.json")
    assert doc.effects_for(["repo", "delete"]) == {
        "network": True,
        "destructive": True,
        "reversible": False,
    }
    assert doc.effects_for(["pr"]) == {}


def test_effects_for_an_undeclared_command_is_none() -> None:
    doc = load_metadata(VALID / "gh-rfc-v0.6.json")
    assert doc.effects_for(["repo", "rename"]) is None
    assert doc.effects_for(["nope"]) is None
    assert doc.effects_for([""]) is None


def test_tool_effects_merge_with_command_effects_deeper_wins() -> None:
    doc = load_metadata(VALID / "curl-community-shim-complete.json")
    # Tool level: network; root command: idempotent false and filesystem.write.
    assert doc.effects_for([]) == {"network": True, "idempotent": False, "filesystem": {"write": True}}
    obj = doc_of("gh-rfc-v0.6.json")
    obj["effects"] = {"network": False, "filesystem": {"read": True}, "subprocess": False}
    obj["commands"]["repo"]["effects"] = {"filesystem": {"write": True}}
    merged = parse_obj(obj).effects_for(["repo", "delete"])
    assert merged == {
        "network": True,
        "filesystem": {"read": True, "write": True},
        "subprocess": False,
        "destructive": True,
        "reversible": False,
    }


def test_effects_for_returns_a_copy() -> None:
    doc = load_metadata(VALID / "curl-community-shim-complete.json")
    eff = doc.effects_for([])
    assert eff is not None
    eff["filesystem"]["write"] = False
    assert doc.effects_for([]) == {"network": True, "idempotent": False, "filesystem": {"write": True}}


# The schema files -------------------------------------------------------------------------------


def test_schema_files_are_valid_draft_2020_12_and_the_shim_schema_agrees() -> None:
    meta = json.loads((ROOT / "schema" / "atip-metadata.schema.json").read_text())
    shim = json.loads((ROOT / "schema" / "atip-shim.schema.json").read_text())
    Draft202012Validator.check_schema(meta)
    Draft202012Validator.check_schema(shim)
    registry = referencing.Registry().with_resources(
        [(meta["$id"], referencing.Resource.from_contents(meta)), (shim["$id"], referencing.Resource.from_contents(shim))]
    )
    shim_validator = Draft202012Validator(shim, registry=registry)
    assert shim_validator.is_valid(doc_of("curl-community-shim-complete.json"))
    assert not shim_validator.is_valid(doc_of("minimal-mytool-atip-0.1.json"))  # no binary
