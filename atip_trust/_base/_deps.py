"""The deferred imports of ``atip_trust._base``, each written once (docs/adr/0001-start-up.md).

Every name below is a module imported on its first attribute read (_base/lazy.py); the package's
modules take it from here (``from atip_trust._base._deps import ...``) rather than importing it, so
that a cache-hit admission, which never reads it, never pays for it. The comment says when it is read.
"""

from __future__ import annotations

from atip_trust._base.lazy import lazy_import

TYPE_CHECKING = False  # typing's constant without importing typing at run time
if TYPE_CHECKING:
    import base64
    import binascii
    import multiprocessing.context
    import pathlib
    from concurrent import futures
    from concurrent.futures import process

    import jsonschema  # type: ignore[import-untyped]
    from jsonschema import exceptions as jsonschema_exceptions
    from referencing import exceptions as referencing_exceptions
else:
    base64 = lazy_import("base64")  # only for a JSON field that carries bytes: never on a cache hit
    binascii = lazy_import("binascii")  # (with base64)
    # Thread and process pools: only when many files are hashed or verified.
    futures = lazy_import("concurrent.futures")
    process = lazy_import("concurrent.futures.process")  # (with futures)
    multiprocessing = lazy_import("multiprocessing")  # (with futures)
    pathlib = lazy_import("pathlib")  # for callers that want a Path; not on a cache hit (_base/lazy.py)
    # Only a write needs it (and with it shutil, random): a warm admission writes nothing.
    # Only _base/schema.py, and only for a policy not validated before (the verdict cache).
    jsonschema = lazy_import("jsonschema")
    jsonschema_exceptions = lazy_import("jsonschema.exceptions")  # (with jsonschema)
    referencing_exceptions = lazy_import("referencing.exceptions")  # (with jsonschema)

__all__ = [
    "base64",
    "binascii",
    "futures",
    "jsonschema",
    "jsonschema_exceptions",
    "multiprocessing",
    "pathlib",
    "process",
    "referencing_exceptions",
]
