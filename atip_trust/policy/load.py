"""Loading a policy: capped read, strict JSON, JSON Schema (draft 2020-12), then semantic checks.

Every failure is a ``PolicyError`` naming the JSON path (exit 2). An org (managed) policy file that group
or others can write, or that is owned by neither root nor the current user, is refused: whoever can write
it decides what runs (Gemini CLI ignores such a file silently; we fail closed and say why).

A document that passed the schema once is not validated again: its digest (with the schema's bytes
and atip-trust's version) is remembered in the verdict cache (state/verdict_cache.py: the same owner, mode and
integrity rules), so a warm admission neither validates nor imports jsonschema. A document that
fails is never remembered; the semantic checks that follow the schema run on every load.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from atip_trust._base import jsonio
from atip_trust._base.files import exists, owner_problem, path_name, read_capped
from atip_trust._base.jsonio import json_path, parse_json
from atip_trust._base.lazy import lazy_import
from atip_trust._base.limits import LIMITS
from atip_trust._base.record import Record
from atip_trust._base.shipped import shipped_path
from atip_trust._version import __version__
from atip_trust.errors import MalformedInputError, PolicyError
from atip_trust.facts.report import TrustLevel
from atip_trust.policy.model import (
    BuilderRule,
    CommandRule,
    Defaults,
    Gate,
    PolicyLayer,
    PublicKeyRule,
    RegistryRule,
    Requirements,
    SourceRule,
    ToolRule,
    Waiver,
)
from atip_trust.policy.rules import (
    compile_rule,
    denied_command_rule,
    qualifier_refusal,
    signer_from_json,
)
from atip_trust.state.verdict_cache import VerdictCache, cache_key

if TYPE_CHECKING:
    import datetime
    from typing import Any

    from atip_trust._base import schema
    from atip_trust.policy import serials, signed
    from atip_trust.policy.model import RuleBehavior, RuleSource, SignerRule
    from atip_trust.provenance import slsa
else:
    datetime = lazy_import("datetime")  # only for a policy with waivers (their expiry)
    # The schema validator: a policy found valid before (the verdict cache) is not validated again.
    schema = lazy_import("atip_trust._base.schema")
    serials = lazy_import("atip_trust.policy.serials")  # only for an org policy without a signers file
    signed = lazy_import("atip_trust.policy.signed")  # only where a signers file requires a signature
    slsa = lazy_import("atip_trust.provenance.slsa")  # only a policy that states sources or builders needs it

_SCHEMA = "policy.schema.json"


def _validator() -> schema.Validator:
    return schema.validator(_SCHEMA)


@functools.cache
def _schema_sha256() -> str:
    """The shipped schema's bytes, by digest: a changed schema (a checkout between versions) validates
    every policy again."""
    with open(shipped_path("schema", _SCHEMA), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


#: An extra org (managed) policy file to compose, for tests and staged roll-outs. Safe because org layers
#: only tighten one another (compose.py); it is added to the standard file, never instead of it.
ORG_POLICY_ENV = "ATIP_TRUST_ORG_POLICY"


def standard_org_policy_path() -> str | None:
    """Where an administrator puts the managed policy that ``admit`` and ``verify --policy`` apply.

    Like Claude Code's managed settings (``/etc/claude-code/managed-settings.json``,
    ``/Library/Application Support/ClaudeCode/managed-settings.json``) and Gemini CLI's
    ``/etc/gemini-cli/settings.json``: a root-owned path users cannot write. None on other platforms.
    A module-level function so that tests can replace it in-process instead of writing to /etc.
    """
    if sys.platform == "darwin":
        return "/Library/Application Support/atip-trust/org-policy.json"
    if sys.platform.startswith("linux"):
        return "/etc/atip-trust/org-policy.json"
    return None


def _present(path: str | os.PathLike[str]) -> bool:
    """Absent only when the path (or a directory on it) does not exist; anything we cannot stat
    counts as present, so that the loader refuses it loudly instead of it being skipped silently."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError:
        return True
    return True


