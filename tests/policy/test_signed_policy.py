"""Signed org policies (issue 25 item 4): where a signers file sits beside the org policy, the policy must
carry a signature by one of its keys over its exact bytes, checked before it is composed, and its
``serial`` may never go back below the highest this machine accepted. Real keys, real files, the CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from verify_helpers import cli, cli_subprocess


def _keys(d: Path, name: str, key: Any) -> tuple[Path, Path]:
    priv, pub = d / f"{name}.key", d / f"{name}.pub"
    priv.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    pub.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                  serialization.PublicFormat.SubjectPublicKeyInfo))
    return priv, pub


@pytest.fixture()
def org(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    etc = tmp_path / "etc"
    etc.mkdir()
    org_key, org_pub = _keys(etc, "org", ec.generate_private_key(ec.SECP256R1()))
    rogue_key, _ = _keys(tmp_path, "rogue", ed25519.Ed25519PrivateKey.generate())
    policy = etc / "policy.json"
    tool = tmp_path / "tool"
    tool.write_text("#!/bin/sh\necho hi\n")
    tool.chmod(0o755)
    monkeypatch.setenv("ATIP_TRUST_ORG_POLICY", str(policy))
    monkeypatch.setenv("ATIP_TRUST_POLICY_SERIALS", str(tmp_path / "state" / "serials.json"))
    return {"etc": etc, "policy": policy, "org_key": org_key, "org_pub": org_pub, "rogue_key": rogue_key,
            "tool": tool, "signers": etc / "policy.json.signers.json"}


def write_policy(org: dict[str, Path], serial: int | None, *, sign_with: Path | None = None) -> None:
    doc: dict[str, Any] = {"version": 1, "name": "org", "requirements": {"minTrustLevel": "UNSIGNED"}}
    if serial is not None:
        doc["serial"] = serial
    org["policy"].write_text(json.dumps(doc))
    org["policy"].chmod(0o644)
    if sign_with is not None:
        r = cli("policy", "sign", str(org["policy"]), "--key", str(sign_with))
        assert r.code == 0, r.err


def require_signature(org: dict[str, Path]) -> None:
    org["signers"].write_text(json.dumps({"publicKeys": ["org.pub"]}))
    org["signers"].chmod(0o644)


def admit(org: dict[str, Path]) -> Any:
    return cli("admit", str(org["tool"]), "--command", "status", "--non-interactive", "--no-audit",
               "--no-cache", "--format", "json")


def test_unsigned_org_policy_without_a_signers_file_loads_as_before(org) -> None:
    write_policy(org, None)
    assert admit(org).code in (0, 1)


def test_signed_org_policy_by_a_listed_signer_is_applied(org) -> None:
    write_policy(org, 1, sign_with=org["org_key"])
    require_signature(org)
    r = admit(org)
    assert r.code in (0, 1), r.err
    assert (org["etc"] / "policy.json.sig.json").is_file()


def test_tampered_signed_policy_is_refused(org) -> None:
    write_policy(org, 1, sign_with=org["org_key"])
    require_signature(org)
    doc = json.loads(org["policy"].read_text())
    doc["requirements"]["minTrustLevel"] = "COMPROMISED"  # loosened after signing
    org["policy"].write_text(json.dumps(doc))
    r = admit(org)
    assert r.code == 2 and "changed after it was signed" in r.json["decision"]["reasons"][0]["message"]


def test_policy_signed_by_an_unlisted_signer_is_refused(org) -> None:
    write_policy(org, 1, sign_with=org["rogue_key"])
    require_signature(org)
    r = admit(org)
    assert r.code == 2 and "not signed by a key" in r.json["decision"]["reasons"][0]["message"]


def test_required_signature_missing_is_refused(org) -> None:
    write_policy(org, 1)
    require_signature(org)
    r = admit(org)
    assert r.code == 2 and "has no signature" in r.json["decision"]["reasons"][0]["message"]


def test_rollback_to_an_older_serial_is_refused(org) -> None:
    require_signature(org)
    write_policy(org, 5, sign_with=org["org_key"])
    assert admit(org).code in (0, 1)  # serial 5 accepted and remembered
    write_policy(org, 4, sign_with=org["org_key"])  # an older release, validly signed
    r = admit(org)
    assert r.code == 2 and "rollback" in r.json["decision"]["reasons"][0]["message"]
    write_policy(org, 5, sign_with=org["org_key"])  # the same serial again is fine
    assert admit(org).code in (0, 1)
    write_policy(org, 6, sign_with=org["org_key"])
    assert admit(org).code in (0, 1)
    write_policy(org, 5, sign_with=org["org_key"])
    assert admit(org).code == 2


def test_signers_file_writable_by_others_is_refused(org) -> None:
    write_policy(org, 1, sign_with=org["org_key"])
    require_signature(org)
    org["signers"].chmod(0o666)
    assert admit(org).code == 2


# --- keyless: a Sigstore identity signs the org policy (a Sigstore bundle beside it) ---------------------

ORG_ID = "https://github.com/example-org/policy/.github/workflows/release.yml@refs/heads/main"
ISSUER = "https://token.actions.githubusercontent.com"


@pytest.fixture(scope="module")
def sigstore() -> Any:
    import testsigstore

    return testsigstore.TestSigstore(seed=2502)


def require_identity(org: dict[str, Path], ts: Any, **rule: str) -> None:
    ts.write_trusted_root(org["etc"] / "trusted_root.json")
    org["signers"].write_text(json.dumps({"identities": [rule or {"identity": ORG_ID, "issuer": ISSUER}],
                                          "trustedRoot": "trusted_root.json"}))
    org["signers"].chmod(0o644)


def sign_keyless(org: dict[str, Path], ts: Any, identity: str = ORG_ID, **kw: Any) -> None:
    """The policy's bundle, minted by the local test Sigstore as ``cosign sign-blob --bundle`` would."""
    import time

    bundle = ts.sign_artifact(org["policy"].read_bytes(), identity=identity, issuer=ISSUER,
                              integrated_time=int(time.time()) - 60, **kw)
    (org["etc"] / "policy.json.sigstore.json").write_text(json.dumps(bundle))


