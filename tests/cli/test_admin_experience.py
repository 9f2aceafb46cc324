"""What an admin or CI engineer meets at the command line: evidence never turns a decision into "could not
evaluate", identity flags with the names gh and cosign users type, and reason lists that name the cause
once. Every test runs the real CLI (in-process as a fresh child would, verify_helpers.py) on the project's own test Sigstore fixtures."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from verify_helpers import cli

REPO = Path(__file__).resolve().parents[2]
FX = REPO / "fixtures" / "sigstore"
TOOL = FX / "artifacts" / "hello-tool"
BUNDLE = FX / "good" / "hello-tool.dsse.sigstore.json"
ROOT = FX / "trusted_root.json"
ISSUER = "https://token.actions.githubusercontent.com"
GENERATOR = ("https://github.com/slsa-framework/slsa-github-generator/.github/workflows/"
             "generator_generic_slsa3.yml@refs/tags/v2.1.0")


def env(**extra: str) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if k != "ATIP_TRUST_ORG_POLICY"}
    e["CI"] = "true"
    e.update(extra)
    return e


def admit(*argv: str, **extra: str):  # type: ignore[no-untyped-def]
    return cli("admit", str(TOOL), "--bundle", str(BUNDLE), "--trusted-root", str(ROOT),
                          "--no-audit", "--format", "json", *argv, env=env(**extra))


def test_bundle_under_default_policy_is_a_decision_not_could_not_evaluate() -> None:
    r = admit()
    assert r.code == 1, r.out + r.err  # the default policy's decision: deny (ask without a user)
    out = json.loads(r.out)
    assert out["trust_level"] == "UNVERIFIED"
    assert out["decision"]["policy_digest"].startswith("sha256:")
    (why,) = [x for x in out["decision"]["reasons"] if x["code"] == "NO_SIGNERS_IN_POLICY"]
    assert "default.json" in why["message"] and why["actual"].startswith(GENERATOR)


def test_admit_identity_flags_name_the_signer_where_no_policy_does() -> None:
    r = admit("--cert-identity", GENERATOR, "--cert-oidc-issuer", ISSUER)
    out = json.loads(r.out)
    assert out["trust_level"] == "VERIFIED", out["checks"]
    assert not any(x["code"] == "NO_SIGNERS_IN_POLICY" for x in out["decision"]["reasons"])


def test_admit_identity_flags_cannot_add_a_signer_under_an_org_that_states_signers(tmp_path: Path) -> None:
    org = tmp_path / "org.json"
    org.write_text(json.dumps({"version": 1, "trust": {
        "signers": [{"identity": "https://github.com/example-org/x/.github/workflows/r.yml@refs/tags/v1",
                     "issuer": ISSUER}], "trustedRoots": [{"path": str(ROOT)}]}}))
    org.chmod(0o644)
    r = admit("--cert-identity", GENERATOR, "--cert-oidc-issuer", ISSUER, "--org-policy", str(org))
    out = json.loads(r.out)
    assert r.code == 1
    assert out["trust_level"] == "UNVERIFIED"
    assert any(x["code"] == "SIGNER_NOT_IN_POLICY" for x in out["decision"]["reasons"])


def test_unknown_effects_are_one_reason_per_gate_outcome_not_one_per_class() -> None:
    r = admit()
    gated = [x for x in json.loads(r.out)["decision"]["reasons"] if x["code"] == "CAPABILITY_GATED"]
    # The default policy gates eight classes in two outcomes (deny below VERIFIED, ask below VERIFIED).
    assert len(gated) == 2
    assert all("effects unknown" in x["message"] for x in gated)


def test_matched_deny_rule_is_not_followed_by_no_matching_rule(tmp_path: Path) -> None:
    pol = tmp_path / "p.json"
    pol.write_text(json.dumps({"version": 1, "permissions": {"deny": ["Bash(hello-tool rm *)"]}}))
    r = admit("--policy", str(pol), "--command", "rm -rf /")
    codes = [x["code"] for x in json.loads(r.out)["decision"]["reasons"]]
    assert r.code == 1 and "COMMAND_DENIED" in codes
    assert "NO_MATCHING_RULE" not in codes
    assert len(codes) == len(set(codes)) or codes.count("CAPABILITY_GATED") > 1


@pytest.mark.parametrize(("flags", "level"), [
    (["--cert-identity", GENERATOR, "--cert-oidc-issuer", ISSUER], "VERIFIED"),
    (["--cert-identity-regex", r"https://github\.com/slsa-framework/.*", "--cert-oidc-issuer", ISSUER],
     "VERIFIED"),
    (["--signer-workflow", "slsa-framework/slsa-github-generator/.github/workflows/"
      "generator_generic_slsa3.yml"], "VERIFIED"),
    # gh's prefix-match bug (cli/cli#9507): a shorter workflow path must not match.
    (["--signer-workflow", "slsa-framework/slsa-github-generator/.github/workflows/generator"],
     "UNVERIFIED"),
    (["--signer-workflow", "slsa-framework/slsa-github-generator/.github/workflows/"
      "generator_generic_slsa3.yml", "--deny-self-hosted-runners"], "VERIFIED"),
])
def test_verify_accepts_gh_flag_names_with_full_match_semantics(flags: list[str], level: str) -> None:
    r = cli("verify", str(TOOL), "--bundle", str(BUNDLE), "--trusted-root", str(ROOT),
                       "--format", "json", *flags, env=env())
    assert json.loads(r.out)["trust_level"] == level, r.out + r.err
    assert r.code == (0 if level == "VERIFIED" else 1)


def test_interactive_always_lets_a_hook_without_a_terminal_receive_ask() -> None:
    """CI=true and no stdin: auto and never turn ask into deny; always returns ask (exit 3) so a
    runtime or hook can put the question to its user."""
    flags = ["--cert-identity", GENERATOR, "--cert-oidc-issuer", ISSUER]  # VERIFIED; default noMatch: ask
    auto = admit(*flags)
    always = admit(*flags, "--interactive", "always")
    never = admit(*flags, "--interactive", "never")
    assert (auto.code, always.code, never.code) == (1, 3, 1), always.out + always.err
    assert json.loads(always.out)["decision"]["behavior"] == "ask"
    assert json.loads(auto.out)["decision"]["reasons"][0]["code"] == "ASK_WITHOUT_USER"


def test_library_can_ask_reads_the_same_three_modes(monkeypatch: pytest.MonkeyPatch) -> None:
    from atip_trust.admission.interactive import can_ask

    monkeypatch.setenv("CI", "true")
    assert (can_ask("auto"), can_ask("always"), can_ask("never")) == (False, True, False)
    with pytest.raises(Exception, match="auto, always or never"):
        can_ask("sometimes")  # type: ignore[arg-type]


def _org(tmp_path: Path, audit: dict[str, object]) -> Path:
    org = tmp_path / "org.json"
    org.write_text(json.dumps({"version": 1, "audit": audit}))
    org.chmod(0o644)
    return org


def _admit_audited(*argv: str, **extra: str):  # type: ignore[no-untyped-def]
    return cli("admit", str(TOOL), "--format", "json", *argv, env=env(**extra))


def test_org_policy_fixes_the_audit_log_for_every_admission(tmp_path: Path) -> None:
    log = tmp_path / "fleet-audit.jsonl"
    org = _org(tmp_path, {"log": str(log)})
    r = _admit_audited("--org-policy", str(org))
    assert r.code == 1, r.out + r.err
    assert json.loads(log.read_text())["tool"] == "hello-tool"


def test_user_audit_log_cannot_divert_the_orgs(tmp_path: Path) -> None:
    log, mine = tmp_path / "fleet.jsonl", tmp_path / "mine.jsonl"
    r = _admit_audited("--org-policy", str(_org(tmp_path, {"log": str(log)})), "--audit-log", str(mine))
    assert r.code == 2
    err = json.loads(r.out)["error"]["message"] if r.out.strip() else r.err
    assert str(log) in err and str(mine) in err
    assert not mine.exists()


def test_org_requiring_audit_refuses_no_audit(tmp_path: Path) -> None:
    r = _admit_audited("--org-policy", str(_org(tmp_path, {"required": True})), "--no-audit")
    assert r.code == 2
    assert "audit.required" in (r.out + r.err)


def test_atip_trust_policy_names_the_default_policy(tmp_path: Path) -> None:
    pol = tmp_path / "fleet-local.json"
    pol.write_text(json.dumps({"version": 1, "name": "fleet", "tools": {"deny": [{"name": "hello-tool"}]}}))
    r = _admit_audited("--no-audit", ATIP_TRUST_POLICY=str(pol))
    assert r.code == 1
    assert any(x["code"] == "TOOL_DENIED" for x in json.loads(r.out)["decision"]["reasons"])


def test_admit_help_shows_the_actual_audit_path() -> None:
    r = cli("admit", "--help", env=env(XDG_STATE_HOME="/tmp/xdg-state-probe"))
    assert "/tmp/xdg-state-probe/atip-trust/audit.jsonl" in "".join(r.out.split())


@pytest.mark.parametrize("bad_text", ["{not json", "[]", json.dumps({"mediaType": "nonsense"})])
def test_malformed_bundle_among_several_is_that_bundles_failure_not_exit_2(tmp_path: Path,
                                                                           bad_text: str) -> None:
    bad = tmp_path / "broken.sigstore.json"
    bad.write_text(bad_text)
    base = ["verify", str(TOOL), "--trusted-root", str(ROOT), "--format", "json",
            "--cert-identity", GENERATOR, "--cert-oidc-issuer", ISSUER]
    both = cli(*base, "--bundle", str(bad), "--bundle", str(BUNDLE), env=env())
    assert both.code == 0, both.out + both.err  # the good bundle still verifies the artifact
    out = json.loads(both.out)
    (failed,) = [c for c in out["checks"] if c["name"] == "bundle" and c["evidence"] == bad.name]
    assert failed["status"] == "fail"
    alone = cli(*base, "--bundle", str(bad), env=env())
    assert alone.code == 2  # the only evidence unreadable: could not evaluate


def test_abbreviated_flags_are_refused_not_guessed() -> None:
    # "--certificate-ident" would have matched --certificate-identity under argparse's default.
    r = cli("verify", str(TOOL), "--bundle", str(BUNDLE), "--trusted-root", str(ROOT),
                       "--certificate-ident", GENERATOR, "--certificate-oidc-issuer", ISSUER, env=env())
    assert r.code == 2 and "unrecognized arguments: --certificate-ident" in r.err


@pytest.mark.parametrize(("flag", "hint"), [
    ("--insecure-ignore-tlog", "transparency-log proof"),
    ("--certificate-chain", "--trusted-root"),
    ("--new-bundle-format", "v0.1-v0.3"),
])
def test_another_tools_flag_gets_a_hint_naming_ours(flag: str, hint: str) -> None:
    r = cli("verify", str(TOOL), "--bundle", str(BUNDLE), flag, "x", env=env())
    assert r.code == 2 and hint in r.err, r.err


def test_slsa_verifier_and_gh_spellings_of_bundle_and_root_are_accepted() -> None:
    r = cli("verify", str(TOOL), "--provenance-path", str(BUNDLE), "--custom-trusted-root",
                       str(ROOT), "--cert-identity", GENERATOR, "--cert-oidc-issuer", ISSUER,
                       "--builder-id", GENERATOR.rsplit("@", 1)[0] + "@refs/tags/v*", env=env())
    assert r.code == 0, r.out + r.err


def test_every_flag_of_every_subcommand_has_help_text() -> None:
    import argparse

    from atip_trust.cli.main import build_parser

    missing: list[str] = []

    def walk(p: argparse.ArgumentParser, path: str) -> None:
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sp in a.choices.items():
                    walk(sp, f"{path} {name}")
            elif a.option_strings and not a.help and a.help != argparse.SUPPRESS:
                missing.append(f"{path} {a.option_strings[0]}")
            elif not a.option_strings and not a.help:
                missing.append(f"{path} {a.dest}")

    walk(build_parser(), "atip-trust")
    assert not missing, missing


@pytest.mark.parametrize("bundle", ["hello-tool.v0.3.sigstore.json", "hello-tool.v0.1.sigstore.json"])
def test_digests_in_output_are_always_sha256_hex(tmp_path: Path, bundle: str) -> None:
    """One vocabulary: a bundle's declared digest is reported as sha256:<hex>, never SHA2_256:<hex>."""
    other = tmp_path / "hello-tool"
    other.write_bytes(TOOL.read_bytes() + b"\n# changed\n")
    r = cli("verify", str(other), "--bundle", str(FX / "good" / bundle), "--trusted-root",
                       str(ROOT), "--certificate-identity-regexp", ".*",
                       "--certificate-oidc-issuer-regexp", ".*", "--format", "json", env=env())
    assert r.code == 1, r.out + r.err
    assert "SHA2_256" not in r.out
    (digest,) = [c for c in json.loads(r.out)["checks"] if c["name"] == "digest"]
    assert str(digest["actual"]).startswith("sha256:") and str(digest["expected"]).startswith("sha256:")


