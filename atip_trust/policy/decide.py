"""From a trust report to allow / ask / deny, with reasons (principle 8, 10, 11).

The order is fixed; every step adds verdicts and the strictest verdict wins (the more restrictive answer wins, as hosts compose policies):

  (1) COMPROMISED is denied, always: no rule, waiver or mode can allow tampered bytes.
  (2) Signer check: a signature by an identity policy does not name counts as UNVERIFIED (principle 1).
  (3) Tool rules: deny by digest, deny by name (a digest allow for these exact bytes wins over a name
      rule), each layer's allowlist (a name pinned to a digest admits only that digest), RFC §10.2
      ``allowedTools``.
  (4) Requirements: minimum trust level, provenance, SLSA level, metadata source, M-of-N signers
      (a live waiver for the digest or tool lifts these and the trust part of (7); an expired one is
      reported and ignored).
  (5) Command rules: deny, then ask, then allow; a qualified allow rule applies only when its trust
      level and signer hold (deny and ask rules carry no qualifier). Deny and ask rules also see the
      command with leading options removed (``rules.command_variants``); a command above the size caps,
      or with too many readings to check, is denied.
  (6) Effects: RFC §10.2 ``effectRestrictions``; declared safety counts only when verified (principle 10).
  (7) Capability gating: each risky effect class below its minimum trust level → ask or deny; a class
      with ``always`` → ask or deny at any level.
  (8) Base: an allow rule, or a verified read-only command when policy allows that; otherwise no match →
      ask when interactive, deny when not.
  (5v) With ``purpose="verify"`` (``verify --policy``), steps (5)-(8) are replaced by one base: allow only
      at VERIFIED, whatever ``minTrustLevel`` says (a lower minimum lets ``admit`` run unsigned tools under
      its rules and gates; a CI gate named verify must not pass when the evidence is missing, as
      cosign and slsa-verifier exit non-zero without a verified signature). A live waiver lifts it like
      any requirement. Command rules, effects, gating and the no-match default govern *running*
      commands, which is ``admit``/``exec``'s question, not whether these bytes are what policy trusts.
  (9) ``ask`` without a human becomes ``deny``; mode ``warn``/``audit`` turns a denial into an allow that
      reports what would have been denied (never for COMPROMISED).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from atip_trust._base.lazy import lazy_import
from atip_trust._base.limits import LIMITS
from atip_trust._base.record import Record, field, replace
from atip_trust._base.times import utc_text
from atip_trust.errors import expect_type
from atip_trust.facts.effects import OMITTED_EFFECTS, effective_states, read_only
from atip_trust.facts.report import (
    Decision,
    EvidenceSummary,
    Reason,
    TrustLevel,
    TrustReport,
)
from atip_trust.policy.model import STRICTNESS, CommandRule, Gate, Policy, Waiver
from atip_trust.policy.rules import (
    Matcher,
    command_line,
    command_too_large,
    command_variants,
    rules_for_tool,
    split_command,
)

if TYPE_CHECKING:
    import datetime
    from typing import Any, Literal

    from atip_trust.facts.effects import State
    from atip_trust.policy.model import RuleBehavior, RuleSource
    from atip_trust.provenance import slsa
else:
    datetime = lazy_import("datetime")  # only for a policy with waivers (their expiry)
    slsa = lazy_import("atip_trust.provenance.slsa")  # only a policy that states sources or builders needs it

#: Rule sources as Agent Tool names them (the Agent Tool permission decision's rule sources).
AGENT_TOOL_SOURCES: dict[str, str] = {
    "org": "policy_settings",
    "local": "local_settings",
    "cli": "cli_arg",
    "default": "policy_settings",
}


class _Plan:
    """What ``decide`` needs from one policy that no call changes, worked out once per policy (a
    policy is loaded once and decides many times): where the requirements and defaults come from, which
    layers state signers, and for each tool the command rules that can match its commands, compiled
    (``rules.rules_for_tool``; a rule of another tool cannot match any reading of this one's command)."""

    __slots__ = ("always", "defaults_source", "gates", "gates_below", "org_silent_signers", "per_tool", "policy",
                 "requirements_source", "signer_layers", "signers_declared", "signers_missed", "source_ok",
                 "sources_declared", "sources_text")

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.requirements_source = _source_of(policy, "requirements")
        self.defaults_source = _source_of(policy, "defaults")
        self.signers_declared = policy.signers_declared
        self.sources_declared = policy.sources_declared
        self.org_silent_signers = policy.org_silent_on("signers")
        self.gates = tuple(policy.gates.items())
        #: At this level or above no gate applies (step 7 skips every gate then).
        self.gates_below = max((g.min_trust_level for g in policy.gates.values()), default=None)
        #: The gates that ask or deny at any level (``always``), checked whatever the trust.
        self.always = tuple((cls, g) for cls, g in self.gates if g.always is not None)
        self.signer_layers = tuple((layer.source, layer.signers) for layer in policy.layers
                                   if layer.signers is not None)
        self.per_tool: dict[str, tuple[_Compiled, _Compiled, _Compiled]] = {}
        #: ``_source_allowed`` answers by (uri, ref): a pure function of the policy's sources.
        self.source_ok: dict[tuple[str | None, str | None], bool] = {}
        #: The allowed sources as SOURCE_NOT_ALLOWED names them (``sources_expected``).
        self.sources_text = [f"{s.repository} {list(s.refs) or '*'}" for s in policy.sources]
        #: ``signers_missing`` answers by (identity, issuer, claims): a pure function of the signer rules.
        self.signers_missed: dict[tuple[str, str | None, frozenset[tuple[str, str]]], tuple[int, ...]] = {}

    def signers_missing(self, identity: str, issuer: str | None,
                        extensions: Mapping[str, str] | None) -> tuple[int, ...]:
        """Indexes into ``signer_layers`` of the layers none of whose signers matches this signer."""
        try:
            key = (identity, issuer, frozenset((extensions or {}).items()))
        except TypeError:  # a claim value that cannot be a key: answer without remembering
            key = None
        got = self.signers_missed.get(key) if key is not None else None
        if got is None:
            got = tuple(i for i, (_, signers) in enumerate(self.signer_layers)
                        if not any(r.matches(identity, issuer, extensions) for r in signers))
            if key is not None and len(self.signers_missed) < _PLAN_TOOLS:
                self.signers_missed[key] = got
        return got

    def sources_expected(self) -> list[str] | str:
        """SOURCE_NOT_ALLOWED's expected value: a new list each time (a reason's values are the caller's)."""
        return list(self.sources_text) or "no source (empty list)"

    def rules(self, tool: str) -> tuple[_Compiled, _Compiled, _Compiled]:
        """(deny, ask, allow) rules that can match a command of ``tool``, in policy order."""
        got = self.per_tool.get(tool)
        if got is None:
            p = self.policy
            got = (rules_for_tool(p.deny_rules, tool), rules_for_tool(p.ask_rules, tool),
                   rules_for_tool(p.allow_rules, tool))
            if len(self.per_tool) < _PLAN_TOOLS:  # a bound on what a caller's tool names can grow
                self.per_tool[tool] = got
        return got

    def source_allowed(self, fact: Mapping[str, Any]) -> bool:
        uri, ref = fact.get("uri"), fact.get("ref")
        if not (uri is None or isinstance(uri, str)) or not (ref is None or isinstance(ref, str)):
            return _source_allowed(self.policy, fact)
        key = (uri, ref)
        ok = self.source_ok.get(key)
        if ok is None:
            ok = _source_allowed(self.policy, fact)
            if len(self.source_ok) < _PLAN_TOOLS:
                self.source_ok[key] = ok
        return ok


_Compiled = tuple[tuple[CommandRule, Matcher], ...]
_PLAN_TOOLS = 256


def _plan_of(policy: Policy) -> _Plan:
    """The policy's plan, made on its first decision and kept in the policy's own ``_decide_plan``
    slot (policy/model.py): a policy is a value that nothing changes, so its plan never goes stale,
    and it goes when the policy goes."""
    plan: _Plan | None = getattr(policy, "_decide_plan", None)
    if plan is None:
        plan = _Plan(policy)
        object.__setattr__(policy, "_decide_plan", plan)  # a slot, not a field: the value is unchanged
    return plan


class _Verdicts:
    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: list[tuple[RuleBehavior, Reason, RuleSource]] = []

    def add(self, behavior: RuleBehavior, reason: Reason, source: RuleSource) -> None:
        self.items.append((behavior, reason, source))

    def strictest(self) -> tuple[RuleBehavior, RuleSource] | None:
        best: tuple[RuleBehavior, RuleSource] | None = None
        for behavior, _, source in self.items:
            if best is None or STRICTNESS[behavior] > STRICTNESS[best[0]]:
                best = (behavior, source)
        return best


def _trusted_material(report: TrustReport) -> list[EvidenceSummary]:
    """The evidence that can vouch for *this* artifact: valid, about this artifact (an attestation naming
    another file says nothing about this one, principle 2) and signed by a signer verification matched
    against the policy's anchors. The headline ``report.signature`` is a summary for people; it is never
    what a qualifier counts."""
    return [a for a in report.attestations if a.vouches]


def _signer_ok(rule: CommandRule, report: TrustReport) -> bool:
    """A rule's ``signer`` qualifier holds when trusted material about this artifact carries it."""
    if rule.signer is None:
        return True
    return any(a.identity is not None and a.issuer is not None
               and rule.signer.matches(a.identity, a.issuer, a.extensions)
               for a in _trusted_material(report))


def _distinct_signers(report: TrustReport, policy: Policy) -> set[tuple[str, str]]:
    """Distinct trusted signers: (identity, issuer) for keyless, ("key", digest) for key signatures.

    Only from evaluation/evaluate.py's per-evidence entries that are valid, apply to this artifact and whose
    signer verification matched against the policy's anchors; a keyless signer must also be one the
    policy's ``trust.signers`` names (``requirements.signatures.threshold`` counts signers it trusts).
    """
    seen: set[tuple[str, str]] = set()
    for att in _trusted_material(report):
        if att.identity is not None and att.issuer is not None:
            if any(r.matches(att.identity, att.issuer, att.extensions) for r in policy.signers):
                seen.add((att.identity, att.issuer))
        elif att.key is not None:
            seen.add(("key", att.key))
    return seen


def _waiver_for(
    policy: Policy, tool_name: str, digest: str | None, now: datetime.datetime | None, reasons: list[Reason]
) -> Waiver | None:
    live: Waiver | None = None
    for w in policy.waivers:
        hit = (w.digest is not None and digest is not None and w.digest == digest) or (
            w.digest is None and w.tool is not None and w.tool == tool_name
        )
        if w.digest is not None and w.tool is not None:
            hit = hit and w.tool == tool_name
        if not hit:
            continue
        # The clock is read only here, for a waiver that names this tool: a decision without one
        # never needs datetime (its expiry was parsed with it when the policy was loaded).
        now = now or datetime.datetime.now(datetime.UTC)
        if w.expires <= now:
            reasons.append(
                Reason(
                    code="WAIVER_EXPIRED",
                    message=f"waiver ignored: it expired ({w.reason})",
                    rule=f"waiver:{w.digest or w.tool}",
                    expected=f"expires after {now.isoformat()}",
                    actual=w.expires.isoformat(),
                )
            )
            continue
        live = live or w
    return live


class DecisionInput(Record):
    """What one decision is about, apart from the policy and the report: :func:`decide`'s input.

    ``effects_unknown``: why the command's effects could not be found in its metadata
    (``effects.command_states``); reported with the risky classes it leads to. ``report_digest``:
    ``report.digest()`` when the caller already has it (the verdict cache keeps it with the report),
    so it is not computed again; None leaves it to the decision's first read of ``report_digest``.
    ``effects_omitted``: the RFC §3.1.1 ``omitted.safetyAssumption`` when the command is absent from a
    partial document (``effects.command_lookup``): anything but ``known-safe``/``same-as-included`` in
    verified metadata asks. ``declared``: verdicts the tool's own declarations add, which can only
    tighten (an AIP-14 contract's approval class, a required tool that is not admitted)."""

    tool_name: str
    command: Sequence[str] | str | None = None
    effects: Mapping[str, Any] | None = None
    effects_verified: bool = False
    interactive: bool = False
    metadata_source: str | None = None
    now: datetime.datetime | None = None
    purpose: Literal["run", "verify"] = "run"
    effects_unknown: str | None = None
    report_digest: str | None = None
    effects_omitted: str | None = None
    declared: Sequence[tuple[RuleBehavior, Reason]] = ()


def decide(policy: Policy, report: TrustReport, given: DecisionInput | None = None, **keywords: Any) -> Decision:
    """allow / ask / deny for ``report`` under ``policy``, about what ``given`` says (a
    ``DecisionInput``). Its fields may also be given as keywords, as before it existed
    (``decide(policy, report, tool_name="gh", command="pr view 1")``); with ``given`` too, they replace
    its fields. A value of another type where the policy, report or input belongs is an
    ``ArgumentTypeError`` (a ``TypeError``) naming both."""
    expect_type("decide() policy", policy, Policy)
    expect_type("decide() report", report, TrustReport)
    if given is None:
        unknown = [k for k in keywords if k not in DecisionInput._index]
        if unknown:
            raise TypeError(f"decide() got an unexpected keyword argument {unknown[0]!r}")
        if "tool_name" not in keywords:
            raise TypeError("decide() needs a DecisionInput, or its fields as keywords (tool_name=...)")
        # The fields straight to _decided: the interpreter binds keywords in C, where a record built
        # from them binds each in Python (~8 µs of a ~150 µs decision, python -m bench --only decide).
        return _decided(policy, report, **keywords)
    expect_type("decide() given", given, DecisionInput)
    if keywords:
        given = replace(given, **keywords)
    return _decided(policy, report, *[getattr(given, f) for f in DecisionInput._fields])


def _decided(
    policy: Policy,
    report: TrustReport,
    tool_name: str,
    command: Sequence[str] | str | None = None,
    effects: Mapping[str, Any] | None = None,
    effects_verified: bool = False,
    interactive: bool = False,
    metadata_source: str | None = None,
    now: datetime.datetime | None = None,
    purpose: Literal["run", "verify"] = "run",
    effects_unknown: str | None = None,
    report_digest: str | None = None,
    effects_omitted: str | None = None,
    declared: Sequence[tuple[RuleBehavior, Reason]] = (),
) -> Decision:
    """``decide``'s steps, in the order of the module docstring. Its parameters after ``report`` are
    ``DecisionInput``'s fields, in their order and with their defaults (tests/policy/
    test_decision_input.py holds the two to one list)."""
    words = split_command(command)
    args = (report, tool_name, words, effects, effects_verified, metadata_source, now, purpose,
            effects_unknown, effects_omitted, declared)
    final, reasons, source = _core(policy, *args)
    if len(policy.layers) > 1 and final != "deny":
        # The more restrictive answer wins. The merged rules already make every deny and
        # ask rule of every layer count; this also keeps a denial that a layer reaches *on its own*
        # (its noMatch, its signers, its waiver-free requirements) from being widened by another layer.
        # Only an answer short of deny can be tightened, and only by the first layer that denies (a
        # later one would find the answer deny already): each layer is decided at most once, and none
        # when the merged policy denies.
        for alone in policy.layer_policies.values():
            layer = alone.layers[0]
            b, r, _ = _core(alone, *args)
            if b == "deny":
                final, source = "deny", layer.source
                reasons = [Reason("LAYER_DENIES",
                                  f"the {layer.source} policy on its own denies this, and a denial "
                                  "in any layer stands", rule=f"layer:{layer.source}",
                                  expected="allow or ask from every layer", actual="deny")] + r + reasons
                break

    # (9) Non-interactive asks deny; warn/audit modes report instead of blocking.
    if final == "ask" and not interactive:
        final = "deny"
        reasons.insert(0, Reason("ASK_WITHOUT_USER",
                                 "policy asks for confirmation but no one can answer (non-interactive)",
                                 rule="builtin:non-interactive", expected="interactive session",
                                 actual="non-interactive"))
    mode = policy.mode
    if final != "allow" and mode != "enforce" and report.trust_level != TrustLevel.COMPROMISED:
        reasons.insert(0, Reason(f"MODE_{mode.upper()}",
                                 f"{mode} mode: allowed, but enforce mode would {final}",
                                 rule="mode", expected=final, actual="allow"))
        final = "allow"
    if policy.org_left_out:
        reasons.append(Reason("ORG_POLICY_LEFT_OUT", "decided without the machine's org policy "
                              "(load_policy managed=False, for tests)", rule="builtin:org-policy",
                              expected="the machine's org policy composed", actual="left out"))
    # By position (behavior, reasons, policy_digest, report_digest, rule_source, mode, report): all seven
    # fields bound at once, without the keyword binding's Python loop. The report is kept only while its
    # digest is unknown (the decision works it out on first read, facts/report.py).
    return Decision(final, reasons, policy.digest, report_digest, source, mode,
                    report if report_digest is None else None)


class _Case(Record, frozen=False):
    """One call of ``_core``: its inputs, what steps (1)-(8) work out once, and what a step leaves for a
    later one (the waiver of (4), the command-rule outcome of (5), the effect states of (6))."""

    policy: Policy
    plan: _Plan
    report: TrustReport
    tool_name: str
    effects: Mapping[str, Any] | None
    effects_verified: bool
    metadata_source: str | None
    now: datetime.datetime | None  # None: the clock, read when a waiver is checked
    effects_unknown: str | None
    effects_omitted: str | None
    declared: Sequence[tuple[RuleBehavior, Reason]]
    #: ``sha256:<hex>`` of the report's artifact, or None.
    digest: str | None
    tokens: tuple[str, ...]
    line: str
    #: The trust level, lowered to UNVERIFIED by step (2) for a signer policy does not name.
    level: TrustLevel
    v: _Verdicts
    #: Reasons that are no verdict (reported after the verdicts' reasons).
    info: list[Reason]
    waiver: Waiver | None = None
    allowed_by: CommandRule | None = None
    asked: bool = False
    denied_by_rule: bool = False
    too_large: tuple[str, str] | None = None
    states: dict[str, State] = field(default_factory=dict)


def _core(
    policy: Policy,
    report: TrustReport,
    tool_name: str,
    words: tuple[str, ...],
    effects: Mapping[str, Any] | None,
    effects_verified: bool,
    metadata_source: str | None,
    now: datetime.datetime | None,
    purpose: Literal["run", "verify"] = "run",
    effects_unknown: str | None = None,
    effects_omitted: str | None = None,
    declared: Sequence[tuple[RuleBehavior, Reason]] = (),
) -> tuple[RuleBehavior, list[Reason], RuleSource]:
    """Steps (1)-(8): the strictest verdict before interactivity and mode are applied."""
    digest = report.digests.get("sha256")
    digest = f"sha256:{digest}" if digest and not digest.startswith("sha256:") else digest
    tokens, line = command_line(tool_name, words)
    # Every field by position: a record built from keywords binds them one by one, several µs a call,
    # and _core runs once per layer besides the merged policy (python -m bench --only decide).
    c = _Case(policy, _plan_of(policy), report, tool_name, effects, effects_verified, metadata_source, now,
              effects_unknown, effects_omitted, declared, digest, tokens, line, report.trust_level,
              _Verdicts(), [], None, None, False, False, None, {})
    _step_compromised(c)
    _step_signers(c)
    _step_tool_rules(c)
    _step_requirements(c)
    if purpose == "verify":
        _verify_base(c.v, c.info, c.level, policy.requirements.min_trust_level, c.waiver,
                     c.plan.requirements_source)
        return _result(c.v, c.info)
    _step_command_rules(c)
    _step_effects(c)
    _step_capability_gating(c)
    _step_base(c)
    return _result(c.v, c.info)


def _step_compromised(c: _Case) -> None:
    """(1) COMPROMISED: denied whatever else policy says."""
    if c.level == TrustLevel.COMPROMISED:
        c.v.add(
            "deny",
            Reason(
                "TRUST_COMPROMISED",
                _tampering(c.report),
                rule="builtin:compromised",
                expected="not COMPROMISED",
                actual=c.level.name,
            ),
            "default",
        )


def _step_signers(c: _Case) -> None:
    """(2) A signer policy does not name cannot lift the level above UNVERIFIED (principle 1)."""
    plan, info = c.plan, c.info
    sig = c.report.signature
    # Every layer that states signers must name this one (a local list narrows the org's, never widens).
    keyless = sig.status == "valid" and sig.identity is not None and sig.kind != "key"
    if keyless and plan.org_silent_signers:
        # The org fixes the trust anchors and names no signer: no local signer can add one (compose.py).
        c.level = min(c.level, TrustLevel.UNVERIFIED)
        info.append(Reason("SIGNER_NOT_IN_POLICY",
                           "the signature is valid but the org policy, which states the trust anchors, "
                           "trusts no keyless signer", rule="trust.signers[org]",
                           expected=f"no signer (the org states only {list(c.policy.org_anchors)})",
                           actual=f"{sig.identity} (issuer {sig.issuer})"))
    missed = plan.signers_missing(sig.identity, sig.issuer, sig.extensions) \
        if sig.status == "valid" and sig.identity is not None and plan.signer_layers else ()
    for i in missed:
        layer_source, layer_signers = plan.signer_layers[i]
        c.level = min(c.level, TrustLevel.UNVERIFIED)
        info.append(
            Reason(
                "SIGNER_NOT_IN_POLICY",
                f"the signature is valid but its identity is not one the {layer_source} policy trusts",
                rule=f"trust.signers[{layer_source}]",
                expected=[s.describe() for s in layer_signers] or "no signer (empty list)",
                actual=f"{sig.identity} (issuer {sig.issuer})",
            )
        )

    # Valid material, but nobody to trust: say which policy left the signer list out, so an admin sees
    # why a signed tool is UNVERIFIED (docs/decisions.md).
    if not plan.signers_declared and any(
        a.valid and a.applies and not a.signer_trusted and a.identity is not None
        for a in c.report.attestations
    ):
        names = ", ".join(
            f"{layer.source} {layer.path or layer.document.get('name') or 'flags'}" for layer in c.policy.layers)
        info.append(Reason("NO_SIGNERS_IN_POLICY",
                           f"the signature verifies, but the policy ({names}) states no trust.signers, "
                           "so no keyless signer is trusted", rule="trust.signers",
                           expected="trust.signers in a policy, or --certificate-identity with "
                           "--certificate-oidc-issuer",
                           actual=f"{sig.identity} (issuer {sig.issuer})" if sig.identity else None))


def _step_tool_rules(c: _Case) -> None:
    """(3) Tool rules."""
    policy, v, tool_name, digest = c.policy, c.v, c.tool_name, c.digest
    # A digest entry of tools.allow lifts a deny by name only from its own layer or the org: a local
    # entry must not lift an org's deny (policy/anchors.py: a local layer only narrows the org's word).
    exempt = {t.source for t in policy.tool_allow if t.digest is not None and t.digest == digest
              and t.name in (None, tool_name)}
    for t in policy.tool_deny:
        digest_allowed = t.source in exempt or "org" in exempt
        if t.digest is not None and t.digest == digest:
            v.add("deny", Reason("TOOL_DENIED_DIGEST", "these exact bytes are denied by digest",
                                 rule=f"tools.deny:{t.text}", expected=f"not {t.digest}",
                                 actual=digest), t.source)
        elif t.digest is None and t.name == tool_name and not digest_allowed:
            v.add("deny", Reason("TOOL_DENIED", f"tool {tool_name!r} is denied by name",
                                 rule=f"tools.deny:{t.text}", expected=f"not {t.name}",
                                 actual=tool_name), t.source)
    for source, allowlist in policy.tool_allowlists:
        pins = [t for t in allowlist if t.name == tool_name and t.digest is not None]
        ok = any(t.digest is not None and t.digest == digest and t.name in (None, tool_name)
                 for t in allowlist)
        if not ok and not pins:
            ok = any(t.name == tool_name and t.digest is None for t in allowlist)
        if not ok:
            if pins:
                v.add("deny", Reason("DIGEST_PIN_MISMATCH",
                                     f"tool {tool_name!r} is pinned to other bytes",
                                     rule=f"tools.allow:{pins[0].text}",
                                     expected=[p.digest for p in pins], actual=digest), source)
            else:
                v.add("deny", Reason("TOOL_NOT_ALLOWED",
                                     f"tool {tool_name!r} is not on the {source} allowlist",
                                     rule="tools.allow", expected=[t.name or t.digest for t in allowlist],
                                     actual=f"{tool_name} {digest}"), source)
    for source, allowed in policy.delegation_allowlists:
        if tool_name not in allowed:
            v.add("deny", Reason("DELEGATION_TOOL_NOT_ALLOWED",
                                 f"tool {tool_name!r} is not in delegation.allowedTools (RFC §10.2)",
                                 rule="delegation.allowedTools", expected=list(allowed),
                                 actual=tool_name), source)


def _step_requirements(c: _Case) -> None:
    """(4) Requirements, waivable: each failure denies, or is reported as waived under a live waiver
    (kept in ``c.waiver`` for the trust part of (7) and for (5v))."""
    waiver = c.waiver = _waiver_for(c.policy, c.tool_name, c.digest, c.now, c.info)
    trust_failures = _requirement_failures(c)
    for r in trust_failures:
        if waiver is not None:
            c.info.append(_waived(r, waiver))
        else:
            c.v.add("deny", r, c.plan.requirements_source)


def _requirement_failures(c: _Case) -> list[Reason]:
    """(4) The requirements this artifact fails, in the order the policy reference lists them."""
    req, plan, level = c.policy.requirements, c.plan, c.level
    trust_failures: list[Reason] = []
    if req.min_trust_level is not None and level < req.min_trust_level:
        trust_failures.append(Reason("TRUST_BELOW_MINIMUM", "trust level is below the policy minimum",
                                     rule="requirements.minTrustLevel",
                                     expected=f">= {req.min_trust_level.name}", actual=level.name))
    prov = c.report.provenance
    if req.provenance_required and prov.status != "valid":
        trust_failures.append(Reason("PROVENANCE_REQUIRED", "policy requires valid provenance",
                                     rule="requirements.provenanceRequired", expected="valid",
                                     actual=prov.status))
    if req.min_slsa_level is not None and req.min_slsa_level > 0:
        got = prov.slsa_level if prov.status == "valid" else None
        if got is None or got < req.min_slsa_level:
            # A missing provenance never passes a minimum SLSA level (principle 2).
            trust_failures.append(Reason("SLSA_LEVEL_TOO_LOW",
                                         "SLSA Build level (from the policy's builder map) too low",
                                         rule="requirements.minSlsaLevel",
                                         expected=f">= {req.min_slsa_level}", actual=got))
    if plan.sources_declared:
        # Verification checks the same thing when it ran with this policy's constraints; this keeps a
        # report made elsewhere, and each layer on its own (a local list narrows), to the policy.
        src_fact = prov.source if prov.status == "valid" and isinstance(prov.source, Mapping) else {}
        if not plan.source_allowed(src_fact):
            trust_failures.append(Reason("SOURCE_NOT_ALLOWED",
                                         "provenance source repository or ref is not one policy allows",
                                         rule="trust.sources",
                                         expected=plan.sources_expected(),
                                         actual=f"{src_fact.get('uri')} {src_fact.get('ref')}"
                                         if src_fact else "no valid provenance"))
    if req.metadata_sources is not None:
        # Only a source that verification established counts: the ``trust.source`` of metadata whose
        # own signature verified against signers policy names and that is bound to this artifact
        # (metadata_trust.py, passed in as ``metadata_source``). The document's unverified claim is
        # what it says about itself (principle 1): reported, never accepted.
        metadata_source = c.metadata_source
        if metadata_source not in req.metadata_sources:
            claims = c.report.claims
            claimed = claims.get("source") if isinstance(claims, Mapping) else None
            why = ("metadata source is not one policy allows" if metadata_source is not None else
                   "no metadata source established by verification (signed metadata bound to this tool)"
                   + (f"; the metadata's own claim {claimed!r} is not evidence"
                      if isinstance(claimed, str) else ""))
            trust_failures.append(Reason("METADATA_SOURCE_NOT_ALLOWED", why,
                                         rule="requirements.metadataSources",
                                         expected=list(req.metadata_sources), actual=metadata_source))
    if req.signature_threshold is not None:
        n = len(_distinct_signers(c.report, c.policy))
        if n < req.signature_threshold:
            trust_failures.append(Reason("SIGNATURE_THRESHOLD",
                                         "too few distinct trusted signers",
                                         rule="requirements.signatures.threshold",
                                         expected=f">= {req.signature_threshold}", actual=n))
    return trust_failures


def _step_command_rules(c: _Case) -> None:
    """(5) Command rules: deny → ask → allow; specificity never changes the order."""
    v, tokens, line = c.v, c.tokens, c.line
    too_large = c.too_large = command_too_large(tokens, line)
    variants, complete = command_variants(tokens, line) if too_large is None else ([], False)
    if too_large is not None:
        # Matching is linear, but a bound on the input keeps a hostile command from costing more.
        v.add("deny", Reason("COMMAND_TOO_LARGE", "the command is longer than rules are matched against",
                             rule="builtin:command-size", expected=too_large[0],
                             actual=too_large[1]), "default")
    elif not complete:
        v.add("deny", Reason("COMMAND_AMBIGUOUS",
                             "too many places where the sub-command could start after leading options "
                             "to check every deny and ask rule",
                             rule="builtin:command-size",
                             expected=f"<= {LIMITS.command_start_candidates} candidate sub-command "
                                      "positions", actual=f"more, in {len(tokens)} words"), "default")
    # Deny and ask rules see every reading of leading options (rules.command_variants); allow rules see
    # only the command as given, so no reading can widen what they admit.
    deny_rules, ask_rules, allow_rules = c.plan.rules(c.tool_name)
    for rule, read_as in _matching(deny_rules, variants, line):
        c.denied_by_rule = True
        v.add("deny", Reason("COMMAND_DENIED", f"command {line!r} matches a deny rule{read_as}",
                             rule=rule.text, expected=f"not {rule.text}", actual=line), rule.source)
    # An ask rule asks whenever it matches: no qualifier may let a less trusted tool skip the question
    # (load and compile_rule refuse qualifiers on ask rules).
    for rule, read_as in _matching(ask_rules, variants, line):
        c.asked = True
        v.add("ask", Reason("COMMAND_ASK", f"command {line!r} matches an ask rule{read_as}",
                            rule=rule.text, actual=line), rule.source)
    sig = c.report.signature
    for rule, match in allow_rules:
        if too_large is not None or not match(tokens, line):
            continue
        if _qualified(rule, c.level, c.report):
            c.allowed_by = c.allowed_by or rule
        else:
            c.info.append(Reason("RULE_QUALIFIER_NOT_MET",
                                 "an allow rule matches but its trust condition does not hold",
                                 rule=rule.text,
                                 expected=", ".join(rule.conditions(">= {}", "signed by {}")),
                                 actual=f"{c.level.name}, signer {sig.identity} (issuer {sig.issuer})"))


def _step_effects(c: _Case) -> None:
    """(6) Effects, trusted only as far as their source."""
    v, info = c.v, c.info
    states, disregarded = effective_states(c.effects, verified=c.effects_verified)
    c.states = states
    if c.effects_unknown is not None:
        info.append(Reason("EFFECTS_UNKNOWN",
                           f"the command's effects are unknown, so every class counts as risky: "
                           f"{c.effects_unknown}", rule="builtin:effects-trust",
                           expected="the words name one declared command", actual=c.effects_unknown))
    if c.effects_omitted is not None:
        _omitted(v, info, c.effects_omitted, c.effects_verified, c.line)
    for behavior_declared, reason_declared in c.declared:
        v.add(behavior_declared, reason_declared, "default")
    if disregarded:
        info.append(Reason("EFFECTS_UNVERIFIED",
                           "declared safe effects disregarded: the metadata declaring them is not verified",
                           rule="builtin:effects-trust", expected="verified metadata",
                           actual=sorted(disregarded)))
    for cls, source in c.policy.effect_restrictions.items():
        if states.get(cls, "risky") == "risky":
            v.add("deny", Reason("EFFECT_RESTRICTED",
                                 f"effect {cls!r} is restricted by delegation.effectRestrictions",
                                 rule=f"delegation.effectRestrictions.{cls}",
                                 expected=f"{cls} absent (verified)", actual="present or unknown"), source)


def _step_capability_gating(c: _Case) -> None:
    """(7) Capability gating. When the effects are unknown (no declaration, or words that name no one
    declared command) every class is risky: one reason per gate outcome names the classes, instead of
    one line per class that would bury the cause."""
    v, info, waiver, level, states, plan = c.v, c.info, c.waiver, c.level, c.states, c.plan
    unknown = c.effects is None or c.effects_unknown is not None
    grouped: dict[tuple[RuleBehavior, TrustLevel, RuleSource], list[str]] = {}
    gates = plan.gates if plan.gates_below is not None and level < plan.gates_below else ()
    for cls, gate in gates:
        if states.get(cls) != "risky" or level >= gate.min_trust_level:
            continue
        if unknown:
            grouped.setdefault((gate.below, gate.min_trust_level, gate.source), []).append(cls)
            continue
        _gate(v, info, waiver, level, Reason(
            "CAPABILITY_GATED", f"{cls} operation needs a more trusted tool",
            rule=f"capabilities.{cls}", expected=f">= {gate.min_trust_level.name}", actual=level.name),
            gate.below, gate.source)
    for (below, minimum, source), classes in grouped.items():
        _gate(v, info, waiver, level, Reason(
            "CAPABILITY_GATED",
            f"effects unknown, so each counts as risky: {', '.join(classes)} need a more trusted tool",
            rule="capabilities." + ("|".join(classes)), expected=f">= {minimum.name}", actual=level.name),
            below, source)
    _always(v, plan.always, states, unknown)


def _step_base(c: _Case) -> None:
    """(8) Base decision."""
    policy, line, level = c.policy, c.line, c.level
    allowed_by = c.allowed_by
    if allowed_by is not None:
        c.v.add("allow", Reason("COMMAND_ALLOWED", f"command {line!r} matches an allow rule",
                                rule=allowed_by.text, actual=line), allowed_by.source)
    elif (policy.defaults.allow_verified_read_only and c.effects_verified
          and read_only(c.effects)  # facts/effects.py: the five classes safe, no change declared
          and level >= policy.defaults.read_only_min_trust_level):
        c.v.add("allow", Reason("READ_ONLY_VERIFIED",
                                "verified metadata declares this command read-only",
                                rule="defaults.allowVerifiedReadOnly",
                                expected=f">= {policy.defaults.read_only_min_trust_level.name}",
                                actual=level.name), c.plan.defaults_source)
    elif not c.asked and not c.denied_by_rule:
        # A deny or ask rule that matched is a match: the no-match default does not apply.
        behavior: RuleBehavior = "ask" if policy.defaults.no_match == "ask" else "deny"
        c.v.add(behavior, Reason("NO_MATCHING_RULE", f"no rule allows {line!r}",
                                 rule="defaults.noMatch", actual=line), c.plan.defaults_source)


def _omitted(v: _Verdicts, info: list[Reason], assumption: str, verified: bool, line: str) -> None:
    """RFC §3.1.1: a command a partial document leaves out. ``unknown`` (also when the document says
    nothing) and ``known-unsafe`` "require confirmation", so they ask whatever rule allows the command
    (an allow rule ``gh *`` was written for the commands the tool declared); ``known-safe`` and
    ``same-as-included`` are safety claims, believed only from verified metadata."""
    safe = assumption in OMITTED_EFFECTS
    r = Reason("COMMAND_OMITTED",
               f"{line!r} is not in the tool's partial metadata, which says omitted commands are {assumption}"
               + ("" if not safe or verified else ", a claim of unverified metadata"),
               rule="builtin:partial-discovery",
               expected="known-safe or same-as-included, in verified metadata",
               actual=assumption if verified else f"{assumption} (unverified)")
    if safe and verified:
        info.append(r)
    else:
        v.add("ask", r, "default")


def _matching(rules: _Compiled, variants: list[tuple[tuple[str, ...], str]],
              line: str) -> list[tuple[CommandRule, str]]:
    """Each rule that matches a reading of the command (``rules.command_variants``), in order, with what
    its reason adds: `` (read as '...')`` when the first reading it matches is not the command as given."""
    found = []
    for rule, match in rules:
        hit = next((vl for vt, vl in variants if match(vt, vl)), None)
        if hit is not None:
            found.append((rule, f" (read as {hit!r})" if hit != line else ""))
    return found


def _verify_base(
    v: _Verdicts,
    info: list[Reason],
    level: TrustLevel,
    minimum: TrustLevel | None,
    waiver: Waiver | None,
    source: RuleSource,
) -> None:
    """(5v): the trust question alone. ``verify``'s bar is VERIFIED; a policy minimum can only raise it
    (VERIFIED is the top level), never lower it: ``max(minimum, VERIFIED)``."""
    bar = max(minimum or TrustLevel.VERIFIED, TrustLevel.VERIFIED)
    # A stated minimum at the bar already produced TRUST_BELOW_MINIMUM in step (4); say it once.
    if level < bar and (minimum is None or minimum < bar):
        r = Reason("TRUST_NOT_VERIFIED",
                   "verify requires VERIFIED; a lower requirements.minTrustLevel applies to admit only",
                   rule="builtin:verify", expected=bar.name, actual=level.name)
        if waiver is not None and level > TrustLevel.COMPROMISED:
            info.append(_waived(r, waiver))
        else:
            v.add("deny", r, "default")
    v.add("allow", Reason("TRUST_REQUIREMENTS_MET", "the artifact meets the policy's trust requirements",
                          rule="builtin:verify", expected=f">= {bar.name}",
                          actual=level.name), source)


def _always(v: _Verdicts, gates: tuple[tuple[str, Gate], ...], states: Mapping[str, str], unknown: bool) -> None:
    """(7) ``capabilities.<class>.always``: every command with the class asks or denies, at any trust
    level (a VERIFIED tool's ``rm`` included) and whatever rule allows it. Not about trust, so no
    waiver lifts it. Unknown effects count as present, one reason per outcome naming the classes."""
    grouped: dict[tuple[RuleBehavior, RuleSource], list[str]] = {}
    for cls, gate in gates:
        if states.get(cls) == "risky" and gate.always is not None:
            grouped.setdefault((gate.always, gate.source), []).append(cls)
    for (behavior, source), classes in grouped.items():
        what = "effects unknown, so each counts as present: " if unknown else ""
        v.add(behavior, Reason(
            "CAPABILITY_ALWAYS",
            f"{what}{', '.join(classes)}: the policy says {behavior} for every such command, at any trust level",
            rule="capabilities." + "|".join(classes), expected=f"no {' or '.join(classes)} operation",
            actual="effects unknown" if unknown else f"{', '.join(classes)} operation"), source)


def _gate(v: _Verdicts, info: list[Reason], waiver: Waiver | None, level: TrustLevel, r: Reason,
          below: RuleBehavior, source: RuleSource) -> None:
    if waiver is not None and level > TrustLevel.COMPROMISED:
        info.append(_waived(r, waiver))
    else:
        v.add(below, r, source)


def effect_classes_of(reason: Reason) -> tuple[str, ...]:
    """The effect classes a gating reason is about: ``CAPABILITY_GATED`` (step 7, rule
    ``capabilities.<class>[|<class>...]``) and ``EFFECT_RESTRICTED`` (step 6, rule
    ``delegation.effectRestrictions.<class>``). The call validator (agents/calls.py) reads its
    violations from these reasons, so that a call's violations and the policy's gating are one decision."""
    rule = reason.rule or ""
    if reason.code in ("CAPABILITY_GATED", "CAPABILITY_ALWAYS") and rule.startswith("capabilities."):
        return tuple(rule[len("capabilities."):].split("|"))
    if reason.code == "EFFECT_RESTRICTED" and rule.startswith("delegation.effectRestrictions."):
        return (rule[len("delegation.effectRestrictions."):],)
    return ()


#: Reasons that *decide* on their own, whatever the trust: a rule or list that names the tool or command.
_OWN_CAUSES = frozenset({"TOOL_DENIED_DIGEST", "TOOL_DENIED", "TOOL_NOT_ALLOWED", "DELEGATION_TOOL_NOT_ALLOWED",
                         "COMMAND_TOO_LARGE", "COMMAND_AMBIGUOUS", "COMMAND_DENIED", "COMMAND_ASK",
                         "EFFECT_RESTRICTED", "CAPABILITY_ALWAYS"})
#: Facts about the bytes and their evidence that other reasons follow from (a signer the policy does not
#: name makes the tool UNVERIFIED, which fails rule qualifiers and capability gates, which leaves no rule
#: that allows): the cause, in pipeline order.
_TRUST_CAUSES = ("TRUST_COMPROMISED", "DIGEST_PIN_MISMATCH", "SIGNER_NOT_IN_POLICY", "NO_SIGNERS_IN_POLICY",
                 "SIGNATURE_THRESHOLD", "TRUST_BELOW_MINIMUM", "TRUST_NOT_VERIFIED", "PROVENANCE_REQUIRED",
                 "SLSA_LEVEL_TOO_LOW", "SOURCE_NOT_ALLOWED", "METADATA_SOURCE_NOT_ALLOWED",
                 "EFFECTS_UNKNOWN", "EFFECTS_UNVERIFIED")


def _cause_first(reasons: list[Reason], final: set[int]) -> list[Reason]:
    """Cause first (issue 26): the final behavior's own rule verdicts (a deny or ask rule, a tool list),
    then the trust facts the rest follows from, in pipeline order, then everything else as reached.
    A reader (and a hook that shows one line) sees why first, the consequences after."""
    def rank(r: Reason) -> tuple[int, int]:
        if r.code in _OWN_CAUSES and id(r) in final:
            return (0, 0)
        if r.code in _TRUST_CAUSES:
            return (1, _TRUST_CAUSES.index(r.code))
        return (2, 0)

    return sorted(reasons, key=rank)  # stable: same rank keeps the order reached


def _tampering(report: TrustReport) -> str:
    """What COMPROMISED means for this report, in a plain sentence when a signature is for other bytes."""
    other = next((c for c in report.checks if c.name == "digest" and c.failed and c.impact == "compromised"),
                 None)
    if other is not None:
        return f"the artifact shows evidence of tampering: {other.message}"
    return "the artifact shows evidence of tampering (invalid signature or digest mismatch)"


def _result(v: _Verdicts, info: list[Reason]) -> tuple[RuleBehavior, list[Reason], RuleSource]:
    best = v.strictest()
    final, source = best if best is not None else ("deny", "default")
    # ``final`` is the strictest behavior present: its reasons first, in the order they were reached.
    reasons = [r for b, r, _ in v.items if b == final]
    reasons += [r for b, r, _ in v.items if b != final and STRICTNESS[b] > 0]
    reasons += info
    if len(reasons) < 2:
        return final, reasons, source
    if final != "allow":
        reasons = _cause_first(reasons, {id(r) for b, r, _ in v.items if b == final})
    # The same reason reached twice (e.g. by two layers) is said once: same code and rule, and the same
    # expected and actual values (by repr, so 1 and True differ), compared only within one code and rule.
    seen: dict[tuple[str, str | None], list[Reason]] = {}
    unique: list[Reason] = []
    for r in reasons:
        same_rule = seen.get((r.code, r.rule))
        if same_rule is None:
            seen[(r.code, r.rule)] = [r]
        elif any(repr(p.expected) == repr(r.expected) and repr(p.actual) == repr(r.actual)
                 for p in same_rule):
            continue
        else:
            same_rule.append(r)
        unique.append(r)
    return final, unique, source


def _source_allowed(policy: Policy, fact: Mapping[str, Any]) -> bool:
    return any(slsa.source_matches(s.repository, s.refs, fact.get("uri"), fact.get("ref"))
               for s in policy.sources)


def _qualified(rule: CommandRule, level: TrustLevel, report: TrustReport) -> bool:
    if rule.min_trust_level is not None and level < rule.min_trust_level:
        return False
    return _signer_ok(rule, report)


def _waived(r: Reason, w: Waiver) -> Reason:
    return Reason("WAIVED", f"{r.message} — waived until {w.expires.isoformat()}: {w.reason}",
                  rule=f"waiver:{w.digest or w.tool}", expected=r.expected, actual=r.actual)


def _source_of(policy: Policy, key: str) -> RuleSource:
    for layer in policy.layers:
        if key in layer.document:
            return layer.source
    return "default"


def to_agent_tool(
    decision: Decision,
    *,
    invocation_id: str | None = None,
    decided_at: datetime.datetime | None = None,
    passthrough_on_no_match: bool = False,
    decision_id: str | None = None,
    expires_at: datetime.datetime | None = None,
) -> dict[str, Any]:
    """The decision as an Agent Tool ``tool_permission_decision``.

    ``decision_id`` (required by the Agent Tool schema): the caller's id for this decision, or a new
    random one (``atd_`` and 32 hex digits). ``invocation_id``: the tool invocation (the provider's
    call id, a hook's tool-use id) this decision answers; always present, ``null`` for a decision about
    a tool rather than one invocation (``admit``), so a consumer reads one shape. ``expires_at``: when the caller will decide again (a
    decision is about the bytes verified now; the time is the caller's to set); absent when not given.

    ``passthrough_on_no_match``: when no rule of this policy matched (the answer is only the no-match
    default), say ``passthrough`` so that the host's own permission layer decides; a denial or ask that
    any rule, gate or requirement produced is never turned into a passthrough. An allow rule that
    matched but whose trust qualifier failed is a match: the policy spoke about this command and said
    "not for this binary", so the answer is ``deny``, never a passthrough the host might allow.
    """
    first = decision.reasons[0] if decision.reasons else None
    behavior: str = decision.behavior
    if passthrough_on_no_match and decision.mode == "enforce" and decision.behavior != "allow":
        codes = {r.code for r in decision.reasons} - {"ASK_WITHOUT_USER", "EFFECTS_UNVERIFIED",
                                                       "EFFECTS_UNKNOWN", "WAIVER_EXPIRED"}
        if codes == {"NO_MATCHING_RULE"}:
            behavior = "passthrough"
        elif codes == {"NO_MATCHING_RULE", "RULE_QUALIFIER_NOT_MET"}:
            behavior = "deny"
            first = next(r for r in decision.reasons if r.code == "RULE_QUALIFIER_NOT_MET")
    # A rule is what policy's permissions, tools or capabilities say; a default (``defaults.noMatch``,
    # ``defaults.allowVerifiedReadOnly``) or a builtin check is the policy speaking, not a matched rule.
    rule_based = first is not None and first.rule is not None and not first.rule.startswith(
        ("builtin:", "defaults."))
    if behavior == "passthrough":
        reason_type = "policy"  # no rule matched: the host's own permission layer decides
    elif first is not None and first.code.startswith("MODE_"):
        reason_type = "mode"
    elif first is not None and first.code in ("TRUST_COMPROMISED", "EFFECTS_UNVERIFIED"):
        reason_type = "safety_check"
    elif rule_based:
        reason_type = "rule"
    else:
        reason_type = "policy"
    out: dict[str, Any] = {
        "schema_version": "0.2.0",
        "decision_id": decision_id if decision_id is not None else "atd_" + os.urandom(16).hex(),
        "behavior": behavior,
        "mode": "default" if decision.mode == "enforce" else decision.mode,
        "source": AGENT_TOOL_SOURCES.get(decision.rule_source or "default", "policy_settings"),
        "reason": {
            "type": reason_type,
            "rule_ref": first.rule if first and behavior != "passthrough" else None,
            "message": ("no rule of this policy matched: the host's permission layer decides"
                        if behavior == "passthrough" else first.message if first else "no reason recorded"),
        },
        "rule_refs": sorted({r.rule for r in decision.reasons if r.rule}),
        "policy_refs": [decision.policy_digest] if decision.policy_digest else [],
        "evidence_refs": [decision.report_digest] if decision.report_digest else [],
        "decided_at": decided_at.isoformat() if decided_at is not None else utc_text(),
    }
    out["invocation_id"] = invocation_id
    if expires_at is not None:
        out["expires_at"] = expires_at.isoformat()
    return out


__all__ = ["DecisionInput", "decide", "effect_classes_of", "to_agent_tool"]
