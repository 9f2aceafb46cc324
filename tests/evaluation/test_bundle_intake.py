"""Bundle intake: any JSON value in any bundle field yields a verdict or the project's own error naming
its JSON path, never another exception; a malformed bundle never affects another bundle's evaluation;
the ``mediaType`` is checked against the bundle's shape on every route (signature/bundle.py).

Bundles are minted by the local test Sigstore (fixtures/testsigstore.py), verified for real (sigstore-python
and the project's own verifiers); the property test mutates one field of a good bundle at a time.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from atip_trust.errors import AtipTrustError, BundleError
from atip_trust.evaluation.evaluate import evaluate
from atip_trust.evaluation.inputs import Constraints, Evidence
from atip_trust.facts.artifact import Artifact
from atip_trust.facts.report import EvidenceSummary, TrustReport
from atip_trust.signature.bundle import load_bundles
from atip_trust.signature.identity import IdentityRule
from atip_trust.signature.trustroot import TrustRoot

import testsigstore
from conftest import examples
from world import World as WorldBase

IDENTITY = "https://github.com/atip-test/tool/.github/workflows/release.yml@refs/tags/v1.0.0"
ISSUER = "https://token.actions.githubusercontent.com"
DATA = b"#!/bin/sh\necho intake\n"
V01 = "application/vnd.dev.sigstore.bundle+json;version=0.1"
V03 = "application/vnd.dev.sigstore.bundle.v0.3+json"


class World(WorldBase):
    """One local Sigstore, its root, an artifact, a trusted key and good bundles of every route."""

    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp, seed=24, root=None)
        # With a TSA, and timestamp-only bundles allowed, so that every route is exercised.
        self.root_path = self.ts.write_trusted_root_v2(tmp / "trusted_root.json")
        self.artifact = self.file("tool", DATA)
        key = ec.derive_private_key(24, ec.SECP256R1())
        self.key_path = self.public_key("key.pub", key)
        statement = testsigstore.slsa_v1_statement("tool", hashlib.sha256(DATA).hexdigest())
        self.good: dict[str, dict[str, Any]] = {
            "message": self.ts.sign_artifact(DATA, identity=IDENTITY, issuer=ISSUER),
            "dsse": self.ts.sign_dsse(statement, identity=IDENTITY, issuer=ISSUER),
            "intoto-v0.1": self.ts.sign_dsse(statement, identity=IDENTITY, issuer=ISSUER, entry_kind="intoto",
                                             bundle_version="0.1", inclusion_proof=False),
            "key": self.ts.sign_with_key(DATA, key),
            "key-dsse": self.ts.sign_dsse_with_key(statement, key),
            "timestamp-only": self.ts.sign_artifact_v2(DATA, identity=IDENTITY, issuer=ISSUER, tlog=False),
            "rekor-v2": self.ts.sign_dsse_v2(statement, identity=IDENTITY, issuer=ISSUER),
        }
        self.constraints = Constraints(signers=(IdentityRule(identity=IDENTITY, issuer=ISSUER),),
                                       keys=(self.key_path,))
        self.trust_root = TrustRoot.from_file(self.root_path).with_tlog_requirement(False)

    def write(self, name: str, *docs: Any) -> Path:
        return self.file(name, "\n".join(json.dumps(d) for d in docs) + "\n")

    def evaluate(self, *bundles: Path) -> TrustReport:
        with Artifact.open(self.artifact) as art:
            return evaluate(art, Evidence(bundles=bundles), self.constraints, self.trust_root)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("intake"))


def _refused(path: Path, where: str) -> None:
    """Loading ``path`` raises the project's BundleError, whose diagnostics (path, then message) match."""
    with pytest.raises(BundleError) as info:
        load_bundles(path)
    assert re.search(where, info.value.diagnostics()), info.value.diagnostics()


def _result(report: TrustReport, label: str) -> EvidenceSummary:
    return next(a for a in report.attestations if a.evidence == label)


@pytest.mark.parametrize("name", ["message", "dsse", "intoto-v0.1", "key", "key-dsse", "timestamp-only",
                                  "rekor-v2"])
def test_every_good_bundle_of_the_world_verifies(world: World, name: str) -> None:
    """The baseline the attacks below start from."""
    report = world.evaluate(world.write(f"good-{name}.json", world.good[name]))
    assert report.trust_level.name == "VERIFIED", report.checks
    assert report.attestations[0].vouches


@pytest.mark.parametrize("bad_kind_version", ["hashedrekord/0.0.1", 7, None, ["hashedrekord", "0.0.1"]])
def test_a_kindVersion_that_is_not_an_object_does_not_take_down_the_valid_bundle_beside_it(
        world: World, bad_kind_version: Any) -> None:
    """The old intake raised AttributeError (``kv.get``) and lost every bundle of the evaluation."""
    bad = copy.deepcopy(world.good["message"])
    bad["verificationMaterial"]["tlogEntries"][0]["kindVersion"] = bad_kind_version
    _refused(world.write("bad.json", bad), r"\$\.verificationMaterial\.tlogEntries\[0\]\.kindVersion")
    report = world.evaluate(world.write("bad.json", bad), world.write("good.json", world.good["message"]))
    assert _result(report, "good.json").vouches
    assert not _result(report, "bad.json").valid
    # The same two as lines of one .jsonl: the bad line is that line's failure only.
    report = world.evaluate(world.write("both.jsonl", bad, world.good["dsse"]))
    assert _result(report, "both.jsonl#2").vouches
    failed = _result(report, "both.jsonl#1")
    assert not failed.valid and "tlogEntries[0].kindVersion" in failed.checks[0].message


