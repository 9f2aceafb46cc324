"""Command rules that cannot be sidestepped: each test is an attack on the rule layer, through the CLI
(``atip-trust admit`` as a user meets it: verify_helpers.cli) where the attack reaches the CLI, and the
library where only the library exposes it (``to_agent_tool``, ``compile_rule``).

The attacks: an option before the sub-command (``git -C . push --force``, ``gh --yes=true repo delete``)
that makes a command inherit the root command's effects or escape a deny rule; a ``--force`` at the end
of the line that the shipped denials missed; a trust qualifier on an ask rule that lets a *less* trusted
binary skip the question; a long command that makes a backtracking matcher run for minutes; and a
passthrough for a command a qualified allow rule had matched.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from atip_trust._base.limits import LIMITS
from atip_trust.errors import PolicyError
from atip_trust.facts.effects import command_states, states_for_command
from atip_trust.facts.metadata import parse_metadata
from atip_trust.facts.report import (
    ProvenanceResult,
    SignatureResult,
    TrustLevel,
    TrustReport,
)
from atip_trust.policy.compose import compose, load_policy
from atip_trust.policy.decide import decide, to_agent_tool
from atip_trust.policy.load import layer_from_document
from atip_trust.policy.model import Policy
from atip_trust.policy.rules import (
    command_line,
    command_variants,
    compile_rule,
    glob_match,
    rule_matches,
)

from conftest import examples
from verify_helpers import cli
from world import ISSUER, ORG_ID, REGISTRY_ID, World

ROOT = Path(__file__).resolve().parents[2]
POLICIES = ROOT / "policies"
NOW = datetime(2026, 11, 23, tzinfo=UTC)
READ_ONLY = {
    "destructive": False, "reversible": True, "idempotent": True, "network": False,
    "filesystem": {"read": True, "write": False, "delete": False}, "cost": {"billable": False},
    "interactive": {"stdin": "none", "prompts": False, "tty": False},
}
DESTRUCTIVE = {**READ_ONLY, "destructive": True, "reversible": False, "network": True}


def _dump(path: Path, obj: Any) -> Path:
    path.write_text(json.dumps(obj, indent=2))
    return path


def _tool(d: Path, name: str, body: bytes) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    path = d / name
    path.write_bytes(body)
    path.chmod(0o755)
    return path


def _codes(out: dict[str, Any]) -> list[str]:
    return [r["code"] for r in out["decision"]["reasons"]]


def _admit(*args: str) -> Any:
    return cli("admit", *args, "--non-interactive", "--no-audit", "--format", "json")


# -- 10. an option before the sub-command --------------------------------------------------------------

#: A tool whose root command ("" in RFC §4.5) is read-only and whose "repo delete" is destructive.
GH_SHIM_COMMANDS = {
    "": {"description": "Show status", "effects": READ_ONLY},
    "repo": {"description": "Repositories", "commands": {
        "delete": {"description": "Delete a repository", "effects": DESTRUCTIVE}}},
}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A ``gh`` signed by the org, and its shim signed by the registry the policy names: verified
    effects, so the read-only default can allow, and the only thing in question is *which* command's
    effects the words select."""
    w = World(tmp_path_factory.mktemp("attacks"), seed=10)
    body = b"#!/bin/sh\necho gh\n"
    gh = w.tool("bin/gh", body)
    hexdigest = hashlib.sha256(body).hexdigest()
    bundle = w.bundle("gh.sigstore.json", body, indent=2)
    shim = {"atip": {"version": "0.6"}, "binary": {"hash": f"sha256:{hexdigest}", "name": "gh",
                                                   "version": "2.0.0"},
            "trust": {"source": "org", "verified": True}, "description": "GitHub CLI",
            "commands": GH_SHIM_COMMANDS}
    w.shim("shims", shim, hexdigest)
    policy = w.policy_file(
        indent=2, roots=("trusted_root.json",),
        trust={"registries": [{"url": "file:///srv/shims", "signers": [{"identity": REGISTRY_ID, "issuer": ISSUER}]}]},
        capabilities={"destructive": {"minTrustLevel": "VERIFIED", "below": "deny"}},
        defaults={"noMatch": "ask", "allowVerifiedReadOnly": True})
    return {"dir": w.dir, "gh": gh, "bundle": bundle, "shims": w.dir / "shims", "policy": policy}


