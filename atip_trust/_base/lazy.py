"""The one way to defer an import: a module-level name whose module is imported on its first use.

Why: an admission check runs before every tool call an agent makes, and with the verdict cache warm
(state/verdict_cache.py) it needs no verifier at all; importing sigstore, cryptography's x509 or jsonschema
anyway would be most of its cost (docs/adr/0001-start-up.md). So a module on a fast path may name a module
it needs only sometimes, and pay for it only then.

The rule: in the module that uses the name, at module level, under the module's real name (its last
component, or ``<parent>_<name>`` where two of one name meet), with a literal absolute module name, in the
``else`` of the ``if TYPE_CHECKING:`` block that gives mypy the real module::

    from typing import TYPE_CHECKING

    from atip_trust._base.lazy import lazy_import

    if TYPE_CHECKING:
        from cryptography import x509
    else:
        x509 = lazy_import("cryptography.x509")  # only a cache miss verifies a certificate

and only in a module a fast path loads (``DEFERRING`` in tests/fast_path.py); every other module imports
plainly at the top. (The package root's public API keeps its modules in a table keyed by their names
instead: docs/contributing.md, "Imports".) tests/base/test_layers.py checks all of it, and reads each
deferred import as an import of its module: downward only, third-party packages at their boundary, and an
edge of the circle check (the module is imported while the program runs, if not while this one is).

At run time the name is a ``LazyModule`` whose first attribute read imports the module
(``importlib.import_module``, under the interpreter's per-module import lock, so concurrent first uses are
safe) and hands out its attributes from then on. This module is the only one that imports by a computed
name.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class LazyModule:
    """A stand-in for the module ``name``, imported on the first attribute read."""

    __slots__ = ("_lazy_name", "_lazy_module")

    def __init__(self, name: str) -> None:
        self._lazy_name = name
        self._lazy_module: ModuleType | None = None

    def _load(self) -> ModuleType:
        module = self._lazy_module
        if module is None:
            # No lock of our own: import_module takes the interpreter's per-module import lock, and two
            # threads that race here both get the one module object from sys.modules.
            module = importlib.import_module(self._lazy_name)
            self._lazy_module = module
        return module

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._load(), attr)

    def __repr__(self) -> str:
        state = "loaded" if self._lazy_module is not None else "not loaded yet"
        return f"<lazy module {self._lazy_name!r} ({state})>"


def lazy_import(name: str) -> Any:
    """``name`` (an absolute module name, a string literal: tests/base/test_layers.py checks it), imported
    when one of its attributes is first read."""
    return LazyModule(name)


__all__ = ["LazyModule", "lazy_import"]
