"""Key-based signatures: cosign-style detached signatures and Sigstore bundles signed with a public key.

sigstore-python 4.5.1 refuses bundles whose ``verificationMaterial`` is a ``publicKey`` ("expected
certificate in bundle") and has no detached-signature API, so this module does both on ``cryptography``
(never by running ``cosign`` or ``openssl``; principle 5).

Signature schemes, as cosign ``verify-blob --key`` applies them (sigstore/sigstore
``signature.LoadDefaultVerifier``; cosign PRs #4050 and #5064 removed cosign's old hard-coded SHA-256):

===================  =====================================================================
ECDSA P-256          SHA-256
ECDSA P-384          SHA-384 (cosign >= 2.6); SHA-256 is accepted too, because cosign before
                     2.6 signed and verified every key with SHA-256 (``LoadPublicKey`` hard-coded
                     ``crypto.SHA256``). A signature is valid under one of the two or neither.
Ed25519              pure Ed25519 (RFC 8032) over the whole message, which must therefore be read
                     into memory: capped at ``ED25519_MAX_MESSAGE_BYTES``. cosign signs with
                     Ed25519ph when it uploads to Rekor (cosign PR #4414); ``cryptography`` has no
                     Ed25519ph, so such signatures cannot be checked here and are reported as
                     unverifiable, not as tampering.
RSA >= 2048 bits     PKCS#1 v1.5 with SHA-256, then PSS (MGF1-SHA-256, any salt length).
===================  =====================================================================

ECDSA and RSA verify a *prehashed* digest (``cryptography``'s ``Prehashed``), so an artifact is read
once, from its descriptor, in bounded memory.

Results are facts, never decisions: each carries ``checks`` (``report.Check``) naming expected and actual
values, ``valid``, and ``compromised`` (evidence of tampering, principle 2).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import re
from datetime import datetime
from typing import TYPE_CHECKING

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    PublicFormat,
    load_pem_public_key,
)

from atip_trust._base.files import read_capped, read_fd_capped
from atip_trust._base.jsonio import b64_bytes, expect_object, get_field, parse_json
from atip_trust._base.limits import LIMITS
from atip_trust._base.record import Record, field
from atip_trust.errors import (
    ArtifactAccessError,
    BundleError,
    InputTooLargeError,
    UntrustedInputError,
)
from atip_trust.facts.artifact import Artifact
from atip_trust.facts.digest import Digest
from atip_trust.facts.report import Check
from atip_trust.signature.algorithms import Scheme, hash_name, verify_signature
from atip_trust.signature.bundle import bundle_version, proof_required
from atip_trust.signature.tlog import LogEntry, TlogVerificationError, verify_entry
from atip_trust.signature.trustroot import TrustRoot

if TYPE_CHECKING:
    from typing import Any

    from atip_trust.facts.report import Impact

PublicKey = ec.EllipticCurvePublicKey | ed25519.Ed25519PublicKey | rsa.RSAPublicKey

#: Pure Ed25519 needs the whole message in memory (it hashes R ‖ A ‖ M itself); cap what we read.
ED25519_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
#: Smallest RSA modulus accepted (NIST SP 800-131A: 2048 bits since 2014).
MIN_RSA_BITS = 2048
_CURVES = {"secp256r1": "P-256", "secp384r1": "P-384"}


# --- keys ---------------------------------------------------------------------------------------------


def describe_key(key: PublicKey) -> str:
    """``ECDSA P-256``, ``Ed25519``, ``RSA-3072``: for messages."""
    if isinstance(key, ec.EllipticCurvePublicKey):
        return f"ECDSA {_CURVES.get(key.curve.name, key.curve.name)}"
    if isinstance(key, ed25519.Ed25519PublicKey):
        return "Ed25519"
    return f"RSA-{key.key_size}"


def _check_supported(key: Any, source: str) -> PublicKey:
    if isinstance(key, ec.EllipticCurvePublicKey):
        if key.curve.name not in _CURVES:
            raise BundleError(
                f"unsupported ECDSA curve {key.curve.name} (supported: P-256, P-384)", path=source
            )
        return key
    if isinstance(key, ed25519.Ed25519PublicKey):
        return key
    if isinstance(key, rsa.RSAPublicKey):
        if key.key_size < MIN_RSA_BITS:
            raise BundleError(
                f"RSA key of {key.key_size} bits is too small (minimum {MIN_RSA_BITS})", path=source
            )
        return key
    raise BundleError(
        f"unsupported public key type {type(key).__name__.lstrip('_')} "
        "(supported: ECDSA P-256/P-384, Ed25519, RSA >= 2048)",
        path=source,
    )


def parse_public_key(data: bytes, *, source: str = "public key") -> PublicKey:
    """A PEM ``PUBLIC KEY`` (SubjectPublicKeyInfo) of a supported type."""
    if b"-----BEGIN" not in data:
        raise BundleError("not a PEM public key (no '-----BEGIN' line)", path=source)
    try:
        key = load_pem_public_key(data)
    except (ValueError, UnsupportedAlgorithm) as err:
        first = str(err).split(". See https://", 1)[0]
        raise BundleError(f"cannot load PEM public key: {first}", path=source) from err
    return _check_supported(key, source)


def load_public_key(path: str | os.PathLike[str]) -> PublicKey:
    """Load ``--key FILE`` (capped at ``LIMITS.key_bytes``)."""
    data = read_capped(path, LIMITS.key_bytes, what="public key")
    return parse_public_key(data, source=os.fspath(path))


def key_der(key: PublicKey) -> bytes:
    return key.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)


def key_digest(key: PublicKey) -> Digest:
    """sha256 of the DER SubjectPublicKeyInfo: the key id Rekor and the bundle ``publicKey.hint`` use."""
    return Digest("sha256", hashlib.sha256(key_der(key)).digest())


def _same_key(a: PublicKey, b: PublicKey) -> bool:
    return hmac.compare_digest(key_der(a), key_der(b))


# --- detached signatures ------------------------------------------------------------------------------

_B64_TEXT = re.compile(rb"[A-Za-z0-9+/=\s]+")


def decode_signature(data: bytes, *, source: str = "signature") -> bytes:
    """cosign writes ``sign-blob --output-signature`` as base64 text; other tools write raw bytes.

    The two forms are ambiguous in principle: a raw signature could consist only of base64 characters.
    We try a strict base64 decode of the whitespace-stripped text first and use it when it succeeds,
    as cosign does. A raw DER ECDSA signature starts with 0x30 and an Ed25519/RSA signature is random
    bytes, so the chance that one is also valid base64 is negligible (every byte would have to be one
    of 65 characters); should it happen, the signature simply fails to verify (never a false pass).
    """
    if not data:
        raise BundleError("signature file is empty", path=source)
    if _B64_TEXT.fullmatch(data):
        compact = b"".join(data.split())
        try:
            decoded = base64.b64decode(compact, validate=True)
        except (binascii.Error, ValueError):
            decoded = b""
        if decoded:
            return decoded
    return data


def load_detached_signature(path: str | os.PathLike[str]) -> bytes:
    """Load ``--signature FILE``: base64 text (whitespace tolerated) or raw bytes; see ``decode_signature``."""
    data = read_capped(path, LIMITS.key_bytes, what="signature")
    return decode_signature(data, source=os.fspath(path))


def _hash_fd(fd: int, algorithm: str, chunk: int = LIMITS.hash_chunk) -> bytes:
    """Stream a descriptor through one hash with pread (the offset stays put for a later exec)."""
    h = hashlib.new(algorithm)
    offset = 0
    try:
        while True:
            block = os.pread(fd, chunk, offset)
            if not block:
                break
            h.update(block)
            offset += len(block)
    except OSError as err:
        raise ArtifactAccessError(f"read failed at offset {offset}: {err.strerror}") from err
    return h.digest()


def _read_fd_capped(fd: int, cap: int) -> bytes:
    try:
        return read_fd_capped(fd, cap, what="artifact")
    except InputTooLargeError as err:
        raise InputTooLargeError(
            f"artifact is over {cap} bytes, the cap for Ed25519 signatures "
            "(pure Ed25519 needs the whole message in memory)"
        ) from err


class _Message:
    """The signed message: bytes in memory, or an artifact read through its descriptor on demand."""

    def __init__(self, source: Artifact | bytes) -> None:
        self._source = source
        self._digests: dict[str, bytes] = {}

    def digest(self, algorithm: str) -> bytes:
        if algorithm not in self._digests:
            if isinstance(self._source, bytes):
                self._digests[algorithm] = hashlib.new(algorithm, self._source).digest()
            elif algorithm == "sha256":
                self._digests[algorithm] = self._source.sha256.value
            else:
                self._digests[algorithm] = _hash_fd(self._source.fd, algorithm)
        return self._digests[algorithm]

    def data(self, cap: int) -> bytes:
        if isinstance(self._source, bytes):
            if len(self._source) > cap:
                raise InputTooLargeError(f"message is over {cap} bytes, the cap for Ed25519 signatures")
            return self._source
        return _read_fd_capped(self._source.fd, cap)


def _cosign_schemes(key: PublicKey) -> tuple[Scheme, ...]:
    """The schemes cosign may have used for this key type, in the order tried (module docstring)."""
    if isinstance(key, ec.EllipticCurvePublicKey):
        return ("ecdsa-sha384", "ecdsa-sha256") if key.curve.name == "secp384r1" else ("ecdsa-sha256",)
    if isinstance(key, rsa.RSAPublicKey):
        return ("rsa-pkcs1v15-sha256", "rsa-pss-sha256")
    return ("ed25519",)


def _scheme_name(key: PublicKey, scheme: Scheme) -> str:
    """The scheme as reported: ``ecdsa-p256-sha256`` names the curve; the others as they are."""
    if isinstance(key, ec.EllipticCurvePublicKey):
        return f"ecdsa-{_CURVES[key.curve.name].lower().replace('-', '')}-{hash_name(key, scheme)}"
    return scheme


def _verify_prehashed(key: PublicKey, signature: bytes, msg: _Message) -> str | None:
    """Try each scheme cosign may have used for this key type; the name of the one that verifies, or None."""
    for scheme in _cosign_schemes(key):
        name = hash_name(key, scheme)
        if name is None:  # pure Ed25519: the whole message
            ok = verify_signature(key, signature, msg.data(ED25519_MAX_MESSAGE_BYTES), (scheme,))
        else:
            ok = verify_signature(key, signature, msg.digest(name), (scheme,), prehashed=True)
        if ok is not None:
            return _scheme_name(key, ok)
    return None


def _schemes(key: PublicKey) -> str:
    if isinstance(key, ec.EllipticCurvePublicKey):
        return "ECDSA-SHA384 or ECDSA-SHA256" if key.curve.name == "secp384r1" else "ECDSA-SHA256"
    if isinstance(key, rsa.RSAPublicKey):
        return "RSA PKCS#1 v1.5 or PSS with SHA-256"
    return "pure Ed25519"


class KeySignatureResult(Record, frozen=False):
    """Outcome of one key signature check. Read ``valid`` / ``compromised``; the object is not truthy."""

    valid: bool
    compromised: bool
    key_digest: Digest
    key_type: str
    #: The scheme that verified (``ecdsa-p256-sha256``, ``ed25519``, ``rsa-pss-sha256``), or None.
    scheme: str | None
    checks: list[Check] = field(default_factory=list)
    #: False when the material is about another artifact (principle 2: it then counts as absent).
    applies: bool = True

    def __bool__(self) -> bool:  # pragma: no cover - guard against `if result:`
        raise TypeError("result has no truth value; read .valid / .compromised")


def verify_detached(
    message: Artifact | bytes,
    signature: bytes,
    key: PublicKey,
    *,
    evidence: str | None = None,
) -> KeySignatureResult:
    """cosign ``verify-blob --key K --signature S ARTIFACT``: is ``signature`` by ``key`` over the artifact?

    A signature that does not verify is evidence of tampering (COMPROMISED), except for Ed25519, where it
    may be a valid Ed25519ph signature this module cannot check (then: not valid, not compromised).
    """
    kd = key_digest(key)
    msg = _Message(message)
    scheme = _verify_prehashed(key, signature, msg)
    ktype = describe_key(key)
    if scheme is not None:
        check = Check("signature", "pass", f"{ktype} signature verifies ({scheme})",
                      expected=str(kd), actual=str(kd), evidence=evidence)
        return KeySignatureResult(True, False, kd, ktype, scheme, [check])
    ed = isinstance(key, ed25519.Ed25519PublicKey)
    impact: Impact = "unverified" if ed else "compromised"
    text = (
        f"signature does not verify with the {ktype} key {kd} over sha256:{msg.digest('sha256').hex()} "
        f"(tried {_schemes(key)})"
    )
    if ed:
        text += "; an Ed25519ph signature (cosign's choice when it uploads to Rekor) cannot be checked here"
    check = Check("signature", "fail", text, expected=f"valid signature by {kd}",
                  actual="invalid signature", evidence=evidence, impact=impact)
    return KeySignatureResult(False, not ed, kd, ktype, None, [check])


# --- Sigstore bundles with a public key ---------------------------------------------------------------


class KeyBundleResult(KeySignatureResult, frozen=False):
    """A key bundle's outcome; ``entry`` is the verified log entry's facts when the log checks passed."""

    integrated_time: datetime | None = None
    log_url: str | None = None
    log_index: int | None = None


def _fail(name: str, message: str, *, expected: Any, actual: Any, evidence: str | None,
          impact: Impact) -> Check:
    return Check(name, "fail", message, expected=expected, actual=actual, evidence=evidence, impact=impact)


def _body_checks(
    body: bytes,
    *,
    signature: bytes,
    artifact_sha256: Digest,
    key: PublicKey,
    evidence: str | None,
) -> tuple[list[Check], PublicKey | None]:
    """The hashedrekord 0.0.1 body the log signed must describe this bundle: same artifact hash, same
    signature, same key (CVE-2022-36056: a valid entry for *other* material must not vouch for this one).
    Returns the checks and the key the log recorded (None if unreadable)."""
    where = "$.verificationMaterial.tlogEntries[0].canonicalizedBody"
    try:
        doc = parse_json(body, what="log entry body", max_depth=LIMITS.json_depth)
        spec = doc["spec"]
        kind, api = doc["kind"], doc["apiVersion"]
        h = spec["data"]["hash"]
        algo, value = h["algorithm"], h["value"]
        sig_b64 = spec["signature"]["content"]
        pem_b64 = spec["signature"]["publicKey"]["content"]
    except (KeyError, TypeError) as err:
        raise BundleError(f"hashedrekord body is missing {err}", path=where) from err
    except UntrustedInputError as err:  # not JSON, bad UTF-8, too deep
        raise BundleError(f"log entry body is not valid JSON: {err.message}", path=where) from err
    if (kind, api) != ("hashedrekord", "0.0.1"):
        raise BundleError(f"body is {kind}/{api}, expected hashedrekord/0.0.1", path=where)
    checks: list[Check] = []
    body_hash = f"{algo}:{value}"
    if body_hash == str(artifact_sha256):
        checks.append(Check("tlog.body.digest", "pass", "log entry names this artifact",
                            expected=str(artifact_sha256), actual=body_hash, evidence=evidence))
    else:
        checks.append(_fail("tlog.body.digest",
                            f"log entry names artifact {body_hash}, not this artifact {artifact_sha256}",
                            expected=str(artifact_sha256), actual=body_hash, evidence=evidence,
                            impact="compromised"))
    try:
        body_sig = base64.b64decode(str(sig_b64), validate=True)
    except (binascii.Error, ValueError):
        body_sig = b""
    if body_sig and hmac.compare_digest(body_sig, signature):
        checks.append(Check("tlog.body.signature", "pass", "log entry records the bundle's signature",
                            evidence=evidence))
    else:
        checks.append(_fail("tlog.body.signature",
                            "log entry records a different signature than the bundle's messageSignature",
                            expected=base64.b64encode(signature).decode(), actual=str(sig_b64)[:200],
                            evidence=evidence, impact="compromised"))
    logged_key: PublicKey | None = None
    try:
        pem = base64.b64decode(str(pem_b64), validate=True)  # base64 of the PEM (docs/sigstore.md)
        logged_key = parse_public_key(pem, source=where)
    except (binascii.Error, ValueError, BundleError):
        logged_key = None
    given = key_digest(key)
    if logged_key is not None and _same_key(logged_key, key):
        checks.append(Check("tlog.body.key", "pass", "log entry records the given key",
                            expected=str(given), actual=str(given), evidence=evidence))
    else:
        actual = str(key_digest(logged_key)) if logged_key is not None else "unreadable key"
        checks.append(_fail("tlog.body.key",
                            f"log entry records key {actual}, not the given key {given}",
                            expected=str(given), actual=actual, evidence=evidence, impact="unverified"))
    return checks, logged_key


class _KeyBundle(Record):
    """Step (1)'s output: the parts of a well-formed key bundle the later steps check."""

    version: str
    public_key: dict[str, Any]
    signature: bytes
    message_digest: bytes
    entry: LogEntry


