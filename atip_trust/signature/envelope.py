"""Plain DSSE envelopes signed with a key: writing one (``verify --emit-vsa``) and checking one as
slsa-verifier ``verify-vsa`` does (``verify-vsa``).

A VSA travels as one JSON line holding a DSSE envelope ``{"payloadType", "payload", "signatures":
[{"keyid", "sig"}]}`` (slsa-verifier ``cli/slsa-verifier/testdata/vsa``), not as a Sigstore bundle; the
signature is over the DSSE PAE (``dsse.pae``), never the payload alone.

The key-id rule is slsa-verifier's, which is go-securesystemslib's ``EnvelopeVerifier.Verify``: the
verifier's key id is ``--public-key-id`` when given, else the key's SSH fingerprint
(``SHA256:`` + unpadded base64 of the SHA-256 of the SSH wire-format key, ``ssh.FingerprintSHA256``). A
signature whose ``keyid`` is non-empty and differs from it is not tried; an empty ``keyid`` is tried with
any key. So a vector whose ``keyid`` is a name such as ``keystore://...`` verifies only when that exact
name is given (slsa-verifier README, "verify-vsa", Caveats).

Schemes are ``LOG_SCHEMES`` (algorithms.py): slsa-verifier's ``determineSignatureHashAlgo`` picks the
hash by key (ECDSA by curve, RSA SHA-256, Ed25519 pure), the same table.
"""

from __future__ import annotations

import base64
import hashlib
import os
from typing import TYPE_CHECKING

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    PublicFormat,
    load_pem_private_key,
)

from atip_trust._base.files import read_capped
from atip_trust._base.jsonio import b64_bytes, expect_object, get_field, parse_json
from atip_trust._base.limits import LIMITS
from atip_trust._base.record import Record
from atip_trust.errors import AtipTrustError, BundleError, UsageError
from atip_trust.signature.algorithms import LOG_SCHEMES, verify_signature
from atip_trust.signature.dsse import pae
from atip_trust.signature.keys import PublicKey, _check_supported

if TYPE_CHECKING:
    from typing import Any

PrivateKey = ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey | rsa.RSAPrivateKey

#: An envelope with more signatures than this is refused before any is tried (a bounded loop).
MAX_SIGNATURES = 16


class Envelope(Record):
    """A parsed DSSE envelope: the payload type, the payload bytes and ``(keyid, signature)`` pairs."""

    _no_repr = frozenset({"payload"})
    payload_type: str
    payload: bytes
    signatures: tuple[tuple[str, bytes], ...]


def ssh_key_id(key: PublicKey) -> str:
    """go-securesystemslib ``SHA256KeyID``: ``SHA256:`` + unpadded base64 of SHA-256 of the SSH wire
    form (the second field of the OpenSSH public-key line)."""
    wire = base64.b64decode(key.public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(wire).digest()).decode().rstrip("=")


def load_private_key(path: str | os.PathLike[str]) -> PrivateKey:
    """``--vsa-key FILE``: an unencrypted PEM private key of a type ``keys.py`` verifies."""
    source = os.fspath(path)
    data = read_capped(path, LIMITS.key_bytes, what="private key")
    try:
        key = load_pem_private_key(data, password=None)
    except TypeError as err:  # encrypted: a CI signer reads its key unattended, never prompts
        raise UsageError(f"{source}: the private key is encrypted; give an unencrypted PEM key") from err
    except (ValueError, UnsupportedAlgorithm) as err:
        first = str(err).split(". See https://", 1)[0]
        raise BundleError(f"cannot load PEM private key: {first}", path=source) from err
    if not isinstance(key, (ec.EllipticCurvePrivateKey, ed25519.Ed25519PrivateKey, rsa.RSAPrivateKey)):
        raise BundleError(f"unsupported private key type {type(key).__name__.lstrip('_')}", path=source)
    _check_supported(key.public_key(), source)  # the same curves and sizes the verifier accepts
    return key