def reason(r: Any) -> str:
    return str(r.json["decision"]["reasons"][0]["message"])


def test_keyless_signed_policy_by_a_listed_identity_is_applied(org, sigstore) -> None:
    write_policy(org, 1)
    sign_keyless(org, sigstore)
    require_identity(org, sigstore)
    r = admit(org)
    assert r.code in (0, 1), r.err


def test_keyless_signed_policy_matches_an_identity_regexp_whole(org, sigstore) -> None:
    write_policy(org, 1)
    sign_keyless(org, sigstore)
    require_identity(org, sigstore, identityRegexp=r"https://github\.com/example-org/policy/.+", issuer=ISSUER)
    assert admit(org).code in (0, 1)
    require_identity(org, sigstore, identityRegexp=r"https://github\.com/example-org/policy", issuer=ISSUER)
    assert admit(org).code == 2  # a prefix is not the whole identity


def test_tampered_keyless_signed_policy_is_refused(org, sigstore) -> None:
    write_policy(org, 1)
    sign_keyless(org, sigstore)
    require_identity(org, sigstore)
    doc = json.loads(org["policy"].read_text())
    doc["requirements"]["minTrustLevel"] = "COMPROMISED"  # loosened after signing
    org["policy"].write_text(json.dumps(doc))
    r = admit(org)
    assert r.code == 2 and "changed after it was signed" in reason(r), reason(r)


def test_policy_signed_keylessly_by_another_identity_is_refused(org, sigstore) -> None:
    other = "https://github.com/evil-org/policy/.github/workflows/release.yml@refs/heads/main"
    write_policy(org, 1)
    sign_keyless(org, sigstore, identity=other)
    require_identity(org, sigstore)
    r = admit(org)
    assert r.code == 2 and other in reason(r) and "not an identity" in reason(r), reason(r)


def test_keyless_policy_signature_from_outside_the_trusted_root_is_refused(org, sigstore) -> None:
    """The listed identity, but a certificate from a CA the signers file's trusted root does not hold."""
    write_policy(org, 1)
    sign_keyless(org, sigstore, mutate="certificate")
    require_identity(org, sigstore)
    r = admit(org)
    assert r.code == 2 and "does not verify" in reason(r), reason(r)


def test_keyless_rollback_to_an_older_serial_is_refused(org, sigstore) -> None:
    require_identity(org, sigstore)
    write_policy(org, 7)
    sign_keyless(org, sigstore)
    assert admit(org).code in (0, 1)
    write_policy(org, 6)  # an older release, validly signed by the listed identity
    sign_keyless(org, sigstore)
    r = admit(org)
    assert r.code == 2 and "rollback" in reason(r)


