"""Keyless signing with the CI's ambient OIDC identity (issue 25: ``verify --emit-vsa ... --vsa-keyless``
and ``policy sign FILE --keyless``).

sigstore-python's real signer (``SigningContext``/``Signer``) runs unmodified against the local test
Sigstore served on 127.0.0.1 by pytest-httpserver (fixtures/testsigstore_service.py: an OIDC issuer
whose token Fulcio checks, a Fulcio issuing from the test CA with an SCT, a Rekor v1 appending to the
test log); it finds the identity as in GitHub Actions (``detect_credential``). What it writes is then
verified by ``verify-vsa`` and admission (``trust.verifiers`` by identity) and by the signed-org-policy
check, each through the real sigstore-python verifier.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from verify_helpers import cli

REPO = Path(__file__).resolve().parents[2]
FX = REPO / "fixtures" / "sigstore"
ARTIFACT = FX / "artifacts" / "hello-tool"
SHA256 = "10dee0c17526cef6c21ce86eaad16eddce95be655099d55e167a306f816c7ea9"
GH_ISSUER = "https://token.actions.githubusercontent.com"
GENERATOR = ("https://github.com/slsa-framework/slsa-github-generator/.github/workflows/"
             "generator_generic_slsa3.yml@refs/tags/v2.1.0")
VERIFIER = "https://ci.example.com/atip-trust/verify"
RESOURCE = "https://github.com/atip-test/hello-tool/releases/download/v1.0.0/hello-tool"
CI_ID = "https://github.com/example-org/ci/.github/workflows/verify.yml@refs/heads/main"
#: Every variable an ambient-credential detector of the ``id`` package looks at.
AMBIENT = ("ATIP_OFFLINE", "GITHUB_ACTIONS", "ACTIONS_ID_TOKEN_REQUEST_URL", "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "GITLAB_CI",
           "SIGSTORE_ID_TOKEN", "BUILDKITE", "CIRCLECI", "GOOGLE_SERVICE_ACCOUNT_NAME")


@pytest.fixture(autouse=True)
def no_ambient(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ATIP_TRUST_ORG_POLICY", raising=False)
    for name in AMBIENT:
        monkeypatch.delenv(name, raising=False)


def verify_emit(out: Path, *extra: str) -> Any:
    return cli("verify", str(ARTIFACT), "--bundle", str(FX / "good" / "hello-tool.dsse.sigstore.json"),
               "--trusted-root", str(FX / "trusted_root.json"), "--certificate-identity", GENERATOR,
               "--certificate-oidc-issuer", GH_ISSUER, "--no-cache", "-q", "--min-slsa-level", "3",
               "--emit-vsa", str(out), "--vsa-verifier-id", VERIFIER, "--vsa-resource-uri", RESOURCE, *extra)


# --- without an ambient identity: a clear refusal, nothing written ----------------------------------------

def test_vsa_keyless_without_an_ambient_identity_is_refused_naming_what_is_missing(tmp_path: Path) -> None:
    out = tmp_path / "vsa.jsonl"
    r = verify_emit(out, "--vsa-keyless")
    assert r.code == 2, (r.out, r.err)
    assert "ambient OIDC identity" in r.err and "ACTIONS_ID_TOKEN_REQUEST_URL" in r.err
    assert "SIGSTORE_ID_TOKEN" in r.err
    assert not out.exists()


def test_vsa_keyless_in_github_actions_without_id_token_permission_is_refused(tmp_path: Path,
                                                                              monkeypatch) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    out = tmp_path / "vsa.jsonl"
    r = verify_emit(out, "--vsa-keyless")
    assert r.code == 2 and "ACTIONS_ID_TOKEN_REQUEST_TOKEN" in r.err, r.err
    assert not out.exists()


@pytest.mark.parametrize("extra, needle", [
    (("--vsa-keyless", "--vsa-key", "k.pem"), "exactly one of"),
    ((), "exactly one of"),
    (("--vsa-keyless", "--vsa-key-id", "x"), "--vsa-key-id"),
    (("--vsa-key", "k.pem", "--vsa-trust-config", "c.json"), "--vsa-trust-config needs --vsa-keyless"),
])
def test_vsa_signing_flags_are_checked_before_anything_is_verified(tmp_path: Path, extra, needle) -> None:
    r = verify_emit(tmp_path / "vsa.jsonl", *extra)
    assert r.code == 2 and needle in r.err, r.err


def test_policy_sign_keyless_without_an_ambient_identity_is_refused(tmp_path: Path) -> None:
    pol = tmp_path / "policy.json"
    pol.write_text(json.dumps({"version": 1}))
    r = cli("policy", "sign", str(pol), "--keyless")
    assert r.code == 2 and "ambient OIDC identity" in r.err, r.err
    assert not (tmp_path / "policy.json.sigstore.json").exists()


def test_policy_sign_needs_a_key_or_keyless(tmp_path: Path) -> None:
    pol = tmp_path / "policy.json"
    pol.write_text(json.dumps({"version": 1}))
    assert cli("policy", "sign", str(pol)).code == 2


# --- with the local test Sigstore as Fulcio and Rekor ------------------------------------------------------

@pytest.fixture()
def service(httpserver: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    import testsigstore
    import testsigstore_service

    svc = testsigstore_service.LocalSigstoreService(testsigstore.TestSigstore(seed=2503), httpserver)
    for k, v in svc.ambient_env(CI_ID).items():
        monkeypatch.setenv(k, v)
    svc.config = tmp_path / "trust_config.json"
    svc.config.write_text(json.dumps(svc.client_trust_config()))
    svc.root = svc.ts.write_trusted_root(tmp_path / "trusted_root.json")
    return svc


def test_keyless_vsa_is_signed_by_sigstore_python_and_verifies_by_its_identity(service, tmp_path: Path) -> None:
    out = tmp_path / "hello-tool.vsa.sigstore.jsonl"
    r = verify_emit(out, "--vsa-keyless", "--vsa-trust-config", str(service.config))
    assert r.code == 0, (r.out, r.err)
    assert service.calls["token"] >= 1 and service.calls["fulcio"] == 1 and service.calls["rekor"] == 1
    bundle = json.loads(out.read_text())
    assert bundle["mediaType"].startswith("application/vnd.dev.sigstore.bundle")
    assert bundle["verificationMaterial"]["tlogEntries"][0]["kindVersion"]["kind"] == "dsse"

    def check(identity: str, digest: str = SHA256) -> Any:
        return cli("verify-vsa", "--attestation-path", str(out), "--subject-digest", f"sha256:{digest}",
                   "--verifier-id", VERIFIER, "--resource-uri", RESOURCE, "--trusted-root", str(service.root),
                   "--certificate-identity", identity, "--certificate-oidc-issuer", service.issuer,
                   "--verified-level", "SLSA_BUILD_LEVEL_3", "--format", "json")

    r = check(CI_ID)
    assert r.code == 0, r.out
    assert r.json["key_id"] == CI_ID
    assert check("https://github.com/evil-org/ci/.github/workflows/v.yml@refs/heads/main").code == 1
    assert check(CI_ID, digest="1" * 64).code == 1


def test_keyless_vsa_admits_under_a_verifier_named_by_identity_and_not_by_another(service,
                                                                                  tmp_path: Path) -> None:
    out = tmp_path / "hello-tool.vsa.sigstore.jsonl"
    assert verify_emit(out, "--vsa-keyless", "--vsa-trust-config", str(service.config)).code == 0

    def admit(identity: str) -> Any:
        pol = tmp_path / "policy.json"
        pol.write_text(json.dumps({
            "version": 1,
            "trust": {"verifiers": [{"id": VERIFIER, "identity": identity, "issuer": service.issuer,
                                     "resourceUris": [RESOURCE], "minLevel": 3, "maxAge": "1d"}]},
            "permissions": {"allow": [{"rule": "hello-tool *", "minTrustLevel": "VERIFIED"}]},
            "defaults": {"noMatch": "deny"}}))
        return cli("admit", str(ARTIFACT), "--command", "status", "--policy", str(pol), "--vsa", str(out),
                   "--trusted-root", str(service.root), "--non-interactive", "--no-audit", "--no-cache",
                   "--format", "json")

    r = admit(CI_ID)
    assert r.json["trust_level"] == "VERIFIED", r.out
    r = admit("https://github.com/example-org/other/.github/workflows/v.yml@refs/heads/main")
    assert r.json["trust_level"] != "VERIFIED"


def test_policy_signed_keylessly_is_accepted_for_its_identity_only(service, tmp_path: Path, monkeypatch) -> None:
    etc = tmp_path / "etc"
    etc.mkdir()
    pol = etc / "policy.json"
    pol.write_text(json.dumps({"version": 1, "serial": 3, "requirements": {"minTrustLevel": "UNSIGNED"}}))
    pol.chmod(0o644)
    r = cli("policy", "sign", str(pol), "--keyless", "--trust-config", str(service.config))
    assert r.code == 0, r.err
    assert (etc / "policy.json.sigstore.json").is_file()
    (etc / "trusted_root.json").write_bytes(service.root.read_bytes())
    signers = etc / "policy.json.signers.json"
    monkeypatch.setenv("ATIP_TRUST_ORG_POLICY", str(pol))
    monkeypatch.setenv("ATIP_TRUST_POLICY_SERIALS", str(tmp_path / "serials.json"))
    tool = tmp_path / "tool"
    tool.write_text("#!/bin/sh\necho hi\n")
    tool.chmod(0o755)

    def admit(identity: str) -> Any:
        signers.write_text(json.dumps({"identities": [{"identity": identity, "issuer": service.issuer}],
                                       "trustedRoot": "trusted_root.json"}))
        signers.chmod(0o644)
        return cli("admit", str(tool), "--command", "status", "--non-interactive", "--no-audit", "--no-cache",
                   "--format", "json")

    assert admit(CI_ID).code in (0, 1)
    r = admit("https://github.com/evil-org/ci/.github/workflows/verify.yml@refs/heads/main")
    assert r.code == 2 and "not an identity" in r.json["decision"]["reasons"][0]["message"]


def test_fulcio_refuses_a_token_the_issuer_did_not_sign(service, tmp_path: Path, monkeypatch) -> None:
    """The local Fulcio checks the token as the real one does: a forged token gets no certificate, and
    the signer's failure is exit 2 with nothing written."""
    import jwt
    from cryptography.hazmat.primitives.asymmetric import ec

    forged = jwt.encode({"iss": service.issuer, "aud": "sigstore", "sub": CI_ID, "iat": 0,
                         "exp": 4102444800}, ec.generate_private_key(ec.SECP256R1()), algorithm="ES256")
    service.token = lambda identity, **kw: forged  # the runner hands out a token the issuer never signed
    out = tmp_path / "vsa.jsonl"
    r = verify_emit(out, "--vsa-keyless", "--vsa-trust-config", str(service.config))
    assert r.code == 2 and "keyless signing failed" in r.err, r.err
    assert not out.exists()


def test_keyless_signing_is_refused_offline_before_any_request(service, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ATIP_OFFLINE", "1")
    out = tmp_path / "vsa.jsonl"
    r = verify_emit(out, "--vsa-keyless", "--vsa-trust-config", str(service.config))
    assert r.code == 2 and "ATIP_OFFLINE" in r.err, r.err
    assert service.calls == {"token": 0, "fulcio": 0, "rekor": 0} and not out.exists()
