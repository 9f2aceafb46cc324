"""The deferred imports of ``atip_trust.state``, each written once (docs/adr/0001-start-up.md).

Every name below is a module imported on its first attribute read (_base/lazy.py); the package's
modules take it from here (``from atip_trust.state._deps import ...``) rather than importing it, so
that a cache-hit admission, which never reads it, never pays for it. The comment says when it is read.
"""

from __future__ import annotations

from atip_trust._base.lazy import lazy_import

TYPE_CHECKING = False  # typing's constant without importing typing at run time
if TYPE_CHECKING:
    import datetime as datetime_mod
    import tempfile

    import platformdirs
    import tuf.api.exceptions as tuf_exceptions
    import tuf.ngclient.config as tuf_config
    import tuf.api.metadata as tuf_metadata
    import tuf.ngclient.fetcher as tuf_fetcher
    import tuf.ngclient.updater as tuf_updater

    from atip_trust.net import fetch
else:
    # Only where a TUF-verified root is used (its verification time) or stored.
    datetime_mod = lazy_import("datetime")
    tempfile = lazy_import("tempfile")  # (with shutil and random) only when a root is stored
    # Only where the folders are not found from the environment (state/dirs.py).
    platformdirs = lazy_import("platformdirs")
    # Python-tuf only when a root is refreshed or a stored one verified again (state/tufroot.py).
    tuf_exceptions = lazy_import("tuf.api.exceptions")
    tuf_config = lazy_import("tuf.ngclient.config")  # (python-tuf)
    tuf_fetcher = lazy_import("tuf.ngclient.fetcher")  # (python-tuf)
    # (python-tuf) a store's own root.json, read back; a stored public-good root verified again (its expiry).
    tuf_metadata = lazy_import("tuf.api.metadata")
    tuf_updater = lazy_import("tuf.ngclient.updater")  # (python-tuf)
    fetch = lazy_import("atip_trust.net.fetch")  # only for an update: an admission reads the cache only

__all__ = [
    "datetime_mod",
    "fetch",
    "platformdirs",
    "tempfile",
    "tuf_config",
    "tuf_exceptions",
    "tuf_fetcher",
    "tuf_metadata",
    "tuf_updater",
]
