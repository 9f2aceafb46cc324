"""The deferred imports of ``atip_trust.provenance``, each written once (docs/adr/0001-start-up.md).

Every name below is a module imported on its first attribute read (_base/lazy.py); the package's
modules take it from here (``from atip_trust.provenance._deps import ...``) rather than importing it, so
that a cache-hit admission, which never reads it, never pays for it. The comment says when it is read.
"""

from __future__ import annotations

from atip_trust._base.lazy import lazy_import

TYPE_CHECKING = False  # typing's constant without importing typing at run time
if TYPE_CHECKING:
    import fnmatch
else:
    fnmatch = lazy_import("fnmatch")  # only when a rule requires a provenance source pattern

__all__ = [
    "fnmatch",
]
