"""The local test Sigstore's RFC 3161 timestamp authority and Rekor v2 style bundles (fixtures/testsigstore.py).

Promises: the TSA's TimeStampResp parses and verifies with rfc3161-client (the library sigstore-python uses),
every good Rekor v2 style bundle verifies with unmodified sigstore-python 4.5.1, every bad variant is refused
for the reason its one mutation names (pinned through sigstore's own log of the rfc3161-client error), and the
committed fixtures/sigstore/tsa/ bundles get their expected outcome from ``atip-trust verify``, including the
closed TSA validity window: genTime == validFor.end verifies, one microsecond (or second) earlier does not.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from rfc3161_client import VerificationError as Rfc3161VerificationError
from rfc3161_client import VerifierBuilder, decode_timestamp_response
from sigstore.errors import VerificationError
from sigstore.models import Bundle, TrustedRoot
from sigstore.verify import Verifier, policy

import der
import testsigstore
from conftest import FIXTURES
from verify_helpers import cli

TSA_DIR = FIXTURES / "sigstore" / "tsa"
IDENTITY = "https://github.com/atip-test/tool/.github/workflows/release.yml@refs/tags/v1.0.0"
ISSUER = "https://token.actions.githubusercontent.com"
DATA = b"#!/bin/sh\necho tool\n"
GEN_TIME = datetime.fromtimestamp(testsigstore.DEFAULT_INTEGRATED_TIME, tz=UTC)
POLICY = policy.Identity(identity=IDENTITY, issuer=ISSUER)
#: The identity of the committed fixtures (fixtures/make_sigstore_fixtures.py IDENTITY).
COMMITTED_IDENTITY = "https://github.com/atip-test/hello-tool/.github/workflows/release.yml@refs/tags/v1.0.0"
POLICY_COMMITTED = policy.Identity(identity=COMMITTED_IDENTITY, issuer=ISSUER)

#: Why sigstore-python refuses each mutation: the VerificationError text, or (for timestamps it merely
#: skips, ending in "not enough sources of verified time") the rfc3161-client error it logs.
REJECTIONS = {
    "imprint": "Mismatch between messages",
    "cert_validity": "cert is not valid at validation time",
    "tsa_no_eku": "unsuitable certificate purpose",  # OpenSSL's timestamp-signing purpose check
    "tsa_untrusted": "unable to get local issuer certificate",
    "duplicate": "duplicate timestamp found",
}


@pytest.fixture(scope="session")
def ts() -> testsigstore.TestSigstore:
    return testsigstore.TestSigstore(seed=7)


@pytest.fixture(scope="session")
def root_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("testsigstore-tsa")


def _verifier(ts: testsigstore.TestSigstore, root_dir: Path, name: str = "good", **kwargs: Any) -> Verifier:
    path = ts.write_trusted_root_v2(root_dir / f"{name}.trusted_root.json", **kwargs)
    return Verifier(trusted_root=TrustedRoot.from_file(str(path)))


@pytest.fixture(scope="session")
def verifier(ts: testsigstore.TestSigstore, root_dir: Path) -> Verifier:
    return _verifier(ts, root_dir)


def _bundle(obj: dict[str, Any]) -> Bundle:
    return Bundle.from_json(json.dumps(obj))


def _statement() -> dict[str, Any]:
    return testsigstore.slsa_v1_statement("tool", hashlib.sha256(DATA).hexdigest())


def _tokens(bundle: dict[str, Any]) -> list[bytes]:
    tvd = bundle["verificationMaterial"]["timestampVerificationData"]["rfc3161Timestamps"]
    return [base64.b64decode(t["signedTimestamp"]) for t in tvd]


def _mint(ts: testsigstore.TestSigstore, kind: str, **kwargs: Any) -> dict[str, Any]:
    if kind == "message":
        return ts.sign_artifact_v2(DATA, identity=IDENTITY, issuer=ISSUER, **kwargs)
    return ts.sign_dsse_v2(_statement(), identity=IDENTITY, issuer=ISSUER, **kwargs)


def _verify(verifier: Verifier, kind: str, bundle: dict[str, Any]) -> None:
    if kind == "message":
        verifier.verify_artifact(DATA, _bundle(bundle), POLICY)
    else:
        ptype, payload = verifier.verify_dsse(_bundle(bundle), POLICY)
        assert ptype == "application/vnd.in-toto+json" and json.loads(payload) == _statement()


# --- the DER encoder ----------------------------------------------------------------------------------


def test_der_encoder_writes_canonical_encodings() -> None:
    assert der.integer(0) == b"\x02\x01\x00"
    assert der.integer(127) == b"\x02\x01\x7f"
    assert der.integer(128) == b"\x02\x02\x00\x80"  # a leading zero keeps it positive
    assert der.oid("1.2.840.113549.1.9.4") == bytes.fromhex("06092a864886f70d010904")
    assert der.octet_string(b"x" * 200)[:3] == b"\x04\x81\xc8"  # long-form length
    assert der.set_of(b"\x04\x01b", b"\x04\x01a") == b"\x31\x06\x04\x01a\x04\x01b"  # DER-sorted SET OF
    assert der.generalized_time(GEN_TIME) == b"\x18\x0f20250901120000Z"
    assert der.generalized_time(GEN_TIME + timedelta(microseconds=500000)) == b"\x18\x1120250901120000.5Z"
    assert der.implicit(0, der.set_of(b"\x05\x00")) == b"\xa0\x02\x05\x00"
    assert der.explicit(4, b"\x05\x00") == b"\xa4\x02\x05\x00"


# --- the timestamp authority --------------------------------------------------------------------------


def test_tsa_leaf_has_the_critical_timestamping_eku_rfc3161_requires(ts: testsigstore.TestSigstore) -> None:
    eku = ts.tsa.leaf_cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage)
    assert eku.critical and list(eku.value) == [x509.ExtendedKeyUsageOID.TIME_STAMPING]
    with pytest.raises(x509.ExtensionNotFound):
        ts.tsa_without_eku.leaf_cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage)
    assert ts.rogue_tsa.leaf_cert.subject == ts.tsa.leaf_cert.subject
    assert ts.rogue_tsa.leaf_cert.public_key() != ts.tsa.leaf_cert.public_key()


def test_timestamp_response_verifies_with_rfc3161_client(ts: testsigstore.TestSigstore) -> None:
    message = b"signature bytes"
    resp = decode_timestamp_response(ts.tsa.timestamp(message, GEN_TIME))
    info = resp.tst_info
    assert resp.status == 0 and info.gen_time == GEN_TIME and info.nonce is None
    assert info.policy.dotted_string == testsigstore.TSA_POLICY_OID
    assert info.message_imprint.message == hashlib.sha256(message).digest()
    leaf_der = ts.tsa.leaf_cert.public_bytes(serialization.Encoding.DER)
    assert resp.signed_data.certificates == {leaf_der}
    verifier = VerifierBuilder().tsa_certificate(ts.tsa.leaf_cert).add_root_certificate(ts.tsa.root_cert).build()
    assert verifier.verify_message(resp, message) is True
    # Not embedded (certReq false): the TSA certificate comes from the verifier's options only.
    bare = decode_timestamp_response(ts.tsa.timestamp(message, GEN_TIME, embed_certificate=False))
    assert bare.signed_data.certificates == set()
    assert verifier.verify_message(bare, message) is True


def test_timestamp_signature_and_signed_attributes_are_checked(ts: testsigstore.TestSigstore) -> None:
    """The CMS signature really covers the signed attributes, and messageDigest the TSTInfo: tampering
    with either is refused, so the good verdicts above are not vacuous."""
    message = b"signature bytes"
    token = ts.tsa.timestamp(message, GEN_TIME)
    verifier = VerifierBuilder().tsa_certificate(ts.tsa.leaf_cert).add_root_certificate(ts.tsa.root_cert).build()
    flipped = bytearray(token)
    flipped[-1] ^= 0x01  # last byte of the ECDSA signature
    with pytest.raises(Rfc3161VerificationError, match="signature failure"):
        verifier.verify_message(decode_timestamp_response(bytes(flipped)), message)
    at = token.index(b"20250901120000Z")
    later = token[:at] + b"20250901120001Z" + token[at + 15 :]  # genTime inside TSTInfo changed
    with pytest.raises(Rfc3161VerificationError, match="digest failure"):
        verifier.verify_message(decode_timestamp_response(later), message)


def test_timestamps_are_deterministic(ts: testsigstore.TestSigstore) -> None:
    a, b = testsigstore.TestSigstore(seed=7), testsigstore.TestSigstore(seed=7)
    assert a.tsa.timestamp(b"m", GEN_TIME) == b.tsa.timestamp(b"m", GEN_TIME)
    assert a.sign_artifact_v2(DATA, identity=IDENTITY, issuer=ISSUER) == b.sign_artifact_v2(
        DATA, identity=IDENTITY, issuer=ISSUER
    )


# --- good Rekor v2 style bundles ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["message", "dsse"])
@pytest.mark.parametrize("embed", [True, False], ids=["tsa-cert-embedded", "tsa-cert-in-root-only"])
def test_rekor_v2_bundle_with_tsa_timestamp_verifies_with_sigstore_python(
    ts: testsigstore.TestSigstore, verifier: Verifier, kind: str, embed: bool
) -> None:
    b = _mint(ts, kind, embed_tsa_certificate=embed)
    entry = b["verificationMaterial"]["tlogEntries"][0]
    assert entry["kindVersion"] == {"kind": "hashedrekord", "version": "0.0.2"}
    assert "integratedTime" not in entry and "inclusionPromise" not in entry
    _verify(verifier, kind, b)


def test_timestamp_imprint_is_sha256_of_the_bundle_signature(ts: testsigstore.TestSigstore) -> None:
    """sigstore-python hands ``bundle.signature`` (the message signature or the DSSE signature) to
    rfc3161-client, which hashes it with the imprint's algorithm."""
    for kind in ("message", "dsse"):
        b = _mint(ts, kind)
        sig = b["messageSignature"]["signature"] if kind == "message" else b["dsseEnvelope"]["signatures"][0]["sig"]
        imprint = decode_timestamp_response(_tokens(b)[0]).tst_info.message_imprint.message
        assert imprint == hashlib.sha256(base64.b64decode(sig)).digest()


