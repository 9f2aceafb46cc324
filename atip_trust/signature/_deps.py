"""The deferred imports of ``atip_trust.signature``, each written once (docs/adr/0001-start-up.md).

Every name below is a module imported on its first attribute read (_base/lazy.py); the package's
modules take it from here (``from atip_trust.signature._deps import ...``) rather than importing it, so
that a cache-hit admission, which never reads it, never pays for it. The comment says when it is read.
"""

from __future__ import annotations

from atip_trust._base.lazy import lazy_import

TYPE_CHECKING = False  # typing's constant without importing typing at run time
if TYPE_CHECKING:
    import base64
    import binascii
    import datetime as datetime_mod
    import pathlib
    from importlib import util as importlib_util

    import rfc3161_client
    import sigstore
    import sigstore.errors as sigstore_errors
    import sigstore.hashes as sigstore_hashes
    import sigstore.models as sigstore_models
    import sigstore.verify as sigstore_verify
    import sigstore_models.common.v1 as sigstore_common
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    from atip_trust.signature import fulcio
    from atip_trust.signature import keyless as keyless_mod
    import sigstore.dsse as sigstore_dsse
    import sigstore.oidc as sigstore_oidc
    import sigstore.sign as sigstore_sign
else:
    base64 = lazy_import("base64")  # only for a root's keys and certificates, never on a cache hit
    binascii = lazy_import("binascii")
    datetime_mod = lazy_import("datetime")  # only when a root's validity periods are read, never on a cache hit  # (with base64)
    # Only to find the root the installed sigstore package embeds.
    importlib_util = lazy_import("importlib.util")
    pathlib = lazy_import("pathlib")  # on first use only (_base/lazy.py); docs/caching.md
    # Cryptography: only when a signature is verified, not by a warm admission.
    serialization = lazy_import("cryptography.hazmat.primitives.serialization")
    x509 = lazy_import("cryptography.x509")  # (with serialization)
    # Sigstore-python, its models and rfc3161-client: on first use (keyless verification).
    rfc3161_client = lazy_import("rfc3161_client")
    sigstore = lazy_import("sigstore")  # (sigstore-python)
    sigstore_errors = lazy_import("sigstore.errors")  # (sigstore-python)
    sigstore_hashes = lazy_import("sigstore.hashes")  # (sigstore-python)
    sigstore_models = lazy_import("sigstore.models")  # (sigstore-python)
    sigstore_verify = lazy_import("sigstore.verify")  # (sigstore-python)
    sigstore_common = lazy_import("sigstore_models.common.v1")  # (sigstore-python)
    fulcio = lazy_import("atip_trust.signature.fulcio")  # cryptography's x509 verification: on first use
    keyless_mod = lazy_import("atip_trust.signature.keyless")  # keyless signing re-verifies what it wrote
    sigstore_dsse = lazy_import("sigstore.dsse")  # (sigstore-python) signing only
    sigstore_oidc = lazy_import("sigstore.oidc")  # (sigstore-python) signing only: the ambient identity
    sigstore_sign = lazy_import("sigstore.sign")  # (sigstore-python) signing only

__all__ = [
    "base64",
    "binascii",
    "datetime_mod",
    "fulcio",
    "importlib_util",
    "keyless_mod",
    "pathlib",
    "rfc3161_client",
    "serialization",
    "sigstore",
    "sigstore_common",
    "sigstore_dsse",
    "sigstore_errors",
    "sigstore_hashes",
    "sigstore_models",
    "sigstore_oidc",
    "sigstore_sign",
    "sigstore_verify",
    "x509",
]
