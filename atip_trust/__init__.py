"""atip-trust: supply-chain trust verification and policy for the tools AI agents run.

The public API is exactly ``__all__``: at most 32 names, what the three users need (an admission
check before a tool runs, a CI verification job, an agent runtime), read from the one table ``_API``
below. Every name's module is imported on its first use (PEP 562 module ``__getattr__``, through
_base/lazy.py's deferred imports), so ``import atip_trust`` loads none of them until a name is needed and
``atip-trust --version`` or ``hash`` never load sigstore. Everything else is importable from its own
package (``atip_trust.errors`` for the whole error tree, ``atip_trust.bridge`` for the tool-definition
compiler, ``atip_trust.agents.hooks`` for the agent hooks, ``atip_trust.policy.*`` for composing and
explaining policies); the layers are described in docs/architecture.md.

Typical use::

    from atip_trust import AdmitOptions, Evidence, admit, load_admission_policy, verify

    policy = load_admission_policy("policies/ci.json")
    adm = admit("gh", policy=policy, command=["pr", "view", "1"],
                evidence=Evidence(bundles=["gh.sigstore.json"]), options=AdmitOptions(audit_log="admit.log"))
    print(adm.behavior, adm.report.trust_level.name)

    result = verify("dist/tool", evidence=Evidence(bundles=["dist/tool.sigstore.json"]), policy="policies/ci.json")
    raise SystemExit(result.exit_code)

Each call takes what is offered about the tool (``Evidence``, untrusted) and how to decide (one options
value, ``AdmitOptions``; ``verify``'s is ``VerifyOptions``); their fields may also be given as keywords
(``bundles=[...]``, ``audit=False``). ``decide``'s input is one ``DecisionInput`` (or its fields as
keywords). Every type a public function takes is one of these names (docs/library.md, "Every public
name"); a value of another type is refused at the call with a ``TypeError`` naming both
(``atip_trust.errors.ArgumentTypeError``).

The steps under those pipelines live in their packages: ``atip_trust.evaluation.evaluate.evaluate`` checks an
opened ``Artifact`` against ``Evidence`` and ``Constraints`` (a ``TrustReport``), and ``decide``
judges that report under a ``Policy`` (a ``Decision`` with its ``Reason`` list).

The budget was 30 names (issue 23); it is 32 since issue 35 required every type a public function needs
to be public: ``verify`` takes a ``VerifyOptions`` and ``decide`` a ``DecisionInput``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from atip_trust._base.lazy import lazy_import

if TYPE_CHECKING:  # the static view of the same names, for type checkers and IDEs
    from atip_trust._version import __version__
    from atip_trust.admission.admit import Admission, admit, load_admission_policy
    from atip_trust.admission.held import HeldTool
    from atip_trust.admission.options import AdmitOptions, VerifyOptions
    from atip_trust.admission.verify import Verification, verify
    from atip_trust.agents.calls import CallDecision, check_call
    from atip_trust.discovery.discover import ToolSurface, discover
    from atip_trust.errors import AtipTrustError, EnvironmentFailure, UntrustedInputError, UsageError
    from atip_trust.evaluation.evaluate import Constraints, Evidence
    from atip_trust.execution.exec import ExecRefused, exec_verified
    from atip_trust.facts.artifact import Artifact
    from atip_trust.facts.digest import Digest
    from atip_trust.facts.report import Decision, Reason, TrustLevel, TrustReport
    from atip_trust.policy.compose import load_policy
    from atip_trust.policy.decide import DecisionInput, decide
    from atip_trust.policy.model import Policy
    from atip_trust.signature.identity import IdentityRule

#: name -> the module that defines it: the one list of the public API. The static view above (for
#: type checkers) must name the same names from the same modules; tests/base/test_public_api.py checks it.
_API: dict[str, str] = {
    "__version__": "atip_trust._version",
    # errors: the three families' bases (the whole tree: atip_trust.errors)
    "AtipTrustError": "atip_trust.errors",
    "UntrustedInputError": "atip_trust.errors",
    "EnvironmentFailure": "atip_trust.errors",
    "UsageError": "atip_trust.errors",
    # facts
    "Digest": "atip_trust.facts.digest",
    "Artifact": "atip_trust.facts.artifact",
    "TrustLevel": "atip_trust.facts.report",
    "TrustReport": "atip_trust.facts.report",
    "Reason": "atip_trust.facts.report",
    "Decision": "atip_trust.facts.report",
    # what one artifact is checked with. ``evaluate`` itself is not here: a name the package shares
    # with its submodule atip_trust/evaluation/evaluate.py would be that module once it is loaded.
    "Evidence": "atip_trust.evaluation.evaluate",
    "Constraints": "atip_trust.evaluation.evaluate",
    "IdentityRule": "atip_trust.signature.identity",
    # policy
    "Policy": "atip_trust.policy.model",
    "load_policy": "atip_trust.policy.compose",
    "decide": "atip_trust.policy.decide",
    "DecisionInput": "atip_trust.policy.decide",
    # admission check before execution
    "admit": "atip_trust.admission.admit",
    "AdmitOptions": "atip_trust.admission.options",
    "Admission": "atip_trust.admission.admit",
    "load_admission_policy": "atip_trust.admission.admit",
    "HeldTool": "atip_trust.admission.held",
    "exec_verified": "atip_trust.execution.exec",
    "ExecRefused": "atip_trust.execution.exec",
    # CI verification
    "verify": "atip_trust.admission.verify",
    "Verification": "atip_trust.admission.verify",
    "VerifyOptions": "atip_trust.admission.options",
    # agent runtime: which tools the model may see, and may this call run
    "discover": "atip_trust.discovery.discover",
    "ToolSurface": "atip_trust.discovery.discover",
    "check_call": "atip_trust.agents.calls",
    "CallDecision": "atip_trust.agents.calls",
}

__all__ = sorted(_API)

#: The modules of ``_API``, each imported when one of its names is first read (_base/lazy.py): ``import
#: atip_trust`` loads none of them (tests/base/test_public_api.py checks the two tables agree).
_MODULES: dict[str, Any] = {
    "atip_trust._version": lazy_import("atip_trust._version"),
    "atip_trust.errors": lazy_import("atip_trust.errors"),
    "atip_trust.facts.digest": lazy_import("atip_trust.facts.digest"),
    "atip_trust.facts.artifact": lazy_import("atip_trust.facts.artifact"),
    "atip_trust.facts.report": lazy_import("atip_trust.facts.report"),
    "atip_trust.evaluation.evaluate": lazy_import("atip_trust.evaluation.evaluate"),
    "atip_trust.signature.identity": lazy_import("atip_trust.signature.identity"),
    "atip_trust.policy.model": lazy_import("atip_trust.policy.model"),
    "atip_trust.policy.compose": lazy_import("atip_trust.policy.compose"),
    "atip_trust.policy.decide": lazy_import("atip_trust.policy.decide"),
    "atip_trust.admission.admit": lazy_import("atip_trust.admission.admit"),
    "atip_trust.admission.options": lazy_import("atip_trust.admission.options"),
    "atip_trust.admission.held": lazy_import("atip_trust.admission.held"),
    "atip_trust.execution.exec": lazy_import("atip_trust.execution.exec"),
    "atip_trust.admission.verify": lazy_import("atip_trust.admission.verify"),
    "atip_trust.discovery.discover": lazy_import("atip_trust.discovery.discover"),
    "atip_trust.agents.calls": lazy_import("atip_trust.agents.calls"),
}


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'atip_trust' has no attribute {name!r}")
    value = getattr(_MODULES[module], name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))
