"""The helpers that hold one idea each, used by every verifier and loader that needs it: canonical JSON,
the bundle media-type table, DSSE PAE, signature schemes, file opening and capped reading, and strict
JSON field access. Each test pins the promise its callers rely on."""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import stat
from pathlib import Path

import pytest
import rfc8785
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed

from atip_trust._base.files import open_regular, read_capped, read_fd_capped
from atip_trust._base.jsonio import (
    b64_bytes,
    canonical_digest,
    canonical_json,
    expect_object,
    get_field,
    join_path,
)
from atip_trust.errors import (
    ArtifactAccessError,
    BundleError,
    InputTooLargeError,
    MalformedInputError,
    NotARegularFileError,
    PolicyError,
)
from atip_trust.facts.report import TrustReport
from atip_trust.policy.load import layer_from_document
from atip_trust.signature.algorithms import LOG_SCHEMES, SCT_SCHEMES, verify_signature
from atip_trust.signature.bundle import BUNDLE_MEDIA_TYPES, bundle_version, proof_required
from atip_trust.signature.dsse import pae

# --- canonical JSON -------------------------------------------------------------------------------


def test_policy_digest_of_non_ascii_text_is_unchanged() -> None:
    # Computed with the formula policy digests have always used (raw UTF-8): a published digest stays valid.
    doc = {"version": 1, "mode": "enforce", "tools": {"allow": [{"name": "café", "comment": "naïve ☃"}]}}
    expected = "sha256:8b2e53cb52ebd54101f27417cfd37a9ca46b409b2eb2fea2d49f23ad147cac5f"
    assert layer_from_document(doc, source="local").digest == expected
    assert canonical_digest(doc, ascii_only=False) == expected
    assert canonical_digest(doc) != expected  # escaping is a different byte string, so a different digest


def test_report_digest_is_unchanged_and_stringifies_non_json_facts() -> None:
    r = TrustReport(path="/usr/bin/tool", digests={"sha256": "ab" * 32}, size=3)
    r.claims = {"when": datetime.datetime(2024, 1, 2, tzinfo=datetime.UTC), "name": "café"}
    assert r.digest() == "sha256:de6d0aaa98d436ebf24122e04cf613f7ac90de65b1d62e14d4430fa7b0f0f902"


def test_canonical_json_sorts_keys_drops_whitespace_and_escapes_non_ascii() -> None:
    assert canonical_json({"b": [1, 2], "a": "é"}) == b'{"a":"\\u00e9","b":[1,2]}'
    assert canonical_json({"b": [1, 2], "a": "é"}, ascii_only=False) == '{"a":"é","b":[1,2]}'.encode()


def test_canonical_json_is_rfc8785_for_ascii_keys_and_integers() -> None:
    # What the Rekor SET check relies on (tlog.set_payload).
    doc = {"logIndex": 12, "body": "eyJhIjoxfQ==", "logID": "c0ffee", "integratedTime": 1700000000,
           "nested": {"z": True, "a": None, "m": [3, "x"]}}
    assert canonical_json(doc) == rfc8785.dumps(doc)


def test_canonical_json_refuses_a_non_json_value_unless_asked_to_stringify() -> None:
    when = datetime.datetime(2024, 1, 2, tzinfo=datetime.UTC)
    with pytest.raises(TypeError):
        canonical_json({"t": when})
    assert canonical_json({"t": when}, stringify=True) == b'{"t":"2024-01-02 00:00:00+00:00"}'
    assert canonical_digest({"t": when}, stringify=True) == (
        "sha256:" + hashlib.sha256(b'{"t":"2024-01-02 00:00:00+00:00"}').hexdigest()
    )


# --- bundle media types ---------------------------------------------------------------------------


def test_every_bundle_media_type_names_its_version_and_only_v01_may_omit_the_proof() -> None:
    assert {bundle_version(m) for m in BUNDLE_MEDIA_TYPES} == {"0.1", "0.2", "0.3"}
    assert bundle_version("application/vnd.dev.sigstore.bundle.v0.3+json") == "0.3"
    for unknown in ("application/vnd.dev.sigstore.bundle+json;version=0.4", None, 3, ["x"]):
        assert bundle_version(unknown) is None
    assert [proof_required(v) for v in ("0.1", "0.2", "0.3")] == [False, True, True]


# --- DSSE PAE -------------------------------------------------------------------------------------


def test_pae_is_the_dsse_v1_encoding_with_byte_lengths() -> None:
    # The example of the DSSE protocol specification.
    assert pae("http://example.com/HelloWorld", b"hello world") == (
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )
    assert pae("é", b"") == "DSSEv1 2 é 0 ".encode()  # the type's length counts UTF-8 bytes


