"""What the seeds allow and the v0.6 schema is stricter about (issue 36 item 6), through
``atip-trust metadata check`` as a user runs it: duration strings with a fraction (``"1.5s"``) or a
single typical value (``"5s"``), and ``minAgentVersion: "1.0"`` (RFC v0.3's form) are accepted, the
latter with a warning; a tool-level description over 200 characters is accepted with RFC §3.2's
warning; unknown non-``x-`` keys stay refused (docs/conformance.md says why)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from verify_helpers import cli_subprocess


def _doc(**more: Any) -> dict[str, Any]:
    return {"atip": {"version": "0.6"}, "name": "t", "version": "1.0.0", "description": "T",
            "commands": {"run": {"description": "Run", "effects": {"duration": {"typical": "1-5s",
                                                                               "timeout": "60s"}}}}, **more}


def _check(tmp_path: Path, doc: dict[str, Any], *flags: str) -> Any:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    return cli_subprocess("metadata", "check", str(path), *flags)


@pytest.mark.parametrize(("typical", "timeout"), [("5s", "1.5s"), ("1.5-3s", "90s"), ("200ms", "500ms")])
def test_rfc_3_6_duration_forms_the_seeds_use_are_accepted(tmp_path: Path, typical: str, timeout: str) -> None:
    doc = _doc()
    doc["commands"]["run"]["effects"]["duration"] = {"typical": typical, "timeout": timeout}
    r = _check(tmp_path, doc)
    assert r.code == 0, r.out + r.err


@pytest.mark.parametrize("bad", ["fast", "5 s", "-1s", "1.s"])
def test_rfc_3_6_a_duration_that_is_no_duration_is_still_refused(tmp_path: Path, bad: str) -> None:
    doc = _doc()
    doc["commands"]["run"]["effects"]["duration"] = {"timeout": bad}
    assert _check(tmp_path, doc).code != 0


def test_rfc_v0_3_min_agent_version_1_0_is_accepted_with_a_warning(tmp_path: Path) -> None:
    r = _check(tmp_path, _doc(atip={"version": "0.6", "minAgentVersion": "1.0"}))
    assert r.code == 0 and "minAgentVersion '1.0'" in r.out + r.err, r.out + r.err
    assert _check(tmp_path, _doc(atip={"version": "0.6", "minAgentVersion": "1.0"}), "--strict").code != 0


def test_rfc_3_2_a_description_over_200_characters_gets_a_warning(tmp_path: Path) -> None:
    r = _check(tmp_path, _doc(description="d" * 201))
    assert r.code == 0 and "200" in r.out + r.err, r.out + r.err
    assert "200" not in _check(tmp_path, _doc(description="d" * 200)).out


def test_unknown_non_x_keys_are_refused_as_docs_conformance_lists(tmp_path: Path) -> None:
    assert _check(tmp_path, _doc(newField=1)).code != 0
    assert _check(tmp_path, _doc(**{"x-newField": 1})).code == 0
    assert "unknown non-`x-` keys" in (Path(__file__).resolve().parents[2] / "docs" / "conformance.md").read_text()
