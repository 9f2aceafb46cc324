"""docs/ci.md's own pattern (issue 34, item 4): one ``attestations.jsonl`` for every artifact of a release.

A bundle in the shared file that names or signs another artifact is not about this one: no FAIL line, no
SARIF result, never COMPROMISED, once another bundle verifies this artifact. Without such a bundle a
signed digest that is not this file's stays tampering, and a file holding only another artifact's
bundles never makes this one VERIFIED. slsa-verifier's habits (``--provenance-path`` with
``--source-uri`` alone, ``--print-provenance``) and gh's (``-d``, ``--jq``) are taken as typed.
Real bundles of the project's test Sigstore, the real CLI as a subprocess.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

import testsigstore
from verify_helpers import run_cli
from world import ISSUER, World

ROOT = Path(__file__).resolve().parents[2]
FX = ROOT / "fixtures" / "sigstore"
ACME = "https://github.com/acme/tool/.github/workflows/release.yml@refs/tags/v1.0.0"
GENERATOR = ("https://github.com/slsa-framework/slsa-github-generator/.github/workflows/"
             "generator_generic_slsa3.yml@refs/tags/v2.1.0")
NAMES = ("tool-linux", "tool-darwin", "tool-windows.exe")


def acme_claims() -> dict[str, str]:
    return {"source_repository_uri": "https://github.com/acme/tool",
            "source_repository_owner_uri": "https://github.com/acme",
            "runner_environment": "github-hosted"}


def ci_command() -> list[str]:
    """The ``atip-trust verify`` line of docs/ci.md's first sh block, as a user copies it."""
    text = (ROOT / "docs" / "ci.md").read_text()
    block = re.search(r"```sh\n(atip-trust verify .*?)\n```", text, re.S)
    assert block is not None, "docs/ci.md lost its verify example"
    argv = shlex.split(block.group(1).replace("\\\n", " "))
    assert argv[:2] == ["atip-trust", "verify"] and "dist/attestations.jsonl" in argv
    return argv[1:]