def _admit_gh(world: dict[str, Any], command: str) -> Any:
    return _admit(str(world["gh"]), f"--command={command}", "--policy", str(world["policy"]),
                  "--bundle", str(world["bundle"]), "--shim-dir", str(world["shims"]))


def test_option_before_subcommand_does_not_inherit_root_effects(world: dict[str, Any]) -> None:
    # The root command, verified read-only: allowed (the set-up works).
    r = _admit_gh(world, "")
    assert r.code == 0, r.out + r.err
    assert r.json["effects_verified"] is True and _codes(r.json)[0] == "READ_ONLY_VERIFIED"
    # The attack: an option first, so that the walk saw no sub-command and took the root's read-only
    # effects for "repo delete". Now the words match no one declared command: unknown, hence risky.
    r = _admit_gh(world, "--yes=true repo delete example-org/tools")
    assert r.code == 1, r.out + r.err
    out = r.json
    assert out["decision"]["behavior"] == "deny"
    assert "READ_ONLY_VERIFIED" not in _codes(out)
    unknown = next(x for x in out["decision"]["reasons"] if x["code"] == "EFFECTS_UNKNOWN")
    assert "'--yes=true'" in unknown["actual"] and "'repo'" in unknown["actual"]
    assert unknown["expected"] == "the words name one declared command"


def test_option_between_subcommand_words_makes_effects_unknown() -> None:
    meta = {"commands": GH_SHIM_COMMANDS}
    states, why = command_states(meta, ["repo", "--yes", "delete", "x"])
    assert set(states.values()) == {"unknown"} and why is not None and "'--yes'" in why
    # The root command with arguments, when no argument names a sub-command, is still the root.
    states, why = command_states(meta, ["--verbose", "somefile"])
    assert why is None and states["destructive"] == "safe"
    # A declared leaf takes the words after it as arguments.
    states, why = command_states(meta, ["repo", "delete", "x", "--yes"])
    assert why is None and states["destructive"] == "risky"


def test_metadata_effects_for_and_policy_walker_agree_risk_wins() -> None:
    """The two walkers used to disagree (metadata: deeper wins, and the root took leading options);
    both are now the policy engine's walk, where the value adding risk wins."""
    doc = parse_metadata(json.dumps({"atip": {"version": "0.6"}, "name": "gh", "version": "2.0.0",
                     "description": "GitHub CLI", "effects": {"destructive": True},
                     "commands": {**GH_SHIM_COMMANDS,
                                  "status": {"description": "Status", "effects": {
                                      "destructive": False, "interactive": {"stdin": "password"}}}}}).encode())
    assert doc.effects_for(["--yes=true", "repo", "delete", "x"]) is None
    _, found = states_for_command(doc.doc, ["--yes=true", "repo", "delete", "x"])
    assert found is False
    merged = doc.effects_for(["status"])
    assert merged is not None and merged["destructive"] is True  # the tool's true is not cancelled
    assert merged["interactive"]["stdin"] == "password"
    states, _ = states_for_command(doc.doc, ["status"])
    assert states["destructive"] == "risky" and states["interactive"] == "risky"


def _permissive(tmp: Path, **permissions: Any) -> Path:
    return _dump(tmp / "permissive.json", {"version": 1, "permissions": {"allow": ["Bash"],
                                                                         **permissions}})


