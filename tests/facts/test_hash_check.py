"""`atip-trust hash` and GNU coreutils check each other: our lines pass `sha256sum -c`, and `hash --check`
reads what `sha256sum` (and `sha256sum --tag`) writes and answers as `sha256sum -c` does, line for line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from verify_helpers import run_cli

CLI = [sys.executable, "-m", "atip_trust"]
TIMEOUT = 60

pytestmark = pytest.mark.skipif(shutil.which("sha256sum") is None, reason="coreutils sha256sum not installed")

#: Names that need coreutils' escaping, or that a naive parser would read two ways.
NAMES = [b"plain", b"with space", b"new\nline", b"back\\slash", b"carriage\rreturn", b"latin1-\xff",
         b"paren) = 0000", b"*star", b"-dash"]


def ours(cwd: Path, *args: str | bytes, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return run_cli(args, cwd=cwd, timeout=TIMEOUT, input=stdin, text=False)


def coreutils(cwd: Path, *args: str | bytes, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["sha256sum", *args], cwd=cwd, capture_output=True, timeout=TIMEOUT, input=stdin)


@pytest.fixture
def files(tmp_path: Path) -> list[bytes]:
    for i, name in enumerate(NAMES):
        with open(os.path.join(os.fsencode(tmp_path), name), "wb") as f:
            f.write(b"content %d\n" % i)
    return NAMES


@pytest.mark.parametrize("tag", [False, True], ids=["plain", "tag"])
def test_our_output_passes_sha256sum_check_and_is_byte_identical(tmp_path: Path, files: list[bytes],
                                                                 tag: bool) -> None:
    flags = ["--tag"] if tag else []
    paths = [b"./" + f for f in files]  # a bare name would be looked up on PATH (docs/cli-guide.md)
    mine = ours(tmp_path, "hash", *flags, "--", *paths)
    assert mine.returncode == 0, mine.stderr
    assert mine.stdout == coreutils(tmp_path, *flags, "--", *paths).stdout
    listing = tmp_path / "SUMS"
    listing.write_bytes(mine.stdout)
    check = coreutils(tmp_path, "-c", "SUMS")
    assert check.returncode == 0, check.stderr
    assert check.stdout.count(b": OK\n") == len(files)


@pytest.mark.parametrize("tag", [False, True], ids=["plain", "tag"])
def test_check_reads_sha256sum_output_and_answers_as_sha256sum_does(tmp_path: Path, files: list[bytes],
                                                                    tag: bool) -> None:
    flags = ["--tag"] if tag else []
    listing = coreutils(tmp_path, *flags, "--", *files).stdout
    # A mismatch, a missing file, an improper line, a comment, a blank line, a CRLF line, uppercase hex.
    bad_hex = "0" * 64
    listing += f"{bad_hex}  plain\n".encode()
    listing += b"ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb  missing-file\n"
    listing += b"not a checksum line\n# a comment\n\n"
    plain_hex = coreutils(tmp_path, "plain").stdout.split()[0]
    listing += plain_hex.upper() + b"  plain\r\n"
    (tmp_path / "SUMS").write_bytes(listing)
    theirs = coreutils(tmp_path, "-c", "SUMS")
    mine = ours(tmp_path, "hash", "--check", "SUMS")
    assert mine.stdout == theirs.stdout
    assert (mine.returncode, theirs.returncode) == (1, 1)
    assert b"FAILED open or read" in mine.stdout and b"plain: FAILED\n" in mine.stdout
    for warning in (b"WARNING: 1 line is improperly formatted", b"WARNING: 1 listed file could not be read",
                    b"WARNING: 1 computed checksum did NOT match"):
        assert warning in theirs.stderr and warning in mine.stderr
    assert b"Traceback" not in mine.stderr


def test_check_passes_a_clean_list_with_exit_0(tmp_path: Path, files: list[bytes]) -> None:
    (tmp_path / "SUMS").write_bytes(coreutils(tmp_path, "--", *files).stdout)
    mine = ours(tmp_path, "hash", "-c", "SUMS")
    assert mine.returncode == 0, mine.stderr
    assert mine.stdout == coreutils(tmp_path, "-c", "SUMS").stdout
    assert mine.stderr == b""


def test_check_of_a_tampered_file_fails_with_exit_1(tmp_path: Path, files: list[bytes]) -> None:
    (tmp_path / "SUMS").write_bytes(coreutils(tmp_path, "plain").stdout)
    (tmp_path / "plain").write_bytes(b"swapped after the list was made\n")
    mine = ours(tmp_path, "hash", "--check", "SUMS", "--format", "json")
    assert mine.returncode == 1
    row = json.loads(mine.stdout)["checked"][0]
    assert row["status"] == "FAILED" and row["expected"] != row["actual"]
    assert row["actual"].startswith("sha256:") and row["expected"].startswith("sha256:")


def test_sha512_lists_check_with_the_algorithm_flag(tmp_path: Path, files: list[bytes]) -> None:
    if shutil.which("sha512sum") is None:
        pytest.skip("sha512sum not installed")
    listing = subprocess.run(["sha512sum", "--tag", "plain", "with space"], cwd=tmp_path, capture_output=True,
                             check=True).stdout
    (tmp_path / "SUMS").write_bytes(listing)
    mine = ours(tmp_path, "hash", "--algorithm", "sha512", "-c", "SUMS")
    assert mine.returncode == 0, mine.stderr
    assert mine.stdout == b"plain: OK\nwith space: OK\n"
    # The same list is improper for sha256: a SHA512 tag is not a SHA256 line.
    assert ours(tmp_path, "hash", "-c", "SUMS").returncode == 2


def test_list_with_no_proper_line_cannot_be_evaluated(tmp_path: Path) -> None:
    (tmp_path / "SUMS").write_bytes(b"garbage\n")
    mine = ours(tmp_path, "hash", "-c", "SUMS")
    assert mine.returncode == 2  # sha256sum says 1; docs/contract.md: malformed input is exit 2
    assert b"no properly formatted checksum lines found" in mine.stderr


def test_dash_is_standard_input_for_files_and_for_the_list(tmp_path: Path, files: list[bytes]) -> None:
    data = b"piped bytes\n" * 1000
    assert ours(tmp_path, "hash", "-", stdin=data).stdout == coreutils(tmp_path, "-", stdin=data).stdout
    assert ours(tmp_path, "hash", "--tag", "-", stdin=data).stdout == \
        coreutils(tmp_path, "--tag", "-", stdin=data).stdout
    listing = coreutils(tmp_path, "plain", "new\nline").stdout
    mine = ours(tmp_path, "hash", "--check", "-", stdin=listing)
    assert mine.returncode == 0 and mine.stdout == coreutils(tmp_path, "-c", "-", stdin=listing).stdout


def test_a_bare_name_is_looked_up_on_path_and_its_line_names_the_file_hashed(tmp_path: Path) -> None:
    """`hash sh` hashes the sh the shell would run (docs/cli-guide.md) and says which file that is: checking the
    line with `sha256sum -c` checks those bytes, never a local file that happens to be called sh."""
    (tmp_path / "sh").write_bytes(b"a local file called sh\n")
    onpath = os.path.realpath(shutil.which("sh") or "/bin/sh")
    mine = ours(tmp_path, "hash", "sh")
    assert mine.returncode == 0, mine.stderr
    assert mine.stdout == coreutils(tmp_path, onpath).stdout
    (tmp_path / "SUMS").write_bytes(mine.stdout)
    assert coreutils(tmp_path, "-c", "SUMS").returncode == 0


def test_names_in_a_checksum_list_are_files_never_path_lookups(tmp_path: Path) -> None:
    """A list line "<hex of /bin/sh>  sh" must not pass because PATH has an sh with those bytes."""
    onpath = os.path.realpath(shutil.which("sh") or "/bin/sh")
    line = coreutils(tmp_path, onpath).stdout.split(b"  ", 1)[0] + b"  sh\n"
    (tmp_path / "SUMS").write_bytes(line)
    (tmp_path / "sh").write_bytes(b"a local file called sh\n")
    mine = ours(tmp_path, "hash", "-c", "SUMS")
    assert mine.returncode == 1 and mine.stdout == b"sh: FAILED\n"
    assert mine.stdout == coreutils(tmp_path, "-c", "SUMS").stdout


def test_mismatch_is_a_sarif_result_at_the_file(tmp_path: Path, files: list[bytes]) -> None:
    (tmp_path / "SUMS").write_bytes(b"0" * 64 + b"  plain\nbad line\n")
    log = json.loads(ours(tmp_path, "hash", "-c", "SUMS", "--format", "sarif").stdout)
    results = log["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["atip-trust/hash/mismatch", "atip-trust/hash/improper-line"]
    first, second = (r["locations"][0]["physicalLocation"] for r in results)
    assert first["artifactLocation"]["uri"] == "plain"
    assert second["artifactLocation"]["uri"] == "SUMS" and second["region"]["startLine"] == 2
