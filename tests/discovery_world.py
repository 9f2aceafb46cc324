"""A tool directory for discovery tests: real scripts, real bundles from the local test Sigstore.

Every tool that must never run writes a sentinel file (an absolute path baked into the script, since
the probe's environment is scrubbed) whenever it is executed at all, so a test can prove it was not.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import world
from world import ISSUER, REGISTRY_ID, sha256_hex

ORG_REPO = "https://github.com/example-org/tools"
OTHER_REPO = "https://github.com/someone-else/tools"
ORG_ID = f"{ORG_REPO}/.github/workflows/release.yml@refs/tags/v1.0.0"
ORG_ID_V2 = f"{ORG_REPO}/.github/workflows/release.yml@refs/tags/v2.0.0"
OTHER_ID = f"{OTHER_REPO}/.github/workflows/release.yml@refs/tags/v1.0.0"

SAFE_EFFECTS = {"destructive": False, "reversible": True, "idempotent": True, "network": False,
                "filesystem": {"read": True, "write": False, "delete": False}, "cost": {"billable": False},
                "interactive": {"stdin": "none", "prompts": False, "tty": False}}


def agent_json(name: str, *, destructive: bool = False, network: bool = False) -> str:
    effects = {**SAFE_EFFECTS, "destructive": destructive, "network": network}
    return json.dumps({"atip": {"version": "0.6"}, "name": name, "version": "1.0.0",
                       "description": f"The {name} tool",
                       "commands": {"status": {"description": "Show status", "effects": effects}}})


def sentinel_script(sentinel: Path, body: str = "") -> bytes:
    """A tool that records that it ran at all (whatever its arguments), then does ``body``; its
    ``--help`` advertises ``--agent``, the bait a naive scanner probes."""
    return (f"#!/bin/sh\necho ran \"$@\" >> '{sentinel}'\n"
            'case "$1" in --help) echo "usage: tool [--agent] [--help]"; exit 0;; esac\n'
            f"{body}\n").encode()


def agent_script(metadata: str, tag: str = "") -> bytes:
    quoted = metadata.replace("'", "'\\''")
    return (f"#!/bin/sh\n# {tag}\n"
            f"if [ \"$1\" = --agent ]; then printf '%s' '{quoted}'; exit 0; fi\necho status\n").encode()


def process_alive(pid: int, within: float = 3.0) -> bool:
    """True if ``pid`` is still running after ``within`` seconds (a zombie awaiting its new parent
    counts as gone: it runs nothing)."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError, IndexError):
            return False
        if state in ("Z", "X"):
            return False
        time.sleep(0.05)
    return True


class World(world.World):
    """``sentinels`` (where never-run tools write) and ``bundles`` (kept by digest, with ``/bin/sh``'s)."""

    def __init__(self, root: Path, seed: int = 15) -> None:
        super().__init__(root, seed)
        self.sentinels = root / "sentinels"
        self.sentinels.mkdir()
        # The interpreter of every #!/bin/sh test tool, signed: a probe runs a script's interpreter
        # only when it is admitted too (execution/exec.py script_interpreter); tools pass --bundle-dir.
        self.bundles = root / "bundles"
        self.keep_bundle(self.bundles, Path("/bin/sh").read_bytes())

    def sentinel(self, name: str) -> Path:
        return self.sentinels / name

    def tool(self, directory: Path, name: str, data: bytes, *,  # type: ignore[override]
             identity: str | None = None, repo: str = ORG_REPO, ref: str = "refs/tags/v1.0.0",
             signed_data: bytes | None = None) -> Path:
        path = super().tool(directory / name, data)
        sidecar = Path(str(path) + ".sigstore.json")
        if identity is None and sidecar.exists():
            sidecar.unlink()  # an unsigned update: no stale bundle about the old bytes
        if identity is not None:
            self.bundle(sidecar, signed_data if signed_data is not None else data, identity=identity,
                        extensions={"source_repository_uri": repo, "source_repository_ref": ref})
        return path

    def signed_shim(self, shim_dir: Path, data: bytes, name: str, *, destructive: bool = False) -> Path:
        hexd = sha256_hex(data)
        return self.shim(shim_dir, {
            "atip": {"version": "0.6"}, "binary": {"hash": f"sha256:{hexd}", "name": name, "version": "1.0.0"},
            "trust": {"source": "org", "verified": True}, "description": f"The {name} tool",
            "commands": {"status": {"description": "Show status",
                                    "effects": {**SAFE_EFFECTS, "destructive": destructive}}}}, hexd)

    def policy(self, name: str = "policy", *, signers: tuple[str, ...] = (ORG_ID, ORG_ID_V2, OTHER_ID),
               **extra: Any) -> Path:
        doc = self.policy_doc(
            signers=signers,
            trust={"registries": [{"url": "file:///srv/shims",
                                   "signers": [{"identity": REGISTRY_ID, "issuer": ISSUER}]}]},
            defaults={"noMatch": "ask", "allowVerifiedReadOnly": True},
            permissions={"allow": [{"rule": "sh", "minTrustLevel": "VERIFIED"}]},
            discovery={"probeTimeoutMs": 1500, "maxOutputBytes": 1024 * 1024},
            # The sentinels prove a probe ran by writing a file, which a probe's read-only boundary
            # (issue 37) refuses: these tests run probes unconfined; tests/execution/test_sandbox_exec.py
            # tests the boundary.
            exec={"sandbox": "off"})
        return self.file(f"{name}.json", {**doc, **extra}, indent=2)