@pytest.mark.parametrize(("tool", "command", "rule"), [
    ("git", "-C . push --force origin main", "Bash(git push *)"),
    ("git", "-c core.sshCommand=x push origin main", "Bash(git push *)"),
    ("gh", "--yes=true repo delete example-org/tools", "gh repo delete"),
    ("gh", "-R example-org/tools repo delete example-org/tools", "gh repo delete"),
    ("gh", "--repo example-org/tools --yes repo delete x", "gh repo delete"),
])
def test_option_before_subcommand_cannot_escape_deny_rule(
    tmp_path: Path, tool: str, command: str, rule: str
) -> None:
    exe = _tool(tmp_path / "bin", tool, b"#!/bin/sh\nexit 0\n")
    policy = _permissive(tmp_path, deny=["Bash(git push *)"])
    doc = json.loads(policy.read_text())
    doc["tools"] = {"deniedCommands": ["gh repo delete"]}
    _dump(policy, doc)
    # Without the leading option the rule denies; with it, it must still deny.
    r = _admit(str(exe), f"--command={command}", "--policy", str(policy))
    assert r.code == 1, r.out + r.err
    denied = [x for x in r.json["decision"]["reasons"] if x["code"] == "COMMAND_DENIED"]
    assert denied and denied[0]["rule"] == rule, r.json["decision"]["reasons"]
    assert denied[0]["actual"] == command_line(tool, command.split())[1]
    assert "read as" in denied[0]["message"]


def test_leading_option_readings_never_widen_an_allow_rule() -> None:
    p = compose([layer_from_document({"version": 1, "permissions": {"allow": ["gh pr view *"]},
                                      "defaults": {"noMatch": "deny"}}, source="local")])
    d = decide(p, _report(), tool_name="gh", command=["--evil", "pr", "view", "1"], now=NOW)
    assert d.behavior == "deny" and d.reasons[0].code == "NO_MATCHING_RULE"


def test_command_variants_try_the_option_alone_and_with_its_value() -> None:
    variants, complete = command_variants(("git", "-C", ".", "push", "--force"))
    assert complete
    assert [line for _, line in variants] == [
        "git -C . push --force", "git . push --force", "git push --force"]
    # Linear: at most one reading per word, and a cap above which the caller denies.
    words = ("tool", *(["-x", "v"] * 200), "sub")
    variants, complete = command_variants(words)
    assert not complete and len(variants) == LIMITS.command_start_candidates + 1


def test_too_many_leading_options_to_check_is_denied_naming_the_cap() -> None:
    p = compose([layer_from_document({"version": 1, "permissions": {"allow": ["Bash"],
                                                                    "deny": ["gh repo delete *"]}},
                                     source="local")])
    words = [*(["-R", "x"] * 100), "repo", "delete", "x"]
    d = decide(p, _report(), tool_name="gh", command=words, now=NOW)
    assert d.behavior == "deny"
    r = next(x for x in d.reasons if x.code == "COMMAND_AMBIGUOUS")
    assert r.expected == f"<= {LIMITS.command_start_candidates} candidate sub-command positions"
    assert r.actual == f"more, in {len(words) + 1} words"


# -- 11. shipped force-push denials catch the flag anywhere ----------------------------------------------

