"""Attacks on the provenance decision, through ``python -m atip_trust verify`` in a real subprocess.

Bundles are minted by the project's test Sigstore (fixtures/testsigstore.py): real certificates with the
Fulcio extensions chosen per test, real log entries, real DSSE signatures. Each test is named after the
attack it shows fails closed.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

import testsigstore
from conftest import FIXTURES
from verify_helpers import Run, cli
from world import World

ISS = "https://token.actions.githubusercontent.com"
GENERIC = "https://github.com/slsa-framework/slsa-github-generator/.github/workflows/generator_generic_slsa3.yml"
GENERATOR = GENERIC + "@refs/tags/v2.1.0"
TENANT = "https://github.com/evil/x/.github/workflows/release.yml@refs/tags/v1"
GITHUB_HOSTED = "https://github.com/actions/runner/github-hosted"
ATTEST_BUILD_TYPE = "https://actions.github.io/buildtypes/workflow/v1"
SIG = FIXTURES / "sigstore"


def gh_extensions(signer: str, *, runner: str | None = "github-hosted") -> dict[str, str]:
    """Fulcio's GitHub Actions extensions for a token whose job_workflow_ref is ``signer``, run from
    evil/x (the caller): Build Signer URI is the signing workflow, the source is the caller's."""
    ext = {
        "build_signer_uri": signer,
        "source_repository_uri": "https://github.com/evil/x",
        "source_repository_ref": "refs/tags/v1",
        "build_config_uri": TENANT,
    }
    if runner is not None:
        ext["runner_environment"] = runner
    return ext


@pytest.fixture(scope="module")
def ts() -> testsigstore.TestSigstore:
    return testsigstore.TestSigstore(seed=19)


@pytest.fixture(scope="module")
def world(ts: testsigstore.TestSigstore, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    w = World(tmp_path_factory.mktemp("prov-attacks"), ts=ts)
    tool = w.file("tool", b"#!/bin/sh\necho attacked tool\n")
    return {"dir": w.dir, "tool": tool, "hex": hashlib.sha256(tool.read_bytes()).hexdigest(), "root": w.root}


def dump(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc))
    return path


def verify(world: dict[str, Any], *bundles: Path, identity: str | None = None, regexp: str | None = None,
           extra: tuple[str, ...] = ()) -> Run:
    argv = ["verify", str(world["tool"]), "--trusted-root", str(world["root"]), "--format", "json"]
    for b in bundles:
        argv += ["--bundle", str(b)]
    if identity is not None:
        argv += ["--certificate-identity", identity]
    if regexp is not None:
        argv += ["--certificate-identity-regexp", regexp]
    argv += ["--certificate-oidc-issuer", ISS, *extra]
    r = cli(*argv)
    assert "Traceback" not in r.err, r.err
    return r


def checks(r: Run, name: str) -> list[dict[str, Any]]:
    return [c for c in r.json["checks"] if c["name"] == name]


# -- 7. the SLSA level of a builder only for provenance that builder signed ---------------------------


def test_tenant_workflow_claiming_generator_builder_gets_no_level(ts, world) -> None:
    # The tenant's own release workflow signs provenance that names the generator's builder id.
    stmt = testsigstore.slsa_v1_statement("tool", world["hex"], builder_id=GENERATOR,
                                          repository="https://github.com/evil/x", ref="refs/tags/v1")
    b = dump(world["dir"] / "tenant.json",
             ts.sign_dsse(stmt, identity=TENANT, issuer=ISS, extensions=gh_extensions(TENANT)))
    # The signer is trusted (the policy names it), so only the level is in question.
    plain = verify(world, b, identity=TENANT)
    assert plain.code == 0, plain.out
    assert plain.json["provenance"]["builder_id"] == GENERATOR
    assert plain.json["provenance"]["slsa_level"] is None

    r = verify(world, b, identity=TENANT, extra=("--min-slsa-level", "3"))
    assert r.code == 1, r.out
    out = r.json
    assert out["trust_level"] == "PROVENANCE_FAIL"
    assert out["decision"]["behavior"] == "deny"
    (lvl,) = checks(r, "slsa_level")
    assert lvl["status"] == "fail" and lvl["expected"] == ">= 3" and lvl["actual"] is None
    (bs,) = checks(r, "builder_signer")
    assert bs["status"] == "fail"
    assert GENERIC + "@refs/tags/v*" in bs["expected"] and TENANT in bs["actual"]

    # --builder-id names the generator: the provenance says so, the certificate does not.
    r = verify(world, b, identity=TENANT, extra=("--builder-id", GENERIC + "@refs/tags/v*"))
    assert r.code == 1 and r.json["trust_level"] == "PROVENANCE_FAIL"
    assert [c["status"] for c in checks(r, "builder_signer")] == ["fail"]