@pytest.mark.parametrize("bundle", ["hello-tool.v0.3.sigstore.json", "hello-tool.dsse.sigstore.json",
                                    "hello-tool.intoto.sigstore.json"])
def test_bundle_from_another_sigstore_instance_says_so_and_names_the_flags(bundle: str) -> None:
    """Signed on the project's test instance, checked against the embedded production root (as a
    staging-signed bundle would be): the failure says the material may come from another instance and
    names --staging / --trusted-root."""
    r = cli("verify", str(TOOL), "--bundle", str(FX / "good" / bundle),
                       "--certificate-identity-regexp", ".*", "--certificate-oidc-issuer-regexp", ".*",
                       "--no-cache", "--format", "json", env=env())
    assert r.code == 1, r.out + r.err
    failed = [c for c in json.loads(r.out)["checks"] if c["status"] != "pass"]
    assert any("another Sigstore instance" in c["message"] and "--staging" in c["message"]
               and "--trusted-root" in c["message"] for c in failed), failed


def test_the_same_concept_has_the_same_check_name_on_every_route() -> None:
    """certificate chain, SCT, log and signature checks are named alike whether sigstore-python
    (message, DSSE) or the project's own verifier (intoto/0.0.2, v0.1) handled the bundle."""
    names: dict[str, set[str]] = {}
    for bundle in ("hello-tool.v0.3.sigstore.json", "hello-tool.dsse.sigstore.json",
                   "hello-tool.intoto.sigstore.json", "hello-tool.v0.1.sigstore.json"):
        r = cli("verify", str(TOOL), "--bundle", str(FX / "good" / bundle), "--trusted-root",
                           str(ROOT), "--certificate-identity-regexp", ".*",
                           "--certificate-oidc-issuer-regexp", ".*", "--no-cache", "--format", "json",
                           env=env())
        assert r.code == 0, r.out + r.err
        names[bundle] = {c["name"] for c in json.loads(r.out)["checks"]}
    for bundle, got in names.items():
        assert "certificate.chain" in got and "signature" in got, (bundle, sorted(got))
        assert not got & {"certificate_chain", "dsse.signature", "sct", "chain"}, (bundle, sorted(got))


