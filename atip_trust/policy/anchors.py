"""The one anchor set (issue 33 item 1): who may vouch, computed once per composed policy from its layers.

Every route to VERIFIED reads only this set, through the ``Policy`` fields it fills: a bundle and a key
(``signers``, ``public_keys``, ``trusted_roots``, ``tlog_required``: policy/constraints.py), a VSA
(``verifiers``: policy/verifiers.py), a shim and a registry lookup (``registries``), an override and
metadata (``signers``, admission/metadata_trust.py), provenance (``trusted_builders``). The policy
signers (``<org policy>.signers.json``, policy/signed.py) are placed beside each org file by the machine
and verify that file before it is composed; no layer names them. docs/trust-roots.md, "The anchor set",
is the table of all of them.

One rule: if any org layer states or implies an anchor kind, local layers and flags can only narrow it.

* The kinds that fix the set are ``trust.signers``, ``publicKeys``, ``trustedRoots``, ``trustedBuilders``,
  ``registries`` and ``verifiers``. An org layer that states any of them fixes all of them: a kind it is
  silent on has its default (``trustedRoots``: the public-good root; ``trustedBuilders``: the shipped
  map; the others: nobody). That default counts as stated.
* Several org layers (the standard file, ``ATIP_TRUST_ORG_POLICY``, ``--org-policy``) compose with each
  other by intersection only: an anchor counts when every org layer that fixes the set grants it
  (entries compared as written: the same key file or digest, the same root, the same verifier), so a
  second org file cannot add a verifier, key, signer, root or registry the first does not grant.
* A local or CLI layer then narrows (roots, builders: intersection; signers, keys: every layer that
  states a list must name the signer or key, decide.py step 2 and constraints.trusted_keys) or is
  ignored with a note (registries, verifiers: a local list could only add).
* ``trust.requireTransparencyLog``: an org word on it stands; an org layer that fixes the roots and is
  silent on it implies it (a pinned root that lists logs requires an entry), so another layer's
  ``false`` (local, or a second org file) is then ignored with a note, and a ``true`` anywhere
  narrows. Without an org word, ``true`` in any layer wins.
* Without an org layer that fixes the set, the local lists stand (their union), as before.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from atip_trust._base.record import Record, replace
from atip_trust.policy.load import builtin_builders
from atip_trust.policy.model import BuilderRule, PolicyLayer, VerifierEntry

if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T")

#: The anchor kinds an org layer fixes as a whole (attribute on ``PolicyLayer`` or None, document name).
ANCHOR_KINDS: tuple[str, ...] = ("signers", "publicKeys", "trustedRoots", "trustedBuilders", "registries",
                                 "verifiers")
_ATTR = {"signers": "signers", "publicKeys": "public_keys", "trustedRoots": "trusted_roots",
         "trustedBuilders": "trusted_builders", "registries": "registries"}


def trust_of(layer: PolicyLayer) -> dict[str, Any]:
    """The layer's ``trust`` section as written (schema-checked)."""
    trust = layer.document.get("trust")
    return trust if isinstance(trust, dict) else {}


def states(layer: PolicyLayer, kind: str) -> bool:
    return kind in trust_of(layer)


class AnchorSet(Record):
    """The anchors every route reads (module docstring); each list already composed."""

    signers: list[Any]
    public_keys: list[Any]
    trusted_roots: list[str]
    trusted_builders: list[BuilderRule]
    registries: list[Any]
    verifiers: tuple[VerifierEntry, ...]
    #: None: no layer states it (the chosen root decides, TrustRoot.requires_tlog).
    tlog_required: bool | None
    #: Whether an org layer fixes the set.
    org_fixed: bool
    #: The kinds every fixing org layer states itself (the others have their default).
    org_kinds: tuple[str, ...]


def _org_fixing(layers: Sequence[PolicyLayer]) -> list[PolicyLayer]:
    return [layer for layer in layers if layer.source == "org" and any(states(layer, k) for k in ANCHOR_KINDS)]


def verifier_entries(layer: PolicyLayer) -> tuple[VerifierEntry, ...]:
    """A layer's ``trust.verifiers``, each with the folder its key path is relative to."""
    base = os.path.dirname(layer.path) if layer.path else os.getcwd()
    raw = trust_of(layer).get("verifiers")
    out = []
    for i, v in enumerate(raw if isinstance(raw, list) else ()):
        key = v.get("publicKey")
        out.append(VerifierEntry(source=layer.source, index=i, entry=v,
                                 key_path=os.path.realpath(os.path.join(base, key)) if key else None))
    return tuple(out)


