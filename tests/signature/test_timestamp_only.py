"""Timestamp-only bundles: no transparency log entry, time from RFC 3161 timestamps of a TSA the trusted
root lists, as GitHub's instance signs artifact attestations of private repositories (gh verifies them
with sigstore-go ``WithSignedTimestamps(1)``). Allowed only by a root that does not require a log entry
(a root without log instances, or ``with_tlog_requirement(False)`` from policy); the embedded public-good
root and any root listing a log require one.

Bundles and roots come from the local test Sigstore (fixtures/testsigstore.py) and its TSA; verification is
real (rfc3161-client, cryptography).
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from atip_trust.evaluation.evaluate import evaluate
from atip_trust.evaluation.inputs import Constraints, Evidence
from atip_trust.facts.artifact import Artifact
from atip_trust.facts.report import TrustReport
from atip_trust.signature.identity import IdentityRule
from atip_trust.signature.trustroot import TrustRoot

import testsigstore
from verify_helpers import cli
from world import World as WorldBase

IDENTITY = "https://github.com/atip-test/private-tool/.github/workflows/release.yml@refs/tags/v1.0.0"
ISSUER = "https://token.actions.githubusercontent.com"
DATA = b"#!/bin/sh\necho private tool\n"


class World(WorldBase):
    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp, ts=testsigstore.TestSigstore(seed=25, name="atip-test-github"), root=None)
        self.artifact = self.file("tool", DATA)
        self.roots = {
            "tsa-only": self.file("tsa-only.trusted_root.json", self.ts.trusted_root_tsa_only()),
            "tsa-only+ct": self.file("tsa-only-ct.trusted_root.json", self.ts.trusted_root_tsa_only(ctlog=True)),
            "with-log": self.file("with-log.trusted_root.json", self.ts.trusted_root_v2()),
        }
        self.statement = testsigstore.slsa_v1_statement("tool", hashlib.sha256(DATA).hexdigest())
        self.constraints = Constraints(signers=(IdentityRule(identity=IDENTITY, issuer=ISSUER),))

    def message(self, **kwargs: Any) -> dict[str, Any]:
        kwargs.setdefault("sct", False)  # GitHub's Fulcio embeds no SCT
        return self.ts.sign_artifact_v2(DATA, identity=IDENTITY, issuer=ISSUER, tlog=False, **kwargs)

    def dsse(self, **kwargs: Any) -> dict[str, Any]:
        kwargs.setdefault("sct", False)
        return self.ts.sign_dsse_v2(self.statement, identity=IDENTITY, issuer=ISSUER, tlog=False, **kwargs)

    def evaluate(self, bundle: dict[str, Any], root: TrustRoot | str = "tsa-only") -> TrustReport:
        path = self.file("bundle.sigstore.json", bundle)
        trust_root = root if isinstance(root, TrustRoot) else TrustRoot.from_file(self.roots[root])
        with Artifact.open(self.artifact) as art:
            return evaluate(art, Evidence(bundles=(path,)), self.constraints, trust_root)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("timestamp-only"))


def _failed(report: TrustReport) -> list[tuple[str, str]]:
    return [(c.name, c.message) for a in report.attestations for c in a.checks if c.status != "pass"]


@pytest.mark.parametrize("kind", ["message", "dsse"])
def test_a_timestamp_only_bundle_verifies_with_a_root_that_has_no_log(world: World, kind: str) -> None:
    bundle = world.message() if kind == "message" else world.dsse()
    assert bundle["verificationMaterial"]["tlogEntries"] == []
    report = world.evaluate(bundle)
    assert report.trust_level.name == "VERIFIED", _failed(report)
    (result,) = report.attestations
    assert result.route == "timestamp" and result.vouches
    assert any(c.name == "time" and "signed timestamps" in c.message for c in result.checks)


def test_the_cli_verifies_a_timestamp_only_bundle_offline_from_its_trusted_root(world: World) -> None:
    """As ``gh attestation verify --custom-trusted-root`` does for GitHub's instance."""
    bundle = world.dir / "cli.sigstore.json"
    bundle.write_text(json.dumps(world.dsse()))
    r = cli("verify", str(world.artifact), "--bundle", str(bundle), "--trusted-root", str(world.roots["tsa-only"]),
            "--certificate-identity", IDENTITY, "--certificate-oidc-issuer", ISSUER, "--format", "json",
            "--no-cache")
    assert (r.code, r.json["trust_level"]) == (0, "VERIFIED"), r.out + r.err


