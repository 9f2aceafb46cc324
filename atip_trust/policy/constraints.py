"""What verification needs from a policy, as ``evaluate.Constraints`` (principle 1).

The policy is the only source of trust anchors; this is the one place that hands them to the verifier.

Roots are chosen by digest and returned deferred (signature/trustroot.py: parsed and checked when
first used); public keys are read only when a policy or a flag names them, and cryptography with them
(_base/lazy.py). A warm admission reuses its trust report without either.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from atip_trust._base.lazy import lazy_import
from atip_trust.errors import PolicyError, TrustRootError, UsageError
from atip_trust.evaluation.inputs import Constraints, SignerSet
from atip_trust.policy.model import Policy, PublicKeyRule
from atip_trust.signature.identity import IdentityRule
from atip_trust.signature.trustroot import TrustRoot

if TYPE_CHECKING:
    import pathlib
    from datetime import datetime
    from pathlib import Path

    from atip_trust.provenance import slsa
    from atip_trust.provenance.slsa import BuilderMap
    from atip_trust.signature import keys
    from atip_trust.state import tufroot
else:
    pathlib = lazy_import("pathlib")  # paths are text on the warm path
    slsa = lazy_import("atip_trust.provenance.slsa")  # only a policy that states sources or builders needs it
    keys = lazy_import("atip_trust.signature.keys")  # only for a policy's signer keys
    tufroot = lazy_import("atip_trust.state.tufroot")  # the TUF-refreshed roots (trust-root update)


def builder_map(policy: Policy) -> BuilderMap | None:
    """The policy's trusted builders as a ``provenance.BuilderMap``; None when policy states none."""
    if not any(layer.trusted_builders is not None for layer in policy.layers):
        return None

    return slsa.BuilderMap.from_json(
        {"builders": [{"id": b.id, "level": b.level, "name": b.name or "", "source": b.source or "",
                       **b.binding_json()}
                      for b in policy.trusted_builders]},
        origin="policy:",
    )


def instance_root(instance: str) -> TrustRoot:
    """The public-good (or staging) root: the one the last ``trust-root update`` verified over TUF for
    that instance's repository, verified again from the TUF root shipped with the package (the store is
    the user's cache, state/tufroot.py); else (no store, or one that does not verify) the one the
    installed sigstore package embeds. The bytes verified are the bytes returned."""
    verified = tufroot.cached(tufroot.INSTANCE_URLS[instance])
    if verified is not None and verified.raw is not None:
        return TrustRoot.from_bytes(verified.raw, name=verified.path, deferred=True)
    return TrustRoot.embedded(instance, deferred=True)


def _root_of(entry: str) -> TrustRoot:
    """One ``trust.trustedRoots`` entry, read: ``production``/``staging`` are the Sigstore instances."""
    if entry in ("production", "staging"):
        return instance_root(entry)
    return TrustRoot.from_file(entry, deferred=True)


def choose_trusted_root(
    policy: Policy | None, cli_path: str | None, cli_staging: bool, *, deferred: bool = False
) -> TrustRoot:
    """The trusted root to verify with, from ``--trusted-root`` / ``--staging`` and the policy.
    Roots are compared by digest alone; the chosen one is parsed and checked before it is returned,
    or, with ``deferred``, when first used (``TrustRoot.check``; ``evaluate`` does it first).

    principle 1: the policy is the only source of trust anchors, and a trusted root is the
    anchor every keyless signer rule stands on (whoever holds a root can mint a certificate for any
    identity). So when the policy pins roots (a layer states ``trust.trustedRoots``, or the org fixes
    the anchor set: then silence means the embedded public-good root, compose.py), a flag may only
    choose one of the pinned roots (same bytes: same sha256 digest, whatever the path); any other root
    is refused (``UsageError``, exit 2) naming both. Without a pin the flags choose, as cosign's do:
    ``--trusted-root`` file, else ``--staging``, else the embedded public-good root.
    """
    if cli_staging and cli_path:
        raise UsageError("give staging (--staging) or trusted_root (--trusted-root), not both")
    flag: TrustRoot | None = None
    if cli_path:
        flag = TrustRoot.from_file(cli_path, deferred=True)
    elif cli_staging:
        flag = instance_root("staging")
    chosen = _choose(policy, flag, cli_path).with_tlog_requirement(tlog_requirement(policy))
    limit = root_max_age(policy)
    if limit is not None:
        check_root_age(chosen, limit)
    return chosen if deferred else chosen.check()


