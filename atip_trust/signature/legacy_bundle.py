"""Full verification of DSSE bundles that sigstore-python 4.5.1 refuses.

Two shapes (bundle.py routes them here, docs/sigstore.md "Not supported"):

* Rekor ``intoto/0.0.2`` entries: npm provenance, sigstore-js, slsa-github-generator ``.build.slsa``
  ("Integrated time only supported for dsse/hashedrekord 0.0.1 types");
* v0.1 bundles whose ``dsse/0.0.1`` or ``intoto/0.0.2`` entry has an inclusion promise but no inclusion
  proof. From v0.2 on, the bundle format requires an inclusion proof (sigstore protobuf-specs
  ``Bundle`` comment; conformance case ``intoto-missing-inclusion-proof``), so only v0.1 may omit it.

The steps, in sigstore-python's numbering (verify/verifier.py ``_verify_common_signing_cert``), each
labelled below:

(0) signing times: the integrated time, *only* when its inclusion promise verifies (it is what signs
    the time), plus every RFC 3161 timestamp, each of which must verify against the trusted root's TSAs
    (fail closed: an unverifiable timestamp is refused, not skipped);
(1)–(3) certificate chain at every signing time, CA validity window, embedded SCT, Fulcio profile
    (fulcio.py);
(4)–(5) the log entry: inclusion proof and checkpoint, SET, log key valid at the integrated time
    (tlog.py; proof required for bundle v0.2+);
(6) every signing time within the leaf's validity (inside fulcio.py's chain check);
(7) the DSSE signature over PAE(payloadType, payload) with the leaf's key (DSSE v1 protocol);
(8) the entry body consistent with the envelope: payload hash, payload type, signatures and the signing
    certificate (CVE-2022-36056 class). ``intoto/0.0.2``'s ``spec.content.hash`` (sha256 of Rekor's own
    re-serialisation of the envelope) cannot be recomputed from the bundle and is not checked; the
    payload hash it sits next to is.

Failures raise ``LegacyVerificationError`` (a verification outcome, exit 1); a bundle whose JSON is the
wrong shape raises ``BundleError`` (exit 2). Errors from tlog.py and fulcio.py pass through unchanged.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PublicKeyTypes

# rfc3161-client is the library sigstore-python itself uses for timestamps (installed with sigstore).
from rfc3161_client import VerifierBuilder, decode_timestamp_response

from atip_trust._base.jsonio import b64_bytes, expect_object, get_field, parse_json
from atip_trust._base.record import Record
from atip_trust.errors import BundleError
from atip_trust.facts.digest import Digest
from atip_trust.facts.report import OTHER_BYTES, Check, CheckFailure
from atip_trust.signature.algorithms import LOG_SCHEMES, Scheme, key_fits, verify_signature
from atip_trust.signature.bundle import bundle_version, digest_text, proof_required, route_of
from atip_trust.signature.dsse import pae
from atip_trust.signature.fulcio import (
    CertificateVerificationError,
    verify_signing_certificate,
)
from atip_trust.signature.tlog import LogEntry, TlogVerificationError, verify_entry
from atip_trust.signature.trustroot import TrustRoot

if TYPE_CHECKING:
    from typing import Any

#: sigstore-python's cap on signed timestamps per bundle (verify/verifier.py MAX_ALLOWED_TIMESTAMP).
MAX_TIMESTAMPS = 32
SUPPORTED_KINDS = (("intoto", "0.0.2"), ("dsse", "0.0.1"))


class LegacyVerificationError(CheckFailure):
    """A legacy bundle failed a check (``signature``, ``tlog.body``, ``timestamp``, ``tlog.entry``)."""

    TAMPER_CHECKS = frozenset({"signature", "tlog.body", "digest"})

class LegacyResult(Record):
    """A verified legacy DSSE bundle: what ``keyless.verify_dsse`` gives, plus what was proven."""

    payload_type: str
    payload: bytes
    certificate: x509.Certificate
    integrated_time: datetime
    times: tuple[datetime, ...]
    entry_kind: str
    checks: tuple[Check, ...]


# -- parsing ------------------------------------------------------------------------------------------


def _bad(path: str, message: str) -> BundleError:
    return BundleError(message, path=path)


def _obj(value: Any, path: str) -> dict[str, Any]:
    return expect_object(value, path, error=BundleError)


def _b64(value: Any, path: str) -> bytes:
    return b64_bytes(value, path, error=BundleError)


def _cert(der: bytes, path: str) -> x509.Certificate:
    try:
        return x509.load_der_x509_certificate(der)
    except ValueError as err:
        raise _bad(path, f"is not a DER X.509 certificate: {err}") from err


class _Parsed(Record):
    version: str
    payload_type: str
    payload: bytes
    signature: bytes
    signature_b64: str
    #: None for a public-key bundle (``_parse(keyed=True)``).
    leaf: x509.Certificate | None
    intermediates: list[x509.Certificate]
    #: None for a timestamp-only bundle (``_material(logged=False)``).
    entry: LogEntry | None
    timestamps: list[bytes]

    @property
    def logged(self) -> LogEntry:
        return _one_entry(self.entry)

    @property
    def cert(self) -> x509.Certificate:
        """The signing certificate of a keyless bundle (``_material`` has read at least one)."""
        if self.leaf is None:
            raise _bad("$.verificationMaterial", "no signing certificate (certificate or x509CertificateChain)")
        return self.leaf


def _one_entry(entry: LogEntry | None) -> LogEntry:
    """The entry ``_material(logged=True)`` has read (never None there; said for the type checker)."""
    if entry is None:
        raise _bad("$.verificationMaterial.tlogEntries", "expected exactly one log entry, got none")
    return entry


def _material(d: dict[str, Any], *, logged: bool = True, keyed: bool = False
              ) -> tuple[list[x509.Certificate], LogEntry | None, list[bytes]]:
    """Signing certificate (then any intermediates; none when ``keyed``: a public-key bundle), the
    single log entry (None, and no entry allowed, when not ``logged``), and RFC 3161 tokens."""
    vm = _obj(d.get("verificationMaterial"), "$.verificationMaterial")
    if ("publicKey" in vm) != keyed:
        where = "$.verificationMaterial" + (".publicKey" if not keyed else "")
        raise _bad(where, "a key-based bundle is not a keyless legacy bundle" if not keyed else
                   "a keyless bundle is not a public-key bundle")
    certs: list[x509.Certificate] = []
    if keyed:
        _obj(vm["publicKey"], "$.verificationMaterial.publicKey")
    elif "certificate" in vm:
        c = _obj(vm["certificate"], "$.verificationMaterial.certificate")
        certs.append(_cert(_b64(c.get("rawBytes"), "$.verificationMaterial.certificate.rawBytes"),
                           "$.verificationMaterial.certificate.rawBytes"))
    elif "x509CertificateChain" in vm:
        chain = _obj(vm["x509CertificateChain"], "$.verificationMaterial.x509CertificateChain")
        items = chain.get("certificates")
        if not isinstance(items, list) or not items or len(items) > 10:
            raise _bad("$.verificationMaterial.x509CertificateChain.certificates",
                       "expected 1 to 10 certificates")
        for i, c in enumerate(items):
            p = f"$.verificationMaterial.x509CertificateChain.certificates[{i}].rawBytes"
            certs.append(_cert(_b64(_obj(c, p[:-9]).get("rawBytes"), p), p))
    else:
        raise _bad("$.verificationMaterial", "no signing certificate (certificate or x509CertificateChain)")
    entries = vm.get("tlogEntries")
    entry: LogEntry | None = None
    if not logged:
        if entries not in (None, []):
            raise _bad("$.verificationMaterial.tlogEntries", "a timestamp-only bundle carries no log entry")
    elif not isinstance(entries, list) or len(entries) != 1:
        raise _bad("$.verificationMaterial.tlogEntries",
                   f"expected exactly one log entry, got {len(entries) if isinstance(entries, list) else 'none'}")
    else:
        entry = LogEntry.from_json(entries[0], path="$.verificationMaterial.tlogEntries[0]")
    timestamps: list[bytes] = []
    tvd = vm.get("timestampVerificationData")
    if tvd is not None:
        tvd = _obj(tvd, "$.verificationMaterial.timestampVerificationData")
        for i, ts in enumerate(tvd.get("rfc3161Timestamps") or []):
            p = f"$.verificationMaterial.timestampVerificationData.rfc3161Timestamps[{i}]"
            timestamps.append(_b64(_obj(ts, p).get("signedTimestamp"), p + ".signedTimestamp"))
    return certs, entry, timestamps


def _version(d: dict[str, Any]) -> str:
    version = bundle_version(d.get("mediaType"))
    if version is None:
        raise _bad("$.mediaType", f"unsupported bundle media type {d.get('mediaType')!r}")
    return version


def _parse(doc: Any, *, logged: bool = True, keyed: bool = False) -> _Parsed:
    d = _obj(doc, "$")
    version = _version(d)
    env = _obj(d.get("dsseEnvelope"), "$.dsseEnvelope")
    payload_type = get_field(env, "payloadType", str, path="$.dsseEnvelope", nonempty=True,
                             error=BundleError)
    payload = _b64(env.get("payload"), "$.dsseEnvelope.payload")
    sigs = env.get("signatures")
    # Sigstore DSSE bundles carry exactly one signature (protobuf-specs Bundle: "exactly one").
    if not isinstance(sigs, list) or len(sigs) != 1:
        raise _bad(
            "$.dsseEnvelope.signatures",
            f"expected exactly one signature, got {len(sigs) if isinstance(sigs, list) else 'none'}",
        )
    sig_obj = _obj(sigs[0], "$.dsseEnvelope.signatures[0]")
    sig_b64 = sig_obj.get("sig")
    signature = _b64(sig_b64, "$.dsseEnvelope.signatures[0].sig")
    if not signature:
        raise _bad("$.dsseEnvelope.signatures[0].sig", "empty signature")

    certs, entry, timestamps = _material(d, logged=logged, keyed=keyed)
    return _Parsed(
        version=version,
        payload_type=payload_type,
        payload=payload,
        signature=signature,
        signature_b64=str(sig_b64),
        leaf=certs[0] if certs else None,
        intermediates=certs[1:],
        entry=entry,
        timestamps=timestamps,
    )


# -- (0) RFC 3161 timestamps --------------------------------------------------------------------------


def _verify_timestamps(tokens: list[bytes], message: bytes, trust_root: TrustRoot) -> list[datetime]:
    """Every timestamp must verify over ``message`` (the DSSE signature) with a TSA of the trusted root,
    and fall inside that TSA's validity window (as sigstore-python's ``_verify_signed_timestamp``)."""
    if not tokens:
        return []
    if len(tokens) > MAX_TIMESTAMPS:
        raise LegacyVerificationError(
            f"too many signed timestamps: {len(tokens)} > {MAX_TIMESTAMPS}",
            check="timestamp", expected=f"<= {MAX_TIMESTAMPS}", actual=len(tokens),
        )
    if len(set(tokens)) != len(tokens):
        raise LegacyVerificationError("duplicate signed timestamp", check="timestamp")
    times: list[datetime] = []
    for i, token in enumerate(tokens):
        try:
            tsr = decode_timestamp_response(token)
        except Exception as err:  # noqa: BLE001 - the Rust parser raises several types
            raise LegacyVerificationError(
                f"signed timestamp {i} cannot be parsed: {err}", check="timestamp"
            ) from err
        reasons: list[str] = []
        verified: datetime | None = None
        for tsa in trust_root.tsas:
            certs = list(tsa.chain)
            if len(certs) < 2:
                reasons.append(f"{tsa.uri or 'TSA'}: incomplete chain")
                continue
            builder = VerifierBuilder().tsa_certificate(certs[0]).add_root_certificate(certs[-1])
            for c in certs[1:-1]:
                builder = builder.add_intermediate_certificate(c)
            try:
                builder.build().verify_message(tsr, message)
            except Exception as err:  # noqa: BLE001 - map every verifier failure to "not this TSA"
                reasons.append(f"{tsa.uri or 'TSA'}: {err}")
                continue
            gen = tsr.tst_info.gen_time
            gen = gen if gen.tzinfo else gen.replace(tzinfo=timezone.utc)
            # The trusted root's TimeRange is a closed interval (sigstore-conformance
            # trust-root-tsa-validity-end-inclusive): a timestamp equal to validFor.end is inside.
            if (tsa.valid_from is None or tsa.valid_from <= gen) and (
                tsa.valid_until is None or gen <= tsa.valid_until
            ):
                verified = gen
                break
            reasons.append(f"{tsa.uri or 'TSA'}: time {gen.isoformat()} outside the TSA's validity")
        if verified is None:
            raise LegacyVerificationError(
                f"signed timestamp {i} does not verify with any TSA of {trust_root.name}: "
                + ("; ".join(reasons) or "the trusted root has no TSA"),
                check="timestamp", expected=trust_root.name, actual="unverified",
            )
        times.append(verified)
    return times


# -- (7) DSSE signature -------------------------------------------------------------------------------


def _verify_dsse_signature(cert: x509.Certificate, payload_type: str, payload: bytes, sig: bytes) -> None:
    key = cert.public_key()
    # Fulcio issues P-256 (sha256) and P-384 (sha384) keys; the hash follows the curve.
    if not any(key_fits(key, s) for s in LOG_SCHEMES):
        raise LegacyVerificationError(
            f"unsupported signing key type {type(key).__name__}", check="signature"
        )
    if verify_signature(key, sig, pae(payload_type, payload), LOG_SCHEMES) is None:
        raise LegacyVerificationError(
            "the DSSE signature does not verify over PAE(payloadType, payload) with the certificate's key",
            check="signature", expected="valid", actual="invalid",
        ) from None


# -- (8) log entry body vs envelope -------------------------------------------------------------------


def _body_fail(message: str, expected: Any = None, actual: Any = None) -> LegacyVerificationError:
    return LegacyVerificationError(
        f"log entry body does not match the bundle: {message}",
        check="tlog.body", expected=expected, actual=actual,
    )


def _pem_cert(b64pem: Any, what: str) -> x509.Certificate:
    try:
        pem = base64.b64decode(str(b64pem), validate=True)
        return x509.load_pem_x509_certificate(pem)
    except (binascii.Error, ValueError) as err:
        raise _body_fail(f"{what} is not base64 of a PEM certificate ({err})") from err


def _same_cert(a: x509.Certificate, b: x509.Certificate) -> bool:
    return hmac.compare_digest(
        a.public_bytes(serialization.Encoding.DER), b.public_bytes(serialization.Encoding.DER)
    )


def _check_payload_hash(obj: Any, payload: bytes, where: str) -> None:
    if not isinstance(obj, dict) or obj.get("algorithm") != "sha256" or not isinstance(obj.get("value"), str):
        raise _body_fail(f"{where} must be a sha256 hash object", "sha256", obj)
    mine = hashlib.sha256(payload).hexdigest()
    if not hmac.compare_digest(obj["value"].lower(), mine):
        raise _body_fail("payload hash differs from the envelope's payload", mine, obj["value"])


def _decode_either(value: Any, what: str) -> bytes:
    """Rekor's intoto 0.0.2 stores envelope bytes base64-encoded once or, from clients that pass the
    envelope's base64 text through, twice (sigstore-js 2.x entries). Both encodings name the same
    bytes; accept the one that decodes, refuse anything else."""
    try:
        once = base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError) as err:
        raise _body_fail(f"{what} is not base64 ({err})") from err
    try:
        text = once.decode("ascii")
        twice = base64.b64decode(text, validate=True)
    except (UnicodeDecodeError, binascii.Error, ValueError):
        return once
    return twice if text and base64.b64encode(twice).decode("ascii") == text else once


def _same_signer(value: Any, signer: x509.Certificate | PublicKeyTypes, what: str) -> bool:
    """Whether the logged ``value`` (base64 of a PEM) is ``signer``: the same certificate, or for a
    public-key bundle the same public key (DER SubjectPublicKeyInfo)."""
    if isinstance(signer, x509.Certificate):
        return _same_cert(_pem_cert(value, what), signer)
    try:
        logged = serialization.load_pem_public_key(base64.b64decode(str(value), validate=True))
    except (binascii.Error, ValueError, UnsupportedAlgorithm) as err:
        raise _body_fail(f"{what} is not base64 of a PEM public key ({err})") from err
    spki = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hmac.compare_digest(logged.public_bytes(*spki), signer.public_bytes(*spki))


def _check_body(p: _Parsed, signer: x509.Certificate | PublicKeyTypes | None = None) -> None:
    """(8): the logged body is about this envelope and its signer (the certificate, or ``signer``)."""
    who: x509.Certificate | PublicKeyTypes = signer if signer is not None else p.cert
    body = p.logged.canonicalized_body
    try:
        doc = parse_json(body, what="log entry body")
    except Exception as err:  # noqa: BLE001 - any parse failure of a signed body is a mismatch
        raise _body_fail(f"body is not JSON: {err}") from err
    if not isinstance(doc, dict):
        raise _body_fail("body is not a JSON object")
    kind, version = doc.get("kind"), doc.get("apiVersion")
    if (kind, version) != (p.logged.kind, p.logged.version):
        raise _body_fail("kind/version differ from kindVersion",
                         f"{p.logged.kind}/{p.logged.version}", f"{kind}/{version}")
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        raise _body_fail("no spec object")

    if kind == "intoto":
        # intoto 0.0.2 (rekor pkg/types/intoto/v0.0.2): spec.content.{envelope, hash, payloadHash}; each
        # envelope signature has ``sig`` = base64 of the DSSE signature *as base64 text* (double encoded)
        # and ``publicKey`` = base64 of the PEM certificate.
        content = spec.get("content")
        if not isinstance(content, dict):
            raise _body_fail("no spec.content object")
        _check_payload_hash(content.get("payloadHash"), p.payload, "spec.content.payloadHash")
        env = content.get("envelope")
        if not isinstance(env, dict):
            raise _body_fail("no spec.content.envelope object")
        if env.get("payloadType") != p.payload_type:
            raise _body_fail("payloadType differs", p.payload_type, env.get("payloadType"))
        sigs = env.get("signatures")
        if not isinstance(sigs, list) or len(sigs) != 1 or not isinstance(sigs[0], dict):
            raise _body_fail("expected exactly one signature in the entry",
                             1, len(sigs) if isinstance(sigs, list) else None)
        logged = _decode_either(sigs[0].get("sig"), "entry signature")
        if not hmac.compare_digest(logged, p.signature):
            raise _body_fail("the logged signature is not the envelope's signature",
                             p.signature_b64, str(sigs[0].get("sig"))[:120])
        if "payload" in env:
            # Some entries carry the payload too; when present it must be the envelope's payload.
            if not hmac.compare_digest(_decode_either(env["payload"], "entry payload"), p.payload):
                raise _body_fail("the logged payload is not the envelope's payload")
        if not _same_signer(sigs[0].get("publicKey"), who, "entry publicKey"):
            raise _body_fail("the logged certificate or key is not the bundle's signer")
        return

    if kind == "dsse":
        # dsse 0.0.1 (rekor pkg/types/dsse/v0.0.1): spec.payloadHash, spec.signatures[{signature, verifier}]
        # with ``signature`` = base64 of the raw signature and ``verifier`` = base64 of the PEM certificate.
        _check_payload_hash(spec.get("payloadHash"), p.payload, "spec.payloadHash")
        sigs = spec.get("signatures")
        if not isinstance(sigs, list) or len(sigs) != 1 or not isinstance(sigs[0], dict):
            raise _body_fail("expected exactly one signature in the entry",
                             1, len(sigs) if isinstance(sigs, list) else None)
        try:
            logged_raw = base64.b64decode(str(sigs[0].get("signature", "")), validate=True)
        except (binascii.Error, ValueError) as err:
            raise _body_fail(f"entry signature is not base64 ({err})") from err
        if not hmac.compare_digest(logged_raw, p.signature):
            raise _body_fail("the logged signature is not the envelope's signature",
                             p.signature_b64, sigs[0].get("signature"))
        if not _same_signer(sigs[0].get("verifier"), who, "entry verifier"):
            raise _body_fail("the logged certificate or key is not the bundle's signer")
        return
    raise _body_fail(f"unsupported entry kind {kind!r}")  # pragma: no cover - filtered before


# -- the ordered verification -------------------------------------------------------------------------


def is_legacy(doc: Any) -> bool:
    """True for the bundles this module (and not sigstore-python) must verify: ``intoto/0.0.2``
    entries and v0.1/v0.2 bundles with only an inclusion promise (routing lives in bundle.py)."""

    return route_of(doc) == "legacy"


def verify_legacy_dsse_detailed(
    doc: Any,
    trust_root: TrustRoot,
    *,
    evidence: str | None = None,
    now: datetime | None = None,
) -> LegacyResult:
    """Run steps (0)–(8) on one bundle document (already JSON-parsed, capped by the caller)."""
    p = _parse(doc)
    kv = (p.logged.kind, p.logged.version)
    if kv not in SUPPORTED_KINDS:
        raise LegacyVerificationError(
            f"log entry kind {kv[0]}/{kv[1]} is not one this verifier handles",
            check="tlog.entry", expected=["intoto/0.0.2", "dsse/0.0.1"], actual=f"{kv[0]}/{kv[1]}",
        )
    checks: list[Check] = []

    # (4)+(5) first: the log entry's own proofs tell us whether integratedTime is signed.
    result = verify_entry(
        p.logged, trust_root, require_proof=proof_required(p.version), now=now, evidence=evidence
    )
    checks.extend(result.checks)

    # (0) signing times: integrated time only with a verified promise, plus every TSA timestamp.
    times: list[datetime] = []
    if result.promise:
        times.append(result.integrated_time)
    times.extend(_verify_timestamps(p.timestamps, p.signature, trust_root))
    if not times:
        raise LegacyVerificationError(
            "no verified signing time: the entry has no inclusion promise and no signed timestamp",
            check="timestamp", expected="inclusion promise or RFC 3161 timestamp", actual=None,
        )
    checks.append(Check("time", "pass", "verified signing times",
                        expected=None, actual=[t.isoformat() for t in times], evidence=evidence))

    # (1)–(3), (6)
    verify_signing_certificate(p.cert, p.intermediates, trust_root, times, dsse=True)
    checks.append(Check("certificate.chain", "pass", f"chains to {trust_root.name}; SCT valid",
                        expected=trust_root.name, actual=p.cert.issuer.rfc4514_string(), evidence=evidence))

    # (7)
    _verify_dsse_signature(p.cert, p.payload_type, p.payload, p.signature)
    checks.append(Check("signature", "pass", "DSSE signature over PAE", evidence=evidence))

    # (8)
    _check_body(p)
    checks.append(Check("tlog.body", "pass", f"{kv[0]}/{kv[1]} entry matches the envelope",
                        evidence=evidence))

    return LegacyResult(
        payload_type=p.payload_type,
        payload=p.payload,
        certificate=p.cert,
        integrated_time=result.integrated_time,
        times=tuple(times),
        entry_kind=f"{kv[0]}/{kv[1]}",
        checks=tuple(checks),
    )


def verify_legacy_dsse(
    doc: Any, trust_root: TrustRoot, *, evidence: str | None = None
) -> tuple[str, bytes, x509.Certificate]:
    """(payload_type, payload, certificate) after full verification, like ``keyless.verify_dsse``.

    Raises ``LegacyVerificationError``, ``TlogVerificationError`` or ``CertificateVerificationError``
    (verification failed: each has ``.to_check()``) or ``BundleError`` (malformed bundle).
    """
    r = verify_legacy_dsse_detailed(doc, trust_root, evidence=evidence)
    return r.payload_type, r.payload, r.certificate


# -- public-key DSSE bundles (npm publish attestations) -------------------------------------------------

#: Schemes a public-key DSSE signature may use: the log schemes (ECDSA by curve, Ed25519, RSA PKCS#1
#: v1.5) and RSA-PSS, as sigstore-go's ``LoadVerifier`` accepts for a key (keys.py docstring).
KEY_DSSE_SCHEMES: tuple[Scheme, ...] = (*LOG_SCHEMES, "rsa-pss-sha256")


def verify_key_dsse(doc: Any, key: PublicKeyTypes, trust_root: TrustRoot, *, evidence: str | None = None,
                    now: datetime | None = None) -> tuple[str, bytes, datetime, tuple[Check, ...]]:
    """A DSSE bundle signed with a public key (npm's publish attestations: ``publicKey.hint`` names the
    registry's key, the entry is ``intoto/0.0.2`` or ``dsse/0.0.1``): (4)+(5) the log entry (SET; proof
    when present, required for v0.2+), (7) the DSSE signature over PAE with ``key``, (8) the logged body
    names this envelope and this key. The key is the caller's trust anchor (``--key``/policy), never
    the bundle's hint. Returns (payload type, payload, integrated time, checks); raises
    ``LegacyVerificationError`` and the tlog errors, or ``BundleError``."""
    p = _parse(doc, keyed=True)
    kv = (p.logged.kind, p.logged.version)
    if kv not in SUPPORTED_KINDS:
        raise LegacyVerificationError(
            f"log entry kind {kv[0]}/{kv[1]} is not one this verifier handles",
            check="tlog.entry", expected=["intoto/0.0.2", "dsse/0.0.1"], actual=f"{kv[0]}/{kv[1]}")
    result = verify_entry(p.logged, trust_root, require_proof=proof_required(p.version), now=now,
                          evidence=evidence)
    checks = list(result.checks)
    if verify_signature(key, p.signature, pae(p.payload_type, p.payload), KEY_DSSE_SCHEMES) is None:
        raise LegacyVerificationError(
            "the DSSE signature does not verify over PAE(payloadType, payload) with the given key",
            check="signature", expected="valid", actual="invalid")
    checks.append(Check("signature", "pass", "DSSE signature over PAE with the given key", evidence=evidence))
    _check_body(p, key)
    checks.append(Check("tlog.body", "pass", f"{kv[0]}/{kv[1]} entry matches the envelope and key",
                        evidence=evidence))
    return p.payload_type, p.payload, result.integrated_time, tuple(checks)


# -- timestamp-only bundles (no log entry) --------------------------------------------------------------


def _signed_times(tokens: list[bytes], signature: bytes, trust_root: TrustRoot) -> list[datetime]:
    """A timestamp-only bundle's signing times: allowed only by a root that does not require a log
    entry (``TrustRoot.requires_tlog``), and then at least one RFC 3161 timestamp, every one verified
    over the signature by a TSA of that root inside its window (sigstore-go ``WithSignedTimestamps(1)``,
    as gh verifies GitHub's instance)."""
    if trust_root.requires_tlog:
        raise LegacyVerificationError(
            "the bundle has no transparency log entry and the trusted root requires one (a root without "
            "log instances, or policy trust.requireTransparencyLog: false, allows timestamp-only bundles)",
            check="tlog.entry", expected="one log entry", actual="none")
    if not tokens:
        raise LegacyVerificationError(
            "no verified signing time: the bundle has neither a log entry nor a signed timestamp",
            check="timestamp", expected="an RFC 3161 timestamp from a TSA of the trusted root", actual=None)
    return _verify_timestamps(tokens, signature, trust_root)


def verify_timestamped_dsse(doc: Any, trust_root: TrustRoot, *, evidence: str | None = None) -> LegacyResult:
    """A DSSE bundle with no log entry, only RFC 3161 timestamps (GitHub's instance): steps (0) the
    timestamps, (1)-(3),(6) the certificate at each of those times (an SCT when the root lists a CT
    log), (7) the DSSE signature. There is no log entry, so no (4), (5) or (8)."""
    p = _parse(doc, logged=False)
    times = _signed_times(p.timestamps, p.signature, trust_root)
    checks = [Check("time", "pass", "verified signed timestamps (no transparency log entry)",
                    actual=[t.isoformat() for t in times], evidence=evidence)]
    verify_signing_certificate(p.cert, p.intermediates, trust_root, times, require_sct=False, dsse=True)
    checks.append(Check("certificate.chain", "pass", f"chains to {trust_root.name}",
                        expected=trust_root.name, actual=p.cert.issuer.rfc4514_string(), evidence=evidence))
    _verify_dsse_signature(p.cert, p.payload_type, p.payload, p.signature)
    checks.append(Check("signature", "pass", "DSSE signature over PAE", evidence=evidence))
    return LegacyResult(payload_type=p.payload_type, payload=p.payload, certificate=p.cert,
                        integrated_time=max(times), times=tuple(times), entry_kind="none",
                        checks=tuple(checks))


def verify_timestamped_message(
    doc: Any, artifact_sha256: Digest, trust_root: TrustRoot, *, evidence: str | None = None,
) -> tuple[x509.Certificate, datetime, tuple[Check, ...]]:
    """A message-signature bundle with no log entry, only RFC 3161 timestamps: (0), (1)-(3),(6) as
    ``verify_timestamped_dsse``, the declared digest against the artifact's, and (7) the signature over
    the artifact's sha256. Returns (certificate, latest signed time, checks)."""
    d = _obj(doc, "$")
    _version(d)
    ms = _obj(d.get("messageSignature"), "$.messageSignature")
    signature = _b64(ms.get("signature"), "$.messageSignature.signature")
    certs, _, timestamps = _material(d, logged=False)
    leaf = certs[0]
    times = _signed_times(timestamps, signature, trust_root)
    checks = [Check("time", "pass", "verified signed timestamps (no transparency log entry)",
                    actual=[t.isoformat() for t in times], evidence=evidence)]
    verify_signing_certificate(leaf, certs[1:], trust_root, times, require_sct=False)
    checks.append(Check("certificate.chain", "pass", f"chains to {trust_root.name}",
                        expected=trust_root.name, actual=leaf.issuer.rfc4514_string(), evidence=evidence))
    _check_declared_digest(ms.get("messageDigest"), artifact_sha256)
    checks.append(verify_message_signature(leaf, signature, artifact_sha256, evidence=evidence))
    return leaf, max(times), tuple(checks)


def _check_declared_digest(md: Any, artifact_sha256: Digest) -> None:
    """A declared ``messageDigest`` must be this artifact's sha256 (absent: the signature decides)."""
    if md is None:
        return
    md = _obj(md, "$.messageSignature.messageDigest")
    declared = _b64(md.get("digest"), "$.messageSignature.messageDigest.digest")
    if md.get("algorithm") != "SHA2_256" or not hmac.compare_digest(declared, artifact_sha256.value):
        raise LegacyVerificationError(
            OTHER_BYTES, check="digest",
            expected=str(artifact_sha256), actual=digest_text(md.get("algorithm"), declared.hex()))


#: Every exception type that means "verification failed" here (each has ``.to_check()``).
VERIFICATION_ERRORS = (LegacyVerificationError, TlogVerificationError, CertificateVerificationError)

__all__ = [
    "LegacyVerificationError",
    "LegacyResult",
    "VERIFICATION_ERRORS",
    "is_legacy",
    "verify_legacy_dsse",
    "verify_legacy_dsse_detailed",
    "verify_legacy_message",
    "verify_message_signature",
    "verify_timestamped_dsse",
    "verify_key_dsse",
    "KEY_DSSE_SCHEMES",
    "verify_timestamped_message",
]


# -- message signatures with only an inclusion promise ------------------------------------------------


def verify_legacy_message(
    doc: Any,
    artifact_sha256: Digest,
    trust_root: TrustRoot,
    *,
    evidence: str | None = None,
    now: datetime | None = None,
) -> tuple[x509.Certificate, datetime, tuple[Check, ...]]:
    """A keyless message-signature bundle (``hashedrekord/0.0.1``) that sigstore-python refuses because
    it carries an inclusion promise but no inclusion proof (valid for v0.1 bundles per the bundle spec).

    Same steps as the DSSE path: (4)+(5) log entry (SET; proof when present, required for v0.2+),
    (0) times, (1)-(3),(6) certificate at those times with its SCT, (7) the signature over the
    artifact's sha256 with the certificate key, (8) the logged hashedrekord body names this artifact,
    this signature and this certificate (CVE-2022-36056). Returns (certificate, integrated time, checks).
    Raises ``VERIFICATION_ERRORS`` members or ``BundleError``.
    """
    d = _obj(doc, "$")
    version = _version(d)
    ms = _obj(d.get("messageSignature"), "$.messageSignature")
    signature = _b64(ms.get("signature"), "$.messageSignature.signature")
    md = ms.get("messageDigest")
    certs, logged, timestamps = _material(d)
    entry = _one_entry(logged)
    leaf = certs[0]
    if (entry.kind, entry.version) != ("hashedrekord", "0.0.1"):
        raise LegacyVerificationError(
            f"log entry kind {entry.kind}/{entry.version} does not fit a message signature",
            check="tlog.entry", expected="hashedrekord/0.0.1", actual=f"{entry.kind}/{entry.version}")
    checks: list[Check] = []
    result = verify_entry(entry, trust_root, require_proof=proof_required(version), now=now,
                          evidence=evidence)
    checks.extend(result.checks)
    times: list[datetime] = [result.integrated_time] if result.promise else []
    times.extend(_verify_timestamps(timestamps, signature, trust_root))
    if not times:
        raise LegacyVerificationError(
            "no verified signing time: the entry has no inclusion promise and no signed timestamp",
            check="timestamp", expected="inclusion promise or RFC 3161 timestamp", actual=None)
    verify_signing_certificate(leaf, certs[1:], trust_root, times)
    checks.append(Check("certificate.chain", "pass", f"chains to {trust_root.name}; SCT valid",
                        expected=trust_root.name, actual=leaf.issuer.rfc4514_string(), evidence=evidence))
    _check_declared_digest(md, artifact_sha256)
    checks.append(verify_message_signature(leaf, signature, artifact_sha256, evidence=evidence))
    try:
        body = parse_json(entry.canonicalized_body, what="log entry body")
        spec = body["spec"]
        logged_hash = f"{spec['data']['hash']['algorithm']}:{spec['data']['hash']['value']}"
        logged_sig = base64.b64decode(str(spec["signature"]["content"]), validate=True)
        logged_cert = _pem_cert(spec["signature"]["publicKey"]["content"], "logged publicKey.content")
    except (KeyError, TypeError, binascii.Error, ValueError, BundleError) as err:
        raise _body_fail(f"hashedrekord body is unreadable ({err})") from None
    if logged_hash != str(artifact_sha256):
        raise _body_fail("the logged hash names another artifact", str(artifact_sha256), logged_hash)
    if not hmac.compare_digest(logged_sig, signature):
        raise _body_fail("the logged signature differs from the bundle's")
    if not _same_cert(logged_cert, leaf):
        raise _body_fail("the logged certificate differs from the bundle's")
    checks.append(Check("tlog.body", "pass", "hashedrekord/0.0.1 entry matches the bundle",
                        evidence=evidence))
    return leaf, result.integrated_time, tuple(checks)


def verify_message_signature(
    leaf: x509.Certificate, signature: bytes, artifact_sha256: Digest, *, evidence: str | None = None
) -> Check:
    """Step (7) for a message signature: ``signature`` by the certificate's key over the artifact's
    sha256, as cosign ``sign-blob`` makes it (ECDSA P-256 over the prehashed digest). Raises
    ``LegacyVerificationError`` (check ``signature``, a tampering failure) when it does not verify."""
    if verify_signature(leaf.public_key(), signature, artifact_sha256.value, ("ecdsa-sha256",),
                        prehashed=True) is None:
        raise LegacyVerificationError(
            "signature is invalid for this artifact", check="signature",
            expected=f"a signature by the certificate key over {artifact_sha256}",
            actual="invalid signature") from None
    return Check("signature", "pass", "signature verified", evidence=evidence)