@pytest.mark.parametrize(("mutate", "check", "reason"), [
    ("imprint", "timestamp", "does not verify with any TSA"),          # the timestamp is over other bytes
    ("tsa_untrusted", "timestamp", "does not verify with any TSA"),    # a TSA the root does not list
    ("cert_validity", "certificate.chain", ""),                        # certificate outside the TSA time
])
@pytest.mark.parametrize("kind", ["message", "dsse"])
def test_tampered_timestamp_only_bundles_fail(world: World, kind: str, mutate: str, check: str,
                                              reason: str) -> None:
    bundle = world.message(mutate=mutate) if kind == "message" else world.dsse(mutate=mutate)
    report = world.evaluate(bundle)
    assert report.trust_level.name != "VERIFIED"
    assert any(name == check and reason in message for name, message in _failed(report)), _failed(report)


def test_a_timestamp_token_with_a_flipped_byte_fails(world: World) -> None:
    bundle = copy.deepcopy(world.message())
    token_field = bundle["verificationMaterial"]["timestampVerificationData"]["rfc3161Timestamps"][0]
    raw = bytearray(base64.b64decode(token_field["signedTimestamp"]))
    raw[-10] ^= 1  # inside the TSA's signature
    token_field["signedTimestamp"] = base64.b64encode(bytes(raw)).decode()
    report = world.evaluate(bundle)
    assert report.trust_level.name != "VERIFIED"
    assert any(name == "timestamp" for name, _ in _failed(report)), _failed(report)


def test_a_timestamp_outside_the_tsa_window_fails(world: World, tmp_path: Path) -> None:
    """The root's TSA stops being valid before the timestamp's genTime."""
    from datetime import UTC, datetime, timedelta

    gen = datetime.fromtimestamp(testsigstore.DEFAULT_INTEGRATED_TIME, tz=UTC)
    root = tmp_path / "closed.json"
    root.write_text(json.dumps(world.ts.trusted_root_tsa_only(tsa_end=gen - timedelta(seconds=1))))
    report = world.evaluate(world.message(), TrustRoot.from_file(root))
    assert any(name == "timestamp" and "outside the TSA's validity" in message
               for name, message in _failed(report)), _failed(report)


def test_a_bundle_without_any_timestamp_fails(world: World) -> None:
    bundle = copy.deepcopy(world.message())
    del bundle["verificationMaterial"]["timestampVerificationData"]
    report = world.evaluate(bundle)
    assert any(name == "timestamp" and "neither a log entry nor a signed timestamp" in message
               for name, message in _failed(report)), _failed(report)


def test_a_root_that_lists_a_log_requires_a_log_entry_unless_policy_says_otherwise(world: World) -> None:
    """A public-good style root: a bundle stripped of its entry must not verify on its TSA alone."""
    report = world.evaluate(world.message(), "with-log")
    assert any(name == "tlog.entry" and "requires one" in message for name, message in _failed(report))
    relaxed = TrustRoot.from_file(world.roots["with-log"]).with_tlog_requirement(False)
    assert world.evaluate(world.message(sct=True), relaxed).trust_level.name == "VERIFIED"


def test_the_embedded_public_good_root_requires_a_log_entry() -> None:
    assert TrustRoot.embedded("production").requires_tlog
    assert TrustRoot.embedded("staging").requires_tlog


def test_a_root_that_lists_a_ct_log_still_requires_the_sct(world: World) -> None:
    """No log entry does not mean no SCT: a root with a CT log checks it."""
    without = world.evaluate(world.message(), "tsa-only+ct")
    assert any(name == "certificate.sct" for name, _ in _failed(without)), _failed(without)
    assert world.evaluate(world.message(sct=True), "tsa-only+ct").trust_level.name == "VERIFIED"


def _as_v01(bundle: dict[str, Any]) -> dict[str, Any]:
    bundle = copy.deepcopy(bundle)
    bundle["mediaType"] = "application/vnd.dev.sigstore.bundle+json;version=0.1"
    cert = bundle["verificationMaterial"].pop("certificate")
    bundle["verificationMaterial"]["x509CertificateChain"] = {"certificates": [cert]}
    return bundle


