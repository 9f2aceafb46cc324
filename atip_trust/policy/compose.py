"""Composition: org (managed) policy + local policy + CLI flags; the more restrictive answer wins.

The more restrictive answer wins; Claude Code managed settings and Gemini
CLI admin policies behave alike. The rules, each chosen so that no layer can widen another:

* command rules: the union of every layer's deny, ask and allow lists, evaluated deny → ask → allow, so an
  org deny or ask can never be overridden by a local allow;
* tool deny lists: union; tool allowlists: each layer's list must admit the tool (intersection);
* requirements: the highest minimum trust and SLSA level, provenance required if any layer requires it,
  allowed metadata sources intersected, the highest signature threshold;
* capability gates: per effect class, the higher minimum level and ``deny`` over ``ask`` (for
  ``below`` and for ``always``);
* ``permissions.localAllow: false`` in an org layer: allow rules (and ``tools.allow`` digest
  entries, ``defaults.allowVerifiedReadOnly``) of other layers are ignored and noted
  (``local_allow_stands``);
* mode: the strictest (enforce > warn > audit), an org layer that states none counting as enforce (so
  that another org or local layer's ``audit`` cannot loosen it); ``defaults.noMatch``: deny over ask;
  ``allowVerifiedReadOnly`` only if every layer that states it allows it;
* trust anchors (principle 1: the policy is their only source, and the org's word on them is
  final): policy/anchors.py computes the one anchor set every route reads (an org layer that states
  or implies an anchor kind fixes it, org layers intersect, local layers and flags only narrow);
  ``trust.sources`` only restricts (it is no anchor): the org's list when it states one, and decide.py
  checks every layer's list on its own;
* waivers relax trust requirements, so a local waiver is dropped when an org policy is present.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from atip_trust._base.record import replace
from atip_trust.facts.report import TrustLevel
from atip_trust.policy.anchors import anchor_set
from atip_trust.policy.load import (
    canonical_digest,
    layer_from_document,
    load_layer,
    org_layers,
)
from atip_trust.policy.model import (
    MODE_STRICTNESS,
    CommandRule,
    Defaults,
    Gate,
    Policy,
    PolicyLayer,
    Requirements,
    SourceRule,
    Waiver,
)

if TYPE_CHECKING:
    from typing import Any, Literal, TypeVar

    from atip_trust.policy.model import Mode, RuleSource

    N = TypeVar("N", bound=int)  # an int or a TrustLevel (an IntEnum)


def _stricter(a: N | None, b: N | None) -> N | None:
    """The higher of two minimums, either of which may be unstated (None)."""
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


def _sources(layers: Sequence[PolicyLayer]) -> list[SourceRule]:
    """``trust.sources`` only restricts (it is no anchor): the org's list when it states one (decide.py
    checks every layer's list on its own), else every layer's."""
    org = [layer for layer in layers if layer.source == "org" and layer.sources is not None]
    if org:
        return list(org[0].sources or ())
    return [s for layer in layers for s in layer.sources or ()]


def compose(layers: Sequence[PolicyLayer]) -> Policy:
    """Combine layers (org first) into one ``Policy`` that is at least as strict as each layer."""
    order = {"org": 0, "cli": 1, "local": 2, "default": 3}
    layers = sorted(layers, key=lambda layer: order[layer.source])
    notes: list[str] = []
    has_org = any(layer.source == "org" for layer in layers)
    anchors = anchor_set(layers, notes)
    mode = _composed_mode(layers)
    req = _composed_requirements(layers)
    gates = _composed_gates(layers)
    local_allow = local_allow_stands(layers)
    defaults = _composed_defaults(layers, local_allow)
    rules: list[CommandRule] = [r for layer in layers for r in layer.rules]
    ignored_allow = tuple(f"{r.text} [{r.source}]" for r in rules
                          if r.behavior == "allow" and r.source != "org" and not local_allow)
    if ignored_allow:
        notes.append(f"{len(ignored_allow)} allow rule(s) outside the org policy ignored: the org policy sets "
                     f"permissions.localAllow false (only its own allow rules count): {', '.join(ignored_allow)}")
    waivers = _composed_waivers(layers, has_org, notes)

    effect_restrictions: dict[str, RuleSource] = {}
    for layer in layers:
        for cls in layer.effect_restrictions:
            effect_restrictions.setdefault(cls, layer.source)

    if len(layers) == 1:
        digest = layers[0].digest
    else:
        digest = canonical_digest(
            [{"source": layer.source, "digest": layer.digest} for layer in layers]
        )
    name = next((layer.document.get("name") for layer in layers if layer.document.get("name")), None)
    # Keyed "<source>#<index>": several org layers (standard file, ATIP_TRUST_ORG_POLICY, --org-policy)
    # must each be checked on their own.
    layer_policies: dict[str, Policy] = (
        {f"{layer.source}#{i}": _alone(layer, waivers if has_org and layer.source != "org" else None)
         for i, layer in enumerate(layers)}
        if len(layers) > 1 else {}
    )
    return Policy(
        layers=tuple(layers),
        digest=digest,
        mode=mode,
        signers=anchors.signers,
        public_keys=anchors.public_keys,
        trusted_roots=anchors.trusted_roots,
        trusted_builders=anchors.trusted_builders,
        sources=_sources(layers),
        registries=anchors.registries,
        org_anchors=anchors.org_kinds,
        org_fixed=anchors.org_fixed,
        verifiers=anchors.verifiers,
        tlog_required=anchors.tlog_required,
        requirements=req,
        tool_allow=[t for layer in layers for t in layer.tool_allow if local_allow or t.source == "org"],
        tool_deny=[t for layer in layers for t in layer.tool_deny],
        tool_allowlists=[(layer.source, layer.tool_allow) for layer in layers if layer.tool_allow],
        delegation_allowlists=[
            (layer.source, layer.delegation_tools)
            for layer in layers
            if layer.delegation_tools is not None
        ],
        effect_restrictions=effect_restrictions,
        deny_rules=[r for r in rules if r.behavior == "deny"],
        ask_rules=[r for r in rules if r.behavior == "ask"],
        allow_rules=[r for r in rules if r.behavior == "allow" and (local_allow or r.source == "org")],
        ignored_allow_rules=ignored_allow,
        gates=gates,
        defaults=defaults,
        waivers=waivers,
        notes=notes,
        name=name,
        layer_policies=layer_policies,
    )


def _alone(layer: PolicyLayer, org_waivers: list[Waiver] | None) -> Policy:
    """One layer decided on its own (a denial in any layer stands, decide.py). Under an org policy a
    local (or cli, default) layer takes the org's waivers: the org is the one authority that may waive
    (a local waiver is dropped, above), so its waiver for a digest lifts that layer's gates and
    requirements too, as it does in the composed policy, instead of the layer's own denial standing
    un-waivable. An org layer keeps its own: another org's waiver never lifts it."""
    alone = compose([layer])
    return alone if org_waivers is None else replace(alone, waivers=list(org_waivers))


