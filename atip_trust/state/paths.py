"""Where the shim registry keeps its files (RFC §4.2), by platformdirs (this layer's boundary).

* ``registry_cache_dir()``: verified shims fetched from remote registries (registry/client.py):
  ``$ATIP_CACHE_DIR/registry`` when set (RFC §4.6), else ``<user_cache_dir("atip-trust")>/registry``.
* ``local_registry_path()``: the local name -> digest index (registry/local.py), RFC §4.2's
  ``$XDG_DATA_HOME/agent-tools/registry.json``.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

from atip_trust.state.dirs import agent_tools_data_dir


def registry_cache_dir() -> Path:
    env = os.environ.get("ATIP_CACHE_DIR")
    if env:
        return Path(env) / "registry"
    return Path(platformdirs.user_cache_dir("atip-trust")) / "registry"


def local_registry_path() -> Path:
    return Path(agent_tools_data_dir()) / "registry.json"


__all__ = ["local_registry_path", "registry_cache_dir"]