def test_key_signature_does_not_satisfy_a_signers_file_naming_only_identities(org, sigstore) -> None:
    write_policy(org, 1, sign_with=org["org_key"])
    require_identity(org, sigstore)
    r = admit(org)
    assert r.code == 2 and "names no key" in reason(r), reason(r)


@pytest.mark.parametrize("signers, needle", [
    ({"identities": [{"identity": ORG_ID}]}, "issuer"),
    ({"identities": [{"identityRegexp": "(", "issuer": ISSUER}]}, "regular expression"),
    ({"identities": [{"identity": ORG_ID, "issuer": ISSUER, "aud": "x"}]}, "aud"),
    ({"identities": []}, "names no signer"),
])
def test_malformed_identity_signers_file_is_refused(org, sigstore, signers, needle) -> None:
    write_policy(org, 1)
    sign_keyless(org, sigstore)
    org["signers"].write_text(json.dumps(signers))
    org["signers"].chmod(0o644)
    r = admit(org)
    assert r.code == 2 and needle in reason(r), reason(r)


def test_keyless_signers_trusted_root_writable_by_others_is_refused(org, sigstore) -> None:
    """Whoever can rewrite the trusted root the signers file names could add their own CA and sign as
    the listed identity: it gets the signers file's ownership and mode checks."""
    write_policy(org, 1)
    sign_keyless(org, sigstore)
    require_identity(org, sigstore)
    (org["etc"] / "trusted_root.json").chmod(0o666)
    r = admit(org)
    assert r.code == 2 and "trusted root" in reason(r), reason(r)


# --- attacks on what the signature check itself trusts (red team) -----------------------------------

def _rogue_pub(org: dict[str, Path]) -> bytes:
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    key = load_pem_private_key(org["rogue_key"].read_bytes(), None)
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo)


def test_attack_a_signers_public_key_writable_by_others_is_swapped_for_the_attackers(org) -> None:
    """The signers file is root-owned, but the key it names is world-writable: whoever rewrites the key
    signs any policy. It gets the signers file's ownership and mode checks (as its trusted root does)."""
    write_policy(org, 1, sign_with=org["rogue_key"])  # a loosened policy, signed by the attacker
    require_signature(org)
    org["org_pub"].write_bytes(_rogue_pub(org))
    org["org_pub"].chmod(0o666)
    r = admit(org)
    assert r.code == 2 and "public key" in reason(r), r.out + r.err


def test_attack_a_signers_public_key_that_is_a_symlink_elsewhere_is_refused(org, tmp_path: Path) -> None:
    """``keys/org.pub`` a link to a file outside the root-owned folder (the attacker's): refused, not
    followed, as the signers file and its trusted root are."""
    write_policy(org, 1, sign_with=org["rogue_key"])
    require_signature(org)
    theirs = tmp_path / "attacker.pub"
    theirs.write_bytes(_rogue_pub(org))
    org["org_pub"].unlink()
    org["org_pub"].symlink_to(theirs)
    r = admit(org)
    assert r.code == 2 and "public key" in reason(r), r.out + r.err


def _serials(org: dict[str, Path]) -> Path:
    return org["etc"].parent / "state" / "serials.json"


def test_attack_a_serial_store_writable_by_others_is_lowered_to_roll_back(org) -> None:
    """Whoever can write the high-water mark can lower it and bring back an older signed release: a
    store group or others can write vouches for no serial (fail closed)."""
    require_signature(org)
    write_policy(org, 5, sign_with=org["org_key"])
    assert admit(org).code in (0, 1)
    store = _serials(org)
    store.write_text(json.dumps({k: 0 for k in json.loads(store.read_text())}))
    store.chmod(0o666)
    write_policy(org, 4, sign_with=org["org_key"])
    r = admit(org)
    assert r.code == 2 and "serials" in reason(r), r.out + r.err


def test_attack_a_serial_store_entry_that_is_not_an_integer_is_not_read_as_zero(org) -> None:
    require_signature(org)
    write_policy(org, 5, sign_with=org["org_key"])
    assert admit(org).code in (0, 1)
    store = _serials(org)
    store.write_text(json.dumps({k: "5" for k in json.loads(store.read_text())}))
    write_policy(org, 4, sign_with=org["org_key"])
    r = admit(org)
    assert r.code == 2 and "serials" in reason(r), r.out + r.err