def _composed_mode(layers: Sequence[PolicyLayer]) -> Mode:
    """The strictest mode a layer states; ``enforce`` when none states one."""
    mode: Mode = "audit"
    stated_mode = False
    for layer in layers:
        # An org policy that says nothing about mode is enforcing; no other layer's "warn" loosens it.
        layer_mode: Mode | None = layer.mode or ("enforce" if layer.source == "org" else None)
        if layer_mode is not None:
            stated_mode = True
            if MODE_STRICTNESS[layer_mode] > MODE_STRICTNESS[mode]:
                mode = layer_mode
    if not stated_mode:
        mode = "enforce"
    return mode


def _composed_requirements(layers: Sequence[PolicyLayer]) -> Requirements:
    """Each requirement at its strictest; metadata sources are those every layer that names some allows."""
    req = Requirements()
    sources_allowed: set[str] | None = None
    for layer in layers:
        r = layer.requirements
        if r.metadata_sources is not None:
            s = set(r.metadata_sources)
            sources_allowed = s if sources_allowed is None else sources_allowed & s
        req = Requirements(
            min_trust_level=_stricter(req.min_trust_level, r.min_trust_level),
            min_slsa_level=_stricter(req.min_slsa_level, r.min_slsa_level),
            provenance_required=req.provenance_required or r.provenance_required,
            predicate_type=req.predicate_type or r.predicate_type,
            metadata_sources=None,
            signature_threshold=_stricter(req.signature_threshold, r.signature_threshold),
        )
    if sources_allowed is not None:
        req = Requirements(
            min_trust_level=req.min_trust_level,
            min_slsa_level=req.min_slsa_level,
            provenance_required=req.provenance_required,
            predicate_type=req.predicate_type,
            metadata_sources=tuple(sorted(sources_allowed)),
            signature_threshold=req.signature_threshold,
        )
    return req


def _composed_gates(layers: Sequence[PolicyLayer]) -> dict[str, Gate]:
    """Per capability class: the highest minimum, deny over ask, and the strictest ``always``."""
    gates: dict[str, Gate] = {}
    for layer in layers:
        for cls, g in layer.gates.items():
            cur = gates.get(cls)
            if cur is None:
                gates[cls] = g
            else:
                level = max(cur.min_trust_level, g.min_trust_level)
                below: Literal["ask", "deny"] = "deny" if "deny" in (cur.below, g.below) else "ask"
                src = g.source if g.min_trust_level > cur.min_trust_level else cur.source
                always: Literal["ask", "deny"] | None = (
                    "deny" if "deny" in (cur.always, g.always) else "ask" if "ask" in (cur.always, g.always)
                    else None)
                gates[cls] = Gate(min_trust_level=level, below=below, source=src, always=always)
    return gates