def org_policy_paths(extra: Sequence[str | os.PathLike[str]] = ()) -> list[str]:
    """The org (managed) policies to compose: the standard file when it exists, then the file named
    by ``ATIP_TRUST_ORG_POLICY``, then ``extra`` (``--org-policy``). A named file that is missing is an
    error (exit 2), never skipped."""
    out: list[str] = []
    std = standard_org_policy_path()
    if std is not None and _present(std):
        out.append(os.fspath(std))
    elif std is not None:
        # Once signed, always signed (policy/serials.py): a standard path whose signed policy this
        # machine accepted does not turn into "no org policy" by the file going away.
        serials.require_unsigned_allowed(os.fspath(std), os.fspath(std))
    env = os.environ.get(ORG_POLICY_ENV, "")
    if env:
        out.append(env)
    out.extend(os.fspath(e) for e in extra)
    return out


def org_layers(extra: Sequence[str | os.PathLike[str]] = (), *, cache: bool = True) -> list[PolicyLayer]:
    """Every org layer (``org_policy_paths``), each read with the ownership and mode checks."""
    return [load_layer(p, source="org", cache=cache) for p in org_policy_paths(extra)]


def default_policy_path() -> str:
    """The embedded default policy: the checkout's policies/default.json, else the packaged copy (as
    text: no pathlib on a warm admission, docs/caching.md)."""
    return shipped_path("policies", "default.json")


#: ``"trustedBuilders": {"include": "builtin:trusted-builders"}`` names the map shipped in
#: policies/trusted-builders.json, so that shipped and user policies need not repeat it.
BUILTIN_BUILDERS = "builtin:trusted-builders"


@lru_cache(maxsize=1)
def builtin_builders() -> tuple[BuilderRule, ...]:
    """The shipped trusted-builder map as policy rules (levels, names and sources as published)."""

    path = shipped_path("policies", "trusted-builders.json")
    bm = slsa.BuilderMap.load(path)
    return tuple(
        BuilderRule(id=e.pattern.text, level=e.level, name=e.name or None, source=e.source or None,
                    origin=BUILTIN_BUILDERS, **_binding_fields(e.binding.to_json()))
        for e in bm.entries
    )


def _binding_fields(b: Any) -> dict[str, Any]:
    """``BuilderRule`` keyword arguments from a builder entry's signer binding (schema-checked JSON)."""

    def many(v: Any) -> tuple[str, ...]:
        return () if v is None else (v,) if isinstance(v, str) else tuple(v)

    return {"signer_workflow": many(b.get("signerWorkflow")), "runner_environment": b.get("runnerEnvironment"),
            "signer_issuer": b.get("signerIssuer"), "signer_key": many(b.get("signerKey"))}


def _builders_from_json(raw: Any) -> tuple[tuple[BuilderRule, ...], bool]:
    """(rules, whether the builtin map was included) from ``trust.trustedBuilders``.

    A list states the builders itself. ``{"include": "builtin:trusted-builders", "only": [ids],
    "add": [builders]}`` takes the shipped map, optionally narrowed to the ids in ``only`` (each must be
    in the map: a typo must not silently drop to "no level"), plus the builders in ``add``.
    """

    def own(items: Any, where: str) -> tuple[BuilderRule, ...]:
        for i, b in enumerate(items):
            slsa.SignerBinding.from_json(b, f"{where}[{i}]")  # glob and digest forms (PolicyError with path)
        return tuple(
            BuilderRule(id=b["id"], level=b["level"], name=b.get("name"), source=b.get("source"),
                        **_binding_fields(b))
            for b in items
        )

    if isinstance(raw, list):
        return own(raw, "$.trust.trustedBuilders"), False
    shipped = builtin_builders()
    chosen = shipped
    if "only" in raw:
        known = {b.id for b in shipped}
        for i, bid in enumerate(raw["only"]):
            if bid not in known:
                raise PolicyError(
                    f"builder {bid!r} is not in the {BUILTIN_BUILDERS} map; expected one of "
                    f"{sorted(known)}",
                    path=f"$.trust.trustedBuilders.only[{i}]",
                )
        wanted = set(raw["only"])
        chosen = tuple(b for b in shipped if b.id in wanted)
    return chosen + own(raw.get("add", ()), "$.trust.trustedBuilders.add"), True