#: Every shipped deny rule, grouped by what it denies, with commands putting the flag (or the extra
#: option) at the start (before the sub-command), the middle and the end. A command must be denied by
#: one of its group's rules; ``test_every_shipped_deny_rule_is_exercised`` keeps the table complete.
FORCE = frozenset({"Bash(* --force *)", "Bash(* --force)", '["git", "push", ["--force", "-f"]]'})
SHORT_F = frozenset({"Bash(git push -f *)", "Bash(git push * -f *)", "Bash(git push * -f)"})
GROUPS: list[tuple[frozenset[str], list[str]]] = [
    (FORCE, ["git --force push origin main", "git push --force origin main",
             "git push origin --force main", "git push origin main --force",
             "git -C . push origin main --force", "git push --force", "helm upgrade x --force"]),
    (SHORT_F, ["git -C . push -f origin main", "git push -f origin main", "git push origin -f main",
               "git push origin main -f", "git push -f"]),
    (frozenset({"Bash(git push *+*)"}), ["git -C . push origin +main", "git push origin +main:main x",
                                         "git push origin +main"]),
    (frozenset({"Bash(git push *--force-with-lease*)"}), [
        "git -C . push --force-with-lease origin main", "git push origin --force-with-lease=main main",
        "git push origin main --force-with-lease"]),
    (frozenset({"Bash(git push *--force-if-includes*)"}), [
        "git -C . push --force-if-includes origin main", "git push origin --force-if-includes main",
        "git push origin main --force-if-includes"]),
    (frozenset({"Bash(git push *--mirror*)"}), ["git -C . push --mirror origin", "git push origin --mirror x",
                                               "git push origin --mirror"]),
    (frozenset({"Bash(terraform destroy *)"}), ["terraform -chdir=infra destroy", "terraform destroy",
                                                "terraform destroy -target x -auto-approve",
                                                "terraform destroy -auto-approve"]),
    (frozenset({"gh repo delete"}), ["gh --yes=true repo delete x", "gh repo delete --yes x",
                                     "gh repo delete x --yes"]),
    (frozenset({"gh release delete"}), ["gh -R o/r release delete v1", "gh release delete --yes v1",
                                        "gh release delete v1 --yes"]),
    (frozenset({"gh secret set"}), ["gh -R o/r secret set X", "gh secret set --body y X",
                                    "gh secret set X --body y"]),
    (frozenset({"kubectl delete namespace"}), ["kubectl --context prod delete namespace x",
                                               "kubectl delete namespace --wait x",
                                               "kubectl delete namespace x --wait"]),
]


def _shipped_deny_rules() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for path in sorted(POLICIES.glob("*.json")):
        if path.name == "trusted-builders.json":
            continue
        p = load_policy(path)
        out[path.name] = {r.text for r in p.deny_rules}
    return out


def _report(level: TrustLevel = TrustLevel.VERIFIED) -> TrustReport:
    sig = SignatureResult(status="valid", identity=ORG_ID, issuer=ISSUER, kind="keyless")
    if level < TrustLevel.UNVERIFIED:
        sig = SignatureResult(status="absent")
    return TrustReport(path="/usr/bin/tool", digests={"sha256": "ab" * 32}, trust_level=level,
                       signature=sig, provenance=ProvenanceResult())


def test_every_shipped_deny_rule_is_exercised() -> None:
    covered = set().union(*(g for g, _ in GROUPS))
    for name, rules in _shipped_deny_rules().items():
        assert rules <= covered, f"{name}: deny rules without start/middle/end cases: {rules - covered}"


@pytest.mark.parametrize(
    ("name", "group", "line"),
    [pytest.param(name, g, line, id=f"{name}: {line}")
     for name, rules in _shipped_deny_rules().items() for g, lines in GROUPS if g & rules
     for line in lines],
)
def test_trailing_force_is_denied_by_shipped_policies(name: str, group: frozenset[str], line: str) -> None:
    p = load_policy(POLICIES / name)
    words = line.split()
    d = decide(p, _report(), tool_name=words[0], command=words[1:], interactive=False, now=NOW)
    hits = {r.rule for r in d.reasons if r.code == "COMMAND_DENIED"}
    assert d.behavior == "deny" and hits & group, (line, [(r.code, r.rule) for r in d.reasons])


@pytest.mark.parametrize("name", ["ci.json", "enterprise-strict.json"])
def test_trailing_force_is_denied_through_admit(tmp_path: Path, name: str) -> None:
    git = _tool(tmp_path / "bin", "git", b"#!/bin/sh\nexit 0\n")
    r = _admit(str(git), "--command=push origin main --force", "--policy", str(POLICIES / name))
    assert r.code == 1, r.out + r.err
    denied = [x for x in r.json["decision"]["reasons"] if x["code"] == "COMMAND_DENIED"]
    assert {x["rule"] for x in denied} >= {"Bash(* --force *)", "Bash(* --force)"}
    assert denied[0]["actual"] == "git push origin main --force"