def test_a_v01_bundle_without_a_log_entry_verifies_under_a_root_without_logs(world: World) -> None:
    """Issue 33 interop: protobuf-specs ties v0.1's time to an entry's promise, but sigstore-go verifies
    a v0.1 bundle with no entry under a root with no logs (GitHub's staging instance) from its signed
    timestamps; so do we. (Was: refused as malformed whatever the root.)"""
    report = world.evaluate(_as_v01(world.message()))
    assert report.trust_level.name == "VERIFIED", _failed(report)
    assert report.attestations[0].route == "timestamp"


def test_a_v01_bundle_without_a_log_entry_is_refused_by_a_root_with_logs(world: World) -> None:
    report = world.evaluate(_as_v01(world.message()), "with-log")
    assert report.trust_level.name != "VERIFIED"
    assert any(n == "tlog.entry" and "requires one" in m for n, m in _failed(report)), _failed(report)


def test_a_v01_bundle_with_neither_entry_nor_timestamp_has_no_signing_time(world: World) -> None:
    bundle = _as_v01(world.message())
    del bundle["verificationMaterial"]["timestampVerificationData"]
    report = world.evaluate(bundle)
    assert report.trust_level.name != "VERIFIED"
    assert any(n == "timestamp" for n, _ in _failed(report)), _failed(report)


def _policy(tmp: Path, root: Path, **trust: Any) -> Path:
    doc = {"version": 1, "mode": "enforce", "trust": {
        "signers": [{"identity": IDENTITY, "issuer": ISSUER}], "trustedRoots": [{"path": str(root)}], **trust}}
    path = tmp / "policy.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(("stated", "code"), [(None, 1), (True, 1), (False, 0)])
def test_policy_require_transparency_log_decides_for_a_root_that_lists_a_log(
        world: World, tmp_path: Path, stated: bool | None, code: int) -> None:
    """``trust.requireTransparencyLog: false`` admits timestamp-only bundles with a root that lists a
    log; absent or true, such a root requires the entry."""
    bundle = tmp_path / "b.sigstore.json"
    bundle.write_text(json.dumps(world.message(sct=True)))
    extra = {} if stated is None else {"requireTransparencyLog": stated}
    policy = _policy(tmp_path, world.roots["with-log"], **extra)
    r = cli("verify", str(world.artifact), "--bundle", str(bundle), "--policy", str(policy), "--format", "json",
            "--no-cache")
    assert r.code == code, r.out + r.err
    if code:
        assert any(c["name"] == "tlog.entry" for c in r.json["checks"]), r.json["checks"]


def test_a_layer_requiring_the_log_wins_over_one_that_does_not() -> None:
    from atip_trust.policy.compose import compose
    from atip_trust.policy.constraints import tlog_requirement
    from atip_trust.policy.load import layer_from_document

    def layer(source: Any, value: bool) -> Any:
        return layer_from_document({"version": 1, "trust": {"requireTransparencyLog": value}}, source=source)

    assert tlog_requirement(compose([layer("org", True), layer("local", False)])) is True
    assert tlog_requirement(compose([layer("org", False), layer("local", False)])) is False
    assert tlog_requirement(compose([layer("local", False)])) is False


def test_a_logged_bundle_against_a_root_without_logs_is_that_bundles_failure(world: World) -> None:
    """sigstore-python refuses a root without log instances outright (the old exit 2 for everything);
    a logged bundle checked against GitHub's root fails on its own, and a timestamp-only one beside it
    still verifies."""
    logged = world.ts.sign_artifact(DATA, identity=IDENTITY, issuer=ISSUER)
    paths = []
    for name, bundle in (("logged", logged), ("tsa", world.message())):
        path = world.dir / f"{name}.sigstore.json"
        path.write_text(json.dumps(bundle))
        paths.append(path)
    with Artifact.open(world.artifact) as art:
        report = evaluate(art, Evidence(bundles=tuple(paths)), world.constraints,
                          TrustRoot.from_file(world.roots["tsa-only"]))
    by_label = {a.evidence: a for a in report.attestations}
    assert by_label["tsa.sigstore.json"].vouches
    assert any(c.name == "tlog" and "lists no log" in c.message for c in by_label["logged.sigstore.json"].checks)