def canonical_digest(doc: Any) -> str:
    """The policy digest: sha256 of the canonical JSON with non-ASCII text as raw UTF-8 (as it has
    always been computed, so that a published policy digest stays valid)."""
    return jsonio.canonical_digest(doc, ascii_only=False)


def _validated_key(doc: Any) -> str:
    return cache_key({"kind": "schema-valid", "schema": _SCHEMA, "schema_sha256": _schema_sha256(),
                      "atip_trust": __version__, "document": doc})


def _schema_error(doc: Any, cache: VerdictCache | None = None) -> PolicyError | None:
    key = _validated_key(doc) if cache is not None else None
    if cache is not None and key is not None and cache.validated(key):
        return None
    errors = _validator().errors(doc, what="policy")
    if not errors:
        if cache is not None and key is not None:
            cache.mark_validated(key)
        return None
    # The deepest error is the most precise; for anyOf/oneOf prefer the branch error that went deepest.
    def depth(e: Any) -> int:
        best = len(e.absolute_path)
        for sub in e.context or ():
            best = max(best, depth(sub))
        return best

    err = max(errors, key=lambda e: (depth(e), -len(str(e.message))))
    chosen = err
    if err.context:
        deeper = [s for s in err.context if len(s.absolute_path) == depth(err)]
        if deeper:
            chosen = min(deeper, key=lambda s: len(s.message))
    path = json_path(list(chosen.absolute_path))
    msg = chosen.message
    if chosen.validator == "additionalProperties":
        msg = f"unknown key: {msg}"
    if len(msg) > 300:
        msg = msg[:300] + "..."
    return PolicyError(f"policy does not match its schema: {msg}", path=path)


def _parse_expiry(text: str, where: str) -> datetime.datetime:
    try:
        when = datetime.datetime.fromisoformat(text)  # Python 3.11 accepts a trailing "Z"
    except ValueError as err:
        raise PolicyError(f"expiry {text!r} is not an ISO 8601 date or date-time", path=where) from err
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return when


def _refuse_qualified_deny_ask(doc: Any) -> None:
    """A qualifier on a deny or ask rule narrows it to trusted tools, so a *less* trusted binary would
    skip the denial or the question. The schema refuses it; this says why, at the qualifier's path,
    before the schema's generic "unknown key"."""
    perms = doc.get("permissions") if isinstance(doc, dict) else None
    if not isinstance(perms, dict):
        return
    for behavior in ("deny", "ask"):
        entries = perms.get(behavior)
        for i, raw in enumerate(entries if isinstance(entries, list) else ()):
            for key in ("minTrustLevel", "signer"):
                if isinstance(raw, dict) and key in raw:
                    raise PolicyError(qualifier_refusal(behavior),
                                      path=f"$.permissions.{behavior}[{i}].{key}")


class _TrustSection(Record):
    """The ``trust`` section of one document, compiled (None: the key is absent, so the layer says
    nothing about it)."""

    signers: tuple[SignerRule, ...] | None
    keys: tuple[PublicKeyRule, ...] | None
    roots: tuple[str, ...] | None
    builders: tuple[BuilderRule, ...] | None
    #: Whether the builder map includes the builtin one (its entries then enter the layer's digest).
    included: bool
    sources: tuple[SourceRule, ...] | None
    registries: tuple[RegistryRule, ...] | None