def test_a_v03_intoto_bundle_relabelled_v01_is_refused(world: World) -> None:
    """sigstore-js v0.3 ``intoto/0.0.2`` bundles carry a single certificate; relabelled v0.1 (which has
    no proof requirement) the old legacy route verified it: the media type was never checked against the
    shape there. Every route now checks it before routing."""
    statement = testsigstore.slsa_v1_statement("tool", hashlib.sha256(DATA).hexdigest())
    v03 = world.ts.sign_dsse(statement, identity=IDENTITY, issuer=ISSUER, entry_kind="intoto",
                             bundle_version="0.3", inclusion_proof=False)
    relabelled = {**v03, "mediaType": V01}
    _refused(world.write("relabelled.json", relabelled), r"\$\.verificationMaterial\.certificate: .*v0\.3 form")
    report = world.evaluate(world.write("relabelled.json", relabelled), world.write("g.json", world.good["dsse"]))
    assert not _result(report, "relabelled.json").valid
    # And the other way: a v0.1 chain relabelled v0.3.
    chain = {**world.good["intoto-v0.1"], "mediaType": V03}
    _refused(world.write("relabelled3.json", chain), r"x509CertificateChain: .*v0\.1/v0\.2 form")


@pytest.mark.parametrize(("mutate", "where"), [
    (lambda d: d.update(dsseEnvelope={"payload": ""}), r"\$: bundle must carry exactly one of"),
    (lambda d: d["verificationMaterial"].update(publicKey={"hint": "x"}), r"exactly one of a certificate"),
    (lambda d: d["verificationMaterial"].update(tlogEntries={"0": 1}), r"tlogEntries: expected a list"),
    (lambda d: d["verificationMaterial"]["tlogEntries"][0].update(inclusionProof="yes"), r"inclusionProof"),
    (lambda d: d["verificationMaterial"].update(timestampVerificationData=[1]), r"timestampVerificationData"),
    (lambda d: d.update(messageSignature="sig"), r"\$\.messageSignature: expected a JSON object"),
])
def test_a_malformed_field_is_a_bundle_error_naming_its_path(world: World, mutate: Any, where: str) -> None:
    bad = copy.deepcopy(world.good["message"])
    mutate(bad)
    _refused(world.write("bad.json", bad), where)


def test_a_5000_digit_integer_in_a_bundle_is_the_projects_error(world: World) -> None:
    """Python refuses to convert 4,300+ digits with a bare ValueError."""
    text = json.dumps(world.good["message"]).replace('"logIndex": "', '"logIndex": ' + "9" * 5000 + ', "x": "', 1)
    path = world.dir / "big.json"
    path.write_text(text)
    _refused(path, "big.json")


# -- the property: any JSON value in any field -------------------------------------------------------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20)
    | st.sampled_from(["", "AAAA", "hashedrekord", "0.0.1", V01, V03, "SHA2_256", "-1", "99999999999999999999"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every field and list item of a JSON document, as key paths (the root excluded)."""
    out: list[tuple[Any, ...]] = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        out.append((*prefix, k))
        out.extend(_paths(v, (*prefix, k)))
    return out


def _replace(doc: Any, path: tuple[Any, ...], value: Any, drop: bool) -> Any:
    doc = copy.deepcopy(doc)
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    if drop:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return doc


@st.composite
def _mutant(draw: st.DrawFn, good: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    name = draw(st.sampled_from(sorted(good)))
    path = draw(st.sampled_from(_paths(good[name])))
    drop = draw(st.booleans()) and draw(st.booleans())  # a quarter of the time: the field is removed
    return name, _replace(good[name], path, draw(_JSON), drop)


def test_any_json_value_in_any_bundle_field_yields_a_verdict_or_the_projects_error(world: World) -> None:
    """Hypothesis replaces (or removes) one field anywhere in a good bundle of each route with any JSON
    value. Alone, the bundle yields a report or an ``AtipTrustError``; as line 1 of a ``.jsonl`` whose
    line 2 is a good bundle, the good bundle still verifies and nothing is raised."""
    companion = world.good["message"]
    seen: list[str] = []

    @settings(max_examples=examples(300), deadline=None, suppress_health_check=list(HealthCheck),
              derandomize=True)
    @given(_mutant(world.good))
    def run(mutant: tuple[str, dict[str, Any]]) -> None:
        seen.append(mutant[0])
        _, doc = mutant
        alone = world.write("mutant.json", doc)
        try:
            world.evaluate(alone)
        except AtipTrustError:
            pass
        report = world.evaluate(world.write("pair.jsonl", doc, companion))
        assert _result(report, "pair.jsonl#2").vouches, _result(report, "pair.jsonl#2").checks

    run()
    assert len(seen) >= examples(300) * 5 // 6 and set(seen) == set(world.good), (len(seen), set(seen))


def test_a_malformed_attestation_in_a_github_api_answer_is_that_attestations_failure_only(world: World) -> None:
    """``{"attestations": [{"bundle": ...}, ...]}`` (GitHub's attestations API, gh's input): each is a
    bundle of its own."""
    bad = copy.deepcopy(world.good["dsse"])
    bad["verificationMaterial"]["tlogEntries"][0]["kindVersion"] = "dsse/0.0.1"
    answer = {"attestations": [{"bundle": bad}, {"bundle": world.good["dsse"]}]}
    report = world.evaluate(world.write("answer.json", answer))
    assert _result(report, "answer.json#attestations[1]").vouches
    failed = _result(report, "answer.json#attestations[0]")
    assert not failed.valid and "kindVersion" in failed.checks[0].message
    _refused(world.write("all-bad.json", {"attestations": [{"bundle": bad}]}), r"kindVersion")
