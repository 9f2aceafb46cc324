"""The per-user cache and state folders: platformdirs' answer, without importing platformdirs when that
answer is plain.

``import platformdirs`` loads pathlib, tempfile, shutil and random: ~45 M instructions, a third of a warm
admission that uses the default folders (docs/caching.md). On Linux, when the XDG variable is an
absolute path, or is unset and ``HOME`` is an absolute path, every platformdirs version answers
``$XDG_CACHE_HOME/atip-trust`` (resp. ``$XDG_STATE_HOME``) or ``~/.cache/atip-trust``
(``~/.local/state``) by ``os.path.expanduser``; that is computed here. Anything else — another platform,
Android, a relative or empty variable or ``HOME`` (where platformdirs versions differ), no ``HOME`` —
asks platformdirs itself. tests/state/test_state_dirs.py holds the plain answers to platformdirs' own.
"""

from __future__ import annotations

import os
import stat
import sys
from typing import TYPE_CHECKING

from atip_trust._base.lazy import lazy_import

if TYPE_CHECKING:
    import platformdirs
else:
    platformdirs = lazy_import("platformdirs")  # only where the folders are not found from the environment


APP = "atip-trust"

#: The ATIP tree every agent shares (RFC §4.2): ``$XDG_DATA_HOME/agent-tools`` (registry.json, tools/,
#: shims/) and ``$XDG_CONFIG_HOME/agent-tools`` (overrides/), platformdirs' ``user_data_dir`` and
#: ``user_config_dir`` for ``agent-tools`` on Linux.
AGENT_TOOLS = "agent-tools"

#: XDG variable and the default under HOME, per folder kind (the XDG Base Directory specification).
_XDG = {"cache": ("XDG_CACHE_HOME", "~/.cache"), "state": ("XDG_STATE_HOME", "~/.local/state"),
        "data": ("XDG_DATA_HOME", "~/.local/share"), "config": ("XDG_CONFIG_HOME", "~/.config")}


def plain_dir(kind: str, app: str = APP) -> str | None:
    """The folder of ``kind`` ("cache", "state", "data", "config") for ``app`` when the rules above
    give it without platformdirs, else None."""
    if sys.platform != "linux" or hasattr(sys, "getandroidapilevel") or (
            os.environ.get("ANDROID_DATA") == "/data" and os.environ.get("ANDROID_ROOT") == "/system"):
        return None
    var, default = _XDG[kind]
    value = os.environ.get(var)
    if value:
        return os.path.join(value, app) if value.startswith("/") else None
    if value is not None:  # set but empty: versions differ
        return None
    home = os.environ.get("HOME")
    if not home or not home.startswith("/"):
        return None
    return os.path.join(os.path.expanduser(default), app)


def user_cache_dir() -> str:
    return plain_dir("cache") or platformdirs.user_cache_dir(APP)


def user_state_dir() -> str:
    return plain_dir("state") or platformdirs.user_state_dir(APP)


def agent_tools_data_dir() -> str:
    """RFC §4.2 ``$XDG_DATA_HOME/agent-tools`` (registry.json, tools/, shims/sha256/)."""
    return plain_dir("data", AGENT_TOOLS) or platformdirs.user_data_dir(AGENT_TOOLS)


def agent_tools_config_dir() -> str:
    """RFC §4.2 ``$XDG_CONFIG_HOME/agent-tools`` (overrides/sha256/)."""
    return plain_dir("config", AGENT_TOOLS) or platformdirs.user_config_dir(AGENT_TOOLS)


#: The XDG Base Directory default for ``$XDG_DATA_DIRS``: RFC v0.3 §4's system-wide trees.
DEFAULT_DATA_DIRS = "/usr/local/share:/usr/share"


def agent_tools_system_dirs() -> tuple[str, ...]:
    """RFC v0.3 §4's system-wide ``agent-tools`` trees: each absolute ``$XDG_DATA_DIRS`` entry (default
    /usr/local/share:/usr/share), in order, read after the user's (XDG: the user's data comes first)."""
    raw = os.environ.get("XDG_DATA_DIRS") or DEFAULT_DATA_DIRS
    seen: list[str] = []
    for entry in raw.split(":"):
        if os.path.isabs(entry):
            path = os.path.join(entry, AGENT_TOOLS)
            if path not in seen:
                seen.append(path)
    return tuple(seen)


def agent_tools_roots() -> tuple[str, str, tuple[str, ...]] | None:
    """RFC §4.2's two roots (data, config) and the system-wide trees that exist, when any of them
    does, else None: a ``stat`` call each, so that an admission without a tree loads nothing for it
    (admission/agent_tools.py)."""
    data, config = agent_tools_data_dir(), agent_tools_config_dir()
    system = tuple(d for d in agent_tools_system_dirs() if _may_be_dir(d))
    return (data, config, system) if system or _may_be_dir(data) or _may_be_dir(config) else None


def _may_be_dir(path: str) -> bool:
    """A folder, or a path the system cannot answer for (no search permission, a link loop): unknown is
    not absent, so the tree is read and its own checks fail closed (``os.path.isdir`` says False)."""
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except (OSError, ValueError):
        return True


__all__ = [
    "AGENT_TOOLS",
    "APP",
    "agent_tools_config_dir",
    "agent_tools_data_dir",
    "agent_tools_roots",
    "agent_tools_system_dirs",
    "plain_dir",
    "user_cache_dir",
    "user_state_dir",
]
