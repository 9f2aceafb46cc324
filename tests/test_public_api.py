"""The public API is the reviewed list in ``atip_trust.__all__`` (httpx's rule, tests/test_exported_members.py
there): the list is pinned here, so adding or removing a public name is a visible change of this file, every
name in it resolves, and ``import atip_trust`` loads nothing until a name is used.
"""

from __future__ import annotations

import subprocess
import sys

import atip_trust

REVIEWED = sorted([
    "__version__",
    # errors
    "AtipTrustError", "UntrustedInputError", "EnvironmentFailure", "UsageError", "ArtifactAccessError",
    "NotARegularFileError", "InputTooLargeError", "MalformedInputError", "BundleError", "MetadataError",
    "PolicyError", "TrustRootError", "NetworkError",
    "LIMITS", "Limits",
    # facts
    "Digest", "Artifact", "DigestSubject", "resolve", "TrustLevel", "Check", "SignatureResult",
    "ProvenanceResult", "TrustReport", "Reason", "Decision", "load_metadata",
    # verification
    "TrustRoot", "default_trust_root", "IdentityRule", "BuilderMap", "SLSA_PROVENANCE_V02",
    "SLSA_PROVENANCE_V1", "Evidence", "Constraints", "evaluate",
    # policy
    "Policy", "PolicyLayer", "load_layer", "compose", "load_policy", "constraints_from_policy",
    "choose_trusted_root", "decide", "to_agent_tool", "explain_policy", "append_audit", "audit_record",
    # gate: the library pipelines
    "admit", "Admission", "load_admission_policy", "HeldTool", "verify", "Verification",
    # runtime gate and discovery
    "exec_verified", "ExecRefused", "check_call", "CallDecision", "discover", "ToolSurface", "run_verified",
    # bridge (the rest of it: atip_trust.bridge)
    "compile_tools", "compile_surface", "tool_call_to_argv",
])


def test_public_api_is_the_reviewed_list() -> None:
    assert sorted(atip_trust.__all__) == REVIEWED


def test_every_public_name_resolves() -> None:
    for name in atip_trust.__all__:
        assert getattr(atip_trust, name) is not None, name


def test_unknown_name_is_an_attribute_error() -> None:
    try:
        atip_trust.no_such_name  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as err:
        assert "no_such_name" in str(err)
    else:
        raise AssertionError("atip_trust.no_such_name resolved")


def test_import_atip_trust_loads_no_submodule() -> None:
    probe = "import sys, atip_trust; print(sorted(m for m in sys.modules if m.startswith('atip_trust')))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                         stdin=subprocess.DEVNULL, check=True).stdout
    assert out.strip() == "['atip_trust']"
