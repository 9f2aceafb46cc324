"""Fulcio signing certificates checked with ``cryptography`` alone: chain at a given time, embedded SCT,
and the Sigstore X.509 profile.

sigstore-python does these checks only inside ``Verifier`` (steps 1–3 of ``_verify_common_signing_cert``)
and only for the entry kinds it supports; ``legacy_bundle.py`` needs them for the ones it refuses. The
steps, in order:

1. chain: a ``cryptography.x509.verification`` client verifier over a store of one trusted-root CA's
   certificates (every certificate in ``certChain`` is an anchor, as in sigstore-python), validated *at
   the signing time* (integrated time or TSA time), not now. The CA's ``validFor`` window must contain
   that time (sigstore-go enforces it; the conformance case ``intoto-expired-certificate`` expects it).
   Fulcio leaves carry code-signing, not client-auth, EKU: only the EKU rule is relaxed, as in
   sigstore-python's ``_verify_chain_at_time``.
2. SCT (RFC 6962 §3.2): exactly one embedded SCT; the digitally-signed struct for a precertificate entry
   (issuer key hash = sha256 of the issuing CA's SubjectPublicKeyInfo DER, the TBS without the SCT
   extension) verified with the CT log key from ``TrustRoot.ctlogs`` whose key id equals the SCT's log id
   (RFC 6962 §3.2 ``LogID``; sigstore-python tries any key, docs/sigstore.md "SCT").
3. profile: Key Usage digitalSignature and EKU codeSigning (Fulcio certificate profile).

Fulcio extensions (identity, issuer, GitHub claims) are read by ``identity.CertificateFacts``; this module
re-exports ``certificate_facts`` for callers that only hold a certificate.

A failed check raises ``CertificateVerificationError`` (a verification outcome, not bad input).
"""

from __future__ import annotations

import hashlib
import struct
from datetime import datetime, timezone

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509.certificate_transparency import (
    LogEntryType,
    SignedCertificateTimestamp,
)
from cryptography.x509.oid import ExtendedKeyUsageOID, PublicKeyAlgorithmOID
from cryptography.x509.verification import (
    Criticality,
    ExtensionPolicy,
    PolicyBuilder,
    Store,
    VerificationError,
)

from atip_trust.facts.report import CheckFailure
from atip_trust.signature.algorithms import SCT_SCHEMES, verify_signature
from atip_trust.signature.identity import CertificateFacts
from atip_trust.signature.trustroot import CertificateAuthority, TrustRoot


class CertificateVerificationError(CheckFailure):
    """A signing certificate failed a check; ``check`` is ``certificate.chain``, ``certificate.sct``
    or ``certificate.profile``; the message names expected and actual."""

    TAMPER_CHECKS = frozenset()  # a bad chain or SCT cannot vouch; it proves no tampering

def certificate_facts(cert: x509.Certificate) -> CertificateFacts:
    """SAN identity, OIDC issuer (.1.8, else .1.1) and Fulcio extensions, via identity.py."""
    return CertificateFacts.from_certificate(cert)


def _utc(when: datetime) -> datetime:
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def _ca_valid_at(ca: CertificateAuthority, when: datetime) -> bool:
    if ca.valid_from is not None and when < ca.valid_from:
        return False
    if ca.valid_until is not None and when > ca.valid_until:
        return False
    return True


def _window(ca: CertificateAuthority) -> str:
    start = ca.valid_from.isoformat() if ca.valid_from else "-inf"
    end = ca.valid_until.isoformat() if ca.valid_until else "+inf"
    return f"{start}..{end}"


# -- (1) chain ----------------------------------------------------------------------------------------


