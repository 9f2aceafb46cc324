"""The data files atip-trust ships: ``schema/`` and ``policies/``, found the same way everywhere.

An installed package carries them as ``atip_trust/_schema`` and ``atip_trust/_policies``
(pyproject.toml ``package-dir``); a checkout or an editable install has them at the repository root.
The installed copy is looked at first: it is the one that was built with this code, and a stray
``site-packages/schema`` directory must not be able to stand in for it.
"""

from __future__ import annotations

from pathlib import Path
TYPE_CHECKING = False  # typing's constant without importing typing at run time (README "Verdict cache")
if TYPE_CHECKING:
    from typing import Literal

from atip_trust.errors import EnvironmentFailure

_PKG = Path(__file__).resolve().parent.parent  # the atip_trust package directory
_INSTALLED = {"schema": "_schema", "policies": "_policies"}


def shipped_file(folder: Literal["schema", "policies"], name: str) -> Path:
    """The path of ``folder/name``; an ``EnvironmentFailure`` (exit 2) naming both places when absent."""
    candidates = (_PKG / _INSTALLED[folder] / name, _PKG.parent / folder / name)
    for path in candidates:
        if path.is_file():
            return path
    raise EnvironmentFailure(
        f"atip-trust's own {folder}/{name} is missing (looked in {candidates[0]} and {candidates[1]}); "
        "reinstall the package",
        path=f"{folder}/{name}",
    )
