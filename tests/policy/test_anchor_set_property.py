"""The metamorphic property of issue 33: over generated org layers, local layers, flags and evidence,
adding a local layer or a flag to the org's layers

* never adds an anchor of a kind the org states or implies (policy/anchors.py): every signer, root,
  builder, registry and verifier of the composed policy is one the org layers alone grant, and the
  transparency-log requirement the org states or its roots imply is never lifted;
* never raises the trust level an admission reaches under an org that fixes the anchor set (real
  verification: bundles from the local test Sigstore, VSAs signed with real keys, one tool on disk);
* never turns the org's deny into allow, nor its ask into allow when the org sets
  ``permissions.localAllow: false`` (without it the merged answer stands, issue 33 item 8: a local allow
  may answer what the org leaves to ``noMatch: ask``).

Errors count as "not allow" (a flag naming a root the org does not pin is refused: that is narrowing).
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from atip_trust.admission.admit import admit
from atip_trust.admission.options import AdmitOptions
from atip_trust.errors import AtipTrustError
from atip_trust.evaluation.inputs import Evidence
from atip_trust.facts.report import TrustLevel, TrustReport
from atip_trust.policy.anchors import ANCHOR_KINDS
from atip_trust.policy.compose import cli_layer, compose
from atip_trust.policy.decide import decide
from atip_trust.policy.load import layer_from_document
from atip_trust.policy.model import Policy, PolicyLayer

from conftest import examples
from test_vsa_admit import write_vsa
from world import ISSUER, ORG_ID, World

TOOL = b"#!/bin/sh\necho property\n"
OTHER_ID = "https://github.com/attacker/tools/.github/workflows/release.yml@refs/tags/v1.0.0"
VERIFIER = "https://ci.example.com/atip-trust/verify"
RESOURCE = "https://github.com/example-org/tool/releases/download/v1.2.0/tool"
POLICY_DIGEST = "sha256:" + "ab" * 32


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    w = World(tmp_path_factory.mktemp("anchor-property"), seed=94)
    ci, rogue = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ci_pub, rogue_pub = w.public_key("keys/ci.pub", ci), w.public_key("keys/rogue.pub", rogue)
    root_v2 = w.ts.write_trusted_root_v2(w.dir / "root-v2.json")
    d = {"dir": w.dir, "ci": ci, "sha256": hashlib.sha256(TOOL).hexdigest()}
    evidence = {
        "org-bundle": ("bundle", w.file("org.sigstore.json", w.signed(TOOL, identity=ORG_ID))),
        "other-bundle": ("bundle", w.file("other.sigstore.json", w.signed(TOOL, identity=OTHER_ID))),
        "stripped": ("bundle", w.file("tsa.sigstore.json", w.ts.sign_artifact_v2(
            TOOL, identity=ORG_ID, issuer=ISSUER, tlog=False))),
        "ci-vsa": ("vsa", write_vsa(d, "ci")),
        "rogue-vsa": ("vsa", write_vsa(d, "rogue", key=rogue)),
    }
    signers = {"org": {"identity": ORG_ID, "issuer": ISSUER}, "other": {"identity": OTHER_ID, "issuer": ISSUER},
               "any": {"identityRegexp": "https://github\\.com/.*", "issuer": ISSUER}}
    roots = {"production": "production", "test": {"path": str(w.root)}, "test-v2": {"path": str(root_v2)}}
    verifiers = {name: {"id": VERIFIER, "publicKey": str(key), "resourceUris": [RESOURCE], "minLevel": 3,
                        "maxAge": "30d", "policyDigests": [POLICY_DIGEST]}
                 for name, key in (("ci", ci_pub), ("rogue", rogue_pub))}
    return {"tool": w.tool("tool", TOOL), "evidence": evidence, "signers": signers, "roots": roots,
            "verifiers": verifiers, "root_files": {"test": str(w.root), "test-v2": str(root_v2)}}


def _subset(names: list[str]) -> st.SearchStrategy[list[str]]:
    return st.lists(st.sampled_from(names), unique=True, max_size=len(names))


@st.composite
def trust_section(draw: Any) -> dict[str, Any]:
    """Names from the world's pools (resolved in ``_doc``): each kind absent, or a list."""
    out: dict[str, Any] = {}
    # Lists weighted towards what the evidence can satisfy (the test roots, the org's identity), so that
    # many cases reach VERIFIED and there is a level to widen; every list also empty or absent.
    for kind, lists in (("signers", [["org"], ["org", "other"], ["any"], ["other"], []]),
                        ("trustedRoots", [["test"], ["test", "test-v2"], ["test-v2"], ["production", "test"], []]),
                        ("verifiers", [["ci"], ["ci", "rogue"], ["rogue"], []])):
        if draw(st.sampled_from([True, True, False])):
            out[kind] = draw(st.sampled_from(lists))
    tlog = draw(st.sampled_from([None, True, False]))
    if tlog is not None:
        out["requireTransparencyLog"] = tlog
    if draw(st.booleans()):
        out["trustedBuilders"] = {"include": "builtin:trusted-builders"}
    return out


