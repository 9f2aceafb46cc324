"""``atip-trust cache stats`` and ``cache clear``: the verdict cache (state/verdict_cache.py,
docs/caching.md): how many trust reports it holds and where, or empty it."""

from __future__ import annotations

import argparse
import sys
TYPE_CHECKING = False  # typing's constant without importing typing at run time (docs/caching.md)
if TYPE_CHECKING:
    from typing import Any

from atip_trust.cli.common import EXIT_OK, add_common_options
from atip_trust.cli.output import dump_json, one_line
from atip_trust.state.verdict_cache import VerdictCache


def register(sub: Any) -> None:
    p = add_common_options(sub.add_parser("cache", help="inspect or empty the verdict cache",
                       description="The verdict cache keeps trust reports by content (ATIP_CACHE_DIR, "
                       "else the user cache dir). Decisions are never cached."))
    csub = p.add_subparsers(dest="cache_command", metavar="ACTION", required=True,
                            parser_class=type(p))
    for name, help_text in (("stats", "entries, bytes and the cache's path"),
                            ("clear", "remove every entry")):
        q = add_common_options(csub.add_parser(name, help=help_text))
        q.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    cache = VerdictCache()
    removed = cache.clear() if args.cache_command == "clear" else None
    stats = cache.stats()
    if args.format == "json":
        out = stats.to_json()
        if removed is not None:
            out["removed"] = removed
        dump_json(out)
    elif removed is not None:
        sys.stdout.write(one_line(f"removed {removed} entries from {stats.path}") + "\n")
    else:
        sys.stdout.write(one_line(f"{stats.entries} entries, {stats.bytes} bytes in {stats.path}") + "\n")
    return EXIT_OK
