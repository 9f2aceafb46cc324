"""The one world builder of the tests: a folder, a local test Sigstore (fixtures/testsigstore.py) with its
trusted root written there, and the things a test puts beside them — tools, bundles, attestations, public
keys, signed registry shims, policies — plus the environment and the CLI run as a user runs it (in-process
as a fresh child would run it, ``exec`` as a real child: verify_helpers.run_cli).

Each suite's ``world`` fixture is a few lines over this class (tests/gate_world.py and
tests/discovery_world.py are the two shared worlds built on it), so a new suite writes what its world
holds, not how a bundle is dumped or a policy's trust section is spelled. Every file lands where the
suite names it (relative to the world's folder), so the paths a denial reason names stay the same.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization

import testsigstore
from verify_helpers import run_cli

ISSUER = "https://token.actions.githubusercontent.com"
ORG_ID = "https://github.com/example-org/tools/.github/workflows/release.yml@refs/tags/v1.0.0"
REGISTRY_ID = "https://github.com/example-org/shims/.github/workflows/sign.yml@refs/heads/main"


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class World:
    """``dir`` (the folder), ``ts`` (its test Sigstore, made from ``seed`` unless one is given) and ``root``
    (its trusted root file; with ``root=None`` none is written and ``root`` names a file that does not
    exist, so a policy that trusts it fails to load rather than trusting something else)."""

    def __init__(self, base: Path, seed: int = 13, *, ts: testsigstore.TestSigstore | None = None,
                 root: str | None = "trusted_root.json") -> None:
        self.dir = base
        self.ts = ts if ts is not None else testsigstore.TestSigstore(seed=seed)
        self.root = self.ts.write_trusted_root(base / root) if root is not None else base / "no-trusted-root"

    # Files.
    def file(self, rel: str | Path, data: bytes | str | Any, *, executable: bool = False,
             indent: int | None = None) -> Path:
        """Write ``data`` at ``rel`` (bytes and text as they are, anything else as JSON), making its
        folders; ``executable``: mode 0755."""
        path = self.dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            path.write_bytes(data)
        elif isinstance(data, str):
            path.write_text(data)
        else:
            path.write_text(json.dumps(data, indent=indent))
        if executable:
            path.chmod(0o755)
        return path

    def tool(self, rel: str | Path, body: bytes | str) -> Path:
        """An executable file (not signed: sign it with ``bundle`` or ``keep_bundle``)."""
        return self.file(rel, body, executable=True)

    # Signatures, by the world's test Sigstore.
    def signed(self, data: bytes, *, identity: str = ORG_ID, issuer: str = ISSUER, **kw: Any) -> dict[str, Any]:
        return self.ts.sign_artifact(data, identity=identity, issuer=issuer, **kw)

    def bundle(self, rel: str | Path, data: bytes, *, identity: str = ORG_ID, issuer: str = ISSUER,
               indent: int | None = None, **kw: Any) -> Path:
        """A message-signature bundle over ``data`` at ``rel``."""
        return self.file(rel, self.signed(data, identity=identity, issuer=issuer, **kw), indent=indent)

    def attestation(self, rel: str | Path, statement: Mapping[str, Any], *, identity: str = ORG_ID,
                    issuer: str = ISSUER, indent: int | None = None, **kw: Any) -> Path:
        """A DSSE bundle over an in-toto ``statement`` at ``rel``."""
        return self.file(rel, self.ts.sign_dsse(dict(statement), identity=identity, issuer=issuer, **kw),
                         indent=indent)

    def keep_bundle(self, folder: str | Path, data: bytes, **kw: Any) -> Path:
        """A bundle over ``data`` kept by digest in a bundle folder (``--bundle-dir`` layout)."""
        return self.bundle(Path(folder) / "sha256" / f"{sha256_hex(data)}.sigstore.json", data, **kw)

    def shim(self, folder: str | Path, doc: Mapping[str, Any], hexd: str, *, identity: str | None = REGISTRY_ID,
             indent: int | None = None) -> Path:
        """A registry shim for the binary of digest ``hexd`` in a file registry folder, with its detached
        bundle signed by ``identity`` (None: unsigned)."""
        path = self.file(Path(folder) / "sha256" / f"{hexd}.json", dict(doc), indent=indent)
        if identity is not None:
            self.file(f"{path}.bundle", self.signed(path.read_bytes(), identity=identity))
        return path

    def public_key(self, rel: str | Path, key: Any) -> Path:
        """The PEM public key of the private ``key`` at ``rel``."""
        return self.file(rel, key.public_key().public_bytes(serialization.Encoding.PEM,
                                                            serialization.PublicFormat.SubjectPublicKeyInfo))

    # Policies.
    def policy_doc(self, *, signers: Iterable[str] | None = (ORG_ID,), roots: Iterable[str | Path] | None = None,
                   trust: Mapping[str, Any] | None = None, **sections: Any) -> dict[str, Any]:
        """A version-1 policy trusting the world's root (or ``roots``) and ``signers`` (with the world's
        issuer; None: no signers entry), the ``trust`` entries added, then ``sections`` as given."""
        paths = [self.root] if roots is None else list(roots)
        named = {} if signers is None else {"signers": [{"identity": s, "issuer": ISSUER} for s in signers]}
        return {"version": 1, "trust": {"trustedRoots": [{"path": str(p)} for p in paths], **named, **(trust or {})},
                **sections}

    def policy_file(self, rel: str | Path = "policy.json", *, indent: int | None = None,
                    signers: Iterable[str] | None = (ORG_ID,), roots: Iterable[str | Path] | None = None,
                    trust: Mapping[str, Any] | None = None, **sections: Any) -> Path:
        return self.file(rel, self.policy_doc(signers=signers, roots=roots, trust=trust, **sections), indent=indent)

    # The CLI, as a user runs it.
    def env(self, **more: str) -> dict[str, str]:
        """The test's environment without the loader and interpreter variables a tool must not inherit."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LD_", "PYTHON"))}
        env.update(more)
        return env

    def run(self, *argv: str, env: dict[str, str] | None = None, stdin: str | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return run_cli(argv, env=env or self.env(), input=stdin, timeout=timeout)


__all__ = ["ISSUER", "ORG_ID", "REGISTRY_ID", "World", "sha256_hex"]