def _intersect(lists: Sequence[Sequence[T]], same: Callable[[T, T], bool]) -> list[T]:
    """The items of the first list that every other list holds too (by ``same``)."""
    first, *rest = lists
    return [x for x in first if all(any(same(x, y) for y in other) for other in rest)]


def _org_value(fixing: Sequence[PolicyLayer], kind: str, notes: list[str]) -> list[Any]:
    """One kind's value over the fixing org layers: each layer's own list (its default when silent),
    intersected; what one layer grants and another does not is dropped with a note."""
    if kind == "trustedBuilders":
        lists: list[list[Any]] = [list(x.trusted_builders) if x.trusted_builders is not None
                                  else list(builtin_builders()) for x in fixing]
        return _common_builders(lists)
    if kind == "verifiers":
        lists = [list(verifier_entries(x)) for x in fixing]
        same: Callable[[Any, Any], bool] = lambda a, b: a.same_as(b)  # noqa: E731
    elif kind == "trustedRoots":
        lists = [list(x.trusted_roots) if x.trusted_roots is not None else ["production"] for x in fixing]
        same = lambda a, b: a == b  # noqa: E731
    elif kind == "publicKeys":  # the same key file or digest (a name is a label)
        lists = [list(x.public_keys or ()) for x in fixing]
        same = lambda a, b: (a.path, a.digest) == (b.path, b.digest)  # noqa: E731
    else:
        lists = [list(getattr(x, _ATTR[kind]) or ()) for x in fixing]
        same = lambda a, b: a == b  # noqa: E731
    out = _intersect(lists, same)
    if len(fixing) > 1 and any(len(lst) > len(out) for lst in lists):
        notes.append(f"org policies compose by intersection: trust.{kind} keeps only what every org "
                     f"policy that states trust anchors grants ({len(out)} of "
                     f"{max(len(lst) for lst in lists)}); a second org file cannot add an anchor")
    return out


def _common_builders(lists: Sequence[Sequence[BuilderRule]]) -> list[BuilderRule]:
    """Builders every list names (by id pattern), each at the lowest level any of them grants; one list
    as it is."""
    if len(lists) == 1:
        return list(lists[0])
    out: list[BuilderRule] = []
    for b in lists[0]:
        levels = [min((x.level for x in lst if x.id == b.id), default=-1) for lst in lists]
        if min(levels) >= 0 and not any(o.id == b.id for o in out):
            merged = replace(b, level=min(levels))
            if any(x.binding_json() != b.binding_json() for lst in lists for x in lst if x.id == b.id):
                # The lists disagree on how the signature must prove this builder; no one binding is
                # at least as strict as each, so none is kept and the builder grants no level.
                merged = replace(merged, signer_workflow=(), runner_environment=None,
                                 signer_issuer=None, signer_key=())
            out.append(merged)
    return out


def _local_union(layers: Sequence[PolicyLayer], kind: str) -> list[Any]:
    if kind == "verifiers":
        return [v for layer in layers for v in verifier_entries(layer)]
    out: list[Any] = []
    for layer in layers:
        val = getattr(layer, _ATTR[kind])
        if val is not None:
            out.extend(val)
    return out


def _narrow_roots(out: list[str], layers: Sequence[PolicyLayer], notes: list[str]) -> list[str]:
    for layer in layers:
        if layer.trusted_roots is None:
            continue
        narrowed = [r for r in out if r in layer.trusted_roots]
        if narrowed:
            out = narrowed
        else:
            notes.append(
                f"{layer.source} policy's trust.trustedRoots {list(layer.trusted_roots)} ignored: "
                f"the org policy fixes the trust anchors and trusts only {out} (a root it does not "
                "list could mint certificates for its signer identities)")
    return out


