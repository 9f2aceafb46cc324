"""Identity by bytes beyond PATH, and options as a tool's verified ATIP metadata declares them (issue 32,
items 1 and 2): a program's name comes from a ``registry.json`` pin (RFC §4.3) or from its verified
metadata (admission/metadata_trust.py), and a governed tool's options are read by its declaration
(agents/declared.py).

The world is the oracle's (fixtures/shell_lines.py) plus ``vault``, a signed tool installed off PATH
(``opt/vault/vault``) that really deletes (writes the world's ``denied`` sentinel) on ``secret delete``
with a force flag in any spelling it accepts. Each attack line is first run by real bash to show what
it does, then judged by the gate, which must not allow it. ``XDG_DATA_HOME`` points at this test's
agent-tools tree, never the real one.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from atip_trust.admission.admit import load_admission_policy
from atip_trust.admission.options import AdmitOptions
from atip_trust.agents import identity
from atip_trust.agents.declared import Declaration
from atip_trust.agents.formats import HookRequest
from atip_trust.agents.hooks import Options, decide_command
from atip_trust.agents.words import Unprovable
from atip_trust.policy.model import Policy
from atip_trust.registry import LocalRegistry

import testsigstore
from shared_material import shared_path, where
from shell_lines import ISSUER, SIGNER, ShellWorld, make_world
from test_shell_oracle import ran

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell lines")

SEED = 21  # make_world's: the same test Sigstore, so the world's trusted root verifies what is signed here
EVIL_ID = "https://github.com/evil/tools/.github/workflows/release.yml@refs/tags/v1.0.0"
#: vault's declared options (RFC §3.1 globalOptions, §3.3 commands, §3.5 options).
COMMANDS: dict[str, Any] = {"secret": {"description": "Secrets", "commands": {
    "delete": {"description": "Delete a secret", "options": [
        {"name": "force", "flags": ["-f", "--force"], "type": "boolean", "description": "no undo"},
        {"name": "yes", "flags": ["-y", "--yes"], "type": "boolean", "description": "no prompt"}]},
    "list": {"description": "List secrets", "options": []}}}}
GLOBAL = [{"name": "address", "flags": ["-a", "--address"], "type": "string", "description": "server"}]


class Vault:
    """The world, vault, its agent-tools tree and the policies the attacks are judged under."""

    def __init__(self, world: ShellWorld) -> None:
        self.world = world
        self.dir = world.dir
        self.ts = testsigstore.TestSigstore(seed=SEED)
        self.bytes = (f'#!/bin/sh\ncase " $* " in *" secret delete "*)\n  case " $* " in *" -f"*|*" --f"*|'
                      f'*" -"[a-z]*f*) echo hit >> {world.denied};; esac;;\nesac\necho "vault $*"\n# vault\n'
                      ).encode()
        self.hex = hashlib.sha256(self.bytes).hexdigest()
        self.real = self.place(self.dir / "opt" / "vault" / "vault", self.bytes)
        bundle = self.ts.sign_artifact(self.bytes, identity=SIGNER, issuer=ISSUER)
        (world.bundles / "sha256" / f"{self.hex}.sigstore.json").write_text(json.dumps(bundle))
        self.data = self.dir / "xdg" / "data" / "agent-tools"
        self.data.mkdir(parents=True)

    def place(self, path: Path, data: bytes) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(0o755)
        return path

    def policy(self, name: str, *, deny: list[str] = (), allow: list[Any] = ()) -> Policy:  # type: ignore[assignment]
        doc = json.loads(self.world.policy.read_text())
        doc["permissions"]["allow"] += [{"rule": "vault *", "minTrustLevel": "VERIFIED"}, *allow]
        doc["permissions"]["deny"] += list(deny)
        path = self.dir / f"policy-{name}.json"
        path.write_text(json.dumps(doc))
        return load_admission_policy(str(path))

    def metadata(self, *, name: str = "vault", signer: str | None = SIGNER, digest: str | None = None,
                 options: bool = True) -> Path:
        """Metadata for vault's bytes in the tree's ``tools/`` by digest, signed by ``signer`` (None:
        unsigned), naming ``name``."""
        doc: dict[str, Any] = {"atip": {"version": "0.6"}, "name": name, "version": "1.0.0",
                               "description": "Secrets", "binary": {"hash": f"sha256:{digest or self.hex}"},
                               "commands": COMMANDS if options else {"secret": {"description": "Secrets"}}}
        if options:
            doc["globalOptions"] = GLOBAL
        data = json.dumps(doc).encode()
        path = self.data / "tools" / f"sha256-{digest or self.hex}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        bundle = Path(f"{path}.bundle")
        bundle.unlink(missing_ok=True)
        if signer is not None:
            bundle.write_text(json.dumps(self.ts.sign_artifact(data, identity=signer, issuer=ISSUER)))
        return path

    def judge(self, policy: Policy, text: str) -> str | None:
        verdict = decide_command(HookRequest("claude-code", "Bash", text, cwd=str(self.dir)), policy=policy,
                                 options=Options(admit=AdmitOptions(audit=False, cache=False),
                                                 bundle_dir=str(self.world.bundles),
                                                 path_env=self.world.env["PATH"]))
        return None if verdict is None else verdict.behavior

    def attack(self, policy: Policy, text: str, *, denied: bool = True, path: str | None = None) -> str | None:
        did = ran(self.world, text, path=path)
        assert did[1] or not denied, f"bash did not run the denied command for {text!r}: {did}"
        answer = self.judge(policy, text)
        assert answer not in ("allow", None), f"allowed, and bash runs it: {text!r} ({answer})"
        return answer


@pytest.fixture
def vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Vault]:
    world = make_world(tmp_path / "world", seed=SEED)
    v = Vault(world)
    monkeypatch.setenv("XDG_DATA_HOME", str(v.data.parent))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(v.dir / "xdg" / "config"))
    monkeypatch.setenv("XDG_DATA_DIRS", str(v.dir / "xdg" / "none"))
    yield v
    for extra in ("tools", "shims"):
        for f in (v.data / extra).glob("*"):
            f.unlink()


# -- identity by a registry.json pin ------------------------------------------------------------------

def test_a_registry_pinned_tool_copied_under_another_name_elsewhere_gets_its_deny_rules(vault: Vault) -> None:
    """vault is off PATH; registry.json pins it (RFC §4.3). A copy called ``helper`` in another folder
    deletes like vault does: it is vault, and vault's deny rule applies (without the pin it is only a
    program the policy does not name)."""
    policy = vault.policy("deny", deny=["Bash(vault secret delete *)"])
    copy = vault.place(vault.dir / "d" / "x" / "helper", vault.bytes)
    text = "d/x/helper secret delete -f prod"
    assert vault.judge(policy, text) != "deny"  # no pin: nothing says what the bytes are
    LocalRegistry(vault.data / "registry.json").put("vault", vault.real)
    assert "vault" in identity.names_of(str(copy), identity.governed_names(policy), vault.world.env["PATH"])
    assert vault.attack(policy, text) == "deny"
    assert vault.attack(policy, "./d/x/helper secret delete --force prod") == "deny"


def test_a_registry_pinned_tool_is_never_passed_through_under_another_name(vault: Vault) -> None:
    policy = vault.policy("ask", deny=["Bash(vault secret delete *)"])
    vault.place(vault.dir / "d" / "x" / "helper", vault.bytes)
    LocalRegistry(vault.data / "registry.json").put("vault", vault.real)
    assert vault.judge(policy, "d/x/helper secret list") == "allow"  # vault's allow rule, as vault: signed


def test_an_allowed_name_on_path_with_a_pinned_tools_bytes_still_gets_its_deny_rules(vault: Vault) -> None:
    """``hub`` on PATH is allowed by name and holds vault's bytes (pinned in registry.json): the line
    calls it hub, and it is hub, but it is vault too, and vault's deny rule applies."""
    policy = vault.policy("both", deny=["Bash(vault secret delete *)"],
                          allow=[{"rule": "hub *", "minTrustLevel": "VERIFIED"}])
    vault.place(vault.world.bin / "hub", vault.bytes)
    try:
        assert vault.judge(policy, "hub secret list") == "allow"
        LocalRegistry(vault.data / "registry.json").put("vault", vault.real)
        assert vault.attack(policy, "hub secret delete -f prod") == "deny"
    finally:
        (vault.world.bin / "hub").unlink()


