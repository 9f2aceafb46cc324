"""The doc generators (docs/make_*.py) loaded as modules, for the tests that check a committed page is
what its script writes (docs/contributing.md, "Generated pages")."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

DOCS = Path(__file__).resolve().parents[1] / "docs"


def generator(name: str) -> ModuleType:
    """``docs/<name>.py``, loaded from this checkout (the docs folder is no package)."""
    spec = importlib.util.spec_from_file_location(name, DOCS / f"{name}.py")
    assert spec is not None and spec.loader is not None, f"no doc script docs/{name}.py"
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
