"""provenance.py: in-toto statements, SLSA v0.2/v1 facts, builder-id patterns, trusted-builder levels.

Statements are self-minted (v0.2 and v1); the interop cases with SLSA provenance are parsed straight from
their DSSE payloads and must give the builder ids and sources their case.json declares.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from atip_trust.errors import BundleError, PolicyError
from atip_trust.facts.digest import Digest, hash_bytes
from atip_trust.provenance.slsa import (
    GITHUB_ACTIONS_ISSUER,
    BuilderMap,
    BuilderPattern,
    BuildSigner,
    ProvenanceRequirements,
    check_provenance,
    missing_provenance_checks,
    normalize_source_uri,
    parse_statement,
    slsa_facts,
)

import testsigstore

ARTIFACT = b"#!/bin/sh\necho atip tool\n"
SHA256 = hash_bytes(ARTIFACT, "sha256")
SHA512 = hash_bytes(ARTIFACT, "sha512")
DIGESTS = {"sha256": SHA256, "sha512": SHA512}
GENERIC = "https://github.com/slsa-framework/slsa-github-generator/.github/workflows/generator_generic_slsa3.yml"
GENERIC_V190 = GENERIC + "@refs/tags/v1.9.0"
INTOTO = "application/vnd.in-toto+json"


def v1_statement(**kw: Any) -> dict[str, Any]:
    kw.setdefault("builder_id", GENERIC_V190)
    return testsigstore.slsa_v1_statement("tool", SHA256.hex, **kw)


def v02_statement(
    *,
    digest: dict[str, str] | None = None,
    builder_id: str = GENERIC_V190,
    build_type: str = "https://github.com/slsa-framework/slsa-github-generator/generic@v1",
    uri: str = "git+https://github.com/atip-test/tool@refs/tags/v1.0.0",
) -> dict[str, Any]:
    return {
        "_type": "https://in-toto.io/Statement/v0.1",
        "subject": [{"name": "tool", "digest": digest or {"sha256": SHA256.hex}}],
        "predicateType": "https://slsa.dev/provenance/v0.2",
        "predicate": {
            "builder": {"id": builder_id},
            "buildType": build_type,
            "invocation": {
                "configSource": {
                    "uri": uri,
                    "digest": {"sha1": "0123456789abcdef0123456789abcdef01234567"},
                    "entryPoint": ".github/workflows/release.yml",
                }
            },
            "metadata": {"slsaLevel": 4},
            "materials": [{"uri": uri, "digest": {"sha1": "0123456789abcdef0123456789abcdef01234567"}}],
        },
    }


def stmt(doc: dict[str, Any]) -> Any:
    return parse_statement(INTOTO, json.dumps(doc).encode())


def signed_by_builder(doc: dict[str, Any]) -> BuildSigner:
    """The certificate facts of the builder the statement names, as Fulcio issues them to a GitHub
    workflow: SAN and Build Signer URI are the builder's workflow, on a GitHub-hosted runner."""
    pred = doc["predicate"]
    bid = ((pred.get("runDetails") or {}).get("builder") or pred.get("builder") or {}).get("id") or "none"
    return BuildSigner(issuer=GITHUB_ACTIONS_ISSUER, identities=(bid,),
                       extensions={"build_signer_uri": bid, "runner_environment": "github-hosted"})


def run(doc: dict[str, Any], digests: dict[str, Digest] | None = None, *, signer: Any = "builder",
        **req: Any) -> Any:
    """check_provenance on ``doc``; by default as signed by the builder it names (``signed_by_builder``)."""
    who = signed_by_builder(doc) if signer == "builder" else signer
    return check_provenance(stmt(doc), digests or DIGESTS, ProvenanceRequirements(**req), BuilderMap.default(),
                            signer=who)


def check(outcome: Any, name: str) -> Any:
    found = [c for c in outcome.checks if c.name == name]
    assert found, f"no {name} check in {[c.name for c in outcome.checks]}"
    return found[0]


# -- statements and subjects ---------------------------------------------------------------------------


