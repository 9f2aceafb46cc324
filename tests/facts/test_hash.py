"""`atip-trust hash` writes and checks what coreutils writes and checks, and refuses what is not a regular
file."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import verify_helpers

CLI = [sys.executable, "-m", "atip_trust"]
TIMEOUT = 60


def run_cli(*args: str, timeout: float = TIMEOUT, **kw: object) -> subprocess.CompletedProcess[str]:
    """In-process (verify_helpers.run_cli); with ``subprocess.run`` options (``preexec_fn``), a child."""
    if not kw:
        return verify_helpers.run_cli(args, timeout=timeout)
    return subprocess.run(
        [*CLI, *args], check=False, capture_output=True, text=True, timeout=timeout, **kw  # type: ignore[call-overload]
    )


def coreutils(tool: str, path: Path) -> str:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} not installed")
    out = subprocess.run([tool, str(path)], capture_output=True, text=True, check=True).stdout
    return out.split()[0]


@pytest.fixture(scope="session")
def sample_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("hash")
    empty = d / "empty"
    empty.write_bytes(b"")
    one = d / "one-byte"
    one.write_bytes(b"\x00")
    large = d / "large"
    # 64 MiB plus an odd tail, so reads cross the 1 MiB chunk boundary at a ragged end.
    block = os.urandom(1 << 20)
    with large.open("wb") as f:
        for i in range(64):
            f.write(bytes([i]) + block[1:])
        f.write(os.urandom(12345))
    return {"empty": empty, "one": one, "large": large}


@pytest.mark.parametrize("which", ["empty", "one", "large"])
@pytest.mark.parametrize("algorithm,tool", [("sha256", "sha256sum"), ("sha512", "sha512sum")])
def test_hash_agrees_with_coreutils(
    sample_files: dict[str, Path], which: str, algorithm: str, tool: str
) -> None:
    path = sample_files[which]
    expected = coreutils(tool, path)
    res = run_cli("hash", "--algorithm", algorithm, str(path))
    assert res.returncode == 0, res.stderr
    assert res.stdout == f"{expected}  {path}\n"
    assert res.stderr == ""


def test_hash_default_is_sha256_and_handles_several_files(sample_files: dict[str, Path]) -> None:
    files = [sample_files["empty"], sample_files["one"]]
    res = run_cli("hash", *map(str, files))
    assert res.returncode == 0
    lines = res.stdout.splitlines()
    assert lines == [f"{coreutils('sha256sum', p)}  {p}" for p in files]


def test_hash_json_output(sample_files: dict[str, Path]) -> None:
    p = sample_files["one"]
    res = run_cli("hash", "--format", "json", str(p))
    assert res.returncode == 0
    assert json.loads(res.stdout) == [{"path": str(p), "digest": f"sha256:{coreutils('sha256sum', p)}"}]


def assert_one_line_error(res: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    lines = res.stderr.splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("atip-trust: error: ")
    for n in needles:
        assert n in lines[0], lines[0]
    assert res.stdout == ""


def test_directory_is_refused(tmp_path: Path) -> None:
    assert_one_line_error(run_cli("hash", str(tmp_path)), "directory", str(tmp_path.resolve()))


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    # No writer ever opens the FIFO: a blocking open would hang until the timeout.
    res = run_cli("hash", str(fifo), timeout=20)
    assert_one_line_error(res, "FIFO")


def test_missing_file_is_refused(tmp_path: Path) -> None:
    assert_one_line_error(run_cli("hash", str(tmp_path / "nope")), "no such file")


def test_unreadable_file_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_bytes(b"top secret")
    secret.chmod(0)
    if os.geteuid() != 0:
        assert_one_line_error(run_cli("hash", str(secret)), "permission denied")
        return
    # Root reads anything through CAP_DAC_OVERRIDE / CAP_DAC_READ_SEARCH. Drop both from the child's
    # capability bounding set (prctl PR_CAPBSET_DROP) so that, still uid 0, it meets the file's mode.
    libc = ctypes.CDLL(None, use_errno=True)

    def drop_dac_caps() -> None:
        for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
            if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")

    try:
        res = run_cli("hash", str(secret), preexec_fn=drop_dac_caps)
    except (OSError, subprocess.SubprocessError) as err:
        pytest.skip(f"running as root and cannot drop CAP_DAC_OVERRIDE: {err}")
    assert_one_line_error(res, "permission denied", str(secret))


def test_device_is_refused() -> None:
    assert_one_line_error(run_cli("hash", "/dev/null"), "character device")


def test_one_bad_file_among_good_ones_fails_the_run(sample_files: dict[str, Path], tmp_path: Path) -> None:
    res = run_cli("hash", str(sample_files["one"]), str(tmp_path / "missing"))
    assert res.returncode == 2
    assert res.stdout == f"{coreutils('sha256sum', sample_files['one'])}  {sample_files['one']}\n"
    assert len(res.stderr.splitlines()) == 1 and "Traceback" not in res.stderr


def test_sarif_output_has_one_result_per_failed_file(tmp_path: Path, sample_files: dict[str, Path]) -> None:
    res = run_cli("hash", "--format", "sarif", str(sample_files["one"]), str(tmp_path / "missing"))
    assert res.returncode == 2
    log = json.loads(res.stdout)
    assert log["version"] == "2.1.0"
    results = log["runs"][0]["results"]
    assert len(results) == 1
    assert results[0]["ruleId"] == "atip-trust/hash/unreadable"
    assert "missing" in results[0]["message"]["text"]


@pytest.mark.parametrize(
    "name",
    [b"forged\nsha256:" + b"0" * 64 + b"  gh", b"back\\slash", b"carriage\rreturn", b"latin1-\xff"],
    ids=["newline-forges-a-line", "backslash", "carriage-return", "non-utf8"],
)
def test_file_name_cannot_forge_an_output_line_and_matches_sha256sum(tmp_path: Path, name: bytes) -> None:
    """A hostile file name is escaped exactly as GNU sha256sum escapes it: one line per file, always."""
    if shutil.which("sha256sum") is None:
        pytest.skip("sha256sum not installed")
    path = os.path.join(os.fsencode(tmp_path), name)
    with open(path, "wb") as f:
        f.write(b"payload")
    ours = subprocess.run([*CLI, "hash", path], capture_output=True, timeout=TIMEOUT, cwd=tmp_path)
    theirs = subprocess.run(["sha256sum", path], capture_output=True, check=True).stdout
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout.count(b"\n") == 1
    assert ours.stdout == theirs
    tagged = subprocess.run([*CLI, "hash", "--tag", path], capture_output=True, timeout=TIMEOUT)
    assert tagged.stdout == subprocess.run(["sha256sum", "--tag", path], capture_output=True,
                                           check=True).stdout
