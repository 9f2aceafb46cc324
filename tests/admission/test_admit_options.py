"""``admit``/``verify`` take ``Evidence`` plus one options value (admission/options.py); the keyword form
they took before still works, each keyword routed to the field of that name. Promises: an unknown
keyword is a ``TypeError`` naming it (never silently dropped: a misspelt ``bundle=`` must not admit
without evidence); keywords never leak from one call into the next (the last call's records are reused
only for equal keywords of the same types); evidence ``verify`` does not read is refused, not ignored.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from atip_trust.admission.options import AdmitOptions, VerifyOptions, split_keywords
from atip_trust.admission.verify import verify
from atip_trust.errors import UsageError
from atip_trust.evaluation.inputs import Evidence


def test_a_misspelt_keyword_is_refused_not_dropped() -> None:
    with pytest.raises(TypeError, match="admit\\(\\) got an unexpected keyword argument 'bundle'"):
        split_keywords("admit", None, None, AdmitOptions, {"bundle": ["gh.sigstore.json"]})


def test_keywords_go_to_the_field_of_their_name_and_over_the_records_given() -> None:
    ev, op = split_keywords("admit", Evidence(bundles=("a.json",)), AdmitOptions(audit=False), AdmitOptions,
                            {"signature": "a.sig", "trusted_root": "root.json"})
    assert ev == Evidence(bundles=("a.json",), signature="a.sig")
    assert op == AdmitOptions(audit=False, trusted_root="root.json")
    ev, op = split_keywords("admit", None, None, AdmitOptions, {})
    assert ev == Evidence() and op == AdmitOptions()


def test_one_calls_keywords_never_leak_into_the_next() -> None:
    first = split_keywords("admit", None, None, AdmitOptions, {"bundles": ["a.json"], "audit": False})
    assert first[0].bundles == ["a.json"] and first[1].audit is False
    other = split_keywords("admit", None, None, AdmitOptions, {"bundles": ["b.json"], "audit": False})
    assert other[0].bundles == ["b.json"]
    typed = split_keywords("admit", None, None, AdmitOptions, {"bundles": ["b.json"], "audit": 0})
    assert typed[1].audit == 0 and typed[1].audit is not False  # 0 == False, yet another call
    with_given = split_keywords("admit", Evidence(signature="s.sig"), None, AdmitOptions, {"bundles": ["b.json"]})
    assert with_given[0] == Evidence(bundles=["b.json"], signature="s.sig")


def test_verify_refuses_evidence_only_admission_reads(tmp_path: Path) -> None:
    artifact = tmp_path / "tool"
    artifact.write_bytes(b"tool")
    for field in ("vsas", "contract", "metadata_bundle", "contract_bundle"):
        value = [str(tmp_path / "x")] if field == "vsas" else str(tmp_path / "x")
        with pytest.raises(UsageError, match=f"verify does not read evidence.{field}"):
            verify(artifact, evidence=Evidence(**{field: value}), options=VerifyOptions(cache=False))
