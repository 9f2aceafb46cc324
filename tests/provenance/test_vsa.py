"""SLSA Verification Summary Attestations: ``verify --emit-vsa`` writes one a CI job signs, whatever the
verdict; ``verify-vsa`` checks one with slsa-verifier's flags and meaning (issue 25 items 1-2).

Real crypto throughout: keys made with ``cryptography``, the local test Sigstore's fixture bundles, and
the emitted envelope's signature checked a second time by ``cryptography`` alone (the PAE written out
here, not taken from the package). slsa-verifier's own test vector (its ``testdata/vsa`` GCE case) is
read from a slsa-framework/slsa-verifier clone when one is present (``ATIP_SLSA_VERIFIER_MIRROR``, else
``../shared/slsa-verifier`` beside the checkout: tests/shared_material.py): another project's files are
never copied into this repository.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from shared_material import shared_path, where
from verify_helpers import cli

REPO = Path(__file__).resolve().parents[2]
FX = REPO / "fixtures" / "sigstore"
ARTIFACT = FX / "artifacts" / "hello-tool"
SHA256 = "10dee0c17526cef6c21ce86eaad16eddce95be655099d55e167a306f816c7ea9"
ISSUER = "https://token.actions.githubusercontent.com"
GENERATOR = ("https://github.com/slsa-framework/slsa-github-generator/.github/workflows/"
             "generator_generic_slsa3.yml@refs/tags/v2.1.0")
VERIFIER = "https://ci.example.com/atip-trust/verify"
RESOURCE = "https://github.com/atip-test/hello-tool/releases/download/v1.0.0/hello-tool"


def _write_key(d: Path, name: str, key: Any) -> tuple[Path, Path]:
    priv, pub = d / f"{name}.key", d / f"{name}.pub"
    priv.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    pub.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                  serialization.PublicFormat.SubjectPublicKeyInfo))
    return priv, pub


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    d = tmp_path_factory.mktemp("vsa-keys")
    return {"ci": _write_key(d, "ci", ec.generate_private_key(ec.SECP256R1())),
            "other": _write_key(d, "other", ec.generate_private_key(ec.SECP256R1())),
            "ed": _write_key(d, "ed", ed25519.Ed25519PrivateKey.generate())}


@pytest.fixture(autouse=True)
def no_org(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ATIP_TRUST_ORG_POLICY", raising=False)


def emit(out: Path, key: Path, *extra: str, identity: str = GENERATOR) -> int:
    r = cli("verify", str(ARTIFACT), "--bundle", str(FX / "good" / "hello-tool.dsse.sigstore.json"),
            "--trusted-root", str(FX / "trusted_root.json"), "--certificate-identity", identity,
            "--certificate-oidc-issuer", ISSUER, "--no-cache", "-q",
            "--emit-vsa", str(out), "--vsa-key", str(key), "--vsa-verifier-id", VERIFIER,
            "--vsa-resource-uri", RESOURCE, *extra)
    return r.code


def check(vsa: Path, pub: Path, *extra: str, digest: str = f"sha256:{SHA256}") -> Any:
    return cli("verify-vsa", "--attestation-path", str(vsa), "--subject-digest", digest,
               "--verifier-id", VERIFIER, "--resource-uri", RESOURCE, "--public-key-path", str(pub), *extra)


def envelope(path: Path) -> dict[str, Any]:
    lines = path.read_bytes().splitlines()
    assert len(lines) == 1  # one JSON line, as slsa-verifier's .jsonl testdata
    doc: dict[str, Any] = json.loads(lines[0])
    return doc


def statement(env: dict[str, Any]) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(base64.b64decode(env["payload"]))
    return doc


@pytest.fixture(scope="module")
def passed(keys, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("vsa") / "hello-tool.vsa.jsonl"
    os.environ.pop("ATIP_TRUST_ORG_POLICY", None)
    assert emit(out, keys["ci"][0], "--min-slsa-level", "3") == 0
    return out


def test_emitted_vsa_is_an_in_toto_v1_slsa_vsa_of_this_artifact(passed: Path) -> None:
    env = envelope(passed)
    assert env["payloadType"] == "application/vnd.in-toto+json"
    st = statement(env)
    assert st["_type"] == "https://in-toto.io/Statement/v1"
    assert st["predicateType"] == "https://slsa.dev/verification_summary/v1"
    assert st["subject"][0]["digest"]["sha256"] == SHA256 and "sha512" in st["subject"][0]["digest"]
    p = st["predicate"]
    assert p["verifier"]["id"] == VERIFIER and p["resourceUri"] == RESOURCE
    assert p["verificationResult"] == "PASSED"
    assert p["verifiedLevels"] == ["SLSA_BUILD_LEVEL_3"]  # from the trusted-builder map
    assert p["timeVerified"].endswith("Z")
    assert p["policy"]["uri"] == "atip-trust:verify-flags" and len(p["policy"]["digest"]["sha256"]) == 64
    bundle = (FX / "good" / "hello-tool.dsse.sigstore.json").read_bytes()
    assert p["inputAttestations"] == [{"uri": "hello-tool.dsse.sigstore.json",
                                       "digest": {"sha256": hashlib.sha256(bundle).hexdigest()}}]


def test_emitted_signature_verifies_with_cryptography_alone(passed: Path, keys) -> None:
    """An independent check: DSSE v1 PAE written out here, the public key loaded by cryptography."""
    env = envelope(passed)
    payload = base64.b64decode(env["payload"])
    ptype = env["payloadType"].encode()
    pae = b"DSSEv1 " + str(len(ptype)).encode() + b" " + ptype + b" " + str(len(payload)).encode() + b" " + payload
    pub = serialization.load_pem_public_key(keys["ci"][1].read_bytes())
    assert isinstance(pub, ec.EllipticCurvePublicKey)
    (sig,) = env["signatures"]
    pub.verify(base64.b64decode(sig["sig"]), pae, ec.ECDSA(hashes.SHA256()))  # raises if not
    with pytest.raises(InvalidSignature):  # the payload alone is not what was signed
        pub.verify(base64.b64decode(sig["sig"]), payload, ec.ECDSA(hashes.SHA256()))


def test_round_trip_emit_then_verify_vsa(passed: Path, keys) -> None:
    r = check(passed, keys["ci"][1], "--verified-level", "SLSA_BUILD_LEVEL_3")
    assert r.code == 0, r.err
    assert "PASSED" in r.err
    j = check(passed, keys["ci"][1], "--format", "json").json
    assert j["result"] == "PASSED" and j["exit_code"] == 0 and j["problems"] == []
    assert j["key_id"].startswith("SHA256:")  # the default key id slsa-verifier computes


def test_verify_vsa_sha512_subject_digest_also_matches(passed: Path, keys) -> None:
    sha512 = statement(envelope(passed))["subject"][0]["digest"]["sha512"]
    assert check(passed, keys["ci"][1], digest=f"sha512:{sha512}").code == 0


@pytest.mark.parametrize("case, extra, digest, code", [
    ("another artifact's digest", (), "sha256:" + "0" * 64, "VSA_SUBJECT_MISMATCH"),
    ("a level higher than verified", ("--verified-level", "SLSA_BUILD_LEVEL_4"), None, "VSA_LEVEL_TOO_LOW"),
    ("a level the VSA does not list", ("--verified-level", "FEDRAMP_LOW"), None, "VSA_LEVEL_MISSING"),
])
def test_verify_vsa_refuses_what_the_vsa_does_not_say(passed: Path, keys, case, extra, digest, code) -> None:
    r = check(passed, keys["ci"][1], *extra, "--format", "json", digest=digest or f"sha256:{SHA256}")
    assert r.code == 1, case
    assert r.json["problems"][0]["code"] == code


def test_verify_vsa_refuses_another_verifier_id_or_resource(passed: Path, keys) -> None:
    base = ["verify-vsa", "--attestation-path", str(passed), "--subject-digest", f"sha256:{SHA256}",
            "--public-key-path", str(keys["ci"][1]), "--format", "json"]
    r = cli(*base, "--verifier-id", "https://evil.example/verifier", "--resource-uri", RESOURCE)
    assert r.code == 1 and r.json["problems"][0]["code"] == "VSA_VERIFIER_MISMATCH"
    r = cli(*base, "--verifier-id", VERIFIER, "--resource-uri", RESOURCE + "-other")
    assert r.code == 1 and r.json["problems"][0]["code"] == "VSA_RESOURCE_MISMATCH"


def test_vsa_signed_by_another_key_is_refused(passed: Path, keys) -> None:
    r = check(passed, keys["other"][1], "--format", "json")
    assert r.code == 1 and r.json["problems"][0]["code"] == "VSA_SIGNATURE" and r.json["vsa"] is None


def test_tampered_vsa_payload_is_refused(passed: Path, keys, tmp_path: Path) -> None:
    env = envelope(passed)
    st = statement(env)
    st["predicate"]["verifiedLevels"] = ["SLSA_BUILD_LEVEL_3", "FEDRAMP_HIGH"]
    env["payload"] = base64.b64encode(json.dumps(st).encode()).decode()
    bad = tmp_path / "tampered.jsonl"
    bad.write_text(json.dumps(env) + "\n")
    r = check(bad, keys["ci"][1], "--verified-level", "FEDRAMP_HIGH")
    assert r.code == 1 and "VSA_SIGNATURE" in r.err


def test_failed_verification_still_emits_a_failed_vsa(keys, tmp_path: Path) -> None:
    out = tmp_path / "failed.jsonl"
    assert emit(out, keys["ci"][0], identity="https://github.com/evil/x/.github/workflows/r.yml@refs/heads/main") == 1
    p = statement(envelope(out))["predicate"]
    assert p["verificationResult"] == "FAILED" and p["verifiedLevels"] == []
    r = check(out, keys["ci"][1], "--format", "json")
    assert r.code == 1 and r.json["problems"][0]["code"] == "VSA_NOT_PASSED"


def test_key_id_rule_is_slsa_verifiers(keys, tmp_path: Path) -> None:
    """A named keyid must be given as --public-key-id; the key's fingerprint need not; a signature with
    no keyid is tried with any key (go-securesystemslib EnvelopeVerifier)."""
    out = tmp_path / "named.jsonl"
    assert emit(out, keys["ed"][0], "--vsa-key-id", "kms://ci/vsa-key") == 0
    assert check(out, keys["ed"][1]).code == 1
    assert check(out, keys["ed"][1], "--public-key-id", "kms://other").code == 1
    assert check(out, keys["ed"][1], "--public-key-id", "kms://ci/vsa-key").code == 0
    env = envelope(out)
    env["signatures"][0]["keyid"] = ""
    anon = tmp_path / "anon.jsonl"
    anon.write_text(json.dumps(env))
    assert check(anon, keys["ed"][1]).code == 0
    assert check(anon, keys["other"][1]).code == 1


@pytest.mark.parametrize("argv, needle", [
    (["--emit-vsa", "X"], "--vsa-key"),
    (["--vsa-key", "X"], "--emit-vsa"),
])
def test_incomplete_emit_flags_are_a_usage_error(argv, needle) -> None:
    r = cli("verify", str(ARTIFACT), "--bundle", str(FX / "good" / "hello-tool.dsse.sigstore.json"), *argv)
    assert r.code == 2 and needle in r.err


def test_malformed_vsa_cannot_be_evaluated(keys, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"payloadType": "application/vnd.in-toto+json", "payload": "!!", "signatures": []}\n')
    assert check(bad, keys["ci"][1]).code == 2
    assert check(tmp_path / "missing.jsonl", keys["ci"][1]).code == 2


# --- slsa-verifier's own test vector ------------------------------------------------------------------

MIRROR = shared_path("slsa-verifier", env="ATIP_SLSA_VERIFIER_MIRROR")
GCE = "cli/slsa-verifier/testdata/vsa/gce/v1/"
GCE_FLAGS = {
    "--subject-digest": "gce_image_id:8970095005306000053",
    "--verifier-id": "https://bcid.corp.google.com/verifier/bcid_package_enforcer/v0.1",
    "--resource-uri": "gce_image://gke-node-images:gke-12615-gke1418000-cos-101-17162-463-29-c-cgpv1-pre",
    "--public-key-id": "keystore://76574:prod:vsa_signing_public_key",
}


@pytest.fixture(scope="module")
def gce(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The vector, read from the fetched mirror (a bare git repository) into a temporary directory."""
    if not MIRROR.exists():
        pytest.skip(f"no slsa-verifier clone at {where('slsa-verifier', env='ATIP_SLSA_VERIFIER_MIRROR')}: its "
                    "testdata/vsa GCE vector is not copied into this repo")
    d = tmp_path_factory.mktemp("gce")
    out = []
    for name in ("gke-gce-pre.bcid-vsa.jsonl", "vsa_signing_public_key.pem"):
        git = ["git", "-C", str(MIRROR), "show", f"HEAD:{GCE}{name}"]
        p = subprocess.run(git, check=False, capture_output=True, timeout=60)
        plain = MIRROR / GCE / name  # a work tree rather than a bare repository
        if p.returncode != 0 and not plain.is_file():
            pytest.skip(f"slsa-verifier mirror at {MIRROR} has no {GCE}{name}")
        (d / name).write_bytes(p.stdout if p.returncode == 0 else plain.read_bytes())
        out.append(d / name)
    return out[0], out[1]