# --- signature schemes ----------------------------------------------------------------------------

MESSAGE = b"checkpoint or SET bytes"


def test_log_schemes_follow_the_curve_and_refuse_a_mismatched_hash() -> None:
    p384 = ec.generate_private_key(ec.SECP384R1())
    good = p384.sign(MESSAGE, ec.ECDSA(hashes.SHA384()))
    weak = p384.sign(MESSAGE, ec.ECDSA(hashes.SHA256()))
    assert verify_signature(p384.public_key(), good, MESSAGE, LOG_SCHEMES) == "ecdsa-by-curve"
    assert verify_signature(p384.public_key(), weak, MESSAGE, LOG_SCHEMES) is None
    # An SCT is SHA-256 whatever the curve.
    assert verify_signature(p384.public_key(), weak, MESSAGE, SCT_SCHEMES) == "ecdsa-sha256"
    assert verify_signature(p384.public_key(), good, MESSAGE, SCT_SCHEMES) is None


def test_a_scheme_the_caller_did_not_list_never_verifies() -> None:
    ed = ed25519.Ed25519PrivateKey.generate()
    assert verify_signature(ed.public_key(), ed.sign(MESSAGE), MESSAGE, LOG_SCHEMES) == "ed25519"
    assert verify_signature(ed.public_key(), ed.sign(MESSAGE), MESSAGE, SCT_SCHEMES) is None
    r = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pss = r.sign(MESSAGE, padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=32), hashes.SHA256())
    pkcs = r.sign(MESSAGE, padding.PKCS1v15(), hashes.SHA256())
    assert verify_signature(r.public_key(), pss, MESSAGE, LOG_SCHEMES) is None  # logs: PKCS#1 v1.5 only
    assert verify_signature(r.public_key(), pss, MESSAGE, ("rsa-pkcs1v15-sha256", "rsa-pss-sha256")) == (
        "rsa-pss-sha256"
    )
    assert verify_signature(r.public_key(), pkcs, MESSAGE, LOG_SCHEMES) == "rsa-pkcs1v15-sha256"


def test_prehashed_verifies_a_digest_and_ed25519_never_verifies_one() -> None:
    p256 = ec.generate_private_key(ec.SECP256R1())
    digest = hashlib.sha256(MESSAGE).digest()
    sig = p256.sign(digest, ec.ECDSA(Prehashed(hashes.SHA256())))
    assert verify_signature(p256.public_key(), sig, digest, ("ecdsa-sha256",), prehashed=True) == "ecdsa-sha256"
    assert verify_signature(p256.public_key(), sig, MESSAGE, ("ecdsa-sha256",)) == "ecdsa-sha256"
    ed = ed25519.Ed25519PrivateKey.generate()
    assert verify_signature(ed.public_key(), ed.sign(digest), digest, LOG_SCHEMES, prehashed=True) is None


def test_a_malformed_signature_or_a_foreign_key_is_no_match_not_an_error() -> None:
    p256 = ec.generate_private_key(ec.SECP256R1())
    for junk in (b"", b"\x30\x02\x01", b"x" * 600):
        assert verify_signature(p256.public_key(), junk, MESSAGE, LOG_SCHEMES) is None
    assert verify_signature(object(), b"sig", MESSAGE, LOG_SCHEMES) is None


# --- files ----------------------------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_open_regular_refuses_a_fifo_without_blocking_and_names_what_it_is(tmp_path: Path) -> None:
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    with pytest.raises(NotARegularFileError, match="bundle is a FIFO, not a regular file"):
        read_capped(fifo, 10, what="bundle")
    # Opened read-write (to read a torn last line), a FIFO opens at once and fstat names it; write-only,
    # nobody reading it is ENXIO: either way a refusal naming it, never a hang.
    with pytest.raises(NotARegularFileError, match="audit log is a FIFO"):
        open_regular(fifo, what="audit log", write=True)
    with pytest.raises(NotARegularFileError, match="policy is a directory"):
        read_capped(tmp_path, 10, what="policy")


def test_a_link_is_refused_when_links_must_not_be_followed(tmp_path: Path) -> None:
    target = tmp_path / "real.json"
    target.write_text("{}")
    os.chmod(target, 0o600)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert read_capped(link, 10) == b"{}"
    with pytest.raises(NotARegularFileError, match="symbolic link"):
        read_capped(link, 10, follow_links=False)
    with pytest.raises(PolicyError, match="org policy refused: cannot open it without following links"):
        read_capped(link, 10, what="org policy", follow_links=False, owner_check=PolicyError)


