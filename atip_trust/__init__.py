"""atip-trust: supply-chain trust verification and policy for the tools AI agents run.

The public API is exactly ``__all__`` below, a reviewed list; every name is imported lazily on first
use (PEP 562 module ``__getattr__``), so ``import atip_trust`` costs nothing until a name is needed and
``atip-trust --version`` or ``hash`` never load sigstore. Everything else lives in layered modules
(README, "Architecture") and is internal: import it from its module at your own risk.

Typical use::

    from atip_trust import (Artifact, Evidence, constraints_from_policy, decide,
                            default_trust_root, evaluate, load_policy)

    policy = load_policy("policies/default.json")
    with Artifact.open("/usr/bin/gh") as art:
        report = evaluate(art, Evidence(), constraints_from_policy(policy), default_trust_root())
    decision = decide(policy, report, tool_name="gh", command="pr view 1")
"""

from __future__ import annotations

import importlib
TYPE_CHECKING = False  # typing's constant without importing typing at run time (README "Verdict cache")
if TYPE_CHECKING:
    from typing import Any

#: name -> the module that defines it
_API: dict[str, str] = {
    "__version__": "atip_trust._version",
    "AtipTrustError": "atip_trust.errors",
    "UntrustedInputError": "atip_trust.errors",
    "EnvironmentFailure": "atip_trust.errors",
    "UsageError": "atip_trust.errors",
    "ArtifactAccessError": "atip_trust.errors",
    "NotARegularFileError": "atip_trust.errors",
    "InputTooLargeError": "atip_trust.errors",
    "MalformedInputError": "atip_trust.errors",
    "BundleError": "atip_trust.errors",
    "MetadataError": "atip_trust.errors",
    "PolicyError": "atip_trust.errors",
    "TrustRootError": "atip_trust.errors",
    "NetworkError": "atip_trust.errors",
    "LIMITS": "atip_trust.limits",
    "Limits": "atip_trust.limits",
    "Digest": "atip_trust.facts.digest",
    "Artifact": "atip_trust.facts.artifact",
    "DigestSubject": "atip_trust.facts.artifact",
    "resolve": "atip_trust.facts.artifact",
    "TrustLevel": "atip_trust.facts.report",
    "Check": "atip_trust.facts.report",
    "SignatureResult": "atip_trust.facts.report",
    "ProvenanceResult": "atip_trust.facts.report",
    "TrustReport": "atip_trust.facts.report",
    "Reason": "atip_trust.facts.report",
    "Decision": "atip_trust.facts.report",
    "load_metadata": "atip_trust.facts.metadata",
    "TrustRoot": "atip_trust.signature.trustroot",
    "default_trust_root": "atip_trust.signature.trustroot",
    "IdentityRule": "atip_trust.signature.identity",
    "BuilderMap": "atip_trust.provenance.slsa",
    "SLSA_PROVENANCE_V02": "atip_trust.provenance.slsa",
    "SLSA_PROVENANCE_V1": "atip_trust.provenance.slsa",
    "Evidence": "atip_trust.evaluate",
    "Constraints": "atip_trust.evaluate",
    "evaluate": "atip_trust.evaluate",
    "Policy": "atip_trust.policy.model",
    "PolicyLayer": "atip_trust.policy.model",
    "load_layer": "atip_trust.policy.load",
    "compose": "atip_trust.policy.compose",
    "load_policy": "atip_trust.policy.compose",
    "constraints_from_policy": "atip_trust.policy.constraints",
    "choose_trusted_root": "atip_trust.policy.constraints",
    "decide": "atip_trust.policy.decide",
    "to_agent_tool": "atip_trust.policy.decide",
    "explain_policy": "atip_trust.policy.explain",
    "append_audit": "atip_trust.state.audit",
    "Admission": "atip_trust.gate.admit",
    "admit": "atip_trust.gate.admit",
    "load_admission_policy": "atip_trust.gate.admit",
    "HeldTool": "atip_trust.gate.held",
    "Verification": "atip_trust.gate.verify",
    "verify": "atip_trust.gate.verify",
    "audit_record": "atip_trust.state.audit",
    "exec_verified": "atip_trust.gate.exec",
    "ExecRefused": "atip_trust.gate.exec",
    "check_call": "atip_trust.gate.validate",
    "CallDecision": "atip_trust.gate.validate",
    "discover": "atip_trust.gate.discover",
    "ToolSurface": "atip_trust.gate.discover",
    "run_verified": "atip_trust.gate.run",
    "compile_tools": "atip_trust.bridge.compile",
    "compile_surface": "atip_trust.bridge.surface",
    "tool_call_to_argv": "atip_trust.bridge.argv",
}

__all__ = sorted(_API)

if TYPE_CHECKING:  # the static view of the same names, for type checkers and IDEs
    from atip_trust._version import __version__
    from atip_trust.errors import (
        ArtifactAccessError,
        AtipTrustError,
        BundleError,
        EnvironmentFailure,
        InputTooLargeError,
        MalformedInputError,
        MetadataError,
        NetworkError,
        NotARegularFileError,
        PolicyError,
        TrustRootError,
        UntrustedInputError,
        UsageError,
    )
    from atip_trust.evaluate import Constraints, Evidence, evaluate
    from atip_trust.facts.artifact import Artifact, DigestSubject, resolve
    from atip_trust.facts.digest import Digest
    from atip_trust.facts.metadata import load_metadata
    from atip_trust.facts.report import (
        Check,
        Decision,
        ProvenanceResult,
        Reason,
        SignatureResult,
        TrustLevel,
        TrustReport,
    )
    from atip_trust.limits import LIMITS, Limits
    from atip_trust.policy.compose import compose, load_policy
    from atip_trust.policy.constraints import choose_trusted_root, constraints_from_policy
    from atip_trust.policy.decide import decide, to_agent_tool
    from atip_trust.policy.explain import explain_policy
    from atip_trust.policy.load import load_layer
    from atip_trust.policy.model import Policy, PolicyLayer
    from atip_trust.provenance.slsa import SLSA_PROVENANCE_V02, SLSA_PROVENANCE_V1, BuilderMap
    from atip_trust.signature.identity import IdentityRule
    from atip_trust.signature.trustroot import TrustRoot, default_trust_root
    from atip_trust.state.audit import append_audit, audit_record
    from atip_trust.gate.admit import Admission, admit, load_admission_policy
    from atip_trust.gate.held import HeldTool
    from atip_trust.gate.verify import Verification, verify
    from atip_trust.gate.exec import ExecRefused, exec_verified
    from atip_trust.gate.validate import CallDecision, check_call
    from atip_trust.gate.discover import ToolSurface, discover
    from atip_trust.gate.run import run_verified
    from atip_trust.bridge.compile import compile_tools
    from atip_trust.bridge.surface import compile_surface
    from atip_trust.bridge.argv import tool_call_to_argv


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'atip_trust' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))
