"""The deferred imports of ``atip_trust.cli``, each written once (docs/adr/0001-start-up.md).

Every name below is a module imported on its first attribute read (_base/lazy.py); the package's
modules take it from here (``from atip_trust.cli._deps import ...``) rather than importing it, so
that a cache-hit admission, which never reads it, never pays for it. The comment says when it is read.
"""

from __future__ import annotations

from atip_trust._base.lazy import lazy_import

TYPE_CHECKING = False  # typing's constant without importing typing at run time
if TYPE_CHECKING:
    import pathlib
    import traceback
    from xml.etree import ElementTree

    from atip_trust.admission import admit as admit_mod
    from atip_trust.admission import agent_tools as agent_tools_mod
    from atip_trust.admission import policy_test
    from atip_trust.admission import vsa as gate_vsa
    from atip_trust.agents import formats as agent_formats
    from atip_trust.cli import hook_install
    from atip_trust.cli import hook_client
    from atip_trust.cli import main as cli_main
    from atip_trust.cli import sarif
    from atip_trust.policy import install as policy_install_mod
    from atip_trust.policy import signed as signed_mod
    from atip_trust.provenance import slsa
    from atip_trust.state import audit as audit_mod
else:
    pathlib = lazy_import("pathlib")  # only for --key files (docs/caching.md)
    traceback = lazy_import("traceback")  # only with -v
    ElementTree = lazy_import("xml.etree.ElementTree")  # only for --junit
    admit_mod = lazy_import("atip_trust.admission.admit")  # an unparsed command line's audit line only
    agent_tools_mod = lazy_import("atip_trust.admission.agent_tools")  # only `doctor` reads the whole tree
    policy_test = lazy_import("atip_trust.admission.policy_test")  # only `policy test` runs admissions
    # Signing: only with --emit-vsa (a warm verify loads no cryptography).
    gate_vsa = lazy_import("atip_trust.admission.vsa")
    hook_install = lazy_import("atip_trust.cli.hook_install")  # only `hook install`
    agent_formats = lazy_import("atip_trust.agents.formats")  # the thin hook client's late denial only
    # Imported inside launch.main(), so that its whole import runs with the collector paused.
    cli_main = lazy_import("atip_trust.cli.main")
    hook_client = lazy_import("atip_trust.cli.hook_client")  # only for hook --via-service (docs/serve.md)
    sarif = lazy_import("atip_trust.cli.sarif")  # only for SARIF
    signed_mod = lazy_import("atip_trust.policy.signed")  # only `policy sign` signs
    policy_install_mod = lazy_import("atip_trust.policy.install")  # only `policy install`
    # Only with gh's identity flags: the provenance model is not loaded by a warm admission.
    slsa = lazy_import("atip_trust.provenance.slsa")
    audit_mod = lazy_import("atip_trust.state.audit")  # only for --audit-log's help (its default path)

__all__ = [
    "ElementTree",
    "admit_mod",
    "agent_formats",
    "agent_tools_mod",
    "audit_mod",
    "cli_main",
    "gate_vsa",
    "hook_client",
    "hook_install",
    "pathlib",
    "policy_install_mod",
    "policy_test",
    "sarif",
    "signed_mod",
    "slsa",
    "traceback",
]
