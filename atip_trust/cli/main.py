"""Entry point: every subcommand of ``atip-trust``, each imported by its own name when its parser is
built, run through the one catch point (cli/common.py ``run``; the exit codes of docs/contract.md).

Each command module is deferred (_base/lazy.py): a command line builds the parser of the one subcommand
it names, so ``hash`` or a warm ``admit`` loads its own module and none of the others' dependencies
(docs/adr/0001-start-up.md). ``--help`` without a subcommand builds them all.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING

from atip_trust._base.lazy import lazy_import
from atip_trust.cli import common
from atip_trust.cli.common import common_options  # docs/make_cli_doc.py lists the shared options from it

if TYPE_CHECKING:
    from atip_trust.cli import (
        cmd_admit,
        cmd_cache,
        cmd_compile,
        cmd_doctor,
        cmd_exec,
        cmd_hash,
        cmd_hook,
        cmd_lock,
        cmd_metadata,
        cmd_policy,
        cmd_scan,
        cmd_serve,
        cmd_trust_root,
        cmd_verify,
        cmd_verify_vsa,
    )
else:  # each loaded only when its subcommand is named (or by --help)
    cmd_admit = lazy_import("atip_trust.cli.cmd_admit")
    cmd_cache = lazy_import("atip_trust.cli.cmd_cache")
    cmd_compile = lazy_import("atip_trust.cli.cmd_compile")
    cmd_doctor = lazy_import("atip_trust.cli.cmd_doctor")
    cmd_exec = lazy_import("atip_trust.cli.cmd_exec")
    cmd_hash = lazy_import("atip_trust.cli.cmd_hash")
    cmd_hook = lazy_import("atip_trust.cli.cmd_hook")
    cmd_lock = lazy_import("atip_trust.cli.cmd_lock")
    cmd_metadata = lazy_import("atip_trust.cli.cmd_metadata")
    cmd_policy = lazy_import("atip_trust.cli.cmd_policy")
    cmd_scan = lazy_import("atip_trust.cli.cmd_scan")
    cmd_serve = lazy_import("atip_trust.cli.cmd_serve")
    cmd_trust_root = lazy_import("atip_trust.cli.cmd_trust_root")
    cmd_verify = lazy_import("atip_trust.cli.cmd_verify")
    cmd_verify_vsa = lazy_import("atip_trust.cli.cmd_verify_vsa")

#: Subcommand -> its module, with ``register(subparsers)`` (each parser it adds takes
#: ``add_common_options``); listed by ``--help`` in this order.
COMMANDS: dict[str, ModuleType] = {
    "hash": cmd_hash, "metadata": cmd_metadata, "verify": cmd_verify, "verify-vsa": cmd_verify_vsa,
    "admit": cmd_admit, "exec": cmd_exec, "hook": cmd_hook, "policy": cmd_policy, "cache": cmd_cache,
    "compile": cmd_compile, "scan": cmd_scan, "lock": cmd_lock, "trust-root": cmd_trust_root,
    "doctor": cmd_doctor, "serve": cmd_serve,
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or with ``only``, just that subcommand's parser."""
    return common.build_parser(COMMANDS, only)


def command_of(argv: Sequence[str]) -> str | None:
    """The subcommand an argument list names, or None."""
    return common.command_of(argv, COMMANDS)


def main(argv: Sequence[str] | None = None, *, started: Callable[[], None] | None = None) -> int:
    """Run one command line; ``started`` is called once its command is about to run (cli/launch.py)."""
    return common.run(sys.argv[1:] if argv is None else argv, COMMANDS, started=started)


__all__ = ["COMMANDS", "build_parser", "command_of", "common_options", "main"]