def _narrow_builders(out: list[BuilderRule], layers: Sequence[PolicyLayer], notes: list[str]) -> list[BuilderRule]:
    shipped = [(b.id, b.level) for b in builtin_builders()]
    for layer in layers:
        mine = layer.trusted_builders
        if mine is None or [(b.id, b.level) for b in mine] == shipped:
            continue  # the shipped map unchanged says nothing beyond the default
        extra = [b.id for b in mine if not any(o.id == b.id for o in out)]
        if extra:
            notes.append(f"{layer.source} policy's trusted builders {extra} ignored: the org policy fixes "
                         "the trust anchors and does not trust them")
        out = [replace(o, level=min(o.level, *(b.level for b in mine if b.id == o.id)))
               for o in out if any(b.id == o.id for b in mine)]
    return out


def _note_ignored(layers: Sequence[PolicyLayer], kind: str, org_states: bool, notes: list[str]) -> None:
    for layer in layers:
        if not states(layer, kind):
            continue
        if org_states and kind in ("signers", "publicKeys"):
            notes.append(f"{layer.source} policy's trust.{kind} adds nothing: the org policy states its "
                         "own, and the local list can only narrow it (both must hold)")
        else:
            notes.append(f"{layer.source} policy's trust.{kind} ignored: the org policy "
                         + ("states its own" if org_states else "states trust anchors and none of this kind")
                         + ", and a local list could only widen it")


def _tlog_stated(layer: PolicyLayer) -> bool | None:
    v = trust_of(layer).get("requireTransparencyLog")
    return v if isinstance(v, bool) else None


def tlog_required(layers: Sequence[PolicyLayer], fixing: Sequence[PolicyLayer], notes: list[str]) -> bool | None:
    """``trust.requireTransparencyLog`` composed (module docstring). Among org layers ``true`` wins, and
    ``false`` stands only when no org layer that fixes the roots is silent (its roots imply the
    requirement); a local ``false`` never lifts an org's word or implication, a local ``true`` narrows.
    None: nobody states it (or an org's roots imply it) and the chosen root decides."""
    org = [(layer, v) for layer in layers if layer.source == "org" and (v := _tlog_stated(layer)) is not None]
    implied = any(_tlog_stated(layer) is None for layer in fixing)
    out: bool | None = None
    if any(v for _, v in org):
        out = True
    elif org and not implied:
        out = False
    elif org:
        notes.append("an org policy's trust.requireTransparencyLog false ignored: another org policy fixes the "
                     "trusted roots, and a root that lists logs requires an entry (org policies intersect)")
    org_word = bool(org) or bool(fixing)
    for layer in layers:
        v = _tlog_stated(layer)
        if layer.source == "org" or v is None:
            continue
        if v:
            out = True
        elif org_word:
            notes.append(f"{layer.source} policy's trust.requireTransparencyLog false ignored: the org policy "
                         + ("requires a log entry" if out else "states it or fixes the trusted roots (a root "
                            "that lists logs requires an entry)") + "; a local layer may only narrow it")
        elif out is None:
            out = False
    return out


def anchor_set(layers: Sequence[PolicyLayer], notes: list[str]) -> AnchorSet:
    """The anchor set of ``layers`` (org first), with what composition dropped in ``notes``."""
    fixing = _org_fixing(layers)
    others = [layer for layer in layers if layer.source != "org"]
    values: dict[str, list[Any]] = {}
    if not fixing:
        for kind in ANCHOR_KINDS:
            values[kind] = _local_union(layers, kind)
    else:
        for kind in ANCHOR_KINDS:
            values[kind] = _org_value(fixing, kind, notes)
        values["trustedRoots"] = _narrow_roots(values["trustedRoots"], others, notes)
        values["trustedBuilders"] = _narrow_builders(values["trustedBuilders"], others, notes)
        for kind in ("signers", "publicKeys", "registries", "verifiers"):
            _note_ignored(others, kind, all(states(x, kind) for x in fixing), notes)
    org_kinds = tuple(k for k in ANCHOR_KINDS if fixing and all(states(x, k) for x in fixing))
    return AnchorSet(
        signers=values["signers"], public_keys=values["publicKeys"], trusted_roots=values["trustedRoots"],
        trusted_builders=values["trustedBuilders"], registries=values["registries"],
        verifiers=tuple(values["verifiers"]), tlog_required=tlog_required(layers, fixing, notes),
        org_fixed=bool(fixing), org_kinds=org_kinds)


__all__ = ["ANCHOR_KINDS", "AnchorSet", "anchor_set", "states", "tlog_required", "trust_of", "verifier_entries"]
