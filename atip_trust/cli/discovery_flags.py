"""What ``scan`` and ``lock`` share: the flags that say where to look and what to trust, and the discovery
run they name (with a progress bar on a terminal). In a module of their own, below both commands, so that
``lock`` does not import ``scan`` (issue 35 item 4).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from atip_trust.admission.admit import load_admission_policy
from atip_trust.cli.output import is_terminal, rich_text
from atip_trust.discovery.discover import ToolRow, ToolSurface, discover
from atip_trust.discovery.lock import LOCK_FILE


def add_discovery_flags(p: argparse.ArgumentParser) -> None:
    """The flags ``scan`` and ``lock`` share: where to look and what to trust."""
    p.add_argument("dirs", nargs="*", metavar="DIR",
                   help="directories to scan (default: PATH's absolute entries, in order)")
    p.add_argument("--policy", metavar="FILE", help="local policy (default: the embedded default.json)")
    p.add_argument("--org-policy", metavar="FILE", help="an additional managed policy layer")
    p.add_argument("--shim-dir", metavar="DIR",
                   help="signed shims by digest (sha256/<hex>.json + .json.bundle), checked against the "
                   "policy's registry signers")
    p.add_argument("--bundle-dir", metavar="DIR",
                   help="Sigstore bundles and SLSA VSAs by digest (sha256/<hex>.sigstore.json, "
                   "sha256/<hex>.vsa.jsonl); a bundle beside a tool (TOOL.sigstore.json) is always used")
    p.add_argument("--vsa", action="append", default=[], metavar="FILE",
                   help="SLSA VSA (docs/vsa.md), offered to the tools whose digest it names; counts only "
                   "when signed by a verifier the policy trusts (trust.verifiers); repeatable")
    p.add_argument("--trusted-root", metavar="FILE", help="a Sigstore trusted_root.json the policy allows")
    p.add_argument("--fetch", action="store_true",
                   help="ask the policy's remote shim registries for tools with no local shim (without it: "
                   "cached verified shims and folder registries only; ATIP_OFFLINE forbids the network)")
    p.add_argument("--lock", dest="lock_file", metavar="FILE", default=LOCK_FILE,
                   help=f"the lock file (default: ./{LOCK_FILE})")
    p.add_argument("--no-cache", action="store_true",
                   help="neither read nor write the verdict and probe cache")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="tools handled at once (default: the number of CPUs)")


def run_discovery(args: argparse.Namespace) -> ToolSurface:
    policy = load_admission_policy(args.policy, org_policy=args.org_policy)
    dirs = args.dirs or None
    # `scan --update-registry` pins registry.json anew from what verifies now; `lock` shares this function.
    pin = getattr(args, "update_registry", None) is None
    if is_terminal(sys.stderr) and args.format == "text":
        with Progress(TextColumn("scanning"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      TextColumn("{task.description}"), transient=True,
                      console=console(sys.stderr)) as bar:
            task = bar.add_task("", total=None)

            def tick(done: int, total: int, row: ToolRow) -> None:
                bar.update(task, completed=done, total=total, description=rich_text(row.name))

            return discover(dirs, policy, shim_dir=args.shim_dir, bundle_dir=args.bundle_dir,
                            trusted_root=args.trusted_root, cache=not args.no_cache,
                            workers=args.workers, progress=tick, fetch=args.fetch, vsas=args.vsa,
                            registry_pin=pin)
    return discover(dirs, policy, shim_dir=args.shim_dir, bundle_dir=args.bundle_dir,
                    trusted_root=args.trusted_root, cache=not args.no_cache, workers=args.workers,
                    fetch=args.fetch, vsas=args.vsa, registry_pin=pin)


def console(stream: Any) -> Any:
    """A rich console on ``stream`` (for a terminal: a pipe gets plain lines)."""
    return Console(file=stream, highlight=False)


__all__ = ["add_discovery_flags", "console", "run_discovery"]
