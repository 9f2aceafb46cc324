"""A detached signature with its certificate: cosign's ``sign-blob --output-certificate C
--output-signature S`` files, given to ``verify`` as ``--cert C --signature S``.

What the pair can and cannot prove. The certificate can be chained to a Fulcio CA of the trusted root
and its embedded SCT checked against a CT log of that root (fulcio.py), the signature checked over the
artifact with the certificate's key (legacy_bundle.verify_message_signature) and the signer matched
against the allowed identities (identity.py). What the pair lacks is the transparency-log entry: no
inclusion proof or promise, hence no verified signing time inside the certificate's ten-minute
validity. ``cosign verify-blob --cert --signature`` fetches that entry from Rekor online; atip-trust
verifies offline (docs/network.md is the only network use), so the pair alone never verifies: the
evaluation reports the checks above and a failed ``tlog`` check (evaluation/evaluate.py). The entry comes with a
Sigstore bundle or cosign's own ``--bundle`` file (bundle.py reads both); given alongside the pair, the
bundle must carry the very same certificate and signature (cosign does the same for ``--cert`` with
``--bundle``, sigstore/cosign#2652), and the bundle's verification is what counts.

Without a log-verified time the chain is checked at the certificate's own ``notBefore``: a time the
certificate states, not a proof of when the signature was made, which is why this never verifies.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import os
import re

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from atip_trust._base.files import read_capped
from atip_trust._base.limits import LIMITS
from atip_trust._base.record import Record
from atip_trust.errors import BundleError
from atip_trust.facts.digest import Digest
from atip_trust.facts.report import Check
from atip_trust.signature.bundle import BundleInput
from atip_trust.signature.fulcio import verify_signing_certificate
from atip_trust.signature.keys import decode_signature
from atip_trust.signature.legacy_bundle import verify_message_signature
from atip_trust.signature.trustroot import TrustRoot

_PEM_CERT = re.compile(rb"-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]+-----END CERTIFICATE-----")


class CertificatePair(Record):
    """``--cert`` and ``--signature`` as read (not yet verified)."""

    certificate: x509.Certificate
    signature: bytes
    cert_label: str
    signature_label: str

    @property
    def label(self) -> str:
        return f"{self.cert_label} + {self.signature_label}"


def _from_base64(data: bytes, source: str) -> bytes | None:
    """The bytes ``data`` encodes when it is base64 text (keys.decode_signature's rule), else None."""
    decoded = decode_signature(data, source=source)
    return decoded if decoded != data else None


def parse_certificate(data: bytes, *, source: str) -> x509.Certificate:
    """One PEM certificate, or cosign's base64 of the PEM text (``--output-certificate`` before
    cosign 2.0 wrote that form). Anything else, or several certificates, is a ``BundleError``."""
    pem = data if b"-----BEGIN" in data else _from_base64(data, source)
    if pem is None or b"-----BEGIN CERTIFICATE-----" not in pem:
        raise BundleError("is not a PEM certificate (nor base64 of one, as cosign writes it)",
                          path=source)
    blocks = _PEM_CERT.findall(pem)
    if len(blocks) != 1:
        raise BundleError(
            f"expected exactly one certificate, found {len(blocks) or 'no well-formed'}: give the "
            "signing certificate only (the chain comes from the trusted root)", path=source)
    try:
        return x509.load_pem_x509_certificate(blocks[0])
    except ValueError as err:
        raise BundleError(f"is not a readable X.509 certificate: {err}", path=source) from err


def parse_pair_signature(data: bytes, *, source: str) -> bytes:
    """The signature as cosign ``sign-blob --output-signature`` writes it: base64 text."""
    raw = _from_base64(data, source)
    if raw is None:
        raise BundleError("is not a base64 signature (as cosign sign-blob --output-signature "
                          "writes it)", path=source)
    return raw


def load_pair(cert: str | os.PathLike[str], signature: str | os.PathLike[str]) -> CertificatePair:
    """Read ``--cert`` and ``--signature`` (capped; malformed input raises ``BundleError``, exit 2)."""
    c, s = os.fspath(cert), os.fspath(signature)
    return CertificatePair(
        certificate=parse_certificate(read_capped(c, LIMITS.key_bytes, what="certificate"), source=c),
        signature=parse_pair_signature(read_capped(s, LIMITS.key_bytes, what="signature"), source=s),
        cert_label=os.path.basename(c) or c,
        signature_label=os.path.basename(s) or s,
    )


def verify_pair(pair: CertificatePair, artifact_sha256: Digest, trust_root: TrustRoot) -> list[Check]:
    """Chain, SCT and profile of the certificate, then the signature over the artifact. Raises
    ``CertificateVerificationError`` or ``LegacyVerificationError`` at the first failure (each has
    ``.to_check()``). Passing all of this is still not a verification: see the module docstring."""
    leaf = pair.certificate
    issued = leaf.not_valid_before_utc
    verify_signing_certificate(leaf, [], trust_root, [issued])
    return [
        Check("certificate.chain", "pass",
              f"chains to {trust_root.name}; SCT valid (checked at the certificate's own notBefore, "
              f"{issued.isoformat()}: the pair has no log-verified signing time)",
              expected=trust_root.name, actual=leaf.issuer.rfc4514_string(), evidence=pair.label),
        verify_message_signature(leaf, pair.signature, artifact_sha256, evidence=pair.label),
    ]


def no_log_entry(pair: CertificatePair) -> Check:
    """The failed ``tlog`` check every pair gets on its own (module docstring)."""
    return Check(
        "tlog", "fail",
        f"--cert {pair.cert_label} and --signature {pair.signature_label} carry no transparency-log "
        "entry and no verified signing time, so they cannot verify offline; give the Sigstore bundle "
        "(--bundle FILE, cosign sign-blob --bundle) or cosign's legacy --bundle file with them",
        expected="a log entry (a Sigstore bundle or cosign's --bundle file)", actual="none",
        evidence=pair.label, impact="unverified")


def _der(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.DER)


def match_bundle(pair: CertificatePair, bundle: BundleInput) -> Check:
    """Whether a message-signature bundle carries the pair's certificate and signature, byte for
    byte (read unverified here: the bundle's own verification runs in evaluation/evaluate.py either way)."""
    ms = bundle.doc.get("messageSignature")
    sig_b64 = ms.get("signature") if isinstance(ms, dict) else None
    try:
        theirs = base64.b64decode(str(sig_b64), validate=True) if isinstance(sig_b64, str) else None
    except (binascii.Error, ValueError):
        theirs = None
    leaf = bundle.signing_certificate()
    differ = [what for what, same in (
        (f"certificate (--cert {pair.cert_label})",
         leaf is not None and hmac.compare_digest(_der(leaf), _der(pair.certificate))),
        (f"signature (--signature {pair.signature_label})",
         theirs is not None and hmac.compare_digest(theirs, pair.signature)),
    ) if not same]
    if differ:
        return Check("detached", "fail",
                     f"bundle {bundle.label} does not carry the same {' and '.join(differ)}: the "
                     "bundle is not counted for this pair", expected=pair.label, actual=bundle.label,
                     evidence=bundle.label, impact="unverified")
    return Check("detached", "pass",
                 f"--cert {pair.cert_label} and --signature {pair.signature_label} are the "
                 f"certificate and signature of bundle {bundle.label}",
                 expected=pair.label, actual=bundle.label, evidence=bundle.label)


__all__ = [
    "CertificatePair",
    "load_pair",
    "match_bundle",
    "no_log_entry",
    "parse_certificate",
    "parse_pair_signature",
    "verify_pair",
]
