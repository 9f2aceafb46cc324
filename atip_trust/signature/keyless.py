"""Keyless (Fulcio certificate) Sigstore bundles, verified in-process by sigstore-python, offline.

sigstore-python's ``Verifier`` runs its numbered steps (verify/verifier.py ``_verify_common_signing_cert``):
(0) time, (1) chain at that time, (2) SCT, (3) X.509 profile and the caller's policy, (4) inclusion proof
and checkpoint, (5) SET, (6) time within the certificate's validity, (7) signature, (8) log entry body
consistent with the bundle and the input. Our own additions, in this order:

  (A) bind the bundle to *this* artifact: before sigstore, the declared message digest against the
      artifact's (message signatures) or the statement's subjects (attestations); and when sigstore
      fails, our own ECDSA check of the signature over the artifact digest or the DSSE PAE. A failure
      of either is evidence of tampering: COMPROMISED (principle 2). On the success path the signature
      is verified once, by sigstore's step (7), over the digest we computed: checking it again
      ourselves would buy no check sigstore does not make.
  (B) sigstore, with a policy object that *records* the certificate it has chain-verified instead of
      rejecting it, so that a signer outside the allowlist still gets the full cryptographic verdict
      (valid signature by the wrong signer → UNVERIFIED, not "invalid").
  (C) after sigstore: the integrated time must not be in the future (beyond ``CLOCK_SKEW``): sigstore
      never compares with the current clock (docs/sigstore.md "Time").
  (D) the identity allowlist (identity.py) runs on the recorded, chain-verified certificate.

Every exception sigstore raises during a verification call is mapped to a failed check here, at one
boundary: known escapees include ``cryptography.x509.ExtensionNotFound`` (leaf without KeyUsage/EKU)
and ``IndexError`` (issuing CA with the CT precert-signing EKU), per docs/sigstore.md.
"""

from __future__ import annotations

import base64
import binascii
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from cryptography import x509

from atip_trust._base.jsonio import parse_json
from atip_trust._base.lazy import lazy_import
from atip_trust._base.record import Record, field
from atip_trust.errors import AtipTrustError, TrustRootError
from atip_trust.facts.digest import Digest
from atip_trust.facts.report import OTHER_BYTES, Check
from atip_trust.signature.algorithms import Scheme, key_fits, verify_signature
from atip_trust.signature.bundle import BundleInput, digest_text, root_mismatch
from atip_trust.signature.dsse import pae
from atip_trust.signature.identity import CertificateFacts
from atip_trust.signature.tlog import (
    TlogVerificationError,
    check_integrated_times,
    integrated_time_utc,
)
from atip_trust.signature.trustroot import TrustRoot

if TYPE_CHECKING:
    from typing import Any, Literal

    import rfc3161_client
    from sigstore import errors, hashes, models, verify
    from sigstore_models.common import v1

    from atip_trust.signature import fulcio
else:
    fulcio = lazy_import("atip_trust.signature.fulcio")  # cryptography's x509 verification: on first use
    # Sigstore-python, its models and rfc3161-client: when a keyless bundle is first verified.
    rfc3161_client = lazy_import("rfc3161_client")
    errors = lazy_import("sigstore.errors")
    hashes = lazy_import("sigstore.hashes")
    models = lazy_import("sigstore.models")
    verify = lazy_import("sigstore.verify")
    v1 = lazy_import("sigstore_models.common.v1")


#: What (A) checks itself: ECDSA P-256 with SHA-256, the key Fulcio issues; other key types are left to
#: sigstore-python's step (7).
_OWN_SCHEMES: tuple[Scheme, ...] = ("ecdsa-sha256",)
#: How far in the future an integrated time may lie before we refuse it (clock skew between hosts).
CLOCK_SKEW = 300


class _RecordingPolicy:
    """A sigstore ``VerificationPolicy`` that records the chain-verified certificate (step 3).

    It does not reject: identity is judged afterwards by identity.py on what it recorded, and a bundle
    is only ever reported valid when the recording happened *and* every other sigstore step passed.
    """

    def __init__(self) -> None:
        self.certificate: x509.Certificate | None = None

    def verify(self, cert: x509.Certificate) -> None:
        self.certificate = cert