def test_dsse_v002_entry_is_refused_by_sigstore_python(ts: testsigstore.TestSigstore, verifier: Verifier) -> None:
    b = _mint(ts, "dsse", entry_kind="dsse")
    assert b["verificationMaterial"]["tlogEntries"][0]["kindVersion"] == {"kind": "dsse", "version": "0.0.2"}
    with pytest.raises(VerificationError, match="Unsupported DSSE log entry type: dsse/0.0.2"):
        verifier.verify_dsse(_bundle(b), POLICY)


# --- bad variants: one mutation each -------------------------------------------------------------------


def _rejection(caplog: pytest.LogCaptureFixture, err: Exception) -> str:
    """The VerificationError text plus every rfc3161-client error sigstore logged while skipping timestamps."""
    logged = [str(r.exc_info[1]) for r in caplog.records if r.exc_info and r.exc_info[1] is not None]
    return " | ".join([str(err), *logged, *(r.getMessage() for r in caplog.records)])


@pytest.mark.parametrize("kind", ["message", "dsse"])
@pytest.mark.parametrize("mutation", testsigstore.TSA_MUTATIONS)
def test_sigstore_python_rejects_tsa_mutation(
    ts: testsigstore.TestSigstore, verifier: Verifier, root_dir: Path, caplog: pytest.LogCaptureFixture,
    kind: str, mutation: str,
) -> None:
    b = _mint(ts, kind, mutate=mutation)
    v = _verifier(ts, root_dir, "no-eku", tsa=ts.tsa_without_eku) if mutation == "tsa_no_eku" else verifier
    caplog.set_level(logging.DEBUG, logger="sigstore.verify.verifier")
    with pytest.raises(VerificationError) as err:
        _verify(v, kind, b)
    assert REJECTIONS[mutation] in _rejection(caplog, err.value)