def verify_chain_at(
    leaf: x509.Certificate,
    intermediates: list[x509.Certificate],
    trust_root: TrustRoot,
    when: datetime,
) -> list[x509.Certificate]:
    """Build and verify the chain from ``leaf`` to a Fulcio CA of ``trust_root``, valid at ``when``.

    Returns the chain above the leaf (issuer first, anchor last). ``intermediates`` are untrusted
    hints from the bundle (v0.1/v0.2 ``x509CertificateChain``); anchors come only from the trusted root.
    """
    when = _utc(when)
    if not trust_root.fulcio:
        raise CertificateVerificationError(
            f"trusted root {trust_root.name} has no certificate authorities",
            check="certificate.chain",
            expected="a Fulcio CA",
            actual=None,
        )
    # Only the EKU validator is relaxed (Fulcio leaves carry codeSigning, checked in step 3).
    ca_policy = ExtensionPolicy.webpki_defaults_ca().may_be_present(
        x509.ExtendedKeyUsage, Criticality.NON_CRITICAL, None
    )
    ee_policy = ExtensionPolicy.webpki_defaults_ee().may_be_present(
        x509.ExtendedKeyUsage, Criticality.NON_CRITICAL, None
    )
    errors: list[str] = []
    out_of_window: list[str] = []
    for ca in trust_root.fulcio:
        if not ca.chain:
            continue
        try:
            verifier = (
                PolicyBuilder()
                .store(Store(list(ca.chain)))
                .time(when)
                .extension_policies(ca_policy=ca_policy, ee_policy=ee_policy)
                .build_client_verifier()
            )
            verified = verifier.verify(leaf, intermediates)
        except (VerificationError, ValueError, TypeError) as err:
            errors.append(f"{ca.uri or 'CA'}: {err}")
            continue
        except Exception as err:  # noqa: BLE001 - unknown extension shapes; fail closed, never a traceback
            errors.append(f"{ca.uri or 'CA'}: {type(err).__name__}: {err}")
            continue
        if not _ca_valid_at(ca, when):
            out_of_window.append(f"{ca.uri or 'CA'} valid {_window(ca)}")
            continue
        return list(verified.chain[1:])
    if out_of_window:
        raise CertificateVerificationError(
            f"the certificate chains to a CA of {trust_root.name}, but the signing time "
            f"{when.isoformat()} is outside that CA's validity in the trusted root",
            check="certificate.chain",
            expected="; ".join(out_of_window),
            actual=when.isoformat(),
        )
    raise CertificateVerificationError(
        f"the signing certificate does not chain to a certificate authority of {trust_root.name} "
        f"at {when.isoformat()}: {'; '.join(errors) or 'no CA'}",
        check="certificate.chain",
        expected=trust_root.name,
        actual=leaf.issuer.rfc4514_string(),
    )


# -- (2) SCT ------------------------------------------------------------------------------------------


def _only_sct(cert: x509.Certificate) -> SignedCertificateTimestamp:
    try:
        scts = cert.extensions.get_extension_for_class(
            x509.PrecertificateSignedCertificateTimestamps
        ).value
    except x509.ExtensionNotFound:
        raise CertificateVerificationError(
            "the signing certificate has no embedded SCT",
            check="certificate.sct",
            expected="one SCT",
            actual=0,
        ) from None
    except ValueError as err:
        raise CertificateVerificationError(
            f"the SCT extension cannot be parsed: {err}",
            check="certificate.sct",
            expected="one SCT",
            actual="unparseable",
        ) from err
    if len(scts) != 1:
        raise CertificateVerificationError(
            f"expected exactly one SCT, found {len(scts)}",
            check="certificate.sct",
            expected=1,
            actual=len(scts),
        )
    sct: SignedCertificateTimestamp = scts[0]
    return sct


def _issuing_ca(chain: list[x509.Certificate]) -> x509.Certificate:
    # A CA with the CT precertificate-signing EKU signs precertificates on behalf of the real issuer
    # (RFC 6962 §3.1); the issuer key hash then names the next certificate up.
    issuer = chain[0]
    try:
        eku = issuer.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        if ExtendedKeyUsageOID.CERTIFICATE_TRANSPARENCY in eku and len(chain) > 1:
            issuer = chain[1]
    except x509.ExtensionNotFound:
        pass
    return issuer


