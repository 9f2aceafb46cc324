"""``--trusted-root FILE.jsonl``: several trusted roots, one per line, as ``gh attestation trusted-root`` writes
them; each bundle is verified with the one root whose Fulcio CA issued its certificate (or that lists its
log, for a key bundle), and refused when two roots claim it (signature/trustroot.py ``TrustRoot.choose``).

Two local test Sigstore instances (fixtures/testsigstore.py): a public-good style one (Rekor, CT log) and a
GitHub style one (TSA only, no log). Verification is real throughout.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from atip_trust.errors import TrustRootError
from atip_trust.evaluation.evaluate import evaluate
from atip_trust.evaluation.inputs import Constraints, Evidence
from atip_trust.facts.artifact import Artifact
from atip_trust.facts.report import TrustReport
from atip_trust.signature.identity import IdentityRule
from atip_trust.signature.trustroot import TrustRoot

import testsigstore
from verify_helpers import cli
from world import World as WorldBase

IDENTITY = "https://github.com/atip-test/tool/.github/workflows/release.yml@refs/tags/v1.0.0"
ISSUER = "https://token.actions.githubusercontent.com"
DATA = b"#!/bin/sh\necho two instances\n"


def _line(doc: dict[str, Any]) -> str:
    return json.dumps(doc, separators=(",", ":"))


class World(WorldBase):
    """Three Sigstores: ``public`` (the world's own), ``github`` (timestamp-only) and ``other`` (trusted by
    no root set)."""

    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp, ts=testsigstore.TestSigstore(seed=31, name="atip-test-public"), root=None)
        self.public = self.ts
        self.github = testsigstore.TestSigstore(seed=32, name="atip-test-github")
        self.other = testsigstore.TestSigstore(seed=33, name="atip-test-other")
        self.artifact = self.file("tool", DATA)
        self.key = ec.derive_private_key(31, ec.SECP256R1())
        self.key_path = self.public_key("key.pub", self.key)
        self.roots = self.file("trusted_root.jsonl", _line(self.public.trusted_root()) + "\n"
                               + _line(self.github.trusted_root_tsa_only()) + "\n")
        self.constraints = Constraints(signers=(IdentityRule(identity=IDENTITY, issuer=ISSUER),),
                                       keys=(self.key_path,))
        statement = testsigstore.slsa_v1_statement("tool", hashlib.sha256(DATA).hexdigest())
        self.bundles = {
            "public": self.public.sign_artifact(DATA, identity=IDENTITY, issuer=ISSUER),
            "github": self.github.sign_dsse_v2(statement, identity=IDENTITY, issuer=ISSUER, tlog=False, sct=False),
            "key": self.public.sign_with_key(DATA, self.key),
            "other": self.other.sign_artifact(DATA, identity=IDENTITY, issuer=ISSUER),
        }

    def evaluate(self, name: str, roots: Path | None = None) -> TrustReport:
        path = self.file(f"{name}.sigstore.json", self.bundles[name])
        with Artifact.open(self.artifact) as art:
            return evaluate(art, Evidence(bundles=(path,)), self.constraints,
                            TrustRoot.from_file(roots or self.roots))


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("root-sets"))


def _checks(report: TrustReport) -> list[tuple[str, str, str]]:
    return [(c.name, c.status, c.message) for a in report.attestations for c in a.checks]


@pytest.mark.parametrize(("name", "member"), [("public", "#1"), ("github", "#2"), ("key", "#1")])
def test_a_jsonl_root_with_two_instances_verifies_each_bundle_with_its_own_root(
        world: World, name: str, member: str) -> None:
    report = world.evaluate(name)
    assert report.trust_level.name == "VERIFIED", _checks(report)
    if name != "key":  # the certificate's chain check names the root that verified it
        assert any(n == "certificate.chain" and st == "pass" and f"trusted_root.jsonl{member}" in m
                   for n, st, m in _checks(report)), _checks(report)


def test_the_cli_reads_gh_trusted_root_jsonl(world: World) -> None:
    """The old reader stopped at line 2 ("Extra data"): exit 2."""
    bundle = world.dir / "cli.sigstore.json"
    bundle.write_text(json.dumps(world.bundles["github"]))
    r = cli("verify", str(world.artifact), "--bundle", str(bundle), "--trusted-root", str(world.roots),
            "--certificate-identity", IDENTITY, "--certificate-oidc-issuer", ISSUER, "--format", "json",
            "--no-cache")
    assert (r.code, r.json["trust_level"]) == (0, "VERIFIED"), r.out + r.err


def test_two_roots_that_claim_the_same_ca_are_refused(world: World) -> None:
    """Two lines whose Fulcio CA is the same (here: the public instance with and without its TSA):
    gh takes the first that matches; we refuse, naming both."""
    ambiguous = world.dir / "ambiguous.jsonl"
    ambiguous.write_text(_line(world.public.trusted_root()) + "\n" + _line(world.public.trusted_root_v2()) + "\n")
    report = world.evaluate("public", ambiguous)
    assert report.trust_level.name != "VERIFIED"
    assert any(n == "certificate.chain" and st == "fail" and "2 trusted roots" in m and "refused" in m
               for n, st, m in _checks(report)), _checks(report)


def test_a_bundle_from_an_instance_not_in_the_file_is_refused(world: World) -> None:
    report = world.evaluate("other")
    assert any(n == "certificate.chain" and st == "fail" and "no trusted root in" in m
               for n, st, m in _checks(report)), _checks(report)


def test_the_same_root_twice_is_one_root(world: World, tmp_path: Path) -> None:
    twice = tmp_path / "twice.jsonl"
    twice.write_text((_line(world.public.trusted_root()) + "\n") * 2)
    assert len(TrustRoot.from_file(twice).members) == 1
    assert world.evaluate("public", twice).trust_level.name == "VERIFIED"


def test_a_bad_line_is_the_files_error_naming_the_line(world: World, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(_line(world.public.trusted_root()) + "\n" + '{"mediaType": "nope"}' + "\n")
    with pytest.raises(TrustRootError, match=r"bad\.jsonl#2"):
        TrustRoot.from_file(bad)


def test_a_pretty_printed_single_root_is_still_one_root(world: World) -> None:
    path = world.public.write_trusted_root(world.dir / "pretty.json")
    assert TrustRoot.from_file(path).members == ()


# -- roots the protobuf spec allows and sigstore-python's model refuses ----------------------------------

_SPEC_ALLOWED = {
    # sigstore's scaffolding writes CA subjects without commonName; the subject is informational.
    "ca-subject-without-commonName": lambda d: d["certificateAuthorities"][0]["subject"].pop("commonName"),
    "ca-subject-without-organization": lambda d: d["certificateAuthorities"][0]["subject"].pop("organization"),
    "ca-without-subject": lambda d: d["certificateAuthorities"][0].pop("subject"),
    "tsa-without-subject": lambda d: d["timestampAuthorities"][0].pop("subject"),
    "timestampAuthorities-absent": lambda d: d.pop("timestampAuthorities"),
}


@pytest.mark.parametrize("field", sorted(_SPEC_ALLOWED))
def test_a_root_the_spec_allows_is_read_and_sigstore_python_still_verifies(world: World, field: str,
                                                                          tmp_path: Path) -> None:
    """The old reader handed the file to sigstore-python's pydantic model as is: exit 2. The informational
    fields it requires are filled with proto3 defaults for its model only; sigstore-python verifies."""
    doc = world.public.trusted_root_v2()
    _SPEC_ALLOWED[field](doc)
    root = tmp_path / "root.json"
    root.write_text(json.dumps(doc))
    bundle = tmp_path / "b.sigstore.json"
    bundle.write_text(json.dumps(world.bundles["public"]))
    r = cli("verify", str(world.artifact), "--bundle", str(bundle), "--trusted-root", str(root),
            "--certificate-identity", IDENTITY, "--certificate-oidc-issuer", ISSUER, "--format", "json",
            "--no-cache")
    assert (r.code, r.json["trust_level"]) == (0, "VERIFIED"), r.out + r.err
    assert any(c["name"] == "certificate.chain" and c["status"] == "pass" for c in r.json["checks"])


@pytest.mark.parametrize("field", ["ctlogs"])
def test_an_absent_list_is_an_empty_list_and_nothing_chains_to_it(world: World, field: str, tmp_path: Path) -> None:
    """proto3: an absent repeated field is empty. Without the CT log the bundle fails its SCT check
    (exit 1), not the root's parse (exit 2)."""
    doc = world.public.trusted_root_v2()
    doc.pop(field)
    root = tmp_path / "root.json"
    root.write_text(json.dumps(doc))
    bundle = tmp_path / "b.sigstore.json"
    bundle.write_text(json.dumps(world.bundles["public"]))
    r = cli("verify", str(world.artifact), "--bundle", str(bundle), "--trusted-root", str(root),
            "--certificate-identity", IDENTITY, "--certificate-oidc-issuer", ISSUER, "--format", "json",
            "--no-cache")
    assert r.code == 1 and r.json["trust_level"] == "UNVERIFIED", r.out + r.err


