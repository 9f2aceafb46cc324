"""Composition: org (managed) policy + local policy + CLI flags; the more restrictive answer wins.

Seed 004 ("hosts compose ... the more restrictive answer wins"); Claude Code managed settings and Gemini
CLI admin policies behave alike. The rules, each chosen so that no layer can widen another:

* command rules: the union of every layer's deny, ask and allow lists, evaluated deny → ask → allow, so an
  org deny or ask can never be overridden by a local allow;
* tool deny lists: union; tool allowlists: each layer's list must admit the tool (intersection);
* requirements: the highest minimum trust and SLSA level, provenance required if any layer requires it,
  allowed metadata sources intersected, the highest signature threshold;
* capability gates: per effect class, the higher minimum level and ``deny`` over ``ask``;
* mode: the strictest (enforce > warn > audit), an org layer that states none counting as enforce (so
  that another org or local layer's ``audit`` cannot loosen it); ``defaults.noMatch``: deny over ask;
  ``allowVerifiedReadOnly`` only if every layer that states it allows it;
* trust anchors (signers, keys, roots, builders, sources, registries): the org's lists when the org states
  them (a local list cannot add an anchor: that would widen trust), otherwise the local ones; with
  several org layers, the first one's list, except builders: only ids every org list names, at the
  lowest level any gives. A later layer's signers, keys and sources still narrow: decide.py checks
  every layer's signers and each layer on its own, constraints.py every layer's keys;
* waivers relax trust requirements, so a local waiver is dropped when an org policy is present.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Literal, TypeVar

from ..report import TrustLevel
from .load import canonical_digest
from .model import (
    MODE_STRICTNESS,
    BuilderRule,
    CommandRule,
    Defaults,
    Gate,
    Mode,
    Policy,
    PolicyLayer,
    Requirements,
    RuleSource,
    Waiver,
)

T = TypeVar("T")


def _max_level(a: TrustLevel | None, b: TrustLevel | None) -> TrustLevel | None:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


def _max_int(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


def _anchor(
    layers: Sequence[PolicyLayer], attr: str, notes: list[str]
) -> list[T]:
    org = [layer for layer in layers if layer.source == "org" and getattr(layer, attr) is not None]
    if org:
        others = [
            layer for layer in layers if layer.source != "org" and getattr(layer, attr)
        ]
        for layer in others:
            notes.append(
                f"{layer.source} policy's trust.{attr} ignored: the org policy states its own "
                "and a local list could only widen it"
            )
        if attr == "trusted_builders" and len(org) > 1:
            return _common_builders(org)  # type: ignore[return-value]
        return list(getattr(org[0], attr))
    out: list[T] = []
    for layer in layers:
        val = getattr(layer, attr)
        if val is not None:
            out.extend(val)
    return out


def _common_builders(org: Sequence[PolicyLayer]) -> list[BuilderRule]:
    """Builders every org layer names (by id pattern), each at the lowest level any of them grants."""
    lists = [layer.trusted_builders or () for layer in org]
    out: list[BuilderRule] = []
    for b in lists[0]:
        levels = [min((x.level for x in lst if x.id == b.id), default=-1) for lst in lists]
        if min(levels) >= 0 and not any(o.id == b.id for o in out):
            merged = dataclasses.replace(b, level=min(levels))
            if any(x.binding_json() != b.binding_json() for lst in lists for x in lst if x.id == b.id):
                # Org layers disagree on how the signature must prove this builder; no one binding is
                # at least as strict as each, so none is kept and the builder grants no level.
                merged = dataclasses.replace(merged, signer_workflow=(), runner_environment=None,
                                             signer_issuer=None, signer_key=())
            out.append(merged)
    return out


def compose(layers: Sequence[PolicyLayer]) -> Policy:
    """Combine layers (org first) into one ``Policy`` that is at least as strict as each layer."""
    order = {"org": 0, "cli": 1, "local": 2, "default": 3}
    layers = sorted(layers, key=lambda layer: order[layer.source])
    notes: list[str] = []
    has_org = any(layer.source == "org" for layer in layers)

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

    req = Requirements()
    sources_allowed: set[str] | None = None
    for layer in layers:
        r = layer.requirements
        if r.metadata_sources is not None:
            s = set(r.metadata_sources)
            sources_allowed = s if sources_allowed is None else sources_allowed & s
        req = Requirements(
            min_trust_level=_max_level(req.min_trust_level, r.min_trust_level),
            min_slsa_level=_max_int(req.min_slsa_level, r.min_slsa_level),
            provenance_required=req.provenance_required or r.provenance_required,
            predicate_type=req.predicate_type or r.predicate_type,
            metadata_sources=None,
            signature_threshold=_max_int(req.signature_threshold, r.signature_threshold),
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
                gates[cls] = Gate(min_trust_level=level, below=below, source=src)

    no_match = "ask"
    read_only = True
    stated_read_only = False
    ro_level = TrustLevel.VERIFIED
    for layer in layers:
        doc_defaults = layer.document.get("defaults", {})
        if doc_defaults.get("noMatch") == "deny":
            no_match = "deny"
        if "allowVerifiedReadOnly" in doc_defaults:
            stated_read_only = True
            read_only = read_only and bool(doc_defaults["allowVerifiedReadOnly"])
        if "readOnlyMinTrustLevel" in doc_defaults:
            ro_level = max(ro_level, layer.defaults.read_only_min_trust_level)
    defaults = Defaults(
        no_match=no_match,  # type: ignore[arg-type]
        allow_verified_read_only=read_only and stated_read_only,
        read_only_min_trust_level=ro_level,
    )

    rules: list[CommandRule] = [r for layer in layers for r in layer.rules]
    waivers: list[Waiver] = []
    for layer in layers:
        if has_org and layer.source != "org" and layer.waivers:
            notes.append(
                f"{len(layer.waivers)} waiver(s) in the {layer.source} policy ignored: "
                "only the org policy may waive requirements when one is present"
            )
            continue
        waivers.extend(layer.waivers)

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
        {f"{layer.source}#{i}": compose([layer]) for i, layer in enumerate(layers)}
        if len(layers) > 1 else {}
    )
    return Policy(
        layers=tuple(layers),
        digest=digest,
        mode=mode,
        signers=_anchor(layers, "signers", notes),
        public_keys=_anchor(layers, "public_keys", notes),
        trusted_roots=_anchor(layers, "trusted_roots", notes),
        trusted_builders=_anchor(layers, "trusted_builders", notes),
        sources=_anchor(layers, "sources", notes),
        registries=_anchor(layers, "registries", notes),
        requirements=req,
        tool_allow=[t for layer in layers for t in layer.tool_allow],
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
        allow_rules=[r for r in rules if r.behavior == "allow"],
        gates=gates,
        defaults=defaults,
        waivers=waivers,
        notes=notes,
        name=name,
        layer_policies=layer_policies,
    )


def cli_layer(*, min_trust_level: str | None = None, no_match_deny: bool = False) -> PolicyLayer:
    """CLI flags as a layer of their own (rule source ``cli``); flags can only tighten."""
    from .load import layer_from_document

    doc: dict[str, object] = {"version": 1}
    if min_trust_level:
        doc["requirements"] = {"minTrustLevel": min_trust_level.upper()}
    if no_match_deny:
        doc["defaults"] = {"noMatch": "deny"}
    return layer_from_document(json.loads(json.dumps(doc)), source="cli")



__all__ = ["cli_layer", "compose"]
