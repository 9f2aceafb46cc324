"""A small world for the exec gate and agent hooks: a fake ``gh`` signed with the local test Sigstore,
the same ``gh`` unsigned in another PATH folder, ``/bin/sh`` signed too (so ``#!/bin/sh`` tools can run
on a verified interpreter), bundles kept by digest in a bundle folder, and a policy that trusts the
signer and allows ``gh pr *``, ``sh`` and a few test tools when VERIFIED."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import testsigstore

ISSUER = "https://token.actions.githubusercontent.com"
ORG_ID = "https://github.com/example-org/tools/.github/workflows/release.yml@refs/tags/v1.0.0"
GH = b'#!/bin/sh\necho "gh $*"\n'
SH = Path("/bin/sh")


@dataclass
class World:
    dir: Path
    root: Path
    bundles: Path
    signed_bin: Path
    unsigned_bin: Path
    policy: Path
    audit: Path
    ts: Any

    def sign(self, data: bytes) -> None:
        """Keep a bundle for ``data`` in the bundle folder, under its digest."""
        hexd = hashlib.sha256(data).hexdigest()
        bundle = self.ts.sign_artifact(data, identity=ORG_ID, issuer=ISSUER)
        (self.bundles / "sha256" / f"{hexd}.sigstore.json").write_text(json.dumps(bundle))

    def tool(self, name: str, body: bytes, *, signed: bool = True, folder: Path | None = None) -> Path:
        path = (folder or self.signed_bin) / name
        path.write_bytes(body)
        path.chmod(0o755)
        if signed:
            self.sign(body)
        return path

    def write_policy(self, name: str, **extra: Any) -> Path:
        doc = {
            "version": 1,
            "trust": {"trustedRoots": [{"path": str(self.root)}],
                      "signers": [{"identity": ORG_ID, "issuer": ISSUER}]},
            "capabilities": {"destructive": {"minTrustLevel": "VERIFIED", "below": "deny"},
                             "filesystemDelete": {"minTrustLevel": "VERIFIED", "below": "deny"},
                             "network": {"minTrustLevel": "VERIFIED", "below": "ask"}},
            "permissions": {"allow": [{"rule": r, "minTrustLevel": "VERIFIED"} for r in
                                      ("gh pr *", "sh", "tool *", "tool", "victim *", "victim")]},
            "defaults": {"noMatch": "deny"},
            # This organisation wants every program it does not name denied by the agent hooks too.
            "hooks": {"unlisted": "deny"},
            **extra,
        }
        path = self.dir / f"{name}.json"
        path.write_text(json.dumps(doc))
        return path

    def env(self, *, signed: bool = True, **more: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LD_", "PYTHON"))}
        env["PATH"] = f"{self.signed_bin if signed else self.unsigned_bin}:/usr/bin:/bin"
        env.update(more)
        return env

    def run(self, *argv: str, env: dict[str, str] | None = None, stdin: str | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "atip_trust", *argv], capture_output=True, text=True,
                              env=env or self.env(), input=stdin, timeout=timeout,
                              stdin=None if stdin is not None else subprocess.DEVNULL)


def make_world(base: Path, seed: int = 13) -> World:
    ts = testsigstore.TestSigstore(seed=seed)
    root = ts.write_trusted_root(base / "trusted_root.json")
    bundles = base / "bundles"
    (bundles / "sha256").mkdir(parents=True)
    signed_bin, unsigned_bin = base / "bin", base / "bin-unsigned"
    signed_bin.mkdir()
    unsigned_bin.mkdir()
    world = World(base, root, bundles, signed_bin, unsigned_bin, base / "policy.json", base / "audit.jsonl", ts)
    world.sign(SH.read_bytes())  # the interpreter of every #!/bin/sh test tool
    world.tool("gh", GH)
    world.tool("gh", GH + b"# another build, never signed\n", signed=False, folder=unsigned_bin)
    world.policy = world.write_policy("policy")
    return world


__all__ = ["GH", "ISSUER", "ORG_ID", "World", "make_world"]
