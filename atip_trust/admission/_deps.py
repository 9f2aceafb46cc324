"""The deferred imports of ``atip_trust.admission``, each written once (docs/adr/0001-start-up.md).

Every name below is a module imported on its first attribute read (_base/lazy.py); the package's
modules take it from here (``from atip_trust.admission._deps import ...``) rather than importing it, so
that a cache-hit admission, which never reads it, never pays for it. The comment says when it is read.
"""

from __future__ import annotations

from atip_trust._base.lazy import lazy_import

TYPE_CHECKING = False  # typing's constant without importing typing at run time
if TYPE_CHECKING:
    import pathlib

    import atip_trust.evaluation.evaluate as evaluate_mod
    import atip_trust.state.audit as audit_mod
    from atip_trust.admission import agent_tools as agent_tools_mod
    from atip_trust.admission import metadata_trust, shims
    from atip_trust.admission import vsa as gate_vsa
    from atip_trust.facts import aip14
    from atip_trust.facts import metadata as metadata_mod
    from atip_trust.net import fetch as net_fetch
    from atip_trust.signature import bundle as bundles_mod
    from atip_trust.signature import keyless as keyless_mod
    from atip_trust.signature import legacy_bundle as legacy_mod
    from atip_trust.signature import keyless_sign as keyless_sign_mod
    from atip_trust.registry import local as local_mod
else:
    pathlib = lazy_import("pathlib")  # on first use only (_base/lazy.py); docs/caching.md
    metadata_trust = lazy_import("atip_trust.admission.metadata_trust")  # only with tool metadata
    # Only when a program is reached through a version-manager shim.
    shims = lazy_import("atip_trust.admission.shims")
    gate_vsa = lazy_import("atip_trust.admission.vsa")  # only with VSAs: signing code stays off the warm path
    # The evaluation itself: only on a cache miss.
    evaluate_mod = lazy_import("atip_trust.evaluation.evaluate")
    aip14 = lazy_import("atip_trust.facts.aip14")  # only with a contract (_base/lazy.py): YAML is not warm
    metadata_mod = lazy_import("atip_trust.facts.metadata")  # only with tool metadata
    net_fetch = lazy_import("atip_trust.net.fetch")  # HTTP: only for verify --fetch
    bundles_mod = lazy_import("atip_trust.signature.bundle")  # only for VSAs
    keyless_mod = lazy_import("atip_trust.signature.keyless")  # sigstore: only for keyless VSAs
    legacy_mod = lazy_import("atip_trust.signature.legacy_bundle")  # only for timestamp-only/legacy keyless VSAs
    keyless_sign_mod = lazy_import("atip_trust.signature.keyless_sign")  # only for verify --vsa-keyless
    local_mod = lazy_import("atip_trust.registry.local")  # only while the agent-tools tree exists
    # RFC §4.2's tree: only while it exists (state/dirs.py agent_tools_roots is the stat that says so).
    agent_tools_mod = lazy_import("atip_trust.admission.agent_tools")
    # The audit line: built and written only when auditing is on (--no-audit loads none of it).
    audit_mod = lazy_import("atip_trust.state.audit")

__all__ = [
    "agent_tools_mod",
    "aip14",
    "audit_mod",
    "bundles_mod",
    "evaluate_mod",
    "gate_vsa",
    "keyless_mod",
    "legacy_mod",
    "keyless_sign_mod",
    "local_mod",
    "metadata_mod",
    "metadata_trust",
    "net_fetch",
    "pathlib",
    "shims",
]
