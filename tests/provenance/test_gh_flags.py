"""gh attestation verify's flags mean what gh means by them (issue 26, item 1; cli/cli
pkg/cmd/attestation/verify ``newEnforcementCriteria``).

A user who types gh's most common form, ``verify FILE --bundle B --owner O``, gets gh's check: a
workflow of O's signed it (the SAN under https://github.com/O/, from GitHub Actions), the certificate's
source repository belongs to O, and the attestation is SLSA provenance v1 unless ``--predicate-type``
says otherwise — so a validly signed attestation of another kind (a PyPI publish attestation) is not
VERIFIED, as gh refuses it. cosign's flags keep cosign's meaning (no predicate filter). Real bundles of
the local test Sigstore and the shipped fixture (a tool built by the SLSA generator's reusable workflow).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

import testsigstore
from verify_helpers import cli
from world import ISSUER, World

ROOT = Path(__file__).resolve().parents[2]
FX = ROOT / "fixtures" / "sigstore"
ACME = "https://github.com/acme/tool/.github/workflows/release.yml@refs/tags/v1.0.0"
EVIL = "https://github.com/evil/tool/.github/workflows/release.yml@refs/tags/v1.0.0"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
PUBLISH = "https://docs.pypi.org/attestations/publish/v1"
TOOL = b"#!/bin/sh\necho acme tool\n"


def gh_extensions(owner: str, identity: str) -> dict[str, str]:
    """Fulcio's GitHub Actions claims for a release workflow of ``owner``/tool."""
    return {"source_repository_uri": f"https://github.com/{owner}/tool",
            "source_repository_owner_uri": f"https://github.com/{owner}",
            "source_repository_ref": "refs/tags/v1.0.0", "source_repository_digest": COMMIT,
            "build_signer_uri": identity, "build_signer_digest": COMMIT, "runner_environment": "github-hosted"}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    w = World(tmp_path_factory.mktemp("gh"), seed=261)
    tool = w.file("tool", TOOL)
    hexd = hashlib.sha256(TOOL).hexdigest()
    slsa = testsigstore.slsa_v1_statement("tool", hexd, repository="https://github.com/acme/tool")
    publish = {"_type": "https://in-toto.io/Statement/v1", "subject": [{"name": "tool", "digest": {"sha256": hexd}}],
               "predicateType": PUBLISH,
               "predicate": {"publisher": {"kind": "GitHub", "repository": "acme/tool"}}}
    out = {"dir": w.dir, "root": w.root, "tool": tool}
    for name, stmt, identity, owner in (("slsa", slsa, ACME, "acme"), ("publish", publish, ACME, "acme"),
                                        ("evil", slsa, EVIL, "evil")):
        out[name] = w.attestation(f"{name}.sigstore.json", stmt, identity=identity,
                                  extensions=gh_extensions(owner, identity))
    return out


def gh_verify(world: dict[str, Any], bundle: str, *flags: str) -> Any:
    return cli("verify", str(world["tool"]), "--bundle", str(world[bundle]), "--trusted-root",
               str(world["root"]), "--format", "json", "--no-cache", *flags)


def failed(run: Any) -> dict[str, Any]:
    return {c["name"]: c for c in run.json["checks"] if c["status"] != "pass"}


@pytest.mark.parametrize("flags", [["--owner", "acme"], ["-o", "acme"], ["--repo", "acme/tool"],
                                   ["-R", "acme/tool"]], ids=" ".join)
def test_owner_or_repo_alone_is_gh_identity_check_not_a_usage_error(world, flags: list[str]) -> None:
    run = gh_verify(world, "slsa", *flags)
    assert run.code == 0, run.out + run.err
    assert run.json["trust_level"] == "VERIFIED"


@pytest.mark.parametrize("flags", [["--owner", "evil"], ["--repo", "acme/other"], ["--repo", "evil/tool"]],
                         ids=" ".join)
def test_owner_or_repo_of_someone_else_is_not_verified(world, flags: list[str]) -> None:
    run = gh_verify(world, "slsa", *flags)
    assert run.code == 1 and run.json["trust_level"] != "VERIFIED"


def test_a_workflow_of_another_owner_does_not_pass_for_the_owner_named(world) -> None:
    run = gh_verify(world, "evil", "--owner", "acme")
    assert run.code == 1
    assert "claim.source_repository_owner_uri" in failed(run) or "identity" in json.dumps(failed(run))


def test_a_signed_publish_attestation_is_not_verified_under_ghs_flags_as_gh_refuses_it(world) -> None:
    run = gh_verify(world, "publish", "--owner", "acme")
    assert run.code == 1, run.out
    check = failed(run)["predicate_type"]
    assert check["expected"] == "https://slsa.dev/provenance/v1" and check["actual"] == PUBLISH
    # Asked for by name, it counts; and cosign's flags never filtered by predicate type.
    assert gh_verify(world, "publish", "--owner", "acme", "--predicate-type", PUBLISH).code == 0
    cosign = gh_verify(world, "publish", "--certificate-identity", ACME, "--certificate-oidc-issuer", ISSUER)
    assert cosign.code == 0, cosign.out


@pytest.mark.parametrize("flag, good", [("--source-ref", "refs/tags/v1.0.0"), ("--source-digest", COMMIT),
                                        ("--signer-digest", COMMIT)])
def test_source_ref_source_digest_and_signer_digest_are_certificate_claims_as_gh_means(
        world, flag: str, good: str) -> None:
    assert gh_verify(world, "slsa", "--owner", "acme", flag, good).code == 0
    wrong = gh_verify(world, "slsa", "--owner", "acme", flag, "refs/tags/v9" if "ref" in flag else "f" * 40)
    assert wrong.code == 1 and any(name.startswith("claim.") for name in failed(wrong)), wrong.out


def test_a_reusable_workflow_needs_signer_repo_as_with_gh() -> None:
    # The shipped fixture: tool of atip-test/hello-tool, signed by the SLSA generator's reusable workflow.
    base = ("verify", str(FX / "artifacts" / "hello-tool"), "-b", str(FX / "good" / "hello-tool.dsse.sigstore.json"),
            "--trusted-root", str(FX / "trusted_root.json"), "--no-cache")
    assert cli(*base, "--owner", "atip-test").code == 1  # the SAN is not a workflow of atip-test's
    run = cli(*base, "--owner", "atip-test", "--signer-repo", "slsa-framework/slsa-github-generator")
    assert run.code == 0, run.out + run.err
    both = cli(*base, "--signer-repo", "a/b", "--cert-identity", "x", "--cert-oidc-issuer", ISSUER)
    assert both.code == 2 and "not both" in both.err


def test_admit_takes_ghs_flags_with_ghs_meaning(world, tmp_path: Path) -> None:
    pol = tmp_path / "policy.json"
    pol.write_text(json.dumps({"version": 1, "trust": {"trustedRoots": [{"path": str(world["root"])}]},
                               "permissions": {"allow": [{"rule": "tool", "minTrustLevel": "VERIFIED"}]},
                               "defaults": {"noMatch": "deny"}}))
    argv = ("admit", str(world["tool"]), "--policy", str(pol), "--no-audit", "--no-cache", "--format", "json",
            "--owner", "acme", "--non-interactive")
    good = cli(*argv, "-b", str(world["slsa"]))
    assert good.code == 0 and good.json["trust_level"] == "VERIFIED", good.out + good.err
    publish = cli(*argv, "-b", str(world["publish"]))
    assert publish.code == 1 and publish.json["trust_level"] != "VERIFIED"