def run(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATIP_TRUST_")}
    return run_cli(argv, timeout=120, cwd=cwd, env={**env, "CI": "true"})


def release(w: World, names: tuple[str, ...], *, kinds: tuple[str, ...] = ("dsse", "message"),
            only: tuple[str, ...] | None = None, identity: str = ACME) -> Path:
    """dist/<name> for each name and dist/attestations.jsonl holding bundles of ``kinds`` for each of
    ``only`` (default: all of them), signed by ``identity``."""
    lines: list[str] = []
    for name in names:
        data = f"#!/bin/sh\necho {name}\n".encode()
        w.tool(f"dist/{name}", data)
        if only is not None and name not in only:
            continue
        if "dsse" in kinds:
            stmt = testsigstore.slsa_v1_statement(name, hashlib.sha256(data).hexdigest(),
                                                  repository="https://github.com/acme/tool")
            lines.append(json.dumps(w.ts.sign_dsse(stmt, identity=identity, issuer=ISSUER,
                                                   extensions=acme_claims())))
        if "message" in kinds:
            lines.append(json.dumps(w.ts.sign_artifact(data, identity=identity, issuer=ISSUER,
                                                       extensions=acme_claims())))
    return w.file("dist/attestations.jsonl", "\n".join(lines) + "\n")


@pytest.fixture
def w(tmp_path: Path) -> World:
    return World(tmp_path, seed=3404)


def levels(doc: dict[str, Any]) -> list[str]:
    return [r["trust_level"] for r in doc["results"]]


@pytest.mark.parametrize("kinds", [("dsse", "message"), ("message",), ("dsse",)], ids="+".join)
def test_ci_md_pattern_is_verified_without_noise_in_text_json_and_sarif(w: World, kinds: tuple[str, ...]) -> None:
    release(w, NAMES, kinds=kinds)
    argv = ci_command()
    argv[1:3] = [f"dist/{n}" for n in NAMES]  # the doc names two artifacts; a release has three here
    if kinds == ("message",):
        # cosign sign-blob --bundle: signatures, no attestation; gh's --repo would require SLSA
        # provenance (docs/ci.md), so cosign's identity flags name the signer.
        at = argv.index("--repo")
        argv[at:at + 2] = ["--certificate-identity", ACME, "--certificate-oidc-issuer", ISSUER]
    r = run(*argv, "--trusted-root", str(w.root), "--no-cache", cwd=w.dir)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "FAIL" not in r.stdout and "COMPROMISED" not in r.stdout, r.stdout
    assert r.stdout.count(": VERIFIED -> allow") == len(NAMES)
    each = len(kinds) * len(NAMES)
    assert f"{each} bundles: {len(kinds)} verified, 0 failed, {each - len(kinds)} about other artifacts" in r.stdout
    assert json.loads((w.dir / "verify.sarif").read_text())["runs"][0]["results"] == []
    doc = json.loads((w.dir / "verify.json").read_text())
    assert levels(doc) == ["VERIFIED"] * len(NAMES) and doc["exit_code"] == 0
    # Each result still lists every bundle; the others are set aside with their reason, not failed.
    others = [a for a in doc["results"][0]["attestations"] if not a["applies"]]
    assert len(others) == each - len(kinds)
    assert all(c["status"] == "skip" and "not about this artifact" in c["message"]
               for a in others for c in a["checks"])


def test_a_file_with_only_another_artifacts_bundles_never_verifies_this_one(w: World) -> None:
    release(w, ("tool-linux", "tool-darwin"), only=("tool-darwin",))
    r = run("verify", "dist/tool-linux", "dist/tool-darwin", "--bundle", "dist/attestations.jsonl",
            "--repo", "acme/tool", "--trusted-root", str(w.root), "--no-cache", "--format", "json", cwd=w.dir)
    assert r.returncode == 1
    linux, darwin = json.loads(r.stdout)["results"]
    # The shared file's bundles are darwin's, an artifact of this run: about it, so linux is UNSIGNED
    # (nothing about it was given), never VERIFIED; darwin is VERIFIED.
    assert linux["trust_level"] == "UNSIGNED" and linux["decision"]["behavior"] == "deny"
    assert darwin["trust_level"] == "VERIFIED"
    # Given for this artifact alone, another file's signature means this file is not the one that was
    # signed (docs/decisions.md): COMPROMISED.
    alone = run("verify", "dist/tool-linux", "--bundle", "dist/attestations.jsonl", "--repo", "acme/tool",
                "--trusted-root", str(w.root), "--no-cache", "-q", cwd=w.dir)
    assert alone.returncode == 1 and "tool-linux: COMPROMISED -> deny" in alone.stdout
    dsse_only = release(w, ("tool-linux", "tool-darwin"), only=("tool-darwin",), kinds=("dsse",))
    r = run("verify", "dist/tool-linux", "--bundle", str(dsse_only), "--repo", "acme/tool", "--trusted-root",
            str(w.root), "--no-cache", "-q", cwd=w.dir)
    assert r.returncode == 1 and "tool-linux: UNSIGNED -> deny" in r.stdout


def test_a_changed_artifact_in_a_shared_file_is_still_compromised(w: World) -> None:
    release(w, NAMES)
    (w.dir / "dist" / "tool-linux").write_bytes(b"#!/bin/sh\necho backdoor\n")
    r = run("verify", *(f"dist/{n}" for n in NAMES), "--bundle", "dist/attestations.jsonl", "--repo",
            "acme/tool", "--trusted-root", str(w.root), "--no-cache", "--format", "json", cwd=w.dir)
    assert r.returncode == 1
    assert levels(json.loads(r.stdout)) == ["COMPROMISED", "VERIFIED", "VERIFIED"]


def test_another_artifact_replaced_by_this_ones_signed_bytes_never_verifies_the_changed_one(w: World) -> None:
    """The attack on the shared-evidence rule: tool-linux is changed and tool-darwin is given
    tool-linux's original (signed) bytes, so linux's bundles now sign an artifact of the run. The
    changed file is set aside as UNSIGNED at best, never VERIFIED; the run fails."""
    release(w, ("tool-linux", "tool-darwin"), only=("tool-linux",))
    original = (w.dir / "dist" / "tool-linux").read_bytes()
    (w.dir / "dist" / "tool-darwin").write_bytes(original)
    (w.dir / "dist" / "tool-linux").write_bytes(b"#!/bin/sh\necho backdoor\n")
    r = run("verify", "dist/tool-linux", "dist/tool-darwin", "--bundle", "dist/attestations.jsonl", "--repo",
            "acme/tool", "--trusted-root", str(w.root), "--no-cache", "--format", "json", cwd=w.dir)
    assert r.returncode == 1
    linux, darwin = json.loads(r.stdout)["results"]
    assert linux["trust_level"] in ("UNSIGNED", "COMPROMISED") and linux["decision"]["behavior"] == "deny"
    assert darwin["trust_level"] == "VERIFIED"  # its bytes are the ones that were signed


def test_another_signers_bundle_for_this_artifact_does_not_set_the_others_aside(w: World) -> None:
    """An attacker's valid bundle for this artifact by an untrusted signer verifies nothing, so the
    shared file's other bundles are not set aside: the verdict stays a failure."""
    release(w, ("tool-linux", "tool-darwin"), only=("tool-darwin",))
    evil = "https://github.com/evil/tool/.github/workflows/release.yml@refs/tags/v1.0.0"
    data = (w.dir / "dist" / "tool-linux").read_bytes()
    with (w.dir / "dist" / "attestations.jsonl").open("a") as f:
        f.write(json.dumps(w.ts.sign_artifact(data, identity=evil, issuer=ISSUER)) + "\n")
    r = run("verify", "dist/tool-linux", "--bundle", "dist/attestations.jsonl", "--repo", "acme/tool",
            "--trusted-root", str(w.root), "--no-cache", "--format", "json", cwd=w.dir)
    assert r.returncode == 1 and json.loads(r.stdout)["trust_level"] == "COMPROMISED"


def test_a_forged_signature_over_this_artifact_is_never_set_aside(w: World) -> None:
    """Tampering evidence about these bytes (a signature that does not verify over them) stays
    COMPROMISED even when another bundle in the file verifies them."""
    release(w, ("tool-linux",))
    data = (w.dir / "dist" / "tool-linux").read_bytes()
    with (w.dir / "dist" / "attestations.jsonl").open("a") as f:
        f.write(json.dumps(w.ts.sign_artifact(data, identity=ACME, issuer=ISSUER, extensions=acme_claims(),
                                              mutate="signature")) + "\n")
    r = run("verify", "dist/tool-linux", "--bundle", "dist/attestations.jsonl", "--repo", "acme/tool",
            "--trusted-root", str(w.root), "--no-cache", "-q", cwd=w.dir)
    assert r.returncode == 1 and "COMPROMISED" in r.stdout


# slsa-verifier's and gh's habits ------------------------------------------------------------------------

SLSA = ("verify", str(FX / "artifacts" / "hello-tool"), "--provenance-path",
        str(FX / "good" / "hello-tool.dsse.sigstore.json"), "--trusted-root", str(FX / "trusted_root.json"),
        "--no-cache")


@pytest.mark.parametrize("flags", [["--source-uri", "github.com/atip-test/tool"],
                                   ["--source-uri", "github.com/atip-test/tool", "--source-tag", "v1.0.0"],
                                   ["--builder-id", GENERATOR]], ids=" ".join)
def test_slsa_verifier_flags_alone_verify_with_the_trusted_builder_as_signer(tmp_path: Path,
                                                                          flags: list[str]) -> None:
    r = run(*SLSA, *flags, "-q", cwd=tmp_path)
    assert r.returncode == 0 and ": VERIFIED -> allow" in r.stdout, r.stdout + r.stderr


def test_slsa_verifier_flags_alone_refuse_another_source(tmp_path: Path) -> None:
    r = run(*SLSA, "--source-uri", "github.com/evil/tool", "-q", cwd=tmp_path)
    assert r.returncode == 1 and "PROVENANCE_FAIL" in r.stdout


def test_provenance_signed_by_a_tenant_workflow_is_not_a_trusted_builders(w: World) -> None:
    """With no signer named, only a trusted builder's certificate counts: a project's own workflow
    that writes provenance naming the generator as its builder is not it (slsa-verifier
    VerifyBuilderIdentity)."""
    data = b"#!/bin/sh\necho acme\n"
    tool = w.tool("tool", data)
    stmt = testsigstore.slsa_v1_statement("tool", hashlib.sha256(data).hexdigest())
    forged = w.attestation("tool.intoto.jsonl", stmt, identity=ACME, extensions=acme_claims())
    r = run("verify", str(tool), "--provenance-path", str(forged), "--source-uri", "github.com/atip-test/tool",
            "--trusted-root", str(w.root), "--no-cache", "--format", "json", cwd=w.dir)
    assert r.returncode == 1 and json.loads(r.stdout)["trust_level"] == "UNVERIFIED", r.stdout
    plain = w.bundle("tool.sigstore.json", data, identity=GENERATOR)  # a signature, but no provenance
    r = run("verify", str(tool), "--provenance-path", str(plain), "--source-uri", "github.com/atip-test/tool",
            "--trusted-root", str(w.root), "--no-cache", "-q", cwd=w.dir)
    assert r.returncode == 1 and "PROVENANCE_FAIL" in r.stdout


def test_print_provenance_prints_the_verified_statement(tmp_path: Path) -> None:
    r = run(*SLSA, "--source-uri", "github.com/atip-test/tool", "--print-provenance", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    stmt = json.loads(r.stdout)
    digest = hashlib.sha256((FX / "artifacts" / "hello-tool").read_bytes()).hexdigest()
    assert stmt["subject"][0]["digest"]["sha256"] == digest
    assert stmt["predicate"]["runDetails"]["builder"]["id"] == GENERATOR
    assert ": VERIFIED -> allow" in r.stderr  # the report, on standard error
    failed = run(*SLSA, "--source-uri", "github.com/evil/tool", "--print-provenance", cwd=tmp_path)
    assert failed.returncode == 1 and failed.stdout == ""  # nothing unverified is printed


def test_ghs_jq_and_digest_alg_are_taken(tmp_path: Path) -> None:
    base = (*SLSA, "--source-uri", "github.com/atip-test/tool")
    assert run(*base, "--jq", ".trust_level", cwd=tmp_path).stdout == "VERIFIED\n"
    two = run(*base[:2], str(FX / "artifacts" / "hello-tool"), *base[2:], "--jq", ".results[].decision.behavior",
              cwd=tmp_path)
    assert two.stdout == "allow\nallow\n"
    for alg in ("sha256", "sha512"):
        assert run(*base, "-d", alg, "-q", cwd=tmp_path).returncode == 0
    bad = run(*base, "--jq", "select(.trust_level)", cwd=tmp_path)
    assert bad.returncode == 2 and "--jq" in bad.stderr and "Traceback" not in bad.stderr
    assert run(*base, "--digest-alg", "md5", cwd=tmp_path).returncode == 2