class KeylessOutcome(Record, frozen=False):
    """What one keyless bundle proved about one artifact."""

    label: str
    content: Literal["message_signature", "dsse"]
    #: Every sigstore step and ours (A)-(C) passed.
    valid: bool = False
    #: Evidence of tampering: bound to this artifact but the binding fails.
    compromised: bool = False
    #: The bundle is about this artifact (message digest / a DSSE subject matches).
    applies: bool = True
    facts: CertificateFacts | None = None
    payload_type: str | None = None
    payload: bytes | None = None
    integrated_time: datetime | None = None
    checks: list[Check] = field(default_factory=list)


#: sigstore-python 4.5 step (8) failures: the log entry's body disagrees with the bundle.
_INCONSISTENT_ENTRY = (
    "inconsistent with other materials",
    "signatures do not match bundle",
    "payload hash does not match bundle",
)


def _stage(message: str) -> str:
    """Name the sigstore step a ``VerificationError`` came from, for the check list, in the names every
    route uses (legacy_bundle.py, fulcio.py, tlog.py): ``certificate.chain``, ``certificate.sct``, ``tlog``..."""
    m = message.lower()
    for needle, name in (
        ("sct", "certificate.sct"),
        ("time", "time"),
        ("expired", "time"),
        ("chain", "certificate.chain"),
        ("certificate", "certificate"),
        ("usage", "certificate"),
        ("log entry", "tlog"),
        ("inclusion", "tlog"),
        ("checkpoint", "tlog"),
        ("rekor", "tlog"),
        ("digest", "digest"),
        ("signature", "signature"),
    ):
        if needle in m:
            return name
    return "bundle"


def _integrated_time(doc: dict[str, Any]) -> datetime | None:
    """The first entry's integrated time; None when absent or 0 (Rekor v2). Range-checked before."""
    try:
        seconds = int(doc["verificationMaterial"]["tlogEntries"][0]["integratedTime"])
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    return integrated_time_utc(seconds) if seconds > 0 else None


def _unparsable_timestamp(doc: Any, evidence: str) -> Check | None:
    """A ``timestamp`` failure for the first RFC 3161 token that cannot be parsed (a genTime such as
    year 0001 that the parser refuses raises a bare ``ValueError`` inside sigstore-python); else None.
    Parsed with rfc3161-client, the library sigstore-python itself uses. Nothing is verified here."""
    tvd = ((doc.get("verificationMaterial") or {}) if isinstance(doc, dict) else {}).get(
        "timestampVerificationData")
    tokens = (tvd.get("rfc3161Timestamps") if isinstance(tvd, dict) else None) or []
    if not isinstance(tokens, list):
        return None
    for i, t in enumerate(tokens):
        raw = t.get("signedTimestamp") if isinstance(t, dict) else None
        if not isinstance(raw, str):
            continue
        try:
            rfc3161_client.decode_timestamp_response(base64.b64decode(raw, validate=True)).tst_info.gen_time  # noqa: B018 - decoding is the check
        except binascii.Error:
            continue  # not base64: the bundle parser names it
        except Exception as err:  # noqa: BLE001 - the Rust parser raises several types
            return Check("timestamp", "fail", f"signed timestamp {i} cannot be parsed: {err}",
                         expected="an RFC 3161 TimeStampResp", actual=f"rfc3161Timestamps[{i}]",
                         evidence=evidence, impact="unverified")
    return None


def signed_times(doc: Any, integrated_time: datetime | None) -> list[datetime]:
    """When a bundle sigstore-python verified shows its signature existed: the log's integrated time
    (Rekor v1; Rekor v2 entries carry none, 0) and each RFC 3161 timestamp's genTime (sigstore verified
    every one, step 0, against a TSA of the trusted root). Read only after verification succeeded."""
    times = [integrated_time] if integrated_time is not None and integrated_time.timestamp() > 0 else []
    tvd = ((doc.get("verificationMaterial") or {}) if isinstance(doc, dict) else {}).get(
        "timestampVerificationData")
    tokens = (tvd.get("rfc3161Timestamps") if isinstance(tvd, dict) else None) or []
    for t in tokens if isinstance(tokens, list) else []:
        raw = t.get("signedTimestamp") if isinstance(t, dict) else None
        try:
            gen = rfc3161_client.decode_timestamp_response(base64.b64decode(str(raw), validate=True)).tst_info.gen_time
        except Exception:  # noqa: BLE001 - verified already; an unreadable one adds no time
            continue
        times.append(gen if gen.tzinfo is not None else gen.replace(tzinfo=timezone.utc))
    return times