def sign_envelope(key: PrivateKey, payload_type: str, payload: bytes, *, key_id: str | None = None) -> dict[str, Any]:
    """A DSSE envelope over ``payload`` signed by ``key`` under its ``LOG_SCHEMES`` scheme; ``keyid``
    is ``key_id`` or the key's SSH fingerprint, so slsa-verifier finds it without ``--public-key-id``."""
    message = pae(payload_type, payload)
    if isinstance(key, ec.EllipticCurvePrivateKey):
        algo: hashes.HashAlgorithm = {384: hashes.SHA384(), 521: hashes.SHA512()}.get(
            key.curve.key_size, hashes.SHA256())
        sig = key.sign(message, ec.ECDSA(algo))
    elif isinstance(key, ed25519.Ed25519PrivateKey):
        sig = key.sign(message)
    else:
        sig = key.sign(message, padding.PKCS1v15(), hashes.SHA256())
    return {
        "payloadType": payload_type,
        "payload": base64.b64encode(payload).decode(),
        "signatures": [{"keyid": key_id if key_id is not None else ssh_key_id(key.public_key()),
                        "sig": base64.b64encode(sig).decode()}],
    }


def parse_envelope(data: bytes, *, source: str) -> Envelope:
    """The one DSSE envelope ``data`` holds: a JSON document, on one line or pretty-printed. A second
    document after it is refused, never left unread (a ``.jsonl`` of several envelopes is split into
    its lines by the caller: admission/vsa.py ``vsa_documents``)."""
    if not data.strip():
        raise BundleError("no DSSE envelope: the file is empty", path=source)
    try:
        parsed = parse_json(data.strip(), what="DSSE envelope", max_depth=LIMITS.json_depth)
    except AtipTrustError as err:
        raise BundleError(f"{err.message} (one envelope per file: a file of several is split by line "
                          "where several are expected)", path=source) from err
    doc = expect_object(parsed, "$", error=BundleError)
    payload_type = get_field(doc, "payloadType", str, path="$", error=BundleError)
    payload = b64_bytes(doc.get("payload"), "$.payload", error=BundleError)
    sigs = doc.get("signatures")
    if not isinstance(sigs, list) or not sigs:
        raise BundleError("expected a non-empty list of signatures", path="$.signatures")
    if len(sigs) > MAX_SIGNATURES:
        raise BundleError(f"{len(sigs)} signatures is over the cap of {MAX_SIGNATURES}", path="$.signatures")
    pairs: list[tuple[str, bytes]] = []
    for i, s in enumerate(sigs):
        obj = expect_object(s, f"$.signatures[{i}]", error=BundleError)
        keyid = get_field(obj, "keyid", str, path=f"$.signatures[{i}]", required=False, error=BundleError)
        pairs.append((keyid or "", b64_bytes(obj.get("sig"), f"$.signatures[{i}].sig", error=BundleError)))
    return Envelope(payload_type, payload, tuple(pairs))


def envelope_signed_by(env: Envelope, key: PublicKey, key_id: str | None) -> str | None:
    """The ``keyid`` of the first signature ``key`` made over the envelope's PAE, or None.

    go-securesystemslib's rule: with ``key_id`` None or empty the verifier's id is ``ssh_key_id(key)``;
    a signature with a non-empty, different ``keyid`` is skipped (module docstring)."""
    mine = key_id or ssh_key_id(key)
    message = pae(env.payload_type, env.payload)
    for keyid, sig in env.signatures:
        if keyid and keyid != mine:
            continue
        if any(verify_signature(key, form, message, LOG_SCHEMES) is not None for form in _forms(key, sig)):
            return keyid
    return None


def _forms(key: PublicKey, sig: bytes) -> tuple[bytes, ...]:
    """The signature as given, and for ECDSA a raw ``r || s`` (IEEE P1363, what Google's BCID VSAs in
    slsa-verifier's testdata carry, and what sigstore-go's ECDSA verifier also takes) as DER."""
    if not isinstance(key, ec.EllipticCurvePublicKey):
        return (sig,)
    size = (key.curve.key_size + 7) // 8
    if len(sig) != 2 * size:
        return (sig,)
    r, s = int.from_bytes(sig[:size], "big"), int.from_bytes(sig[size:], "big")
    return (sig, encode_dss_signature(r, s))


__all__ = ["MAX_SIGNATURES", "Envelope", "PrivateKey", "envelope_signed_by", "load_private_key",
           "parse_envelope", "sign_envelope", "ssh_key_id"]
