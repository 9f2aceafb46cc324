"""The data files atip-trust ships: ``schema/`` and ``policies/``, found the same way everywhere.

An installed package carries them as ``atip_trust/_schema`` and ``atip_trust/_policies``
(pyproject.toml ``package-dir``); a checkout or an editable install has them at the repository root.
The installed copy is looked at first: it is the one that was built with this code, and a stray
``site-packages/schema`` directory must not be able to stand in for it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from atip_trust._base.lazy import lazy_import
from atip_trust.errors import EnvironmentFailure

if TYPE_CHECKING:
    import pathlib
    from pathlib import Path
    from typing import Literal
else:
    pathlib = lazy_import("pathlib")  # for callers that want a Path; paths are text on a cache hit

_PKG = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # the atip_trust package directory
_INSTALLED = {"schema": "_schema", "policies": "_policies"}


def shipped_path(folder: Literal["schema", "policies"], name: str) -> str:
    """The path of ``folder/name``; an ``EnvironmentFailure`` (exit 2) naming both places when absent."""
    candidates = (os.path.join(_PKG, _INSTALLED[folder], name), os.path.join(os.path.dirname(_PKG), folder, name))
    for path in candidates:
        if os.path.isfile(path):
            return path
    raise EnvironmentFailure(
        f"atip-trust's own {folder}/{name} is missing (looked in {candidates[0]} and {candidates[1]}); "
        "reinstall the package",
        path=f"{folder}/{name}",
    )


def shipped_file(folder: Literal["schema", "policies"], name: str) -> Path:
    """``shipped_path`` as a ``Path``."""
    return pathlib.Path(shipped_path(folder, name))
