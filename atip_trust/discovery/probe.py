"""Verify before probe: ``TOOL --agent`` runs the tool, so only a tool policy vouches for is run (RFC
§5.2 security note; principle 7).

The rule (``probe_permission``), on the admission of the open artifact (admission/admit.py):

* never for a tool policy blocks: COMPROMISED bytes, a tool denied by name or digest, not on an
  allowlist, or a digest pin that does not match (these are denials whatever the metadata says);
* never when the policy says ``discovery.probe: "never"``;
* not needed when a shim signed by a registry signer in policy names the digest: its metadata is used
  and the tool is not run (``signed_shim``);
* otherwise only when the policy vouches for these exact bytes: a ``tools.allow`` entry pins the digest
  (``digest_pinned``), or the tool's signature verifies from a signer policy trusts and every
  requirement holds (``VERIFIED``). Anything else (unsigned, a signer policy does not name, failed
  provenance) is listed as not probed, with that reason.

A probe runs the verified descriptor (execution/child.py) with ``--agent``, no stdin, the minimal
environment, the policy's timeout and output cap. Its standard output must be ATIP metadata
(facts/metadata.py: strict JSON, UTF-8, byte and depth caps, schema); a tool that exits non-zero or
prints nothing has no metadata (``no_metadata``), anything else is a failed probe with its reason.

Outcomes are cached by the artifact's digest and the probe's bounds (state/verdict_cache.py: the verdict
cache's atomic, owner-checked entries), so a tool that hangs costs its timeout once, not on every scan.
A cached outcome is used only after every check a run would meet (the permission above and, for a
``#!`` script, its interpreter): the cache saves the run, never a check.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from atip_trust._base.record import Record, replace
from atip_trust.errors import AtipTrustError, InputTooLargeError
from atip_trust.facts.artifact import Artifact
from atip_trust.facts.metadata import MetadataDocument, parse_metadata
from atip_trust.facts.report import TrustLevel
from atip_trust.admission.admit import Admission
from atip_trust.admission.options import AdmitOptions
from atip_trust.admission.verdict_key import report_key
from atip_trust.execution.exec import (
    DEFAULT_OPTIONS,
    ExecRefused,
    Opened,
    interpreter_refusal,
    script_interpreter,
    sealed_script,
)
from atip_trust.execution.child import minimal_env, run_verified
from atip_trust.execution.sandbox import PROBE_BOUNDARY, SandboxUnavailable
from atip_trust.state.broken import mark_broken
from atip_trust.policy.model import Policy
from atip_trust.state.verdict_cache import VerdictCache

PathLike = str | os.PathLike[str]

ProbeStatus = Literal["probed", "not_probed", "failed"]
PROBE_ARGS = ("--agent",)
#: Decision reasons that block a tool as a whole: it is never run, not even to ask what it is.
BLOCKING_CODES = frozenset({"TRUST_COMPROMISED", "TOOL_DENIED", "TOOL_DENIED_DIGEST", "TOOL_NOT_ALLOWED",
                            "DIGEST_PIN_MISMATCH", "DELEGATION_TOOL_NOT_ALLOWED"})


class ProbePermission(Record):
    allowed: bool
    #: Machine-readable: ``verified``, ``digest_pinned``, ``signed_shim`` (allowed, but not needed),
    #: ``probe_disabled``, ``policy_blocked``, ``not_verified``.
    reason: str
    message: str


class ProbeOutcome(Record):
    status: ProbeStatus
    #: ``metadata``, ``no_metadata``, ``timeout``, ``output_too_large``, ``invalid_metadata``,
    #: ``run_error``, ``effect_violation`` (it tried to write or connect: RFC §3.1), ``sandbox_unavailable``,
    #: ``script_refused`` (a ``#!`` tool whose interpreter is not admitted); or the ``ProbePermission`` reason when the tool was not run.
    reason: str
    message: str
    metadata: MetadataDocument | None = None
    cached: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "reason": self.reason, "message": self.message,
                "cached": self.cached}


def digest_pinned(policy: Policy, tool_name: str, digest: str) -> bool:
    """True when a ``tools.allow`` entry names exactly these bytes (for this name, or for any name)."""
    return any(t.digest == digest and t.name in (None, tool_name) for t in policy.tool_allow)


def probe_permission(admission: Admission, policy: Policy) -> ProbePermission:
    """May the tool of ``admission`` be run with ``--agent``? See the module docstring."""
    report, decision = admission.report, admission.decision
    blocking = [r for r in decision.reasons if r.code in BLOCKING_CODES]
    # A blocking reason counts whatever the mode: warn/audit soften decisions, never what may run here.
    if report.trust_level is TrustLevel.COMPROMISED or blocking:
        why = blocking[0].message if blocking else "the artifact shows evidence of tampering"
        return ProbePermission(False, "policy_blocked", why)
    if admission.metadata is not None and admission.metadata.is_shim and admission.effects_verified:
        return ProbePermission(False, "signed_shim", "a shim signed by a registry signer in policy "
                               "names this digest: its metadata is used, the tool is not run")
    if policy.discovery.probe == "never":
        return ProbePermission(False, "probe_disabled", "the policy says discovery.probe: never")
    digest = f"sha256:{report.digests.get('sha256')}"
    if digest_pinned(policy, admission.tool, digest):
        return ProbePermission(True, "digest_pinned", f"tools.allow pins {digest}")
    signer_refused = any(r.code == "SIGNER_NOT_IN_POLICY" for r in decision.reasons)
    if report.trust_level is TrustLevel.VERIFIED and not signer_refused:
        who = report.signature.identity or "a trusted key"
        return ProbePermission(True, "verified", f"signed by {who}, whom the policy trusts")
    return ProbePermission(False, "not_verified",
                           f"{report.trust_level.name}: neither a digest pin, a signed shim nor a "
                           "signature the policy trusts vouches for these bytes, so they are not run")


def _key(digest: str, timeout_ms: int, cap: int) -> str:
    return report_key("probe", {"digest": digest, "args": list(PROBE_ARGS), "timeout_ms": timeout_ms,
                                "max_output": cap})


def _from_cache(payload: Mapping[str, Any], name: str) -> ProbeOutcome | None:
    status, reason, message = payload.get("status"), payload.get("reason"), payload.get("message")
    if status not in ("probed", "failed") or not isinstance(reason, str) or not isinstance(message, str):
        return None
    doc = None
    text = payload.get("metadata")
    if isinstance(text, str):
        try:
            doc = parse_metadata(text.encode("utf-8"), source_name=f"{name} --agent (cached)")
        except AtipTrustError:
            return None
    elif reason == "metadata":
        return None
    return ProbeOutcome(status, reason, message, doc, cached=True)


def probe(artifact: Artifact, admission: Admission, policy: Policy, *,
          cache: VerdictCache | None = None, env: Mapping[str, str] | None = None,
          options: AdmitOptions = DEFAULT_OPTIONS, bundle_dir: PathLike | None = None) -> ProbeOutcome:
    """Run ``TOOL --agent`` when ``probe_permission`` allows it, through the verified descriptor.

    A ``#!`` tool runs its interpreter, so the interpreter must pass the same rule ``exec`` applies
    (``exec.scripts``; execution/exec.py ``script_interpreter``), admitted as ``exec`` would with the
    tool's ``options`` and the bundles by digest in ``bundle_dir``, except that no one is asked and no
    audit line is written (a probe is not a run anyone asked for); otherwise the tool is not probed:
    the kernel would load an interpreter nobody checked.
    The interpreter reads a sealed copy of the verified script (execution/exec.py ``sealed_script``), never
    the script's file, which it would read lazily while a writer changes it."""
    allowed = probe_permission(admission, policy)
    if not allowed.allowed:
        return ProbeOutcome("not_probed", allowed.reason, allowed.message)
    settings = policy.discovery
    digest = str(artifact.sha256)
    key = _key(digest, settings.probe_timeout_ms, settings.max_output_bytes)
    # The interpreter is checked before the cache is read: a cached answer is what the tool said when
    # it was allowed to run, and is used only while it still would be (policy's exec.scripts, the
    # interpreter's bytes and evidence may have changed since).
    script = Opened(found=admission.path, art=artifact, admission=admission)
    try:
        planned = script_interpreter(script, policy=policy, env=minimal_env() if env is None else env,
                                     options=replace(options, interactive=False, audit=False),
                                     bundle_dir=bundle_dir)
    except ExecRefused as refused:
        return ProbeOutcome("not_probed", "script_refused", str(refused))
    if planned is not None:
        refusal = interpreter_refusal(script, planned[0])
        if refusal is not None:
            planned[0].art.close()
            return ProbeOutcome("not_probed", "script_refused", str(refusal))
    if cache is not None:
        hit = cache.get(key)
        found = _from_cache(hit, admission.tool) if hit is not None else None
        if found is not None:
            if planned is not None:
                planned[0].art.close()
            return found
    # RFC §3.1: "--agent MUST NOT perform any side effects": read-only and no network, whatever the
    # tool declares, under the policy's exec.sandbox (execution/sandbox.py PROBE_BOUNDARY).
    bounds = (settings.probe_timeout_ms, settings.max_output_bytes, policy.exec_settings.sandbox)
    if planned is None:
        outcome = _run(artifact, admission.tool, *bounds, env)
    else:
        interp, words = planned
        with interp.art:
            try:
                sealed = sealed_script(script)
            except ExecRefused as refused:  # the file no longer holds the verified bytes
                return ProbeOutcome("failed", "run_error", str(refused))
            try:
                outcome = _run(interp.art, admission.tool, *bounds, env, argv0=words[0], keep_fds=(sealed,),
                               args=[*words[1:], f"/dev/fd/{sealed}", *PROBE_ARGS])
            finally:
                os.close(sealed)
    if outcome.reason == "effect_violation":
        mark_broken(digest, tool=admission.tool, attempt=outcome.message, declared=PROBE_BOUNDARY.to_json())
    if cache is not None and outcome.reason not in ("run_error", "effect_violation", "sandbox_unavailable"):
        cache.put(key, {**outcome.to_json(),
                        "metadata": None if outcome.metadata is None
                        else outcome.metadata.raw.decode("utf-8")})
    return outcome


