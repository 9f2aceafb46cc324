"""Layer 3: shim registries (RFC §4): the remote registry client and the local name -> digest index.

The stable API (other layers call only these names):

* ``RegistryClient(registries, verify, *, cache_dir=None, offline=None, fetch=True).lookup(digest)``
  -> ``ShimResult``: a shim for the binary with that sha256 ``Digest``, verified, or none with one
  ``Attempt`` per registry asked saying why. ``registries``: ``RegistrySpec`` values built from
  *policy* (``trust.registries``), never from a registry's own manifest; ``verify``: a ``ShimVerifier``
  (``(shim_bytes, bundle_path, spec) -> SignatureVerdict``) that checks the bundle over exactly those
  bytes against ``spec.signers``. This layer cannot import policy or the verifier's pipeline, so the
  gate layer wires both: ``atip_trust.admission.shims.registry_client(policy, ...)`` is the one-call way.
* ``ShimResult``: ``found``, ``document`` (the parsed ``MetadataDocument``), ``raw`` (the verified
  bytes), ``registry`` (the ``RegistrySpec`` it came from), ``signer`` / ``issuer``, ``shim_path`` /
  ``bundle_path`` (the cached copies, byte-for-byte as signed), ``from_cache``, ``attempts``, ``reasons``.
* ``LocalRegistry(path)``: the local ``registry.json`` (RFC §4.3): ``get(name)`` -> ``LocalEntry`` or
  None (re-hashes the file only when its (dev, inode, size, mtime_ns, ctime_ns) changed),
  ``put(name, path, ...)`` -> ``LocalEntry``, ``remove(name)``, ``names()``.
"""

from atip_trust.registry.client import (
    Attempt,
    RegistryClient,
    RegistrySpec,
    ShimResult,
    ShimVerifier,
    SignatureVerdict,
)
from atip_trust.registry.local import LocalEntry, LocalRegistry

__all__ = [
    "Attempt",
    "LocalEntry",
    "LocalRegistry",
    "RegistryClient",
    "RegistrySpec",
    "ShimResult",
    "ShimVerifier",
    "SignatureVerdict",
]
