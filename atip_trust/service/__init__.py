"""``atip-trust serve``: one warm decision process for agent hooks over HTTP and for runtimes in any
language (docs/serve.md).

* ``app``: what a request means (routes, the CLI's own answer computed in-process, freshness);
* ``server``: the standard library's HTTP server on a Unix socket and on loopback TCP, with the
  checks a local decision service needs (peer credentials, bearer token, loopback ``Host``, size and
  time bounds, bounded concurrency, answer-before-exit);
* ``metrics``: the Prometheus text the ``/metrics`` endpoint serves.

The thin command-hook client (``hook --via-service``) is ``atip_trust.cli.hook_client``: it must load
almost nothing, so it lives beside the process entry point, not here.
"""
