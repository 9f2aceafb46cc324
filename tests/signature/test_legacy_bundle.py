"""legacy_bundle.py: intoto/0.0.2 and promise-only v0.1 DSSE bundles, verified in full without sigstore-python.

Self-minted bundles from the local test Sigstore (one mutation each) and the real interop bundles with
``intoto/0.0.2`` entries, whose producers' declared outcome is the target.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from atip_trust.errors import BundleError
from atip_trust.signature.fulcio import CertificateVerificationError
from atip_trust.signature.legacy_bundle import (
    VERIFICATION_ERRORS,
    LegacyVerificationError,
    is_legacy,
    verify_legacy_dsse,
    verify_legacy_dsse_detailed,
)
from atip_trust.signature.tlog import TlogVerificationError
from atip_trust.signature.trustroot import TrustRoot

import testsigstore

ID = "https://github.com/atip-test/tool/.github/workflows/release.yml@refs/tags/v1.0.0"
ISSUER = "https://token.actions.githubusercontent.com"
STATEMENT = testsigstore.slsa_v1_statement("tool", "ab" * 32)


@pytest.fixture(scope="session")
def ts() -> testsigstore.TestSigstore:
    return testsigstore.TestSigstore(seed=41)


@pytest.fixture(scope="session")
def root(ts: testsigstore.TestSigstore, tmp_path_factory: pytest.TempPathFactory) -> TrustRoot:
    path = ts.write_trusted_root(tmp_path_factory.mktemp("legacy") / "trusted_root.json")
    return TrustRoot.from_file(path)


def _mint(ts: testsigstore.TestSigstore, **kw: Any) -> dict[str, Any]:
    kw.setdefault("identity", ID)
    kw.setdefault("issuer", ISSUER)
    kw.setdefault("entry_kind", "intoto")
    return ts.sign_dsse(STATEMENT, **kw)


def _fails(doc: dict[str, Any], root: TrustRoot) -> Exception:
    with pytest.raises(VERIFICATION_ERRORS) as info:
        verify_legacy_dsse(doc, root)
    return info.value


# -- good bundles --------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["0.1", "0.2", "0.3"])
def test_intoto_entry_verifies_and_returns_payload_and_certificate(
    ts: testsigstore.TestSigstore, root: TrustRoot, version: str
) -> None:
    doc = _mint(ts, bundle_version=version)
    assert is_legacy(doc)
    payload_type, payload, cert = verify_legacy_dsse(doc, root)
    assert payload_type == "application/vnd.in-toto+json"
    assert json.loads(payload) == STATEMENT
    assert isinstance(cert, x509.Certificate)
    assert cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.UniformResourceIdentifier
    ) == [ID]


def test_promise_only_v01_dsse_entry_verifies(ts: testsigstore.TestSigstore, root: TrustRoot) -> None:
    doc = _mint(ts, entry_kind="dsse", bundle_version="0.1", inclusion_proof=False)
    assert is_legacy(doc)
    result = verify_legacy_dsse_detailed(doc, root)
    assert result.entry_kind == "dsse/0.0.1"
    names = [c.name for c in result.checks]
    assert "tlog.set" in names and "tlog.inclusion_proof" not in names


def test_promise_only_entry_in_v02_bundle_is_refused(ts: testsigstore.TestSigstore, root: TrustRoot) -> None:
    # The bundle spec requires an inclusion proof from v0.2 on (conformance intoto-missing-inclusion-proof).
    doc = _mint(ts, bundle_version="0.2", inclusion_proof=False)
    err = _fails(doc, root)
    assert isinstance(err, TlogVerificationError) and err.check == "tlog.inclusion_proof"


def test_proof_without_promise_has_no_verified_time(ts: testsigstore.TestSigstore, root: TrustRoot) -> None:
    # integratedTime is only signed by the SET; without it and without a TSA there is no signing time.
    doc = _mint(ts, inclusion_promise=False)
    err = _fails(doc, root)
    assert isinstance(err, LegacyVerificationError) and err.check == "timestamp"


# -- one mutation each ---------------------------------------------------------------------------------

EXPECTED_FAILURE = {
    "signature": (LegacyVerificationError, "signature"),
    "certificate": (CertificateVerificationError, "certificate.chain"),
    "sct": (CertificateVerificationError, "certificate.sct"),
    "proof_hash": (TlogVerificationError, "tlog.inclusion_proof"),
    "checkpoint": (TlogVerificationError, "tlog.checkpoint"),
    "set": (TlogVerificationError, "tlog.set"),
    "integrated_time": (CertificateVerificationError, "certificate.chain"),
    "log_key": (TlogVerificationError, None),
    "body": (LegacyVerificationError, "tlog.body"),
    "payload_hash": (LegacyVerificationError, "tlog.body"),
}


@pytest.mark.parametrize("kind", ["intoto", "dsse"])
@pytest.mark.parametrize("mutation", sorted(EXPECTED_FAILURE))
def test_every_bad_variant_fails_with_the_right_check(
    ts: testsigstore.TestSigstore, root: TrustRoot, kind: str, mutation: str
) -> None:
    version = "0.3" if kind == "intoto" else "0.1"
    doc = _mint(ts, entry_kind=kind, bundle_version=version, mutate=mutation)
    err = _fails(doc, root)
    cls, check = EXPECTED_FAILURE[mutation]
    assert isinstance(err, cls), f"{mutation}: {type(err).__name__}: {err}"
    if check is not None:
        assert err.check == check, f"{mutation}: {err.check}: {err}"


def test_intoto_entry_whose_payload_hash_differs_from_the_envelope_is_tampering(
    ts: testsigstore.TestSigstore, root: TrustRoot
) -> None:
    doc = _mint(ts, mutate="payload_hash")
    err = _fails(doc, root)
    assert isinstance(err, LegacyVerificationError)
    check = err.to_check()
    assert check.impact == "compromised"
    assert "payload hash" in check.message
    assert check.expected != check.actual


def test_set_signed_by_another_key_fails(ts: testsigstore.TestSigstore, root: TrustRoot) -> None:
    # SET (and checkpoint) signed by a log key that is not in the trusted root, promise-only v0.1.
    doc = _mint(ts, entry_kind="dsse", bundle_version="0.1", inclusion_proof=False, mutate="log_key")
    err = _fails(doc, root)
    assert isinstance(err, TlogVerificationError)
    assert err.check == "tlog.set"


def test_swapped_envelope_payload_fails(ts: testsigstore.TestSigstore, root: TrustRoot) -> None:
    doc = _mint(ts)
    other = _mint(ts)
    other_stmt = testsigstore.slsa_v1_statement("evil", "cd" * 32)
    evil = ts.sign_dsse(other_stmt, identity=ID, issuer=ISSUER, entry_kind="intoto")
    bad = copy.deepcopy(doc)
    bad["dsseEnvelope"]["payload"] = evil["dsseEnvelope"]["payload"]
    err = _fails(bad, root)
    assert isinstance(err, LegacyVerificationError) and err.check == "signature"
    assert other  # a second good bundle from the same log still verifies independently
    verify_legacy_dsse(other, root)


def test_bundle_from_another_instance_fails(root: TrustRoot) -> None:
    stranger = testsigstore.TestSigstore(seed=99, name="other-sigstore")
    doc = _mint(stranger)
    err = _fails(doc, root)
    assert isinstance(err, (TlogVerificationError, CertificateVerificationError))


def test_two_signatures_are_refused_as_malformed(ts: testsigstore.TestSigstore, root: TrustRoot) -> None:
    doc = _mint(ts)
    doc["dsseEnvelope"]["signatures"].append(doc["dsseEnvelope"]["signatures"][0])
    with pytest.raises(BundleError) as info:
        verify_legacy_dsse(doc, root)
    assert info.value.path == "$.dsseEnvelope.signatures"


def test_not_a_bundle_is_malformed_not_a_traceback(root: TrustRoot) -> None:
    for doc in ([], {"mediaType": "x"}, {"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json"}):
        with pytest.raises(BundleError):
            verify_legacy_dsse(doc, root)


# -- interop: the real intoto/0.0.2 bundles ------------------------------------------------------------


def _interop_rows(interop: Path) -> list[dict[str, Any]]:
    rows = json.loads((interop / "index.json").read_text())
    return [r for r in rows if "intoto/0.0.2" in r["tlog"]]


def _load(interop: Path, row: dict[str, Any]) -> tuple[dict[str, Any], TrustRoot, str]:
    case, _, idx = row["case"].partition("#")
    folder = interop / case
    text = (folder / row["bundle"]).read_text()
    doc = json.loads(text.splitlines()[int(idx or 0)]) if row["bundle"].endswith(".jsonl") else json.loads(text)
    tr = row["trusted_root"]
    root = TrustRoot.embedded(tr) if tr in ("production", "staging") else TrustRoot.from_file(folder / tr)
    declared = json.loads((folder / "case.json").read_text())["source_declared_expectation"]["expects"]
    return doc, root, declared


def test_interop_intoto_bundles_agree_with_their_declared_outcome(interop_dir: Path) -> None:
    rows = _interop_rows(interop_dir)
    assert len(rows) >= 12
    agree, verified, problems = 0, 0, []
    for row in rows:
        doc, root, declared = _load(interop_dir, row)
        try:
            verify_legacy_dsse(doc, root)
            outcome = "verifies"
        except (*VERIFICATION_ERRORS, BundleError):
            outcome = "fails"
        if (outcome == "verifies") == (declared == "verifies"):
            agree += 1
            verified += outcome == "verifies"
        else:
            problems.append(f"{row['case']}: declared {declared!r}, got {outcome}")
    assert not problems, problems
    assert agree == len(rows)
    assert verified == 5


def test_interop_intoto_failures_fail_for_their_stated_reason(interop_dir: Path) -> None:
    want = {
        "cli-sigstoreBundle-invalid-signature": "signature",
        "cli-sigstoreBundle-invalid-mismatched-signatures": "tlog.body",
        "conformance-intoto-log-entry-mismatch_fail": "tlog.body",
        "conformance-intoto-missing-inclusion-proof_fail": "tlog.inclusion_proof",
        "conformance-intoto-set-outside-signing-cert-validity_fail": "certificate.chain",
        "conformance-intoto-tsa-timestamp-outside-cert-validity_fail": "certificate.chain",
        "conformance-intoto-expired-certificate_fail": "certificate.chain",
    }
    rows = {r["case"]: r for r in _interop_rows(interop_dir)}
    for case, check in want.items():
        doc, root, _ = _load(interop_dir, rows[case])
        with pytest.raises(VERIFICATION_ERRORS) as info:
            verify_legacy_dsse(doc, root)
        assert info.value.check == check, f"{case}: {info.value.check}: {info.value}"


# -- RFC 3161 timestamps on intoto entries: the TSA window is closed -----------------------------------


def _with_tsa_timestamp(
    ts: testsigstore.TestSigstore, tmp_path: Path, tsa_end: Any
) -> tuple[dict[str, Any], TrustRoot]:
    """An intoto/0.0.2 bundle that also carries a signed timestamp over its signature, and a root whose
    TSA validity ends at ``tsa_end``."""
    import base64
    from datetime import datetime, timezone

    doc = _mint(ts, bundle_version="0.3")
    sig = base64.b64decode(doc["dsseEnvelope"]["signatures"][0]["sig"])
    gen_time = datetime.fromtimestamp(testsigstore.DEFAULT_INTEGRATED_TIME, tz=timezone.utc)
    tsr = ts.tsa.timestamp(sig, gen_time)
    doc["verificationMaterial"]["timestampVerificationData"] = {
        "rfc3161Timestamps": [{"signedTimestamp": base64.b64encode(tsr).decode()}]
    }
    trusted = ts.trusted_root()
    trusted["timestampAuthorities"] = [ts.tsa.trusted_root_entry(end=tsa_end(gen_time))]
    path = tmp_path / "trusted_root.json"
    path.write_text(json.dumps(trusted))
    return doc, TrustRoot.from_file(path)


def test_intoto_timestamp_equal_to_tsa_validity_end_verifies(ts: testsigstore.TestSigstore, tmp_path: Path) -> None:
    doc, root = _with_tsa_timestamp(ts, tmp_path, lambda gen: gen)
    verify_legacy_dsse(doc, root)


def test_intoto_timestamp_one_microsecond_after_tsa_validity_end_is_refused(
    ts: testsigstore.TestSigstore, tmp_path: Path
) -> None:
    from datetime import timedelta

    doc, root = _with_tsa_timestamp(ts, tmp_path, lambda gen: gen - timedelta(microseconds=1))
    err = _fails(doc, root)
    assert "outside the TSA's validity" in str(err)