def sct_signed_data(
    sct: SignedCertificateTimestamp, leaf: x509.Certificate, issuer: x509.Certificate
) -> bytes:
    """RFC 6962 §3.2 ``digitally-signed`` struct for an SCT over ``leaf`` (x509 or precert entry)."""
    if sct.entry_type == LogEntryType.PRE_CERTIFICATE:
        spki = issuer.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        body = leaf.tbs_precertificate_bytes
        signed_entry = hashlib.sha256(spki).digest() + len(body).to_bytes(3, "big") + body
    elif sct.entry_type == LogEntryType.X509_CERTIFICATE:
        der = leaf.public_bytes(serialization.Encoding.DER)
        signed_entry = len(der).to_bytes(3, "big") + der
    else:  # pragma: no cover - cryptography knows only these two
        raise CertificateVerificationError(
            f"unknown SCT entry type {sct.entry_type!r}", check="certificate.sct"
        )
    if len(signed_entry) >= 1 << 27:
        raise CertificateVerificationError("certificate too large for an SCT", check="certificate.sct")
    ts = _utc(sct.timestamp)
    millis = int(ts.timestamp() * 1000)
    ext = sct.extension_bytes
    return (
        struct.pack("!BBQH", sct.version.value, 0, millis, sct.entry_type.value)
        + signed_entry
        + struct.pack("!H", len(ext))
        + ext
    )


def verify_sct(leaf: x509.Certificate, chain: list[x509.Certificate], trust_root: TrustRoot) -> None:
    """Verify the leaf's one embedded SCT with the CT log key named by its log id."""
    sct = _only_sct(leaf)
    if not chain:
        raise CertificateVerificationError(
            "no issuing CA to compute the SCT issuer key hash", check="certificate.sct"
        )
    if not isinstance(sct.signature_hash_algorithm, hashes.SHA256):
        raise CertificateVerificationError(
            "SCT hash algorithm must be sha256",
            check="certificate.sct",
            expected="sha256",
            actual=getattr(sct.signature_hash_algorithm, "name", "?"),
        )
    log_id = sct.log_id
    keys = [k for k in trust_root.ctlogs if k.key_id == log_id]
    if not keys:
        raise CertificateVerificationError(
            f"the SCT's CT log {log_id.hex()} is not in {trust_root.name}",
            check="certificate.sct",
            expected=[k.key_id.hex() for k in trust_root.ctlogs],
            actual=log_id.hex(),
        )
    data = sct_signed_data(sct, leaf, _issuing_ca(chain))
    for key in keys:
        if verify_signature(key.public_key, sct.signature, data, SCT_SCHEMES) is None:
            continue
        if not key.valid_at(_utc(sct.timestamp)):
            raise CertificateVerificationError(
                f"CT log key {log_id.hex()} was not valid at the SCT time {sct.timestamp.isoformat()}",
                check="certificate.sct",
                expected=f"{key.valid_from}..{key.valid_until}",
                actual=_utc(sct.timestamp).isoformat(),
            )
        return
    raise CertificateVerificationError(
        f"the SCT signature does not verify with CT log key {log_id.hex()}",
        check="certificate.sct",
        expected="valid SCT signature",
        actual="invalid",
    )


# -- (3) profile --------------------------------------------------------------------------------------


def verify_profile(leaf: x509.Certificate) -> None:
    """Key Usage digitalSignature and EKU codeSigning (Fulcio certificate profile)."""
    try:
        ku = leaf.extensions.get_extension_for_class(x509.KeyUsage).value
        eku = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound as err:
        raise CertificateVerificationError(
            f"the signing certificate lacks {err.oid.dotted_string}",
            check="certificate.profile",
            expected="KeyUsage digitalSignature and EKU codeSigning",
            actual="missing",
        ) from None
    if not ku.digital_signature:
        raise CertificateVerificationError(
            "Key Usage lacks digitalSignature", check="certificate.profile",
            expected="digitalSignature", actual="absent",
        )
    if ExtendedKeyUsageOID.CODE_SIGNING not in eku:
        raise CertificateVerificationError(
            "Extended Key Usage lacks codeSigning", check="certificate.profile",
            expected="codeSigning", actual=[o.dotted_string for o in eku],
        )