def test_a_tampered_registry_pin_gains_no_identity_and_no_allow(vault: Vault) -> None:
    """registry.json says vault's bytes are evil's (its digest does not match the file it records): a
    copy of evil is not vault, so vault's name-only allow rule does not let it run."""
    policy = vault.policy("tamper", allow=["Bash(vault status)"])
    evil = (vault.dir / "evil").read_bytes()
    copy = vault.place(vault.dir / "d" / "x" / "helper", evil)
    index = vault.data / "registry.json"
    index.write_text(json.dumps({"version": "2", "tools": {"vault": {
        "path": str(vault.real), "hash": f"sha256:{hashlib.sha256(evil).hexdigest()}", "source": "native"}}}))
    index.chmod(0o600)
    assert "vault" not in identity.names_of(str(copy), identity.governed_names(policy), vault.world.env["PATH"])
    assert ran(vault.world, "d/x/helper status")[0]  # evil runs
    assert vault.judge(policy, "d/x/helper status") != "allow"


@pytest.mark.parametrize("content", ['{"version": "1", "tools": {}}', "not json", '{"version": "2", "tools": []}'])
def test_a_malformed_registry_gives_no_identity_and_denies(vault: Vault, content: str) -> None:
    """A registry.json that is not RFC §4.3's shape is read as nothing for identity, and (as admission
    reads it for every program) the line is denied, never allowed."""
    policy = vault.policy("malformed", deny=["Bash(vault secret delete *)"])
    copy = vault.place(vault.dir / "d" / "x" / "helper", vault.bytes)
    index = vault.data / "registry.json"
    index.write_text(content)
    index.chmod(0o600)
    assert "vault" not in identity.names_of(str(copy), identity.governed_names(policy), vault.world.env["PATH"])
    assert vault.judge(policy, "d/x/helper secret list") == "deny"