def test_force_with_lease_is_a_force_push_denial() -> None:
    """Issue 32 reversed the earlier reading: ``--force-with-lease`` still overwrites the remote's
    history (whenever the lease holds, and always with a stale fetch), so the shipped policies deny it by
    its own rule, as every force push git has."""
    for name in ("ci.json", "enterprise-strict.json"):
        p = load_policy(POLICIES / name)
        d = decide(p, _report(), tool_name="git", command="push --force-with-lease origin main",
                   interactive=False, now=NOW)
        hits = {r.rule for r in d.reasons if r.code == "COMMAND_DENIED"}
        assert d.behavior == "deny" and "Bash(git push *--force-with-lease*)" in hits, name


@pytest.mark.parametrize(("rule", "line", "deny_ask", "allow"), [
    # Deny and ask rules: a trailing " *" is always optional (only tightens).
    ("Bash(* --force *)", "git push origin main --force", True, False),
    ("Bash(* --force *)", "git push --force-with-lease", False, False),
    ("Bash(git * main *)", "git push origin main", True, False),
    # Claude Code's own rule, unchanged: a lone trailing " *" is optional, with a word boundary.
    ("Bash(gh pr view *)", "gh pr view", True, True),
    ("Bash(gh pr view *)", "gh pr viewer", False, False),
])
def test_trailing_wildcard_is_optional_for_deny_and_ask_only(
    rule: str, line: str, deny_ask: bool, allow: bool
) -> None:
    words = line.split()
    tokens, text = command_line(words[0], words[1:])
    for behavior, expected in (("deny", deny_ask), ("ask", deny_ask), ("allow", allow)):
        compiled = compile_rule(rule, behavior, "local", where="$")  # type: ignore[arg-type]
        assert rule_matches(compiled, tokens, text) is expected, (behavior, rule, line)


# -- 12. no trust qualifier on an ask rule -------------------------------------------------------------


def test_ask_rule_qualifier_cannot_let_less_trusted_binary_skip_question(tmp_path: Path) -> None:
    # Meant as "ask before merging, for VERIFIED tools": an UNSIGNED binary would have skipped the
    # question and been allowed by "Bash". The policy is refused instead, at the qualifier's path.
    policy = _dump(tmp_path / "qualified-ask.json", {"version": 1, "permissions": {
        "allow": ["Bash"], "ask": [{"rule": "gh pr merge *", "minTrustLevel": "VERIFIED"}]}})
    gh = _tool(tmp_path / "bin", "gh", b"#!/bin/sh\nexit 0\n")
    r = _admit(str(gh), "--command=pr merge 1", "--policy", str(policy))
    assert r.code == 2, r.out + r.err
    assert "$.permissions.ask[0].minTrustLevel" in r.err
    assert "less trusted tool skip the question" in r.err
    r = cli("policy", "check", str(policy))
    assert r.code == 2 and "$.permissions.ask[0].minTrustLevel" in r.err, r.err
    signer = _dump(tmp_path / "signer-ask.json", {"version": 1, "permissions": {"ask": [
        {"prefix": ["gh", "pr", "merge"], "signer": {"identity": ORG_ID, "issuer": ISSUER}}]}})
    r = cli("policy", "check", str(signer))
    assert r.code == 2 and "$.permissions.ask[0].signer" in r.err, r.err
    # The unqualified ask rule asks whatever the trust level: non-interactive, that is a denial.
    _dump(policy, {"version": 1, "permissions": {"allow": ["Bash"], "ask": ["gh pr merge *"]}})
    r = _admit(str(gh), "--command=pr merge 1", "--policy", str(policy))
    assert r.code == 1 and "COMMAND_ASK" in _codes(r.json), r.out + r.err


@pytest.mark.parametrize("behavior", ["ask", "deny"])
def test_compile_rule_refuses_qualified_ask_and_deny_rules(behavior: str) -> None:
    with pytest.raises(PolicyError) as info:
        compile_rule({"rule": "gh *", "minTrustLevel": "VERIFIED"}, behavior,  # type: ignore[arg-type]
                     "local", where=f"$.permissions.{behavior}[0]")
    assert info.value.path == f"$.permissions.{behavior}[0].minTrustLevel"