class _KeyCheck(Record, frozen=False):
    """One ``verify_key_bundle`` call after step (1): its inputs, the checks so far and the findings
    steps (2)-(6) leave for the verdict."""

    key: PublicKey
    artifact_sha256: Digest
    evidence: str | None
    kd: Digest
    ktype: str
    checks: list[Check] = field(default_factory=list)
    compromised: bool = False
    applies: bool = True
    hint_mismatch: bool = False
    digest_ok: bool = False
    sig_ok: str | None = None
    tlog_ok: bool = False
    by_other_key: bool = False
    result_time: datetime | None = None
    log_url: str | None = None
    log_index: int | None = None


def verify_key_bundle(
    bundle_json: dict[str, Any],
    artifact_sha256: Digest,
    key: PublicKey,
    trust_root: TrustRoot,
    *,
    evidence: str | None = None,
    now: datetime | None = None,
) -> KeyBundleResult:
    """Verify a Sigstore bundle whose verification material is a public key (cosign ``--key`` bundles).

    Steps, in order (each a named check):
      (1) shape: known media type, ``publicKey`` material, a ``messageSignature`` with a SHA2_256 digest,
          exactly one ``hashedrekord/0.0.1`` log entry (malformed: ``BundleError``, exit 2);
      (2) ``key``: the bundle's ``publicKey.hint``, when present, names the given key;
      (3) ``digest``: ``messageDigest`` equals the artifact's sha256;
      (4) ``signature``: the signature verifies with the given key over the artifact's sha256;
      (5) ``tlog.*``: the entry's proof, checkpoint and SET against the trusted root (tlog.verify_entry);
      (6) ``tlog.body.*``: the logged body names this artifact, this signature and this key.
    """
    bundle = _key_bundle_shape(bundle_json)
    st = _KeyCheck(key=key, artifact_sha256=artifact_sha256, evidence=evidence,
                   kd=key_digest(key), ktype=describe_key(key))
    _step_hint(st, bundle.public_key)
    bundle_digest = _step_digest(st, bundle.message_digest)
    _step_signature(st, bundle.signature, bundle_digest)
    _step_log(st, bundle.entry, trust_root, bundle.version, now)
    _step_body(st, bundle.entry, bundle.signature)
    _step_signature_failure(st)
    valid = all(not c.failed for c in st.checks) and st.sig_ok is not None and st.tlog_ok
    return KeyBundleResult(
        valid=valid,
        compromised=st.compromised and not valid,
        key_digest=st.kd,
        key_type=st.ktype,
        scheme=st.sig_ok,
        checks=st.checks,
        applies=st.applies,
        integrated_time=st.result_time,
        log_url=st.log_url,
        log_index=st.log_index,
    )


