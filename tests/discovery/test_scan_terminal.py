"""``scan`` on a terminal (issue 26, item 7): a reason column, each tool's state named as JSON names it
(UNSIGNED, not "unverified"), and a summary grouped by state and reason, so a scan of a thousand tools
ends with what it comes to. Run on a real pseudo-terminal, and on a pipe, against real files signed by
the local test Sigstore."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from typing import Any

import pytest

from world import World

ORG_ID = "https://github.com/acme/tools/.github/workflows/release.yml@refs/tags/v1.0.0"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    w = World(tmp_path_factory.mktemp("scan-tty"), seed=267)
    for name, signed in (("signedtool", True), ("plaintool", False), ("othertool", False)):
        body = f"#!/bin/sh\necho {name}\n".encode()
        w.tool(f"bin/{name}", body)
        if signed:  # a bundle beside the tool is always used
            w.bundle(f"bin/{name}.sigstore.json", body, identity=ORG_ID)
    return {"dir": w.dir, "bins": w.dir / "bin",
            "policy": w.policy_file(signers=(ORG_ID,),
                                    permissions={"allow": [{"rule": "signedtool", "minTrustLevel": "VERIFIED"}]},
                                    defaults={"noMatch": "deny"})}


def scan_argv(world: dict[str, Any], *more: str) -> list[str]:
    return [sys.executable, "-m", "atip_trust", "scan", str(world["bins"]), "--policy", str(world["policy"]),
            "--no-cache", *more]


def env() -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("ATIP_TRUST_")}
    return {**base, "COLUMNS": "200", "TERM": "xterm-256color"}


def on_a_terminal(argv: list[str]) -> str:
    """Standard output a real terminal (a pty) shows, with its colours removed."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdout=slave, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env())
    os.close(slave)
    chunks: list[bytes] = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
    return ANSI.sub("", b"".join(chunks).decode("utf-8", "replace")).replace("\r\n", "\n")


def test_the_terminal_table_has_a_reason_column_and_json_state_names(world) -> None:
    shown = on_a_terminal(scan_argv(world))
    header = next(ln for ln in shown.splitlines() if "tool" in ln and "decision" in ln)
    assert re.search(r"trust\s.*probe\s.*decision\s.*reason\s.*surface", header), header
    rows = {ln.split()[1]: ln for ln in shown.splitlines() if ln.split()[1:2] and
            ln.split()[1] in ("signedtool", "plaintool", "othertool")}
    assert "VERIFIED" in rows["signedtool"] and "COMMAND_ALLOWED" in rows["signedtool"]
    assert "UNSIGNED" in rows["plaintool"] and "unverified" not in shown
    # The same names as --format json.
    items = json.loads(subprocess.run(scan_argv(world, "--format", "json"), capture_output=True, text=True,
                                      env=env(), timeout=120, stdin=subprocess.DEVNULL).stdout)
    assert {i["tool"]: i["trust_level"] for i in items} == \
        {"signedtool": "VERIFIED", "plaintool": "UNSIGNED", "othertool": "UNSIGNED"}


def test_the_scan_ends_with_a_summary_grouped_by_state_and_reason(world) -> None:
    items = json.loads(subprocess.run(scan_argv(world, "--format", "json"), capture_output=True, text=True,
                                      env=env(), timeout=120, stdin=subprocess.DEVNULL).stdout)
    unsigned_why = {i["decision"]["reasons"][0]["code"] for i in items if i["trust_level"] == "UNSIGNED"}
    for shown in (on_a_terminal(scan_argv(world)),
                  subprocess.run(scan_argv(world), capture_output=True, text=True, env=env(), timeout=120,
                                 stdin=subprocess.DEVNULL).stdout):
        lines = shown.rstrip("\n").splitlines()
        head = next(i for i, ln in enumerate(lines) if ln.startswith("3 tools: "))
        assert lines[head].startswith("3 tools: 2 UNSIGNED, 1 VERIFIED;"), lines[head]
        groups = [ln.split() for ln in lines[head + 1:]]
        assert groups[0][:3] == ["2", "UNSIGNED", "deny"] and groups[1] == ["1", "VERIFIED", "allow", "COMMAND_ALLOWED"]
        assert {groups[0][3]} == unsigned_why  # the reason is the decision's first, as in JSON
