"""The local test Sigstore (fixtures/testsigstore.py) against unmodified sigstore-python 4.5.1.

Promise: every good bundle it mints verifies with sigstore-python's public API, and every bad variant that
sigstore-python can judge is rejected, for the reason the mutation names (the message is pinned, so a
variant that fails for an unrelated reason is caught). The committed fixtures/sigstore/ outputs are
exactly what fixtures/make_sigstore_fixtures.py writes.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from cryptography import x509
from cryptography.x509.oid import ObjectIdentifier
from sigstore.errors import VerificationError
from sigstore.models import Bundle, InvalidBundle, TrustedRoot
from sigstore.verify import Verifier, policy

import testsigstore

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
COMMITTED = FIXTURES / "sigstore"

IDENTITY = "https://github.com/atip-test/tool/.github/workflows/release.yml@refs/tags/v1.0.0"
ISSUER = "https://token.actions.githubusercontent.com"
DATA = b"#!/bin/sh\necho tool\n"

#: What sigstore-python 4.5.1 says for each mutation (substring of the VerificationError message).
MESSAGE_REJECTIONS = {
    "signature": "Signature is invalid for input",
    "certificate": "failed to build timestamp certificate chain: validation failed: candidates exhausted",
    "sct": "failed to verify SCT on signing certificate: SCT verify failed: keyring: invalid signature",
    "proof_hash": "invalid log entry: inclusion proof contains invalid root hash",
    "checkpoint": "invalid log entry: checkpoint: invalid signature",
    "set": "invalid log entry: SET: invalid inclusion promise",
    "integrated_time": "cert is not valid at validation time",
    "log_key": "invalid log entry: checkpoint: invalid signature",
    "digest": "Bundle message digest mismatch",
    "body": "transparency log entry is inconsistent with other materials",
}
DSSE_REJECTIONS = {
    **{k: v for k, v in MESSAGE_REJECTIONS.items() if k not in ("signature", "digest", "body")},
    "signature": "DSSE: invalid signature",
    "body": "log entry signatures do not match bundle",
    "payload_hash": "log entry payload hash does not match bundle",
}


@pytest.fixture(scope="session")
def ts() -> testsigstore.TestSigstore:
    return testsigstore.TestSigstore(seed=7)


@pytest.fixture(scope="session")
def verifier(ts: testsigstore.TestSigstore, tmp_path_factory: pytest.TempPathFactory) -> Verifier:
    path = ts.write_trusted_root(tmp_path_factory.mktemp("testsigstore") / "trusted_root.json")
    return Verifier(trusted_root=TrustedRoot.from_file(str(path)))


def _bundle(obj: dict[str, Any]) -> Bundle:
    return Bundle.from_json(json.dumps(obj))


def _statement() -> dict[str, Any]:
    return testsigstore.slsa_v1_statement("tool", hashlib.sha256(DATA).hexdigest())


# --- good bundles --------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["0.1", "0.2", "0.3"])
def test_message_signature_bundle_verifies_with_sigstore_python(
    ts: testsigstore.TestSigstore, verifier: Verifier, version: str
) -> None:
    b = ts.sign_artifact(DATA, identity=IDENTITY, issuer=ISSUER, bundle_version=version)
    verifier.verify_artifact(DATA, _bundle(b), policy.Identity(identity=IDENTITY, issuer=ISSUER))


def test_email_identity_bundle_verifies(ts: testsigstore.TestSigstore, verifier: Verifier) -> None:
    b = ts.sign_artifact(DATA, identity="dev@example.test", issuer="https://idp.example.test", san="email")
    verifier.verify_artifact(
        DATA, _bundle(b), policy.Identity(identity="dev@example.test", issuer="https://idp.example.test")
    )


def test_dsse_bundle_verifies_and_returns_the_statement(
    ts: testsigstore.TestSigstore, verifier: Verifier
) -> None:
    b = ts.sign_dsse(_statement(), identity=IDENTITY, issuer=ISSUER)
    ptype, payload = verifier.verify_dsse(_bundle(b), policy.Identity(identity=IDENTITY, issuer=ISSUER))
    assert ptype == "application/vnd.in-toto+json"
    assert json.loads(payload) == _statement()


def test_fulcio_extensions_satisfy_sigstore_v1_and_v2_policies(
    ts: testsigstore.TestSigstore, verifier: Verifier
) -> None:
    ext = {
        "github_workflow_repository": "atip-test/tool",
        "github_workflow_ref": "refs/tags/v1.0.0",
        "source_repository_uri": "https://github.com/atip-test/tool",
        "runner_environment": "github-hosted",
        "build_signer_uri": IDENTITY,
    }
    b = ts.sign_artifact(DATA, identity=IDENTITY, issuer=ISSUER, extensions=ext)
    pol = policy.AllOf(
        [
            policy.Identity(identity=IDENTITY, issuer=ISSUER),
            policy.OIDCIssuerV2(ISSUER),
            policy.GitHubWorkflowRepository("atip-test/tool"),
            policy.GitHubWorkflowRef("refs/tags/v1.0.0"),
            policy.OIDCSourceRepositoryURI("https://github.com/atip-test/tool"),
            policy.OIDCRunnerEnvironment("github-hosted"),
            policy.OIDCBuildSignerURI(IDENTITY),
        ]
    )
    verifier.verify_artifact(DATA, _bundle(b), pol)
    with pytest.raises(VerificationError, match="self-hosted"):
        verifier.verify_artifact(DATA, _bundle(b), policy.OIDCRunnerEnvironment("self-hosted"))


def test_leaf_with_only_the_v2_issuer_fails_the_v1_issuer_policy(
    ts: testsigstore.TestSigstore, verifier: Verifier
) -> None:
    b = ts.sign_artifact(DATA, identity=IDENTITY, issuer=ISSUER, issuer_v1=False)
    with pytest.raises(VerificationError, match="1.3.6.1.4.1.57264.1.1"):
        verifier.verify_artifact(DATA, _bundle(b), policy.Identity(identity=IDENTITY, issuer=ISSUER))
    verifier.verify_artifact(
        DATA, _bundle(b), policy.AllOf([policy.Identity(identity=IDENTITY), policy.OIDCIssuerV2(ISSUER)])
    )


def test_signature_by_another_identity_is_rejected(ts: testsigstore.TestSigstore, verifier: Verifier) -> None:
    b = ts.sign_artifact(DATA, identity=IDENTITY + "x", issuer=ISSUER)
    with pytest.raises(VerificationError, match="SANs do not match"):
        verifier.verify_artifact(DATA, _bundle(b), policy.Identity(identity=IDENTITY, issuer=ISSUER))


def test_log_is_a_growing_merkle_tree_with_multi_hash_proofs(ts: testsigstore.TestSigstore) -> None:
    first = ts.sign_artifact(DATA, identity=IDENTITY, issuer=ISSUER)["verificationMaterial"]["tlogEntries"][0]
    second = ts.sign_artifact(DATA, identity=IDENTITY, issuer=ISSUER)["verificationMaterial"]["tlogEntries"][0]
    assert int(second["logIndex"]) > int(first["logIndex"])
    assert int(second["inclusionProof"]["treeSize"]) > int(first["inclusionProof"]["treeSize"])
    assert len(first["inclusionProof"]["hashes"]) >= 3
    # Checkpoint = signed note: origin, size, root, blank line, em-dash signature line with the key hint.
    note = first["inclusionProof"]["checkpoint"]["envelope"]
    lines = note.split("\n")
    assert lines[1] == first["inclusionProof"]["treeSize"]
    assert lines[2] == first["inclusionProof"]["rootHash"]
    assert lines[3] == "" and lines[4].startswith("\u2014 ")
    hint = base64.b64decode(lines[4].split(" ")[2])[:4]
    assert hint == base64.b64decode(first["logId"]["keyId"])[:4]


def test_same_seed_gives_the_same_instance_and_another_seed_another() -> None:
    a, b, c = testsigstore.TestSigstore(3), testsigstore.TestSigstore(3), testsigstore.TestSigstore(4)
    assert a.trusted_root() == b.trusted_root() != c.trusted_root()
    assert a.sign_artifact(DATA, identity=IDENTITY, issuer=ISSUER) == b.sign_artifact(
        DATA, identity=IDENTITY, issuer=ISSUER
    )


def test_trusted_root_keys_are_valid_from_the_past(ts: testsigstore.TestSigstore) -> None:
    root = ts.trusted_root()
    assert root["mediaType"] == "application/vnd.dev.sigstore.trustedroot+json;version=0.1"
    for log in root["tlogs"] + root["ctlogs"]:
        assert log["publicKey"]["validFor"]["start"] < "2025-09-01"
    # v0.3 bundles carry only the leaf: the intermediate must be a trust anchor in the root.
    chain = root["certificateAuthorities"][0]["certChain"]["certificates"]
    assert x509.load_der_x509_certificate(base64.b64decode(chain[0]["rawBytes"])) == ts.intermediate_cert


# --- bad variants ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("mutation", testsigstore.MUTATIONS_BY_KIND["message"])
def test_sigstore_python_rejects_message_mutation(
    ts: testsigstore.TestSigstore, verifier: Verifier, mutation: str
) -> None:
    b = ts.sign_artifact(DATA, identity=IDENTITY, issuer=ISSUER, mutate=mutation)
    with pytest.raises(VerificationError) as err:
        verifier.verify_artifact(DATA, _bundle(b), policy.Identity(identity=IDENTITY, issuer=ISSUER))
    assert MESSAGE_REJECTIONS[mutation] in str(err.value)


@pytest.mark.parametrize("mutation", testsigstore.MUTATIONS_BY_KIND["dsse"])
def test_sigstore_python_rejects_dsse_mutation(
    ts: testsigstore.TestSigstore, verifier: Verifier, mutation: str
) -> None:
    b = ts.sign_dsse(_statement(), identity=IDENTITY, issuer=ISSUER, mutate=mutation)
    with pytest.raises(VerificationError) as err:
        verifier.verify_dsse(_bundle(b), policy.Identity(identity=IDENTITY, issuer=ISSUER))
    assert DSSE_REJECTIONS[mutation] in str(err.value)


def test_every_mutation_is_covered_and_unknown_ones_are_refused(ts: testsigstore.TestSigstore) -> None:
    covered = set(MESSAGE_REJECTIONS) | set(DSSE_REJECTIONS)
    assert covered == set(testsigstore.MUTATIONS)
    with pytest.raises(ValueError, match="does not apply"):
        ts.sign_artifact(DATA, identity=IDENTITY, issuer=ISSUER, mutate="payload_hash")


def test_sigstore_python_refuses_intoto_promise_only_and_key_bundles(
    ts: testsigstore.TestSigstore, verifier: Verifier
) -> None:
    intoto = ts.sign_dsse(_statement(), identity=IDENTITY, issuer=ISSUER, entry_kind="intoto")
    with pytest.raises(VerificationError, match="Integrated time only supported for dsse/hashedrekord"):
        verifier.verify_dsse(_bundle(intoto), policy.Identity(identity=IDENTITY, issuer=ISSUER))
    promise_only = ts.sign_artifact(DATA, identity=IDENTITY, issuer=ISSUER, bundle_version="0.1", inclusion_proof=False)
    with pytest.raises(InvalidBundle, match="inclusionProof"):
        _bundle(promise_only)
    key = testsigstore.TestSigstore(seed=99).new_signing_key()
    with pytest.raises(InvalidBundle, match="expected certificate in bundle"):
        _bundle(ts.sign_with_key(DATA, key))


# --- entry shapes that sigstore-python cannot check: pinned against real bundles ----------------------


def _decode_body(bundle: dict[str, Any]) -> dict[str, Any]:
    raw = base64.b64decode(bundle["verificationMaterial"]["tlogEntries"][0]["canonicalizedBody"])
    assert rfc8785.dumps(json.loads(raw)) == raw  # Rekor v1 bodies are canonical JSON
    body: dict[str, Any] = json.loads(raw)
    return body


def _shape(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _shape(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_shape(v) for v in obj]
    return type(obj).__name__


def _intoto_hash(envelope: dict[str, Any], body: dict[str, Any]) -> str:
    """spec.content.hash of an intoto/0.0.2 entry, as sigstore-js computes it."""
    sig = body["spec"]["content"]["envelope"]["signatures"][0]
    hashed = {
        "payload": envelope["payload"],
        "payloadType": envelope["payloadType"],
        "signatures": [
            {"sig": base64.b64decode(sig["sig"]).decode(), "publicKey": base64.b64decode(sig["publicKey"]).decode()}
        ],
    }
    return hashlib.sha256(rfc8785.dumps(hashed)).hexdigest()


def test_intoto_entry_has_the_shape_of_a_real_sigstore_js_entry(
    ts: testsigstore.TestSigstore, interop_dir: Path
) -> None:
    real = json.loads((interop_dir / "cli-sigstore-js-2.1.0-bundle-v0.3" / "sigstore-js-2.1.0-bundle.json").read_text())
    ours = ts.sign_dsse(_statement(), identity=IDENTITY, issuer=ISSUER, entry_kind="intoto")
    real_body, our_body = _decode_body(real), _decode_body(ours)
    assert _shape(our_body) == _shape(real_body)
    for bundle, body in ((real, real_body), (ours, our_body)):
        env = bundle["dsseEnvelope"]
        content = body["spec"]["content"]
        assert content["hash"]["value"] == _intoto_hash(env, body)
        assert content["payloadHash"]["value"] == hashlib.sha256(base64.b64decode(env["payload"])).hexdigest()
        # The DSSE signature is base64-encoded twice in the entry.
        assert base64.b64decode(content["envelope"]["signatures"][0]["sig"]).decode() == env["signatures"][0]["sig"]


def test_managed_key_bundle_has_the_shape_of_the_conformance_case(
    ts: testsigstore.TestSigstore, interop_dir: Path
) -> None:
    case = interop_dir / "conformance-managed-key-happy-path"
    real = json.loads((case / "bundle.sigstore.json").read_text())
    key = testsigstore.TestSigstore(seed=99).new_signing_key()
    ours = ts.sign_with_key(DATA, key)
    assert _shape(_decode_body(ours)) == _shape(_decode_body(real))
    assert set(ours["verificationMaterial"]["publicKey"]) == set(real["verificationMaterial"]["publicKey"])
    assert ours["mediaType"] == real["mediaType"]
    # hint = sha256 of the DER SubjectPublicKeyInfo, as in the real case with its key.pub.
    from cryptography.hazmat.primitives import serialization

    real_key = serialization.load_pem_public_key((case / "key.pub").read_bytes())
    der = real_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    assert base64.b64decode(real["verificationMaterial"]["publicKey"]["hint"]) == hashlib.sha256(der).digest()


def test_v2_extensions_are_der_utf8_and_v1_raw(ts: testsigstore.TestSigstore) -> None:
    cert, _ = ts.issue_certificate(IDENTITY, ISSUER, extensions={"source_repository_uri": "https://x"})
    v1 = cert.extensions.get_extension_for_oid(ObjectIdentifier("1.3.6.1.4.1.57264.1.1")).value
    v2 = cert.extensions.get_extension_for_oid(ObjectIdentifier("1.3.6.1.4.1.57264.1.8")).value
    src = cert.extensions.get_extension_for_oid(ObjectIdentifier("1.3.6.1.4.1.57264.1.12")).value
    assert v1.value == ISSUER.encode()  # type: ignore[attr-defined]
    assert v2.value == b"\x0c" + bytes([len(ISSUER)]) + ISSUER.encode()  # type: ignore[attr-defined]
    assert src.value == b"\x0c\x09https://x"  # type: ignore[attr-defined]


# --- committed fixtures ---------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import make_sigstore_fixtures

    out = tmp_path_factory.mktemp("regenerated") / "sigstore"
    make_sigstore_fixtures.generate(out)
    return out


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_committed_fixtures_are_what_the_script_writes(regenerated: Path) -> None:
    committed, fresh = _files(COMMITTED), _files(regenerated)
    assert sorted(committed) == sorted(fresh)
    changed = [name for name in fresh if committed[name] != fresh[name]]
    assert changed == [], f"run fixtures/make_sigstore_fixtures.py: {changed}"
    assert sum(len(v) for v in committed.values()) < 1_000_000


def _manifest_rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads((COMMITTED / "manifest.json").read_text())["files"]
    return [r for r in rows if "expect" in r]


@pytest.fixture(scope="session")
def committed_verifier() -> Verifier:
    return Verifier(trusted_root=TrustedRoot.from_file(str(COMMITTED / "trusted_root.json")))


@pytest.mark.parametrize("row", _manifest_rows(), ids=lambda r: str(r["file"]))
def test_committed_bundle_meets_sigstore_python_expectation(row: dict[str, Any], committed_verifier: Verifier) -> None:
    data = (COMMITTED / row["artifact"]).read_bytes()
    pol = policy.Identity(identity=row["identity"] or "", issuer=row["issuer"])

    def run() -> None:
        bundle = Bundle.from_json((COMMITTED / row["file"]).read_bytes())
        if row["kind"] in ("dsse", "intoto"):
            _, payload = committed_verifier.verify_dsse(bundle, pol)
            statement = json.loads(payload)
            assert statement["subject"][0]["digest"]["sha256"] == hashlib.sha256(data).hexdigest()
        else:
            committed_verifier.verify_artifact(data, bundle, pol)

    if row["sigstore_python"] == "verifies":
        run()
    else:
        with pytest.raises((VerificationError, InvalidBundle)):
            run()


# --- knobs for the exceptions sigstore-python lets escape (callers must map them: docs/sigstore.md) -----


def _verify_message(ts: testsigstore.TestSigstore, tmp_path: Path, **kwargs: Any) -> None:
    root = ts.write_trusted_root(tmp_path / "trusted_root.json")
    verifier = Verifier(trusted_root=TrustedRoot.from_file(str(root)))
    b = ts.sign_artifact(DATA, identity=IDENTITY, issuer=ISSUER, **kwargs)
    verifier.verify_artifact(DATA, _bundle(b), policy.Identity(identity=IDENTITY, issuer=ISSUER))


@pytest.mark.parametrize("knob", ["omit_key_usage", "omit_eku"])
def test_leaf_without_key_usage_makes_sigstore_raise_extension_not_found(
    ts: testsigstore.TestSigstore, tmp_path: Path, knob: str
) -> None:
    with pytest.raises(x509.ExtensionNotFound):
        _verify_message(ts, tmp_path, **{knob: True})


def test_leaf_from_a_precert_signing_root_makes_sigstore_raise_index_error(tmp_path: Path) -> None:
    ts = testsigstore.TestSigstore(seed=7, root_ct_eku=True)
    _verify_message(ts, tmp_path)  # via the intermediate: fine
    with pytest.raises(IndexError):
        _verify_message(ts, tmp_path, from_root=True)


def test_leaf_without_sct_is_rejected(ts: testsigstore.TestSigstore, tmp_path: Path) -> None:
    with pytest.raises(VerificationError, match="does not contain a signed certificate timestamp"):
        _verify_message(ts, tmp_path, sct=False)


def test_sharded_log_index_differs_from_the_proof_index_and_verifies(tmp_path: Path) -> None:
    ts = testsigstore.TestSigstore(seed=7, shard_offset=100_000)
    entry = ts.sign_artifact(DATA, identity=IDENTITY, issuer=ISSUER)["verificationMaterial"]["tlogEntries"][0]
    assert int(entry["logIndex"]) == int(entry["inclusionProof"]["logIndex"]) + 100_000
    _verify_message(ts, tmp_path)


def test_mutation_of_absent_material_is_refused(ts: testsigstore.TestSigstore) -> None:
    with pytest.raises(ValueError, match="needs inclusion_proof"):
        ts.sign_artifact(DATA, identity=IDENTITY, issuer=ISSUER, inclusion_proof=False, mutate="proof_hash")
    with pytest.raises(ValueError, match="needs inclusion_promise"):
        ts.sign_dsse(b"x", identity=IDENTITY, issuer=ISSUER, inclusion_promise=False, mutate="set")
    with pytest.raises(ValueError, match="inclusion proof, an inclusion promise"):
        ts.sign_artifact(DATA, identity=IDENTITY, issuer=ISSUER, inclusion_proof=False, inclusion_promise=False)