@pytest.mark.parametrize("make", [v1_statement, v02_statement], ids=["v1", "v0.2"])
def test_subject_matches_by_sha256(make: Any) -> None:
    out = run(make(), {"sha256": SHA256})
    assert out.applies and out.passed
    assert check(out, "subject").status == "pass"


@pytest.mark.parametrize("version", ["v1", "v0.2"])
def test_subject_matches_by_sha512_alone(version: str) -> None:
    if version == "v1":
        doc = v1_statement()
        doc["subject"][0]["digest"] = {"sha512": SHA512.hex}
    else:
        doc = v02_statement(digest={"sha512": SHA512.hex})
    out = run(doc, {"sha256": SHA256, "sha512": SHA512})
    assert out.applies and out.passed
    assert "sha512" in check(out, "subject").message


@pytest.mark.parametrize("make", [v1_statement, v02_statement], ids=["v1", "v0.2"])
def test_attestation_about_another_artifact_does_not_apply_and_names_both_digests(make: Any) -> None:
    other = {"sha256": hash_bytes(b"another binary")}
    out = run(make(), other)
    assert not out.applies and not out.passed
    c = check(out, "subject")
    assert c.status == "fail" and c.impact == "provenance"
    assert str(other["sha256"]) in c.expected
    assert SHA256.hex in c.actual[0]


def test_wrong_payload_type_is_refused() -> None:
    with pytest.raises(BundleError) as info:
        parse_statement("text/plain", json.dumps(v1_statement()).encode())
    assert info.value.path == "$.dsseEnvelope.payloadType"
    assert "text/plain" in info.value.message


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (lambda d: d.update(_type="https://in-toto.io/Statement/v9"), "$._type"),
        (lambda d: d.update(subject=[]), "$.subject"),
        (lambda d: d["subject"][0].update(digest={"sha256": "XYZ"}), "$.subject[0].digest.sha256"),
        (lambda d: d["subject"][0].update(digest={"sha256": "ab" * 16}), "$.subject[0].digest.sha256"),
        (lambda d: d["subject"][0].update(digest=[]), "$.subject[0].digest"),
        (lambda d: d.update(predicate="x"), "$.predicate"),
        (lambda d: d.pop("predicateType"), "$.predicateType"),
    ],
)
def test_malformed_statement_fails_closed_naming_the_json_path(mutate: Any, path: str) -> None:
    doc = v1_statement()
    mutate(doc)
    with pytest.raises(BundleError) as info:
        stmt(doc)
    assert info.value.path == path


def test_non_json_payload_is_malformed() -> None:
    with pytest.raises(BundleError):
        parse_statement(INTOTO, b"\xff\xfe not json")


def test_wrong_predicate_type_filter_does_not_apply() -> None:
    out = run(v1_statement(), predicate_type="https://slsa.dev/provenance/v0.2")
    assert not out.applies and not out.passed
    c = check(out, "predicate_type")
    assert (c.expected, c.actual) == ("https://slsa.dev/provenance/v0.2", "https://slsa.dev/provenance/v1")


@pytest.mark.parametrize("version", ["v1", "v0.2"])
def test_unknown_build_type_fails_closed_with_its_name(version: str) -> None:
    bt = "https://example.com/my-own-builder/v7"
    doc = v1_statement(build_type=bt) if version == "v1" else v02_statement(build_type=bt)
    out = run(doc)
    assert out.applies and not out.passed
    c = check(out, "build_type")
    assert c.status == "fail" and c.actual == bt and bt in c.message


def test_unknown_build_type_cannot_pass_a_source_requirement() -> None:
    out = run(v1_statement(build_type="https://example.com/x"), source_uri="github.com/atip-test/tool")
    assert check(out, "source_uri").status == "fail"


def test_missing_builder_id_is_malformed_with_path() -> None:
    doc = v1_statement()
    del doc["predicate"]["runDetails"]["builder"]
    out = run(doc)
    c = check(out, "build_type")
    assert c.status == "error" and "$.predicate.runDetails.builder.id" in c.message


def test_resolved_dependency_that_contradicts_the_workflow_is_refused() -> None:
    doc = v1_statement()
    doc["predicate"]["buildDefinition"]["resolvedDependencies"][0]["uri"] = "git+https://github.com/evil/tool@refs/tags/v1.0.0"
    out = run(doc, source_uri="github.com/atip-test/tool")
    assert not out.passed
    assert check(out, "build_type").status == "error"