@pytest.mark.parametrize("mutate", [
    lambda d: d["certificateAuthorities"][0].pop("validFor"),
    lambda d: d["tlogs"][0]["publicKey"].pop("keyDetails"),
], ids=["ca-validFor", "tlog-keyDetails"])
def test_a_field_that_carries_trust_is_never_filled_in(world: World, mutate: Any, tmp_path: Path) -> None:
    doc = world.public.trusted_root_v2()
    mutate(doc)
    root = tmp_path / "root.json"
    root.write_text(json.dumps(doc))
    with pytest.raises(TrustRootError, match="rejected by sigstore"):
        TrustRoot.from_file(root).sigstore_trusted_root()


def test_a_policy_may_pin_a_jsonl_root_and_a_flag_may_name_the_same_file(world: World, tmp_path: Path) -> None:
    """``trust.trustedRoots: [{"path": "trusted_root.jsonl"}]``: each bundle verified by its own root;
    ``--trusted-root`` with the same bytes is accepted, another root refused (pinning by digest)."""
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"version": 1, "mode": "enforce", "trust": {
        "signers": [{"identity": IDENTITY, "issuer": ISSUER}], "trustedRoots": [{"path": str(world.roots)}]}}))
    for name in ("public", "github"):
        bundle = tmp_path / f"{name}.sigstore.json"
        bundle.write_text(json.dumps(world.bundles[name]))
        r = cli("verify", str(world.artifact), "--bundle", str(bundle), "--policy", str(policy), "--format",
                "json", "--no-cache")
        assert r.code == 0, r.out + r.err
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(world.roots.read_bytes())
    r = cli("verify", str(world.artifact), "--bundle", str(tmp_path / "public.sigstore.json"), "--policy",
            str(policy), "--trusted-root", str(copy), "--format", "json", "--no-cache")
    assert r.code == 0, r.out + r.err
    single = world.public.write_trusted_root(tmp_path / "single.json")
    r = cli("verify", str(world.artifact), "--bundle", str(tmp_path / "public.sigstore.json"), "--policy",
            str(policy), "--trusted-root", str(single), "--format", "json", "--no-cache")
    assert r.code == 2 and "is not a trusted root the policy pins" in r.err, r.err