def subjects_of(payload: bytes) -> list[dict[str, Any]]:
    """The subjects an (unverified) in-toto statement names; [] when it is not one (strict JSON, as the
    statement is parsed later: a duplicate ``subject`` key must not name one artifact here and another
    there)."""
    try:
        stmt = parse_json(payload, what="in-toto statement")
    except AtipTrustError:
        return []
    subj = stmt.get("subject") if isinstance(stmt, dict) else None
    return [s for s in subj if isinstance(s, dict)] if isinstance(subj, list) else []


def names_artifact(payload: bytes, digests: dict[str, Digest]) -> bool:
    for s in subjects_of(payload):
        dg = s.get("digest")
        if not isinstance(dg, dict):
            continue
        for alg, d in digests.items():
            val = dg.get(alg)
            if isinstance(val, str) and len(val) == len(d.hex):
                try:
                    if Digest.from_hex(alg, val) == d:
                        return True
                except Exception:  # noqa: BLE001 - a malformed subject digest simply does not match
                    continue
    return False


def _signature_fails(b: BundleInput, key: Any, sha256: Digest, payload_info: tuple[str, bytes] | None,
                     message_sig: bytes, out: KeylessOutcome) -> bool:
    """Our own check of the bundle's signature (ECDSA P-256, the key Fulcio issues; other key types are
    left to sigstore), run after sigstore failed: True, with the failed check recorded, when the
    signature does not verify over this artifact's digest (message signature) or the envelope's PAE
    (DSSE) — evidence of tampering when the bundle is about this artifact (principle 2)."""
    ev = b.label
    if not key_fits(key, _OWN_SCHEMES[0]):
        return False
    if b.content == "message_signature":
        if verify_signature(key, message_sig, sha256.value, _OWN_SCHEMES, prehashed=True) is not None:
            return False
        out.compromised = True
        out.checks.append(Check(
            "signature", "fail", "signature is invalid for this artifact",
            expected=f"a signature by the certificate key over {sha256}",
            actual="invalid signature", evidence=ev, impact="compromised"))
        return True
    sigs = (b.doc.get("dsseEnvelope") or {}).get("signatures") or []
    if payload_info is None or len(sigs) != 1:
        return False
    try:
        raw_sig = base64.b64decode(str(sigs[0].get("sig", "")), validate=True)
    except (binascii.Error, ValueError, AttributeError):
        raw_sig = b""
    if verify_signature(key, raw_sig, pae(*payload_info), _OWN_SCHEMES) is not None:
        return False
    if out.applies:
        out.compromised = True
    out.checks.append(Check(
        "signature", "fail", "DSSE signature is invalid",
        expected="a signature by the certificate key over the envelope",
        actual="invalid signature", evidence=ev,
        impact="compromised" if out.applies else "unverified"))
    return True


def _refused_before_sigstore(b: BundleInput) -> Check | None:
    """What fails this bundle before sigstore-python runs, as a named failure of this bundle only,
    instead of an exception from inside sigstore: an integrated time past year 9999 (its
    ``datetime.fromtimestamp`` raises bare ValueError/OSError), an RFC 3161 token that cannot be parsed,
    and a signing key sigstore-python cannot check (step 7 casts the key to an EC key: ECDSA only)."""
    try:
        check_integrated_times(b.doc)
    except TlogVerificationError as err:
        return err.to_check(evidence=b.label)
    bad_token = _unparsable_timestamp(b.doc, b.label)
    if bad_token is not None:
        return bad_token
    leaf = b.signing_certificate()
    if leaf is not None:
        try:
            fulcio.verify_key_profile(leaf, dsse=False)
        except fulcio.CertificateVerificationError as err:
            return err.to_check(evidence=b.label)
    return None