def _key_bundle_shape(bundle_json: dict[str, Any]) -> _KeyBundle:
    """(1) shape; a malformed bundle raises ``BundleError`` naming the JSON path."""
    if not isinstance(bundle_json, dict):
        raise BundleError("bundle is not a JSON object", path="$")
    media = bundle_json.get("mediaType")
    version = bundle_version(media)
    if version is None:
        raise BundleError(f"unsupported bundle mediaType {media!r:.100}", path="$.mediaType")
    bad = BundleError  # every shape error below is a malformed bundle, named by its JSON path
    vm = get_field(bundle_json, "verificationMaterial", dict, path="$", error=bad)
    if "publicKey" not in vm:
        present = sorted(k for k in vm if k != "tlogEntries" and k != "timestampVerificationData")
        raise BundleError(
            f"bundle verification material is {present or 'empty'}, not publicKey "
            "(keyless bundles are verified against a certificate identity, not --key)",
            path="$.verificationMaterial",
        )
    pk = expect_object(vm["publicKey"], "$.verificationMaterial.publicKey", allowed={"hint"}, error=bad)
    if "messageSignature" not in bundle_json:
        other = "dsseEnvelope" if "dsseEnvelope" in bundle_json else "no content"
        raise BundleError(
            f"key bundle carries {other}; only messageSignature key bundles are supported",
            path="$.messageSignature",
        )
    ms = expect_object(bundle_json["messageSignature"], "$.messageSignature",
                       allowed={"messageDigest", "signature"}, error=bad)
    signature = b64_bytes(get_field(ms, "signature", object, path="$.messageSignature", error=bad),
                          "$.messageSignature.signature", error=bad)
    md = expect_object(get_field(ms, "messageDigest", object, path="$.messageSignature", error=bad),
                       "$.messageSignature.messageDigest", allowed={"algorithm", "digest"}, error=bad)
    md_alg = get_field(md, "algorithm", object, path="$.messageSignature.messageDigest", error=bad)
    md_value = b64_bytes(get_field(md, "digest", object, path="$.messageSignature.messageDigest", error=bad),
                         "$.messageSignature.messageDigest.digest", error=bad)
    if md_alg != "SHA2_256" or len(md_value) != 32:
        raise BundleError(
            f"messageDigest is {md_alg!r} with {len(md_value)} bytes; only SHA2_256 (32 bytes) is supported",
            path="$.messageSignature.messageDigest",
        )
    entries = get_field(vm, "tlogEntries", object, path="$.verificationMaterial", error=bad)
    if not isinstance(entries, list) or len(entries) != 1:
        n = len(entries) if isinstance(entries, list) else type(entries).__name__
        # sigstore-python accepts exactly one log entry; so do we (a second could be chosen by an attacker).
        raise BundleError(f"expected exactly one tlog entry, got {n}", path="$.verificationMaterial.tlogEntries")
    entry = LogEntry.from_json(entries[0], path="$.verificationMaterial.tlogEntries[0]")
    if (entry.kind, entry.version) != ("hashedrekord", "0.0.1"):
        raise BundleError(
            f"log entry is {entry.kind}/{entry.version}; key bundles need hashedrekord/0.0.1",
            path="$.verificationMaterial.tlogEntries[0].kindVersion",
        )
    return _KeyBundle(version, pk, signature, md_value, entry)


