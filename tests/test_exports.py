"""The public API is exactly ``atip_trust.__all__``, and that list is complete (STYLE.md practice 8,
after httpx's ``tests/test_exported_members.py``).

Completeness is computed, not listed: every class or function that a public module defines *and*
names in its own ``__all__`` must be re-exported from ``atip_trust``. A module that wants helpers
outside the public API keeps them out of its ``__all__`` or lives under a leading-underscore name.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import atip_trust

#: Packages that are not library API: the command line is used through ``atip-trust``, not imported.
NOT_LIBRARY = ("atip_trust.cli", "atip_trust.__main__")


def public_modules() -> list[ModuleType]:
    mods = []
    for info in pkgutil.walk_packages(atip_trust.__path__, prefix="atip_trust."):
        name = info.name
        if any(part.startswith("_") for part in name.split(".")[1:]):
            continue
        if any(name == p or name.startswith(p + ".") for p in NOT_LIBRARY):
            continue
        mods.append(importlib.import_module(name))
    return mods


def test_every_exported_name_resolves() -> None:
    for name in atip_trust.__all__:
        assert hasattr(atip_trust, name), f"atip_trust.__all__ names {name!r} but it does not exist"


def test_export_list_has_no_duplicates() -> None:
    assert len(atip_trust.__all__) == len(set(atip_trust.__all__))


def test_every_public_module_declares_all() -> None:
    missing = [m.__name__ for m in public_modules() if not hasattr(m, "__all__")]
    assert not missing, f"public modules without __all__: {missing}"


def test_every_public_class_and_function_is_exported() -> None:
    exported = set(atip_trust.__all__)
    missing: list[str] = []
    for mod in public_modules():
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name, None)
            if name.startswith("_") or not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            if getattr(obj, "__module__", None) != mod.__name__:
                continue  # re-exported from elsewhere; checked at its home module
            if name not in exported or getattr(atip_trust, name) is not obj:
                missing.append(f"{mod.__name__}.{name}")
    assert not missing, "not re-exported from atip_trust.__all__: " + ", ".join(sorted(missing))


def test_exported_objects_are_the_module_objects() -> None:
    # A name exported from the package is the same object as in its home module (no shadow copies).
    for name in atip_trust.__all__:
        obj = getattr(atip_trust, name)
        home = getattr(obj, "__module__", None)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert home is not None and home.startswith("atip_trust."), (name, home)
            assert getattr(importlib.import_module(home), name) is obj