def test_generator_signed_provenance_keeps_its_level(ts, world) -> None:
    # The same statement, signed as the generator signs it (SAN and Build Signer URI): level 3.
    stmt = testsigstore.slsa_v1_statement("tool", world["hex"], builder_id=GENERATOR,
                                          repository="https://github.com/evil/x", ref="refs/tags/v1")
    b = dump(world["dir"] / "generator.json",
             ts.sign_dsse(stmt, identity=GENERATOR, issuer=ISS, extensions=gh_extensions(GENERATOR)))
    r = verify(world, b, identity=GENERATOR, extra=("--min-slsa-level", "3"))
    assert r.code == 0, r.out
    assert r.json["provenance"]["slsa_level"] == 3
    assert [c["status"] for c in checks(r, "builder_signer")] == ["pass"]


def test_generator_at_one_tag_cannot_vouch_for_another_tag(ts, world) -> None:
    stmt = testsigstore.slsa_v1_statement("tool", world["hex"], builder_id=GENERIC + "@refs/tags/v9.9.9")
    b = dump(world["dir"] / "other-tag.json",
             ts.sign_dsse(stmt, identity=GENERATOR, issuer=ISS, extensions=gh_extensions(GENERATOR)))
    r = verify(world, b, identity=GENERATOR, extra=("--min-slsa-level", "3"))
    assert r.code == 1 and r.json["trust_level"] == "PROVENANCE_FAIL"
    assert [c["status"] for c in checks(r, "builder_signer")] == ["fail"]


@pytest.mark.parametrize("runner", ["self-hosted", None], ids=["self-hosted", "no-runner-extension"])
def test_self_hosted_runner_gets_no_github_hosted_level(ts, world, runner: str | None) -> None:
    # actions/attest-build-provenance writes the builder id from RUNNER_ENVIRONMENT, which the job
    # controls; the certificate's runner_environment comes from the OIDC token.
    stmt = testsigstore.slsa_v1_statement("tool", world["hex"], builder_id=GITHUB_HOSTED,
                                          build_type=ATTEST_BUILD_TYPE,
                                          repository="https://github.com/evil/x", ref="refs/tags/v1")
    b = dump(world["dir"] / f"runner-{runner}.json",
             ts.sign_dsse(stmt, identity=TENANT, issuer=ISS, extensions=gh_extensions(TENANT, runner=runner)))
    r = verify(world, b, identity=TENANT, extra=("--min-slsa-level", "2"))
    assert r.code == 1, r.out
    assert r.json["trust_level"] == "PROVENANCE_FAIL"
    (bs,) = checks(r, "builder_signer")
    assert bs["status"] == "fail" and "runner_environment github-hosted" in bs["expected"]
    assert f"runner_environment {runner or 'absent'}" in bs["actual"]
    assert r.json["provenance"]["slsa_level"] is None

    hosted = dump(world["dir"] / "runner-hosted.json",
                  ts.sign_dsse(stmt, identity=TENANT, issuer=ISS, extensions=gh_extensions(TENANT)))
    ok = verify(world, hosted, identity=TENANT, extra=("--min-slsa-level", "2"))
    assert ok.code == 0, ok.out
    assert ok.json["provenance"]["slsa_level"] == 2


def test_builder_entry_without_signer_binding_grants_no_level(ts, world) -> None:
    # A policy builder that does not say how its signature proves it: the level would rest on text
    # the signer wrote, so it is not granted.
    bid = "https://ci.example/builder@refs/tags/v1"
    stmt = testsigstore.slsa_v1_statement("tool", world["hex"], builder_id=bid)
    b = dump(world["dir"] / "unbound.json",
             ts.sign_dsse(stmt, identity=TENANT, issuer=ISS, extensions=gh_extensions(TENANT)))

    def policy(entry: dict[str, Any]) -> Path:
        return dump(world["dir"] / f"policy-{len(entry)}.json", {
            "version": 1,
            "trust": {"signers": [{"identity": TENANT, "issuer": ISS}],
                      "trustedRoots": [{"path": str(world["root"])}],
                      "trustedBuilders": [{"id": "https://ci.example/builder@refs/tags/v*", "level": 2,
                                           **entry}]},
            "requirements": {"minSlsaLevel": 2},
            "permissions": {"allow": ["Bash"]},
        })

    r = cli("verify", str(world["tool"]), "--bundle", str(b), "--policy", str(policy({})),
                       "--format", "json")
    assert r.code == 1, r.out + r.err
    assert r.json["trust_level"] == "PROVENANCE_FAIL"
    (bs,) = checks(r, "builder_signer")
    assert bs["status"] == "skip" and "states no signer binding" in bs["message"]
    bound = policy({"signerWorkflow": TENANT.rsplit("@", 1)[0] + "@refs/tags/v*", "signerIssuer": ISS})
    r = cli("verify", str(world["tool"]), "--bundle", str(b), "--policy", str(bound),
                       "--format", "json")
    assert r.code == 0, r.out + r.err
    assert r.json["provenance"]["slsa_level"] == 2