def _time_check(out: KeylessOutcome, ev: str) -> None:
    """(C) An integrated time in the future is not a time we can have observed; ``out.valid`` otherwise."""
    now = time.time()
    if out.integrated_time is None or out.integrated_time.timestamp() == 0:
        # Rekor v2 entries carry no integrated time; sigstore has verified the RFC 3161 timestamps
        # that replace it (step 0), which are signed by a TSA in the trusted root.
        out.checks.append(Check("time", "pass", "time from signed timestamps verified by sigstore",
                                evidence=ev))
        out.valid = True
        return
    if out.integrated_time.timestamp() > now + CLOCK_SKEW:
        out.checks.append(Check(
            "time", "fail", "integrated time lies in the future",
            expected=f"<= {datetime.fromtimestamp(now + CLOCK_SKEW, tz=timezone.utc).isoformat()}",
            actual=out.integrated_time.isoformat(), evidence=ev, impact="unverified"))
        return
    out.checks.append(Check("time", "pass", "signed within the certificate's validity",
                            actual=out.integrated_time.isoformat(), evidence=ev))
    out.valid = True


#: sigstore-python Verifiers by trusted-root digest: built once per root and process, reused by every
#: evaluation (a Verifier holds only the parsed root; verifying does not change it). Bounded.
_VERIFIERS: dict[str, Any] = {}
_MAX_VERIFIERS = 8


class KeylessVerifier:
    """sigstore-python's ``Verifier`` for one trusted root, built once per root digest and reused."""

    def __init__(self, trust_root: TrustRoot) -> None:
        self.trust_root = trust_root
        known = _VERIFIERS.get(trust_root.digest)
        if known is not None:
            self._verifier = known
            return
        try:
            self._verifier = verify.Verifier(trusted_root=trust_root.sigstore_trusted_root())
        except TrustRootError:
            raise
        except Exception as err:  # noqa: BLE001 - sigstore raises several types for a bad root
            raise TrustRootError(f"trusted root {trust_root.name} is unusable: {err}") from err
        if len(_VERIFIERS) >= _MAX_VERIFIERS:
            _VERIFIERS.clear()
        _VERIFIERS[trust_root.digest] = self._verifier

    def verify(self, b: BundleInput, digests: dict[str, Digest]) -> KeylessOutcome:
        out = KeylessOutcome(label=b.label, content=b.content)
        ev = b.label
        sha256 = digests["sha256"]
        try:
            self._verify(b, digests, sha256, out)
        except Exception as err:  # noqa: BLE001 - the one boundary: nothing unmapped escapes (fail closed)
            out.valid = False
            out.checks.append(
                Check(
                    "bundle",
                    "error",
                    f"verification raised {type(err).__name__}: {err}",
                    evidence=ev,
                    impact="unverified",
                )
            )
        return out

    def _refused(self, b: BundleInput, text: str, out: KeylessOutcome) -> None:
        """The check for a bundle sigstore refused (its signature itself was not the failure)."""
        ev = b.label
        msg = text.splitlines()[0]
        # Step (8) runs only after the chain, SCT and log entry verified: an authentic log entry
        # that disagrees with the bundle (CVE-2022-36056) is tampering evidence when the bundle is
        # about this artifact. The messages are pinned by tests/signature/test_verify_keyless.py.
        inconsistent = any(m in msg for m in _INCONSISTENT_ENTRY)
        tampered = inconsistent and out.applies
        out.compromised = tampered
        mismatch = None if inconsistent else root_mismatch(b, msg, self.trust_root.name)
        if mismatch is not None:  # named as what it is, not by the step that noticed (issue 34)
            out.checks.append(Check("certificate.chain", "fail", mismatch, evidence=ev, impact="unverified"))
            return
        out.checks.append(Check(
            "tlog.body" if inconsistent else _stage(msg), "fail",
            f"{msg} (checked against trusted root {self.trust_root.name}){b.instance_hint(msg)}",
            evidence=ev, impact="compromised" if tampered else "unverified"))

    def _verify(
        self, b: BundleInput, digests: dict[str, Digest], sha256: Digest, out: KeylessOutcome
    ) -> None:
        SigstoreError = errors.Error  # noqa: N806 - the class, bound once for the handlers below

        ev = b.label
        refused = _refused_before_sigstore(b)
        if refused is not None:
            out.checks.append(refused)
            return
        try:
            bundle = models.Bundle.from_json(b.raw)
        except SigstoreError as err:
            first = str(err).splitlines()[0] if str(err) else type(err).__name__
            out.checks.append(Check("bundle", "fail", f"bundle rejected: {first}{b.instance_hint()}",
                                    evidence=ev, impact="unverified"))
            return
        cert = bundle.signing_certificate
        out.facts = CertificateFacts.from_certificate(cert)
        out.integrated_time = _integrated_time(b.doc)

        # (A) Bind the bundle to this artifact (``_bind_to_artifact``).
        bound, payload_info = _bind_to_artifact(b, digests, sha256, out)
        if not bound:
            return

        # (B) sigstore-python: chain, SCT, profile, log entry, times, signature, entry consistency.
        # The certificate's public key is loaded only for our own check, which runs only on failure.
        message_sig = bundle.signature if b.content == "message_signature" else b""
        recorder = _RecordingPolicy()
        try:
            if b.content == "message_signature":
                self._verifier.verify_artifact(
                    hashes.Hashed(algorithm=v1.HashAlgorithm.SHA2_256, digest=sha256.value),
                    bundle, recorder
                )
            else:
                out.payload_type, out.payload = self._verifier.verify_dsse(bundle, recorder)
        except SigstoreError as err:
            if _signature_fails(b, cert.public_key(), sha256, payload_info, message_sig, out):
                return
            self._refused(b, str(err) or type(err).__name__, out)
            return
        except Exception:
            # An exception sigstore lets escape (module docstring) is still a failure of this bundle:
            # tampering if our own signature check says so, else the error boundary in verify().
            if _signature_fails(b, cert.public_key(), sha256, payload_info, message_sig, out):
                return
            raise
        if recorder.certificate is None:  # sigstore returned without running the policy: fail closed
            out.checks.append(Check("certificate", "error", "certificate policy was never evaluated",
                                    evidence=ev, impact="unverified"))
            return
        out.checks.append(Check("certificate.chain", "pass",
                                f"chains to trusted root {self.trust_root.name}; SCT valid", evidence=ev))
        out.checks.append(Check("tlog", "pass", "log entry, inclusion proof/promise verified",
                                evidence=ev))
        if b.content == "message_signature":
            out.checks.append(Check("digest", "pass", "", str(sha256), str(sha256), ev))
        out.checks.append(Check("signature", "pass", "signature verified", evidence=ev))

        _time_check(out, ev)