def _step_hint(st: _KeyCheck, pk: dict[str, Any]) -> None:
    """(2) The hint is unauthenticated; a mismatch means the bundle says another key signed it."""
    kd = st.kd
    if "hint" in pk:
        hint = pk["hint"]
        if isinstance(hint, str) and hint == base64.b64encode(kd.value).decode():
            st.checks.append(Check("key", "pass", f"bundle names the given {st.ktype} key",
                                   expected=str(kd), actual=str(kd), evidence=st.evidence))
        else:
            st.hint_mismatch = True
            st.checks.append(_fail("key", f"bundle publicKey.hint {hint!r:.80} does not name the given key {kd}",
                                   expected=base64.b64encode(kd.value).decode(), actual=hint,
                                   evidence=st.evidence, impact="unverified"))


def _step_digest(st: _KeyCheck, md_value: bytes) -> Digest:
    """(3) messageDigest against the artifact (a mismatch is reported after step (4), which tells
    whether the bundle is a valid signature over another artifact)."""
    bundle_digest = Digest("sha256", md_value)
    st.digest_ok = bundle_digest == st.artifact_sha256
    if st.digest_ok:
        st.checks.append(Check("digest", "pass", "messageDigest equals the artifact's sha256",
                               expected=str(st.artifact_sha256), actual=str(bundle_digest),
                               evidence=st.evidence))
    return bundle_digest