@pytest.mark.parametrize("damage", ["{", "[5]"], ids=["not JSON", "not an object"])
def test_attack_a_damaged_serial_store_fails_closed(org, damage: str) -> None:
    require_signature(org)
    write_policy(org, 5, sign_with=org["org_key"])
    assert admit(org).code in (0, 1)
    _serials(org).write_text(damage)
    write_policy(org, 4, sign_with=org["org_key"])
    r = admit(org)
    assert r.code == 2 and "serials" in reason(r), r.out + r.err


def test_attack_a_serial_store_that_is_a_symlink_is_refused(org, tmp_path: Path) -> None:
    require_signature(org)
    write_policy(org, 5, sign_with=org["org_key"])
    assert admit(org).code in (0, 1)
    store = _serials(org)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({k: 0 for k in json.loads(store.read_text())}))
    store.unlink()
    store.symlink_to(elsewhere)
    write_policy(org, 4, sign_with=org["org_key"])
    r = admit(org)
    assert r.code == 2 and "serials" in reason(r), r.out + r.err


def test_attack_a_serial_store_that_cannot_be_looked_up_is_not_a_first_use(org, tmp_path: Path) -> None:
    """Rollback by making the high-water mark unanswerable rather than lower: a folder on its path
    that cannot be searched (as root, a symlink loop). "Cannot tell" must not read as "no mark yet",
    which would accept an older signed release as a first use."""
    require_signature(org)
    write_policy(org, 5, sign_with=org["org_key"])
    assert admit(org).code in (0, 1)
    state = _serials(org).parent
    state.rename(state.with_name("state-real"))
    state.symlink_to(state.name)  # state -> state: a loop
    write_policy(org, 4, sign_with=org["org_key"])
    r = admit(org)
    assert r.code == 2 and "serials" in reason(r), r.out + r.err


# --- issue 33 item 3: once signed, always signed; the mark is kept per logical path -------------------

def test_attack_deleting_the_signers_and_signature_files_does_not_turn_signing_off(org) -> None:
    """Serial 7 accepted signed; then both files beside it are deleted and a looser, unsigned policy put
    in its place: the path was signed before, so it must stay signed (naming what is missing)."""
    require_signature(org)
    write_policy(org, 7, sign_with=org["org_key"])
    assert admit(org).code in (0, 1)
    org["signers"].unlink()
    (org["etc"] / "policy.json.sig.json").unlink()
    write_policy(org, 8)  # unsigned, and free to say anything
    r = admit(org)
    assert r.code == 2, r.out + r.err
    assert "must stay signed" in reason(r) and "policy.json.signers.json is missing" in reason(r)


def test_attack_deleting_only_the_signature_is_refused_naming_it(org) -> None:
    require_signature(org)
    write_policy(org, 7, sign_with=org["org_key"])
    assert admit(org).code in (0, 1)
    (org["etc"] / "policy.json.sig.json").unlink()
    r = admit(org)
    assert r.code == 2 and "policy.json.sig.json" in reason(r), r.out + r.err


