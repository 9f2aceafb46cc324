"""fulcio.py: chain at the signing time, CA validity window, embedded SCT (RFC 6962 §3.2), Fulcio profile."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from cryptography import x509

from atip_trust._base.record import replace
from atip_trust.signature.fulcio import (
    CertificateVerificationError,
    certificate_facts,
    verify_chain_at,
    verify_profile,
    verify_sct,
    verify_signing_certificate,
)
from atip_trust.signature.trustroot import TrustRoot

import testsigstore

ID = "https://github.com/atip-test/tool/.github/workflows/release.yml@refs/tags/v1.0.0"
ISSUER = "https://token.actions.githubusercontent.com"
T = datetime.fromtimestamp(testsigstore.DEFAULT_INTEGRATED_TIME, tz=timezone.utc)


@pytest.fixture(scope="session")
def ts() -> testsigstore.TestSigstore:
    return testsigstore.TestSigstore(seed=43)


@pytest.fixture(scope="session")
def root(ts: testsigstore.TestSigstore, tmp_path_factory: pytest.TempPathFactory) -> TrustRoot:
    return TrustRoot.from_file(ts.write_trusted_root(tmp_path_factory.mktemp("fulcio") / "trusted_root.json"))


def leaf(ts: testsigstore.TestSigstore, **kw: object) -> x509.Certificate:
    cert, _ = ts.issue_certificate(ID, ISSUER, **kw)  # type: ignore[arg-type]
    return cert


def test_good_leaf_verifies_at_the_integrated_time(ts: testsigstore.TestSigstore, root: TrustRoot) -> None:
    chain = verify_signing_certificate(leaf(ts), [], root, [T])
    assert chain[0].subject == ts.intermediate_cert.subject
    # Every certificate of the CA's certChain is an anchor (as in sigstore-python), so the path may end
    # at the intermediate.
    assert chain[-1] in (ts.intermediate_cert, ts.root_cert)


def test_leaf_is_not_valid_after_its_ten_minutes(ts: testsigstore.TestSigstore, root: TrustRoot) -> None:
    with pytest.raises(CertificateVerificationError) as info:
        verify_chain_at(leaf(ts), [], root, T + timedelta(hours=1))
    assert info.value.check == "certificate.chain"


def test_leaf_from_a_ca_outside_the_root_fails(ts: testsigstore.TestSigstore, root: TrustRoot) -> None:
    with pytest.raises(CertificateVerificationError) as info:
        verify_chain_at(leaf(ts, untrusted_ca=True), [], root, T)
    assert root.name in info.value.message


def test_bundle_supplied_intermediate_is_not_an_anchor(ts: testsigstore.TestSigstore, root: TrustRoot) -> None:
    # A v0.1 chain may carry the rogue intermediate: it is a hint, never a trust anchor.
    with pytest.raises(CertificateVerificationError):
        verify_chain_at(leaf(ts, untrusted_ca=True), [ts.rogue_intermediate_cert], root, T)


def test_signing_time_outside_the_ca_validity_window_fails(ts: testsigstore.TestSigstore, root: TrustRoot) -> None:
    narrowed = replace(
        root,
        fulcio=tuple(replace(ca, valid_until=T - timedelta(days=1)) for ca in root.fulcio),
    )
    with pytest.raises(CertificateVerificationError) as info:
        verify_chain_at(leaf(ts), [], narrowed, T)
    assert "outside that CA's validity" in info.value.message


def test_bad_sct_signature_fails(ts: testsigstore.TestSigstore, root: TrustRoot) -> None:
    cert = leaf(ts, bad_sct=True)
    chain = verify_chain_at(cert, [], root, T)
    with pytest.raises(CertificateVerificationError) as info:
        verify_sct(cert, chain, root)
    assert info.value.check == "certificate.sct"


def test_missing_sct_fails(ts: testsigstore.TestSigstore, root: TrustRoot) -> None:
    cert = leaf(ts, sct=False)
    with pytest.raises(CertificateVerificationError) as info:
        verify_signing_certificate(cert, [], root, [T])
    assert info.value.check == "certificate.sct" and info.value.actual == 0


def test_sct_from_a_log_not_in_the_root_fails(ts: testsigstore.TestSigstore, root: TrustRoot) -> None:
    no_ct = replace(root, ctlogs=())
    cert = leaf(ts)
    chain = verify_chain_at(cert, [], root, T)
    with pytest.raises(CertificateVerificationError) as info:
        verify_sct(cert, chain, no_ct)
    assert "not in" in info.value.message


@pytest.mark.parametrize("knob", ["omit_key_usage", "omit_eku"])
def test_profile_without_key_usage_or_eku_fails_closed(ts: testsigstore.TestSigstore, knob: str) -> None:
    # sigstore-python lets ExtensionNotFound escape here (docs/sigstore.md); we map it to a failed check.
    with pytest.raises(CertificateVerificationError) as info:
        verify_profile(leaf(ts, **{knob: True}))
    assert info.value.check == "certificate.profile"


def test_no_verified_time_is_refused(ts: testsigstore.TestSigstore, root: TrustRoot) -> None:
    with pytest.raises(CertificateVerificationError):
        verify_signing_certificate(leaf(ts), [], root, [])


def test_facts_read_identity_issuer_and_extensions(ts: testsigstore.TestSigstore) -> None:
    cert = leaf(ts, extensions={"source_repository_uri": "https://github.com/atip-test/tool",
                                "runner_environment": "github-hosted"})
    facts = certificate_facts(cert)
    assert facts.identity == ID and facts.issuer == ISSUER
    assert facts.extensions["runner_environment"] == "github-hosted"


def test_real_sigstore_js_certificate_chain_and_sct_verify_at_its_time(interop_dir: Path) -> None:
    import base64

    doc = json.loads((interop_dir / "cli-sigstore-js-2.1.0-bundle-v0.3" / "sigstore-js-2.1.0-bundle.json").read_text())
    cert = x509.load_der_x509_certificate(base64.b64decode(doc["verificationMaterial"]["certificate"]["rawBytes"]))
    when = datetime.fromtimestamp(int(doc["verificationMaterial"]["tlogEntries"][0]["integratedTime"]), tz=timezone.utc)
    prod = TrustRoot.embedded("production")
    chain = verify_signing_certificate(cert, [], prod, [when])
    assert chain
    with pytest.raises(CertificateVerificationError):
        verify_signing_certificate(cert, [], TrustRoot.embedded("staging"), [when])