@st.composite
def layer_doc(draw: Any, *, org: bool) -> dict[str, Any]:
    perms: dict[str, Any] = {
        # Rules for the command asked about ("tool status") in a third of the layers each: the rest
        # leave it to noMatch, where a local allow could widen the org's answer.
        "deny": draw(st.sampled_from([[], [], ["tool delete *"], ["tool status"]])),
        "ask": draw(st.sampled_from([[], [], ["tool status"], ["tool *"]])),
        # An org allows the command in a third of its layers (else its answer is noMatch's or a rule's).
        "allow": draw(st.sampled_from([[], [], ["tool status"]]) if org else _subset(["Bash", "tool *", "tool status"])),
    }
    if draw(st.booleans()):  # allow rules that need VERIFIED
        perms["allow"] = perms["allow"] + [{"rule": "tool *", "minTrustLevel": "VERIFIED"}]
    if org and draw(st.booleans()):
        perms["localAllow"] = draw(st.booleans())
    doc: dict[str, Any] = {"version": 1, "trust": draw(trust_section()), "permissions": perms,
                           "defaults": {"noMatch": draw(st.sampled_from(["ask", "deny"]))}}
    level = draw(st.sampled_from([None, "UNVERIFIED", "VERIFIED"]))
    if level is not None:
        doc["requirements"] = {"minTrustLevel": level}
    return doc


@st.composite
def flags(draw: Any) -> dict[str, Any]:
    return {"min_trust_level": draw(st.sampled_from([None, "UNVERIFIED", "VERIFIED"])),
            "signers": draw(st.sampled_from([None, ["org"], ["other"]])),
            "no_match_deny": draw(st.booleans()),
            "trusted_root": draw(st.sampled_from([None, None, "test", "test-v2"]))}


