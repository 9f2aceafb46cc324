"""docs/signed-policy.md followed as written, and `policy install --org` (policy/install.py) attacked: the
release lands where the CLI reads it (the standard org policy path, here a temporary folder standing in
for /etc/atip-trust), signed and in force, and nothing an attacker or a slip can bring (a tampered or
unsigned release, an older serial, a path out of the folder, a folder others can write, the old docs'
`policy.json`) gives an org layer that silently does not apply."""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from atip_trust.cli.main import main
from atip_trust.policy import load

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "signed-policy.md"


def steps() -> tuple[str, str, list[str]]:
    """(policy.json, policy.json.signers.json, shell lines) from the doc's step-by-step section."""
    text = DOC.read_text(encoding="utf-8").split("## Release and install it, step by step", 1)[1]
    blocks = re.findall(r"```(\w+)\n(.*?)```", text, re.S)
    jsons = [re.sub(r"^ {3}", "", b, flags=re.M) for kind, b in blocks if kind == "json"]
    (shell,) = [b for kind, b in blocks if kind == "shell"]
    return jsons[0], jsons[1], [line.strip() for line in shell.splitlines() if line.strip()]


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A machine whose standard org policy path is under ``tmp_path/etc``; its user's state and home there too."""
    etc = tmp_path / "etc" / "atip-trust"
    monkeypatch.setattr(load, "standard_org_policy_path", lambda: str(etc / "org-policy.json"))
    monkeypatch.setenv("ATIP_TRUST_POLICY_SERIALS", str(tmp_path / "serials.json"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("ATIP_TRUST_ORG_POLICY", raising=False)
    monkeypatch.delenv("ATIP_TRUST_POLICY", raising=False)
    (tmp_path / "etc").mkdir(mode=0o755)
    return etc


@pytest.fixture
def release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The admin's folder with the doc's files: policy.json, keys/org-policy.pub, the signers file, the key."""
    work = tmp_path / "release"
    (work / "keys").mkdir(parents=True)
    policy, signers, _ = steps()
    (work / "policy.json").write_text(policy)
    (work / "policy.json.signers.json").write_text(signers)
    key = ec.generate_private_key(ec.SECP256R1())
    (work / "org-policy.key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    (work / "keys" / "org-policy.pub").write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    monkeypatch.chdir(work)
    return work


def cli(line: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    words = shlex.split(line)
    if words[0] == "sudo":
        words = words[1:]  # the test runs as the user who owns the stand-in /etc
    assert words[0] == "atip-trust", line
    rc = main(words[1:])
    out = capsys.readouterr()
    return rc, out.out + out.err


def test_following_signed_policy_md_puts_a_signed_org_policy_in_force(
        machine: Path, release: Path, capsys: pytest.CaptureFixture[str]) -> None:
    *_, lines = steps()
    assert any("policy install --org" in line for line in lines)
    outputs = []
    for line in lines:
        rc, out = cli(line, capsys)
        assert rc == 0, (line, out)
        outputs.append(out)
    for name in ("org-policy.json", "org-policy.json.signers.json", "org-policy.json.sig.json",
                 "keys/org-policy.pub"):
        st = (machine / name).stat()
        assert stat.S_IMODE(st.st_mode) == 0o644 and st.st_uid == os.getuid(), name
    assert stat.S_IMODE(machine.stat().st_mode) == 0o755
    assert (machine / "org-policy.json").read_bytes() == (release / "policy.json").read_bytes()
    assert load.org_policy_paths() == [str(machine / "org-policy.json")]
    (layer,) = load.org_layers()
    assert layer.document["serial"] == 1
    doctor = outputs[-1]
    assert f"{machine / 'org-policy.json'} (the standard org policy) is read: signed" in doctor
    assert "serial 1" in doctor


def test_folders_it_creates_are_readable_by_every_user_whatever_the_umask(
        machine: Path, release: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = os.umask(0o077)
    try:
        assert sign_and_install(capsys)[0] == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE(machine.stat().st_mode) == 0o755
    assert stat.S_IMODE((machine / "keys").stat().st_mode) == 0o755
    assert stat.S_IMODE((machine / "org-policy.json").stat().st_mode) == 0o644


def test_the_old_docs_policy_json_is_named_as_not_read(machine: Path, release: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    machine.mkdir(mode=0o755)
    (machine / "policy.json").write_bytes((release / "policy.json").read_bytes())
    (machine / "policy.json.signers.json").write_text('{"publicKeys": ["keys/org-policy.pub"]}')
    rc, out = cli("atip-trust doctor", capsys)
    assert rc == 1
    assert f"{machine / 'policy.json'} is not read: the CLI reads only {machine / 'org-policy.json'}" in out
    assert "policy.json.signers.json is not read" not in out  # one line per look-alike, not per companion
    rc, out = cli("atip-trust doctor --format json", capsys)
    found = json.loads(out)
    assert found["ok"] is False and any(f["status"] == "problem" and f["area"] == "org policy"
                                        for f in found["findings"])


def sign_and_install(capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    assert cli("atip-trust policy sign policy.json --key org-policy.key", capsys)[0] == 0
    return cli("atip-trust policy install --org policy.json", capsys)


def test_a_release_changed_after_it_was_signed_is_not_installed(machine: Path, release: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    cli("atip-trust policy sign policy.json --key org-policy.key", capsys)
    (release / "policy.json").write_text(json.dumps({"version": 1, "serial": 1}))  # the deny rule dropped
    rc, out = cli("atip-trust policy install --org policy.json", capsys)
    assert rc == 2 and "changed after it was signed" in out
    assert not machine.exists()


def test_a_tampered_installed_policy_is_refused_and_doctor_says_so(machine: Path, release: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert sign_and_install(capsys)[0] == 0
    (machine / "org-policy.json").write_text(json.dumps({"version": 1, "serial": 1}))
    rc, out = cli("atip-trust doctor", capsys)
    assert rc == 1 and "is read and refused" in out and "changed after it was signed" in out


def test_an_unsigned_release_does_not_replace_a_signed_one(machine: Path, release: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert sign_and_install(capsys)[0] == 0
    before = (machine / "org-policy.json").read_bytes()
    for name in ("policy.json.signers.json", "policy.json.sig.json"):
        (release / name).unlink()
    (release / "policy.json").write_text(json.dumps({"version": 1, "serial": 2}))
    rc, out = cli("atip-trust policy install --org policy.json", capsys)
    assert rc == 2 and "requires a signed org policy" in out
    assert (machine / "org-policy.json").read_bytes() == before


def test_an_older_serial_is_refused_before_anything_is_written(machine: Path, release: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    doc = json.loads((release / "policy.json").read_text())
    (release / "policy.json").write_text(json.dumps({**doc, "serial": 5}))
    assert sign_and_install(capsys)[0] == 0
    (release / "policy.json").write_text(json.dumps({**doc, "serial": 4}))
    rc, out = sign_and_install(capsys)
    assert rc == 2 and "older than serial 5" in out
    assert json.loads((machine / "org-policy.json").read_text())["serial"] == 5


def test_a_key_path_out_of_the_release_folder_is_refused(machine: Path, release: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    (release / "policy.json.signers.json").write_text('{"publicKeys": ["../elsewhere/org-policy.pub"]}')
    rc, out = sign_and_install(capsys)
    assert rc == 2 and "outside the policy's folder" in out and not machine.exists()


def test_a_folder_others_can_write_is_refused(machine: Path, release: Path, capsys: pytest.CaptureFixture[str]) -> None:
    machine.mkdir(mode=0o755)
    machine.chmod(0o777)
    rc, out = sign_and_install(capsys)
    assert rc == 2 and "writable by group or others" in out
    assert not (machine / "org-policy.json").exists()


def test_a_stale_signature_of_an_earlier_release_is_removed(machine: Path, release: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    machine.mkdir(mode=0o755)
    (machine / "org-policy.json.sigstore.json").write_text("{}")
    assert sign_and_install(capsys)[0] == 0
    assert not (machine / "org-policy.json.sigstore.json").exists()


def test_an_unsigned_release_installs_as_an_ownership_protected_policy(machine: Path, release: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    (release / "policy.json.signers.json").unlink()
    rc, out = cli("atip-trust policy install --org policy.json --format json", capsys)
    assert rc == 0 and json.loads(out)["signed"] is False
    assert [Path(f["to"]).name for f in json.loads(out)["files"]] == ["org-policy.json"]
