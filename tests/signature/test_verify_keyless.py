"""Keyless verification through the CLI against bundles minted by the local test Sigstore.

Every bundle here is real: certificates chain to the test CA, carry valid SCTs, and sit in a real Merkle
log with signed checkpoints and SETs; sigstore-python verifies them in-process.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import testsigstore
from verify_helpers import cli, cli_subprocess
from world import World

ID = "https://github.com/acme/tool/.github/workflows/release.yml@refs/tags/v1.0.0"
ISS = "https://token.actions.githubusercontent.com"
GH_EXT = {
    "github_workflow_repository": "acme/tool",
    "github_workflow_ref": "refs/tags/v1.0.0",
    "source_repository_uri": "https://github.com/acme/tool",
    "runner_environment": "github-hosted",
}


@pytest.fixture(scope="module")
def ts() -> testsigstore.TestSigstore:
    return testsigstore.TestSigstore(seed=7)


@pytest.fixture(scope="module")
def world(ts: testsigstore.TestSigstore, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    w = World(tmp_path_factory.mktemp("keyless"), ts=ts)
    return {"dir": w.dir, "art": w.file("tool", b"#!/bin/sh\necho tool\n"), "root": w.root}


def _write(d: Path, name: str, bundle: dict) -> Path:
    p = d / name
    p.write_text(json.dumps(bundle))
    return p


def verify(world: dict[str, Path], bundle: Path, *extra: str, artifact: Path | None = None):
    return cli("verify", str(artifact or world["art"]), "--bundle", str(bundle),
               "--trusted-root", str(world["root"]), "--format", "json", *extra)


def test_uri_identity_exact_match_is_verified(ts, world) -> None:
    b = _write(world["dir"], "uri.json", ts.sign_artifact(world["art"].read_bytes(), identity=ID, issuer=ISS,
                                                          extensions=GH_EXT))
    r = verify(world, b, "--certificate-identity", ID, "--certificate-oidc-issuer", ISS)
    assert r.code == 0, r.out
    out = r.json
    assert out["trust_level"] == "VERIFIED"
    assert out["signature"] == {**out["signature"], "status": "valid", "identity": ID, "issuer": ISS}
    names = {c["name"]: c for c in out["checks"]}
    assert names["identity"]["expected"] == ID and names["identity"]["actual"] == ID
    assert names["issuer"]["status"] == "pass"
    assert names["digest"]["status"] == "pass"


@pytest.mark.parametrize("version", ["0.1", "0.2", "0.3"])
def test_every_bundle_version_verifies(ts, world, version: str) -> None:
    b = _write(world["dir"], f"v{version}.json",
               ts.sign_artifact(world["art"].read_bytes(), identity=ID, issuer=ISS, bundle_version=version))
    assert verify(world, b, "--certificate-identity", ID, "--certificate-oidc-issuer", ISS).code == 0


def test_email_identity_and_issuer_regexp_full_match(ts, world) -> None:
    b = _write(world["dir"], "email.json", ts.sign_artifact(
        world["art"].read_bytes(), identity="dev@acme.example", issuer="https://accounts.google.com", san="email"))
    ok = verify(world, b, "--certificate-identity-regexp", r"[a-z]+@acme\.example",
                "--certificate-oidc-issuer-regexp", r"https://accounts\.google\.com")
    assert ok.code == 0, ok.out


@pytest.mark.parametrize("pattern", [
    r"https://github\.com/acme/tool",           # matches only a prefix of the identity
    r"release\.yml@refs/tags/v1\.0\.0",         # matches only a suffix
    r"acme",                                    # a substring
])
def test_identity_regexp_matching_only_part_of_the_identity_fails(ts, world, pattern: str) -> None:
    b = _write(world["dir"], "partial.json",
               ts.sign_artifact(world["art"].read_bytes(), identity=ID, issuer=ISS))
    r = verify(world, b, "--certificate-identity-regexp", pattern, "--certificate-oidc-issuer", ISS)
    assert r.code == 1
    assert r.json["trust_level"] == "UNVERIFIED"
    ident = next(c for c in r.json["checks"] if c["name"] == "identity")
    assert ident["status"] == "fail" and ident["actual"] == ID and pattern in ident["expected"]


def test_issuer_regexp_matching_a_prefix_fails(ts, world) -> None:
    b = _write(world["dir"], "iss.json", ts.sign_artifact(world["art"].read_bytes(), identity=ID,
                                                          issuer=ISS + ".evil.example"))
    r = verify(world, b, "--certificate-identity", ID,
               "--certificate-oidc-issuer-regexp", r"https://token\.actions\.githubusercontent\.com")
    assert r.code == 1
    iss = next(c for c in r.json["checks"] if c["name"] == "issuer")
    assert iss["actual"] == ISS + ".evil.example"


@pytest.mark.parametrize("v1,v2", [(True, False), (False, True)])
def test_issuer_is_read_from_either_fulcio_extension(ts, world, v1: bool, v2: bool) -> None:
    b = _write(world["dir"], f"iss{v1}{v2}.json", ts.sign_artifact(
        world["art"].read_bytes(), identity=ID, issuer=ISS, issuer_v1=v1, issuer_v2=v2))
    assert verify(world, b, "--certificate-identity", ID, "--certificate-oidc-issuer", ISS).code == 0


def test_signature_by_unlisted_identity_is_unverified(ts, world) -> None:
    b = _write(world["dir"], "other.json", ts.sign_artifact(
        world["art"].read_bytes(), identity="https://github.com/mallory/tool/.github/workflows/x.yml@refs/heads/main",
        issuer=ISS))
    r = verify(world, b, "--certificate-identity", ID, "--certificate-oidc-issuer", ISS)
    assert r.code == 1
    assert r.json["trust_level"] == "UNVERIFIED"
    assert r.json["signature"]["status"] == "valid"  # the math holds; the signer is not trusted
    assert r.json["decision"]["behavior"] == "deny"


def test_any_of_several_allowed_identities_is_enough(ts, world) -> None:
    b = _write(world["dir"], "many.json", ts.sign_artifact(world["art"].read_bytes(), identity=ID, issuer=ISS))
    r = verify(world, b, "--certificate-identity", "https://example.com/other",
               "--certificate-identity", ID, "--certificate-oidc-issuer", ISS)
    assert r.code == 0


def test_github_claims_are_enforced_and_self_hosted_runners_refused(ts, world) -> None:
    data = world["art"].read_bytes()
    hosted = _write(world["dir"], "hosted.json", ts.sign_artifact(data, identity=ID, issuer=ISS, extensions=GH_EXT))
    selfh = _write(world["dir"], "self.json", ts.sign_artifact(
        data, identity=ID, issuer=ISS, extensions={**GH_EXT, "runner_environment": "self-hosted"}))
    flags = ("--certificate-identity", ID, "--certificate-oidc-issuer", ISS,
             "--certificate-runner-environment", "github-hosted",
             "--certificate-github-workflow-repository", "acme/tool",
             "--certificate-source-repository-uri", "https://github.com/acme/tool")
    assert verify(world, hosted, *flags).code == 0
    r = verify(world, selfh, *flags)
    assert r.code == 1
    c = next(c for c in r.json["checks"] if c["name"] == "claim.runner_environment")
    assert (c["expected"], c["actual"]) == ("github-hosted", "self-hosted")


def test_verify_without_identity_constraint_exits_2_and_names_the_flag(ts, world) -> None:
    b = _write(world["dir"], "noid.json", ts.sign_artifact(world["art"].read_bytes(), identity=ID, issuer=ISS))
    r = cli("verify", str(world["art"]), "--bundle", str(b), "--trusted-root", str(world["root"]))
    assert r.code == 2
    assert "--certificate-identity" in r.err and "Traceback" not in r.err


def test_empty_allowlist_allows_nobody(ts, world) -> None:
    from atip_trust.signature.identity import CertificateFacts, match_identities

    facts = CertificateFacts(sans=(ID,), issuer=ISS, extensions={})
    rule, checks = match_identities([], facts)
    assert rule is None and checks[0].status == "fail"


def test_bundle_for_another_artifact_is_compromised(ts, world) -> None:
    b = _write(world["dir"], "otherart.json", ts.sign_artifact(b"other bytes", identity=ID, issuer=ISS))
    r = verify(world, b, "--certificate-identity", ID, "--certificate-oidc-issuer", ISS)
    assert r.code == 1 and r.json["trust_level"] == "COMPROMISED"
    d = next(c for c in r.json["checks"] if c["name"] == "digest")
    assert d["expected"].endswith(r.json["artifact"]["digest"]["sha256"])


def test_bundle_from_another_sigstore_instance_names_the_root(world) -> None:
    other = testsigstore.TestSigstore(seed=99)
    b = _write(world["dir"], "foreign.json", other.sign_artifact(world["art"].read_bytes(), identity=ID, issuer=ISS))
    r = verify(world, b, "--certificate-identity", ID, "--certificate-oidc-issuer", ISS)
    assert r.code == 1 and r.json["trust_level"] == "UNVERIFIED"
    assert str(world["root"]) in json.dumps(r.json["checks"])


def test_integrated_time_in_the_future_is_refused(ts, world) -> None:
    future = int(time.time()) + 86400
    b = _write(world["dir"], "future.json", ts.sign_artifact(world["art"].read_bytes(), identity=ID, issuer=ISS,
                                                             integrated_time=future))
    r = verify(world, b, "--certificate-identity", ID, "--certificate-oidc-issuer", ISS)
    assert r.code == 1
    t = next(c for c in r.json["checks"] if c["name"] == "time")
    assert t["status"] == "fail" and "future" in t["message"]


@pytest.mark.parametrize("kind", ["message", "dsse", "intoto"])
def test_every_bad_variant_is_denied_with_a_named_check(ts, world, kind: str) -> None:
    data = world["art"].read_bytes()
    stmt = testsigstore.slsa_v1_statement("tool", __import__("hashlib").sha256(data).hexdigest())
    for m in testsigstore.MUTATIONS_BY_KIND[kind]:
        if kind == "message":
            bundle = ts.sign_artifact(data, identity=ID, issuer=ISS, mutate=m)
        else:
            bundle = ts.sign_dsse(stmt, identity=ID, issuer=ISS, entry_kind="dsse" if kind == "dsse" else "intoto",
                                  mutate=m)
        b = _write(world["dir"], f"bad-{kind}-{m}.json", bundle)
        r = verify(world, b, "--certificate-identity", ID, "--certificate-oidc-issuer", ISS)
        assert r.code == 1, f"{kind}/{m}: exit {r.code} {r.out[-500:]} {r.err}"
        out = r.json
        assert out["trust_level"] in ("COMPROMISED", "UNVERIFIED"), (kind, m, out["trust_level"])
        failed = [c for c in out["checks"] if c["status"] in ("fail", "error")]
        assert failed, (kind, m)
        if m in ("signature", "digest", "payload_hash"):
            assert out["trust_level"] == "COMPROMISED", (kind, m, failed)


@pytest.mark.parametrize("kind", ["dsse", "intoto"])
def test_good_attestations_verify_including_intoto_entries(ts, world, kind: str) -> None:
    data = world["art"].read_bytes()
    stmt = testsigstore.slsa_v1_statement("tool", __import__("hashlib").sha256(data).hexdigest())
    b = _write(world["dir"], f"good-{kind}.json", ts.sign_dsse(stmt, identity=ID, issuer=ISS, entry_kind=kind))
    r = verify(world, b, "--certificate-identity", ID, "--certificate-oidc-issuer", ISS)
    assert r.code == 0, r.out
    assert r.json["provenance"]["builder_id"]


def test_attestation_about_another_artifact_does_not_apply(ts, world) -> None:
    stmt = testsigstore.slsa_v1_statement("other", "ab" * 32)
    b = _write(world["dir"], "otherstmt.json", ts.sign_dsse(stmt, identity=ID, issuer=ISS))
    r = verify(world, b, "--certificate-identity", ID, "--certificate-oidc-issuer", ISS)
    assert r.code == 1 and r.json["trust_level"] == "UNSIGNED"
    s = next(c for c in r.json["checks"] if c["name"] == "subject")
    assert "ab" * 32 in json.dumps(s["actual"])


@pytest.mark.parametrize("knob", ["omit_key_usage", "omit_eku"])
def test_certificate_without_key_usage_is_denied_without_traceback(ts, world, knob: str) -> None:
    b = _write(world["dir"], f"{knob}.json", ts.sign_artifact(world["art"].read_bytes(), identity=ID, issuer=ISS,
                                                              **{knob: True}))
    r = verify(world, b, "--certificate-identity", ID, "--certificate-oidc-issuer", ISS)
    assert r.code == 1 and "Traceback" not in r.err
    assert r.json["trust_level"] == "UNVERIFIED"


def test_metadata_declaring_another_checksum_is_compromised(ts, world) -> None:
    b = _write(world["dir"], "meta-ok.json", ts.sign_artifact(world["art"].read_bytes(), identity=ID, issuer=ISS))
    meta = world["dir"] / "meta.json"
    meta.write_text(json.dumps({
        "atip": {"version": "0.6"}, "name": "tool", "version": "1.0.0", "description": "a tool",
        "trust": {"source": "native", "integrity": {"checksum": "sha256:" + "0" * 64,
                  "signature": {"type": "cosign", "identity": "https://evil.example/self", "issuer": ISS}}},
    }))
    r = verify(world, b, "--certificate-identity", ID, "--certificate-oidc-issuer", ISS, "--metadata", str(meta))
    assert r.code == 1 and r.json["trust_level"] == "COMPROMISED"
    c = next(c for c in r.json["checks"] if c["name"] == "claim.checksum")
    assert c["expected"] == "sha256:" + "0" * 64


def test_declared_signer_in_metadata_is_never_used_as_the_constraint(ts, world) -> None:
    """A tool that signs itself and declares that identity is not VERIFIED unless the caller names it."""
    mallory = "https://github.com/mallory/tool/.github/workflows/release.yml@refs/heads/main"
    data = world["art"].read_bytes()
    b = _write(world["dir"], "self-signed.json", ts.sign_artifact(data, identity=mallory, issuer=ISS))
    meta = world["dir"] / "self-meta.json"
    meta.write_text(json.dumps({
        "atip": {"version": "0.6"}, "name": "tool", "version": "1.0.0", "description": "a tool",
        "trust": {"source": "native", "integrity": {"signature": {"type": "cosign", "identity": mallory,
                                                                  "issuer": ISS}}},
    }))
    r = verify(world, b, "--certificate-identity", ID, "--certificate-oidc-issuer", ISS, "--metadata", str(meta))
    assert r.code == 1 and r.json["trust_level"] == "UNVERIFIED"


def test_console_script_subprocess_in_ci_mode_gives_json_and_exit_code(ts, world) -> None:
    b = _write(world["dir"], "sub.json", ts.sign_artifact(world["art"].read_bytes(), identity=ID, issuer=ISS))
    r = cli_subprocess("verify", str(world["art"]), "--bundle", str(b), "--trusted-root", str(world["root"]),
                       "--certificate-identity", ID, "--certificate-oidc-issuer", ISS, "--format", "sarif")
    assert r.code == 0
    assert r.json["version"] == "2.1.0" and r.json["runs"][0]["results"] == []


def test_promise_only_message_bundles_verify_and_their_mutations_fail(ts, world) -> None:
    """v0.1 bundles with an inclusion promise and no proof: sigstore-python refuses them; we verify
    them fully (chain, SCT, SET, signature, logged body) — and every mutation that applies fails."""
    data = world["art"].read_bytes()
    good = _write(world["dir"], "promise.json", ts.sign_artifact(data, identity=ID, issuer=ISS, bundle_version="0.1",
                                                                 inclusion_proof=False))
    assert verify(world, good, "--certificate-identity", ID, "--certificate-oidc-issuer", ISS).code == 0
    tried = 0
    for m in testsigstore.MUTATIONS_BY_KIND["message"]:
        try:
            bundle = ts.sign_artifact(data, identity=ID, issuer=ISS, bundle_version="0.1", inclusion_proof=False,
                                      mutate=m)
        except ValueError:  # the mutation targets material a promise-only bundle does not carry
            continue
        tried += 1
        r = verify(world, _write(world["dir"], f"promise-{m}.json", bundle),
                   "--certificate-identity", ID, "--certificate-oidc-issuer", ISS)
        assert r.code == 1, (m, r.json["checks"])
        if m in ("signature", "digest", "body"):
            assert r.json["trust_level"] == "COMPROMISED", m
    assert tried >= 6


@pytest.mark.parametrize("kind", ["dsse", "intoto"])
def test_provenance_signed_by_an_identity_outside_the_allowed_ones_is_not_trusted(ts, world, kind: str) -> None:
    """Genuine provenance whose builder and source match every requirement, signed by a signer the user
    did not allow: the math is valid but nothing it says is trusted (UNVERIFIED, exit 1)."""
    data = world["art"].read_bytes()
    stmt = testsigstore.slsa_v1_statement("tool", __import__("hashlib").sha256(data).hexdigest())
    mallory = "https://github.com/mallory/tool/.github/workflows/release.yml@refs/tags/v1.0.0"
    b = _write(world["dir"], f"mallory-{kind}.json", ts.sign_dsse(stmt, identity=mallory, issuer=ISS,
                                                                  entry_kind=kind))
    # The allowed signer is the builder the statement names (the generator signs its own provenance:
    # a --builder-id in the trusted-builder map must be proven by the certificate).
    builder = stmt["predicate"]["runDetails"]["builder"]["id"]
    good = _write(world["dir"], f"allowed-{kind}.json", ts.sign_dsse(
        stmt, identity=builder, issuer=ISS, entry_kind=kind, extensions={"build_signer_uri": builder}))
    flags = ("--certificate-identity", builder, "--certificate-oidc-issuer", ISS, "--builder-id", builder)
    assert verify(world, good, *flags).code == 0  # the same statement from the allowed signer passes
    r = verify(world, b, *flags)
    assert r.code == 1, r.out
    assert r.json["trust_level"] == "UNVERIFIED"
    assert r.json["signature"]["status"] == "valid"
    assert r.json["decision"]["behavior"] == "deny"
    ident = next(c for c in r.json["checks"] if c["name"] == "identity")
    assert ident["status"] == "fail" and ident["actual"] == mallory
