"""The deferred imports of ``atip_trust.facts``, each written once (docs/adr/0001-start-up.md).

Every name below is a module imported on its first attribute read (_base/lazy.py); the package's
modules take it from here (``from atip_trust.facts._deps import ...``) rather than importing it, so
that a cache-hit admission, which never reads it, never pays for it. The comment says when it is read.
"""

from __future__ import annotations

from atip_trust._base.lazy import lazy_import

TYPE_CHECKING = False  # typing's constant without importing typing at run time
if TYPE_CHECKING:
    import copy
    import fcntl
    import hmac
    import queue
    import tempfile
    import threading
else:
    copy = lazy_import("copy")  # only when declared effects are merged (_base/lazy.py)
    fcntl = lazy_import("fcntl")  # only when a #! script is copied for its interpreter (sealed_copy)
    hmac = lazy_import("hmac")  # only when two digests are compared (in constant time)
    queue = lazy_import("queue")  # only a large file is hashed with a reader thread (_hash_overlapped)
    tempfile = lazy_import("tempfile")  # only for a sealed copy of a #! script
    threading = lazy_import("threading")  # (with queue)

__all__ = [
    "copy",
    "fcntl",
    "hmac",
    "queue",
    "tempfile",
    "threading",
]
