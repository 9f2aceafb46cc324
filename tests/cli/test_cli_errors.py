"""Nothing unmapped escapes: every dependency error becomes an ``AtipTrustError`` at its boundary, and
every bad input to every subcommand exits 2 with one line and no traceback (docs/architecture.md practice 4;
docs/contract.md exit codes).

The CLI's one catch point also turns an *unmapped* exception into exit 2, so exit 2 alone does not
prove mapping: these tests also require that the message is not main()'s "internal error".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from atip_trust.cli.main import main
from atip_trust.errors import (
    ArtifactAccessError,
    AtipTrustError,
    InputTooLargeError,
    MetadataError,
    NotARegularFileError,
)
from atip_trust.facts.artifact import Artifact
from atip_trust.facts.digest import hash_fd
from atip_trust.facts.metadata import load_metadata, parse_metadata

from conftest import examples
from make_metadata_fixtures import VALID

CLI = [sys.executable, "-m", "atip_trust"]
FUZZ = settings(
    max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as d:
        yield Path(d)


def assert_mapped_failure(rc: int, err: str) -> None:
    assert rc == 2, err
    assert "Traceback" not in err
    assert "internal error" not in err, err
    lines = err.splitlines()
    assert len(lines) >= 1 and all(line.startswith("atip-trust: error: ") for line in lines), err


# Every subcommand with bad inputs -------------------------------------------------------------


def bad_paths(tmp: Path) -> dict[str, str]:
    fifo = tmp / "fifo"
    if not fifo.exists():
        os.mkfifo(fifo)
    return {
        "missing": str(tmp / "missing"),
        "directory": str(tmp),
        "fifo": str(fifo),
        "device": "/dev/null",
        "nul-byte": str(tmp / "a\x00b"),
        "lone-surrogate": str(tmp / "\ud800"),
        "newline": str(tmp / "x\ny"),
        "empty-name": "",
    }


@pytest.mark.parametrize("argv", [["hash"], ["metadata", "check"]], ids=" ".join)
@pytest.mark.parametrize(
    "which", ["missing", "directory", "fifo", "device", "nul-byte", "lone-surrogate", "newline", "empty-name"]
)
def test_bad_paths_exit_2_with_one_line(
    argv: list[str], which: str, scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = bad_paths(scratch)[which]
    rc = main([*argv, path])
    cap = capsys.readouterr()
    assert_mapped_failure(rc, cap.err)
    assert len(cap.err.splitlines()) == 1


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["no-such-command"],
        ["hash"],
        ["hash", "--algorithm", "md5", "x"],
        ["metadata"],
        ["metadata", "check"],
        ["metadata", "frobnicate", "x"],
        ["metadata", "check", "x", "--digest", "sha256:00"],
        ["hash", "--format", "xml", "x"],
    ],
    ids=lambda a: " ".join(a) or "(nothing)",
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(argv)
    cap = capsys.readouterr()
    assert rc == 2
    assert "Traceback" not in cap.err and "internal error" not in cap.err


@pytest.mark.parametrize("fmt", ["json", "sarif"])
@pytest.mark.parametrize("argv", [["hash"], ["metadata", "check"]], ids=" ".join)
def test_machine_formats_still_print_one_json_document(
    fmt: str, argv: list[str], scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main([*argv, "--format", fmt, str(scratch / "missing")])
    cap = capsys.readouterr()
    assert_mapped_failure(rc, cap.err)
    json.loads(cap.out)


@FUZZ
@given(data=st.binary(max_size=2048))
def test_random_bytes_as_metadata_file_exit_2(
    data: bytes, scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = scratch / "fuzz.json"
    f.write_bytes(data)
    rc = main(["metadata", "check", str(f)])
    cap = capsys.readouterr()
    assert_mapped_failure(rc, cap.err)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
#: Places in a valid document where a random value is grafted (one mutation each).
GRAFT_POINTS: list[tuple[str | int, ...]] = [
    ("atip",),
    ("name",),
    ("trust",),
    ("trust", "integrity"),
    ("trust", "integrity", "signature"),
    ("trust", "provenance"),
    ("trust", "provenance", "slsaLevel"),
    ("binary",),
    ("binary", "hash"),
    ("commands",),
    ("commands", ""),
    ("commands", "", "effects"),
    ("commands", "", "options"),
    ("commands", "", "arguments", 0),
    ("effects",),
    ("x-ext",),
]


@FUZZ
@given(point=st.sampled_from(GRAFT_POINTS), value=JSON)
def test_random_values_grafted_into_a_valid_shim_never_escape(
    point: tuple[str | int, ...], value: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads((VALID / "curl-community-shim-complete.json").read_text())
    node = doc
    for key in point[:-1]:
        node = node.setdefault(key, {}) if isinstance(node, dict) else node[key]
    node[point[-1]] = value
    try:
        result = parse_metadata(json.dumps(doc).encode())
    except AtipTrustError:
        return
    # Accepted: then the claims must be typed as promised.
    claims = result.claims
    assert claims.binary is not None and claims.binary.hash is not None
    assert claims.verified in (None, True, False)
    if claims.provenance is not None:
        assert claims.provenance.slsa_level is None or isinstance(claims.provenance.slsa_level, int)
    json.dumps(claims.to_json())


@FUZZ
@given(name=st.text(max_size=40))
def test_random_path_strings_never_escape(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["hash", "--", name], ["metadata", "check", "--", name]):
        rc = main(argv)
        cap = capsys.readouterr()
        assert rc in (0, 2)
        assert "internal error" not in cap.err and "Traceback" not in cap.err
        assert len(cap.err.splitlines()) <= 1


def test_no_traceback_in_a_real_process_for_malformed_metadata(tmp_path: Path) -> None:
    f = tmp_path / "bad.json"
    f.write_bytes(b"\xff\xfe{")
    res = subprocess.run([*CLI, "metadata", "check", str(f)], check=False, capture_output=True, text=True, timeout=60)
    assert_mapped_failure(res.returncode, res.stderr)


# Each dependency's exceptions mapped at its boundary -----------------------------------------


def test_json_errors_are_mapped() -> None:
    with pytest.raises(MetadataError) as info:
        parse_metadata(b'{"atip": ')
    assert isinstance(info.value.__cause__, json.JSONDecodeError)
    assert info.value.path == "$"


def test_json_value_errors_are_mapped() -> None:
    with pytest.raises(MetadataError) as info:
        parse_metadata(b'{"a": 1, "a": 2}')
    assert isinstance(info.value.__cause__, ValueError)


def test_unicode_decode_errors_are_mapped() -> None:
    with pytest.raises(MetadataError) as info:
        parse_metadata(b'{"name": "\xc3\x28"}')
    assert isinstance(info.value.__cause__, UnicodeDecodeError)


def test_jsonschema_errors_are_mapped() -> None:
    doc = json.loads((VALID / "minimal-mytool-atip-0.1.json").read_text())
    doc["version"] = 1
    with pytest.raises(MetadataError) as info:
        parse_metadata(json.dumps(doc).encode())
    assert not isinstance(info.value, jsonschema.ValidationError)
    assert info.value.path == "$.version"


def test_recursion_is_capped_before_json_or_jsonschema_see_it() -> None:
    with pytest.raises(InputTooLargeError):
        parse_metadata(b"[" * 100_000)


def test_os_errors_are_mapped_when_opening(tmp_path: Path) -> None:
    with pytest.raises(ArtifactAccessError) as info:
        load_metadata(tmp_path / "missing.json")
    assert isinstance(info.value.__cause__, FileNotFoundError)
    with pytest.raises(ArtifactAccessError) as info2:
        Artifact.open(tmp_path / "missing")
    assert isinstance(info2.value.__cause__, (FileNotFoundError, OSError))
    with pytest.raises(NotARegularFileError):
        load_metadata(tmp_path)


def test_os_errors_are_mapped_when_reading(tmp_path: Path) -> None:
    fd = os.open(tmp_path, os.O_RDONLY)  # a directory descriptor: reading it fails with EISDIR
    try:
        with pytest.raises(ArtifactAccessError) as info:
            hash_fd(fd)
        assert isinstance(info.value.__cause__, OSError)
    finally:
        os.close(fd)
    r, w = os.pipe()
    os.close(w)
    try:
        with pytest.raises(ArtifactAccessError):
            hash_fd(r)  # a pipe cannot be read at an offset (ESPIPE)
    finally:
        os.close(r)


def test_value_errors_from_path_strings_are_mapped() -> None:
    with pytest.raises(ArtifactAccessError):
        load_metadata("bad\x00name")
    with pytest.raises(ArtifactAccessError):
        Artifact.open("/tmp/bad\x00name")