def layer_from_document(
    doc: Any, *, source: RuleSource, path: str | None = None, base_dir: str | os.PathLike[str] | None = None,
    cache: VerdictCache | None = None,
) -> PolicyLayer:
    """Schema-check one policy document and compile it into a ``PolicyLayer``. With ``cache``, a
    document found valid before is not validated again (module docstring)."""
    _refuse_qualified_deny_ask(doc)
    err = _schema_error(doc, cache)
    if err is not None:
        raise err
    assert_dict = doc if isinstance(doc, dict) else {}
    # Relative key and root paths are relative to the policy file's folder (os.path: no pathlib on a
    # warm admission, docs/caching.md; realpath is what Path.resolve() runs).
    base = os.fspath(base_dir) if base_dir is not None else os.getcwd()
    trust = _trust_section(assert_dict.get("trust", {}), base)
    requirements = _requirements(assert_dict.get("requirements", {}))
    tools = assert_dict.get("tools", {})
    deleg = assert_dict.get("delegation", {})
    rules = _command_rules(assert_dict.get("permissions", {}), tools, deleg, source)
    effect_restrictions = _effect_restrictions(deleg.get("effectRestrictions", {}))
    gates = _gates(assert_dict.get("capabilities", {}), source)
    defaults = _defaults(assert_dict.get("defaults", {}))
    waivers = _waivers(assert_dict.get("waivers", ()), source)
    return PolicyLayer(
        source=source,
        document=assert_dict,
        # An included builder map is part of what the policy says: its entries enter the digest.
        digest=canonical_digest(
            [assert_dict, {BUILTIN_BUILDERS: [[b.id, b.level, b.binding_json()] for b in builtin_builders()]}]
            if trust.included else assert_dict
        ),
        path=path,
        mode=assert_dict.get("mode"),
        signers=trust.signers,
        public_keys=trust.keys,
        trusted_roots=trust.roots,
        trusted_builders=trust.builders,
        sources=trust.sources,
        registries=trust.registries,
        requirements=requirements,
        tool_allow=_tool_rules(tools, "allow", source),
        tool_deny=_tool_rules(tools, "deny", source),
        delegation_tools=tuple(deleg["allowedTools"]) if "allowedTools" in deleg else None,
        effect_restrictions=effect_restrictions,
        rules=rules,
        gates=gates,
        defaults=defaults,
        waivers=waivers,
    )


def _trust_section(trust: Any, base: str) -> _TrustSection:
    """``trust``: signers, public keys and roots (paths relative to ``base``), builders, sources, registries."""
    signers = None
    if "signers" in trust:
        signers = tuple(
            signer_from_json(s, f"$.trust.signers[{i}]") for i, s in enumerate(trust["signers"])
        )
    for i, v in enumerate(trust.get("verifiers", ())):
        if "publicKey" not in v:  # a keyless verifier: its identity rule's regexps and claims, checked now
            signer_from_json(v, f"$.trust.verifiers[{i}]")
    keys = None
    if "publicKeys" in trust:
        keys = tuple(
            PublicKeyRule(
                path=os.path.realpath(os.path.join(base, k["path"])) if "path" in k else None,
                digest=k.get("digest"),
                name=k.get("name"),
            )
            for k in trust["publicKeys"]
        )
    roots = None
    if "trustedRoots" in trust:
        roots = tuple(
            r if isinstance(r, str) else os.path.realpath(os.path.join(base, r["path"]))
            for r in trust["trustedRoots"]
        )
    builders = None
    included = False
    if "trustedBuilders" in trust:
        builders, included = _builders_from_json(trust["trustedBuilders"])
    sources = None
    if "sources" in trust:
        sources = tuple(
            SourceRule(repository=s["repository"], refs=tuple(s.get("refs", ())))
            for s in trust["sources"]
        )
    registries = None
    if "registries" in trust:
        registries = tuple(
            RegistryRule(
                url=r["url"],
                signers=tuple(
                    signer_from_json(s, f"$.trust.registries[{i}].signers[{j}]")
                    for j, s in enumerate(r["signers"])
                ),
                priority=r.get("priority", 100),
                mode=r.get("mode", "fallthrough"),
                name=r.get("name"),
                token_env=r.get("tokenEnv"),
                max_cache_age_hours=r.get("maxCacheAgeHours", 168),
            )
            for i, r in enumerate(trust["registries"])
        )
    return _TrustSection(signers, keys, roots, builders, included, sources, registries)