# -- 13. linear matching ---------------------------------------------------------------------------------

#: Rules that make a backtracking regexp (``.* a .* a .*``…) explode on a long line with no final match.
MANY_STARS = ["Bash(* a * a * a * a * a * a * a * a * zz)", "Bash(*a*a*a*a*a*a*a*a*a*a*zz*)",
              "Bash(git * a * a * a * a * a * --force)"]


def test_64k_command_with_wildcard_rules_decides_linearly(tmp_path: Path) -> None:
    policy = _dump(tmp_path / "stars.json", {"version": 1, "permissions": {
        "deny": MANY_STARS, "ask": MANY_STARS, "allow": MANY_STARS + ["Bash(git push *)"]}})
    git = _tool(tmp_path / "bin", "git", b"#!/bin/sh\nexit 0\n")
    command = "push " + " ".join(["a"] * (64 * 1024 // 2))
    assert len(command) >= 64 * 1024
    # A backtracking matcher does not finish this within the run's bound (verify_helpers.run_cli:
    # timeout=120 s); the linear one decides as for any command: allowed by "Bash(git push *)".
    r = _admit(str(git), f"--command={command}", "--policy", str(policy))
    assert r.code == 0, r.err
    assert r.json["decision"]["reasons"][0]["code"] == "COMMAND_ALLOWED"


def test_command_above_the_size_cap_is_denied_naming_expected_and_actual() -> None:
    p = compose([layer_from_document({"version": 1, "permissions": {"allow": ["Bash"]}},
                                     source="local")])
    words = ["x" * 1000] * (LIMITS.command_chars // 1000 + 1)
    d = decide(p, _report(), tool_name="gh", command=words, now=NOW)
    assert d.behavior == "deny"
    r = next(x for x in d.reasons if x.code == "COMMAND_TOO_LARGE")
    assert r.expected == f"<= {LIMITS.command_chars} characters"
    assert r.actual == f"{len(command_line('gh', words)[1])} characters"
    assert "COMMAND_ALLOWED" not in [x.code for x in d.reasons]
    d = decide(p, _report(), tool_name="gh", command=["a"] * LIMITS.command_words, now=NOW)
    r = next(x for x in d.reasons if x.code == "COMMAND_TOO_LARGE")
    assert (r.expected, r.actual) == (f"<= {LIMITS.command_words} words",
                                      f"{LIMITS.command_words + 1} words")


def _reference(parts: tuple[str, ...], text: str) -> bool:
    """fnmatch's reading of '*' (any run), through a regexp: fine on small inputs."""
    return re.fullmatch(".*".join(re.escape(p) for p in parts), text, re.DOTALL) is not None


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(st.text("ab *", max_size=4), min_size=1, max_size=5), st.text("ab *", max_size=12))
def test_glob_match_agrees_with_a_reference_matcher(parts: list[str], text: str) -> None:
    assert glob_match(tuple(parts), text) is _reference(tuple(parts), text)


# -- 14. passthrough only when no rule matched ---------------------------------------------------------


def test_passthrough_never_for_matched_rule_with_failed_qualifier() -> None:
    p: Policy = compose([layer_from_document({"version": 1, "permissions": {"allow": [
        {"rule": "gh pr view *", "minTrustLevel": "VERIFIED"}]}}, source="local")])
    low = _report(TrustLevel.UNSIGNED)
    for interactive in (False, True):
        d = decide(p, low, tool_name="gh", command="pr view 1", interactive=interactive, now=NOW)
        assert "RULE_QUALIFIER_NOT_MET" in [r.code for r in d.reasons]
        out = to_agent_tool(d, passthrough_on_no_match=True, decided_at=NOW)
        assert out["behavior"] == "deny", out
        assert out["reason"]["rule_ref"] == "gh pr view *"
    # No rule matched at all: the host decides.
    d = decide(p, low, tool_name="gh", command="api /user", interactive=False, now=NOW)
    assert to_agent_tool(d, passthrough_on_no_match=True)["behavior"] == "passthrough"
