"""``atip-trust policy install --org FILE``: the CLI side of policy/install.py (registered by cmd_policy)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from atip_trust.cli.common import EXIT_OK, add_common_options
from atip_trust.cli.output import dump_json, one_line
from atip_trust.policy import install


def register(psub: Any) -> None:
    p = add_common_options(psub.add_parser(
        "install", help="install an org policy (with its signers and signature files) where the CLI reads it",
        description="Check the org policy release FILE (it must load; with FILE.signers.json its signature "
        "must verify) and copy it, FILE.signers.json, FILE.sig.json, FILE.sigstore.json and the key and root "
        "files they name by relative path, to the standard org policy path (/etc/atip-trust/org-policy.json "
        "on Linux), files 0644 and folders 0755, owned by the user running it (run it as root). "
        "docs/signed-policy.md."))
    p.add_argument("--org", metavar="FILE", required=True, help="the org policy release to install")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    done = install.install_org(args.org)
    if args.format == "json":
        dump_json({"command": "policy install", **done.to_json()})
        return EXIT_OK
    for src, dst in done.copies:
        sys.stdout.write(one_line(f"installed {src} -> {dst} (0644)") + "\n")
    for path in done.removed:
        sys.stdout.write(one_line(f"removed {path} (a signature of an earlier release)") + "\n")
    state = f"signed, serial {done.serial}" if done.serial is not None else \
        "unsigned (no signers file: its ownership alone protects it)"
    sys.stdout.write(one_line(f"org policy in force: {done.path} ({state})") + "\n")
    return EXIT_OK


__all__ = ["register", "run"]
