"""The fast paths' module lists, declared once: which modules each start-up path never loads, and why
(docs/adr/0001-start-up.md). tests/base/test_startup.py runs each path in a fresh interpreter under
``PROBE``, which records who imported every module, and fails naming the module that should not have
been loaded, why it is kept off that path, and the chain of imports that brought it in.

A name stands for the module and everything under it (``sigstore`` covers ``sigstore.verify``).

It also declares ``DEFERRING``: the only modules that may defer an import (_base/lazy.py), checked by
tests/base/test_layers.py (rule 3 of the import rules, docs/contributing.md).
"""

from __future__ import annotations

#: Why a module is kept off the fast paths: the one place that says it.
WHY: dict[str, str] = {
    # The verification stack: a cache hit reuses the trust report (state/verdict_cache.py).
    "sigstore": "the keyless verifier; a cache hit reuses the trust report",
    "sigstore_models": "sigstore's models; a cache hit reuses the trust report",
    "rfc3161_client": "timestamp verification; a cache hit reuses the trust report",
    "cryptography": "signature and certificate checks; a cache hit reuses the trust report",
    "jsonschema": "policy schema validation; the verdict cache remembers a policy found valid",
    "referencing": "jsonschema's $ref resolver; the verdict cache remembers a policy found valid",
    "httpx": "HTTP, only for a fetch or a registry",
    "rich": "terminal rendering, not used by the JSON and text outputs",
    "in_toto_attestation": "provenance statements, only read when there is an attestation",
    "google": "protobuf (in-toto's models), only read when there is an attestation",
    # Our own modules a warm admission has no use for.
    "atip_trust.provenance.slsa": "the provenance model: only a policy with sources or builders needs it",
    "atip_trust.registry.client": "the registry client: only a policy that names a registry",
    "atip_trust.net.fetch": "our HTTP layer: only verify --fetch and registries",
    "atip_trust.facts.metadata": "the metadata model: only with tool metadata",
    "atip_trust.admission.metadata_trust": "metadata trust: only with tool metadata",
    "atip_trust.cli.sarif": "SARIF: only --format sarif",
    "atip_trust.evaluation.evaluate": "the evaluation itself: a cache hit reuses its report",
    "atip_trust.admission.agent_tools": "RFC §4.2's tree: read only while it exists (state/dirs.py "
                                        "agent_tools_roots stats it)",
    # An admission that writes no audit line (--no-audit, the hook's too) builds none.
    "atip_trust.state.audit": "the audit line: built only when it is written, and --no-audit writes none",
    "fcntl": "(with the audit log: its append lock)",
    # Standard-library modules, each a few ms of start-up, that a cache hit has no use for.
    "dataclasses": "value classes are Records (_base/record.py); dataclasses pulls in inspect",
    "inspect": "(with dataclasses) several ms of imports",
    "datetime": "times are epoch seconds on the warm path; datetime only parses a waiver's expiry",
    "hmac": "a constant-time compare only when an expected digest is given",
    "platformdirs": "the cache and state folders are found from the environment (state/dirs.py)",
    "tempfile": "only a write needs it (the verdict cache is read, not written, on a hit)",
    "shutil": "(with tempfile)",
    "random": "(with tempfile)",
    "shlex": "only for words that need shell quoting",
    "threading": "threads only hash many files",
    "queue": "(with threading)",
    "concurrent.futures": "pools only for many files (and it imports logging)",
    "base64": "only for a JSON field that carries bytes",
    "copy": "only when declared effects are merged",
    "importlib.resources": "the grammar package's highlight queries; the hook loads the bindings alone (agents/bash_syntax.py)",
    # Checked in a bare interpreter only (-S: an editable install's site hook imports these itself).
    "pathlib": "paths are text on the warm path (pathlib brings urllib.parse and ipaddress)",
    "urllib.parse": "(with pathlib)",
    "ipaddress": "(with pathlib)",
}

#: Only checked without site-packages (``python -S``): see WHY.
BARE_ONLY: tuple[str, ...] = ("pathlib", "urllib.parse", "ipaddress")

