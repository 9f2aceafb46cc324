"""The TypeScript example client (examples/typescript/atip-client.ts) against a real service: compiled
with TypeScript's own compiler in strict mode, run with node, its answers are the service's.

TypeScript is installed from the npm registry into a scratch folder for the run (node 20 cannot run
TypeScript itself); without node, npm or the registry the test skips, saying which."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from serve_helpers import Served, serving
from shell_lines import ShellWorld, make_world
from test_serve import env_of

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "examples" / "typescript" / "atip-client.ts"
pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform != "linux", reason="Unix sockets")]


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed to compile and run the TypeScript client")
    work = tmp_path_factory.mktemp("ts")
    install = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent", "typescript@5",
                              "@types/node@20"], cwd=work, capture_output=True, text=True, timeout=600)
    if install.returncode != 0:
        pytest.skip(f"npm could not install typescript (registry unreachable?): {install.stderr[-300:]}")
    shutil.copy(CLIENT, work / CLIENT.name)
    tsc = subprocess.run([str(work / "node_modules" / ".bin" / "tsc"), "--strict", "--target", "es2022",
                          "--module", "nodenext", "--moduleResolution", "nodenext", "--types", "node",
                          "--outDir", "out", CLIENT.name], cwd=work, capture_output=True, text=True, timeout=600)
    assert tsc.returncode == 0, tsc.stdout + tsc.stderr  # the example type-checks under --strict
    return work / "out" / "atip-client.js"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> ShellWorld:
    return make_world(tmp_path_factory.mktemp("ts-world"))


@pytest.fixture(scope="module")
def svc(world: ShellWorld) -> Iterator[Served]:
    with serving("--policy", str(world.policy), "--no-audit", env=env_of(world)) as served:
        yield served


def node(client: Path, svc: Served, *argv: str, socket: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["node", str(client), *argv], capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin:/usr/local/bin", "ATIP_TRUST_SOCKET": socket or svc.sock})


def test_typescript_client_admits_the_signed_tool_and_denies_the_unsigned(compiled: Path, svc: Served,
                                                                          world: ShellWorld) -> None:
    tool = world.bin / "tool"
    bundle = world.bundles / "sha256" / f"{hashlib.sha256(tool.read_bytes()).hexdigest()}.sigstore.json"
    allowed = node(compiled, svc, "admit", str(tool), "x", str(bundle))
    assert allowed.returncode == 0 and '"behavior":"allow"' in allowed.stdout, allowed
    denied = node(compiled, svc, "admit", str(world.dir / "evil"), "x")
    assert denied.returncode == 1 and '"behavior":"deny"' in denied.stdout, denied


def test_typescript_client_checks_a_call(compiled: Path, svc: Served, world: ShellWorld) -> None:
    run = node(compiled, svc, "check-call", str(world.bin / "tool"), "x")
    assert run.returncode in (0, 1, 3) and '"behavior"' in run.stdout, run


def test_typescript_client_denies_when_no_service_answers(compiled: Path, svc: Served, tmp_path: Path) -> None:
    run = node(compiled, svc, "admit", "tool", socket=str(tmp_path / "absent.sock"))
    assert run.returncode == 2 and '"behavior":"error"' in run.stdout