def _step_signature(st: _KeyCheck, signature: bytes, bundle_digest: Digest) -> None:
    """(4) The signature over the artifact (prehashed sha256; key bundles carry only a digest)."""
    key, kd, artifact_sha256 = st.key, st.kd, st.artifact_sha256
    sig_ok = st.sig_ok = _verify_digest(key, signature, artifact_sha256)
    if sig_ok is not None:
        st.checks.append(Check("signature", "pass", f"{st.ktype} signature over the artifact verifies ({sig_ok})",
                               expected=str(kd), actual=str(kd), evidence=st.evidence))
    if not st.digest_ok:
        # Valid material about another artifact does not apply to this one (principle 2); a digest that
        # neither matches nor is what the key signed is tampering.
        other_ok = _verify_digest(key, signature, bundle_digest) is not None
        st.applies = False if other_ok else st.applies
        st.compromised = st.compromised or not other_ok
        st.checks.append(_fail(
            "digest",
            f"bundle messageDigest {bundle_digest} is not the artifact's {artifact_sha256}"
            + (" (the bundle is a valid signature over another artifact)" if other_ok else ""),
            expected=str(artifact_sha256), actual=str(bundle_digest), evidence=st.evidence,
            impact="unsigned" if other_ok else "compromised",
        ))


def _step_log(st: _KeyCheck, entry: LogEntry, trust_root: TrustRoot, version: str,
              now: datetime | None) -> None:
    """(5) The log entry."""
    try:
        er = verify_entry(entry, trust_root, require_proof=proof_required(version), now=now,
                          evidence=st.evidence)
        st.checks.extend(er.checks)
        st.result_time, st.log_url, st.log_index = er.integrated_time, er.log_url, er.log_index
        st.tlog_ok = True
    except TlogVerificationError as err:
        failed = err.to_check(evidence=st.evidence)
        st.checks.append(failed)
        # A forged proof, checkpoint or SET for an entry naming this artifact is tampering; for material
        # about another artifact it changes nothing (it does not apply either way).
        if failed.impact == "compromised" and st.applies:
            st.compromised = True


