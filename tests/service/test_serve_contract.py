"""What docs/serve.md and its OpenAPI document promise, checked against a running service: every
documented path answers with a documented status, every route the service has is documented, the unit
files parse, and check-call and compile answer as the library and the CLI do."""

from __future__ import annotations

import configparser
import json
import plistlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from atip_trust.agents.formats import AGENTS
from atip_trust.service.app import ADMIT_FIELDS

from serve_helpers import Served, serving
from shell_lines import ShellWorld, make_world
from test_serve import env_of, hook_json
from verify_helpers import cli

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Unix sockets with SO_PEERCRED")
ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "serve.md"
OPENAPI = json.loads((ROOT / "docs" / "serve" / "openapi.json").read_text())


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> ShellWorld:
    return make_world(tmp_path_factory.mktemp("serve-contract"))


@pytest.fixture(scope="module")
def svc(world: ShellWorld) -> Iterator[Served]:
    with serving("--policy", str(world.policy), "--bundle-dir", str(world.bundles),
                 "--no-audit", env=env_of(world)) as served:
        yield served


def _example_body(path: str, world: ShellWorld) -> bytes:
    if path.startswith("/v1/hooks/"):
        return hook_json("tool x", str(world.dir)).encode()
    bodies = {"/v1/admit": {"tool": "tool"}, "/v1/check-call": {"tool": "tool", "name": ["x"]},
              "/v1/compile": {"provider": "openai", "metadata": []}}
    return json.dumps(bodies[path]).encode()


def test_every_documented_operation_answers_with_a_documented_status(svc: Served, world: ShellWorld) -> None:
    for template, item in OPENAPI["paths"].items():
        path = template.replace("{agent}", "claude-code")
        for method, op in item.items():
            body = _example_body(path, world) if method == "post" else None
            status, _, _ = svc.request(method.upper(), path, body)
            assert str(status) in op["responses"], (method, path, status)


def test_every_route_the_service_answers_is_documented(svc: Served) -> None:
    documented = set(OPENAPI["paths"])
    for path in ("/healthz", "/metrics", "/v1/admit", "/v1/check-call", "/v1/compile", "/v1/hooks/claude-code"):
        template = "/v1/hooks/{agent}" if path.startswith("/v1/hooks/") else path
        assert template in documented
    agents = OPENAPI["paths"]["/v1/hooks/{agent}"]["post"]["parameters"][0]["schema"]["enum"]
    assert sorted(agents) == sorted(AGENTS)
    for agent in agents:
        assert svc.request("POST", f"/v1/hooks/{agent}", b"{}")[0] == 200
    assert svc.request("POST", "/v1/hooks/nobody?form=command", b"{}")[0] == 404
    # Claude Code's http hook would read a 404 as a non-blocking error and run the line: a deny object.
    status, _, answer = svc.request("POST", "/v1/hooks/nobody", b"{}")
    assert status == 200 and json.loads(answer)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_the_admit_schema_names_exactly_the_fields_the_service_takes() -> None:
    props = set(OPENAPI["components"]["schemas"]["AdmitRequest"]["properties"])
    assert props == {"tool", "command", *ADMIT_FIELDS}


def test_check_call_allows_a_verified_call_and_refuses_bad_input(svc: Served, world: ShellWorld) -> None:
    status, doc = svc.json("/v1/check-call", {"tool": str(world.bin / "tool"), "name": ["x"], "arguments": {}})
    assert status == 200 and doc["exitCode"] in (0, 1, 3) and doc["admission"]["tool"] == "tool"
    status, evil = svc.json("/v1/check-call", {"tool": str(world.bin / "tool").replace("bin/", "bin-unsigned/")
                                               .replace("tool", "evil"), "name": ["x"]})
    assert status == 200 and evil["behavior"] != "allow"
    status, bad = svc.json("/v1/check-call", {"tool": "tool", "unexpected": 1})
    assert status == 200 and bad["exitCode"] == 2 and "unknown fields" in bad["error"]


def test_compile_answers_as_the_cli(svc: Served, world: ShellWorld, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in world.env.items():
        monkeypatch.setenv(key, value)
    meta = tmp_path / "tool.json"
    meta.write_text(json.dumps({"atip": {"version": "0.6"}, "name": "tool", "version": "1.0.0",
                                "description": "a test tool", "commands": {}}))
    status, doc = svc.json("/v1/compile", {"provider": "openai", "metadata": [str(meta)]})
    run = cli("compile", "--provider", "openai", str(meta), "--policy", str(world.policy), "--no-audit")
    assert status == 200 and doc["exitCode"] == run.code
    assert doc["tools"] == (json.loads(run.out) if run.out.strip() else None)


def _fenced(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(), re.S)


def test_the_systemd_unit_in_the_docs_parses_and_runs_serve() -> None:
    (unit,) = _fenced("ini")
    parser = configparser.ConfigParser(strict=True, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(unit)
    assert set(parser.sections()) == {"Unit", "Service", "Install"}
    exec_start = parser["Service"]["ExecStart"].split()
    assert exec_start[0].endswith("/atip-trust") and exec_start[1] == "serve"
    assert parser["Service"]["ExecReload"].endswith("-HUP $MAINPID")  # SIGHUP: reload
    assert parser["Service"]["UMask"] == "0077"


def test_the_launchd_plist_in_the_docs_parses_and_runs_serve() -> None:
    (plist,) = _fenced("xml")
    doc = plistlib.loads(plist.encode())
    assert doc["ProgramArguments"][1] == "serve" and doc["Label"] and doc["Umask"] == 0o77


def test_the_claude_code_http_hook_in_the_docs_blocks_on_failure() -> None:
    (settings,) = [b for b in _fenced("json") if '"type": "http"' in b]
    hook = json.loads(settings)["hooks"]["PreToolUse"][0]["hooks"][0]
    assert hook["url"].startswith("http://127.0.0.1:") and hook["url"].endswith("/v1/hooks/claude-code")
    assert hook["onFailure"] == "block" and "ATIP_TRUST_TOKEN" in hook["allowedEnvVars"]
