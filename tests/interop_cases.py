"""The interop suite (../shared/fixtures/interop) as CLI invocations: one per index.json row.

Each row becomes the command a user would type: ``atip-trust verify ARTIFACT --bundle B`` with the
signing certificate's identity and issuer (from case.json), ``--staging`` or ``--trusted-root`` as the
case says, ``--key key.pub`` for managed-key cases. The target is the *declared* outcome of the
upstream producer (``source_declared_expectation``), not what sigstore-python alone does.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared_material import shared_path


def find_interop() -> Path:
    """``../shared/fixtures/interop`` beside the checkout; ``ATIP_SHARED_DIR`` (its parent's parent) or
    ``ATIP_INTEROP_DIR`` (the folder itself) point elsewhere (tests/shared_material.py)."""
    return shared_path("fixtures", "interop", env="ATIP_INTEROP_DIR")


#: Declared "verifies" but only with GitHub's own trusted root, which the suite does not ship:
#: these must fail closed, naming the missing root.
GITHUB_ROOT = "GitHub's trusted root"


@dataclass
class Case:
    row: dict[str, Any]
    argv: list[str]
    expect_ok: bool
    note: str = ""

    @property
    def id(self) -> str:
        return str(self.row["case"])


def _subject_digest(case_dir: Path, bundle_doc: dict[str, Any]) -> str | None:
    env = bundle_doc.get("dsseEnvelope")
    if isinstance(env, dict):
        stmt = json.loads(base64.b64decode(env["payload"]))
        for s in stmt.get("subject", []):
            if "sha256" in s.get("digest", {}):
                return "sha256:" + s["digest"]["sha256"]
    ms = bundle_doc.get("messageSignature") or {}
    dg = (ms.get("messageDigest") or {}).get("digest")
    if dg:
        return "sha256:" + base64.b64decode(dg).hex()
    return None


def build(row: dict[str, Any], interop: Path, tmp: Path) -> Case:
    case_dir = interop / row["case"].split("#")[0]
    bundle = case_dir / row["bundle"]
    if "#" in row["case"]:
        # One row per line of a .jsonl: verify that line on its own.
        n = int(row["case"].split("#")[1])
        lines = [ln for ln in bundle.read_bytes().split(b"\n") if ln.strip()]
        one = tmp / f"{row['case'].replace('#', '_')}.json"
        one.write_bytes(lines[n])
        bundle = one
    declared = str(row["declared"])
    expect_ok = declared.startswith("verifies") and GITHUB_ROOT not in declared
    argv = ["verify"]
    artifact = case_dir / row["artifact"] if row.get("artifact") else None
    if artifact is not None and artifact.is_file():
        argv.append(str(artifact))
    else:
        try:
            raw = bundle.read_bytes()
            doc = json.loads(raw.split(b"\n")[0] if bundle.name.endswith(".jsonl") else raw)
            subject = _subject_digest(case_dir, doc)
        except (ValueError, KeyError):
            subject = None
        argv.append(subject or "sha256:" + "0" * 64)
    argv += ["--bundle", str(bundle)]
    root = row["trusted_root"]
    if root == "staging":
        argv.append("--staging")
    elif root != "production":
        argv += ["--trusted-root", str(case_dir / root)]
    key = case_dir / "key.pub"
    if key.is_file():
        argv += ["--key", str(key)]
    else:
        argv += [
            "--certificate-identity", row.get("identity") or "https://example.invalid/no-identity",
            "--certificate-oidc-issuer", row.get("issuer") or "https://example.invalid/no-issuer",
        ]
    return Case(row=row, argv=argv, expect_ok=expect_ok, note=declared)


def load_rows(interop: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads((interop / "index.json").read_text())
    return rows
