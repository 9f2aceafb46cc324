"""Tools whose effects are declared in signed metadata, for the run-time boundary (issue 37).

Each tool is a real program (a ``#!/bin/sh`` script on the signed ``/bin/sh`` of gate_world, or a small C
program compiled here with gcc), signed with the project's test Sigstore; its metadata names its digest
(``binary.hash``), declares the effects of its root command (``""``: every argument list) and carries a
bundle signed by the organisation, so the admission counts the effects as verified.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import gate_world
from world import ORG_ID

#: Every class a read-only declaration speaks for (RFC §3.6), with no network.
READ_ONLY: dict[str, Any] = {"destructive": False, "reversible": True, "idempotent": True,
                             "filesystem": {"write": False, "delete": False}, "network": False,
                             "cost": {"billable": False}, "subprocess": False}


class SandboxWorld(gate_world.World):
    """``declare(name, body, effects)`` makes a signed tool with signed metadata; ``exec`` runs
    ``atip-trust exec`` on it from ``work`` (the working tree)."""

    def __init__(self, base: Path, seed: int = 37) -> None:
        super().__init__(base, seed)
        self.work = base / "work"
        self.work.mkdir()
        self.state = base / "state"
        self.meta: dict[str, tuple[Path, Path]] = {}
        self.names: list[str] = []

    def declare(self, name: str, body: bytes, effects: dict[str, Any], *, folder: Path | None = None) -> Path:
        path = self.tool(name, body, folder=folder)
        self.describe(name, body, effects)
        return path

    def declare_existing(self, path: Path, effects: dict[str, Any]) -> str:
        """Sign an installed program as it is (``/usr/bin/cat``) and declare its effects; its name."""
        body = path.read_bytes()
        self.sign(body)
        self.describe(path.name, body, effects)
        return str(self.meta[path.name][0])

    def describe(self, name: str, body: bytes, effects: dict[str, Any]) -> None:
        doc = {"atip": {"version": "0.6"}, "name": name, "version": "1.0.0", "description": name,
               "binary": {"hash": f"sha256:{hashlib.sha256(body).hexdigest()}", "name": name},
               "commands": {"": {"description": f"{name} itself", "effects": effects}}}
        raw = json.dumps(doc).encode()
        meta = self.file(f"{name}.meta.json", raw)
        self.meta[name] = (meta, self.bundle(f"{name}.meta.json.bundle", raw, identity=ORG_ID))
        self.names.append(name)

    def compile(self, name: str, source: str) -> bytes:
        """A C program built here (gcc), returned as bytes for ``declare``."""
        src = self.file(f"{name}.c", source)
        out = self.dir / f"{name}.out"
        subprocess.run(["gcc", "-O1", "-o", str(out), str(src)], check=True, timeout=120, capture_output=True)
        return out.read_bytes()

    def policy_for(self, **extra: Any) -> Path:
        doc = self.policy_doc(permissions={"allow": [{"rule": r, "minTrustLevel": "VERIFIED"} for n in
                                                     [*self.names, "sh"] for r in (n, f"{n} *")]},
                              defaults={"noMatch": "deny"}, **extra)
        return self.file("sandbox-policy.json", doc)

    def exec_argv(self, name: str, *args: str, sandbox: str | None = "required",
                  policy: Path | None = None) -> list[str]:
        meta, bundle = self.meta[name]
        return [sys.executable, "-m", "atip_trust", "exec", "--policy", str(policy or self.policy_for()),
                "--bundle-dir", str(self.bundles), "--audit-log", str(self.audit), "--metadata", str(meta),
                "--metadata-bundle", str(bundle), "--non-interactive",
                *(["--sandbox", sandbox] if sandbox else []), "--", name, *args]

    def sandbox_env(self, **more: str) -> dict[str, str]:
        return self.env(ATIP_STATE_DIR=str(self.state), **more)

    def exec(self, name: str, *args: str, sandbox: str | None = "required", policy: Path | None = None,
             **more: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.exec_argv(name, *args, sandbox=sandbox, policy=policy), capture_output=True,
                              text=True, env=self.sandbox_env(**more), cwd=self.work, timeout=120,
                              stdin=subprocess.DEVNULL)

    def audit_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.audit.read_text().splitlines()] if self.audit.exists() else []


def gcc_available() -> bool:
    return shutil.which("gcc") is not None


def sandbox_available() -> str | None:
    """Why this machine cannot enforce a boundary (a skip message), or None when it can."""
    from atip_trust.execution.sandbox import landlock_abi, netns_available

    if not sys.platform.startswith("linux"):
        return "Landlock is Linux only"
    if landlock_abi() < 3:
        return f"the kernel's Landlock ABI is {landlock_abi()} (3 or more needed)"
    if not netns_available():
        return "no private network namespace can be made here"
    return None


__all__ = ["READ_ONLY", "SandboxWorld", "gcc_available", "os", "sandbox_available"]