def _requirements(req: Any) -> Requirements:
    return Requirements(
        min_trust_level=TrustLevel.parse(req["minTrustLevel"]) if "minTrustLevel" in req else None,
        min_slsa_level=req.get("minSlsaLevel"),
        provenance_required=bool(req.get("provenanceRequired", False)),
        predicate_type=req.get("predicateType"),
        metadata_sources=tuple(req["metadataSources"]) if "metadataSources" in req else None,
        signature_threshold=req.get("signatures", {}).get("threshold"),
    )


def _tool_rules(tools: Any, key: str, source: RuleSource) -> tuple[ToolRule, ...]:
    return tuple(
        ToolRule(
            name=t.get("name"),
            digest=t.get("digest"),
            source=source,
            text=json.dumps({k: v for k, v in t.items() if k != "comment"}, sort_keys=True),
        )
        for t in tools.get(key, ())
    )


def _command_rules(perms: Any, tools: Any, deleg: Any, source: RuleSource) -> tuple[CommandRule, ...]:
    """``permissions`` deny, ask, allow, then ``tools.deniedCommands`` and ``delegation.deniedCommands``."""
    rules: list[CommandRule] = []
    behaviors: tuple[RuleBehavior, ...] = ("deny", "ask", "allow")
    for behavior in behaviors:
        for i, raw in enumerate(perms.get(behavior, ())):
            rules.append(
                compile_rule(raw, behavior, source, where=f"$.permissions.{behavior}[{i}]")
            )
    for i, text in enumerate(tools.get("deniedCommands", ())):
        rules.append(denied_command_rule(text, source, f"$.tools.deniedCommands[{i}]"))
    for i, text in enumerate(deleg.get("deniedCommands", ())):
        rules.append(denied_command_rule(text, source, f"$.delegation.deniedCommands[{i}]"))
    return tuple(rules)


def _effect_restrictions(restrictions: Any) -> tuple[str, ...]:
    # RFC §10.2 names effects as in §3.6; map them onto the gating classes.
    restr_map = {
        "destructive": "destructive", "network": "network", "billable": "billable",
        "filesystemWrite": "filesystemWrite", "filesystemDelete": "filesystemDelete",
        "interactive": "interactive", "reversible": "nonReversible", "idempotent": "nonIdempotent",
        "subprocess": "subprocess",
    }
    return tuple(restr_map[k] for k in sorted(restrictions))


def _gates(capabilities: Any, source: RuleSource) -> dict[str, Gate]:
    return {
        cls: Gate(
            # ``always`` alone: no trust minimum (every level is at or above the lowest).
            min_trust_level=TrustLevel.parse(g["minTrustLevel"]) if "minTrustLevel" in g else TrustLevel.COMPROMISED,
            below=g.get("below", "ask"),
            source=source,
            always=g.get("always"),
        )
        for cls, g in capabilities.items()
    }


def _defaults(d: Any) -> Defaults:
    return Defaults(
        no_match=d.get("noMatch", "ask"),
        allow_verified_read_only=bool(d.get("allowVerifiedReadOnly", False)),
        read_only_min_trust_level=TrustLevel.parse(d.get("readOnlyMinTrustLevel", "VERIFIED")),
    )


def _waivers(waivers: Any, source: RuleSource) -> tuple[Waiver, ...]:
    return tuple(
        Waiver(
            digest=w.get("digest"),
            tool=w.get("tool"),
            reason=w["reason"],
            expires=_parse_expiry(w["expires"], f"$.waivers[{i}].expires"),
            source=source,
        )
        for i, w in enumerate(waivers)
    )


