"""``atip-trust serve``: a resident decision service for agent hooks over HTTP and for runtimes in any
language, with the CLI's own verdicts (service/app.py says how; docs/serve.md how to run it).

It runs in the foreground until SIGTERM or SIGINT (then it stops accepting, answers what it has read,
and exits 0); SIGHUP forgets every remembered file, so the next request reads everything again.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from types import FrameType
from typing import Any

from atip_trust._base.statmemo import forget_all
from atip_trust.cli.common import add_common_options
from atip_trust.cli.policy_flags import add_audit_flags, add_policy_flags
from atip_trust.errors import UsageError
from atip_trust.service import server
from atip_trust.service.app import Service, forwarded_flags


def register(sub: Any) -> None:
    p = add_common_options(sub.add_parser(
        "serve",
        help="a resident decision service: agent hooks over HTTP, admit and check-call for any runtime",
        description="Answer hook, admit, check-call and compile requests over a Unix socket (and loopback "
        "HTTP with --http), with the same verdicts the CLI gives for the same input (docs/serve.md). "
        "Policy, evidence and audit flags are the defaults of every request.",
    ))
    p.add_argument("--socket", metavar="PATH",
                   help="Unix socket (default: $XDG_RUNTIME_DIR/atip-trust/serve.sock); mode 0600, and "
                   "only your user's processes are answered (peer credentials)")
    p.add_argument("--http", metavar="127.0.0.1:PORT",
                   help="also serve HTTP on this loopback address (needs --token-file); port 0 picks one")
    p.add_argument("--token-file", metavar="FILE",
                   help="bearer token for --http requests, in a file of mode 0600")
    p.add_argument("--max-request-bytes", type=int, default=1 << 20, metavar="N",
                   help="largest request body (default 1 MiB)")
    p.add_argument("--request-deadline", type=float, default=10.0, metavar="SECONDS",
                   help="a connection must send a whole request within this time (default 10)")
    p.add_argument("--max-connections", type=int, default=64, metavar="N",
                   help="requests decided at once, taken after a request is read and authenticated; "
                        "a request that finds none within its deadline is answered 503 (a hook: a deny) "
                        "(default 64)")
    add_policy_flags(p)
    p.add_argument("--shim-dir", metavar="DIR", help="local shim folder, looked up by digest")
    p.add_argument("--bundle-dir", metavar="DIR",
                   help="Sigstore bundles by digest (DIR/sha256/<hex>.sigstore.json), for hook requests")
    p.add_argument("--pin", action="store_true", help="hook requests pin what they allow (as hook --pin)")
    add_audit_flags(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.max_request_bytes < 1 or args.max_connections < 1 or args.request_deadline <= 0:
        raise UsageError("--max-request-bytes, --max-connections and --request-deadline must be positive")
    service = Service(forwarded_flags(args.cli_argv))
    service.check_flags()
    sock = args.socket or server.default_socket()
    servers: list[Any] = [server.unix_server(sock, service)]
    try:
        if args.http:
            if not args.token_file:
                raise UsageError("--http needs --token-file: loopback HTTP is open to every local user")
            token = server.read_token(args.token_file)
            servers.append(server.tcp_server(server.parse_http_address(args.http), service, token))
        _serve(args, servers, service)
    finally:
        for listener in servers:
            listener.server_close()
        server.remove_socket(sock)
    return 0


def _serve(args: argparse.Namespace, servers: list[Any], service: Service) -> None:
    for listener in servers:
        listener.verbose, listener.max_request_bytes = bool(args.verbose), args.max_request_bytes
        listener.request_deadline = args.request_deadline
        listener.setup_limits(args.max_connections)
        threading.Thread(target=listener.serve_forever, name="atip-trust-serve", daemon=True).start()

    def stop(signum: int, frame: FrameType | None) -> None:
        service.stop()

    def reload(signum: int, frame: FrameType | None) -> None:
        forget_all()

    # Handlers first, then the "listening" lines: a supervisor may signal as soon as it reads them.
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGHUP, reload)
    for listener in servers:
        where = listener.server_address
        sys.stdout.write(f"atip-trust serve: listening on "
                         f"{'unix:' + where if isinstance(where, str) else f'http://{where[0]}:{where[1]}'}\n")
    sys.stdout.flush()
    service.run_jobs(service.stopping.is_set)
    # Stop accepting, then answer every request already read: server_close waits for their threads,
    # which wait for the answers this thread still gives.
    closer = threading.Thread(target=lambda: [(s.shutdown(), s.server_close()) for s in servers])
    closer.start()
    service.run_jobs(lambda: not closer.is_alive())
    closer.join()


__all__ = ["register", "run"]