_VERIFIERS = ("sigstore", "sigstore_models", "rfc3161_client", "cryptography", "jsonschema", "referencing",
              "httpx", "rich", "in_toto_attestation", "google")
_OWN = ("atip_trust.provenance.slsa", "atip_trust.registry.client", "atip_trust.net.fetch",
        "atip_trust.facts.metadata", "atip_trust.admission.metadata_trust", "atip_trust.cli.sarif",
        "atip_trust.evaluation.evaluate", "atip_trust.admission.agent_tools")
_STD = ("dataclasses", "inspect", "datetime", "hmac", "platformdirs", "tempfile", "shutil", "random",
        "shlex", "threading", "queue", "concurrent.futures", "base64", "copy")

#: Not loaded when no audit line is written (--no-audit), and RFC §4.2's tree is absent.
_UNAUDITED = ("atip_trust.state.audit", "fcntl")

#: Each fast path -> the modules it never loads.
NEVER: dict[str, tuple[str, ...]] = {
    # ``--version`` and ``hash`` of a file or two: each subcommand's parser is built on its own.
    "version": (*_VERIFIERS, "dataclasses", "concurrent.futures", "platformdirs", "shutil", *BARE_ONLY),
    "hash": (*_VERIFIERS, "dataclasses", "concurrent.futures", "platformdirs", "shutil", *BARE_ONLY),
    # ``admit`` and ``verify`` whose trust report (and policy validation) come from the verdict cache.
    "admit-hit": (*_VERIFIERS, *_OWN, *_STD, *BARE_ONLY),
    # The same with --no-audit: no audit line is built, so the audit module is not loaded.
    "admit-hit-no-audit": (*_VERIFIERS, *_OWN, *_STD, *BARE_ONLY, *_UNAUDITED),
    "verify-hit": (*_VERIFIERS, *_OWN, *_STD, *BARE_ONLY, *_UNAUDITED),
    # The agent hook answering from the cache: the parser comes from the grammar's compiled bindings
    # alone (agents/bash_syntax.py), so neither package's __init__ (importlib.resources) runs.
    "hook-hit": (*_VERIFIERS, *_OWN, *_STD, "importlib.resources"),
}