def _bind_to_artifact(b: BundleInput, digests: dict[str, Digest], sha256: Digest,
                      out: KeylessOutcome) -> tuple[bool, tuple[str, bytes] | None]:
    """Step (A) of ``_verify``: (whether verification goes on, the DSSE payload). A message signature's
    declared digest must be this artifact's (else COMPROMISED); a DSSE statement says whether it names it."""
    ev = b.label
    # Bind the bundle to this artifact: the declared message digest (a comparison), and for DSSE
    # whether the statement names this artifact. The signature itself is verified once, by
    # sigstore's step (7) over the digest we computed; our own ECDSA check runs only when sigstore
    # fails, to tell tampering (a signature that does not verify: COMPROMISED) from any other
    # failure. On success it would verify the very same signature over the very same bytes again.
    payload_info: tuple[str, bytes] | None = None
    if b.content == "message_signature":
        ms = b.doc.get("messageSignature") or {}
        md = ms.get("messageDigest") or {}
        declared = md.get("digest")
        if declared is not None:
            try:
                declared_hex = base64.b64decode(str(declared), validate=True).hex()
            except (binascii.Error, ValueError):
                declared_hex = f"<not base64: {str(declared)[:40]}>"
            if md.get("algorithm") not in (None, "SHA2_256") or declared_hex != sha256.hex:
                out.compromised = True
                out.checks.append(Check(
                    "digest", "fail", OTHER_BYTES,
                    expected=str(sha256), actual=digest_text(md.get("algorithm"), declared_hex),
                    evidence=ev, impact="compromised"))
                return False, None
    else:
        payload_info = b.dsse_payload()
        if payload_info is None:
            out.checks.append(Check("bundle", "fail", "DSSE envelope payload is not base64",
                                    evidence=ev, impact="unverified"))
            return False, None
        out.applies = names_artifact(payload_info[1], digests)
    return True, payload_info


__all__ = ["KeylessVerifier", "KeylessOutcome", "CLOCK_SKEW", "names_artifact", "signed_times", "subjects_of"]