#: Compiled layers by (the file's bytes, source, path, folder): a process that loads the same policy again
#: (``atip-trust serve``, a runtime calling ``load_admission_policy`` per decision) reads and checks the
#: file each time — its bytes, owner, mode and signature are never remembered — and only skips
#: compiling bytes it has compiled before. ``layer_from_document`` reads nothing else.
_LAYERS: dict[tuple[bytes, str, str, str, Callable[[], tuple[BuilderRule, ...]]], PolicyLayer] = {}
_MAX_LAYERS = 16


def load_layer(path: str | os.PathLike[str], *, source: RuleSource = "local",
               cache: bool = True) -> PolicyLayer:
    """Read, parse, schema-check and compile one policy file. ``cache=False``: validate even a
    document found valid before, and remember nothing (``--no-cache``)."""
    name = os.fspath(path)
    if source == "org":
        # Read through one descriptor, refusing a link, an unsafe owner or mode (module docstring).
        data = read_capped(name, LIMITS.policy_bytes, what="org policy", follow_links=False,
                           owner_check=PolicyError)
        if exists(name + ".signers.json", what="org policy signers file", error=PolicyError):  # the machine requires it signed (policy/signed.py)
            signed.check_signed(name, data)
        else:  # signed before on this path: the signers file going missing is no way back to unsigned
            serials.require_unsigned_allowed(name, name + ".signers.json")
    else:
        data = read_capped(name, LIMITS.policy_bytes, what="policy")
    base_dir = os.path.dirname(os.path.realpath(name))
    # The shipped builder map enters a layer that includes it (its digest too): the function that reads
    # it is part of the key (calling it here would load the provenance model on every warm admission).
    key = (data, source, name, base_dir, builtin_builders)
    layer = _LAYERS.get(key) if cache else None  # the same bytes at the same place: the same layer
    if layer is None:
        layer = _compile_layer(data, source, name, base_dir, cache)
        if cache:
            if len(_LAYERS) >= _MAX_LAYERS:
                _LAYERS.clear()
            _LAYERS[key] = layer
    if source == "org":
        _check_anchor_files(layer, name)
    return layer


def _compile_layer(data: bytes, source: RuleSource, name: str, base_dir: str, cache: bool) -> PolicyLayer:
    try:
        doc = parse_json(data, what="policy", max_depth=LIMITS.json_depth)
    except MalformedInputError as err:
        raise PolicyError(f"{path_name(name)}: {err.message}", path=err.path) from err
    try:
        return layer_from_document(doc, source=source, path=name, base_dir=base_dir,
                                   cache=VerdictCache() if cache else None)
    except PolicyError as err:
        err.message = f"{path_name(name)}: {err.message}"
        raise


def _check_anchor_files(layer: PolicyLayer, name: str) -> None:
    """The org policy's anchor files (``trust.publicKeys``, ``trust.trustedRoots``, ``trust.verifiers``
    keys, by path) get the org policy's own ownership and mode checks: whoever can rewrite one names their
    own key or CA, and the checked, even signed, policy would vouch for whatever they sign. A file that
    does not exist is left to its reader (an error there)."""
    trust = layer.document.get("trust") or {}
    base = os.path.dirname(os.path.realpath(name))
    files = [("public key", k.path) for k in layer.public_keys or () if k.path]
    files += [("trusted root", os.path.realpath(os.path.join(base, r["path"])))
              for r in trust.get("trustedRoots", ()) if isinstance(r, dict) and isinstance(r.get("path"), str)]
    files += [("VSA verifier's public key", os.path.realpath(os.path.join(base, v["publicKey"])))
              for v in trust.get("verifiers", ()) if isinstance(v, dict) and isinstance(v.get("publicKey"), str)]
    for what, path in files:
        try:
            st = os.stat(path)
        except OSError:
            continue
        problem = owner_problem(st)
        if problem is not None:
            raise PolicyError(f"{path_name(name)}: the org policy's {what} {path} refused: {problem}", path=path)


__all__ = [
    "BUILTIN_BUILDERS",
    "ORG_POLICY_ENV",
    "layer_from_document",
    "load_layer",
    "org_layers",
    "standard_org_policy_path",
]