def test_committed_generator_fixture_carries_the_generators_build_signer() -> None:
    manifest = json.loads((SIG / "manifest.json").read_text())
    row = next(f for f in manifest["files"] if f["file"] == "good/hello-tool.dsse.sigstore.json")
    assert row["identity"] == GENERATOR
    r = cli("verify", str(SIG / "artifacts" / "hello-tool"), "--bundle", str(SIG / row["file"]),
                       "--trusted-root", str(SIG / "trusted_root.json"), "--certificate-identity", GENERATOR,
                       "--certificate-oidc-issuer", ISS, "--min-slsa-level", "3", "--format", "json")
    assert r.code == 0, r.out
    assert r.json["signature"]["extensions"]["build_signer_uri"] == GENERATOR


# -- 8. provenance requirements are met only by SLSA provenance -----------------------------------------


def sbom(world: dict[str, Any]) -> dict[str, Any]:
    return {"_type": "https://in-toto.io/Statement/v1",
            "subject": [{"name": "tool", "digest": {"sha256": world["hex"]}}],
            "predicateType": "https://spdx.dev/Document",
            "predicate": {"spdxVersion": "SPDX-2.3", "name": "tool", "packages": []}}


def test_sbom_attestation_does_not_satisfy_provenance_required(ts, world) -> None:
    b = dump(world["dir"] / "sbom.json",
             ts.sign_dsse(sbom(world), identity=TENANT, issuer=ISS, extensions=gh_extensions(TENANT)))
    pol = dump(world["dir"] / "prov-required.json", {
        "version": 1,
        "trust": {"signers": [{"identity": TENANT, "issuer": ISS}],
                  "trustedRoots": [{"path": str(world["root"])}]},
        "requirements": {"provenanceRequired": True},
        "permissions": {"allow": ["Bash"]},
    })
    r = cli("verify", str(world["tool"]), "--bundle", str(b), "--policy", str(pol), "--format", "json")
    assert r.code == 1, r.out + r.err
    out = r.json
    assert out["trust_level"] == "PROVENANCE_FAIL" and out["decision"]["behavior"] == "deny"
    (pt,) = [c for c in checks(r, "predicate_type") if c["status"] == "fail"]
    assert pt["actual"] == "https://spdx.dev/Document"
    assert "https://slsa.dev/provenance/v1" in pt["expected"]
    assert out["provenance"]["status"] != "valid"


@pytest.mark.parametrize("flag", [("--builder-id", GENERIC + "@refs/tags/v*"), ("--min-slsa-level", "0"),
                                  ("--source-uri", "https://github.com/evil/x")],
                         ids=["builder-id", "min-slsa-level", "source-uri"])
def test_sbom_attestation_does_not_satisfy_builder_id(ts, world, flag: tuple[str, str]) -> None:
    b = dump(world["dir"] / "sbom-flag.json",
             ts.sign_dsse(sbom(world), identity=TENANT, issuer=ISS, extensions=gh_extensions(TENANT)))
    r = verify(world, b, identity=TENANT, extra=flag)
    assert r.code == 1, r.out
    assert r.json["trust_level"] == "PROVENANCE_FAIL"
    assert any(c["status"] == "fail" and c["actual"] == "https://spdx.dev/Document"
               for c in checks(r, "predicate_type"))


def test_sbom_alone_still_verifies_without_provenance_requirements(ts, world) -> None:
    b = dump(world["dir"] / "sbom-plain.json",
             ts.sign_dsse(sbom(world), identity=TENANT, issuer=ISS, extensions=gh_extensions(TENANT)))
    r = verify(world, b, identity=TENANT)
    assert r.code == 0, r.out
    # Not provenance: reported, never "valid" provenance a later decision could count.
    assert r.json["provenance"]["status"] == "unchecked"