def _verdict(vault: Vault, policy: Policy, text: str) -> tuple[str, str]:
    verdict = decide_command(HookRequest("claude-code", "Bash", text, cwd=str(vault.dir)), policy=policy,
                             options=Options(admit=AdmitOptions(audit=False, cache=False),
                                             bundle_dir=str(vault.world.bundles), path_env=vault.world.env["PATH"]))
    assert verdict is not None
    return verdict.behavior, verdict.reason


@pytest.mark.parametrize("text", ["wrap tool x", "bin/wrap tool x", "nice wrap tool x"])
def test_a_pinned_name_on_path_swapped_for_a_runners_bytes_is_not_allowed_as_that_runner(vault: Vault,
                                                                                          text: str) -> None:
    """registry.json pins ``wrap`` (the user indexed it when it was vault's bytes); the ``wrap`` on PATH
    is now a copy of env. Read as env by its bytes, it was admitted as env and the pin of the name the line
    calls it went unchecked: allowed. Admission denies a pin mismatch in every mode; so does the gate,
    naming both digests."""
    policy = vault.policy("swap")
    assert vault.judge(policy, text) == "allow"  # no registry.json: env's signed bytes, running a signed tool
    LocalRegistry(vault.data / "registry.json").put("wrap", vault.real)
    ran_as = subprocess.run(["/bin/bash", "-c", text], cwd=vault.dir, env=vault.world.env, capture_output=True,
                            text=True, timeout=60, check=False).stdout
    assert "vault" not in ran_as and ran_as.strip(), f"bash ran the pinned bytes, or nothing: {ran_as!r}"
    have = hashlib.sha256((vault.world.bin / "wrap").read_bytes()).hexdigest()
    behavior, reason = _verdict(vault, policy, text)
    assert behavior == "deny", reason
    assert f"expected sha256:{vault.hex}" in reason and f"actual sha256:{have}" in reason, reason
    LocalRegistry(vault.data / "registry.json").put("wrap", vault.world.bin / "wrap")  # indexed again: these bytes
    assert vault.judge(policy, text) == "allow"


