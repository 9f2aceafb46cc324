"""``atip-trust cache stats`` and ``cache clear``: the verdict cache (state/verdict_cache.py,
docs/caching.md): how many trust reports it holds and where, or empty it. ``cache list-broken`` and
``cache clear-broken sha256:HEX``: the digests marked for breaking their declared effects at run time
(state/broken.py, docs/sandbox.md); ``clear`` never removes those, only a person naming the digest does."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from atip_trust.cli.common import EXIT_OK, add_common_options
from atip_trust.cli.output import dump_json, one_line
from atip_trust.state.broken import all_marks, clear_broken
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
    q = add_common_options(csub.add_parser("list-broken", help="digests marked for breaking their "
                                           "declared effects at run time (EFFECT_VIOLATION)"))
    q.set_defaults(func=run_broken)
    q = add_common_options(csub.add_parser("clear-broken", help="clear one digest's EFFECT_VIOLATION mark, so "
                                           "its admissions are decided again"))
    q.add_argument("digest", metavar="sha256:HEX", help="the marked digest (as 'cache list-broken' shows it)")
    q.set_defaults(func=run_broken)


def run_broken(args: argparse.Namespace) -> int:
    """Exit 0 when listed or cleared, 1 when there was no mark for the digest to clear."""
    if args.cache_command == "clear-broken":
        cleared = clear_broken(args.digest)
        if args.format == "json":
            dump_json({"digest": args.digest, "cleared": cleared})
        else:
            sys.stdout.write(one_line(f"{'cleared' if cleared else 'no mark for'} {args.digest}") + "\n")
        return EXIT_OK if cleared else 1
    marks = all_marks()
    if args.format == "json":
        dump_json({"broken": marks})
    for m in marks if args.format != "json" else []:
        sys.stdout.write(one_line(f"{m.get('digest')} {m.get('tool')}: tried {m.get('attempt')}") + "\n")
    return EXIT_OK


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