def gce_check(gce: tuple[Path, Path], **change: str | None) -> Any:
    flags = {**GCE_FLAGS, **change}
    argv = ["verify-vsa", "--attestation-path", str(gce[0]), "--public-key-path", str(gce[1]),
            "--verified-level", "BCID_L1", "--verified-level", "SLSA_BUILD_LEVEL_2", "--format", "json"]
    for flag, value in flags.items():
        if value is not None:
            argv += [flag, value]
    return cli(*argv)


def test_slsa_verifier_gce_vector_verifies_with_its_documented_flags(gce) -> None:
    """slsa-verifier README "The verify-vsa command", and main_regression_test.go "success: gke"."""
    r = gce_check(gce)
    assert r.code == 0, r.out
    assert r.json["key_id"] == GCE_FLAGS["--public-key-id"]


@pytest.mark.parametrize("change, code", [
    ({"--public-key-id": None}, "VSA_SIGNATURE"),           # "fail: gke, empty public key id"
    ({"--public-key-id": "my_key_id"}, "VSA_SIGNATURE"),   # "fail: gke, wrong key id"
    ({"--resource-uri": "gce_image://gke-node-images:another-image"}, "VSA_RESOURCE_MISMATCH"),
    ({"--verifier-id": "https://bcid.corp.google.com/verifier/other"}, "VSA_VERIFIER_MISMATCH"),
    ({"--subject-digest": "gce_image_id:8970095005306000054"}, "VSA_SUBJECT_MISMATCH"),
])
def test_slsa_verifier_gce_vector_fails_for_wrong_expectations(gce, change, code) -> None:
    r = gce_check(gce, **change)
    assert r.code == 1 and r.json["problems"][0]["code"] == code


