"""Shapes real producers write that the verifiers got wrong: npm's 2023 v0.1 bundles with ``"inclusionProof":
null`` (SET only), Fulcio's otherName username identities (``foo!oidc.local``), RSA and RSA-PSS signing
certificates (a clear ``unsupported key or signature profile``, never a TypeError or a COMPROMISED verdict),
and npm publish attestations (public-key DSSE bundles).

Every bundle is minted by the local test Sigstore (fixtures/testsigstore.py) and verified for real, through
the CLI as a user runs it.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

import testsigstore
from verify_helpers import Run, cli
from world import World as WorldBase

IDENTITY = "https://github.com/atip-test/tool/.github/workflows/release.yml@refs/tags/v1.0.0"
ISSUER = "https://token.actions.githubusercontent.com"
DATA = b"#!/bin/sh\necho producer shapes\n"


class World(WorldBase):
    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp, seed=43)
        self.artifact = self.file("tool", DATA)
        self.statement = testsigstore.slsa_v1_statement("tool", hashlib.sha256(DATA).hexdigest())
        self.rsa_key = rsa.generate_private_key(65537, 2048)

    def verify(self, bundle: dict[str, Any], *extra: str, identity: str = IDENTITY, issuer: str = ISSUER) -> Run:
        path = self.file("bundle.sigstore.json", bundle)
        signer = ("--certificate-identity", identity, "--certificate-oidc-issuer", issuer) if identity else ()
        return cli("verify", str(self.artifact), "--bundle", str(path), "--trusted-root", str(self.root),
                   *signer, *extra, "--format", "json", "--no-cache")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("producers"))


def _failed(r: Run) -> list[dict[str, Any]]:
    return [c for c in r.json["checks"] if c["status"] != "pass"]


@pytest.mark.parametrize("kind", ["message", "dsse", "intoto"])
def test_a_v01_entry_whose_inclusion_proof_is_null_verifies_on_its_promise(world: World, kind: str) -> None:
    """protobuf's JSON mapping reads null as absent; the old parser refused the entry."""
    if kind == "message":
        bundle = world.ts.sign_artifact(DATA, identity=IDENTITY, issuer=ISSUER, bundle_version="0.1",
                                        inclusion_proof=False)
    else:
        bundle = world.ts.sign_dsse(world.statement, identity=IDENTITY, issuer=ISSUER, bundle_version="0.1",
                                    inclusion_proof=False, entry_kind=kind)
    bundle["verificationMaterial"]["tlogEntries"][0]["inclusionProof"] = None
    r = world.verify(bundle)
    assert (r.code, r.json["trust_level"]) == (0, "VERIFIED"), _failed(r)


def test_a_null_proof_in_a_v02_bundle_is_still_a_missing_proof(world: World) -> None:
    bundle = world.ts.sign_artifact(DATA, identity=IDENTITY, issuer=ISSUER, bundle_version="0.2",
                                    inclusion_proof=False)
    bundle["verificationMaterial"]["tlogEntries"][0]["inclusionProof"] = None
    r = world.verify(bundle)
    assert r.code == 1 and r.json["trust_level"] != "VERIFIED"


@pytest.mark.parametrize(("rule", "code"), [("foo!oidc.local", 0), ("foo@oidc.local", 1), ("foo", 1)])
def test_an_othername_identity_matches_exactly_and_its_email_form_does_not(world: World, rule: str,
                                                                              code: int) -> None:
    bundle = world.ts.sign_artifact(DATA, identity="foo!oidc.local", issuer="https://oidc.local",
                                    san="othername")
    r = world.verify(bundle, identity=rule, issuer="https://oidc.local")
    assert r.code == code, _failed(r)
    if code:
        assert any(c["name"] == "identity" and c["actual"] == "foo!oidc.local" for c in _failed(r))


def test_an_othername_identity_matches_a_full_regexp(world: World) -> None:
    bundle = world.ts.sign_artifact(DATA, identity="foo!oidc.local", issuer="https://oidc.local",
                                    san="othername")
    path = world.dir / "regexp.sigstore.json"
    path.write_text(json.dumps(bundle))
    r = cli("verify", str(world.artifact), "--bundle", str(path), "--trusted-root", str(world.root),
            "--certificate-identity-regexp", r"[a-z]+!oidc\.local", "--certificate-oidc-issuer",
            "https://oidc.local", "--format", "json", "--no-cache")
    assert r.code == 0, _failed(r)


