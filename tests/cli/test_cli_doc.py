"""docs/cli.md is the argparse parser, rendered (docs/make_cli_doc.py): it cannot drift from the command
line the code accepts."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from atip_trust.cli.main import build_parser

import doc_scripts

ROOT = Path(__file__).resolve().parents[2]


def generator() -> ModuleType:
    return doc_scripts.generator("make_cli_doc")


def test_committed_cli_reference_is_what_the_parser_generates() -> None:
    committed = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert committed == generator().render(), "docs/cli.md is stale: run python docs/make_cli_doc.py"


def test_every_subcommand_and_option_is_in_the_reference() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    missing: list[str] = []

    def walk(prog: str, parser: argparse.ArgumentParser) -> None:
        if prog != "atip-trust" and f"`{prog}`" not in text:
            missing.append(prog)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(f"{prog} {name}", sub)
            elif action.help is not argparse.SUPPRESS and "--help" not in action.option_strings:
                missing.extend(f"{prog} {flag}" for flag in action.option_strings if f"`{flag}`" not in text)

    walk("atip-trust", build_parser())
    assert missing == []


def test_a_new_option_makes_the_reference_stale() -> None:
    committed = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    sub.choices["hash"].add_argument("--new-flag", help="a flag the reference does not know yet")
    rendered = generator().render(parser)
    assert rendered != committed and "`--new-flag`" in rendered


def test_check_passes_on_the_committed_reference() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "docs" / "make_cli_doc.py"), "--check"],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, check=False)
    assert (done.returncode, done.stderr) == (0, "")
