"""The wheel ships every package: what ``pip install .`` installs runs on its own, outside the checkout.

The flaw this guards against (issue 23): ``pyproject.toml`` lists the packages by hand, a new package
(``atip_trust.registry``) was left out, and every non-editable install failed with
``ModuleNotFoundError`` on any policy naming a registry — while CI's editable install hid it, because
setuptools' editable finder supplies a module the installed copy lacks from the checkout. So the
checks here run from a wheel built from a copy of the sources, installed with ``--target`` into a
folder that is the subprocess's only ``PYTHONPATH``, with the editable finder removed, and they
compare against the package folders of the checkout, not against what the wheel happens to contain.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

import testsigstore
from readme_commands import readme_main_job

ROOT = Path(__file__).resolve().parents[2]
ISSUER = "https://token.actions.githubusercontent.com"
REGISTRY_ID = "https://github.com/example-org/shims/.github/workflows/sign.yml@refs/heads/main"
TOOL_ID = "https://github.com/example-org/tools/.github/workflows/release.yml@refs/tags/v1.0.0"
TOOL = b"#!/bin/sh\necho status\n"


def checkout_packages() -> set[str]:
    """Every package under atip_trust/ in the checkout (a folder with an __init__.py), dotted."""
    return {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "atip_trust").rglob("__init__.py")
            if "__pycache__" not in p.parts}


def test_pyproject_lists_every_package_folder_under_atip_trust() -> None:
    # The list stays by hand because schema/ and policies/ are mapped into the package as
    # atip_trust._schema/_policies (package-dir), which setuptools' packages.find cannot express
    # next to a discovered tree; so any package folder added later must be listed, or this fails.
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    missing = checkout_packages() - listed
    assert not missing, f"packages missing from pyproject.toml [tool.setuptools] packages: {sorted(missing)}"
    for package, folder in setuptools["package-dir"].items():
        assert package in listed and (ROOT / folder).is_dir(), (package, folder)


def _run(argv: list[str], cwd: Path, env: dict[str, str], timeout: int = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, check=False, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of a copy of the checkout (no stale build/ or egg-info can leak into it), installed
    non-editable into a folder of its own."""
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("atip_trust", "schema", "policies"):
        shutil.copytree(ROOT / name, src / name, ignore=skip)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(base / "dist"), str(src)],
                 cwd=base, env=dict(os.environ), timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    wheels = list((base / "dist").glob("atip_trust-*.whl"))
    assert len(wheels) == 1, wheels
    target = base / "site"
    done = _run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile", "--target",
                 str(target), str(wheels[0])], cwd=base, env=dict(os.environ), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return target