def _pss(world: World, bundle: dict[str, Any]) -> dict[str, Any]:
    vm = bundle["verificationMaterial"]
    holder = vm["certificate"] if "certificate" in vm else vm["x509CertificateChain"]["certificates"][0]
    cert = x509.load_der_x509_certificate(base64.b64decode(holder["rawBytes"]))
    pss = testsigstore.with_rsa_pss_key(cert, world.ts.intermediate_key)
    holder["rawBytes"] = base64.b64encode(pss.public_bytes(serialization.Encoding.DER)).decode()
    return bundle


@pytest.mark.parametrize("version", ["0.3", "0.1"])
@pytest.mark.parametrize("pss", [True, False], ids=["rsa-pss-key", "rsa-key"])
def test_an_rsa_signing_certificate_is_an_unsupported_profile_not_a_crash_or_tampering(
        world: World, version: str, pss: bool) -> None:
    """An RSA(-PSS) leaf with a PKCS#1 v1.5 message signature: sigstore-python raised a TypeError
    (keyless route) and the legacy route called the signature invalid for the artifact (COMPROMISED)."""
    bundle = world.ts.sign_artifact(DATA, identity=IDENTITY, issuer=ISSUER, key=world.rsa_key,
                                    bundle_version=version, inclusion_proof=version != "0.1")
    if pss:
        bundle = _pss(world, bundle)
    r = world.verify(bundle)
    assert (r.code, r.json["trust_level"]) == (1, "UNVERIFIED"), r.json
    (failure,) = _failed(r)
    assert failure["name"] == "certificate.profile"
    assert failure["message"].startswith("unsupported key or signature profile")
    assert ("RSA-PSS" in failure["message"]) == pss


# -- npm publish attestations: public-key DSSE bundles ----------------------------------------------------


@pytest.fixture(scope="module")
def npm_key(world: World) -> tuple[Any, Path]:
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.derive_private_key(4343, ec.SECP256R1())
    path = world.dir / "npm-registry.pub"
    path.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                   serialization.PublicFormat.SubjectPublicKeyInfo))
    return key, path


def _publish_statement() -> dict[str, Any]:
    statement = testsigstore.slsa_v1_statement("tool", hashlib.sha256(DATA).hexdigest())
    statement["predicateType"] = "https://github.com/npm/attestation/tree/main/specs/publish/v0.1"
    statement["predicate"] = {"name": "tool", "version": "1.0.0", "registry": "https://registry.npmjs.org"}
    return statement


@pytest.mark.parametrize(("entry_kind", "version"), [("intoto", "0.2"), ("intoto", "0.1"), ("dsse", "0.3")])
def test_a_public_key_dsse_bundle_verifies_with_the_given_key(world: World, npm_key: tuple[Any, Path],
                                                               entry_kind: str, version: str) -> None:
    """The old route refused it: "only messageSignature key bundles are supported" (exit 2)."""
    key, path = npm_key
    bundle = world.ts.sign_dsse_with_key(_publish_statement(), key, entry_kind=entry_kind, bundle_version=version)
    r = world.verify(bundle, "--key", str(path), identity="")
    assert (r.code, r.json["trust_level"]) == (0, "VERIFIED"), _failed(r)


@pytest.mark.parametrize(("mutate", "check"), [("signature", "signature"), ("body", "tlog.body")])
def test_a_tampered_public_key_dsse_bundle_is_compromised(world: World, npm_key: tuple[Any, Path],
                                                          mutate: str, check: str) -> None:
    key, path = npm_key
    bundle = world.ts.sign_dsse_with_key(_publish_statement(), key, mutate=mutate)
    r = world.verify(bundle, "--key", str(path), identity="")
    assert r.json["trust_level"] == "COMPROMISED", _failed(r)
    assert any(c["name"] == check for c in _failed(r)), _failed(r)


def test_a_public_key_dsse_bundle_signed_by_another_key_is_unverified_not_compromised(
        world: World, npm_key: tuple[Any, Path]) -> None:
    """A rotated registry key: the bundle names another key; ours does not verify it. Not tampering."""
    from cryptography.hazmat.primitives.asymmetric import ec

    _, path = npm_key
    other = ec.derive_private_key(4444, ec.SECP256R1())
    r = world.verify(world.ts.sign_dsse_with_key(_publish_statement(), other), "--key", str(path), identity="")
    assert (r.code, r.json["trust_level"]) == (1, "UNVERIFIED"), _failed(r)
