"""The per-user cache and state folders: platformdirs' answer, without importing platformdirs when that
answer is plain.

``import platformdirs`` loads pathlib, tempfile, shutil and random: ~45 M instructions, a third of a warm
admission that uses the default folders (docs/caching.md). On Linux, when the XDG variable is an
absolute path, or is unset and ``HOME`` is an absolute path, every platformdirs version answers
``$XDG_CACHE_HOME/atip-trust`` (resp. ``$XDG_STATE_HOME``) or ``~/.cache/atip-trust``
(``~/.local/state``) by ``os.path.expanduser``; that is computed here. Anything else — another platform,
Android, a relative or empty variable or ``HOME`` (where platformdirs versions differ), no ``HOME`` —
asks platformdirs itself. tests/test_state_dirs.py holds the plain answers to platformdirs' own.
"""

from __future__ import annotations

import os
import sys

from atip_trust.state._deps import platformdirs


APP = "atip-trust"

#: XDG variable and the default under HOME, per folder kind (the XDG Base Directory specification).
_XDG = {"cache": ("XDG_CACHE_HOME", "~/.cache"), "state": ("XDG_STATE_HOME", "~/.local/state")}


def plain_dir(kind: str) -> str | None:
    """The folder of ``kind`` ("cache", "state") when the rules above give it without platformdirs,
    else None."""
    if sys.platform != "linux" or hasattr(sys, "getandroidapilevel") or (
            os.environ.get("ANDROID_DATA") == "/data" and os.environ.get("ANDROID_ROOT") == "/system"):
        return None
    var, default = _XDG[kind]
    value = os.environ.get(var)
    if value:
        return os.path.join(value, APP) if value.startswith("/") else None
    if value is not None:  # set but empty: versions differ
        return None
    home = os.environ.get("HOME")
    if not home or not home.startswith("/"):
        return None
    return os.path.join(os.path.expanduser(default), APP)


def user_cache_dir() -> str:
    return plain_dir("cache") or platformdirs.user_cache_dir(APP)


def user_state_dir() -> str:
    return plain_dir("state") or platformdirs.user_state_dir(APP)


__all__ = ["APP", "plain_dir", "user_cache_dir", "user_state_dir"]