def test_owner_check_refuses_a_file_others_can_write_with_the_callers_error(tmp_path: Path) -> None:
    p = tmp_path / "managed.json"
    p.write_text("{}")
    os.chmod(p, 0o600)
    assert read_capped(p, 10, what="org policy", owner_check=PolicyError) == b"{}"
    for mode in (0o620, 0o602):
        os.chmod(p, mode)
        with pytest.raises(PolicyError, match=f"writable by group or others \\(mode {mode:04o}"):
            read_capped(p, 10, what="org policy", owner_check=PolicyError)
        assert read_capped(p, 10) == b"{}"  # without the option the mode is not the loader's concern


def test_read_capped_refuses_one_byte_over_the_cap_and_reports_a_missing_file(tmp_path: Path) -> None:
    p = tmp_path / "doc"
    p.write_bytes(b"x" * 10)
    assert read_capped(p, 10) == b"x" * 10
    with pytest.raises(InputTooLargeError, match="11 bytes, over the cap of 10"):
        p.write_bytes(b"x" * 11)
        read_capped(p, 10, what="doc")
    with pytest.raises(ArtifactAccessError, match="trusted root not found"):
        read_capped(tmp_path / "missing", 10, what="trusted root")


def test_read_fd_capped_leaves_the_descriptor_offset_alone(tmp_path: Path) -> None:
    p = tmp_path / "artifact"
    p.write_bytes(b"0123456789")
    fd, st = open_regular(p)
    try:
        assert stat.S_ISREG(st.st_mode)
        os.lseek(fd, 4, os.SEEK_SET)
        assert read_fd_capped(fd, 10) == b"0123456789"
        assert os.lseek(fd, 0, os.SEEK_CUR) == 4
        with pytest.raises(InputTooLargeError, match="artifact exceeds the cap of 9 bytes"):
            read_fd_capped(fd, 9, what="artifact")
    finally:
        os.close(fd)


def test_open_regular_for_writing_creates_the_file_private(tmp_path: Path) -> None:
    fd, _ = open_regular(tmp_path / "audit.jsonl", what="audit log", write=True)
    os.close(fd)
    assert stat.S_IMODE(os.stat(tmp_path / "audit.jsonl").st_mode) & 0o077 == 0


# --- strict JSON fields ---------------------------------------------------------------------------


def test_get_field_names_the_json_path_of_a_missing_or_wrong_value() -> None:
    doc = {"n": 1, "flag": True, "s": "", "t": "x", "k": None}
    assert get_field(doc, "t", str, path="$.a") == "x"
    assert get_field(doc, "absent", str, path="$.a", required=False) is None
    assert get_field(doc, "k", str, path="$.a", required=False) is None
    with pytest.raises(BundleError, match="required field is missing") as info:
        get_field(doc, "absent", str, path="$.a", error=BundleError)
    assert info.value.path == "$.a.absent"
    with pytest.raises(MalformedInputError, match="expected a string, got integer") as info2:
        get_field(doc, "n", str, path='$["odd key"]')
    assert info2.value.path == '$["odd key"].n'
    with pytest.raises(MalformedInputError, match="expected an integer, got boolean"):
        get_field(doc, "flag", int, path="$")  # a JSON true is never the number 1
    with pytest.raises(MalformedInputError, match="non-empty string"):
        get_field(doc, "s", str, path="$", nonempty=True)


def test_expect_object_refuses_unknown_keys_by_name() -> None:
    assert expect_object({"a": 1}, "$.x", allowed={"a", "b"}) == {"a": 1}
    with pytest.raises(BundleError, match="unknown field 'c'") as info:
        expect_object({"a": 1, "c": 2}, "$.x", allowed={"a", "b"}, error=BundleError)
    assert info.value.path == "$.x"
    with pytest.raises(MalformedInputError, match="expected a JSON object, got list"):
        expect_object([], "$.x")


def test_b64_bytes_accepts_only_standard_padded_base64() -> None:
    assert b64_bytes("aGk=", "$.v") == b"hi"
    for bad in ("aGk", "a-_=", "aG k=", 5, None):
        with pytest.raises(MalformedInputError) as info:
            b64_bytes(bad, "$.v")
        assert info.value.path == "$.v"


def test_join_path_renders_children_as_json_path_does() -> None:
    assert join_path("$.a", "b", 0, "c d") == '$.a.b[0]["c d"]'
    assert json.loads(join_path("$", "x y")[2:-1]) == "x y"