# -- facts ---------------------------------------------------------------------------------------------


def test_v1_and_v02_give_the_same_facts() -> None:
    f1 = slsa_facts(stmt(v1_statement()))
    f2 = slsa_facts(stmt(v02_statement()))
    assert f1 is not None and f2 is not None
    for f in (f1, f2):
        assert f.builder_id == GENERIC_V190
        assert f.source_uri == "https://github.com/atip-test/tool"
        assert f.source_ref == "refs/tags/v1.0.0"
        assert f.workflow == ".github/workflows/release.yml"
        assert f.build_type_known
    assert f1.source_digest == {"gitCommit": "0123456789abcdef0123456789abcdef01234567"}
    assert f2.claimed_level == 4  # reported only


def test_npm_gitlab_v02_shape_has_source_without_ref() -> None:
    doc = v02_statement(
        builder_id="https://gitlab.com/atip/tool/-/runners/12270835",
        build_type="https://github.com/npm/cli/gitlab/v0alpha1",
        uri="git+https://gitlab.com/atip/tool",
    )
    f = slsa_facts(stmt(doc))
    assert f is not None and f.build_type_known
    assert f.source_uri == "https://gitlab.com/atip/tool" and f.source_ref is None
    out = run(doc, source_tag="v1.0.0")
    assert check(out, "source_tag").status == "fail"


@pytest.mark.parametrize(
    ("given", "normal"),
    [
        ("github.com/o/r", "https://github.com/o/r"),
        ("https://github.com/o/r", "https://github.com/o/r"),
        ("git+https://github.com/o/r.git", "https://github.com/o/r"),
        ("git+https://github.com/o/r@refs/heads/main", "https://github.com/o/r"),
        ("https://GitHub.com/o/r/", "https://github.com/o/r"),
    ],
)
def test_source_uri_normalisation(given: str, normal: str) -> None:
    assert normalize_source_uri(given) == normal


def test_wrong_source_uri_fails_with_expected_and_actual() -> None:
    out = run(v1_statement(), source_uri="github.com/atip-test/tool-evil")
    c = check(out, "source_uri")
    assert c.status == "fail"
    assert (c.expected, c.actual) == ("https://github.com/atip-test/tool-evil", "https://github.com/atip-test/tool")


def test_source_uri_prefix_of_the_real_repo_fails() -> None:
    out = run(v1_statement(), source_uri="github.com/atip-test/too")
    assert check(out, "source_uri").status == "fail"


def test_source_tag_and_branch() -> None:
    assert run(v1_statement(), source_tag="v1.0.0").passed
    assert run(v1_statement(), source_tag="refs/tags/v1.0.0").passed
    out = run(v1_statement(), source_tag="v1.0")
    assert check(out, "source_tag").status == "fail"
    out = run(v1_statement(), source_branch="v1.0.0")  # a tag is not a branch
    assert check(out, "source_branch").status == "fail"
    assert run(v1_statement(ref="refs/heads/main"), source_branch="main").passed


# -- builder ids ---------------------------------------------------------------------------------------


def test_builder_id_exact_match_passes() -> None:
    assert run(v1_statement(), builder_id=GENERIC_V190).passed


def test_builder_id_glob_on_the_tag_passes() -> None:
    assert run(v1_statement(), builder_id=GENERIC + "@refs/tags/v*").passed


@pytest.mark.parametrize(
    "actual",
    [
        GENERIC_V190 + ".evil",  # substring attack: exact pattern is a prefix of the actual id
        GENERIC.replace("slsa-github-generator/", "slsa-github-generator-evil/") + "@refs/tags/v1.9.0",
        GENERIC + "-evil.yml@refs/tags/v1.9.0",
        GENERIC + "@refs/heads/v1.9.0",
        "https://evil.example/" + GENERIC_V190,
    ],
)
def test_builder_id_substring_and_prefix_attacks_fail(actual: str) -> None:
    out = run(v1_statement(builder_id=actual), builder_id=GENERIC_V190)
    c = check(out, "builder_id")
    assert c.status == "fail" and (c.expected, c.actual) == (GENERIC_V190, actual)


