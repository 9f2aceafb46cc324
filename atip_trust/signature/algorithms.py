"""Signature schemes by name, and the one place that runs them on ``cryptography``.

Each verifier names the schemes it accepts; a scheme for another key type is simply not tried, so a
caller never accepts more than its list. The lists, and why each is what it is:

=====================  ========================================================================
``LOG_SCHEMES``        transparency-log keys (checkpoint and SET, ``tlog.py``) and Fulcio leaf keys
                       over DSSE (``legacy_bundle.py`` step 7): ECDSA with the hash that matches the
                       curve (P-256 SHA-256, P-384 SHA-384, P-521 SHA-512), Ed25519 (Rekor v2),
                       RSA PKCS#1 v1.5 with SHA-256, as sigstore-python's keyring (``_internal/trust.py``)
``SCT_SCHEMES``        CT log keys over an SCT (``fulcio.py``): RFC 6962 §2.1.4 allows ECDSA and RSA
                       only, and the SCT's hash algorithm is checked to be SHA-256 before
``("ecdsa-sha256",)``  what ``keyless.py`` checks itself before sigstore-python (Fulcio's P-256 keys)
                       and ``legacy_bundle.verify_legacy_message`` over a prehashed sha256
``keys.py``            cosign's schemes for ``--key`` (its module docstring), prehashed
=====================  ========================================================================
"""

from __future__ import annotations

from typing import Literal

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import Prehashed

Scheme = Literal[
    "ecdsa-by-curve",
    "ecdsa-sha256",
    "ecdsa-sha384",
    "ed25519",
    "rsa-pkcs1v15-sha256",
    "rsa-pss-sha256",
]

LOG_SCHEMES: tuple[Scheme, ...] = ("ecdsa-by-curve", "ed25519", "rsa-pkcs1v15-sha256")
SCT_SCHEMES: tuple[Scheme, ...] = ("ecdsa-sha256", "rsa-pkcs1v15-sha256")

_HASHES: dict[str, type[hashes.HashAlgorithm]] = {
    "sha256": hashes.SHA256,
    "sha384": hashes.SHA384,
    "sha512": hashes.SHA512,
}
#: ECDSA curve size -> the hash of the same strength (FIPS 186-5 §6.4); other curves use SHA-256.
_CURVE_HASH = {384: "sha384", 521: "sha512"}


def hash_name(key: object, scheme: Scheme) -> str | None:
    """The hash algorithm (``sha256``, ...) ``scheme`` applies with ``key``; None for pure Ed25519."""
    if scheme == "ecdsa-by-curve":
        size = key.curve.key_size if isinstance(key, ec.EllipticCurvePublicKey) else 256
        return _CURVE_HASH.get(size, "sha256")
    if scheme == "ed25519":
        return None
    return scheme.rsplit("-", 1)[1]


def key_fits(key: object, scheme: Scheme) -> bool:
    """Whether ``scheme`` is one for ``key``'s type."""
    if scheme.startswith("ecdsa-"):
        return isinstance(key, ec.EllipticCurvePublicKey)
    if scheme == "ed25519":
        return isinstance(key, ed25519.Ed25519PublicKey)
    return isinstance(key, rsa.RSAPublicKey)


def _verify_one(key: object, signature: bytes, data: bytes, scheme: Scheme, prehashed: bool) -> None:
    name = hash_name(key, scheme)
    algo: hashes.HashAlgorithm | Prehashed | None = None
    if name is not None:
        algo = Prehashed(_HASHES[name]()) if prehashed else _HASHES[name]()
    if isinstance(key, ec.EllipticCurvePublicKey) and algo is not None:
        key.verify(signature, data, ec.ECDSA(algo))
    elif isinstance(key, ed25519.Ed25519PublicKey) and not prehashed:
        key.verify(signature, data)
    elif isinstance(key, rsa.RSAPublicKey) and algo is not None:
        pad: padding.AsymmetricPadding = padding.PKCS1v15()
        if scheme == "rsa-pss-sha256":
            pad = padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=padding.PSS.AUTO)
        key.verify(signature, data, pad, algo)
    else:  # pure Ed25519 hashes the message itself: it cannot verify a digest
        raise InvalidSignature


def verify_signature(
    key: object,
    signature: bytes,
    data: bytes,
    schemes: tuple[Scheme, ...],
    *,
    prehashed: bool = False,
) -> Scheme | None:
    """The first of ``schemes`` under which ``signature`` by ``key`` verifies over ``data``, or None.

    Schemes for another key type are skipped, so no key verifies under a scheme its caller did not
    list. ``prehashed``: ``data`` is already the digest of the scheme's hash (ECDSA and RSA only; an
    Ed25519 scheme then never verifies). A malformed signature is "does not verify", never an error.
    """
    for scheme in schemes:
        if not key_fits(key, scheme):
            continue
        try:
            _verify_one(key, signature, data, scheme, prehashed)
        except (InvalidSignature, UnsupportedAlgorithm, ValueError):
            continue
        return scheme
    return None


__all__ = ["LOG_SCHEMES", "SCT_SCHEMES", "Scheme", "hash_name", "key_fits", "verify_signature"]