def _run(artifact: Artifact, name: str, timeout_ms: int, cap: int, mode: str, env: Mapping[str, str] | None,
         *, args: Sequence[str] = PROBE_ARGS, argv0: str | None = None, keep_fds: Sequence[int] = ()) -> ProbeOutcome:
    try:
        res = run_verified(artifact, args, env=env, timeout=timeout_ms / 1000, max_output=cap,
                           argv0=argv0 or name, keep_fds=keep_fds, boundary=PROBE_BOUNDARY, sandbox_mode=mode)
    except SandboxUnavailable as err:
        return ProbeOutcome("not_probed", "sandbox_unavailable", f"exec.sandbox is required and the kernel "
                            f"lacks {err.feature}: --agent is not run")
    except AtipTrustError as err:
        return ProbeOutcome("failed", "run_error", err.diagnostics())
    if res.violation is not None:
        return ProbeOutcome("failed", "effect_violation", f"EFFECT_VIOLATION: --agent tried {res.violation}; "
                            "RFC §3.1 says --agent has no side effects")
    if res.timed_out:
        return ProbeOutcome("failed", "timeout", f"--agent did not finish within {timeout_ms} ms; its "
                            "process group was killed")
    if res.truncated:
        return ProbeOutcome("failed", "output_too_large", f"--agent wrote more than {cap} bytes; its "
                            "process group was killed")
    if res.exit_code != 0 or not res.stdout.strip():
        how = f"exit {res.exit_code}" if res.exit_code is not None else f"signal {res.signal}"
        return ProbeOutcome("probed", "no_metadata", f"--agent gave no ATIP metadata ({how}, "
                            f"{len(res.stdout)} bytes on stdout)")
    try:
        doc = parse_metadata(res.stdout, source_name=f"{name} --agent")
    except InputTooLargeError as err:
        return ProbeOutcome("failed", "output_too_large", err.diagnostics())
    except AtipTrustError as err:
        return ProbeOutcome("failed", "invalid_metadata", err.diagnostics())
    return ProbeOutcome("probed", "metadata", f"ATIP {doc.version} metadata ({len(res.stdout)} bytes)", doc)


__all__ = ["BLOCKING_CODES", "ProbeOutcome", "ProbePermission", "digest_pinned", "probe",
           "probe_permission"]