@pytest.mark.parametrize(
    "actual",
    [
        GENERIC.replace("slsa-github-generator/", "slsa-github-generator-evil/") + "@refs/tags/v1.9.0",
        GENERIC + "@refs/heads/v1",
        GENERIC + "@refs/tags/v1/../../heads/main",
        GENERIC + "@refs/tags/v",
    ],
)
def test_builder_id_glob_does_not_widen_beyond_the_ref(actual: str) -> None:
    out = run(v1_statement(builder_id=actual), builder_id=GENERIC + "@refs/tags/v*")
    assert check(out, "builder_id").status == "fail"


@pytest.mark.parametrize(
    "pattern",
    ["https://github.com/*", GENERIC + "*", GENERIC + "@refs/tags/*v*", GENERIC + "@refs/*/v1", GENERIC + "@main*"],
)
def test_glob_outside_the_ref_is_refused(pattern: str) -> None:
    with pytest.raises(PolicyError):
        BuilderPattern(pattern)
    with pytest.raises(PolicyError):
        ProvenanceRequirements(builder_id=pattern)


# -- levels --------------------------------------------------------------------------------------------


def test_level_comes_from_the_builder_map() -> None:
    out = run(v1_statement(), min_slsa_level=3)
    assert out.passed and out.level == 3
    assert out.level_source == GENERIC + "@refs/tags/v*"


def test_min_level_above_the_mapped_level_fails() -> None:
    gh = "https://github.com/actions/runner/github-hosted"
    out = run(v1_statement(builder_id=gh, build_type="https://actions.github.io/buildtypes/workflow/v1"), min_slsa_level=3)
    c = check(out, "slsa_level")
    assert c.status == "fail" and c.impact == "provenance"
    assert (c.expected, c.actual) == (">= 3", 2)


def test_claimed_level_is_reported_never_used() -> None:
    # v0.2 statement claims level 4 in metadata, builder is not in the map.
    out = run(v02_statement(builder_id="https://github.com/atip-test/tool/.github/workflows/own.yml@refs/tags/v1"),
              min_slsa_level=1)
    c = check(out, "slsa_level")
    assert c.status == "fail" and c.actual is None
    assert "claims level 4" in c.message


def test_builder_on_a_branch_of_the_generator_gets_no_level() -> None:
    out = run(v1_statement(builder_id=GENERIC + "@refs/heads/main"), min_slsa_level=1)
    assert check(out, "slsa_level").status == "fail"


def test_missing_provenance_never_passes_a_minimum_level() -> None:
    checks = missing_provenance_checks(ProvenanceRequirements(min_slsa_level=0))
    assert [c.status for c in checks] == ["fail"]
    assert checks[0].impact == "provenance"


def test_builder_map_from_policy_json_and_bad_entries(tmp_path: Path) -> None:
    path = tmp_path / "builders.json"
    path.write_text(json.dumps({"builders": [{"id": "https://ci.example/builder@refs/tags/v*", "level": 2}]}))
    m = BuilderMap.load(path)
    entry = m.lookup("https://ci.example/builder@refs/tags/v3")
    assert entry is not None and entry.level == 2
    for bad in ({"builders": [{"id": "https://x/*", "level": 2}]},
                {"builders": [{"id": "https://x", "level": 4}]},
                {"builders": [{"id": "https://x", "level": True}]},
                {"nope": []}):
        path.write_text(json.dumps(bad))
        with pytest.raises(PolicyError):
            BuilderMap.load(path)


def test_overlapping_entries_take_the_lowest_level() -> None:
    m = BuilderMap.from_json({"builders": [
        {"id": "https://ci.example/b@refs/tags/v*", "level": 3},
        {"id": "https://ci.example/b@refs/tags/v1", "level": 1},
    ]})
    e = m.lookup("https://ci.example/b@refs/tags/v1")
    assert e is not None and e.level == 1