_UNITS = {"d": 86400, "h": 3600, "m": 60}


def root_max_age(policy: Policy | None) -> tuple[int, str] | None:
    """``trust.rootMaxAge`` (``"30d"``, ``"12h"``, ``"90m"``; schema-checked) as (seconds, as written);
    across layers the shortest wins."""
    if policy is None:
        return None
    stated = [v for layer in policy.layers
              if isinstance(v := (layer.document.get("trust") or {}).get("rootMaxAge"), str)]
    limits = [(int(v[:-1]) * _UNITS[v[-1]], v) for v in stated if v[:-1].isdigit() and v[-1:] in _UNITS]
    return min(limits) if limits else None


def root_since(root: TrustRoot) -> tuple[datetime | None, str]:
    """Since when ``root`` is known to be current, and how that is known: when a TUF update verified it,
    else (embedded, a file) the newest ``validFor.start`` in it; (None, …) when neither tells."""
    when = None if root.embedded_root else tufroot.verified_at(root.label)
    if when is not None:
        return when, "verified by a TUF update at"
    return root.newest_start, "its newest key or CA starts at"


def check_root_age(root: TrustRoot, limit: tuple[int, str]) -> None:
    """Refuse (``TrustRootError``, exit 2) a root older than ``limit``: its age is the time since a TUF
    update verified it, or for any other root (embedded, a file) since the newest ``validFor.start`` in
    it (``TrustRoot.newest_start``: it cannot be younger than that). A root whose age cannot be told is
    refused too."""
    seconds, text = limit
    when, how = root_since(root)
    if when is None:
        raise TrustRootError(f"trusted root {root.name}: its age cannot be told (no TUF update, no validFor "
                             f"start) and policy trust.rootMaxAge is {text}")
    age = time.time() - when.timestamp()  # epoch seconds: no datetime arithmetic on the warm path
    if age > seconds:
        raise TrustRootError(
            f"trusted root {root.name} is {int(age // 86400)} days {int(age % 86400 // 3600)} hours old ({how} "
            f"{when.isoformat()}), over policy trust.rootMaxAge {text}; refresh it with `atip-trust "
            "trust-root update` (or --root-from DIR on a machine without network)")


def tlog_requirement(policy: Policy | None) -> bool | None:
    """``trust.requireTransparencyLog`` as the anchor set composed it (policy/anchors.py): None when no
    layer states it; a local ``false`` never lifts what the org states or its pinned roots imply."""
    return None if policy is None else policy.tlog_required


def _choose(policy: Policy | None, flag: TrustRoot | None, cli_path: str | None) -> TrustRoot:
    if policy is None or not policy.trusted_roots_pinned:
        return flag if flag is not None else instance_root("production")
    pinned = policy.trusted_roots or ["production"]
    if flag is None:
        return _root_of(pinned[0])
    # The flag's file, when the policy pins that very path, is read once: the bytes compared are then
    # the bytes verified with (two reads of one path could also see two different files).
    roots = [flag if cli_path is not None and entry == cli_path else _root_of(entry) for entry in pinned]
    for root in roots:
        if root.digest == flag.digest:
            return flag
    given = f"trusted_root (--trusted-root) {cli_path}" if cli_path else "staging (--staging)"
    raise UsageError(
        f"{given} ({flag.digest}) is not a trusted root the policy pins: trust.trustedRoots expected "
        f"one of {[f'{e} ({r.digest})' for e, r in zip(pinned, roots)]}, actual {flag.name} "
        f"({flag.digest}); drop the flag or give the same root"
        + (f" (the org policy fixes the trust anchors: {list(policy.org_anchors)})"
           if policy.org_fixes_anchors else "")
    )


def _key_digest_of(path: Path) -> str:
    return str(keys.key_digest(keys.load_public_key(path)))


def _listed_digests(rules: tuple[PublicKeyRule, ...] | list[PublicKeyRule]) -> set[str]:
    """The key digests one list of ``trust.publicKeys`` names: digest entries, and the digest of every
    PEM file it names (a path entry that also states a digest must hold exactly that key)."""
    out: set[str] = set()
    for k in rules:
        if k.path is not None:
            actual = _key_digest_of(pathlib.Path(k.path))
            if k.digest is not None and k.digest != actual:
                raise PolicyError(
                    f"public key {k.name or k.path} does not have the digest the policy pins: "
                    f"expected {k.digest}, actual {actual}",
                    path=k.path,
                )
            out.add(actual)
        elif k.digest is not None:
            out.add(k.digest)
    return out