def test_a_pin_of_the_typed_name_is_read_only_when_the_bytes_rename_it(vault: Vault,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Without registry.json, reading a renamed program costs one ``stat`` of it (identity.identify), and a
    program under its own name leaves the pin to admission."""
    policy = vault.policy("stat")
    index = str(vault.data / "registry.json")
    seen: list[str] = []
    real_stat = os.stat

    def counting(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if os.fspath(path) == index:
            seen.append(index)
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", counting)
    got = identity.identify(str(vault.world.bin / "wrap"), "wrap", identity.governed_names(policy),
                            vault.world.env["PATH"])
    assert (got.name, got.pin, len(seen)) == ("env", None, 1)
    monkeypatch.setattr(os, "stat", real_stat)
    LocalRegistry(vault.data / "registry.json").put("tool", vault.real)  # tool's pin: other bytes
    got = identity.identify(str(vault.world.bin / "tool"), "tool", identity.governed_names(policy),
                            vault.world.env["PATH"])
    assert (got.name, got.pin) == (None, None)  # not renamed: admission checks the pin (and denies)
    assert vault.judge(policy, "tool x") == "deny"


# -- identity by verified metadata --------------------------------------------------------------------

def test_a_verified_metadata_tool_reached_through_a_symlink_chain_gets_its_deny_rules(vault: Vault) -> None:
    """vault's signed metadata (tools/sha256-<hex>.json, signed by the policy's signer, bound to these
    bytes) names it: ``d/l1`` -> ``d/l2`` -> ``opt/other/svc`` is vault whatever the links say."""
    policy = vault.policy("meta", deny=["Bash(vault secret delete *)"])
    real = vault.place(vault.dir / "opt" / "other" / "svc", vault.bytes)
    (vault.dir / "d" / "l2").symlink_to(real)
    (vault.dir / "d" / "l1").symlink_to(vault.dir / "d" / "l2")
    text = "d/l1 secret delete -f prod"
    assert vault.judge(policy, text) != "deny"  # no metadata: nothing says what the bytes are
    vault.metadata()
    assert vault.attack(policy, text) == "deny"


def test_a_runner_named_by_its_verified_metadata_is_modelled_as_that_runner(vault: Vault) -> None:
    """``runner`` is allowed by name and signed; it runs its arguments (``exec "$@"``), and its verified
    metadata says it is ``env``: what it runs is admitted too, so it cannot carry ``./evil`` past the gate."""
    data = b'#!/bin/sh\nexec "$@"\n# runner\n'
    real = vault.place(vault.dir / "d" / "runner", data)
    digest = hashlib.sha256(data).hexdigest()
    bundle = vault.ts.sign_artifact(data, identity=SIGNER, issuer=ISSUER)
    (vault.world.bundles / "sha256" / f"{digest}.sigstore.json").write_text(json.dumps(bundle))
    policy = vault.policy("runner", allow=[{"rule": "runner *", "minTrustLevel": "VERIFIED"}])
    assert vault.judge(policy, "d/runner tool x") == "allow"  # as runner: its own allow rule
    assert vault.judge(policy, "d/runner ./evil") == "allow"  # what it runs is not known without more
    vault.metadata(name="env", digest=digest, options=False)
    assert real.exists() and ran(vault.world, "d/runner ./evil")[0]
    assert vault.judge(policy, "d/runner ./evil") not in ("allow", None)
    assert vault.judge(policy, "d/runner tool x") == "allow"  # env running a signed tool


def test_a_name_denied_for_its_bytes_stays_denied_when_metadata_names_them(vault: Vault) -> None:
    """registry.json pins ``helper`` to other bytes: admitted as helper, the file is drift or tampering
    (LOCAL_REGISTRY_DIGEST_MISMATCH). Its verified metadata saying it is vault does not lift that denial."""
    policy = vault.policy("pinned-name")
    vault.place(vault.dir / "d" / "helper", vault.bytes)
    vault.metadata()
    assert vault.judge(policy, "d/helper secret list") == "allow"  # vault, by its verified metadata
    index = vault.data / "registry.json"
    index.write_text(json.dumps({"version": "2", "tools": {"helper": {
        "path": str(vault.dir / "d" / "helper"), "hash": f"sha256:{'0' * 64}", "source": "native"}}}))
    index.chmod(0o600)
    assert vault.judge(policy, "d/helper secret list") == "deny"


@pytest.mark.parametrize("signer", [None, EVIL_ID])
def test_metadata_that_is_not_verified_gives_no_identity(vault: Vault, signer: str | None) -> None:
    """Unsigned, or signed by someone the policy does not name: the metadata's name is a claim, and a
    claim never says what a program is."""
    policy = vault.policy("claim", deny=["Bash(vault secret delete *)"])
    real = vault.place(vault.dir / "opt" / "other" / "svc", vault.bytes)
    (vault.dir / "d" / "l1").symlink_to(real)
    vault.metadata(signer=signer)
    assert vault.judge(policy, "d/l1 secret delete -f prod") != "deny"


def test_metadata_cannot_turn_a_deny_into_an_allow(vault: Vault) -> None:
    """``helper`` is denied by name; its bytes are vault's and vault's verified metadata names them.
    Being vault adds vault's rules; it never removes helper's deny."""
    policy = vault.policy("shed", deny=["Bash(helper *)"])
    vault.place(vault.dir / "d" / "helper", vault.bytes)
    vault.metadata()
    assert vault.attack(policy, "d/helper secret list", denied=False) == "deny"  # vault would allow it
    # An unverified shim naming an allowed program changes nothing either.
    vault.metadata(signer=None, name="tool")
    assert vault.judge(policy, "d/helper secret list") == "deny"


# -- options as the verified declaration reads them -----------------------------------------------------

@pytest.mark.parametrize("text", ["vault secret delete -f prod", "vault secret delete -yf prod",
                                  "vault secret delete --for prod", "vault -a x secret delete -f prod",
                                  "vault secret delete prod -f", "vault --address=x secret delete -fy prod"])
def test_a_declared_option_in_any_spelling_reaches_its_deny_rule(vault: Vault, text: str) -> None:
    """The deny rule says ``--force``; vault declares ``-f`` as its alias: a short alias, a cluster, an
    abbreviation, a value-taking global option before the sub-command all force-delete."""
    policy = vault.policy("force", deny=["Bash(vault secret delete --force *)"])
    vault.metadata()
    path = f"{vault.real.parent}:{vault.world.env['PATH']}"
    vault.world.env["PATH"] = path
    assert vault.attack(policy, text, path=path) == "deny"


@pytest.mark.parametrize("text", ["vault secret delete --yes prod", "vault secret delete --ye prod",
                                  "vault secret delete -fy prod"])
def test_a_rule_written_with_the_short_alias_meets_the_long_spelling(vault: Vault, text: str) -> None:
    """The rule is written ``-y``; the line says ``--yes`` (or an abbreviation, or a cluster): the rule is
    read in the declaration's spelling too."""
    policy = vault.policy("alias", deny=["Bash(vault secret delete -y *)"])
    path = f"{vault.real.parent}:{vault.world.env['PATH']}"
    vault.world.env["PATH"] = path
    vault.metadata(signer=None)
    assert vault.judge(policy, text) != "deny"  # no verified declaration: -y is not --yes
    vault.metadata()
    assert vault.attack(policy, text, denied=False, path=path) == "deny"


