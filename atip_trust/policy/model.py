"""The policy model: typed, immutable, built once from a schema-checked document (practice 7).

A ``Policy`` is the ONLY source of trust anchors (principle 1): signers, public keys, trusted
roots, trusted builders, source repositories and registries are read from here by verification, never from
a tool's own metadata. It is loaded once and decides many times (``Policy.decide``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from atip_trust._base.lazy import lazy_import
from atip_trust._base.record import Record, field
from atip_trust.facts.report import TrustLevel

if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any, Literal

    from atip_trust.provenance import slsa

    RuleBehavior = Literal["allow", "ask", "deny"]
    Mode = Literal["enforce", "warn", "audit"]
    #: Where a rule came from; exported as the Agent Tool rule source (the Agent Tool permission decision's rule sources).
    RuleSource = Literal["org", "local", "cli", "default"]
else:
    slsa = lazy_import("atip_trust.provenance.slsa")  # only a policy that states sources or builders needs it

#: Strictness order used everywhere a "more restrictive answer wins" (the more restrictive answer wins, as hosts compose policies).
STRICTNESS: dict[str, int] = {"allow": 0, "ask": 1, "deny": 2}
MODE_STRICTNESS: dict[str, int] = {"audit": 0, "warn": 1, "enforce": 2}


def stricter(a: RuleBehavior, b: RuleBehavior) -> RuleBehavior:
    return a if STRICTNESS[a] >= STRICTNESS[b] else b


class SignerRule(Record):
    """An identity rule (cosign names, full-match regexps: principle 4).

    Field names are part of the interface with the identity verifier; keep them exactly.
    """

    identity: str | None = None
    identity_regexp: str | None = None
    issuer: str | None = None
    issuer_regexp: str | None = None
    claims: dict[str, str] = field(default_factory=dict)

    def matches(
        self, identity: str | None, issuer: str | None, extensions: Mapping[str, str] | None = None
    ) -> bool:
        """True when the identity, the issuer and every listed claim match; None never matches."""
        if identity is None or issuer is None:
            return False
        if self.identity is not None and identity != self.identity:
            return False
        if self.identity_regexp is not None and re.fullmatch(self.identity_regexp, identity) is None:
            return False
        if self.identity is None and self.identity_regexp is None:
            return False  # schema forbids; fail closed anyway
        if self.issuer is not None and issuer != self.issuer:
            return False
        if self.issuer_regexp is not None and re.fullmatch(self.issuer_regexp, issuer) is None:
            return False
        if self.issuer is None and self.issuer_regexp is None:
            return False
        ext = extensions or {}
        return all(ext.get(k) == v for k, v in self.claims.items())

    def describe(self) -> str:
        who = self.identity if self.identity is not None else f"~{self.identity_regexp}"
        iss = self.issuer if self.issuer is not None else f"~{self.issuer_regexp}"
        extra = "".join(f", {k}={v}" for k, v in sorted(self.claims.items()))
        return f"{who} (issuer {iss}{extra})"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, val in (
            ("identity", self.identity),
            ("identityRegexp", self.identity_regexp),
            ("issuer", self.issuer),
            ("issuerRegexp", self.issuer_regexp),
        ):
            if val is not None:
                out[key] = val
        if self.claims:
            out["claims"] = dict(self.claims)
        return out


class PublicKeyRule(Record):
    """A trusted public key (``trust.publicKeys``): a PEM file, its digest, or both."""

    #: Absolute path (relative paths in the file are resolved against the policy's directory).
    path: str | None = None
    digest: str | None = None
    name: str | None = None


class BuilderRule(Record):
    """A trusted builder and the SLSA Build level policy grants it (principle 3).

    ``id`` matches exactly, or, when it ends in ``@refs/tags/*``-style glob, by that glob on the ref only.
    """

    id: str
    level: int
    name: str | None = None
    #: Where the level is published (the shipped map cites each builder's own documentation).
    source: str | None = None
    #: ``builtin:trusted-builders`` when the rule came from the shipped map; None when the policy
    #: states it.
    origin: str | None = None
    #: How the attestation's signature proves this builder (``provenance.SignerBinding``): the
    #: certificate's build-signer workflow patterns, runner environment, OIDC issuer, or trusted key
    #: digests. A rule stating none of workflow, runner environment or key grants no level.
    signer_workflow: tuple[str, ...] = ()
    runner_environment: str | None = None
    signer_issuer: str | None = None
    signer_key: tuple[str, ...] = ()

    def binding_json(self) -> dict[str, Any]:
        """The binding in the JSON names of the map and the policy schema (only the fields stated);
        ``slsa`` is imported on this first use, by a policy that states builders."""
        return slsa.binding_json(self.signer_workflow, self.runner_environment, self.signer_issuer,
                                 self.signer_key)


class SourceRule(Record):
    """An allowed source repository and its refs (``trust.sources``)."""

    repository: str
    refs: tuple[str, ...] = ()


class RegistryRule(Record):
    """A shim registry policy names (``trust.registries``) and the signers its shims need."""

    url: str
    signers: tuple[SignerRule, ...]
    priority: int = 100
    mode: Literal["allowlist", "fallthrough"] = 'fallthrough'
    name: str | None = None
    #: The environment variable holding a bearer token for this registry (RFC §4.6 ``tokenEnvVar``).
    token_env: str | None = None
    #: ``maxCacheAgeHours``: how old a cached shim's last check may be when it is used without the
    #: network (registry/client.py, "Cache"); 168 (7 days) unless policy says otherwise.
    max_cache_age_hours: float = 168


class VerifierEntry(Record):
    """One ``trust.verifiers`` entry as its layer wrote it (schema-checked), with its key file resolved
    against the layer's folder; policy/verifiers.py compiles it."""

    source: RuleSource
    index: int
    entry: dict[str, Any]
    key_path: str | None

    def same_as(self, other: VerifierEntry) -> bool:
        """The same verifier, as two org layers would both grant it: every field equal, the same key file."""
        mine = {k: v for k, v in self.entry.items() if k not in ("publicKey", "comment")}
        theirs = {k: v for k, v in other.entry.items() if k not in ("publicKey", "comment")}
        return mine == theirs and self.key_path == other.key_path


class Requirements(Record):
    """What a tool must meet to run (``requirements``), waivable by a live waiver."""

    min_trust_level: TrustLevel | None = None
    min_slsa_level: int | None = None
    provenance_required: bool = False
    predicate_type: str | None = None
    #: RFC §3.2.2 ``trust.source`` values allowed; None = any.
    metadata_sources: tuple[str, ...] | None = None
    #: M of the N signers in ``trust.signers`` must have signed (distinct identities).
    signature_threshold: int | None = None


class ToolRule(Record):
    """A tool allowed or denied by name, by digest, or both (``tools``)."""

    name: str | None
    digest: str | None
    source: RuleSource
    text: str


class CommandRule(Record):
    """One permissions rule, compiled. See ``rules.py`` for the matching semantics."""

    behavior: RuleBehavior
    #: ``any`` (bare ``Bash``), ``exact``, ``prefix`` (``:*``), ``wildcard`` (``*``), ``tokens`` (Codex).
    kind: Literal["any", "exact", "prefix", "wildcard", "tokens"]
    #: The rule as written (``Bash(gh pr view *)``, ``["gh","pr","view"]``), for reasons.
    text: str
    source: RuleSource
    pattern: str = ''
    #: ``prefix``/``wildcard``: the literal pieces between unescaped ``*`` (``"a * b"`` → ``("a ", " b")``),
    #: matched linearly by ``rules.glob_match`` (no regexp, no backtracking).
    parts: tuple[str, ...] = ()
    #: A trailing `` *`` also matches nothing (``gh pr view *`` matches ``gh pr view``).
    tail_optional: bool = False
    tokens: tuple[tuple[str, ...], ...] = ()
    min_trust_level: TrustLevel | None = None
    signer: SignerRule | None = None

    @property
    def first_word(self) -> str | None:
        """The literal text every command line this rule matches starts with, up to its first space
        (the tool as the line writes it), or None when the rule does not fix it (``any``, ``tokens``,
        a ``*`` inside the first word). ``rules.may_match`` uses it to skip, before any matching, the
        rules of other tools; ``rules.RuleIndex`` reads it once per rule when a policy is compiled."""
        if self.kind == "exact":
            text = self.pattern
        elif self.kind in ("prefix", "wildcard") and len(self.parts) > 1 and " " in self.parts[0]:
            text = self.parts[0]
        else:
            return None
        return text.split(" ", 1)[0]

    def conditions(self, at_least: str, signed_by: str) -> list[str]:
        """The trust conditions of an allow rule, in words: ``at_least`` and ``signed_by`` are templates
        given the minimum level's name and the signer rule's description (decide's reasons, explain)."""
        said = []
        if self.min_trust_level is not None:
            said.append(at_least.format(self.min_trust_level.name))
        if self.signer is not None:
            said.append(signed_by.format(self.signer.describe()))
        return said


class Gate(Record):
    """A capability class and the trust level below which it asks or denies (``capabilities``), and
    what every command with the class gets at any level (``always``; None: nothing)."""

    min_trust_level: TrustLevel
    below: Literal["ask", "deny"] = 'ask'
    source: RuleSource = 'local'
    always: Literal["ask", "deny"] | None = None


class Waiver(Record):
    """A temporary exception to the requirements for one tool or digest, until ``expires``."""

    digest: str | None
    tool: str | None
    reason: str
    expires: datetime
    source: RuleSource


class Defaults(Record):
    """What happens when no rule matches (``defaults``)."""

    no_match: Literal["ask", "deny"] = 'ask'
    allow_verified_read_only: bool = False
    read_only_min_trust_level: TrustLevel = TrustLevel.VERIFIED


#: RFC §3.6 ``cost.estimate`` values, cheapest first.
COST_ORDER: tuple[str, ...] = ("free", "low", "medium", "high")


class CallLimits(Record):
    """The ``calls`` section composed over every layer: the lowest cost limit, deny over ask."""

    max_cost_estimate: str | None = None
    over_cost: Literal["ask", "deny"] = 'ask'


class PolicyLayer(Record):
    """One policy document (org, local or CLI flags), parsed; composition combines layers."""

    source: RuleSource
    document: dict[str, Any]
    digest: str
    path: str | None
    mode: Mode | None
    signers: tuple[SignerRule, ...] | None
    public_keys: tuple[PublicKeyRule, ...] | None
    trusted_roots: tuple[str, ...] | None
    trusted_builders: tuple[BuilderRule, ...] | None
    sources: tuple[SourceRule, ...] | None
    registries: tuple[RegistryRule, ...] | None
    requirements: Requirements
    tool_allow: tuple[ToolRule, ...]
    tool_deny: tuple[ToolRule, ...]
    #: Delegation ``allowedTools`` (RFC §10.2); None when absent (no restriction).
    delegation_tools: tuple[str, ...] | None
    #: ``effectRestrictions``: effect class names that must not be present.
    effect_restrictions: tuple[str, ...]
    rules: tuple[CommandRule, ...]
    gates: dict[str, Gate]
    defaults: Defaults
    waivers: tuple[Waiver, ...]


if TYPE_CHECKING:
    EnvMode = Literal["pass", "scrub", "allowlist"]


class EnvRule(Record):
    """One layer's ``exec.env``: a filter the environment passes through (execution/env.py)."""

    mode: EnvMode = 'pass'
    allow: tuple[str, ...] = ()
    source: RuleSource = 'local'


class ExecSettings(Record):
    """The ``exec`` section of every layer, composed: ``scripts`` is the strictest stated (deny over
    verify-interpreter), and the environment passes through each layer's ``env`` filter in turn, so
    a variable survives only where every layer that speaks keeps it."""

    scripts: Literal["deny", "verify-interpreter"] = 'verify-interpreter'
    env: tuple[EnvRule, ...] = ()
    #: The run-time boundary from verified effects (execution/sandbox.py, docs/sandbox.md): the strictest
    #: stated of ``off`` < ``preferred`` < ``required``; ``preferred`` when no layer states it.
    sandbox: Literal["off", "preferred", "required"] = 'preferred'


#: ``exec.sandbox`` values, least to most strict (execution/sandbox.py ``MODES``).
_SANDBOX_MODES: tuple[str, ...] = ("off", "preferred", "required")

#: The call loop's bounds for one call when no layer states ``bridge.callTimeoutMs`` / ``maxOutputBytes``.
BRIDGE_CALL_TIMEOUT_MS = 60_000
BRIDGE_MAX_OUTPUT_BYTES = 1024 * 1024


class DiscoverySettings(Record):
    """The policy's ``discovery`` section, composed: which tools may be probed with ``--agent`` and the
    bounds of one probe (the strictest layer wins: ``never`` over ``verified``, the smaller numbers)."""

    probe: Literal["verified", "never"] = 'verified'
    #: RFC §5.2 runs ``--agent`` with a 2 s timeout.
    probe_timeout_ms: int = 2000
    #: Each of stdout and stderr; the metadata cap (_base/limits.py) is the largest allowed.
    max_output_bytes: int = 4 * 1024 * 1024


class Policy(Record):
    """A composed, immutable policy: load once, decide many times. Its fields cannot be reassigned
    (a record) and nothing changes its lists in place: ``decide`` compiles the rules once per policy
    (``rules.RuleIndex``)."""

    #: Not a field: what ``decide`` works out once from this policy (policy/decide.py ``_plan_of``),
    #: kept with the value it is derived from, so that it lives and dies with it (no cache keyed by
    #: ``id()``, docs/adr/0001-start-up.md). Never compared, copied, pickled or replaced.
    __slots__ = ("_decide_plan",)

    layers: tuple[PolicyLayer, ...]
    digest: str
    mode: Mode
    signers: list[SignerRule]
    public_keys: list[PublicKeyRule]
    trusted_roots: list[str]
    trusted_builders: list[BuilderRule]
    sources: list[SourceRule]
    registries: list[RegistryRule]
    requirements: Requirements
    tool_allow: list[ToolRule]
    tool_deny: list[ToolRule]
    #: One allowlist per layer that has one: a tool must be on every list (composition intersects).
    tool_allowlists: list[tuple[RuleSource, tuple[ToolRule, ...]]]
    delegation_allowlists: list[tuple[RuleSource, tuple[str, ...]]]
    effect_restrictions: dict[str, RuleSource]
    #: deny rules first, then ask, then allow (evaluation order, principle 11).
    deny_rules: list[CommandRule]
    ask_rules: list[CommandRule]
    allow_rules: list[CommandRule]
    gates: dict[str, Gate]
    defaults: Defaults
    waivers: list[Waiver]
    #: What composition dropped or tightened, for ``policy explain`` and audit.
    notes: list[str] = field(default_factory=list)
    name: str | None = None
    #: Each layer composed on its own (only when there are several): a denial in any layer stands.
    layer_policies: dict[str, Policy] = field(default_factory=dict)
    #: The trust anchor lists (document names) every org layer that fixes the anchor set states itself
    #: (policy/anchors.py); a list one of them is silent on has its default (nobody, for signers, keys,
    #: registries and verifiers).
    org_anchors: tuple[str, ...] = ()
    #: Whether an org layer fixes the anchor set (policy/anchors.py).
    org_fixed: bool = False
    #: The ``trust.verifiers`` entries whose VSAs count (policy/anchors.py, policy/verifiers.py).
    verifiers: tuple[VerifierEntry, ...] = ()
    #: ``trust.requireTransparencyLog`` composed (policy/anchors.py); None: the chosen root decides.
    tlog_required: bool | None = None
    #: Allow rules an org's ``permissions.localAllow: false`` left out (their text and layer), reported.
    ignored_allow_rules: tuple[str, ...] = ()
    #: True when the machine's org policy was left out on purpose (``load_policy(managed=False)``, tests):
    #: every decision then says so (reason ``ORG_POLICY_LEFT_OUT``).
    org_left_out: bool = False

    @property
    def org_fixes_anchors(self) -> bool:
        return self.org_fixed or bool(self.org_anchors)

    def org_silent_on(self, name: str) -> bool:
        """True when the org fixes the anchor set but states no ``trust.<name>`` (in some org layer that
        fixes it): for signers, keys, registries and verifiers that list is empty (no local or CLI
        anchor of that kind counts)."""
        return self.org_fixes_anchors and name not in self.org_anchors

    @property
    def audit_log(self) -> str | None:
        """The audit log an org layer names (``audit.log``); a local layer's only when no org names one."""
        for source in ("org", "local", "cli", "default"):
            for layer in self.layers:
                audit = layer.document.get("audit")
                if layer.source == source and isinstance(audit, dict) and isinstance(audit.get("log"), str):
                    return str(audit["log"])
        return None

    @property
    def audit_log_pinned(self) -> bool:
        """True when an org layer names the audit log: then no other log may be chosen."""
        return any(layer.source == "org" and isinstance(layer.document.get("audit"), dict)
                   and "log" in layer.document["audit"] for layer in self.layers)

    @property
    def call_limits(self) -> CallLimits:
        """The ``calls`` section of every layer, the strictest value winning (a layer only tightens)."""
        limit: str | None = None
        over: Literal["ask", "deny"] = "ask"
        for layer in self.layers:
            calls = layer.document.get("calls")
            if not isinstance(calls, dict):
                continue
            cost = calls.get("maxCostEstimate")
            if cost in COST_ORDER and (limit is None or COST_ORDER.index(cost) < COST_ORDER.index(limit)):
                limit = cost
            if calls.get("overCost") == "deny":
                over = "deny"
        return CallLimits(max_cost_estimate=limit, over_cost=over)

    @property
    def audit_required(self) -> bool:
        """True when any layer says ``audit.required``: auditing cannot be turned off."""
        return any(isinstance(layer.document.get("audit"), dict)
                   and layer.document["audit"].get("required") is True for layer in self.layers)

    @property
    def bridge_ask_as(self) -> Literal["confirm", "block"]:
        """``bridge.askAs``: ``block`` when any layer says so (the stricter answer wins), else ``confirm``."""
        for layer in self.layers:
            bridge = layer.document.get("bridge")
            if isinstance(bridge, dict) and bridge.get("askAs") == "block":
                return "block"
        return "confirm"

    @property
    def bridge_state_trust_level(self) -> bool:
        """``bridge.stateTrustLevel``: true when any layer says true."""
        return any(isinstance(layer.document.get("bridge"), dict)
                   and layer.document["bridge"].get("stateTrustLevel") is True for layer in self.layers)

    @property
    def bridge_call_bounds(self) -> tuple[int, int]:
        """(``bridge.callTimeoutMs``, ``bridge.maxOutputBytes``) for one call the call loop runs: the
        smallest value any layer states, else 60 s and 1 MiB."""
        timeout, cap = BRIDGE_CALL_TIMEOUT_MS, BRIDGE_MAX_OUTPUT_BYTES
        for layer in self.layers:
            bridge = layer.document.get("bridge")
            if not isinstance(bridge, dict):
                continue
            t, c = bridge.get("callTimeoutMs"), bridge.get("maxOutputBytes")
            if isinstance(t, int) and not isinstance(t, bool):
                timeout = min(timeout, t)
            if isinstance(c, int) and not isinstance(c, bool):
                cap = min(cap, c)
        return timeout, cap

    @property
    def exec_settings(self) -> ExecSettings:
        """The composed ``exec`` section (docs/cli-guide.md, "exec"): read from the layers' documents, which the
        schema has checked."""
        scripts: Literal["deny", "verify-interpreter"] = "verify-interpreter"
        env: list[EnvRule] = []
        sandbox: list[str] = []
        for layer in self.layers:
            section = layer.document.get("exec")
            if not isinstance(section, dict):
                continue
            if section.get("scripts") == "deny":
                scripts = "deny"
            if section.get("sandbox") in _SANDBOX_MODES:
                sandbox.append(section["sandbox"])
            rule = section.get("env")
            if isinstance(rule, dict):
                mode = rule.get("mode", "pass")
                allow = rule.get("allow", [])
                env.append(EnvRule(mode=mode if mode in ("pass", "scrub", "allowlist") else "allowlist",
                                   allow=tuple(a for a in allow if isinstance(a, str)),
                                   source=layer.source))
        mode = max(sandbox, key=_SANDBOX_MODES.index) if sandbox else "preferred"
        return ExecSettings(scripts=scripts, env=tuple(env),
                            sandbox="required" if mode == "required" else "off" if mode == "off" else "preferred")

    @property
    def hooks_unlisted(self) -> Literal["passthrough", "ask", "deny"]:
        """``hooks.unlisted`` of every layer, the strictest winning (deny > ask > passthrough): what the
        agent hooks answer for a program the policy does not name (agents/hooks.py)."""
        order = ("passthrough", "ask", "deny")
        out: Literal["passthrough", "ask", "deny"] = "passthrough"
        for layer in self.layers:
            hooks = layer.document.get("hooks")
            value = hooks.get("unlisted") if isinstance(hooks, dict) else None
            if value in order and order.index(value) > order.index(out):
                out = value
        return out

    @property
    def discovery(self) -> DiscoverySettings:
        """``discovery`` of every layer, composed: any ``never`` wins, the smallest bounds apply."""
        out = DiscoverySettings()
        for layer in self.layers:
            sect = layer.document.get("discovery")
            if not isinstance(sect, dict):
                continue
            never = sect.get("probe") == "never" or out.probe == "never"
            probe: Literal["verified", "never"] = "never" if never else "verified"
            timeout, cap = sect.get("probeTimeoutMs"), sect.get("maxOutputBytes")
            out = DiscoverySettings(
                probe=probe,
                probe_timeout_ms=min(out.probe_timeout_ms, timeout) if isinstance(timeout, int)
                else out.probe_timeout_ms,
                max_output_bytes=min(out.max_output_bytes, cap) if isinstance(cap, int)
                else out.max_output_bytes)
        return out

    @property
    def signers_declared(self) -> bool:
        """True when some layer states ``trust.signers`` (even as an empty list: nobody is trusted), or
        the org fixes the anchor set (a signer list it does not state is empty)."""
        return self.org_fixes_anchors or any(layer.signers is not None for layer in self.layers)

    @property
    def trusted_roots_pinned(self) -> bool:
        """True when policy says which trusted root to use: some layer states ``trust.trustedRoots``, or
        the org fixes the anchor set (then silence means the embedded public-good root)."""
        return self.org_fixes_anchors or any(layer.trusted_roots is not None for layer in self.layers)

    @property
    def sources_declared(self) -> bool:
        """True when some layer states ``trust.sources`` (even as an empty list: no source allowed)."""
        return any(layer.sources is not None for layer in self.layers)


__all__ = [
    "BuilderRule",
    "CallLimits",
    "DiscoverySettings",
    "EnvRule",
    "ExecSettings",
    "Gate",
    "Policy",
    "PolicyLayer",
    "PublicKeyRule",
    "RegistryRule",
    "Requirements",
    "SignerRule",
    "SourceRule",
    "VerifierEntry",
    "Waiver",
]
