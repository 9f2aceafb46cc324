"""Key-based verification (atip_trust.keys): cosign-style detached signatures and public-key bundles.

Material: fixtures/keys/ (fixtures/make_key_fixtures.py), the interop managed-key cases
(../shared/fixtures/interop, skipped when absent) and bundles minted by fixtures/testsigstore.py.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

import atip_trust.signature.keys as keys_mod
from atip_trust.errors import BundleError, InputTooLargeError
from atip_trust.facts.artifact import Artifact
from atip_trust.facts.digest import Digest, hash_bytes
from atip_trust.signature.keys import (
    KeyBundleResult,
    decode_signature,
    key_digest,
    load_detached_signature,
    load_public_key,
    parse_public_key,
    verify_detached,
    verify_key_bundle,
)
from atip_trust.signature.trustroot import TrustRoot

ROOT = Path(__file__).resolve().parents[2]
KEYS = ROOT / "fixtures" / "keys"
ARTIFACT = KEYS / "artifact.txt"
A_TXT_SHA256 = Digest.parse("sha256:a0cfc71271d6e278e57cd332ff957c3f7043fdda354c4cbb190a30d56efa01bf")

# (public key file, signature name, scheme that must verify)
GOOD = [
    ("p256", "p256", "ecdsa-p256-sha256"),
    ("p384", "p384", "ecdsa-p384-sha384"),
    ("p384", "p384-sha256", "ecdsa-p384-sha256"),
    ("ed25519", "ed25519", "ed25519"),
    ("rsa2048", "rsa-pkcs1v15", "rsa-pkcs1v15-sha256"),
    ("rsa2048", "rsa-pss", "rsa-pss-sha256"),
]


def _names(result: KeyBundleResult) -> dict[str, str]:
    return {c.name: c.status for c in result.checks}


def _failed(result: KeyBundleResult) -> list[str]:
    return [c.name for c in result.checks if c.failed]


# --- detached signatures ------------------------------------------------------------------------------


@pytest.mark.parametrize("form", [".sig", ".sig.raw"])
@pytest.mark.parametrize(("keyname", "signame", "scheme"), GOOD)
def test_detached_signature_of_each_key_type_verifies_from_the_artifact_descriptor(
    keyname: str, signame: str, scheme: str, form: str
) -> None:
    key = load_public_key(KEYS / f"{keyname}.pub")
    sig = load_detached_signature(KEYS / f"artifact.txt.{signame}{form}")
    with Artifact.open(ARTIFACT) as art:
        result = verify_detached(art, sig, key, evidence="sig")
    assert (result.valid, result.compromised, result.scheme) == (True, False, scheme)
    assert result.key_digest == key_digest(key)
    assert [(c.name, c.status) for c in result.checks] == [("signature", "pass")]


@pytest.mark.parametrize(("keyname", "signame", "scheme"), GOOD)
def test_tampered_artifact_fails_and_is_evidence_of_tampering(
    keyname: str, signame: str, scheme: str
) -> None:
    key = load_public_key(KEYS / f"{keyname}.pub")
    sig = load_detached_signature(KEYS / f"artifact.txt.{signame}.sig")
    tampered = ARTIFACT.read_bytes().replace(b"artifact", b"artefact", 1)
    result = verify_detached(tampered, sig, key)
    assert result.valid is False
    check = result.checks[0]
    assert (check.name, check.status) == ("signature", "fail")
    assert f"over {hash_bytes(tampered)}" in check.message
    assert str(key_digest(key)) in check.message
    if keyname == "ed25519":
        # Could be an Ed25519ph signature we cannot check: unverifiable, not proof of tampering.
        assert result.compromised is False
        assert "Ed25519ph" in check.message
    else:
        assert result.compromised is True
        assert check.impact == "compromised"


def test_signature_by_another_key_of_the_same_type_fails() -> None:
    other = ec.derive_private_key(12345, ec.SECP256R1()).public_key()
    sig = load_detached_signature(KEYS / "artifact.txt.p256.sig")
    result = verify_detached(ARTIFACT.read_bytes(), sig, other)
    assert result.valid is False and result.compromised is True
    assert "ECDSA P-256 key" in result.checks[0].message


def test_signature_checked_with_a_key_of_another_type_fails() -> None:
    sig = load_detached_signature(KEYS / "artifact.txt.p256.sig")
    for name in ("p384", "rsa2048", "ed25519"):
        result = verify_detached(ARTIFACT.read_bytes(), sig, load_public_key(KEYS / f"{name}.pub"))
        assert result.valid is False, name


def test_truncated_signature_fails() -> None:
    sig = load_detached_signature(KEYS / "artifact.txt.p256.sig.raw")
    key = load_public_key(KEYS / "p256.pub")
    for cut in (sig[:-1], sig[: len(sig) // 2], sig[:1]):
        result = verify_detached(ARTIFACT.read_bytes(), cut, key)
        assert (result.valid, result.compromised) == (False, True)
        assert result.checks[0].message.startswith("signature does not verify with the ECDSA P-256 key")


def test_p384_is_tried_with_sha384_then_sha256_only() -> None:
    # A P-384 signature over a SHA-512 digest (neither cosign convention) must not verify.
    from cryptography.hazmat.primitives.asymmetric.utils import Prehashed

    p384 = _fixture_private("p384")
    data = ARTIFACT.read_bytes()
    sig = p384.sign(hashlib.sha512(data).digest()[:48], ec.ECDSA(Prehashed(hashes.SHA384())))
    result = verify_detached(data, sig, load_public_key(KEYS / "p384.pub"))
    assert result.valid is False
    assert "tried ECDSA-SHA384 or ECDSA-SHA256" in result.checks[0].message


def _fixture_private(name: str) -> Any:
    import make_key_fixtures  # fixtures/ is on sys.path (tests/conftest.py)

    return make_key_fixtures.private_key(name)


def test_fixture_public_keys_match_the_deterministic_private_keys() -> None:
    for name in ("p256", "p384", "ed25519"):
        pub = _fixture_private(name).public_key().public_bytes(
            Encoding.PEM, PublicFormat.SubjectPublicKeyInfo
        )
        assert pub == (KEYS / f"{name}.pub").read_bytes()


def test_ed25519_message_over_the_cap_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keys_mod, "ED25519_MAX_MESSAGE_BYTES", 16)
    sig = load_detached_signature(KEYS / "artifact.txt.ed25519.sig")
    with Artifact.open(ARTIFACT) as art, pytest.raises(InputTooLargeError, match="over 16 bytes"):
        verify_detached(art, sig, load_public_key(KEYS / "ed25519.pub"))


# --- key and signature files ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("garbage", "cannot load PEM public key"),
        ("not-pem", "not a PEM public key"),
        ("rsa1024", "RSA key of 1024 bits is too small (minimum 2048)"),
        ("dsa2048", "unsupported public key type DSAPublicKey"),
        ("p521", "unsupported ECDSA curve secp521r1"),
    ],
)
def test_unusable_key_file_is_a_bundle_error_naming_why(name: str, message: str) -> None:
    path = KEYS / f"{name}.pub"
    with pytest.raises(BundleError) as err:
        load_public_key(path)
    assert message in err.value.message
    assert err.value.path == str(path)


def test_private_key_or_certificate_is_not_a_public_key() -> None:
    pem = b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
    with pytest.raises(BundleError, match="cannot load PEM public key"):
        parse_public_key(pem)


def test_oversized_key_file_is_refused_before_parsing(tmp_path: Path) -> None:
    big = tmp_path / "big.pub"
    big.write_bytes(b"-----BEGIN PUBLIC KEY-----\n" + b"A" * (1 << 17) + b"\n")
    with pytest.raises(InputTooLargeError):
        load_public_key(big)


def test_key_digest_is_sha256_of_der_spki() -> None:
    key = load_public_key(KEYS / "p256.pub")
    der = key.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    assert key_digest(key) == Digest("sha256", hashlib.sha256(der).digest())


def test_signature_forms_base64_wrapped_and_raw_decode_to_the_same_bytes() -> None:
    raw = (KEYS / "artifact.txt.p256.sig.raw").read_bytes()
    assert load_detached_signature(KEYS / "artifact.txt.p256.sig") == raw
    assert load_detached_signature(KEYS / "artifact.txt.p256.sig.wrapped") == raw
    assert load_detached_signature(KEYS / "artifact.txt.p256.sig.raw") == raw


def test_signature_decoding_edge_cases(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="empty"):
        decode_signature(b"")
    # Not strict base64 (bad padding): taken as raw bytes, so it simply fails to verify later.
    assert decode_signature(b"abc") == b"abc"
    assert decode_signature(b"  TUVV\n") == b"MEU"
    empty = tmp_path / "empty.sig"
    empty.write_bytes(b"")
    with pytest.raises(BundleError) as err:
        load_detached_signature(empty)
    assert err.value.path == str(empty)


# --- interop: the conformance suite's managed-key bundles ---------------------------------------------

MANAGED = [
    ("conformance-managed-key-happy-path", "_trusted_roots/production.trusted_root.json"),
    ("conformance-managed-key-and-trusted-root", "conformance-managed-key-and-trusted-root/trusted_root.json"),
]


def _managed(interop: Path, case: str, root: str) -> tuple[dict[str, Any], Any, TrustRoot, Digest]:
    bundle = json.loads((interop / case / "bundle.sigstore.json").read_text())
    key = load_public_key(interop / case / "key.pub")
    artifact = hash_bytes((interop / case / "a.txt").read_bytes())
    return bundle, key, TrustRoot.from_file(interop / root), artifact


@pytest.mark.parametrize(("case", "root"), MANAGED)
def test_interop_managed_key_bundle_verifies_with_its_key(interop_dir: Path, case: str, root: str) -> None:
    bundle, key, trust_root, artifact = _managed(interop_dir, case, root)
    assert artifact == A_TXT_SHA256
    result = verify_key_bundle(bundle, artifact, key, trust_root, evidence=case)
    assert (result.valid, result.compromised, result.applies) == (True, False, True)
    assert _failed(result) == []
    assert set(_names(result)) == {
        "key", "digest", "signature", "tlog.key", "tlog.inclusion_proof", "tlog.checkpoint",
        "tlog.set", "tlog.body.digest", "tlog.body.signature", "tlog.body.key",
    }
    assert result.log_url is not None and result.log_url.startswith("https://rekor.")
    assert result.integrated_time is not None


def test_interop_managed_key_wrong_key_file_is_refused(interop_dir: Path) -> None:
    with pytest.raises(BundleError, match="cannot load PEM public key"):
        load_public_key(interop_dir / "conformance-managed-key-wrong-key_fail" / "key.pub")


def _flip(value: str, index: int) -> str:
    raw = bytearray(base64.b64decode(value))
    raw[index] ^= 0x01
    return base64.b64encode(bytes(raw)).decode()


def _mutate_signature(b: dict[str, Any]) -> None:
    b["messageSignature"]["signature"] = _flip(b["messageSignature"]["signature"], 12)


def _mutate_digest(b: dict[str, Any]) -> None:
    b["messageSignature"]["messageDigest"]["digest"] = _flip(b["messageSignature"]["messageDigest"]["digest"], 0)


def _mutate_set(b: dict[str, Any]) -> None:
    e = b["verificationMaterial"]["tlogEntries"][0]
    e["inclusionPromise"]["signedEntryTimestamp"] = _flip(e["inclusionPromise"]["signedEntryTimestamp"], 20)


def _mutate_proof(b: dict[str, Any]) -> None:
    e = b["verificationMaterial"]["tlogEntries"][0]
    e["inclusionProof"]["hashes"][0] = _flip(e["inclusionProof"]["hashes"][0], 0)


def _mutate_body(b: dict[str, Any]) -> None:
    e = b["verificationMaterial"]["tlogEntries"][0]
    body = json.loads(base64.b64decode(e["canonicalizedBody"]))
    body["spec"]["data"]["hash"]["value"] = "0" * 64
    e["canonicalizedBody"] = base64.b64encode(json.dumps(body, separators=(",", ":")).encode()).decode()


def _mutate_time(b: dict[str, Any]) -> None:
    e = b["verificationMaterial"]["tlogEntries"][0]
    e["integratedTime"] = str(int(e["integratedTime"]) + 1)


def _mutate_hint(b: dict[str, Any]) -> None:
    b["verificationMaterial"]["publicKey"]["hint"] = _flip(b["verificationMaterial"]["publicKey"]["hint"], 3)


@pytest.mark.parametrize(
    ("mutate", "first_failure", "compromised"),
    [
        (_mutate_signature, "tlog.body.signature", True),
        (_mutate_digest, "digest", True),
        (_mutate_set, "tlog.set", True),
        (_mutate_proof, "tlog.inclusion_proof", True),
        (_mutate_body, "tlog.inclusion_proof", True),
        (_mutate_time, "tlog.set", True),
        (_mutate_hint, "key", False),
    ],
    ids=["signature", "digest", "set", "proof_hash", "body", "integrated_time", "hint"],
)
def test_interop_managed_key_bundle_with_one_forged_byte_fails(
    interop_dir: Path, mutate: Any, first_failure: str, compromised: bool
) -> None:
    bundle, key, trust_root, artifact = _managed(interop_dir, *MANAGED[0])
    bad = copy.deepcopy(bundle)
    mutate(bad)
    result = verify_key_bundle(bad, artifact, key, trust_root)
    assert result.valid is False
    assert first_failure in _failed(result)
    assert result.compromised is compromised


def test_interop_managed_key_signature_mutation_names_expected_and_actual(interop_dir: Path) -> None:
    bundle, key, trust_root, artifact = _managed(interop_dir, *MANAGED[0])
    bad = copy.deepcopy(bundle)
    _mutate_signature(bad)
    result = verify_key_bundle(bad, artifact, key, trust_root)
    sig = next(c for c in result.checks if c.name == "signature")
    assert sig.status == "fail"
    assert sig.message == (
        f"signature does not verify with the ECDSA P-256 key {key_digest(key)} over {artifact} "
        "(tried ECDSA-SHA256 over the digest)"
    )
    assert sig.expected == f"valid signature by {key_digest(key)}"


def test_interop_managed_key_bundle_for_another_artifact_does_not_apply(interop_dir: Path) -> None:
    bundle, key, trust_root, _ = _managed(interop_dir, *MANAGED[0])
    other = hash_bytes(b"some other artifact")
    result = verify_key_bundle(bundle, other, key, trust_root)
    assert (result.valid, result.compromised, result.applies) == (False, False, False)
    digest = next(c for c in result.checks if c.name == "digest")
    assert digest.expected == str(other) and digest.actual == str(A_TXT_SHA256)
    assert "valid signature over another artifact" in digest.message


def test_interop_managed_key_bundle_against_another_instance_root_is_unverified(interop_dir: Path) -> None:
    bundle, key, _, artifact = _managed(interop_dir, *MANAGED[0])
    staging = TrustRoot.from_file(interop_dir / "_trusted_roots" / "staging.trusted_root.json")
    result = verify_key_bundle(bundle, artifact, key, staging)
    assert (result.valid, result.compromised) == (False, False)
    check = next(c for c in result.checks if c.name == "tlog.key")
    assert check.status == "fail" and "staging.trusted_root.json" in check.message


def test_interop_managed_key_bundle_checked_with_another_key_is_unverified_not_compromised(
    interop_dir: Path,
) -> None:
    bundle, _, trust_root, artifact = _managed(interop_dir, *MANAGED[0])
    other = load_public_key(KEYS / "p256.pub")
    result = verify_key_bundle(bundle, artifact, other, trust_root)
    assert (result.valid, result.compromised) == (False, False)
    assert {"key", "signature", "tlog.body.key"} <= set(_failed(result))
    sig = next(c for c in result.checks if c.name == "signature")
    assert "the log records another signing key" in sig.message


@pytest.mark.parametrize(
    ("mutate", "path", "message"),
    [
        (lambda b: b.update(mediaType="x"), "$.mediaType", "unsupported bundle mediaType"),
        (lambda b: b["verificationMaterial"].pop("publicKey"), "$.verificationMaterial", "not publicKey"),
        (lambda b: b.pop("messageSignature"), "$.messageSignature", "only messageSignature"),
        (
            lambda b: b["messageSignature"]["messageDigest"].update(algorithm="SHA2_384"),
            "$.messageSignature.messageDigest",
            "only SHA2_256",
        ),
        (
            lambda b: b["verificationMaterial"]["tlogEntries"].append({}),
            "$.verificationMaterial.tlogEntries",
            "exactly one tlog entry, got 2",
        ),
        (
            lambda b: b["verificationMaterial"]["tlogEntries"][0]["kindVersion"].update(kind="dsse"),
            "$.verificationMaterial.tlogEntries[0].kindVersion",
            "key bundles need hashedrekord/0.0.1",
        ),
        (
            lambda b: b["messageSignature"].update(signature="***"),
            "$.messageSignature.signature",
            "base64",
        ),
    ],
)
def test_malformed_key_bundle_is_a_bundle_error_with_path(
    interop_dir: Path, mutate: Any, path: str, message: str
) -> None:
    bundle, key, trust_root, artifact = _managed(interop_dir, *MANAGED[0])
    bad = copy.deepcopy(bundle)
    mutate(bad)
    with pytest.raises(BundleError) as err:
        verify_key_bundle(bad, artifact, key, trust_root)
    assert err.value.path == path
    assert message in err.value.message


# --- the local test Sigstore ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def test_sigstore() -> Any:
    testsigstore = pytest.importorskip("testsigstore")
    return testsigstore


@pytest.fixture(scope="session")
def local(test_sigstore: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, TrustRoot]:
    ts = test_sigstore.TestSigstore(seed=7, name="atip-keys-test")
    path = ts.write_trusted_root(tmp_path_factory.mktemp("root") / "trusted_root.json")
    return ts, TrustRoot.from_file(path)


@pytest.fixture(scope="session")
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


DATA = b"payload signed with a managed key\n"


@pytest.mark.parametrize("keytype", ["p256", "rsa"])
@pytest.mark.parametrize("version", ["0.1", "0.2", "0.3"])
def test_local_key_bundle_verifies(
    local: tuple[Any, TrustRoot], rsa_key: rsa.RSAPrivateKey, keytype: str, version: str
) -> None:
    ts, root = local
    priv = _fixture_private("p256") if keytype == "p256" else rsa_key
    bundle = ts.sign_with_key(DATA, priv, bundle_version=version)
    pub = parse_public_key(priv.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo))
    result = verify_key_bundle(bundle, hash_bytes(DATA), pub, root)
    assert _failed(result) == []
    assert (result.valid, result.compromised) == (True, False)


def test_local_log_with_many_entries_gives_deep_proofs_that_verify(local: tuple[Any, TrustRoot]) -> None:
    ts, root = local
    priv = _fixture_private("p256")
    pub = parse_public_key(priv.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo))
    depths = set()
    for i in range(40):
        data = DATA + str(i).encode()
        bundle = ts.sign_with_key(data, priv)
        depths.add(len(bundle["verificationMaterial"]["tlogEntries"][0]["inclusionProof"]["hashes"]))
        result = verify_key_bundle(bundle, hash_bytes(data), pub, root)
        assert result.valid is True, _failed(result)
    assert max(depths) >= 5


def test_local_promise_only_entry_is_accepted_in_v01_and_refused_in_v03(local: tuple[Any, TrustRoot]) -> None:
    ts, root = local
    priv = _fixture_private("p256")
    pub = parse_public_key(priv.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo))
    ok = verify_key_bundle(ts.sign_with_key(DATA, priv, bundle_version="0.1", inclusion_proof=False),
                           hash_bytes(DATA), pub, root)
    assert ok.valid is True
    bad = verify_key_bundle(ts.sign_with_key(DATA, priv, bundle_version="0.3", inclusion_proof=False),
                            hash_bytes(DATA), pub, root)
    assert bad.valid is False and "tlog.inclusion_proof" in _failed(bad)


LOCAL_MUTATIONS = {
    "signature": ("signature", True),
    "proof_hash": ("tlog.inclusion_proof", True),
    "checkpoint": ("tlog.checkpoint", True),
    "set": ("tlog.set", True),
    "log_key": ("tlog.checkpoint", True),
    "digest": ("digest", True),
    "body": ("tlog.body.digest", True),
}


@pytest.mark.parametrize("mutation", sorted(LOCAL_MUTATIONS))
def test_local_key_bundle_mutation_fails_on_its_check(
    test_sigstore: Any, local: tuple[Any, TrustRoot], mutation: str
) -> None:
    ts, root = local
    # Every mutation the test Sigstore offers for key bundles is covered here.
    assert set(LOCAL_MUTATIONS) == set(test_sigstore.MUTATIONS_BY_KIND["key"])
    priv = _fixture_private("p256")
    pub = parse_public_key(priv.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo))
    bundle = ts.sign_with_key(DATA, priv, mutate=mutation)
    result = verify_key_bundle(bundle, hash_bytes(DATA), pub, root)
    check, compromised = LOCAL_MUTATIONS[mutation]
    assert result.valid is False
    assert check in _failed(result), _failed(result)
    assert result.compromised is compromised
