"""The one sanctioned deferred import: a module-level name whose module is imported on first use.

Why: an admission check runs before every tool call an agent makes, and with the verdict cache warm
(state/verdict_cache.py) it needs no verifier at all; importing sigstore, cryptography's x509 or jsonschema
anyway would be most of its cost (docs/adr/0001-start-up.md). Imports inside functions are forbidden
(docs/architecture.md: they hide the dependency graph), so a deferred import is written at module
level, in the open, with a literal module name::

    if TYPE_CHECKING:
        from cryptography import x509
    else:
        x509 = lazy_import("cryptography.x509")

The ``TYPE_CHECKING`` half gives mypy the real module; at run time the name is a ``LazyModule`` whose
first attribute access imports the module (``importlib.import_module``, under the interpreter's
per-module import lock, so concurrent first uses are safe) and hands out its attributes from then on.

tests/base/test_layers.py reads every ``lazy_import("...")`` call as an import of that module: it must be at
module level, name a literal module, point downward or within its own folder, respect the third-party
boundaries and form no import circle, exactly like a plain import. Only the modules a fast path loads
(tests/fast_path.py) defer; every other module imports plainly at the top.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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