def trusted_keys(policy: Policy, given: tuple[Path, ...]) -> tuple[Path, ...]:
    """The public keys verification may use: the policy's PEM files plus the ``--key`` files it lists.

    principle 1: the policy is the only source of trust anchors. When any layer states
    ``trust.publicKeys``, a key given on the command line counts only if its digest (sha256 of the DER
    SubjectPublicKeyInfo, the key id Rekor and cosign use; ``keys.key_digest``) is listed in *every*
    layer that states keys (a local list narrows the org's, never widens it); otherwise it is refused
    (exit 2) with the expected and actual digests. Without ``publicKeys`` in policy, ``--key`` is the
    caller's anchor, as with cosign.
    """
    declared = [layer for layer in policy.layers if layer.public_keys is not None]
    if policy.org_silent_on("publicKeys"):
        # The org fixes the trust anchors and lists no key: neither a local list nor --key adds one
        # (compose.py). Its own list being absent, nothing can be on it.
        if given:
            raise UsageError(
                f"keys (--key) {given[0]} is not a trust anchor: the org policy states the trust anchors "
                f"({', '.join(policy.org_anchors)}) and no trust.publicKeys, expected no key, actual "
                f"{_key_digest_of(given[0])}"
            )
        return ()
    if not declared:
        return tuple(given)
    allowed_per_layer = [(layer.source, _listed_digests(layer.public_keys or ())) for layer in declared]
    for key_path in given:
        actual = _key_digest_of(key_path)
        for source, allowed in allowed_per_layer:
            if actual not in allowed:
                raise UsageError(
                    f"keys (--key) {key_path} is not a trust anchor: the {source} policy's trust.publicKeys "
                    f"expected one of {sorted(allowed) or 'no key (empty list)'}, actual {actual}"
                )
    own = tuple(pathlib.Path(k.path) for k in policy.public_keys if k.path)
    out: list[Path] = []
    for k in own + tuple(given):
        if k not in out:
            out.append(k)
    return tuple(out)


def constraints_from_policy(policy: Policy, base: Constraints | None = None) -> Constraints:
    """Merge policy anchors into ``evaluate.Constraints`` (flags in ``base`` are kept and tightened).

    Signers: the policy's when it states any list (even empty: nobody), else the flags'. When both
    state signers, a keyless signer must match BOTH: one of the policy's rules (``signers``) and one of
    the flags' rules with their claims (``also_signers``); flags tighten, never replace (docs/decisions.md,
    "Anchors come from policy"). Keys: the policy's PEM files, and ``--key`` files only when policy lists their
    digest (``trusted_keys``). Requirements: the stricter.
    """

    c = base if base is not None else Constraints()
    signers = c.signers
    also = tuple(c.also_signers)
    if policy.signers_declared:
        signers = tuple(IdentityRule.coerce(s) for s in policy.signers)
        if c.signers:
            also += (SignerSet("flags", tuple(c.signers)),)
    key_paths = trusted_keys(policy, tuple(c.keys))
    req = policy.requirements
    min_slsa = c.min_slsa_level
    if req.min_slsa_level is not None:
        min_slsa = max(min_slsa or 0, req.min_slsa_level)
    # trust.sources: every allowed (repository, refs) pair reaches the provenance check; flags such as
    # --source-uri stay as given and must hold too.
    sources = c.sources
    if policy.sources_declared:
        sources = tuple(slsa.AllowedSource(s.repository, s.refs) for s in policy.sources)
    builders = builder_map(policy)
    # Every field named (faster than a replace on the warm path); tests/policy/test_policy_constraints.py
    # checks that none is left out.
    return Constraints(
        signers=signers,
        also_signers=also,
        keys=key_paths,
        builder_id=c.builder_id,
        source_uri=c.source_uri,
        source_tag=c.source_tag,
        source_branch=c.source_branch,
        predicate_type=c.predicate_type or req.predicate_type,
        min_slsa_level=min_slsa,
        require_provenance=c.require_provenance or req.provenance_required,
        sources=sources,
        builders=builders if builders is not None else c.builders,
    )


__all__ = ["constraints_from_policy", "root_since"]