def _step_body(st: _KeyCheck, entry: LogEntry, signature: bytes) -> None:
    """(6) The logged body against the bundle, the artifact and the key."""
    body_checks, logged_key = _body_checks(entry.canonicalized_body, signature=signature,
                                           artifact_sha256=st.artifact_sha256, key=st.key,
                                           evidence=st.evidence)
    st.checks.extend(body_checks)
    st.by_other_key = st.tlog_ok and logged_key is not None and not _same_key(logged_key, st.key)
    for c in body_checks:
        if c.failed and c.impact == "compromised" and st.applies:
            st.compromised = True


def _step_signature_failure(st: _KeyCheck) -> None:
    """(4) A signature that did not verify, reported once (2), (5) and (6) tell whose it may be."""
    key, kd, ktype = st.key, st.kd, st.ktype
    if st.sig_ok is None and isinstance(key, ed25519.Ed25519PublicKey):
        # hashedrekord carries only a digest: pure Ed25519 cannot be checked from it, and cosign's
        # Ed25519ph (cosign PR #4414) is not available in cryptography. Unverifiable, not tampering.
        st.checks.append(Check(
            "signature", "error",
            "Ed25519 key bundles (Ed25519ph over the digest) cannot be verified by atip-trust",
            expected="ECDSA or RSA key", actual=ktype, evidence=st.evidence, impact="unverified",
        ))
    elif st.sig_ok is None:
        # Signed by someone else (authenticated by the log, or claimed by the hint): not tampering, but
        # not a signer policy trusts. Otherwise the given key's signature over this artifact is invalid.
        other_signer = st.by_other_key or (st.hint_mismatch and not st.tlog_ok)
        if st.applies and not other_signer:
            st.compromised = True
        st.checks.append(_fail(
            "signature",
            f"signature does not verify with the {ktype} key {kd} over {st.artifact_sha256} "
            f"(tried {_schemes(key)} over the digest)"
            + ("; the log records another signing key" if st.by_other_key else ""),
            expected=f"valid signature by {kd}", actual="invalid signature", evidence=st.evidence,
            impact="unverified" if other_signer else ("unsigned" if not st.applies else "compromised"),
        ))


def _verify_digest(key: PublicKey, signature: bytes, digest: Digest) -> str | None:
    """Verify over a sha256 digest only (what a key bundle's hashedrekord carries). Ed25519 cannot be
    verified from a digest (pure Ed25519 hashes the message itself; Ed25519ph needs SHA-512)."""
    schemes: tuple[Scheme, ...] = ("ecdsa-sha256", "rsa-pkcs1v15-sha256", "rsa-pss-sha256")
    ok = verify_signature(key, signature, digest.value, schemes, prehashed=True)
    return None if ok is None else _scheme_name(key, ok)


__all__ = [
    "ED25519_MAX_MESSAGE_BYTES",
    "MIN_RSA_BITS",
    "KeyBundleResult",
    "KeySignatureResult",
    "PublicKey",
    "decode_signature",
    "describe_key",
    "key_digest",
    "load_detached_signature",
    "load_public_key",
    "parse_public_key",
    "verify_detached",
    "verify_key_bundle",
]
