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
* mode: the strictest (enforce > warn > audit), an org layer that states none counting as enforce (so
  that another org or local layer's ``audit`` cannot loosen it); ``defaults.noMatch``: deny over ask;
  ``allowVerifiedReadOnly`` only if every layer that states it allows it;
* trust anchors (principle 1: the policy is their only source, and the org's word on them is
  final). The anchor lists are ``trust.signers``, ``publicKeys``, ``trustedRoots``, ``trustedBuilders``
  and ``registries`` (with their signers). An org layer that states ANY of them fixes the whole anchor
  set: each list is the org's, and a list the org is silent on has the value it has when nobody states
  it (``trustedRoots``: the embedded public-good root; ``trustedBuilders``: the shipped builder map;
  ``signers``, ``publicKeys``, ``registries``: none). A local (or CLI) layer can then only narrow:

  - signers and keys: the org's list is the one verification uses, and every layer that states a list
    must name the signer too (decide.py step (2), constraints.py ``trusted_keys``), so a local list
    only narrows; under an org that is silent on signers or keys, a local list names nobody new;
  - roots: the org's roots that the local list also names; a local root the org does not list is
    ignored with a note (a local root would let whoever holds it mint certificates for the org's
    signer identities);
  - builders: intersection by id, at the lowest level any layer grants; a local list equal to the
    shipped map unchanged (``{"include": "builtin:trusted-builders"}``, as in policies/default.json)
    says nothing beyond the default and is not intersected; a builder or level the org does not grant
    is ignored with a note;
  - registries: only the registries (and their signers) the org states; local ones are ignored.

  With several org layers: signers, keys, registries from the first that states them (decide.py checks
  each layer's signers), roots those every stating org layer lists, builders the common ids at the
  lowest level. An org silent on every anchor list (or no org layer) lets local anchors stand: the
  union of the local lists. ``trust.sources`` only restricts (it is no anchor): the org's list when it
  states one, and decide.py checks every layer's list on its own;
* waivers relax trust requirements, so a local waiver is dropped when an org policy is present.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
TYPE_CHECKING = False  # typing's constant without importing typing at run time (docs/caching.md)
if TYPE_CHECKING:
    from typing import Any, Literal, TypeVar

    T = TypeVar("T")
    N = TypeVar("N", bound=int)  # an int or a TrustLevel (an IntEnum)

from atip_trust._base.record import replace
from atip_trust.facts.report import TrustLevel
from atip_trust.policy.load import (
    builtin_builders,
    canonical_digest,
    layer_from_document,
    load_layer,
    org_layers,
)
from atip_trust.policy.model import (
    MODE_STRICTNESS,
    BuilderRule,
    CommandRule,
    Defaults,
    Gate,
    Policy,
    PolicyLayer,
    Requirements,
    Waiver,
)

if TYPE_CHECKING:
    from atip_trust.policy.model import Mode, RuleSource



def _stricter(a: N | None, b: N | None) -> N | None:
    """The higher of two minimums, either of which may be unstated (None)."""
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


#: The anchor lists (attribute, document name) an org layer fixes as a whole (module docstring).
ANCHOR_LISTS: tuple[tuple[str, str], ...] = (
    ("signers", "signers"),
    ("public_keys", "publicKeys"),
    ("trusted_roots", "trustedRoots"),
    ("trusted_builders", "trustedBuilders"),
    ("registries", "registries"),
)


def org_anchor_lists(layers: Sequence[PolicyLayer]) -> tuple[str, ...]:
    """The anchor lists (document names) some org layer states; empty when the org states none."""
    return tuple(
        name for attr, name in ANCHOR_LISTS
        if any(layer.source == "org" and getattr(layer, attr) is not None for layer in layers)
    )


def _anchor(
    layers: Sequence[PolicyLayer], attr: str, notes: list[str], org_fixed: bool
) -> list[T]:
    """Signers, keys, sources, registries: the first org list; else nothing when the org fixes the
    anchor set (a list it is silent on names nobody); else the union of the local lists."""
    org = [layer for layer in layers if layer.source == "org" and getattr(layer, attr) is not None]
    if org or (org_fixed and attr != "sources"):
        others = [
            layer for layer in layers if layer.source != "org" and getattr(layer, attr) is not None
        ]
        for layer in others:
            if org and attr in ("signers", "public_keys", "sources"):
                notes.append(
                    f"{layer.source} policy's trust.{attr} adds nothing: the org policy states its "
                    "own, and the local list can only narrow it (both must hold)"
                )
            else:
                notes.append(
                    f"{layer.source} policy's trust.{attr} ignored: the org policy "
                    + ("states its own" if org else "states trust anchors and none of this kind")
                    + ", and a local list could only widen it"
                )
        return list(getattr(org[0], attr)) if org else []
    out: list[T] = []
    for layer in layers:
        val = getattr(layer, attr)
        if val is not None:
            out.extend(val)
    return out


def _roots(layers: Sequence[PolicyLayer], notes: list[str], org_fixed: bool) -> list[str]:
    """Under an org that fixes anchors: its roots (production when it is silent) that every other
    layer stating roots also lists; a layer whose list shares none is ignored with a note."""
    if not org_fixed:
        return _anchor(layers, "trusted_roots", notes, org_fixed)
    org = [layer for layer in layers if layer.source == "org" and layer.trusted_roots is not None]
    out = list(org[0].trusted_roots or ()) if org else ["production"]
    for layer in layers:
        if layer.trusted_roots is None or (org and layer is org[0]):
            continue
        narrowed = [r for r in out if r in layer.trusted_roots]
        if narrowed:
            out = narrowed
        else:
            notes.append(
                f"{layer.source} policy's trust.trustedRoots {list(layer.trusted_roots)} ignored: "
                f"the org policy fixes the trust anchors and trusts only {out} (a root it does not "
                "list could mint certificates for its signer identities)"
            )
    return out


def _common_builders(org: Sequence[PolicyLayer]) -> list[BuilderRule]:
    """Builders every org layer names (by id pattern), each at the lowest level any of them grants."""
    lists = [layer.trusted_builders or () for layer in org]
    out: list[BuilderRule] = []
    for b in lists[0]:
        levels = [min((x.level for x in lst if x.id == b.id), default=-1) for lst in lists]
        if min(levels) >= 0 and not any(o.id == b.id for o in out):
            merged = replace(b, level=min(levels))
            if any(x.binding_json() != b.binding_json() for lst in lists for x in lst if x.id == b.id):
                # Org layers disagree on how the signature must prove this builder; no one binding is
                # at least as strict as each, so none is kept and the builder grants no level.
                merged = replace(merged, signer_workflow=(), runner_environment=None,
                                             signer_issuer=None, signer_key=())
            out.append(merged)
    return out


def _builders(layers: Sequence[PolicyLayer], notes: list[str], org_fixed: bool) -> list[BuilderRule]:
    """Under an org that fixes anchors: the org's map (the shipped one when it is silent), intersected
    by id with every other layer's map at the lowest level any grants."""
    if not org_fixed:
        return _anchor(layers, "trusted_builders", notes, org_fixed)

    org = [layer for layer in layers if layer.source == "org" and layer.trusted_builders is not None]
    out = _common_builders(org) if org else list(builtin_builders())
    shipped = [(b.id, b.level) for b in builtin_builders()]
    for layer in layers:
        if layer.trusted_builders is None or any(layer is o for o in org):
            continue
        mine = layer.trusted_builders
        if layer.source != "org" and [(b.id, b.level) for b in mine] == shipped:
            continue  # the shipped map unchanged says nothing beyond the default
        extra = [b.id for b in mine if not any(o.id == b.id for o in out)]
        if extra:
            notes.append(
                f"{layer.source} policy's trusted builders {extra} ignored: the org policy fixes "
                "the trust anchors and does not trust them"
            )
        out = [
            replace(o, level=min(o.level, *(b.level for b in mine if b.id == o.id)))
            for o in out if any(b.id == o.id for b in mine)
        ]
    return out


def compose(layers: Sequence[PolicyLayer]) -> Policy:
    """Combine layers (org first) into one ``Policy`` that is at least as strict as each layer."""
    order = {"org": 0, "cli": 1, "local": 2, "default": 3}
    layers = sorted(layers, key=lambda layer: order[layer.source])
    notes: list[str] = []
    has_org = any(layer.source == "org" for layer in layers)
    org_anchors = org_anchor_lists(layers)
    org_fixed = bool(org_anchors)
    mode = _composed_mode(layers)
    req = _composed_requirements(layers)
    gates = _composed_gates(layers)
    defaults = _composed_defaults(layers)
    rules: list[CommandRule] = [r for layer in layers for r in layer.rules]
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
        signers=_anchor(layers, "signers", notes, org_fixed),
        public_keys=_anchor(layers, "public_keys", notes, org_fixed),
        trusted_roots=_roots(layers, notes, org_fixed),
        trusted_builders=_builders(layers, notes, org_fixed),
        sources=_anchor(layers, "sources", notes, org_fixed),
        registries=_anchor(layers, "registries", notes, org_fixed),
        org_anchors=org_anchors,
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


def _composed_defaults(layers: Sequence[PolicyLayer]) -> Defaults:
    """``noMatch`` deny if any layer says so; verified read-only allowed only when stated and no layer
    refuses it, at the highest minimum level stated."""
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




def load_policy(
    path: str | os.PathLike[str],
    *,
    org: str | os.PathLike[str] | None = None,
    cli: PolicyLayer | None = None,
    managed: bool = False,
) -> Policy:
    """Load a local policy, optionally under an org (managed) policy and CLI flags; compose them.

    ``managed=True`` also composes the machine's managed policy as ``admit`` does (the standard
    org-policy path when it exists, and ``ATIP_TRUST_ORG_POLICY``). Every org file is refused when
    group/other-writable or owned by neither root nor the current user.
    """
    layers = [load_layer(path, source="local")]
    if managed:
        layers.extend(org_layers())
    if org is not None:
        layers.append(load_layer(org, source="org"))
    if cli is not None:
        layers.append(cli)
    return compose(layers)


__all__ = ["cli_layer", "compose"]
