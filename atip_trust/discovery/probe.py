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
from atip_trust.admission.admit import Admission
from atip_trust.admission.options import AdmitOptions
from atip_trust.admission.verdict_key import report_key
from atip_trust.errors import AtipTrustError, InputTooLargeError
from atip_trust.execution.child import minimal_env, run_verified
from atip_trust.execution.exec import (
    DEFAULT_OPTIONS,
    ExecRefused,
    Opened,
    interpreter_refusal,
    script_interpreter,
    sealed_script,
)
from atip_trust.execution.sandbox import PROBE_BOUNDARY, SandboxUnavailable
from atip_trust.facts.artifact import Artifact
from atip_trust.facts.metadata import MetadataDocument, parse_metadata
from atip_trust.facts.report import TrustLevel
from atip_trust.policy.model import Policy
from atip_trust.state.broken import mark_broken
from atip_trust.state.verdict_cache import VerdictCache

PathLike = str | os.PathLike[str]

ProbeStatus = Literal["probed", "not_probed", "failed"]
PROBE_ARGS = ("--agent",)
#: RFC §3.1.1's first question: the overview (top-level commands only) of a tool that supports it.
DEPTH_ARGS = ("--agent", "--depth=1")
#: Decision reasons that block a tool as a whole: it is never run, not even to ask what it is.
BLOCKING_CODES = frozenset({"TRUST_COMPROMISED", "TOOL_DENIED", "TOOL_DENIED_DIGEST", "TOOL_NOT_ALLOWED",
                            "DIGEST_PIN_MISMATCH", "DELEGATION_TOOL_NOT_ALLOWED"})


class ProbePermission(Record):
    allowed: bool
    #: Machine-readable: ``verified``, ``digest_pinned``, ``signed_shim`` / ``signed_metadata``
    #: (allowed, but not needed),
    #: ``probe_disabled``, ``policy_blocked``, ``not_verified``.
    reason: str
    message: str


class ProbeOutcome(Record):
    status: ProbeStatus
    #: ``metadata``, ``no_metadata``, ``timeout``, ``output_too_large``, ``invalid_metadata``,
    #: ``run_error``, ``effect_violation`` (it tried to write or connect: RFC §3.1), ``sandbox_unavailable``,
    #: ``script_refused`` (a ``#!`` tool whose interpreter is not admitted),
    #: ``name_mismatch`` (ran, but its answer is about another program, RFC §3.2); or the
    #: ``ProbePermission`` reason when the tool was not run.
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
    if admission.metadata is not None and admission.effects_verified:
        # RFC §5.1: what the registry and the canonical directories hold comes before PATH probing;
        # verified metadata bound to these bytes is the answer, so the tool is not run for another.
        if admission.metadata.is_shim:
            return ProbePermission(False, "signed_shim", "a shim signed by a registry signer in policy "
                                   "names this digest: its metadata is used, the tool is not run")
        return ProbePermission(False, "signed_metadata", "metadata signed by a signer in policy names "
                               "this digest (the agent-tools tree): it is used, the tool is not run")
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