def outside_env(target: Path, cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATIP_", "PYTHON"))}
    return {**env, "PYTHONPATH": str(target), "ATIP_CACHE_DIR": str(cache), "CI": "true"}


# Run first in every subprocess: drop setuptools' editable finder (the venv running the tests may hold an
# editable install of this checkout; its finder supplies from the checkout any module the installed copy
# lacks, which is how the missing package went unnoticed) and any path into the checkout (but not the
# venv's own site-packages, which CI's .ci/run creates inside the checkout).
ALONE = f"""
import sys
sys.meta_path[:] = [f for f in sys.meta_path if not str(getattr(f, "__module__", "")).startswith("__editable__")]
sys.path[:] = [p for p in sys.path if not p.startswith({str(ROOT)!r}) or p.startswith(sys.prefix)]
"""

IMPORT_ALL = ALONE + """
import importlib, json, pkgutil
import atip_trust
walked = [m.name for m in pkgutil.walk_packages(atip_trust.__path__, "atip_trust.")]
files = {}
for name in ["atip_trust", *json.loads(sys.argv[1]), *walked]:
    if not name.endswith(".__main__"):  # importing it runs the CLI; the walk found its file
        module = importlib.import_module(name)
        files[name] = module.__file__ or list(module.__path__)  # _schema/_policies: namespace packages
print(json.dumps({"files": files, "walked": walked}))
"""

# `python -m atip_trust ARGS` as run from the install alone (runpy.run_module is what -m runs).
AS_MODULE = [sys.executable, "-c", ALONE + "import runpy; runpy.run_module('atip_trust', run_name='__main__', "
             "alter_sys=True)"]


@pytest.mark.slow
def test_installed_wheel_imports_every_module_of_the_checkout_from_the_install(
        installed: Path, tmp_path: Path) -> None:
    wanted = sorted(checkout_packages() | {"atip_trust._schema", "atip_trust._policies"})
    run = _run([sys.executable, "-c", IMPORT_ALL, json.dumps(wanted)], cwd=tmp_path,
               env=outside_env(installed, tmp_path / "cache"))
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    inside = str(installed) + os.sep
    assert seen["files"]["atip_trust"].startswith(inside), seen["files"]["atip_trust"]
    elsewhere = {n: f for n, f in seen["files"].items()
                 if not all(p.startswith(inside) for p in ([f] if isinstance(f, str) else f))}
    assert not elsewhere, f"modules not loaded from the installed wheel: {elsewhere}"
    modules = {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
               for p in (ROOT / "atip_trust").rglob("*.py") if "__pycache__" not in p.parts}
    assert modules - {"atip_trust"} <= set(seen["walked"]), sorted(modules - set(seen["walked"]))
    for data in ("atip_trust/py.typed", "atip_trust/_schema/policy.schema.json",
                 "atip_trust/_policies/default.json"):
        assert (installed / data).is_file(), data


@pytest.mark.slow
def test_installed_wheel_runs_the_readme_main_job_from_outside_the_checkout(
        installed: Path, tmp_path: Path) -> None:
    env = outside_env(installed, tmp_path / "cache")
    argv = readme_main_job()
    assert argv[0] == "verify" and any(str(ROOT) in w for w in argv), argv
    as_module = _run([*AS_MODULE, *argv, "--format", "json"], cwd=tmp_path, env=env)
    assert as_module.returncode == 0, as_module.stdout + as_module.stderr
    assert json.loads(as_module.stdout)["decision"]["behavior"] == "allow"
    script = installed / "bin" / "atip-trust"  # the console script pip wrote, as the README runs it
    as_script = _run([str(script), *argv], cwd=tmp_path, env=env)
    assert as_script.returncode == 0, as_script.stdout + as_script.stderr


@pytest.mark.slow
def test_installed_wheel_admits_a_tool_through_a_signed_registry_shim(
        installed: Path, tmp_path: Path, httpserver: HTTPServer) -> None:
    """The defect's own path: a policy naming a registry, the shim fetched from it and verified."""
    ts = testsigstore.TestSigstore(seed=23)
    ts.write_trusted_root(tmp_path / "trusted_root.json")
    tool = tmp_path / "oktool"
    tool.write_bytes(TOOL)
    tool.chmod(0o755)
    hexd = hashlib.sha256(TOOL).hexdigest()
    shim = json.dumps({
        "atip": {"version": "0.6"},
        "binary": {"hash": f"sha256:{hexd}", "name": "oktool", "version": "1.0.0"},
        "trust": {"source": "org", "verified": True},
        "description": "A read-only status tool",
        "commands": {"status": {"description": "Show status", "effects": {
            "destructive": False, "reversible": True, "idempotent": True, "network": False,
            "filesystem": {"read": True, "write": False, "delete": False}, "cost": {"billable": False},
            "interactive": {"stdin": "none", "prompts": False, "tty": False}}}},
    }).encode()
    url = httpserver.url_for("/").rstrip("/")
    httpserver.no_handler_status_code = 404
    httpserver.expect_request("/.well-known/atip-registry.json").respond_with_json(
        {"atip": {"version": "0.6"}, "registry": {"name": "test", "url": url}})
    httpserver.expect_request(f"/shims/sha256/{hexd}.json").respond_with_data(
        shim, content_type="application/json")
    httpserver.expect_request(f"/shims/sha256/{hexd}.json.bundle").respond_with_data(
        json.dumps(ts.sign_artifact(shim, identity=REGISTRY_ID, issuer=ISSUER)))
    bundle = tmp_path / "oktool.sigstore.json"
    bundle.write_text(json.dumps(ts.sign_artifact(TOOL, identity=TOOL_ID, issuer=ISSUER)))
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({
        "version": 1,
        "trust": {"trustedRoots": [{"path": str(tmp_path / "trusted_root.json")}],
                  "signers": [{"identity": TOOL_ID, "issuer": ISSUER}],
                  "registries": [{"url": url, "signers": [{"identity": REGISTRY_ID, "issuer": ISSUER}]}]},
        "defaults": {"noMatch": "ask", "allowVerifiedReadOnly": True},
    }))
    run = _run([*AS_MODULE, "admit", str(tool), "--command", "status",
                "--policy", str(policy), "--bundle", str(bundle), "--fetch", "--non-interactive",
                "--format", "json", "--no-audit", "--no-cache"],
               cwd=tmp_path, env=outside_env(installed, tmp_path / "cache"))
    assert run.returncode == 0, run.stdout + run.stderr
    out = json.loads(run.stdout)
    assert out["effects_verified"] is True, out
    assert any(re.fullmatch(rf"/shims/sha256/{hexd}\.json", req.path) for req, _ in httpserver.log)