def test_duplicate_variant_carries_two_identical_timestamps(ts: testsigstore.TestSigstore) -> None:
    tokens = _tokens(_mint(ts, "message", mutate="duplicate"))
    assert len(tokens) == 2 and tokens[0] == tokens[1]


def test_unknown_tsa_mutation_is_refused(ts: testsigstore.TestSigstore) -> None:
    with pytest.raises(ValueError, match="unknown TSA mutation"):
        _mint(ts, "message", mutate="signature")


#: TSA validFor in the trusted root relative to genTime -> does sigstore-python 4.5.1 accept it?
WINDOWS = {
    "end-1us-after": ({"tsa_end": GEN_TIME + timedelta(microseconds=1)}, True),
    "end-at-gentime": ({"tsa_end": GEN_TIME}, False),  # sigstore: gen_time < end (TimeRange is closed)
    "end-1us-before": ({"tsa_end": GEN_TIME - timedelta(microseconds=1)}, False),
    "start-at-gentime": ({"tsa_start": GEN_TIME}, True),
    "start-1s-after": ({"tsa_start": GEN_TIME + timedelta(seconds=1)}, False),
}


@pytest.mark.parametrize("window", WINDOWS)
def test_tsa_validity_window_in_the_trusted_root_bounds_gen_time(
    ts: testsigstore.TestSigstore, root_dir: Path, caplog: pytest.LogCaptureFixture, window: str
) -> None:
    kwargs, accepted = WINDOWS[window]
    v = _verifier(ts, root_dir, window, **kwargs)
    b = _mint(ts, "message")
    if accepted:
        _verify(v, "message", b)
        return
    caplog.set_level(logging.DEBUG, logger="sigstore.verify.verifier")
    with pytest.raises(VerificationError) as err:
        _verify(v, "message", b)
    assert "not in CA time range" in _rejection(caplog, err.value)


