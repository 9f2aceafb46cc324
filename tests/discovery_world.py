"""A tool directory for discovery tests: real scripts, real bundles from the local test Sigstore.

Every tool that must never run writes a sentinel file (an absolute path baked into the script, since
the probe's environment is scrubbed) whenever it is executed at all, so a test can prove it was not.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

import testsigstore

ISSUER = "https://token.actions.githubusercontent.com"
ORG_REPO = "https://github.com/example-org/tools"
OTHER_REPO = "https://github.com/someone-else/tools"
ORG_ID = f"{ORG_REPO}/.github/workflows/release.yml@refs/tags/v1.0.0"
ORG_ID_V2 = f"{ORG_REPO}/.github/workflows/release.yml@refs/tags/v2.0.0"
OTHER_ID = f"{OTHER_REPO}/.github/workflows/release.yml@refs/tags/v1.0.0"
REGISTRY_ID = "https://github.com/example-org/shims/.github/workflows/sign.yml@refs/heads/main"

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


class World:
    def __init__(self, root: Path, seed: int = 15) -> None:
        self.root = root
        self.ts = testsigstore.TestSigstore(seed=seed)
        self.trusted_root = self.ts.write_trusted_root(root / "trusted_root.json")
        self.sentinels = root / "sentinels"
        self.sentinels.mkdir()
        # The interpreter of every #!/bin/sh test tool, signed: a probe runs a script's interpreter
        # only when it is admitted too (execution/exec.py script_interpreter); tools pass --bundle-dir.
        self.bundles = root / "bundles"
        (self.bundles / "sha256").mkdir(parents=True)
        sh = Path("/bin/sh").read_bytes()
        (self.bundles / "sha256" / f"{hashlib.sha256(sh).hexdigest()}.sigstore.json").write_text(json.dumps(
            self.ts.sign_artifact(sh, identity=ORG_ID, issuer=ISSUER)))

    def sentinel(self, name: str) -> Path:
        return self.sentinels / name

    def tool(self, directory: Path, name: str, data: bytes, *, identity: str | None = None,
             repo: str = ORG_REPO, ref: str = "refs/tags/v1.0.0", signed_data: bytes | None = None) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / name
        path.write_bytes(data)
        path.chmod(0o755)
        sidecar = Path(str(path) + ".sigstore.json")
        if identity is None and sidecar.exists():
            sidecar.unlink()  # an unsigned update: no stale bundle about the old bytes
        if identity is not None:
            bundle = self.ts.sign_artifact(
                signed_data if signed_data is not None else data, identity=identity, issuer=ISSUER,
                extensions={"source_repository_uri": repo, "source_repository_ref": ref})
            sidecar.write_text(json.dumps(bundle))
        return path

    def signed_shim(self, shim_dir: Path, data: bytes, name: str, *, destructive: bool = False) -> Path:
        hexd = hashlib.sha256(data).hexdigest()
        shim = {"atip": {"version": "0.6"}, "binary": {"hash": f"sha256:{hexd}", "name": name,
                                                       "version": "1.0.0"},
                "trust": {"source": "org", "verified": True}, "description": f"The {name} tool",
                "commands": {"status": {"description": "Show status",
                                        "effects": {**SAFE_EFFECTS, "destructive": destructive}}}}
        d = shim_dir / "sha256"
        d.mkdir(parents=True, exist_ok=True)
        p = d / f"{hexd}.json"
        p.write_text(json.dumps(shim))
        Path(str(p) + ".bundle").write_text(json.dumps(
            self.ts.sign_artifact(p.read_bytes(), identity=REGISTRY_ID, issuer=ISSUER)))
        return p

    def policy(self, name: str = "policy", *, signers: tuple[str, ...] = (ORG_ID, ORG_ID_V2, OTHER_ID),
               **extra: Any) -> Path:
        doc = {
            "version": 1,
            "trust": {
                "trustedRoots": [{"path": str(self.trusted_root)}],
                "signers": [{"identity": s, "issuer": ISSUER} for s in signers],
                "registries": [{"url": "file:///srv/shims",
                                "signers": [{"identity": REGISTRY_ID, "issuer": ISSUER}]}],
            },
            "defaults": {"noMatch": "ask", "allowVerifiedReadOnly": True},
            "permissions": {"allow": [{"rule": "sh", "minTrustLevel": "VERIFIED"}]},
            "discovery": {"probeTimeoutMs": 1500, "maxOutputBytes": 1024 * 1024},
            **extra,
        }
        path = self.root / f"{name}.json"
        path.write_text(json.dumps(doc, indent=2))
        return path