_KEY_NAMES = {PublicKeyAlgorithmOID.RSASSA_PSS: "RSA-PSS (id-RSASSA-PSS)",
              PublicKeyAlgorithmOID.RSAES_PKCS1_v1_5: "RSA", PublicKeyAlgorithmOID.ED25519: "Ed25519",
              PublicKeyAlgorithmOID.EC_PUBLIC_KEY: "ECDSA"}


def verify_key_profile(leaf: x509.Certificate, *, dsse: bool) -> None:
    """The signing certificate's key is one whose signatures this route can check: ECDSA always; RSA
    (PKCS#1 v1.5) and Ed25519 only for DSSE envelopes, whose PAE our own code verifies (``dsse``:
    ``LOG_SCHEMES``); message signatures are checked over a prehashed digest with ECDSA, as sigstore-python
    does (it casts the key to an EC key). Never an RSA-PSS key (RFC 4055 §1.2: an id-RSASSA-PSS key makes
    PSS signatures only, and no Sigstore signature format is PSS). Read from the certificate's algorithm
    identifier, before the key is loaded. ``CertificateVerificationError`` (``certificate.profile``,
    unverified: not tampering) otherwise."""
    oid = leaf.public_key_algorithm_oid
    allowed = {PublicKeyAlgorithmOID.EC_PUBLIC_KEY}
    if dsse:
        allowed |= {PublicKeyAlgorithmOID.RSAES_PKCS1_v1_5, PublicKeyAlgorithmOID.ED25519}
    if oid in allowed:
        return
    name = _KEY_NAMES.get(oid, oid.dotted_string)
    why = ("an RSA-PSS key may make only PSS signatures, and Sigstore's RSA signatures are PKCS#1 v1.5"
           if oid == PublicKeyAlgorithmOID.RSASSA_PSS else "no signature with such a key is checked here")
    raise CertificateVerificationError(
        f"unsupported key or signature profile: the signing certificate's key is {name} ({why})",
        check="certificate.profile", expected="ECDSA" + (", RSA (PKCS#1 v1.5) or Ed25519" if dsse else ""),
        actual=name)


def verify_signing_certificate(
    leaf: x509.Certificate,
    intermediates: list[x509.Certificate],
    trust_root: TrustRoot,
    times: list[datetime],
    *,
    require_sct: bool = True,
    dsse: bool = False,
) -> list[x509.Certificate]:
    """Steps 1–3 for every verified signing time in ``times``; returns the chain above the leaf.

    ``require_sct=False`` only for an instance whose trusted root lists no CT log (GitHub's: its Fulcio
    embeds no SCT and gh verifies its bundles without one, sigstore-go ``WithSignedTimestamps`` alone):
    there is no key an SCT could be checked with. A root that lists a CT log always requires one.
    ``dsse``: the key types the route checks (``verify_key_profile``), checked first."""
    verify_key_profile(leaf, dsse=dsse)
    if not times:
        raise CertificateVerificationError(
            "no verified signing time to validate the certificate at",
            check="certificate.chain",
            expected="an integrated time with a verified inclusion promise, or a TSA timestamp",
            actual=None,
        )
    chain: list[x509.Certificate] = []
    for when in times:
        chain = verify_chain_at(leaf, intermediates, trust_root, when)
        nb, na = leaf.not_valid_before_utc, leaf.not_valid_after_utc
        if not nb <= _utc(when) <= na:  # also enforced by the verifier; said plainly here
            raise CertificateVerificationError(
                f"signing time {when.isoformat()} is outside the certificate's validity",
                check="certificate.chain",
                expected=f"{nb.isoformat()}..{na.isoformat()}",
                actual=when.isoformat(),
            )
    if require_sct or trust_root.ctlogs:
        verify_sct(leaf, chain, trust_root)
    verify_profile(leaf)
    return chain


__all__ = [
    "CertificateVerificationError",
    "certificate_facts",
    "verify_chain_at",
    "verify_sct",
    "sct_signed_data",
    "verify_profile",
    "verify_key_profile",
    "verify_signing_certificate",
]
