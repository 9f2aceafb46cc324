"""A small world for the exec gate and agent hooks: a fake ``gh`` signed with the local test Sigstore,
the same ``gh`` unsigned in another PATH folder, ``/bin/sh`` signed too (so ``#!/bin/sh`` tools can run
on a verified interpreter), bundles kept by digest in a bundle folder, and a policy that trusts the
signer and allows ``gh pr *``, ``sh`` and a few test tools when VERIFIED."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import world
from world import ISSUER, ORG_ID

GH = b'#!/bin/sh\necho "gh $*"\n'
SH = Path("/bin/sh")


class World(world.World):
    """``bundles`` (kept by digest), ``signed_bin`` and ``unsigned_bin`` (the two PATH folders),
    ``policy`` (the default policy file) and ``audit`` (an audit log path)."""

    def __init__(self, base: Path, seed: int = 13) -> None:
        super().__init__(base, seed)
        self.bundles = base / "bundles"
        (self.bundles / "sha256").mkdir(parents=True)
        self.signed_bin, self.unsigned_bin = base / "bin", base / "bin-unsigned"
        self.signed_bin.mkdir()
        self.unsigned_bin.mkdir()
        self.audit = base / "audit.jsonl"
        self.sign(SH.read_bytes())  # the interpreter of every #!/bin/sh test tool
        self.tool("gh", GH)
        self.tool("gh", GH + b"# another build, never signed\n", signed=False, folder=self.unsigned_bin)
        self.policy = self.write_policy("policy")

    def sign(self, data: bytes) -> None:
        """Keep a bundle for ``data`` in the bundle folder, under its digest."""
        self.keep_bundle(self.bundles, data)

    def tool(self, name: str | Path, body: bytes, *, signed: bool = True, folder: Path | None = None) -> Path:
        path = super().tool((folder or self.signed_bin) / name, body)
        if signed:
            self.sign(body)
        return path

    def write_policy(self, name: str, **extra: Any) -> Path:
        doc = self.policy_doc(
            capabilities={"destructive": {"minTrustLevel": "VERIFIED", "below": "deny"},
                          "filesystemDelete": {"minTrustLevel": "VERIFIED", "below": "deny"},
                          "network": {"minTrustLevel": "VERIFIED", "below": "ask"}},
            permissions={"allow": [{"rule": r, "minTrustLevel": "VERIFIED"} for r in
                                   ("gh pr *", "sh", "tool *", "tool", "victim *", "victim")]},
            defaults={"noMatch": "deny"},
            # This organisation wants every program it does not name denied by the agent hooks too.
            hooks={"unlisted": "deny"})
        return self.file(f"{name}.json", {**doc, **extra})

    def env(self, *, signed: bool = True, **more: str) -> dict[str, str]:  # type: ignore[override]
        return super().env(PATH=f"{self.signed_bin if signed else self.unsigned_bin}:/usr/bin:/bin", **more)


def make_world(base: Path, seed: int = 13) -> World:
    return World(base, seed)


__all__ = ["GH", "ISSUER", "ORG_ID", "World", "make_world"]