def test_an_undeclared_option_before_the_sub_command_is_asked(vault: Vault) -> None:
    """``--undeclared`` may take a value (then ``secret`` is its value) or not: a rule could depend on
    it, so the gate cannot prove the command."""
    policy = vault.policy("undeclared", deny=["Bash(vault secret delete --force *)"])
    vault.metadata()
    path = f"{vault.real.parent}:{vault.world.env['PATH']}"
    vault.world.env["PATH"] = path
    assert vault.attack(policy, "vault --undeclared secret delete -f prod", path=path) == "ask"
    assert vault.judge(policy, "vault secret list") == "allow"  # declared and no rule: still allowed
    assert vault.judge(policy, "vault secret delete prod") == "allow"


def test_without_a_verified_declaration_the_short_alias_is_not_known(vault: Vault) -> None:
    """The control: unsigned metadata declares nothing here, so ``-f`` is only getopt's ``-f``."""
    policy = vault.policy("control", deny=["Bash(vault secret delete --force *)"])
    vault.metadata(signer=None)
    path = f"{vault.real.parent}:{vault.world.env['PATH']}"
    vault.world.env["PATH"] = path
    assert vault.judge(policy, "vault secret delete -f prod") == "allow"
    assert vault.judge(policy, "vault secret delete --for prod") == "deny"  # getopt's abbreviation