def test_a_path_never_signed_stays_unsigned_after_another_path_was_signed(org, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The mark is per path: signing one org policy does not require every other to be signed."""
    require_signature(org)
    write_policy(org, 7, sign_with=org["org_key"])
    assert admit(org).code in (0, 1)
    other = tmp_path / "other-org.json"
    other.write_text(json.dumps({"version": 1, "name": "other", "requirements": {"minTrustLevel": "UNSIGNED"}}))
    monkeypatch.setenv("ATIP_TRUST_ORG_POLICY", str(other))
    assert admit(org).code in (0, 1)


def test_attack_switching_a_release_link_to_an_older_release_is_a_rollback(org, monkeypatch: pytest.MonkeyPatch) -> None:
    """``current -> releases/v7`` switched to ``releases/v3``: both validly signed, both at the same
    logical path. Keyed by the real path, release 3 would be a first use; keyed by the path the machine
    names, it is a rollback."""
    etc = org["etc"]
    for serial in (3, 7):
        rel = etc / "releases" / f"v{serial}"
        rel.mkdir(parents=True)
        (rel / "org.pub").write_bytes(org["org_pub"].read_bytes())
        doc = {"version": 1, "name": "org", "serial": serial, "requirements": {"minTrustLevel": "UNSIGNED"}}
        (rel / "policy.json").write_text(json.dumps(doc))
        (rel / "policy.json.signers.json").write_text(json.dumps({"publicKeys": ["org.pub"]}))
        assert cli("policy", "sign", str(rel / "policy.json"), "--key", str(org["org_key"])).code == 0
    current = etc / "current"
    current.symlink_to("releases/v7")
    monkeypatch.setenv("ATIP_TRUST_ORG_POLICY", str(current / "policy.json"))
    assert admit(org).code in (0, 1)
    current.unlink()
    current.symlink_to("releases/v3")
    r = admit(org)
    assert r.code == 2 and "rollback" in reason(r), r.out + r.err


def test_a_serial_store_keyed_by_real_path_still_guards(org) -> None:
    """A store an earlier version wrote (keyed by the real path) keeps its marks."""
    require_signature(org)
    _serials(org).parent.mkdir(parents=True, exist_ok=True)
    _serials(org).write_text(json.dumps({str(org["policy"].resolve()): 9}))
    write_policy(org, 4, sign_with=org["org_key"])
    r = admit(org)
    assert r.code == 2 and "rollback" in reason(r), r.out + r.err


def test_an_unwritable_serial_store_is_a_clear_refusal_and_the_old_store_stays(org) -> None:
    """The serial store's folder taken by a file: the policy is refused naming the store (exit 2, no
    internal error), and a later run with the folder back still has the earlier mark."""
    require_signature(org)
    write_policy(org, 5, sign_with=org["org_key"])
    assert admit(org).code in (0, 1)
    store = _serials(org)
    store.write_text(json.dumps({str(org["policy"]): 5, "/pad/" + "x" * 200: 1}))
    before = store.read_bytes()
    write_policy(org, 6, sign_with=org["org_key"])
    r = cli_subprocess("admit", str(org["tool"]), "--command", "status", "--non-interactive", "--no-audit",
                       "--no-cache", "--format", "json", env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
                       max_file_bytes=64)  # the new store cannot be written: a full disk
    assert r.code == 2 and "cannot record org policy serial 6" in r.out + r.err, r.out + r.err
    assert "internal error" not in r.out + r.err and store.read_bytes() == before
    assert [p.name for p in store.parent.iterdir()] == [store.name]  # no temporary file left behind
    assert admit(org).code in (0, 1)  # and the store still serves


def test_policy_sign_into_a_full_disk_is_a_clear_error_and_keeps_the_old_signature(org) -> None:
    write_policy(org, 1, sign_with=org["org_key"])
    sig = org["etc"] / "policy.json.sig.json"
    before = sig.read_bytes()
    write_policy(org, 2)
    r = cli_subprocess("policy", "sign", str(org["policy"]), "--key", str(org["org_key"]),
                       env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}, max_file_bytes=16)
    assert r.code == 2 and "cannot write the policy signature" in r.err, r.out + r.err
    assert "internal error" not in r.err and sig.read_bytes() == before


def test_policy_sign_where_the_signature_cannot_be_placed_is_a_clear_error(org) -> None:
    """A folder where the signature file goes (stops root too, as a read-only folder stops a user)."""
    write_policy(org, 1)
    (org["etc"] / "policy.json.sig.json").mkdir()
    r = cli("policy", "sign", str(org["policy"]), "--key", str(org["org_key"]))
    assert r.code == 2 and "cannot write the policy signature" in r.err, r.err
    assert "internal error" not in r.err
    assert not [p for p in org["etc"].iterdir() if p.name.startswith(".tmp-")]


def test_attack_deleting_the_signed_standard_org_policy_does_not_leave_no_org_policy(
        org, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The standard path (/etc/atip-trust/org-policy.json) held a signed policy this machine accepted;
    deleting it with its signature files would leave only the local policy in force: refused instead,
    naming the missing file (to retire it on purpose, remove its mark from the serial store)."""
    from atip_trust.policy import load

    monkeypatch.delenv("ATIP_TRUST_ORG_POLICY")
    monkeypatch.setattr(load, "standard_org_policy_path", lambda: str(org["policy"]))
    require_signature(org)
    write_policy(org, 3, sign_with=org["org_key"])
    assert admit(org).code in (0, 1)
    for name in ("policy.json", "policy.json.signers.json", "policy.json.sig.json"):
        (org["etc"] / name).unlink()
    r = admit(org)
    assert r.code == 2 and "must stay signed" in r.out + r.err and str(org["policy"]) in r.out + r.err, r.out + r.err
    _serials(org).write_text("{}")  # retired on purpose: no org policy, as on any machine without one
    assert admit(org).code in (0, 1)