def _doc(world: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    trust = dict(doc["trust"])
    for kind, pool in (("signers", "signers"), ("trustedRoots", "roots"), ("verifiers", "verifiers")):
        if kind in trust:
            trust[kind] = [world[pool][n] for n in trust[kind]]
    return {**doc, "trust": trust}


def _layers(world: dict[str, Any], orgs: list[dict[str, Any]], local: dict[str, Any] | None,
            flag: dict[str, Any] | None) -> list[PolicyLayer]:
    layers = [layer_from_document(_doc(world, o), source="org", path=f"/org-{i}.json") for i, o in enumerate(orgs)]
    if local is not None:
        layers.append(layer_from_document(_doc(world, local), source="local", path="/local.json"))
    if flag is not None:
        signers = [world["signers"][n] for n in flag["signers"]] if flag["signers"] else None
        layers.append(cli_layer(min_trust_level=flag["min_trust_level"], signers=signers,
                                no_match_deny=flag["no_match_deny"]))
    return layers


def _admit(world: dict[str, Any], policy: Policy, evidence: list[str], root_flag: str | None) -> tuple[str, TrustLevel]:
    chosen = [world["evidence"][e] for e in evidence]
    try:
        a = admit(world["tool"], policy=policy, command="status",
                  evidence=Evidence(bundles=[str(p) for k, p in chosen if k == "bundle"],
                                    vsas=[str(p) for k, p in chosen if k == "vsa"]),
                  options=AdmitOptions(trusted_root=world["root_files"].get(root_flag or ""), audit=False,
                                       cache=False, interactive=True, agent_tools=False))
    except AtipTrustError:
        return "error", TrustLevel.COMPROMISED  # refused: neither allowed nor trusted
    return a.behavior, a.report.trust_level


def _assert_narrower(org_only: Policy, composed: Policy) -> None:
    """The anchors of ``composed`` are the org's, or fewer, for every kind the org states or implies."""
    if not org_only.org_fixes_anchors:
        return
    assert composed.org_fixes_anchors
    for got, base in ((composed.signers, org_only.signers), (composed.trusted_roots, org_only.trusted_roots),
                      (composed.registries, org_only.registries), (composed.public_keys, org_only.public_keys)):
        assert all(x in base for x in got), (got, base)
    assert all(any(v.same_as(b) for b in org_only.verifiers) for v in composed.verifiers)
    levels = {b.id: b.level for b in org_only.trusted_builders}
    assert all(b.id in levels and b.level <= levels[b.id] for b in composed.trusted_builders)
    # The log requirement: what the org states, or (None) what its pinned roots imply, is never lifted.
    if org_only.tlog_required is True:
        assert composed.tlog_required is True
    if org_only.tlog_required is None:
        assert composed.tlog_required in (None, True)
    assert set(ANCHOR_KINDS) >= set(composed.org_anchors)


PROPERTY = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@PROPERTY
@given(orgs=st.lists(layer_doc(org=True), min_size=1, max_size=2), local=layer_doc(org=False), flag=flags())
def test_adding_a_local_layer_or_flags_never_adds_an_anchor_the_org_states_or_implies(
        world: dict[str, Any], orgs: list[dict[str, Any]], local: dict[str, Any], flag: dict[str, Any]) -> None:
    org_only = compose(_layers(world, orgs, None, None))
    _assert_narrower(org_only, compose(_layers(world, orgs, local, None)))
    _assert_narrower(org_only, compose(_layers(world, orgs, None, flag)))
    _assert_narrower(org_only, compose(_layers(world, orgs, local, flag)))


@settings(max_examples=examples(400), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(orgs=st.lists(layer_doc(org=True), min_size=1, max_size=2), local=layer_doc(org=False), flag=flags(),
       level=st.sampled_from(list(TrustLevel)))
@example(orgs=[{"version": 1, "trust": {}, "permissions": {"localAllow": False}, "defaults": {"noMatch": "ask"}}],
         local={"version": 1, "trust": {}, "permissions": {"allow": ["Bash"]}, "defaults": {"noMatch": "ask"}},
         flag={"min_trust_level": None, "signers": None, "no_match_deny": False, "trusted_root": None},
         level=TrustLevel.UNSIGNED)
def test_adding_a_local_layer_or_flags_never_turns_the_orgs_deny_or_ask_into_allow(
        world: dict[str, Any], orgs: list[dict[str, Any]], local: dict[str, Any], flag: dict[str, Any],
        level: TrustLevel) -> None:
    """The decision alone (policy/decide.py) over a report at every trust level: many more cases than
    the admissions below can afford."""
    report = TrustReport(path=str(world["tool"]), digests={"sha256": hashlib.sha256(TOOL).hexdigest()},
                         trust_level=level)
    local_allow_off = any(o["permissions"].get("localAllow") is False for o in orgs)
    base = decide(compose(_layers(world, orgs, None, None)), report, tool_name="tool", command="status",
                  interactive=True).behavior
    for with_local, with_flag in ((True, False), (False, True), (True, True)):
        composed = compose(_layers(world, orgs, local if with_local else None, flag if with_flag else None))
        got = decide(composed, report, tool_name="tool", command="status", interactive=True).behavior
        if base == "deny" or (base == "ask" and local_allow_off):
            assert got != "allow", (base, composed.notes)


@PROPERTY
@given(orgs=st.lists(layer_doc(org=True), min_size=1, max_size=2), second=layer_doc(org=True))
def test_a_second_org_layer_never_adds_an_anchor_the_first_states_or_implies(
        world: dict[str, Any], orgs: list[dict[str, Any]], second: dict[str, Any]) -> None:
    """Org layers compose by intersection (a second --org-policy is narrowing only)."""
    _assert_narrower(compose(_layers(world, orgs, None, None)), compose(_layers(world, [*orgs, second], None, None)))


@PROPERTY
@given(orgs=st.lists(layer_doc(org=True), min_size=1, max_size=2), local=layer_doc(org=False), flag=flags(),
       evidence=st.sampled_from([["org-bundle"], ["stripped"], ["ci-vsa"], ["org-bundle", "rogue-vsa"]]) | _subset(
           ["org-bundle", "other-bundle", "stripped", "ci-vsa", "rogue-vsa"]))
def test_adding_a_local_layer_or_flags_never_widens_the_orgs_answer_or_trust(
        world: dict[str, Any], orgs: list[dict[str, Any]], local: dict[str, Any], flag: dict[str, Any],
        evidence: list[str]) -> None:
    org_only = compose(_layers(world, orgs, None, None))
    local_allow_off = any(o["permissions"].get("localAllow") is False for o in orgs)
    for with_local, with_flag in ((True, False), (False, True), (True, True)):
        composed = compose(_layers(world, orgs, local if with_local else None, flag if with_flag else None))
        # A --trusted-root flag only picks among the roots the org pins (else it is refused): the org
        # alone is asked with the same pick, so the comparison is of anchors, not of the pick.
        root_flag = flag["trusted_root"] if with_flag else None
        base_behavior, base_level = _admit(world, org_only, evidence, root_flag)
        behavior, level = _admit(world, composed, evidence, root_flag)
        if base_behavior == "deny" or (base_behavior == "ask" and local_allow_off):
            assert behavior != "allow", (base_behavior, composed.notes)
        if org_only.org_fixes_anchors and behavior != "error" and base_behavior != "error":
            assert level <= base_level, (base_level, level, composed.notes)