def test_the_declaration_reads_values_aliases_and_the_sub_command_path() -> None:
    declared = Declaration.of("vault", {"commands": COMMANDS, "globalOptions": GLOBAL})
    assert declared is not None
    assert declared.readings(["vault", "-a", "secret", "secret", "delete", "-yf", "x"]) == [
        ("vault", "secret", "delete", "--address", "secret", "--yes", "--force", "x")]
    assert declared.readings(["vault", "secret", "delete", "x", "--for"]) == [
        ("vault", "secret", "delete", "--force", "x"), ("vault", "secret", "delete", "x", "--force")]
    # A value is never a sub-command; after an operand no word is one.
    assert declared.read(["vault", "-a", "secret", "list"]).path == []
    assert declared.read(["vault", "x", "secret"]).path == []
    with pytest.raises(Unprovable, match="declares its options"):
        declared.read(["vault", "--undeclared", "secret", "delete"])
    with pytest.raises(Unprovable, match="declares its options"):
        declared.read(["vault", "-y", "secret", "delete"])  # declared only below: not known here
    with pytest.raises(Unprovable):
        declared.read(["vault", "secret", "delete", "--address"])  # no value
    assert Declaration.of("x", {"commands": {"a": {"description": "a"}}}) is None


def test_rules_are_written_in_the_declarations_spelling() -> None:
    declared = Declaration.of("vault", {"commands": COMMANDS, "globalOptions": GLOBAL})
    assert declared is not None
    assert declared._rule_words("vault secret delete -f *".split(" ")) == ["vault", "secret", "delete", "--force",
                                                                          "*"]
    assert declared._rule_words("vault * -f".split(" ")) == ["vault", "*", "-f"]  # not placed: as written


def test_no_registry_json_costs_one_stat_and_no_read(vault: Vault) -> None:
    assert not (vault.data / "registry.json").exists()
    assert identity._registry() == (None, None)


def test_the_atip_repositorys_gh_example_is_read_as_it_declares() -> None:
    """The ATIP repository's own ``gh`` metadata (shared material): its declared options are read as it
    types them, and an option it does not declare (``--yes`` on ``repo delete``) is not guessed."""
    path = shared_path("reference", "atip-examples", "gh.json")
    if not path.is_file():
        pytest.skip(f"no ATIP example metadata at {where('reference', 'atip-examples', 'gh.json')}")
    declared = Declaration.of("gh", json.loads(path.read_text()))
    assert declared is not None
    assert declared.readings(["gh", "browse", "-cb", "main", "x"])[0] == (
        "gh", "browse", "--commit", "--branch", "main", "x")
    assert declared.readings(["gh", "browse", "x", "--bra=main"])[0] == ("gh", "browse", "--branch", "main", "x")
    with pytest.raises(Unprovable, match="declares its options"):
        declared.read(["gh", "repo", "delete", "--yes", "x"])
