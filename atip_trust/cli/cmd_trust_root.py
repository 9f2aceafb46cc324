"""``atip-trust trust-root update``: refresh the Sigstore trusted root over TUF (state/tufroot.py) into the
cache, where ``verify`` and ``admit`` then find it as the public-good (``--staging``: staging) root; with
``--url`` any TUF repository that publishes a ``trusted_root.json`` target (its first root given with
``--tuf-root``); ``--root-from DIR`` verifies a copied custom repository instead of fetching (air-gapped
machines): the copy is verified exactly as a download is, expiry included. The public-good and staging
repositories always start from the TUF root shipped with the package."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from atip_trust._base.files import read_capped
from atip_trust._base.limits import LIMITS
from atip_trust.cli.common import EXIT_OK, add_common_options
from atip_trust.cli.output import dump_json, one_line
from atip_trust.errors import UsageError
from atip_trust.state import tufroot


def register(sub: Any) -> None:
    p = add_common_options(sub.add_parser("trust-root", help="refresh the Sigstore trusted root over TUF",
                       description=__doc__))
    tsub = p.add_subparsers(dest="trust_root_command", metavar="ACTION", required=True, parser_class=type(p))
    q = add_common_options(tsub.add_parser(
        "update", help="fetch and verify the newest trusted root over TUF"))
    where = q.add_mutually_exclusive_group()
    where.add_argument("--staging", action="store_true", help=f"the staging repository ({tufroot.STAGING_URL})")
    where.add_argument("--url", metavar="URL", help=f"a TUF repository (default {tufroot.PRODUCTION_URL})")
    q.add_argument("--tuf-root", metavar="FILE", help="a custom repository's (--url) first TUF root.json, "
                   "trusted as given; refused for the public-good and staging repositories, which start from "
                   "the root shipped with the package")
    q.add_argument("--root-from", metavar="DIR", help="verify a local copy of a custom repository (--url: its "
                   "metadata files and targets/ folder) instead of fetching")
    q.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    url = tufroot.INSTANCE_URLS["staging"] if args.staging else (args.url or tufroot.INSTANCE_URLS["production"])
    bootstrap = read_capped(args.tuf_root, LIMITS.trusted_root_bytes * 8, what="TUF root") if args.tuf_root else None
    if args.root_from is not None and not args.root_from.strip():
        raise UsageError("--root-from needs a folder")
    record = tufroot.update(url, bootstrap=bootstrap, mirror=args.root_from)
    if args.format == "json":
        dump_json({"command": "trust-root update", **record.to_json()})
    else:
        sys.stdout.write(one_line(f"verified {tufroot.TARGET} from {url} over TUF: {record.digest}, stored in "
                                  f"{record.path}") + "\n")
    return EXIT_OK
