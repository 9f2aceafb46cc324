"""Issue 37: the mapping from verified effects to a boundary (execution/sandbox.py), the ``exec.sandbox``
setting's composition, and the engine as a user who is not root."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from atip_trust.execution.sandbox import (
    PROBE_BOUNDARY,
    Boundary,
    BoundaryError,
    arrange,
    attempt_seen,
    boundary_from_effects,
    stricter_mode,
)
from atip_trust.policy.compose import compose
from atip_trust.policy.load import load_layer

from sandbox_world import READ_ONLY, sandbox_available

REPO = Path(__file__).resolve().parents[2]
POLICIES = REPO / "policies"

#: (declared effects, expected (write, delete, network)): the table in docs/sandbox.md.
TABLE: list[tuple[str, dict[str, Any], tuple[str, bool, bool]]] = [
    ("read-only and offline", READ_ONLY, ("none", False, False)),
    ("read-only, network on", {**READ_ONLY, "network": True}, ("none", False, True)),
    ("writes anywhere, no delete", {"filesystem": {"write": True, "delete": False}}, ("any", False, True)),
    ("nothing said", {}, ("any", True, True)),
    ("a non-boolean write is no promise", {"filesystem": {"write": "false"}, "network": 0}, ("any", True, True)),
    ("paths without write: true are not a grant", {"filesystem": {"write": False, "paths": ["out"]}},
     ("none", True, True)),
]


@pytest.mark.parametrize(("case", "effects", "want"), TABLE, ids=[c[0] for c in TABLE])
def test_only_an_explicit_false_confines(tmp_path: Path, case: str, effects: dict[str, Any],
                                         want: tuple[str, bool, bool]) -> None:
    (tmp_path / "out").mkdir()
    b = boundary_from_effects(effects, cwd=str(tmp_path), source="test")
    assert (b.write, b.delete, b.network) == want


def test_declared_paths_resolve_against_the_working_tree(tmp_path: Path) -> None:
    (tmp_path / "out" / "deep").mkdir(parents=True)
    b = boundary_from_effects({"filesystem": {"write": True, "paths": ["out", "./out/deep/"]}}, cwd=str(tmp_path),
                              source="t")
    assert b.write == "paths" and b.write_paths == (str((tmp_path / "out").resolve()),
                                                    str((tmp_path / "out" / "deep").resolve()))


@pytest.mark.parametrize("path", ["..", "/tmp", "a/../../x", "link", "", 7, "nul\0l"])
def test_a_declared_path_that_would_widen_the_boundary_is_an_error(tmp_path: Path, path: object) -> None:
    (tmp_path / "link").symlink_to("/")
    with pytest.raises(BoundaryError):
        boundary_from_effects({"filesystem": {"write": True, "paths": [path]}}, cwd=str(tmp_path), source="t")


def test_a_flag_only_tightens_the_mode() -> None:
    assert stricter_mode("required", "off") == "required"
    assert stricter_mode("off", "required") == "required"
    assert stricter_mode("preferred", None) == "preferred"
    assert stricter_mode() == "preferred"


def test_the_shipped_strict_policies_require_the_boundary_and_the_default_prefers_it() -> None:
    got = {name: compose([load_layer(POLICIES / f"{name}.json")]).exec_settings.sandbox
           for name in ("enterprise-strict", "ci", "default")}
    assert got == {"enterprise-strict": "required", "ci": "required", "default": "preferred"}


def test_a_later_layer_cannot_relax_an_earlier_required(tmp_path: Path) -> None:
    layers = []
    for name, mode in (("org", "required"), ("project", "off")):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"version": 1, "exec": {"sandbox": mode}}))
        layers.append(load_layer(path))
    assert compose(layers).exec_settings.sandbox == "required"
    assert compose(layers[1:]).exec_settings.sandbox == "off"


def test_an_unknown_mode_is_refused_by_the_schema(tmp_path: Path) -> None:
    from atip_trust.errors import PolicyError

    path = tmp_path / "p.json"
    path.write_text(json.dumps({"version": 1, "exec": {"sandbox": "sometimes"}}))
    with pytest.raises(PolicyError):
        load_layer(path)


def test_off_asks_for_nothing_and_a_boundary_that_confines_nothing_is_not_built() -> None:
    assert arrange(PROBE_BOUNDARY, "off") == (None, None)
    prepared, record = arrange(Boundary(write="any", source="t"), "required")
    assert prepared is None and record is not None and record["enforced"] is False


@pytest.mark.parametrize(("stderr", "code", "seen"), [
    (b"sh: cannot create x: Permission denied\n", 2, True),
    (b"connect: Network is unreachable\n", 1, True),
    (b"sh: cannot create x: Permission denied\n", 0, False),  # it went on and succeeded: not proven
    (b"grep: no match\n", 1, False),
])
def test_an_attempt_counts_only_when_the_run_failed_with_the_boundarys_error(
        stderr: bytes, code: int, seen: bool) -> None:
    assert (attempt_seen(PROBE_BOUNDARY, code, None, stderr) is not None) is seen


def test_a_network_error_is_no_finding_where_the_network_was_allowed() -> None:
    open_net = Boundary(write="none", delete=False, network=True, source="t")
    assert attempt_seen(open_net, 1, None, b"connect: Network is unreachable\n") is None


@pytest.mark.skipif(sandbox_available() is not None, reason=str(sandbox_available()))
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to become another user")
def test_the_boundary_holds_for_a_user_who_is_not_root(tmp_path: Path) -> None:
    """An unprivileged user: Landlock with no_new_privs, and a user namespace mapping the user to
    itself for the network namespace (its files keep their owner)."""
    python = shutil.which("python3", path="/usr/bin:/bin")
    if python is None or not os.access(REPO, os.R_OK | os.X_OK):
        pytest.skip("no system python3 for the unprivileged child")
    work = tmp_path / "w"
    work.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chown(work, 65534, 65534)
    code = (
        "import subprocess\n"
        "from atip_trust.execution import sandbox as sb\n"
        "p = sb.prepare(sb.PROBE_BOUNDARY)\n"
        "r = subprocess.run(['/bin/sh', '-c', 'id -u; echo x > written; echo rc=$?'], preexec_fn=lambda: sb.enter(p),"
        " capture_output=True, text=True)\n"
        "print(r.stdout, end='')\n"
        "print('denied' if 'Permission denied' in r.stderr else r.stderr)\n")

    def demote() -> None:
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)

    r = subprocess.run([python, "-c", code], cwd=work, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
                       capture_output=True, text=True, timeout=60, preexec_fn=demote)
    if "ModuleNotFoundError" in r.stderr:
        pytest.skip(f"the unprivileged child cannot import the package: {r.stderr[-200:]}")
    assert r.stdout == "65534\nrc=2\ndenied\n", r.stdout + r.stderr
    assert not (work / "written").exists()
    assert sys.platform == "linux"


def test_doctor_names_a_missing_engine_under_required_as_a_problem_and_lists_marks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from atip_trust.cli.cmd_doctor import boundary as doctor_sandbox
    from atip_trust.state.broken import mark_broken

    monkeypatch.setenv("ATIP_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("ATIP_TRUST_SANDBOX_DISABLE", "1")
    required = compose([load_layer(POLICIES / "ci.json")])
    [finding] = doctor_sandbox(required)
    assert finding.status == "problem" and "Landlock" in finding.message
    mark_broken("sha256:" + "ab" * 32, tool="liar", attempt="a write", declared=None)
    monkeypatch.delenv("ATIP_TRUST_SANDBOX_DISABLE")
    found = doctor_sandbox(compose([load_layer(POLICIES / "default.json")]))
    assert [f.status for f in found][-1] == "warning" and "1 digest" in found[-1].message