def local_allow_stands(layers: Sequence[PolicyLayer]) -> bool:
    """False when an org layer sets ``permissions.localAllow: false`` (as Claude Code's managed
    ``allowManagedPermissionRulesOnly``): then only org layers may allow (their allow rules, their
    ``tools.allow`` digest entries, their ``defaults.allowVerifiedReadOnly``), and an org's
    ``noMatch: ask`` cannot be widened by a local allow; what is left out is reported (notes)."""
    return not any(layer.source == "org" and isinstance(perms := layer.document.get("permissions"), dict)
                   and perms.get("localAllow") is False for layer in layers)


def _composed_defaults(layers: Sequence[PolicyLayer], local_allow: bool = True) -> Defaults:
    """``noMatch`` deny if any layer says so; verified read-only allowed only when stated and no layer
    refuses it, at the highest minimum level stated (under ``localAllow: false`` only the org may
    allow it)."""
    no_match = "ask"
    read_only = True
    stated_read_only = False
    ro_level = TrustLevel.VERIFIED
    for layer in layers:
        doc_defaults = layer.document.get("defaults", {})
        if doc_defaults.get("noMatch") == "deny":
            no_match = "deny"
        if not local_allow and layer.source != "org" and doc_defaults.get("allowVerifiedReadOnly") is True:
            continue
        if "allowVerifiedReadOnly" in doc_defaults:
            stated_read_only = True
            read_only = read_only and bool(doc_defaults["allowVerifiedReadOnly"])
        if "readOnlyMinTrustLevel" in doc_defaults:
            ro_level = max(ro_level, layer.defaults.read_only_min_trust_level)
    return Defaults(
        no_match=no_match,  # type: ignore[arg-type]
        allow_verified_read_only=read_only and stated_read_only,
        read_only_min_trust_level=ro_level,
    )


def _composed_waivers(layers: Sequence[PolicyLayer], has_org: bool, notes: list[str]) -> list[Waiver]:
    """Every layer's waivers, unless an org policy is present: then only the org's (the rest noted)."""
    waivers: list[Waiver] = []
    for layer in layers:
        if has_org and layer.source != "org" and layer.waivers:
            notes.append(
                f"{len(layer.waivers)} waiver(s) in the {layer.source} policy ignored: "
                "only the org policy may waive requirements when one is present"
            )
            continue
        waivers.extend(layer.waivers)
    return waivers


def cli_layer(
    *,
    min_trust_level: str | None = None,
    no_match_deny: bool = False,
    signers: list[dict[str, Any]] | None = None,
    predicate_type: str | None = None,
) -> PolicyLayer:
    """CLI flags as a layer of their own (rule source ``cli``).

    ``signers`` (policy ``trust.signers`` entries from identity flags) are anchors of the caller's, as
    with cosign: where no other layer states signers they are the ones trusted; where one does, every
    layer's list must name the signer (decide.py step 2), so the flags only narrow; and an org that
    fixes the anchor set ignores them (see the composition rules above)."""

    doc: dict[str, object] = {"version": 1}
    if signers:
        doc["trust"] = {"signers": signers}
    requirements: dict[str, object] = {}
    if min_trust_level:
        requirements["minTrustLevel"] = min_trust_level.upper()
    if predicate_type:  # gh's flags require its predicate type (cli/identity_flags.py)
        requirements["predicateType"] = predicate_type
    if requirements:
        doc["requirements"] = requirements
    if no_match_deny:
        doc["defaults"] = {"noMatch": "deny"}
    return layer_from_document(json.loads(json.dumps(doc)), source="cli")


#: The note (and, on every decision, the reason ``ORG_POLICY_LEFT_OUT``) of a policy loaded without the
#: machine's org policy (``load_policy(..., managed=False)``).
ORG_LEFT_OUT = ("the machine's org policy was left out (load_policy managed=False, for tests): this policy "
                "is not what admit applies on this machine")


def load_policy(
    path: str | os.PathLike[str],
    *,
    org: str | os.PathLike[str] | None = None,
    cli: PolicyLayer | None = None,
    managed: bool = True,
) -> Policy:
    """Load a local policy under the machine's org (managed) policy, as ``admit`` composes it (the
    standard org-policy path when it exists, and ``ATIP_TRUST_ORG_POLICY``), plus ``org`` (another org
    file) and ``cli`` (flags); compose them. Every org file is refused when group/other-writable or
    owned by neither root nor the current user.

    ``managed=False`` leaves the machine's org policy out: a named option for tests only, never a
    default (issue 33). The policy then says so in its notes, and every decision made with it carries
    the reason ``ORG_POLICY_LEFT_OUT``, which the audit line records."""
    layers = [load_layer(path, source="local")]
    if managed:
        layers.extend(org_layers())
    if org is not None:
        layers.append(load_layer(org, source="org"))
    if cli is not None:
        layers.append(cli)
    policy = compose(layers)
    if not managed:
        policy = replace(policy, org_left_out=True, notes=[*policy.notes, ORG_LEFT_OUT])
    return policy


__all__ = ["ORG_LEFT_OUT", "cli_layer", "compose", "load_policy"]
