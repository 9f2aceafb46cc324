"""SHA-256 (and SHA-512) of small inputs — policies, bundles, trusted roots, cache entries — without OpenSSL.

Why: ``import hashlib`` loads OpenSSL's libcrypto through ``_hashlib`` (~5 ms on this project's machines),
and a cache-hit admission hashes only a few small files — it never hashes the artifact (the stat fast
path, README "Verdict cache"). CPython's built-in SHA-2 (``_sha2`` from 3.12, ``_sha256``/``_sha512`` in
3.11: what hashlib itself falls back to) gives the same digests and loads in under a millisecond. Above
``SMALL`` bytes OpenSSL's SHA extensions win by far, so larger inputs go to hashlib (imported then).
``facts/digest.py`` asks :func:`hasher` for each file it hashes, by the file's size: a bundle gets the
built-in one, an artifact of any real size OpenSSL's.
"""

from __future__ import annotations

import sys
TYPE_CHECKING = False  # typing's constant without importing typing at run time (README "Verdict cache")
if TYPE_CHECKING:
    from typing import Any

from atip_trust._base.lazy import lazy_import

if TYPE_CHECKING:
    import hashlib
else:
    hashlib = lazy_import("hashlib")

# Asked by version, not by trying: a failed import searches every sys.path entry first.
try:
    if sys.version_info >= (3, 12):
        from _sha2 import sha256 as _builtin_sha256  # type: ignore[import-not-found, unused-ignore]
        from _sha2 import sha512 as _builtin_sha512  # type: ignore[import-not-found, unused-ignore]
    else:
        from _sha256 import sha256 as _builtin_sha256  # type: ignore[import-not-found, unused-ignore]
        from _sha512 import sha512 as _builtin_sha512  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # pragma: no cover - an interpreter without them: hashlib for everything
    _builtin_sha256 = _builtin_sha512 = None

_BUILTIN = {"sha256": _builtin_sha256, "sha512": _builtin_sha512}

#: Inputs up to this size use the built-in implementation (a 64 KiB document takes well under a
#: millisecond there); larger ones OpenSSL's.
SMALL = 64 * 1024


def hasher(algorithm: str, size_hint: int) -> Any:
    """A fresh hash object (``.update()``, ``.digest()``) for ``algorithm`` ("sha256", "sha512", ...)
    and input of about ``size_hint`` bytes: the built-in SHA-256 for a small one, else hashlib's. The
    hint only picks the implementation; the digest is the same whatever is then fed to it."""
    # Once OpenSSL is loaded anyway (a verification, ``hash`` of many files), it is faster at every size.
    builtin = _BUILTIN.get(algorithm) if size_hint <= SMALL and "_hashlib" not in sys.modules else None
    return builtin() if builtin is not None else hashlib.new(algorithm)


def sha256(data: bytes) -> Any:
    """A finished SHA-256 hash object of ``data`` (``.digest()``, ``.hexdigest()``)."""
    h = hasher("sha256", len(data))
    h.update(data)
    return h


def sha256_hex(data: bytes) -> str:
    return sha256(data).hexdigest()  # type: ignore[no-any-return]


__all__ = ["SMALL", "hasher", "sha256", "sha256_hex"]