def test_slsa_verifier_gce_vector_levels(gce) -> None:
    base = ["verify-vsa", "--attestation-path", str(gce[0]), "--public-key-path", str(gce[1])]
    for k, v in GCE_FLAGS.items():
        base += [k, v]
    assert cli(*base, "--verified-level", "SLSA_BUILD_LEVEL_1").code == 0   # at least: 2 >= 1
    assert cli(*base, "--verified-level", "SLSA_BUILD_LEVEL_3").code == 1   # 2 < 3
    assert cli(*base, "--verified-level", "BCID_L2").code == 1              # not listed


# --- keyless: a VSA in a Sigstore bundle (which slsa-verifier cannot check) ------------------------------

CI_ID = "https://github.com/atip-test/hello-tool/.github/workflows/verify.yml@refs/heads/main"


@pytest.fixture(scope="module")
def keyless(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    import testsigstore

    ts = testsigstore.TestSigstore(seed=25)
    d = tmp_path_factory.mktemp("vsa-keyless")
    root = ts.write_trusted_root(d / "trusted_root.json")
    stmt = {"_type": "https://in-toto.io/Statement/v1",
            "subject": [{"name": "hello-tool", "digest": {"sha256": SHA256}}],
            "predicateType": "https://slsa.dev/verification_summary/v1",
            "predicate": {"verifier": {"id": VERIFIER}, "timeVerified": "2026-01-01T00:00:00Z",
                          "resourceUri": RESOURCE, "policy": {"uri": "atip-trust:verify-flags"},
                          "verificationResult": "PASSED", "verifiedLevels": ["SLSA_BUILD_LEVEL_3"]}}
    bundle = d / "vsa.sigstore.json"
    bundle.write_text(json.dumps(ts.sign_dsse(stmt, identity=CI_ID, issuer=ISSUER)))
    return {"root": root, "bundle": bundle}


def keyless_check(k: dict[str, Path], *extra: str, identity: str = CI_ID) -> Any:
    return cli("verify-vsa", "--attestation-path", str(k["bundle"]), "--subject-digest", f"sha256:{SHA256}",
               "--verifier-id", VERIFIER, "--resource-uri", RESOURCE, "--trusted-root", str(k["root"]),
               "--certificate-identity", identity, "--certificate-oidc-issuer", ISSUER, "--format", "json", *extra)


def test_keyless_vsa_in_a_sigstore_bundle_verifies_with_identity_flags(keyless) -> None:
    r = keyless_check(keyless, "--verified-level", "SLSA_BUILD_LEVEL_3")
    assert r.code == 0, r.out
    assert r.json["key_id"] == CI_ID


def test_keyless_vsa_by_another_identity_or_for_other_bytes_fails(keyless) -> None:
    r = keyless_check(keyless, identity="https://github.com/evil/x/.github/workflows/v.yml@refs/heads/main")
    assert r.code == 1 and r.json["problems"][0]["code"] == "VSA_SIGNATURE"
    r = cli("verify-vsa", "--attestation-path", str(keyless["bundle"]), "--subject-digest", "sha256:" + "1" * 64,
            "--verifier-id", VERIFIER, "--resource-uri", RESOURCE, "--trusted-root", str(keyless["root"]),
            "--certificate-identity", CI_ID, "--certificate-oidc-issuer", ISSUER, "--format", "json")
    assert r.code == 1


def test_verify_vsa_needs_a_key_or_an_identity(keyless) -> None:
    r = cli("verify-vsa", "--attestation-path", str(keyless["bundle"]), "--subject-digest", f"sha256:{SHA256}",
            "--verifier-id", VERIFIER, "--resource-uri", RESOURCE)
    assert r.code == 2 and "--public-key-path" in r.err


def test_attack_a_verification_allowed_only_by_a_waiver_emits_a_failed_vsa(keys, tmp_path: Path) -> None:
    """A live waiver lifts a failing requirement until it expires; a VSA carries no such expiry, so a
    PASSED summary would outlive the waiver on every machine that trusts the verifier."""
    pol = tmp_path / "waived.json"
    pol.write_text(json.dumps({"version": 1, "requirements": {"metadataSources": ["org"]},
                               "waivers": [{"digest": f"sha256:{SHA256}", "reason": "vendor fix pending",
                                            "expires": "2099-01-01"}]}))
    out = tmp_path / "waived.vsa.jsonl"
    assert emit(out, keys["ci"][0], "--policy", str(pol)) == 0  # the verification itself is allowed
    p = statement(envelope(out))["predicate"]
    assert p["verificationResult"] == "FAILED", p
    assert check(out, keys["ci"][1]).code == 1


@pytest.mark.parametrize("mode", ["audit", "warn"])
def test_attack_a_verification_allowed_only_by_audit_or_warn_mode_emits_a_failed_vsa(keys, tmp_path: Path,
                                                                                     mode: str) -> None:
    """A CI job verifies under a policy in ``audit``/``warn`` mode (to watch before enforcing): a failing
    requirement is reported and let through (MODE_*), exit 0. The VSA it signs must not say PASSED, or
    every machine that trusts the verifier admits what enforce mode would have denied."""
    pol = tmp_path / "audit.json"
    pol.write_text(json.dumps({"version": 1, "mode": mode, "requirements": {"metadataSources": ["org"]}}))
    out = tmp_path / "audit.vsa.jsonl"
    emit(out, keys["ci"][0], "--policy", str(pol))
    p = statement(envelope(out))["predicate"]
    assert p["verificationResult"] == "FAILED", p
    assert check(out, keys["ci"][1]).code == 1