def _key(digest: str, timeout_ms: int, cap: int, words: Sequence[str]) -> str:
    return report_key("probe", {"digest": digest, "args": list(words), "timeout_ms": timeout_ms,
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
          options: AdmitOptions = DEFAULT_OPTIONS, bundle_dir: PathLike | None = None,
          commands: Sequence[str] | None = None, full: bool = False) -> ProbeOutcome:
    """Run ``TOOL --agent`` when ``probe_permission`` allows it, through the verified descriptor.

    A ``#!`` tool runs its interpreter, so the interpreter must pass the same rule ``exec`` applies
    (``exec.scripts``; execution/exec.py ``script_interpreter``), admitted as ``exec`` would with the
    tool's ``options`` and the bundles by digest in ``bundle_dir``, except that no one is asked and no
    audit line is written (a probe is not a run anyone asked for); otherwise the tool is not probed:
    the kernel would load an interpreter nobody checked.
    The interpreter reads a sealed copy of the verified script (execution/exec.py ``sealed_script``), never
    the script's file, which it would read lazily while a writer changes it.

    The questions (``_Asker.strategy``): ``--agent --depth=1`` first; a partial answer is completed for
    ``commands`` (``--agent --commands=a,b``) or, with ``full``, by ``--agent``; a tool that refuses
    the flags is asked ``--agent``."""
    allowed = probe_permission(admission, policy)
    if not allowed.allowed:
        return ProbeOutcome("not_probed", allowed.reason, allowed.message)
    settings = policy.discovery
    digest = str(artifact.sha256)
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
    try:
        ask = _Asker(artifact, admission.tool, settings.probe_timeout_ms, settings.max_output_bytes, env,
                     cache, digest, script, planned, policy.exec_settings.sandbox)
        return _named(ask.strategy(commands, full), admission.tool)
    finally:
        if planned is not None:
            planned[0].art.close()


class _Asker:
    """One tool's ``--agent`` questions (RFC §3.1.1, §5.1), each answer cached by its own words."""

    def __init__(self, artifact: Artifact, name: str, timeout_ms: int, cap: int, env: Mapping[str, str] | None,
                 cache: VerdictCache | None, digest: str, script: Opened, planned: Any, mode: str) -> None:
        self.artifact, self.name, self.timeout_ms, self.cap, self.env = artifact, name, timeout_ms, cap, env
        self.cache, self.digest, self.script, self.planned = cache, digest, script, planned
        #: policy exec.sandbox: RFC §3.1 "--agent MUST NOT perform any side effects", so every probe runs
        #: read-only and offline whatever the tool declares (execution/sandbox.py PROBE_BOUNDARY).
        self.mode = mode

    def strategy(self, commands: Sequence[str] | None, full: bool) -> ProbeOutcome:
        """``--agent --depth=1`` first (the overview); a partial answer is completed with
        ``--commands=`` the caller needs, or with a full ``--agent`` when it needs every command; a tool
        that ignores or refuses the flags is asked plain ``--agent`` (RFC §3.1.1's agent strategy)."""
        first = self.ask(DEPTH_ARGS)
        if first.metadata is None:
            # Refused the flags (or printed something else): a tool without partial discovery. A
            # timeout or an output flood would only repeat.
            return first if first.reason in ("timeout", "output_too_large") else self.ask(PROBE_ARGS)
        if first.metadata.doc.get("partial") is not True:
            return first  # the tool ignored the flags: this is its whole answer
        if full or commands:
            words = PROBE_ARGS if full else (*PROBE_ARGS, "--commands=" + ",".join(commands or ()))
            more = self.ask(words)
            return more if more.metadata is not None or words == PROBE_ARGS else self.ask(PROBE_ARGS)
        return first

    def ask(self, words: Sequence[str]) -> ProbeOutcome:
        key = _key(self.digest, self.timeout_ms, self.cap, words)
        if self.cache is not None:
            hit = self.cache.get(key)
            found = _from_cache(hit, self.name) if hit is not None else None
            if found is not None:
                return found
        outcome = self._run(words)
        if outcome.reason == "effect_violation":
            mark_broken(self.digest, tool=self.name, attempt=outcome.message, declared=PROBE_BOUNDARY.to_json())
        if self.cache is not None and outcome.reason not in ("run_error", "effect_violation", "sandbox_unavailable"):
            self.cache.put(key, {**outcome.to_json(),
                                 "metadata": None if outcome.metadata is None
                                 else outcome.metadata.raw.decode("utf-8")})
        return outcome

    def _run(self, words: Sequence[str]) -> ProbeOutcome:
        if self.planned is None:
            return _run(self.artifact, self.name, self.timeout_ms, self.cap, self.mode, self.env, args=words)
        interp, script_words = self.planned
        try:
            sealed = sealed_script(self.script)
        except ExecRefused as refused:  # the file no longer holds the verified bytes
            return ProbeOutcome("failed", "run_error", str(refused))
        try:
            return _run(interp.art, self.name, self.timeout_ms, self.cap, self.mode, self.env, argv0=script_words[0],
                        keep_fds=(sealed,), args=[*script_words[1:], f"/dev/fd/{sealed}", *words])
        finally:
            os.close(sealed)


def _named(outcome: ProbeOutcome, executable: str) -> ProbeOutcome:
    """RFC §3.2: the answer's ``name`` must be the executable's (or an alias it declares); another
    program's metadata is no metadata for this one (``name_mismatch``), so nothing is compiled or
    indexed under a name the binary is not."""
    doc = outcome.metadata
    problem = doc.name_problem(executable) if doc is not None else None
    if problem is None:
        return outcome
    return replace(outcome, reason="name_mismatch", message=problem, metadata=None)


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