# --- shape pinned against the real Rekor v2 conformance bundles ----------------------------------------


def _shape(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _shape(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_shape(v) for v in obj[:1]]
    return type(obj).__name__


def _body(bundle: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(base64.b64decode(bundle["verificationMaterial"]["tlogEntries"][0]["canonicalizedBody"]))
    return body


@pytest.mark.parametrize(("case", "kind"), [("conformance-rekor2-happy-path", "message"),
                                            ("conformance-rekor2-dsse-happy-path", "dsse")])
def test_rekor_v2_bundle_has_the_shape_of_the_conformance_bundle(
    ts: testsigstore.TestSigstore, interop_dir: Path, case: str, kind: str
) -> None:
    real = json.loads((interop_dir / case / "bundle.sigstore.json").read_text())
    ours = _mint(ts, kind)
    assert _shape(ours) == _shape(real)  # same keys everywhere: no integratedTime, no inclusionPromise
    assert _shape(_body(ours)) == _shape(_body(real))
    real_entry, our_entry = (b["verificationMaterial"]["tlogEntries"][0] for b in (real, ours))
    assert our_entry["kindVersion"] == real_entry["kindVersion"]
    # The TimeStampResp has the same signed attributes (ours omits the optional signingTime).
    attrs = ("1.2.840.113549.1.9.3", "1.2.840.113549.1.9.4", "1.2.840.113549.1.9.16.2.47")
    for token in (_tokens(real)[0], _tokens(ours)[0]):
        assert all(der.oid(a) in token for a in attrs)


def test_rekor_v2_log_id_is_the_signed_note_key_id_as_in_the_staging_root(
    ts: testsigstore.TestSigstore, interop_dir: Path
) -> None:
    real_root = json.loads((interop_dir / "conformance-rekor2-happy-path" / "trusted_root.json").read_text())
    real_bundle = json.loads((interop_dir / "conformance-rekor2-happy-path" / "bundle.sigstore.json").read_text())
    ours_root, ours_bundle = ts.trusted_root_v2(), _mint(ts, "message")
    for root, bundle in ((real_root, real_bundle), (ours_root, ours_bundle)):
        v2 = next(t for t in root["tlogs"] if t["publicKey"]["keyDetails"] == "PKIX_ED25519")
        origin = v2["baseUrl"].removeprefix("https://")
        spki = serialization.load_der_public_key(base64.b64decode(v2["publicKey"]["rawBytes"]))
        raw = spki.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        key_id = hashlib.sha256(origin.encode() + b"\n\x01" + raw).digest()
        assert base64.b64decode(v2["logId"]["keyId"]) == key_id
        entry = bundle["verificationMaterial"]["tlogEntries"][0]
        assert base64.b64decode(entry["logId"]["keyId"]) == key_id
        note = entry["inclusionProof"]["checkpoint"]["envelope"]
        assert note.startswith(origin + "\n")
        hint = base64.b64decode(note.split("\n\n", 1)[1].split("\n")[0].split(" ")[2])[:4]
        assert hint == key_id[:4]
        tsa = root["timestampAuthorities"][0]
        assert set(tsa) == {"subject", "uri", "certChain", "validFor"}
        assert len(tsa["certChain"]["certificates"]) == 2  # leaf, root


# --- committed fixtures: sigstore-python and atip-trust ----------------------------------------------------


def _rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads((TSA_DIR / "manifest.json").read_text())["files"]
    return rows


def _row_id(row: dict[str, Any]) -> str:
    return f"{row['file']}@{row['trusted_root']}"


@pytest.mark.parametrize("row", _rows(), ids=_row_id)
def test_committed_tsa_bundle_meets_sigstore_python_expectation(row: dict[str, Any]) -> None:
    verifier = Verifier(trusted_root=TrustedRoot.from_file(str(TSA_DIR / row["trusted_root"])))
    data = (TSA_DIR / row["artifact"]).read_bytes()
    bundle = Bundle.from_json((TSA_DIR / row["file"]).read_bytes())

    def run() -> None:
        if row["kind"] == "dsse":
            _, payload = verifier.verify_dsse(bundle, POLICY_COMMITTED)
            assert json.loads(payload)["subject"][0]["digest"]["sha256"] == hashlib.sha256(data).hexdigest()
        else:
            verifier.verify_artifact(data, bundle, POLICY_COMMITTED)

    if row["sigstore_python"] == "verifies":
        run()
    else:
        with pytest.raises(VerificationError):
            run()


def _argv(row: dict[str, Any]) -> list[str]:
    return ["verify", str(TSA_DIR / row["artifact"]), "--bundle", str(TSA_DIR / row["file"]),
            "--trusted-root", str(TSA_DIR / row["trusted_root"]), "--certificate-identity", row["identity"],
            "--certificate-oidc-issuer", row["issuer"], "--format", "json"]


@pytest.mark.parametrize("row", _rows(), ids=_row_id)
def test_committed_tsa_bundle_gets_its_expected_outcome_from_atip_trust(row: dict[str, Any]) -> None:
    r = cli(*_argv(row))
    assert "Traceback" not in r.err
    out = r.json
    if row["expect"] == "verifies":
        assert (r.code, out["trust_level"]) == (0, "VERIFIED"), out["checks"]
    else:
        assert r.code in (1, 2), (row["file"], r.code, r.err)
        assert out["trust_level"] != "VERIFIED"
        assert any(c["status"] in ("fail", "error") for c in out["checks"])


@pytest.mark.parametrize(("root", "code"), [("trusted_root.tsa-end-at-gentime.json", 0),
                                            ("trusted_root.tsa-end-1us-before-gentime.json", 1),
                                            ("trusted_root.tsa-end-1s-before-gentime.json", 1)])
def test_tsa_validity_end_is_inclusive_through_the_cli(root: str, code: int) -> None:
    """protobuf-specs TimeRange is closed: a timestamp exactly at validFor.end is inside, the tightest
    earlier end (1 µs, the resolution sigstore compares at) is not. As users run it: the CLI."""
    row = {"artifact": "../artifacts/hello-tool", "file": "good/hello-tool.rekor2.sigstore.json",
           "trusted_root": root, "identity": COMMITTED_IDENTITY, "issuer": ISSUER}
    assert json.loads((TSA_DIR / root).read_text())["timestampAuthorities"][0]["validFor"]["end"].startswith(
        "2025-09-01T1"
    )
    r = cli(*_argv(row))
    assert r.code == code, r.out
    assert r.json["trust_level"] == ("VERIFIED" if code == 0 else "UNVERIFIED")
    if code:
        time_check = next(c for c in r.json["checks"] if c["name"] == "time")
        assert time_check["status"] == "fail" and "not enough sources of verified time" in time_check["message"]
