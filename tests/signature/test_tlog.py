"""Rekor v1 log entry verification (atip_trust.tlog): real entries verify, each forged byte is caught.

Real entries come from ../shared/fixtures/interop (skipped when absent); the Merkle code is also
checked against trees built here from RFC 6962 §2.1 definitions, independently of the verifier.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from atip_trust.errors import BundleError
from atip_trust.signature.tlog import (
    LogEntry,
    TlogVerificationError,
    leaf_hash,
    parse_checkpoint,
    root_from_inclusion_proof,
    set_payload,
    verify_checkpoint,
    verify_entry,
    verify_inclusion_proof,
    verify_set,
)
from atip_trust.signature.trustroot import TrustRoot

ENTRY_PATH = "$.verificationMaterial.tlogEntries[0]"


# --- helpers -----------------------------------------------------------------------------------------


def _root(interop: Path, case: str) -> TrustRoot:
    info = json.loads((interop / case / "case.json").read_text())
    used = info["trusted_root"]["used"]
    if used in ("production", "staging"):
        return TrustRoot.from_file(interop / "_trusted_roots" / f"{used}.trusted_root.json")
    return TrustRoot.from_file(interop / case / used)


def _raw_entry(interop: Path, case: str) -> dict[str, Any]:
    info = json.loads((interop / case / "case.json").read_text())
    bundle = json.loads((interop / case / info["bundle"]["filename"]).read_text())
    entry: dict[str, Any] = bundle["verificationMaterial"]["tlogEntries"][0]
    return entry


def _flip_b64(value: str, index: int = 0) -> str:
    raw = bytearray(base64.b64decode(value))
    raw[index] ^= 0x01
    return base64.b64encode(bytes(raw)).decode()


def _parse(raw: dict[str, Any]) -> LogEntry:
    return LogEntry.from_json(raw, path=ENTRY_PATH)


@pytest.fixture(scope="session")
def production(interop_dir: Path) -> TrustRoot:
    return TrustRoot.from_file(interop_dir / "_trusted_roots" / "production.trusted_root.json")


@pytest.fixture(scope="session")
def staging(interop_dir: Path) -> TrustRoot:
    return TrustRoot.from_file(interop_dir / "_trusted_roots" / "staging.trusted_root.json")


@pytest.fixture()
def good(interop_dir: Path) -> dict[str, Any]:
    """A real hashedrekord/0.0.1 entry with proof, checkpoint and SET, from the public-good log."""
    return copy.deepcopy(_raw_entry(interop_dir, "conformance-happy-path-v0.3"))


# --- real entries verify -------------------------------------------------------------------------------

REAL_CASES = [
    # (case, kind/version)
    ("conformance-happy-path-v0.3", "hashedrekord/0.0.1"),
    ("conformance-happy-path-v0.1", "hashedrekord/0.0.1"),
    ("conformance-managed-key-happy-path", "hashedrekord/0.0.1"),
    ("conformance-managed-key-and-trusted-root", "hashedrekord/0.0.1"),
    ("conformance-happy-path-intoto-in-dsse-v3", "dsse/0.0.1"),
    ("pypi-attestations-rfc8785-whl-sigstore", "dsse/0.0.1"),
    ("sigstore-python-bundle-v3", "hashedrekord/0.0.1"),
    ("cli-sigstore-js-2.1.0-bundle-v0.3", "intoto/0.0.2"),
]


@pytest.mark.parametrize(("case", "kind"), REAL_CASES)
def test_real_entry_proof_checkpoint_and_set_verify(interop_dir: Path, case: str, kind: str) -> None:
    entry = _parse(_raw_entry(interop_dir, case))
    assert f"{entry.kind}/{entry.version}" == kind
    result = verify_entry(entry, _root(interop_dir, case), require_proof=True)
    assert result.proof is True
    assert result.promise is True
    assert result.integrated_time == datetime.fromtimestamp(entry.integrated_time or 0, UTC)
    assert result.log_url.startswith("https://rekor.")
    assert [c.name for c in result.checks] == [
        "tlog.key",
        "tlog.inclusion_proof",
        "tlog.checkpoint",
        "tlog.set",
    ]
    assert all(c.status == "pass" for c in result.checks)


def test_set_payload_is_rfc8785_canonical_json(good: dict[str, Any]) -> None:
    rfc8785 = pytest.importorskip("rfc8785")
    entry = _parse(good)
    expected = rfc8785.dumps(
        {
            "body": good["canonicalizedBody"],
            "integratedTime": int(good["integratedTime"]),
            "logID": base64.b64decode(good["logId"]["keyId"]).hex(),
            "logIndex": int(good["logIndex"]),
        }
    )
    assert set_payload(entry) == expected


# --- one forged byte each --------------------------------------------------------------------------------


def test_forged_proof_hash_fails_inclusion_proof(good: dict[str, Any], production: TrustRoot) -> None:
    good["inclusionProof"]["hashes"][3] = _flip_b64(good["inclusionProof"]["hashes"][3], 7)
    with pytest.raises(TlogVerificationError) as err:
        verify_entry(_parse(good), production, require_proof=True)
    root_hex = base64.b64decode(good["inclusionProof"]["rootHash"]).hex()
    assert err.value.check == "tlog.inclusion_proof"
    assert str(err.value).startswith(f"inclusion proof root sha256 mismatch: expected {root_hex}")
    assert err.value.expected == root_hex
    assert err.value.actual != root_hex


def test_forged_proof_root_fails_proof_and_disagrees_with_checkpoint(
    good: dict[str, Any], production: TrustRoot
) -> None:
    real_root = base64.b64decode(good["inclusionProof"]["rootHash"]).hex()
    good["inclusionProof"]["rootHash"] = _flip_b64(good["inclusionProof"]["rootHash"], 31)
    entry = _parse(good)
    with pytest.raises(TlogVerificationError) as err:
        verify_entry(entry, production, require_proof=True)
    assert err.value.check == "tlog.inclusion_proof"
    assert err.value.actual == real_root  # computed from the body: the real root
    # The signed checkpoint still names the real root: it disagrees with the forged one.
    with pytest.raises(TlogVerificationError) as err2:
        verify_checkpoint(entry, production)
    assert err2.value.check == "tlog.checkpoint"
    assert f"root hash mismatch: expected {real_root} (signed checkpoint)" in str(err2.value)


def test_forged_checkpoint_signature_fails(good: dict[str, Any], production: TrustRoot) -> None:
    env = good["inclusionProof"]["checkpoint"]["envelope"]
    body, sigline = env.split("\n\n")
    name_part, b64sig = sigline.rstrip("\n").rsplit(" ", 1)
    good["inclusionProof"]["checkpoint"]["envelope"] = (
        f"{body}\n\n{name_part} {_flip_b64(b64sig, 20)}\n"
    )
    with pytest.raises(TlogVerificationError) as err:
        verify_entry(_parse(good), production, require_proof=True)
    assert err.value.check == "tlog.checkpoint"
    assert "does not verify with the https://rekor.sigstore.dev log key" in str(err.value)


def test_checkpoint_key_hint_of_another_key_fails(good: dict[str, Any], production: TrustRoot) -> None:
    env = good["inclusionProof"]["checkpoint"]["envelope"]
    body, sigline = env.split("\n\n")
    name_part, b64sig = sigline.rstrip("\n").rsplit(" ", 1)
    good["inclusionProof"]["checkpoint"]["envelope"] = f"{body}\n\n{name_part} {_flip_b64(b64sig, 0)}\n"
    with pytest.raises(TlogVerificationError) as err:
        verify_entry(_parse(good), production, require_proof=True)
    hint = base64.b64decode(good["logId"]["keyId"])[:4].hex()
    assert err.value.check == "tlog.checkpoint"
    assert f"no signature with key hint {hint}" in str(err.value)


def test_checkpoint_with_altered_tree_size_fails_signature(
    good: dict[str, Any], production: TrustRoot
) -> None:
    env = good["inclusionProof"]["checkpoint"]["envelope"]
    lines = env.split("\n")
    lines[1] = str(int(lines[1]) + 1)
    good["inclusionProof"]["checkpoint"]["envelope"] = "\n".join(lines)
    with pytest.raises(TlogVerificationError) as err:
        verify_checkpoint(_parse(good), production)
    assert err.value.check == "tlog.checkpoint"
    assert "does not verify" in str(err.value)


def test_forged_set_fails(good: dict[str, Any], production: TrustRoot) -> None:
    sig = good["inclusionPromise"]["signedEntryTimestamp"]
    good["inclusionPromise"]["signedEntryTimestamp"] = _flip_b64(sig, len(base64.b64decode(sig)) - 1)
    with pytest.raises(TlogVerificationError) as err:
        verify_entry(_parse(good), production, require_proof=True)
    assert err.value.check == "tlog.set"
    assert str(err.value).startswith("inclusion promise (SET) does not verify")


def test_forged_body_fails_proof_and_set(good: dict[str, Any], production: TrustRoot) -> None:
    good["canonicalizedBody"] = _flip_b64(good["canonicalizedBody"], 40)
    entry = _parse(good)
    with pytest.raises(TlogVerificationError) as err:
        verify_entry(entry, production, require_proof=True)
    assert err.value.check == "tlog.inclusion_proof"
    assert "root sha256 mismatch" in str(err.value)
    with pytest.raises(TlogVerificationError) as err2:
        verify_set(entry, production)
    assert err2.value.check == "tlog.set"
    assert hashlib.sha256(entry.canonicalized_body).hexdigest() in str(err2.value)


def test_forged_integrated_time_fails_set(good: dict[str, Any], production: TrustRoot) -> None:
    good["integratedTime"] = str(int(good["integratedTime"]) - 1)
    with pytest.raises(TlogVerificationError) as err:
        verify_entry(_parse(good), production, require_proof=True)
    assert err.value.check == "tlog.set"
    assert f"integratedTime {good['integratedTime']}" in str(err.value)


def test_forged_log_index_fails_set(good: dict[str, Any], production: TrustRoot) -> None:
    good["logIndex"] = str(int(good["logIndex"]) + 1)
    with pytest.raises(TlogVerificationError) as err:
        verify_entry(_parse(good), production, require_proof=True)
    assert err.value.check == "tlog.set"


def test_entry_from_unknown_log_is_refused(good: dict[str, Any], production: TrustRoot) -> None:
    good["logId"]["keyId"] = _flip_b64(good["logId"]["keyId"], 5)
    with pytest.raises(TlogVerificationError) as err:
        verify_entry(_parse(good), production, require_proof=True)
    assert err.value.check == "tlog.key"
    assert "is not a transparency log of the trusted root" in str(err.value)
    assert production.name in str(err.value)


def test_production_entry_against_staging_root_is_refused(
    good: dict[str, Any], staging: TrustRoot
) -> None:
    with pytest.raises(TlogVerificationError) as err:
        verify_entry(_parse(good), staging, require_proof=True)
    assert err.value.check == "tlog.key"
    assert "staging.trusted_root.json" in str(err.value)


def test_log_key_not_yet_valid_at_integrated_time_is_refused(
    interop_dir: Path, good: dict[str, Any]
) -> None:
    doc = json.loads((interop_dir / "_trusted_roots" / "production.trusted_root.json").read_text())
    for tl in doc["tlogs"]:
        tl["publicKey"]["validFor"]["start"] = "2099-01-01T00:00:00Z"
    root = TrustRoot.from_bytes(json.dumps(doc).encode(), name="late-root")
    with pytest.raises(TlogVerificationError) as err:
        verify_entry(_parse(good), root, require_proof=True)
    assert err.value.check == "tlog.key"
    assert "was not valid at integratedTime" in str(err.value)
    assert err.value.expected.startswith("2099-01-01")


def test_integrated_time_in_the_future_is_refused(good: dict[str, Any], production: TrustRoot) -> None:
    entry = _parse(good)
    when = datetime.fromtimestamp(entry.integrated_time or 0, UTC)
    with pytest.raises(TlogVerificationError) as err:
        verify_entry(entry, production, require_proof=True, now=when - timedelta(hours=1))
    assert err.value.check == "tlog.time"
    assert "is in the future" in str(err.value)
    # Within the skew it passes.
    verify_entry(entry, production, require_proof=True, now=when - timedelta(minutes=1))


def test_missing_proof_fails_when_required_and_set_alone_suffices_otherwise(
    good: dict[str, Any], production: TrustRoot
) -> None:
    del good["inclusionProof"]
    entry = _parse(good)
    with pytest.raises(TlogVerificationError) as err:
        verify_entry(entry, production, require_proof=True)
    assert err.value.check == "tlog.inclusion_proof"
    result = verify_entry(entry, production, require_proof=False)
    assert (result.proof, result.promise) == (False, True)


def test_entry_with_neither_proof_nor_promise_fails(good: dict[str, Any], production: TrustRoot) -> None:
    del good["inclusionProof"]
    del good["inclusionPromise"]
    with pytest.raises(TlogVerificationError) as err:
        verify_entry(_parse(good), production, require_proof=False)
    assert err.value.check == "tlog.entry"
    assert "neither an inclusion proof nor an inclusion promise" in str(err.value)


def test_proof_without_checkpoint_fails(good: dict[str, Any], production: TrustRoot) -> None:
    del good["inclusionProof"]["checkpoint"]
    with pytest.raises(TlogVerificationError) as err:
        verify_entry(_parse(good), production, require_proof=True)
    assert err.value.check == "tlog.checkpoint"
    assert "no checkpoint" in str(err.value)


def test_failed_check_maps_to_compromised_report_check(good: dict[str, Any], production: TrustRoot) -> None:
    good["inclusionPromise"]["signedEntryTimestamp"] = _flip_b64(
        good["inclusionPromise"]["signedEntryTimestamp"], 10
    )
    with pytest.raises(TlogVerificationError) as err:
        verify_entry(_parse(good), production, require_proof=True)
    check = err.value.to_check(evidence="bundle.json")
    assert (check.name, check.status, check.impact, check.evidence) == (
        "tlog.set",
        "fail",
        "compromised",
        "bundle.json",
    )


# --- the conformance suite's forged entries fail on the right check -----------------------------------

CONFORMANCE_FAILS = [
    ("conformance-checkpoint-bad-keyhint_fail", "tlog.checkpoint", "no signature with key hint"),
    ("conformance-checkpoint-wrong-roothash_fail", "tlog.checkpoint", "root hash mismatch"),
    ("conformance-invalid-checkpoint-signature_fail", "tlog.checkpoint", "does not verify"),
    ("conformance-set-invalid-signature_fail", "tlog.set", "does not verify"),
    ("conformance-inclusion-proof-corrupted-hash_fail", "tlog.inclusion_proof", "root sha256 mismatch"),
    ("conformance-bundle-from-wrong-instance_fail", "tlog.key", "not a transparency log"),
    ("sigstore-python-bundle-no-checkpoint", "tlog.checkpoint", "no checkpoint"),
]


@pytest.mark.parametrize(("case", "check", "text"), CONFORMANCE_FAILS)
def test_conformance_forged_entry_fails_on_the_right_check(
    interop_dir: Path, case: str, check: str, text: str
) -> None:
    entry = _parse(_raw_entry(interop_dir, case))
    with pytest.raises(TlogVerificationError) as err:
        verify_entry(entry, _root(interop_dir, case), require_proof=True)
    assert err.value.check == check
    assert text in str(err.value)


def test_negative_log_index_is_a_bundle_error_with_path(interop_dir: Path) -> None:
    raw = _raw_entry(interop_dir, "conformance-bundle-negative-log-index_fail")
    with pytest.raises(BundleError) as err:
        _parse(raw)
    assert err.value.path == f"{ENTRY_PATH}.logIndex"
    assert "'-1'" in err.value.message


# --- strict parsing -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mutate", "path", "text"),
    [
        (lambda e: e.update(extra=1), ENTRY_PATH, "unknown field 'extra'"),
        (lambda e: e.pop("logId"), f"{ENTRY_PATH}.logId", "required field is missing"),
        (lambda e: e.update(logIndex=True), f"{ENTRY_PATH}.logIndex", "non-negative integer"),
        (lambda e: e.update(logIndex="012"), f"{ENTRY_PATH}.logIndex", "decimal integer"),
        (lambda e: e.update(integratedTime="9" * 20), f"{ENTRY_PATH}.integratedTime", "decimal"),
        (lambda e: e.update(canonicalizedBody="not base64!"), f"{ENTRY_PATH}.canonicalizedBody", "base64"),
        (
            lambda e: e["inclusionProof"]["hashes"].__setitem__(2, "AAAA"),
            f"{ENTRY_PATH}.inclusionProof.hashes[2]",
            "expected 32 bytes",
        ),
        (
            lambda e: e["inclusionProof"].update(rootHash=5),
            f"{ENTRY_PATH}.inclusionProof.rootHash",
            "expected a base64 string",
        ),
        (
            lambda e: e["kindVersion"].update(kind=""),
            f"{ENTRY_PATH}.kindVersion.kind",
            "non-empty string",
        ),
        (lambda e: e.update(inclusionPromise=[]), f"{ENTRY_PATH}.inclusionPromise", "JSON object"),
    ],
)
def test_malformed_entry_is_a_bundle_error_naming_the_json_path(
    good: dict[str, Any], mutate: Any, path: str, text: str
) -> None:
    mutate(good)
    with pytest.raises(BundleError) as err:
        _parse(good)
    assert err.value.path == path
    assert text in err.value.message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("origin\n1\nAAAA\n\n\n", "malformed signature line"),
        ("origin\n1\nAAAA\n— name AAAAAAAA\n", "exactly one blank line"),
        ("origin\n1\nAAAA\n\n— name AAAAAAAA", "does not end with a newline"),
        ("origin\n1\nAAAA\n\n— name AAAA\n", "too short"),
        ("origin\nx\nAAAA\n\n— name AAAAAAAA\n", "not a decimal integer"),
        ("origin\n1\n\n\n— name AAAAAAAA\n", "malformed signature line ''"),
        ("\n1\nAAAA\n\n— name AAAAAAAA\n", "empty origin"),
        ("origin\n1\n\n— name AAAAAAAA\n", "lines, expected origin, size and root hash"),
        ("origin\n1\nAAAA\n\n- name AAAAAAAA\n", "malformed signature line"),
    ],
)
def test_malformed_checkpoint_is_refused(text: str, message: str) -> None:
    with pytest.raises(TlogVerificationError) as err:
        parse_checkpoint(text)
    assert err.value.check == "tlog.checkpoint"
    assert message in str(err.value)


# --- Merkle inclusion against an independent RFC 6962 construction ----------------------------------


def _mth(leaves: list[bytes]) -> bytes:
    """RFC 6962 §2.1 Merkle Tree Hash, by the definition."""
    n = len(leaves)
    if n == 1:
        return leaf_hash(leaves[0])
    k = 1
    while k * 2 < n:
        k *= 2
    return hashlib.sha256(b"\x01" + _mth(leaves[:k]) + _mth(leaves[k:])).digest()


def _path(m: int, leaves: list[bytes]) -> list[bytes]:
    """RFC 6962 §2.1.1 PATH(m, D[n]), bottom-up."""
    n = len(leaves)
    if n == 1:
        return []
    k = 1
    while k * 2 < n:
        k *= 2
    if m < k:
        return _path(m, leaves[:k]) + [_mth(leaves[k:])]
    return _path(m - k, leaves[k:]) + [_mth(leaves[:k])]


def test_inclusion_proofs_verify_for_every_leaf_of_trees_up_to_33() -> None:
    for n in range(1, 34):
        leaves = [f"leaf {i}".encode() for i in range(n)]
        root = _mth(leaves)
        for m in range(n):
            proof = tuple(_path(m, leaves))
            assert root_from_inclusion_proof(m, n, leaf_hash(leaves[m]), proof) == root
            if n > 1:
                # The same proof must not prove another leaf or the same leaf at another index.
                other = (m + 1) % n
                try:
                    got = root_from_inclusion_proof(other, n, leaf_hash(leaves[m]), proof)
                except TlogVerificationError:
                    continue
                assert got != root


def test_proof_with_extra_or_missing_hash_is_refused() -> None:
    leaves = [bytes([i]) for i in range(7)]
    proof = tuple(_path(3, leaves))
    with pytest.raises(TlogVerificationError, match="too many hashes"):
        root_from_inclusion_proof(3, 7, leaf_hash(leaves[3]), proof + (b"\x00" * 32,))
    with pytest.raises(TlogVerificationError, match="too few hashes"):
        root_from_inclusion_proof(3, 7, leaf_hash(leaves[3]), proof[:-1])
    with pytest.raises(TlogVerificationError, match="not inside a tree of size 7"):
        root_from_inclusion_proof(7, 7, leaf_hash(leaves[3]), proof)


def test_verify_inclusion_proof_without_proof_fails(good: dict[str, Any]) -> None:
    del good["inclusionProof"]
    with pytest.raises(TlogVerificationError) as err:
        verify_inclusion_proof(_parse(good))
    assert err.value.check == "tlog.inclusion_proof"