#: The modules that may defer an import (``x509 = lazy_import("cryptography.x509")``, _base/lazy.py): those
#: the probed commands load (tests/base/test_startup.py: ``--version``, ``hash``, and ``admit``, ``verify``
#: and a hook answer both filling the verdict cache and answering from it, the hook through the console
#: script's entry, cli/launch.py, which defers the CLI so that it loads with the collector paused),
#: package ``__init__``s included.
#: Deferring pays only in a module such a command loads but whose every use does not need what it defers
#: (a warm run needs no verifier; a miss verifying a signature needs no signing client); anywhere else it
#: would hide a dependency for nothing, so every other module imports plainly at the top
#: (tests/base/test_layers.py, rule 3). test_startup (``-m slow``) checks that a probed command really
#: loads each module named here, so the list cannot keep a module that left those paths. A module that
#: joins them and needs to defer is added here, with the reason in its own comment at the deferral.
DEFERRING: frozenset[str] = frozenset({
    "atip_trust", "atip_trust._version", "atip_trust.errors",
    "atip_trust._base", "atip_trust._base.files", "atip_trust._base.jsonio", "atip_trust._base.lazy",
    "atip_trust._base.limits", "atip_trust._base.parallel", "atip_trust._base.record", "atip_trust._base.schema",
    "atip_trust._base.shipped", "atip_trust._base.statmemo", "atip_trust._base.times",
    "atip_trust.admission", "atip_trust.admission.admit", "atip_trust.admission.command_decision",
    "atip_trust.admission.interactive", "atip_trust.admission.options", "atip_trust.admission.verdict_key",
    "atip_trust.admission.verify",
    "atip_trust.agents", "atip_trust.agents.bash_syntax", "atip_trust.agents.formats", "atip_trust.agents.getopt",
    "atip_trust.agents.git_repository", "atip_trust.agents.hooks", "atip_trust.agents.identity",
    "atip_trust.agents.runners", "atip_trust.agents.shell_model", "atip_trust.agents.spellings",
    "atip_trust.agents.tables", "atip_trust.agents.words", "atip_trust.agents.writes",
    "atip_trust.cli", "atip_trust.cli.cmd_admit", "atip_trust.cli.cmd_hash", "atip_trust.cli.cmd_hook",
    "atip_trust.cli.cmd_verify", "atip_trust.cli.common", "atip_trust.cli.identity_flags", "atip_trust.cli.jq",
    "atip_trust.cli.launch",
    "atip_trust.cli.main", "atip_trust.cli.output", "atip_trust.cli.policy_flags", "atip_trust.cli.vsa_flags",
    "atip_trust.evaluation", "atip_trust.evaluation.evaluate", "atip_trust.evaluation.inputs",
    "atip_trust.execution", "atip_trust.execution.confined", "atip_trust.execution.env", "atip_trust.execution.exec",
    "atip_trust.execution.sandbox",
    "atip_trust.facts", "atip_trust.facts.artifact", "atip_trust.facts.digest", "atip_trust.facts.effects",
    "atip_trust.facts.program_tables", "atip_trust.facts.programs", "atip_trust.facts.report",
    "atip_trust.policy", "atip_trust.policy.anchors", "atip_trust.policy.compose", "atip_trust.policy.constraints",
    "atip_trust.policy.decide", "atip_trust.policy.load", "atip_trust.policy.model", "atip_trust.policy.rules",
    "atip_trust.policy.serials",
    "atip_trust.signature", "atip_trust.signature.algorithms", "atip_trust.signature.bundle",
    "atip_trust.signature.dsse", "atip_trust.signature.fulcio", "atip_trust.signature.identity",
    "atip_trust.signature.keyless", "atip_trust.signature.tlog", "atip_trust.signature.trustroot",
    "atip_trust.state", "atip_trust.state.audit", "atip_trust.state.broken", "atip_trust.state.dirs",
    "atip_trust.state.tufroot", "atip_trust.state.verdict_cache",
})


def never(path: str, *, bare: bool) -> tuple[str, ...]:
    """The modules ``path`` must not load; without ``bare``, less those only a bare run can check."""
    return tuple(m for m in NEVER[path] if bare or m not in BARE_ONLY)


#: Runs in the probed interpreter before anything else: a meta-path finder that records, for every
#: module imported for the first time, the module and line that imported it (a deferred import,
#: _base/lazy.py, is charged to the code that read the name, not to lazy.py).
RECORDER = r"""
import sys
_WHO = {}
class _Who:
    def find_spec(self, name, path=None, target=None):
        if name not in _WHO:
            stack, f = [], sys._getframe(1)
            while f is not None:
                mod = f.f_globals.get("__name__", "?")
                if not (mod.startswith("importlib") or mod == "atip_trust._base.lazy"
                        or f.f_code.co_filename.startswith("<frozen")):
                    stack.append(f"{mod}:{f.f_lineno}")
                f = f.f_back
            _WHO[name] = stack
        return None
sys.meta_path.insert(0, _Who())
"""


def chain(who: dict[str, list[str]], module: str) -> str:
    """``module`` <- the code that imported it (module:line) <- its caller ... up to the script: the
    stack at the moment ``module`` was first imported (frames of importlib and _base/lazy.py left out)."""
    return " <- ".join([module, *who.get(module, ["(before the probe started)"])])


def loaded_against(modules: list[str], who: dict[str, list[str]], path: str, *, bare: bool) -> list[str]:
    """One line per module of ``never(path)`` found loaded: the module, why it is kept off the path, and
    the import chain that loaded it (empty: the path holds)."""
    out = []
    for cold in never(path, bare=bare):
        hits = sorted(m for m in modules if m == cold or m.startswith(cold + "."))
        if hits:
            out.append(f"{path}: {cold} was loaded, but {WHY[cold]}; imported by {chain(who, hits[0])}")
    return out