def test_default_map_cites_a_source_for_every_builder() -> None:
    raw = json.loads((Path(__file__).resolve().parents[2] / "policies" / "trusted-builders.json").read_text())
    assert raw["builders"]
    for b in raw["builders"]:
        assert b["source"].startswith("https://"), b
        BuilderPattern(b["id"])


# -- interop: SLSA provenance in real bundles ----------------------------------------------------------


def _slsa_rows(interop: Path) -> list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
    out = []
    for row in json.loads((interop / "index.json").read_text()):
        if row.get("predicateType") not in ("https://slsa.dev/provenance/v1", "https://slsa.dev/provenance/v0.2"):
            continue
        case, _, idx = row["case"].partition("#")
        text = (interop / case / row["bundle"]).read_text()
        lines = text.splitlines() if row["bundle"].endswith(".jsonl") else [text]
        doc = json.loads(lines[int(idx or 0)])
        case_json = json.loads((interop / case / "case.json").read_text())
        out.append((row, doc, case_json))
    return out


def test_interop_slsa_payloads_give_the_declared_builder_and_source(interop_dir: Path) -> None:
    rows = _slsa_rows(interop_dir)
    assert len(rows) >= 20
    known = 0
    for row, doc, case_json in rows:
        env = doc["dsseEnvelope"]
        st = parse_statement(env["payloadType"], base64.b64decode(env["payload"]))
        facts = slsa_facts(st)
        assert facts is not None
        assert facts.builder_id == row["builder_id"], row["case"]
        cert = case_json.get("certificate") or {}
        repo = (cert.get("extensions") or {}).get("source_repository_uri")
        if facts.build_type_known:
            known += 1
            # The conformance suite re-signs copied statements with its OIDC beacon: there the
            # certificate says nothing about the build's source.
            if repo and "oidc-beacon" not in repo:
                assert facts.source_uri == normalize_source_uri(repo), row["case"]
                ref = cert["extensions"].get("source_repository_ref")
                assert facts.source_ref == ref, row["case"]
        else:
            # rekor2 conformance statements use a made-up build type: fail closed, naming it.
            assert "rekor2" in row["case"] or "dsse-staging-rekor-v2" in row["case"], row["case"]
        # Subject: the statement names the artifact the case ships (when it ships one).
        art = interop_dir / row["case"].partition("#")[0] / row["artifact"] if row.get("artifact") else None
        if art is not None and art.is_file() and not row.get("derived_pairing"):
            data = art.read_bytes()
            digests = {"sha256": hash_bytes(data), "sha512": hash_bytes(data, "sha512")}
            out = check_provenance(st, digests, ProvenanceRequirements(), BuilderMap.default())
            assert out.applies, row["case"]
    assert known >= 15


def test_interop_npm_provenance_right_and_wrong_requirements(interop_dir: Path) -> None:
    folder = interop_dir / "cli-sigstore-js-2.1.0-bundle-v0.3"
    doc = json.loads((folder / "sigstore-js-2.1.0-bundle.json").read_text())
    st = parse_statement(doc["dsseEnvelope"]["payloadType"], base64.b64decode(doc["dsseEnvelope"]["payload"]))
    data = (folder / "sigstore-js-2.1.0.tgz").read_bytes()
    digests = {"sha256": hash_bytes(data), "sha512": Digest("sha512", hashlib.sha512(data).digest())}
    good = ProvenanceRequirements(
        builder_id="https://github.com/actions/runner/github-hosted",
        source_uri="github.com/sigstore/sigstore-js",
        source_branch="main",
        min_slsa_level=2,
    )
    cert = json.loads((folder / "case.json").read_text())["certificate"]
    signer = BuildSigner(issuer=cert["issuer"], identities=(cert["identity"],), extensions=cert["extensions"])
    out = check_provenance(st, digests, good, BuilderMap.default(), signer=signer)
    assert out.passed and out.level == 2
    for bad in (
        ProvenanceRequirements(builder_id="https://github.com/actions/runner/self-hosted"),
        ProvenanceRequirements(min_slsa_level=3),
        ProvenanceRequirements(source_uri="github.com/sigstore/sigstore-python"),
    ):
        assert not check_provenance(st, digests, bad, BuilderMap.default(), signer=signer).passed
