"""The process entry point of ``atip-trust`` (the console script and ``python -m atip_trust``).

Start-up builds tens of thousands of objects — modules, classes, functions — that all live until the
process exits, and the cyclic garbage collector walks them again at every full collection it starts
meanwhile: ~10 ms of a warm admission (docs/adr/0001-start-up.md, ``python -m bench --only admit``). So
the collector is paused while the command's modules load and its arguments are parsed; then what
start-up built is moved out of its sight (``gc.freeze``) and it runs again for the command itself, so a
long ``scan`` or ``compile`` is collected as usual. Reference counting frees everything else
throughout. A library caller (``atip_trust.admit`` in an agent runtime) never comes through here: its
collector is left alone.
"""

from __future__ import annotations

import gc
import sys
from typing import TYPE_CHECKING

from atip_trust._base.lazy import lazy_import

if TYPE_CHECKING:
    from atip_trust.agents import formats
    from atip_trust.agents.formats import HookAnswer
    from atip_trust.cli import hook_client
    from atip_trust.cli import main as cli_main
else:
    # Imported inside main() below, so that its whole import runs with the collector paused.
    cli_main = lazy_import("atip_trust.cli.main")
    hook_client = lazy_import("atip_trust.cli.hook_client")  # only for hook --via-service (docs/serve.md)
    formats = lazy_import("atip_trust.agents.formats")  # only for the thin client's late denial

#: The agents' hook formats (agents/formats.py AGENTS, not imported here: it would load the record
#: machinery on every start; tests/service/test_serve.py checks the two lists agree).
AGENTS = ("claude-code", "codex", "gemini", "copilot", "cursor")


def via_service(argv: list[str]) -> bool:
    """``hook AGENT … --via-service`` (not ``hook install … --via-service``, which writes that command)."""
    return len(argv) > 1 and argv[0] == "hook" and argv[1] in AGENTS and "--via-service" in argv


def _started() -> None:
    gc.freeze()
    gc.enable()


def _late_denial(agent: str, message: str) -> HookAnswer:
    """The agent's denial for a service that answered too late (cli/hook_client.py)."""
    return formats.render_error(agent, message)


def main() -> int:
    argv = sys.argv[1:]
    if via_service(argv):  # a thin client of `serve` (docs/serve.md); loaded only then
        answered = hook_client.main(argv, _late_denial)
        if answered is not None:
            return answered
        # No answer from the service: decided here, as `hook` without the flag would (the client has
        # put the input it read back on standard input and the hook's own words in sys.argv).
    gc.disable()
    try:
        return cli_main.main(sys.argv[1:], started=_started)
    finally:
        if not gc.isenabled():  # the command never started (usage error, --help): nothing to do
            gc.enable()


__all__ = ["AGENTS", "main", "via_service"]
