"""The deferred imports of ``atip_trust.policy``, each written once (docs/adr/0001-start-up.md).

Every name below is a module imported on its first attribute read (_base/lazy.py); the package's
modules take it from here (``from atip_trust.policy._deps import ...``) rather than importing it, so
that a cache-hit admission, which never reads it, never pays for it. The comment says when it is read.
"""

from __future__ import annotations

from atip_trust._base.lazy import lazy_import

TYPE_CHECKING = False  # typing's constant without importing typing at run time
if TYPE_CHECKING:
    import datetime as datetime_mod
    import pathlib
    import shlex

    from atip_trust._base import schema
    from atip_trust.policy import serials, signed
    from atip_trust.provenance import slsa
    from atip_trust.signature import keys
    from atip_trust.state import tufroot
    from atip_trust.signature import bundle as bundles_mod
    from atip_trust.signature import keyless as keyless_mod
    from atip_trust.signature import keyless_sign as keyless_sign_mod
else:
    datetime_mod = lazy_import("datetime")  # only for a policy with waivers (their expiry)
    pathlib = lazy_import("pathlib")  # on first use only (_base/lazy.py); docs/caching.md
    shlex = lazy_import("shlex")  # only for words that need quoting or splitting by shell rules
    # The schema validator: a policy found valid before is not validated again.
    schema = lazy_import("atip_trust._base.schema")
    signed = lazy_import("atip_trust.policy.signed")  # only where a signers file requires a signature
    serials = lazy_import("atip_trust.policy.serials")  # only for an org policy without a signers file
    # Only a policy that states sources or builders needs the provenance model.
    slsa = lazy_import("atip_trust.provenance.slsa")
    keys = lazy_import("atip_trust.signature.keys")  # only for a policy's signer keys
    tufroot = lazy_import("atip_trust.state.tufroot")  # the TUF-refreshed roots (trust-root update)
    bundles_mod = lazy_import("atip_trust.signature.bundle")  # only for a signed policy's bundle
    keyless_mod = lazy_import("atip_trust.signature.keyless")  # sigstore: only for a keyless policy signature
    keyless_sign_mod = lazy_import("atip_trust.signature.keyless_sign")  # only for policy sign --keyless

__all__ = [
    "bundles_mod",
    "datetime_mod",
    "keyless_mod",
    "keyless_sign_mod",
    "keys",
    "pathlib",
    "schema",
    "shlex",
    "serials",
    "signed",
    "slsa",
    "tufroot",
]
