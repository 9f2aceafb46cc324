"""Attack: a stale verdict served for other evidence. The verdict cache hands back a trust report
computed before; if any input the report depends on were missing from its key, an admission or
verification given other evidence or other options would be answered with the report reached for
the first ones (a forged bundle judged by the verdict of a genuine one, a staging root by the
production root's).

The key is made in one place (admission/verdict_key.py ``verdict_key``) from ``Evidence``, the
options value (``AdmitOptions`` / ``VerifyOptions``, admission/options.py) and the fixed inputs
(subject, policy digest, trusted root digest, constraints, key files, atip-trust's version). These
tests walk the records' own field lists (``Record._fields``), so a field added later is checked
without editing them: each field is changed alone and the key must change — on disk (``hex``) and
in this process's memory (``memo``) — unless the field is in its class's commented ``NOT_IN_KEY``
list (or ``EVIDENCE_NOT_IN_KEY``), which says why it cannot change the cached report; those must
leave the key alone (the list is what the key does, not a wish).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from atip_trust._base.record import Record, replace
from atip_trust.admission import verdict_key as verdict_key_mod
from atip_trust.admission.options import EVIDENCE_NOT_IN_KEY, AdmitOptions, VerifyOptions
from atip_trust.admission.verdict_key import ReportKey, verdict_key
from atip_trust.evaluation.inputs import Constraints, Evidence
from atip_trust.facts.digest import Digest


def _file(where: Path, name: str, body: bytes) -> str:
    path = where / name
    path.write_bytes(body)
    return str(path)


@pytest.fixture()
def files(tmp_path: Path) -> Callable[[str, bytes], str]:
    return lambda name, body: _file(tmp_path, name, body)


def _key(evidence: Evidence, options: AdmitOptions | VerifyOptions, **fixed: Any) -> ReportKey:
    args: dict[str, Any] = {
        "kind": "admit", "subject_path": "/usr/bin/tool",
        "digests": {"sha256": Digest.parse("sha256:" + "a" * 64)},
        "policy": "sha256:" + "b" * 64, "trusted_root": "sha256:" + "c" * 64, "constraints": "Constraints()",
        "key_files": (), "subject_name": "tool", "metadata_read": None,
    }
    args.update(fixed)
    key = verdict_key(args.pop("kind"), args.pop("subject_path"), args.pop("digests"), evidence, options, **args)
    assert key is not None, "every file given exists: a key is made"
    return key


def _assert_differ(a: ReportKey, b: ReportKey, what: str) -> None:
    assert a.memo != b.memo, f"{what} changed, and this process's memory of the verdict would be served"
    assert a.hex != b.hex, f"{what} changed, and the verdict on disk would be served"


def _assert_same(a: ReportKey, b: ReportKey, what: str) -> None:
    assert a.memo == b.memo and a.hex == b.hex, f"{what} is listed as not in the key, yet changes it"


def _evidence_changes(files: Callable[[str, bytes], str]) -> tuple[Evidence, dict[str, Any]]:
    """A base ``Evidence`` with every field set, and for each field another value."""
    base = Evidence(
        bundles=(files("a.sigstore.json", b"bundle a"),), signature=files("a.sig", b"sig a"),
        certificate=files("a.pem", b"cert a"), metadata=files("a.json", b"{}"),
        metadata_bundle=files("a.json.bundle", b"meta bundle a"), contract=files("TOOL.md", b"contract"),
        contract_bundle=files("TOOL.md.bundle", b"contract bundle"), vsas=(files("a.vsa.jsonl", b"vsa"),),
    )
    other = {
        "bundles": (files("b.sigstore.json", b"bundle b"),),
        "signature": files("b.sig", b"sig b"),
        "certificate": files("b.pem", b"cert b"),
        "metadata": files("b.json", b'{"b": 1}'),
        "metadata_bundle": files("b.json.bundle", b"meta bundle b"),
        "contract": files("OTHER_TOOL", b"other contract"),
        "contract_bundle": files("OTHER_TOOL.bundle", b"other contract bundle"),
        "vsas": (files("b.vsa.jsonl", b"other vsa"),),
    }
    return base, other


#: For each options field, another value (the base is the field's default).
OPTION_CHANGES: Mapping[type[Record], Mapping[str, Any]] = {
    AdmitOptions: {
        "name": "other-name", "keys": ("/keys/other.pem",), "shim_dir": "/shims", "trusted_root": "/roots/staging.json",
        "staging": True, "fetch": True, "interactive": True, "audit": False, "audit_log": "/var/log/atip.jsonl",
        "defer_audit": True, "cache": False, "agent_tools": False, "registry_pin": False,
    },
    VerifyOptions: {
        "constraints": Constraints(builder_id="https://example.com/other-builder"),
        "trusted_root": "/roots/staging.json", "staging": True, "fetch": True, "cache": False,
        "shared_with": ("sha256:" + "d" * 64,),
    },
}


def test_a_stale_verdict_is_not_served_for_other_evidence(files: Callable[[str, bytes], str]) -> None:
    base, other = _evidence_changes(files)
    assert set(other) == set(Evidence._fields), (
        f"Evidence fields without a changed value here: {set(Evidence._fields) - set(other)}: add one, "
        "and check the key reads the new field")
    for options in (AdmitOptions(), VerifyOptions()):
        before = _key(base, options)
        for name in Evidence._fields:
            after = _key(replace(base, **{name: other[name]}), options)
            if name in EVIDENCE_NOT_IN_KEY:
                _assert_same(before, after, f"evidence.{name}")
            else:
                _assert_differ(before, after, f"evidence.{name}")


def test_a_stale_verdict_is_not_served_for_the_same_evidence_path_with_other_bytes(
        files: Callable[[str, bytes], str]) -> None:
    """The evidence files are keyed by content, not by path alone: a bundle rewritten in place (a
    different length, so the stat fast path sees it at once) is other evidence."""
    base, _ = _evidence_changes(files)
    for name in Evidence._fields:
        if name in EVIDENCE_NOT_IN_KEY:
            continue
        before = _key(base, AdmitOptions())
        value = getattr(base, name)
        path = Path(value[0] if isinstance(value, tuple) else value)
        path.write_bytes(path.read_bytes() + b" and then rewritten")
        _assert_differ(before, _key(base, AdmitOptions()), f"the bytes of evidence.{name}")


@pytest.mark.parametrize("options_class", [AdmitOptions, VerifyOptions])
def test_a_stale_verdict_is_not_served_for_other_options(
        options_class: type[AdmitOptions] | type[VerifyOptions], files: Callable[[str, bytes], str]) -> None:
    changes = OPTION_CHANGES[options_class]
    assert set(changes) == set(options_class._fields), (
        f"{options_class.__name__} fields without a changed value here: "
        f"{set(options_class._fields) - set(changes)}: add one, and check the key reads the new field")
    assert set(options_class.NOT_IN_KEY) <= set(options_class._fields), "NOT_IN_KEY names no such field"
    evidence = Evidence(bundles=(files("a.sigstore.json", b"bundle a"),))
    before = _key(evidence, options_class())
    for name in options_class._fields:
        after = _key(evidence, replace(options_class(), **{name: changes[name]}))
        if name in options_class.NOT_IN_KEY:
            _assert_same(before, after, f"options.{name}")
        else:
            _assert_differ(before, after, f"options.{name}")


def test_a_stale_verdict_is_not_served_for_another_subject_policy_root_or_version(
        files: Callable[[str, bytes], str], monkeypatch: pytest.MonkeyPatch) -> None:
    evidence = Evidence(bundles=(files("a.sigstore.json", b"bundle a"),))
    before = _key(evidence, AdmitOptions())
    fixed: dict[str, Any] = {
        "kind": "verify", "subject_path": "/usr/local/bin/tool",
        "digests": {"sha256": Digest.parse("sha256:" + "d" * 64)},
        "policy": "sha256:" + "e" * 64, "trusted_root": "sha256:" + "f" * 64,
        "constraints": "Constraints(builder_id='x')", "key_files": (files("k.pem", b"key"),),
        "subject_name": "other-name",
    }
    for name, value in fixed.items():
        _assert_differ(before, _key(evidence, AdmitOptions(), **{name: value}), name)
    # The same key file with other bytes is another key (the policy's digest names its path only).
    with_key = _key(evidence, AdmitOptions(), key_files=(fixed["key_files"][0],))
    Path(fixed["key_files"][0]).write_bytes(b"another key, longer")
    _assert_differ(with_key, _key(evidence, AdmitOptions(), key_files=(fixed["key_files"][0],)), "a key file's bytes")
    monkeypatch.setattr(verdict_key_mod, "__version__", "999.0.0")
    _assert_differ(before, _key(evidence, AdmitOptions()), "atip-trust's version")


def test_a_stale_verdict_is_not_served_for_other_metadata_as_read(files: Callable[[str, bytes], str]) -> None:
    """``admit`` keys the metadata by what it read (admission/admit.py ``_step_verify``): where it was
    found, whether as a shim by digest, the sha256 of the bytes decided on, its source name and the
    bundle read beside it. Each one changed alone is another key."""
    evidence = Evidence(bundles=(files("a.sigstore.json", b"bundle a"),))
    read: tuple[Any, ...] = ("/m/a.json", False, "sha256:" + "1" * 64, "a.json",
                             (("/m/a.json.bundle", "sha256:" + "2" * 64),))
    others: tuple[Any, ...] = ("/m/b.json", True, "sha256:" + "3" * 64, "b.json",
                               (("/m/b.json.bundle", "sha256:" + "4" * 64),))
    before = _key(evidence, AdmitOptions(), metadata_read=read)
    for i, value in enumerate(others):
        changed = read[:i] + (value,) + read[i + 1:]
        _assert_differ(before, _key(evidence, AdmitOptions(), metadata_read=changed), f"metadata as read [{i}]")


def test_unreadable_evidence_makes_no_key(tmp_path: Path) -> None:
    """Evidence that cannot be read is evaluated, and reported, every time: there is no key to serve."""
    missing = str(tmp_path / "missing.sigstore.json")
    got = verdict_key("admit", "/usr/bin/tool", {}, Evidence(bundles=(missing,)), AdmitOptions(), policy=None,
                      trusted_root="sha256:" + "c" * 64, constraints="Constraints()", key_files=())
    assert got is None
