"""Start-up: a subcommand imports only what it uses (each subcommand's parser is built on its own), so
`--version` and `hash` never load sigstore, cryptography, jsonschema or httpx. Figures: bench/startup.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
HEAVY = ("sigstore", "sigstore_models", "cryptography", "jsonschema", "httpx", "rfc3161_client")

PROBE = """
import json, sys
from atip_trust.cli.main import main
rc = main(json.loads(sys.argv[1]))
heavy = sorted({m.split('.')[0] for m in sys.modules} & set(json.loads(sys.argv[2])))
sys.stderr.write(json.dumps({"rc": rc, "heavy": heavy}) + chr(10))
"""


@pytest.mark.parametrize("argv", [["--version"], ["hash", "./README.md"], ["hash", "--format", "json",
                                                                            "./pyproject.toml"]])
def test_version_and_hash_load_no_verification_stack(argv: list[str]) -> None:
    p = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv), json.dumps(HEAVY)], cwd=REPO,
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    out = json.loads(p.stderr.strip().splitlines()[-1])
    assert out == {"rc": 0, "heavy": []}, p.stderr


def test_only_the_named_subcommand_is_built_but_help_lists_them_all() -> None:
    from atip_trust.cli.main import COMMANDS, build_parser, command_of

    assert command_of(["--format", "json", "verify", "x"]) == "verify"
    assert command_of(["-v", "--", "hash"]) is None
    full = subprocess.run([sys.executable, "-m", "atip_trust", "--help"], capture_output=True, text=True,
                          timeout=60, cwd=REPO, stdin=subprocess.DEVNULL)
    assert full.returncode == 0 and all(c in full.stdout for c in COMMANDS)
    bad = subprocess.run([sys.executable, "-m", "atip_trust", "nosuch"], capture_output=True, text=True,
                         timeout=60, cwd=REPO, stdin=subprocess.DEVNULL)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr
    assert build_parser("hash").parse_args(["hash", "README.md"]).command == "hash"
