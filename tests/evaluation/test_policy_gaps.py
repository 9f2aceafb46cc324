"""Policy promises that reach verification itself (issue 5, follow-up):

* public keys given by digest: a ``--key`` is a trust anchor only when policy lists its digest;
* several allowed source repositories reach the provenance check;
* ``admit`` writes an audit line when it cannot evaluate (exit 2);
* the standard org-policy path and ``ATIP_TRUST_ORG_POLICY``;
* ``verify --policy`` decides with ``Policy.decide``;
* shipped policies include the builder map instead of repeating it.

Real files, real keys, real bundles from the local test Sigstore, the CLI as users call it.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization

from atip_trust.policy.decide import decide

import testsigstore
from verify_helpers import cli, cli_subprocess
from world import ISSUER, World

ROOT = Path(__file__).resolve().parents[2]
KEYS = ROOT / "fixtures" / "keys"
POLICIES = ROOT / "policies"
ID = "https://github.com/example-org/tools/.github/workflows/release.yml@refs/tags/v1.0.0"
ALLOW_ALL = {"permissions": {"allow": ["Bash"]}}


def _dump(path: Path, obj: Any) -> Path:
    path.write_text(json.dumps(obj, indent=2))
    return path


def spki_digest(pem_path: Path) -> str:
    """sha256 of the DER SubjectPublicKeyInfo, computed here independently of atip_trust.keys."""
    key = serialization.load_pem_public_key(pem_path.read_bytes())
    der = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return "sha256:" + hashlib.sha256(der).hexdigest()


@pytest.fixture(scope="module")
def ts() -> testsigstore.TestSigstore:
    return testsigstore.TestSigstore(seed=55)


@pytest.fixture(scope="module")
def world(ts: testsigstore.TestSigstore, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    w = World(tmp_path_factory.mktemp("gaps"), ts=ts)
    tool = w.tool("tool", b"#!/bin/sh\necho tool\n")
    priv = ts.new_signing_key()
    pub = w.public_key("signer.pub", priv)
    key_bundle = _dump(w.dir / "tool.key.sigstore.json", ts.sign_with_key(tool.read_bytes(), priv))
    return {"dir": w.dir, "root": w.root, "tool": tool, "pub": pub, "key_bundle": key_bundle,
            "other_pub": w.public_key("other.pub", ts.new_signing_key())}


def key_policy(d: Path, name: str, keys: list[dict[str, str]] | None, **extra: Any) -> Path:
    trust: dict[str, Any] = {"trustedRoots": [{"path": "trusted_root.json"}]}
    if keys is not None:
        trust["publicKeys"] = keys
    return _dump(d / f"{name}.json", {"version": 1, "trust": trust, **ALLOW_ALL, **extra})


# -- 1. public keys by digest --------------------------------------------------------------------


def test_detached_signature_with_a_key_whose_digest_policy_lists_is_verified(world) -> None:
    p = key_policy(world["dir"], "p256-listed", [{"digest": spki_digest(KEYS / "p256.pub")}])
    r = cli("verify", str(KEYS / "artifact.txt"), "--key", str(KEYS / "p256.pub"),
            "--signature", str(KEYS / "artifact.txt.p256.sig"), "--policy", str(p), "--format", "json")
    assert r.code == 0, r.out + r.err
    assert r.json["trust_level"] == "VERIFIED"


def test_key_not_listed_by_digest_is_not_a_trust_anchor(world) -> None:
    listed = spki_digest(KEYS / "p384.pub")
    p = key_policy(world["dir"], "p384-only", [{"digest": listed}])
    r = cli("verify", str(KEYS / "artifact.txt"), "--key", str(KEYS / "p256.pub"),
            "--signature", str(KEYS / "artifact.txt.p256.sig"), "--policy", str(p))
    assert r.code == 2, r.out + r.err
    assert "not a trust anchor" in r.err
    assert listed in r.err and spki_digest(KEYS / "p256.pub") in r.err  # expected and actual


def test_empty_public_key_list_trusts_no_key(world) -> None:
    p = key_policy(world["dir"], "no-keys", [])
    r = cli("verify", str(KEYS / "artifact.txt"), "--key", str(KEYS / "p256.pub"),
            "--signature", str(KEYS / "artifact.txt.p256.sig"), "--policy", str(p))
    assert r.code == 2 and "no key (empty list)" in r.err


def test_without_public_keys_in_policy_the_flag_key_is_the_callers_anchor(world) -> None:
    p = key_policy(world["dir"], "keys-unstated", None)
    r = cli("verify", str(KEYS / "artifact.txt"), "--key", str(KEYS / "p256.pub"),
            "--signature", str(KEYS / "artifact.txt.p256.sig"), "--policy", str(p), "--format", "json")
    assert r.code == 0, r.out + r.err


def test_public_key_bundle_verified_only_with_a_listed_key(world) -> None:
    ok = key_policy(world["dir"], "bundle-key-listed", [{"digest": spki_digest(world["pub"]),
                                                          "name": "release key"}])
    r = cli("admit", str(world["tool"]), "--policy", str(ok), "--key", str(world["pub"]),
            "--bundle", str(world["key_bundle"]), "--non-interactive", "--no-audit", "--format", "json")
    assert r.code == 0, r.out + r.err
    assert r.json["trust_level"] == "VERIFIED"
    bad = key_policy(world["dir"], "bundle-key-other", [{"digest": spki_digest(world["other_pub"])}])
    r = cli("admit", str(world["tool"]), "--policy", str(bad), "--key", str(world["pub"]),
            "--bundle", str(world["key_bundle"]), "--non-interactive", "--no-audit")
    assert r.code == 2, r.out + r.err
    assert spki_digest(world["other_pub"]) in r.err and spki_digest(world["pub"]) in r.err


def test_path_entry_with_a_wrong_pinned_digest_is_refused(world) -> None:
    p = key_policy(world["dir"], "pinned-wrong", [{"path": str(KEYS / "p256.pub"),
                                                   "digest": spki_digest(KEYS / "p384.pub")}])
    r = cli("verify", str(KEYS / "artifact.txt"), "--signature", str(KEYS / "artifact.txt.p256.sig"),
            "--key", str(KEYS / "p256.pub"), "--policy", str(p))
    assert r.code == 2
    assert spki_digest(KEYS / "p384.pub") in r.err and spki_digest(KEYS / "p256.pub") in r.err


def test_local_key_list_narrows_the_org_list_never_widens_it(world, tmp_path: Path) -> None:
    from atip_trust.errors import UsageError
    from atip_trust.policy.compose import compose
    from atip_trust.policy.constraints import trusted_keys
    from atip_trust.policy.load import load_layer

    org = key_policy(tmp_path, "org", [{"digest": spki_digest(KEYS / "p256.pub")}])
    org.chmod(0o600)
    local = key_policy(tmp_path, "local", [{"digest": spki_digest(KEYS / "p384.pub")}])
    policy = compose([load_layer(org, source="org"), load_layer(local, source="local")])
    for key in ("p256.pub", "p384.pub"):  # each is listed in one layer only
        with pytest.raises(UsageError, match="not a trust anchor"):
            trusted_keys(policy, (KEYS / key,))


# -- 2. several allowed source repositories reach verification -------------------------------------

REPO_A = "https://github.com/example-org/tool-a"
REPO_B = "https://github.com/example-org/tool-b"
REPO_C = "https://github.com/evil/tool-c"


@pytest.fixture(scope="module")
def prov(ts: testsigstore.TestSigstore, world: dict[str, Any]) -> dict[str, Any]:
    d = world["dir"]
    data = world["tool"].read_bytes()
    hexd = hashlib.sha256(data).hexdigest()
    bundles = {}
    for name, repo, ref in (("a", REPO_A, "refs/tags/v1.2.0"), ("b", REPO_B, "refs/heads/main"),
                            ("c", REPO_C, "refs/tags/v1.2.0"), ("a-branch", REPO_A, "refs/heads/dev")):
        stmt = testsigstore.slsa_v1_statement("tool", hexd, repository=repo, ref=ref)
        bundles[name] = _dump(d / f"prov-{name}.sigstore.json", ts.sign_dsse(stmt, identity=ID, issuer=ISSUER))
    sources = [{"repository": REPO_A, "refs": ["refs/tags/v*"]},
               {"repository": REPO_B + ".git", "refs": ["refs/heads/main"]}]
    return {"bundles": bundles, "policy": source_policy(d, "two-sources", sources)}


def source_policy(d: Path, name: str, sources: list[dict[str, Any]]) -> Path:
    return _dump(d / f"{name}.json", {
        "version": 1,
        "trust": {"trustedRoots": [{"path": "trusted_root.json"}],
                  "signers": [{"identity": ID, "issuer": ISSUER}], "sources": sources},
        **ALLOW_ALL,
    })


def verify_json(world: dict[str, Any], bundle: Path, policy: Path) -> Any:
    return cli("verify", str(world["tool"]), "--bundle", str(bundle), "--policy", str(policy),
               "--format", "json")


@pytest.mark.parametrize("which", ["a", "b"])
def test_provenance_from_either_allowed_repository_verifies(world, prov, which: str) -> None:
    r = verify_json(world, prov["bundles"][which], prov["policy"])
    assert r.code == 0, r.out + r.err
    out = r.json
    assert out["trust_level"] == "VERIFIED"
    assert [c["status"] for c in out["checks"] if c["name"] == "source"] == ["pass"]


def test_provenance_from_a_third_repository_is_provenance_fail_naming_allowed_and_actual(world, prov) -> None:
    r = verify_json(world, prov["bundles"]["c"], prov["policy"])
    assert r.code == 1, r.out + r.err
    out = r.json
    assert out["trust_level"] == "PROVENANCE_FAIL"
    (check,) = [c for c in out["checks"] if c["name"] == "source"]
    assert check["status"] == "fail"
    assert check["expected"] == [f"{REPO_A} refs refs/tags/v*", f"{REPO_B} refs refs/heads/main"]
    assert check["actual"] == f"{REPO_C} refs/tags/v1.2.0"


def test_allowed_repository_at_a_ref_policy_does_not_allow_fails(world, prov) -> None:
    r = verify_json(world, prov["bundles"]["a-branch"], prov["policy"])
    assert r.code == 1
    assert r.json["trust_level"] == "PROVENANCE_FAIL"


def test_empty_source_list_allows_no_source(world, prov) -> None:
    p = source_policy(world["dir"], "no-sources", [])
    r = verify_json(world, prov["bundles"]["a"], p)
    assert r.code == 1
    assert r.json["trust_level"] == "PROVENANCE_FAIL"


# -- 3. admit audits a decision it could not evaluate (exit 2) ------------------------------------


def _lines(log: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []


def test_malformed_metadata_exit_2_still_writes_a_deny_line(world, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_gapsecret")
    log = tmp_path / "audit.jsonl"
    bad = tmp_path / "bad-meta.json"
    bad.write_text('{"atip": {"version": "0.6"}, "name": ')
    p = key_policy(world["dir"], "audit-policy", None)
    r = cli("admit", str(world["tool"]), "--command", "run it", "--policy", str(p),
            "--metadata", str(bad), "--non-interactive", "--audit-log", str(log))
    assert r.code == 2, r.out + r.err
    (rec,) = _lines(log)
    assert rec["decision"] == "deny" and rec["tool"] == "tool" and rec["command"] == ["run", "it"]
    assert rec["error"]["code"] == "MALFORMED_INPUT" and rec["reasons"][0]["code"] == "MALFORMED_INPUT"
    assert rec["digest"] == "sha256:" + hashlib.sha256(world["tool"].read_bytes()).hexdigest()
    assert rec["policy_digest"].startswith("sha256:") and rec["trust_level"] is None
    assert "ghp_gapsecret" not in log.read_text()


def test_unreadable_bundle_exit_2_writes_a_deny_line(world, tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    p = key_policy(world["dir"], "audit-policy", None)
    r = cli("admit", str(world["tool"]), "--policy", str(p), "--key", str(world["pub"]),
            "--bundle", str(tmp_path / "missing.sigstore.json"), "--non-interactive", "--audit-log", str(log))
    assert r.code == 2
    (rec,) = _lines(log)
    assert rec["decision"] == "deny" and rec["error"]["code"] == "ENVIRONMENT_ERROR"
    assert "missing.sigstore.json" in rec["error"]["message"]


def test_missing_trust_root_after_policy_loaded_writes_a_deny_line(world, tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    p = _dump(tmp_path / "p.json", {"version": 1, "trust": {"trustedRoots": [{"path": "nope.json"}]}})
    r = cli("admit", str(world["tool"]), "--policy", str(p), "--non-interactive", "--audit-log", str(log))
    assert r.code == 2
    (rec,) = _lines(log)
    assert rec["decision"] == "deny" and rec["policy_digest"].startswith("sha256:")
    assert rec["error"]["code"] == "ENVIRONMENT_ERROR" and rec["digest"] is None


def test_unloadable_policy_is_audited_to_the_explicit_or_the_default_log(world, tmp_path: Path) -> None:
    bad = _dump(tmp_path / "bad.json", {"version": 1, "surprise": True})
    log = tmp_path / "audit.jsonl"
    r = cli("admit", str(world["tool"]), "--policy", str(bad), "--non-interactive", "--audit-log", str(log))
    assert r.code == 2
    (rec,) = _lines(log)
    assert rec["decision"] == "deny" and rec["policy_digest"] is None and "surprise" in rec["error"]["message"]
    # Without --audit-log, the default log in the state directory gets the line: breaking the policy
    # must not make admissions leave no trace.
    state = tmp_path / "state"
    env = {**os.environ, "XDG_STATE_HOME": str(state), "HOME": str(tmp_path)}
    r = cli("admit", str(world["tool"]), "--policy", str(bad), "--non-interactive", env=env)
    assert r.code == 2
    (default_log,) = list(state.rglob("audit.jsonl"))
    (rec,) = _lines(default_log)
    assert rec["decision"] == "deny" and rec["policy_digest"] is None and "surprise" in rec["error"]["message"]
    # After the policy loaded, a failure goes to the default log too.
    good = key_policy(world["dir"], "audit-policy", None)
    r = cli("admit", str(tmp_path / "no-such-tool"), "--policy", str(good), "--non-interactive", env=env)
    assert r.code == 2
    rec = _lines(default_log)[-1]
    assert rec["decision"] == "deny" and rec["tool"] == "no-such-tool"


def test_no_audit_flag_writes_nothing_on_errors_either(world, tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    p = key_policy(world["dir"], "audit-policy", None)
    r = cli("admit", str(tmp_path / "gone"), "--policy", str(p), "--no-audit", "--audit-log", str(log))
    assert r.code == 2 and not log.exists()


# -- 4. the standard org-policy path and ATIP_TRUST_ORG_POLICY -------------------------------------


def test_standard_org_policy_paths_are_the_documented_ones(monkeypatch) -> None:
    import sys

    from atip_trust.policy import load

    monkeypatch.setattr(sys, "platform", "linux")
    assert load.standard_org_policy_path() == "/etc/atip-trust/org-policy.json"
    monkeypatch.setattr(sys, "platform", "darwin")
    assert load.standard_org_policy_path() == "/Library/Application Support/atip-trust/org-policy.json"
    r = cli("admit", "--help")
    text = " ".join(r.out.split())
    assert "/etc/atip-trust/org-policy.json" in text
    assert "/Library/Application Support/atip-trust/ org-policy.json" in text or \
        "/Library/Application Support/atip-trust/org-policy.json" in text
    assert "ATIP_TRUST_ORG_POLICY" in text


@pytest.fixture
def loose(world: dict[str, Any]) -> Path:
    return _dump(world["dir"] / "loose.json", {"version": 1, **ALLOW_ALL})


def deny_tool_org(tmp_path: Path, name: str = "org-deny.json", **extra: Any) -> Path:
    p = _dump(tmp_path / name, {"version": 1, "tools": {"deny": [{"name": "tool"}]}, **extra})
    p.chmod(0o644)
    return p


def test_standard_org_policy_is_applied_when_present_and_nothing_changes_when_absent(
        world, loose, tmp_path: Path, monkeypatch) -> None:
    from atip_trust.policy import load

    monkeypatch.delenv("ATIP_TRUST_ORG_POLICY", raising=False)
    monkeypatch.setattr(load, "standard_org_policy_path", lambda: tmp_path / "absent" / "org-policy.json")
    r = cli("admit", str(world["tool"]), "--policy", str(loose), "--no-audit", "--format", "json")
    assert r.code == 0, r.out + r.err
    org = deny_tool_org(tmp_path)
    monkeypatch.setattr(load, "standard_org_policy_path", lambda: org)
    r = cli("admit", str(world["tool"]), "--policy", str(loose), "--no-audit", "--format", "json")
    assert r.code == 1, r.out + r.err
    assert r.json["decision"]["reasons"][0]["code"] == "TOOL_DENIED"
    assert r.json["decision"]["rule_source"] == "org"


def test_group_writable_standard_org_policy_is_refused(world, loose, tmp_path: Path, monkeypatch) -> None:
    from atip_trust.policy import load

    org = deny_tool_org(tmp_path)
    org.chmod(0o664)
    monkeypatch.setattr(load, "standard_org_policy_path", lambda: org)
    r = cli("admit", str(world["tool"]), "--policy", str(loose), "--no-audit")
    assert r.code == 2 and "writable by group or others" in r.err


def test_extra_org_policy_never_disables_the_standard_one(world, loose, tmp_path: Path, monkeypatch) -> None:
    from atip_trust.policy import load

    org = deny_tool_org(tmp_path)
    monkeypatch.setattr(load, "standard_org_policy_path", lambda: org)
    # An extra org layer that tries to loosen everything: audit mode, a waiver, allow all.
    extra = _dump(tmp_path / "extra.json", {
        "version": 1, "mode": "audit", **ALLOW_ALL,
        "waivers": [{"tool": "tool", "reason": "please", "expires": "2999-01-01T00:00:00Z"}]})
    extra.chmod(0o644)
    monkeypatch.setenv("ATIP_TRUST_ORG_POLICY", str(extra))
    for more in ([], ["--org-policy", str(extra)]):
        r = cli("admit", str(world["tool"]), "--policy", str(loose), "--no-audit", "--format", "json", *more)
        assert r.code == 1, r.out + r.err
        assert r.json["decision"]["behavior"] == "deny" and r.json["decision"]["mode"] == "enforce"


def test_org_policy_from_the_environment_in_a_subprocess(world, loose, tmp_path: Path) -> None:
    org = deny_tool_org(tmp_path)
    env = {**os.environ, "ATIP_TRUST_ORG_POLICY": str(org)}
    r = cli_subprocess("admit", str(world["tool"]), "--policy", str(loose), "--no-audit", "--format", "json",
                       env=env)
    assert r.code == 1, r.out + r.err
    assert r.json["decision"]["reasons"][0]["code"] == "TOOL_DENIED"
    env["ATIP_TRUST_ORG_POLICY"] = str(tmp_path / "missing.json")
    r = cli_subprocess("admit", str(world["tool"]), "--policy", str(loose), "--no-audit", env=env)
    assert r.code == 2 and "org policy not found" in r.err


def _org_layer(doc: dict[str, Any]) -> Any:
    from atip_trust.policy.load import layer_from_document

    return layer_from_document({"version": 1, **doc}, source="org")


def test_a_second_org_layers_waiver_does_not_lift_the_first_org_layers_requirement() -> None:
    from atip_trust.facts.report import TrustLevel, TrustReport
    from atip_trust.policy.compose import compose

    strict = _org_layer({"requirements": {"minTrustLevel": "VERIFIED"}, **ALLOW_ALL})
    waiving = _org_layer({**ALLOW_ALL, "waivers": [{"tool": "tool", "reason": "r",
                                                    "expires": "2999-01-01T00:00:00Z"}]})
    rep = TrustReport(path="/x/tool", digests={"sha256": "ab" * 32}, size=1, trust_level=TrustLevel.UNSIGNED)
    for layers in ([strict, waiving], [waiving, strict]):
        d = decide(compose(layers), rep, tool_name="tool", interactive=False)
        assert d.behavior == "deny", d.reasons
        assert d.reasons[0].code == "LAYER_DENIES"


def test_several_org_builder_maps_keep_only_common_builders_at_the_lowest_level() -> None:
    from atip_trust.policy.compose import compose

    a = _org_layer({"trust": {"trustedBuilders": [{"id": "https://b.example/one", "level": 3},
                                                  {"id": "https://b.example/two", "level": 2}]}})
    b = _org_layer({"trust": {"trustedBuilders": [{"id": "https://b.example/one", "level": 1}]}})
    p = compose([a, b])
    assert [(x.id, x.level) for x in p.trusted_builders] == [("https://b.example/one", 1)]


# -- 5. verify --policy decides with Policy.decide -------------------------------------------------


@pytest.fixture(scope="module")
def signed(ts: testsigstore.TestSigstore, world: dict[str, Any]) -> Path:
    return _dump(world["dir"] / "tool.sigstore.json", ts.sign_artifact(world["tool"].read_bytes(),
                                                                     identity=ID, issuer=ISSUER))


def verify_policy(world: dict[str, Any], name: str, signed: Path | None, **doc: Any) -> Any:
    trust = {"trustedRoots": [{"path": "trusted_root.json"}], "signers": [{"identity": ID, "issuer": ISSUER}]}
    p = _dump(world["dir"] / f"{name}.json", {"version": 1, "trust": trust, **doc})
    bundle = ["--bundle", str(signed)] if signed is not None else []
    return cli("verify", str(world["tool"]), *bundle, "--policy", str(p), "--format", "json")


def tool_digest(world: dict[str, Any]) -> str:
    return "sha256:" + hashlib.sha256(world["tool"].read_bytes()).hexdigest()


def test_verified_artifact_allowed_by_a_rule_exits_0(world, signed) -> None:
    r = verify_policy(world, "v-allow", signed, **ALLOW_ALL)
    assert r.code == 0, r.out + r.err
    assert r.json["decision"]["behavior"] == "allow"
    assert r.json["decision"]["policy_digest"].startswith("sha256:")


@pytest.mark.parametrize("no_match", ["ask", "deny"])
def test_verify_is_not_decided_by_command_rules_or_the_no_match_default(world, signed, no_match: str) -> None:
    """Command rules say which invocations may run (admit/exec); verify asks whether the bytes are trusted."""
    r = verify_policy(world, f"v-nomatch-{no_match}", signed, defaults={"noMatch": no_match},
                      permissions={"deny": ["Bash(tool --delete *)"]})
    assert r.json["trust_level"] == "VERIFIED"
    assert r.code == 0, r.out + r.err  # never 3: verify is not interactive
    assert r.json["decision"]["reasons"][0]["code"] == "TRUST_REQUIREMENTS_MET"


def test_verify_under_a_policy_without_a_minimum_still_requires_verified(world) -> None:
    r = verify_policy(world, "v-no-minimum", None)
    assert r.json["trust_level"] == "UNSIGNED"
    assert r.code == 1
    reason = r.json["decision"]["reasons"][0]
    assert (reason["code"], reason["expected"], reason["actual"]) == ("TRUST_NOT_VERIFIED", "VERIFIED", "UNSIGNED")


def test_verify_applies_a_tool_name_deny_rule(world, signed) -> None:
    r = verify_policy(world, "v-deny-name", signed, tools={"deny": [{"name": world["tool"].name}]})
    assert r.json["trust_level"] == "VERIFIED"
    assert r.code == 1
    assert r.json["decision"]["reasons"][0]["code"] == "TOOL_DENIED"


def test_verify_applies_a_digest_deny_rule_to_verified_bytes(world, signed) -> None:
    r = verify_policy(world, "v-deny-digest", signed, tools={"deny": [{"digest": tool_digest(world)}]},
                      **ALLOW_ALL)
    assert r.json["trust_level"] == "VERIFIED"
    assert r.code == 1
    assert r.json["decision"]["reasons"][0]["code"] == "TOOL_DENIED_DIGEST"


def test_verify_applies_requirements_and_waivers(world, signed) -> None:
    req = {"requirements": {"provenanceRequired": True}, **ALLOW_ALL}
    r = verify_policy(world, "v-prov", signed, **req)
    assert r.code == 1
    live = [{"digest": tool_digest(world), "reason": "migrating", "expires": "2999-01-01T00:00:00Z"}]
    r = verify_policy(world, "v-prov-waived", signed, waivers=live, **req)
    assert r.code == 0, r.out + r.err
    assert "WAIVED" in [x["code"] for x in r.json["decision"]["reasons"]]
    expired = [{**live[0], "expires": "2001-01-01T00:00:00Z"}]
    r = verify_policy(world, "v-prov-expired", signed, waivers=expired, **req)
    assert r.code == 1
    assert "WAIVER_EXPIRED" in [x["code"] for x in r.json["decision"]["reasons"]]


def test_verify_warn_mode_allows_and_reports_what_enforce_would_do(world) -> None:
    r = verify_policy(world, "v-warn", None, mode="warn", requirements={"minTrustLevel": "VERIFIED"},
                      **ALLOW_ALL)
    assert r.json["trust_level"] == "UNSIGNED"
    assert r.code == 0, r.out + r.err
    assert r.json["decision"]["reasons"][0]["code"] == "MODE_WARN"


def test_verify_min_trust_level_comes_from_policy(world) -> None:
    # A minimum below VERIFIED governs admit; verify's bar stays VERIFIED (decide.py (5v)).
    r = verify_policy(world, "v-min-unsigned", None, requirements={"minTrustLevel": "UNSIGNED"}, **ALLOW_ALL)
    assert r.code == 1, r.out + r.err
    reason = r.json["decision"]["reasons"][0]
    assert (reason["code"], reason["expected"], reason["actual"]) == ("TRUST_NOT_VERIFIED", "VERIFIED", "UNSIGNED")
    r = verify_policy(world, "v-min-verified", None, requirements={"minTrustLevel": "VERIFIED"}, **ALLOW_ALL)
    assert r.code == 1
    assert r.json["decision"]["reasons"][0]["code"] == "TRUST_BELOW_MINIMUM"


def test_verify_without_policy_still_allows_only_verified(world) -> None:
    r = cli("verify", str(world["tool"]), "--format", "json")
    assert r.code == 1 and r.json["decision"]["behavior"] == "deny"


def test_verify_policy_composes_the_standard_org_policy(world, signed, tmp_path: Path, monkeypatch) -> None:
    from atip_trust.policy import load

    monkeypatch.delenv("ATIP_TRUST_ORG_POLICY", raising=False)
    org = deny_tool_org(tmp_path)
    monkeypatch.setattr(load, "standard_org_policy_path", lambda: org)
    r = verify_policy(world, "v-under-org", signed, **ALLOW_ALL)
    assert r.code == 1, r.out + r.err
    assert r.json["decision"]["reasons"][0]["code"] == "TOOL_DENIED"
    assert r.json["decision"]["rule_source"] == "org"
    monkeypatch.setattr(load, "standard_org_policy_path", lambda: tmp_path / "none.json")
    env = {**os.environ, "ATIP_TRUST_ORG_POLICY": str(org)}
    p = world["dir"] / "v-under-org.json"
    r = cli("verify", str(world["tool"]), "--bundle", str(signed), "--policy", str(p), env=env)
    assert r.code == 1, r.out + r.err


# -- 6. shipped policies include the builder map instead of repeating it --------------------------


def _shipped_map() -> list[tuple[str, int]]:
    doc = json.loads((POLICIES / "trusted-builders.json").read_text())
    return [(b["id"], b["level"]) for b in doc["builders"]]


@pytest.mark.parametrize("name", ["default.json", "ci.json"])
def test_shipped_policies_take_the_whole_builder_map_without_repeating_it(name: str) -> None:
    from atip_trust.policy.compose import load_policy

    text = (POLICIES / name).read_text()
    assert "slsa-github-generator" not in text and '"level"' not in text
    p = load_policy(POLICIES / name)
    assert [(b.id, b.level) for b in p.trusted_builders] == _shipped_map()
    assert all(b.origin == "builtin:trusted-builders" for b in p.trusted_builders)


def test_enterprise_strict_narrows_the_builder_map_by_id_without_restating_levels() -> None:
    from atip_trust.policy.compose import load_policy

    assert '"level"' not in (POLICIES / "enterprise-strict.json").read_text()
    got = [(b.id, b.level) for b in load_policy(POLICIES / "enterprise-strict.json").trusted_builders]
    shipped = dict(_shipped_map())
    assert got and all(shipped[i] == lvl for i, lvl in got)
    assert {i for i, _ in got} == {
        "https://github.com/slsa-framework/slsa-github-generator/.github/workflows/generator_generic_slsa3.yml@refs/tags/v*",
        "https://github.com/actions/runner/github-hosted"}


def test_policy_explain_lists_included_builders_with_levels_and_sources() -> None:
    r = cli("policy", "explain", str(POLICIES / "default.json"))
    assert r.code == 0, r.err
    line = next(x for x in r.out.splitlines() if "generator_generic_slsa3.yml" in x)
    assert "level 3" in line and "https://github.com/slsa-framework/slsa-github-generator" in line
    assert "builtin:trusted-builders" in line


@pytest.mark.parametrize("builders, path", [
    ({"include": "builtin:trusted-builders", "surprise": 1}, "$.trust.trustedBuilders"),
    ({"include": "builtin:other-map"}, "$.trust.trustedBuilders.include"),
    ({"only": ["https://github.com/actions/runner/github-hosted"]}, "$.trust.trustedBuilders"),
    ({"include": "builtin:trusted-builders", "only": ["https://github.com/evil/builder"]},
     "$.trust.trustedBuilders.only[0]"),
    ({"include": "builtin:trusted-builders", "add": [{"id": "https://b.example/x", "level": 4}]},
     "$.trust.trustedBuilders.add[0].level"),
])
def test_malformed_builder_include_is_exit_2_naming_the_path(tmp_path: Path, builders: Any, path: str) -> None:
    p = _dump(tmp_path / "p.json", {"version": 1, "trust": {"trustedBuilders": builders}})
    r = cli("policy", "check", str(p), "--format", "json")
    assert r.code == 2, r.out
    assert r.json["error"]["path"] == path


def test_builder_include_with_additions(tmp_path: Path) -> None:
    from atip_trust.policy.compose import load_policy

    p = _dump(tmp_path / "p.json", {"version": 1, "trust": {"trustedBuilders": {
        "include": "builtin:trusted-builders", "add": [{"id": "https://ci.example/builder", "level": 1}]}}})
    got = [(b.id, b.level) for b in load_policy(p).trusted_builders]
    assert got == _shipped_map() + [("https://ci.example/builder", 1)]


def test_included_builder_map_is_part_of_the_policy_digest(monkeypatch) -> None:
    from atip_trust.policy import load
    from atip_trust.policy.compose import load_policy
    from atip_trust.policy.model import BuilderRule

    before = load_policy(POLICIES / "default.json").digest
    monkeypatch.setattr(load, "builtin_builders",
                        lambda: (BuilderRule(id="https://github.com/actions/runner/github-hosted", level=3),))
    assert load_policy(POLICIES / "default.json").digest != before


def test_shipped_files_are_found_in_an_installed_layout_without_the_checkout(tmp_path: Path) -> None:
    """The wheel layout (pyproject package-dir): atip_trust/_policies and atip_trust/_schema, no checkout."""
    import shutil
    import subprocess
    import sys

    root = POLICIES.parent
    site = tmp_path / "site"
    shutil.copytree(root / "atip_trust", site / "atip_trust", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(POLICIES, site / "atip_trust" / "_policies")
    shutil.copytree(root / "schema", site / "atip_trust" / "_schema")
    probe = (
        "import atip_trust, json\n"
        "from atip_trust._base.shipped import shipped_file\n"
        "from atip_trust import load_policy\n"
        "from atip_trust.policy.load import default_policy_path\n"
        "from atip_trust.provenance.slsa import BuilderMap\n"
        "from atip_trust.facts.metadata import load_metadata\n"
        "p = load_policy(default_policy_path())\n"
        "print(json.dumps({'pkg': atip_trust.__file__, 'default': str(default_policy_path()),\n"
        "  'schema': str(shipped_file('schema', 'policy.schema.json')),\n"
        "  'builders': [[b.id, b.level] for b in p.trusted_builders],\n"
        "  'map': len(BuilderMap.default().entries)}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path,
                          env=env, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    pkg = site / "atip_trust"
    assert out["pkg"] == str(pkg / "__init__.py")
    assert out["default"] == str(pkg / "_policies" / "default.json")
    assert out["schema"] == str(pkg / "_schema" / "policy.schema.json")
    assert [tuple(b) for b in out["builders"]] == _shipped_map()
    assert out["map"] == len(_shipped_map())


def test_a_missing_shipped_file_is_an_environment_error_naming_it() -> None:
    from atip_trust._base.shipped import shipped_file
    from atip_trust.errors import EnvironmentFailure

    with pytest.raises(EnvironmentFailure) as info:
        shipped_file("policies", "no-such-policy.json")
    assert "policies/no-such-policy.json" in str(info.value.diagnostics())


def test_library_load_policy_cannot_skip_the_org_policy_by_default(tmp_path: Path, monkeypatch) -> None:
    """Issue 33 item 7: the public loader composes the machine's org policy unless told, by name, to
    leave it out (tests only); a policy that left it out says so on every decision."""
    from atip_trust.facts.report import TrustReport
    from atip_trust.policy import load
    from atip_trust.policy.compose import ORG_LEFT_OUT, load_policy
    from atip_trust.policy.decide import decide

    monkeypatch.delenv("ATIP_TRUST_ORG_POLICY", raising=False)
    org = deny_tool_org(tmp_path)
    monkeypatch.setattr(load, "standard_org_policy_path", lambda: org)
    local = _dump(tmp_path / "local.json", {"version": 1, **ALLOW_ALL})
    assert [x.source for x in load_policy(local).layers] == ["org", "local"]
    assert not load_policy(local).org_left_out
    skipped = load_policy(local, managed=False)
    assert [x.source for x in skipped.layers] == ["local"] and skipped.org_left_out
    assert ORG_LEFT_OUT in skipped.notes
    d = decide(skipped, TrustReport(path=str(local), digests={"sha256": "0" * 64}), tool_name="tool", interactive=False)
    assert "ORG_POLICY_LEFT_OUT" in [r.code for r in d.reasons]
