"""Issue 37: everyday read-only programs from /usr/bin, signed as installed and declared read-only and
offline in signed metadata, print exactly the same inside their boundary as outside it (the child runner
that probes and the call loop use; ``exec`` enters the same boundary, tests/execution/test_sandbox_exec.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from atip_trust.admission.admit import load_admission_policy
from atip_trust.admission.options import AdmitOptions
from atip_trust.evaluation.inputs import Evidence
from atip_trust.execution.child import run_verified
from atip_trust.execution.exec import admit_file
from atip_trust.execution.sandbox import boundary_for

from sandbox_world import READ_ONLY, SandboxWorld, sandbox_available

pytestmark = [pytest.mark.skipif(sandbox_available() is not None, reason=str(sandbox_available())),
              pytest.mark.skipif(sys.platform != "linux", reason="Landlock is Linux only")]

#: (program in /usr/bin, its arguments; {d} is a folder of sample files).
EVERYDAY: list[tuple[str, list[str]]] = [
    ("cat", ["{d}/a.txt", "{d}/b.txt"]), ("head", ["-n", "2", "{d}/a.txt"]), ("tail", ["-n", "2", "{d}/a.txt"]),
    ("wc", ["{d}/a.txt"]), ("sort", ["-r", "{d}/a.txt"]), ("uniq", ["-c", "{d}/b.txt"]),
    ("cut", ["-c1-3", "{d}/a.txt"]), ("echo", ["hello", "world"]), ("ls", ["-1a", "{d}"]),
    ("basename", ["{d}/a.txt"]), ("dirname", ["{d}/a.txt"]), ("sha256sum", ["{d}/a.txt"]),
    ("md5sum", ["{d}/b.txt"]), ("od", ["-c", "{d}/b.txt"]), ("grep", ["-n", "an", "{d}/a.txt"]),
    ("sed", ["-n", "s/a/A/gp", "{d}/a.txt"]), ("tac", ["{d}/a.txt"]), ("nl", ["{d}/a.txt"]),
    ("base64", ["{d}/b.txt"]), ("seq", ["3", "9"]), ("expr", ["6", "*", "7"]), ("printf", ["%s-%d\\n", "x", "5"]),
    ("uname", ["-s"]), ("id", ["-u"]), ("realpath", ["{d}/../d/a.txt"]), ("cksum", ["{d}/a.txt"]),
    ("fold", ["-w", "4", "{d}/a.txt"]), ("paste", ["{d}/a.txt", "{d}/b.txt"]), ("comm", ["{d}/a.txt", "{d}/a.txt"]),
    ("diff", ["{d}/a.txt", "{d}/b.txt"]), ("cmp", ["{d}/a.txt", "{d}/b.txt"]), ("du", ["-s", "--apparent-size", "{d}"]),
]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> SandboxWorld:
    w = SandboxWorld(tmp_path_factory.mktemp("everyday"))
    d = w.dir / "d"
    d.mkdir()
    (d / "a.txt").write_text("banana\napple\ncherry\nmango\n")
    (d / "b.txt").write_text("one\none\ntwo\n")
    return w


def test_at_least_twenty_everyday_programs_are_covered() -> None:
    assert len({name for name, _ in EVERYDAY if Path("/usr/bin", name).is_file()}) >= 20


@pytest.mark.parametrize(("name", "args"), EVERYDAY, ids=[n for n, _ in EVERYDAY])
def test_an_everyday_read_only_program_prints_the_same_inside_and_outside_its_boundary(
        world: SandboxWorld, name: str, args: list[str]) -> None:
    path = Path("/usr/bin", name)
    if not path.is_file() or path.is_symlink():
        pytest.skip(f"{path} is not installed here as a file")
    meta = world.declare_existing(path, READ_ONLY)
    policy = load_admission_policy(world.policy_for())
    words = [a.format(d=world.dir / "d") for a in args]
    opened = admit_file(str(path), policy=policy, command=words, evidence=Evidence(
        metadata=meta, metadata_bundle=world.meta[name][1]), options=AdmitOptions(audit=False),
        bundle_dir=world.bundles)
    try:
        adm = opened.admission
        assert adm.behavior == "allow" and adm.effects_verified, adm.decision.reasons
        boundary = boundary_for(adm)
        assert boundary is not None and (boundary.write, boundary.delete, boundary.network) == ("none", False, False)
        env = {"PATH": "/usr/bin:/bin", "LANG": "C"}
        inside = run_verified(opened.art, words, env=env, timeout=30, max_output=1 << 20, argv0=name,
                              boundary=boundary, sandbox_mode="required")
        outside = run_verified(opened.art, words, env=env, timeout=30, max_output=1 << 20, argv0=name)
    finally:
        opened.art.close()
    assert inside.sandbox is not None and inside.sandbox["enforced"] is True
    assert (inside.exit_code, inside.stdout, inside.stderr) == (outside.exit_code, outside.stdout, outside.stderr)
    assert inside.violation is None and inside.stdout, inside.stderr
