"""DSSE (Dead Simple Signing Envelope) v1: what a DSSE signature signs.

Both DSSE verifiers use this: ``keyless.py`` for its own binding check before sigstore-python, and
``legacy_bundle.py`` step (7).
"""

from __future__ import annotations


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding ("Signature definition" in
    https://github.com/secure-systems-lab/dsse/blob/master/protocol.md):
    ``"DSSEv1" SP LEN(type) SP type SP LEN(body) SP body``, lengths in ASCII decimal bytes, the type
    UTF-8 encoded. A signature over the payload alone, or over another type, does not verify."""
    t = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(payload), payload)


__all__ = ["pae"]