def test_identity_flag_cannot_widen_a_local_policy_that_names_its_signers(tmp_path: Path) -> None:
    """Attack: the local policy trusts only the org's release workflow; the caller passes the identity
    that really signed the tool (the generator) as --cert-identity, hoping the flag adds a signer and a
    VERIFIED-only allow rule lets the command run."""
    pol = tmp_path / "local.json"
    pol.write_text(json.dumps({"version": 1, "trust": {
        "signers": [{"identity": "https://github.com/example-org/x/.github/workflows/r.yml@refs/tags/v1",
                     "issuer": ISSUER}], "trustedRoots": [{"path": str(ROOT)}]},
        "permissions": {"allow": [{"rule": "hello-tool *", "minTrustLevel": "VERIFIED"}]},
        "defaults": {"noMatch": "deny"}}))
    r = admit("--policy", str(pol), "--command", "run", "--cert-identity", GENERATOR,
              "--cert-oidc-issuer", ISSUER)
    out = json.loads(r.out)
    assert r.code == 1, r.out + r.err
    assert out["decision"]["behavior"] == "deny"
    assert any(x["code"] == "SIGNER_NOT_IN_POLICY" for x in out["decision"]["reasons"])


def test_interactive_always_never_turns_a_denial_into_ask_or_allow(tmp_path: Path) -> None:
    """Attack: a hook passes --interactive always hoping an unsigned tool's deny becomes a question."""
    pol = tmp_path / "p.json"
    pol.write_text(json.dumps({"version": 1, "tools": {"deny": [{"name": "hello-tool"}]}}))
    r = admit("--policy", str(pol), "--interactive", "always")
    assert r.code == 1 and json.loads(r.out)["decision"]["behavior"] == "deny"


def test_local_policy_cannot_point_the_audit_log_at_a_device(tmp_path: Path) -> None:
    """Attack: a local policy sends the audit trail to /dev/null; the device is refused, never an allow."""
    pol = tmp_path / "p.json"
    pol.write_text(json.dumps({"version": 1, "audit": {"log": "/dev/null"},
                               "permissions": {"allow": ["Bash(hello-tool *)"]}}))
    r = cli("admit", str(TOOL), "--policy", str(pol), "--command", "run", "--format", "json",
                       env=env())
    assert r.code == 2, r.out + r.err