# -- 19. bundle times outside the representable range ---------------------------------------------------


@pytest.mark.parametrize("value", ["253402300800", "9223372036854775807"], ids=["year-10000", "int64-max"])
@pytest.mark.parametrize("kind", ["message", "dsse", "intoto"])
def test_bundle_time_year_10000_fails_closed_and_other_bundle_still_counts(ts, world, kind: str,
                                                                         value: str) -> None:
    data = world["tool"].read_bytes()
    if kind == "message":
        doc = ts.sign_artifact(data, identity=TENANT, issuer=ISS)
    else:
        stmt = testsigstore.slsa_v1_statement("tool", world["hex"])
        doc = ts.sign_dsse(stmt, identity=TENANT, issuer=ISS, entry_kind=kind)
    good = dump(world["dir"] / f"good-{kind}.json", doc)
    broken = json.loads(json.dumps(doc))
    # The mutation also breaks the SET and the checkpoint; the time must fail first, on its own.
    broken["verificationMaterial"]["tlogEntries"][0]["integratedTime"] = value
    bad = dump(world["dir"] / f"time-{kind}-{value}.json", broken)

    r = verify(world, bad, good, identity=TENANT)
    assert r.code == 0, r.out + r.err
    out = r.json
    assert out["trust_level"] == "VERIFIED"
    (t,) = [c for c in checks(r, "tlog.integrated_time") if c["evidence"] == bad.name]
    assert t["status"] == "fail" and t["actual"] == int(value)
    assert "representable" in t["message"]
    assert not any(c["status"] == "error" for c in out["checks"])
    atts = {a["evidence"]: a for a in out["attestations"]}
    assert atts[bad.name]["valid"] is False and atts[bad.name]["compromised"] is False
    assert atts[good.name]["valid"] is True

    alone = verify(world, bad, identity=TENANT)
    assert alone.code == 1 and alone.json["trust_level"] == "UNVERIFIED"


def test_key_bundle_time_year_10000_fails_closed_and_other_bundle_still_counts(tmp_path: Path) -> None:
    good = SIG / "good" / "readme.managed-key.sigstore.json"
    doc = json.loads(good.read_text())
    doc["verificationMaterial"]["tlogEntries"][0]["integratedTime"] = "253402300800"
    bad = dump(tmp_path / "key-time.json", doc)
    r = cli("verify", str(SIG / "artifacts" / "readme.txt"), "--bundle", str(bad), "--bundle", str(good),
                       "--key", str(SIG / "keys" / "managed-key.pub"), "--trusted-root",
                       str(SIG / "trusted_root.json"), "--format", "json")
    assert "Traceback" not in r.err
    assert r.code == 0, r.out + r.err
    assert [c["status"] for c in r.json["checks"] if c["name"] == "tlog.integrated_time"] == ["fail"]


def test_unparsable_rfc3161_time_fails_closed_and_other_bundle_still_counts(ts, world) -> None:
    import base64

    data = world["tool"].read_bytes()
    root = ts.write_trusted_root_v2(world["dir"] / "trusted_root_v2.json")
    good = dump(world["dir"] / "tsa-good.json", ts.sign_artifact_v2(data, identity=TENANT, issuer=ISS))
    doc = json.loads(good.read_text())
    # A genTime the RFC 3161 parser refuses, in a token the test TSA really signed over this signature.
    from datetime import datetime, timezone

    token = ts.tsa.timestamp(base64.b64decode(doc["messageSignature"]["signature"]),
                             datetime(1, 1, 1, tzinfo=timezone.utc))
    doc["verificationMaterial"]["timestampVerificationData"]["rfc3161Timestamps"][0]["signedTimestamp"] = (
        base64.b64encode(token).decode())
    bad = dump(world["dir"] / "tsa-year1.json", doc)
    r = cli("verify", str(world["tool"]), "--bundle", str(bad), "--bundle", str(good),
                       "--trusted-root", str(root), "--certificate-identity", TENANT,
                       "--certificate-oidc-issuer", ISS, "--format", "json")
    assert "Traceback" not in r.err
    assert r.code == 0, r.out
    (t,) = [c for c in r.json["checks"] if c["name"] == "timestamp" and c["evidence"] == bad.name]
    assert t["status"] == "fail" and "cannot be parsed" in t["message"]
    assert not any(c["status"] == "error" for c in r.json["checks"])
