"""ATIP metadata documents and shims: read with caps, schema-check, extract the trust *claims*.

Two kinds of document share one schema (``schema/atip-metadata.schema.json``, JSON Schema 2020-12):

* a tool's ``--agent`` output, or a name-keyed legacy shim (RFC §3.2, §13.2): ``atip``, ``name``,
  ``version`` and ``description`` are required;
* a content-addressed shim (RFC §4.5), recognised by its ``binary`` object: ``binary.hash`` is the
  SHA-256 lookup key, and the tool's name may be given as ``binary.name`` instead of ``name``.

Both protocol-version spellings of RFC §3.2.1 are accepted for 0.1 to 0.6: ``"atip": "0.1"`` and
``"atip": {"version": "0.6"}``. Unknown keys are refused except ``x-`` extensions (RFC §12.2): a typo in
``trust`` or ``effects`` must not silently drop a claim.

**Claims, not expectations** (principle 1). Everything extracted here (source, verified flag,
checksum, signer identity and issuer, provenance URL, builder and SLSA level, the shim's ``binary``
section) is what the document *says*. A document can say anything about itself; these values are things
for verification to check against expectations that come from policy, never the expectation itself.
``verified: true`` in particular proves nothing.

**Missing descriptions are warnings unless ``strict``.** The RFC's tables (§3.2, §3.4, §3.5, §3.9) call
``description`` required on the root, on every argument and option, and on patterns, yet the RFC's own
examples (the ``gh`` example of §14.1, the minimal example, the §4.5 shim) omit some of them. A missing
description carries no trust meaning, so by default it is reported in ``MetadataDocument.warnings`` and
the document is accepted; with ``strict=True`` (``metadata check --strict``) every warning is an error.
The schema file itself requires every description; the lenient check uses a copy of it with
``"description"`` removed from each ``required`` list, so exactly those omissions are tolerated and
nothing else. Declaring fields newer than the declared protocol version (``trust`` before 0.4,
``trust.integrity`` / ``trust.provenance`` before 0.5, ``binary`` before 0.6) is also a warning.

Checks made here beyond the schema (each a ``MetadataError`` naming the JSON path):

* checksums and ``binary.hash`` are lowercase, full-length hex (``Digest.parse``): a lookup key has one
  spelling only;
* a shim looked up by digest carries exactly that digest in ``binary.hash`` (RFC §3.2.2 step 4, §4.5);
* a shim whose ``trust.integrity.checksum`` disagrees with its own ``binary.hash`` contradicts itself;
* ``trust.signature`` (the placement of the RFC's §4.5 example) is read as the shim's own signature and
  is accepted in shims only, and not together with ``trust.shimIntegrity.signature``.

Every dependency error (``json``, ``jsonschema``, ``OSError``, ``UnicodeDecodeError``) is mapped into
the error tree here or in ``jsonio`` (practice 4).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from atip_trust._base.files import read_capped
from atip_trust._base.jsonio import json_path, parse_json
from atip_trust._base.limits import LIMITS, Limits
from atip_trust._base.record import Record, field
from atip_trust._base.schema import Validator, best_match, validator
from atip_trust.errors import InputTooLargeError, MalformedInputError, MetadataError
from atip_trust.facts.digest import Digest, hash_bytes
from atip_trust.facts.effects import merge_declared, walk_command

if TYPE_CHECKING:
    from typing import Any

    from atip_trust._base.schema import SchemaError

SCHEMA_FILE = "atip-metadata.schema.json"
#: Longest schema message we repeat; jsonschema quotes whole instances, which may be megabytes.
_MESSAGE_CAP = 300

#: Fields and the protocol version that introduced them (RFC §3.2.1 feature registry).
_PROTOCOL_RE = re.compile(r"0\.[1-6]")
_SINCE: tuple[tuple[tuple[str, ...], tuple[int, int]], ...] = (
    (("trust",), (0, 4)),
    (("trust", "integrity"), (0, 5)),
    (("trust", "provenance"), (0, 5)),
    (("binary",), (0, 6)),
)


# --------------------------------------------------------------------------------------------------
# Typed claims


class _Claim(Record):
    """A typed claim: its JSON is its fields in order, a digest as its text, a nested claim as its JSON."""

    def to_json(self) -> dict[str, Any]:
        return {name: _claim_value(getattr(self, name)) for name in self._fields}


def _claim_value(value: Any) -> Any:
    if isinstance(value, _Claim):
        return value.to_json()
    return str(value) if isinstance(value, Digest) else value


class SignatureClaim(_Claim):
    """A declared signer (RFC §3.2.2 ``integrity.signature`` / ``shimIntegrity.signature``)."""

    type: str | None = None
    identity: str | None = None
    issuer: str | None = None
    bundle: str | None = None


class ProvenanceClaim(_Claim):
    """A declared SLSA provenance (RFC §3.2.2 ``trust.provenance``).

    ``slsa_level`` is only what the document claims; the level atip-trust assigns comes from the
    trusted-builder map in policy (principle 3).
    """

    url: str | None = None
    format: str | None = None
    builder: str | None = None
    slsa_level: int | None = None


class BinaryClaim(_Claim):
    """A shim's ``binary`` section (RFC §4.5)."""

    hash: Digest | None = None
    name: str | None = None
    version: str | None = None
    platform: str | None = None


class TrustClaims(_Claim):
    """Everything a document claims about trust. Claims to check, never expectations."""

    source: str | None = None
    verified: bool | None = None
    checksum: Digest | None = None
    signature: SignatureClaim | None = None
    shim_signature: SignatureClaim | None = None
    provenance: ProvenanceClaim | None = None
    binary: BinaryClaim | None = None
    #: ATIP 0.4's ``trust.checksum``, ``trust.signedBy`` and ``trust.attestation`` as written: reported,
    #: never checked, never an anchor or a binding (the 0.5+ fields are ``trust.integrity``/``provenance``).
    legacy: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        legacy = out.pop("legacy")
        if legacy:
            out["legacy_0_4"] = dict(legacy)
        return out


class MetadataDocument(Record):
    """A schema-valid ATIP document: the exact bytes read, the parsed object and its claims."""

    raw: bytes
    doc: dict[str, Any]
    version: str
    is_shim: bool
    name: str | None
    claims: TrustClaims
    warnings: list[str] = field(default_factory=list)
    source_name: str = "<metadata>"

    @property
    def kind(self) -> str:
        return "shim" if self.is_shim else "metadata"

    @property
    def sha256(self) -> Digest:
        """Digest of the exact bytes read (what a shim's signature covers, RFC §4.9)."""
        return hash_bytes(self.raw, "sha256")

    def aliases(self) -> tuple[str, ...]:
        """Other executable names the document declares itself for (``x-aliases``, an RFC §12.2
        extension: the RFC has no alias field). They are in the bytes whoever vouches for the
        document signed (a signed shim or metadata; a probed tool's own signed binary), so they bind
        as the name does."""
        raw = self.doc.get("x-aliases")
        return tuple(a for a in raw if isinstance(a, str) and a) if isinstance(raw, list) else ()

    def name_problem(self, executable: str) -> str | None:
        """None when this document is about ``executable`` (RFC §3.2: ``name`` "matches executable",
        or one of its ``aliases``); otherwise why it is not: metadata that names another program
        does not count for this one (a verified ``liar`` whose ``--agent`` says ``kubectl`` would
        otherwise compile to ``kubectl_*`` names and rules written for kubectl would speak of it)."""
        if self.name == executable or executable in self.aliases():
            return None
        also = f" or its x-aliases {list(self.aliases())}" if self.aliases() else ""
        return (f"the {self.kind} is about {self.name!r}{also}, not the executable {executable!r} "
                "(RFC §3.2: name matches the executable): it does not count for this tool")

    def commands(self) -> list[tuple[str, ...]]:
        """Every declared command path, depth first, in document order. The root command ``""``
        (RFC §4.5, §13.2) is the empty path ``()``."""
        out: list[tuple[str, ...]] = []

        def walk(node_map: Any, prefix: tuple[str, ...]) -> None:
            if not isinstance(node_map, dict):
                return
            for name, node in node_map.items():
                path = prefix if name == "" else prefix + (name,)
                out.append(path)
                if isinstance(node, dict):
                    walk(node.get("commands"), path)

        walk(self.doc.get("commands"), ())
        return out

    def effects_for(self, command: Sequence[str]) -> dict[str, Any] | None:
        """The effects declared for ``command`` (a path of command names, e.g. ``["pr", "merge"]``).

        Tool-level ``effects`` are merged with each command's along the path (RFC §3.6: root effects
        are the global declaration); where two levels speak, the value that adds risk wins (a
        command's ``destructive: false`` cannot cancel the tool's ``destructive: true``), nested
        objects (``filesystem``, ``interactive``, ``cost``) merged one level down. ``[]`` means the tool
        itself: its root command ``""`` if declared. Returns ``None`` when the words do not name one
        declared command unambiguously (an undeclared word, or an option before the sub-command); the
        policy engine decides what that means (unknown is risky, principle 10). The walk is
        the policy engine's own (``facts.effects.walk_command``), so both always agree. A copy.
        """

        levels, why = walk_command(self.doc, list(command))
        if why is not None:
            return None
        return merge_declared(levels)


# --------------------------------------------------------------------------------------------------
# Schema loading and validation (the jsonschema boundary)


def _without_required(node: Any, prop: str) -> Any:
    """A copy of a schema with ``prop`` removed from every ``required`` list."""
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "required" and isinstance(value, list):
                out[key] = [p for p in value if p != prop]
            else:
                out[key] = _without_required(value, prop)
        return out
    if isinstance(node, list):
        return [_without_required(v, prop) for v in node]
    return node


def _validators() -> tuple[Validator, Validator]:
    """(strict, lenient) validators. Lenient tolerates a missing ``description`` and nothing else."""
    return validator(SCHEMA_FILE), validator(SCHEMA_FILE, _without_description)


def _without_description(schema: Any) -> Any:
    return _without_required(schema, "description")


def _iter_errors(v: Validator, doc: Any) -> list[SchemaError]:
    return v.errors(doc, what="metadata")


def _path_key(path: Sequence[str | int]) -> tuple[tuple[int, int, str], ...]:
    # Array indices and object keys never share a position under one parent, but keep the key total.
    return tuple((0, p, "") if isinstance(p, int) else (1, 0, p) for p in path)


def _first(errors: list[SchemaError]) -> SchemaError:
    """Deterministic choice: the shallowest-sorted JSON path, then keyword, then message."""
    return min(
        errors, key=lambda e: (_path_key(list(e.absolute_path)), str(e.validator), e.message)
    )


def _clip(text: str) -> str:
    text = text.replace("\n", "\\n").replace("\r", "\\r")
    return text if len(text) <= _MESSAGE_CAP else text[: _MESSAGE_CAP - 3] + "..."


def _describe(err: SchemaError) -> tuple[str, str]:
    """Turn one jsonschema error into (JSON path, one-line message), pointing at the offending key."""
    path: list[str | int] = list(err.absolute_path)
    if err.validator in ("anyOf", "oneOf") and not path and isinstance(err.instance, dict):
        # The only root-level anyOf: a shim names its tool at the top or in binary (RFC §4.5).
        return "$", "a shim must name its tool in 'name' or 'binary.name'"
    if err.context:
        detail = best_match([err])
        if detail is not None:
            err = detail
            path = list(err.absolute_path)
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        props = err.schema.get("properties", {}) if isinstance(err.schema, dict) else {}
        patterns = err.schema.get("patternProperties", {}) if isinstance(err.schema, dict) else {}
        extras = sorted(
            k
            for k in err.instance
            if k not in props and not any(re.search(p, k) for p in patterns)
        )
        if extras:
            return json_path(path + [extras[0]]), _clip(
                f"unexpected key {extras[0]!r} (extensions must start with 'x-', RFC §12.2)"
            )
    if "propertyNames" in err.relative_schema_path and isinstance(err.instance, str):
        return json_path(path + [err.instance]), _clip(f"invalid command name: {err.message}")
    return json_path(path), _clip(err.message)


def _validate(doc: Any, *, strict: bool) -> list[tuple[str, str]]:
    """Schema-check ``doc``. Returns description warnings (path, message); raises MetadataError."""
    strict_v, lenient_v = _validators()
    errors = _iter_errors(strict_v, doc)
    if not errors:
        return []
    hard = _iter_errors(lenient_v, doc)
    if hard or strict:
        where, message = _describe(_first(hard or errors))
        raise MetadataError(message, path=where)
    warnings = sorted(
        (_describe(e) for e in errors),
        key=lambda w: w,
    )
    return [(where, f"{msg} (missing description accepted; --strict refuses it)") for where, msg in warnings]


# --------------------------------------------------------------------------------------------------
# Claim extraction and the checks the schema cannot express


def _digest_at(value: Any, where: str) -> Digest | None:
    if value is None:
        return None
    try:
        return Digest.parse(value)
    except MalformedInputError as err:
        raise MetadataError(err.message, path=where) from err


def _signature(obj: Any) -> SignatureClaim | None:
    if not isinstance(obj, dict):
        return None
    return SignatureClaim(
        type=obj.get("type"),
        identity=obj.get("identity"),
        issuer=obj.get("issuer"),
        bundle=obj.get("bundle"),
    )


def _as_int(value: Any) -> int | None:
    # jsonschema's "integer" accepts 3.0; the claim is still the integer 3.
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _version_of(doc: dict[str, Any]) -> str:
    atip = doc["atip"]
    return str(atip if isinstance(atip, str) else atip["version"])


def _version_warnings(doc: dict[str, Any], version: str) -> list[tuple[str, str]]:
    major, minor = (int(x) for x in version.split("."))
    out: list[tuple[str, str]] = []
    for keys, since in _SINCE:
        node: Any = doc
        for k in keys:
            node = node.get(k) if isinstance(node, dict) else None
        if node is not None and (major, minor) < since:
            out.append(
                (
                    json_path(list(keys)),
                    f"{'.'.join(keys)} is an ATIP {since[0]}.{since[1]} field but the document "
                    f"declares ATIP {version}",
                )
            )
    return out


def _claims(doc: dict[str, Any], is_shim: bool) -> TrustClaims:
    trust = doc.get("trust")
    trust = trust if isinstance(trust, dict) else {}
    integrity = trust.get("integrity")
    integrity = integrity if isinstance(integrity, dict) else {}
    shim_integrity = trust.get("shimIntegrity")
    shim_integrity = shim_integrity if isinstance(shim_integrity, dict) else {}

    if "signature" in trust and not is_shim:
        raise MetadataError(
            "'signature' directly under 'trust' is the shim placement (RFC §4.5); a tool's own "
            "metadata declares its signer in trust.integrity.signature",
            path="$.trust.signature",
        )
    if "signature" in trust and "signature" in shim_integrity:
        raise MetadataError(
            "the shim's signature is declared twice (trust.signature and "
            "trust.shimIntegrity.signature); declare it once",
            path="$.trust.signature",
        )
    shim_sig = _signature(shim_integrity.get("signature")) or _signature(trust.get("signature"))

    provenance = trust.get("provenance")
    prov = None
    if isinstance(provenance, dict):
        prov = ProvenanceClaim(
            url=provenance.get("url"),
            format=provenance.get("format"),
            builder=provenance.get("builder"),
            slsa_level=_as_int(provenance.get("slsaLevel")),
        )

    binary = doc.get("binary")
    bin_claim = None
    if isinstance(binary, dict):
        bin_claim = BinaryClaim(
            hash=_digest_at(binary.get("hash"), "$.binary.hash"),
            name=binary.get("name"),
            version=binary.get("version"),
            platform=binary.get("platform"),
        )

    checksum = _digest_at(integrity.get("checksum"), "$.trust.integrity.checksum")
    if (
        checksum is not None
        and bin_claim is not None
        and bin_claim.hash is not None
        and checksum.algorithm == bin_claim.hash.algorithm
        and checksum != bin_claim.hash
    ):
        raise MetadataError(
            f"trust.integrity.checksum contradicts binary.hash: expected {bin_claim.hash} "
            f"(binary.hash), got {checksum}",
            path="$.trust.integrity.checksum",
        )

    verified = trust.get("verified")
    return TrustClaims(
        source=trust.get("source"),
        verified=verified if isinstance(verified, bool) else None,
        checksum=checksum,
        signature=_signature(integrity.get("signature")),
        shim_signature=shim_sig,
        provenance=prov,
        binary=bin_claim,
        legacy={k: trust[k] for k in _LEGACY_TRUST if k in trust},
    )


#: ATIP 0.4 trust fields read as claims only (``TrustClaims.legacy``).
_LEGACY_TRUST = ("checksum", "signedBy", "attestation")


def _check_lookup(claims: TrustClaims, is_shim: bool, lookup_digest: Digest) -> None:
    """RFC §3.2.2 step 4 / §4.5: a shim served for a digest must describe that digest."""
    if not is_shim or claims.binary is None or claims.binary.hash is None:
        raise MetadataError(
            f"looked up by {lookup_digest} but the document has no binary.hash "
            "(only a content-addressed shim can answer a digest lookup)",
            path="$.binary",
        )
    if claims.binary.hash != lookup_digest:
        raise MetadataError(
            f"shim does not describe the binary it was looked up for: expected {lookup_digest}, "
            f"got {claims.binary.hash}",
            path="$.binary.hash",
        )


# --------------------------------------------------------------------------------------------------
# Public entry points


def parse_metadata(
    data: bytes,
    *,
    source_name: str = "<metadata>",
    strict: bool = False,
    lookup_digest: Digest | None = None,
    limits: Limits = LIMITS,
) -> MetadataDocument:
    """Parse and check ATIP metadata or a shim from bytes (e.g. captured ``--agent`` output).

    Raises ``InputTooLargeError`` over the byte or depth cap (checked before parsing) and
    ``MetadataError`` (with ``.path`` the JSON path) for anything malformed. With ``lookup_digest``,
    the document must be a shim whose ``binary.hash`` equals it.
    """
    if not isinstance(data, (bytes, bytearray)):
        raise MetadataError(f"metadata must be bytes, got {type(data).__name__}", path="$")
    if len(data) > limits.metadata_bytes:
        raise InputTooLargeError(
            f"metadata is {len(data)} bytes, over the cap of {limits.metadata_bytes} bytes",
            path=source_name,
        )
    raw = bytes(data)
    try:
        doc = parse_json(raw, what="metadata", max_depth=limits.json_depth)
    except InputTooLargeError:
        raise
    except MalformedInputError as err:
        if isinstance(err, MetadataError):
            raise
        # Keep the dependency error (json, UnicodeDecodeError) as the cause.
        raise MetadataError(err.message, path=err.path or "$") from (err.__cause__ or err)

    found = _validate(doc, strict=strict)
    # The schema guarantees an object with a valid "atip" from here on.
    if not isinstance(doc, dict):  # pragma: no cover - refused by the schema
        raise MetadataError("metadata must be a JSON object", path="$")
    version = _version_of(doc)
    is_shim = "binary" in doc
    claims = _claims(doc, is_shim)
    if lookup_digest is not None:
        _check_lookup(claims, is_shim, lookup_digest)

    found += _version_warnings(doc, version)
    described = doc.get("description")
    if isinstance(described, str) and len(described) > 200:
        found.append(("$.description", f"the tool-level description is {len(described)} characters; RFC "
                      "§3.2 recommends one line of at most 200"))
    atip = doc.get("atip")
    wanted = atip.get("minAgentVersion") if isinstance(atip, dict) else None
    if isinstance(wanted, str) and not _PROTOCOL_RE.fullmatch(wanted):
        # RFC v0.3's examples say "1.0"; v0.6's schema allows protocol versions only. Accepted, said.
        found.append(("$.atip.minAgentVersion", f"minAgentVersion {wanted!r} is not an ATIP protocol version "
                      "atip-trust implements (0.1-0.6); accepted, not checked"))
    if strict and found:
        where, message = found[0]
        raise MetadataError(message, path=where)

    name = doc.get("name")
    if name is None and claims.binary is not None:
        name = claims.binary.name
    return MetadataDocument(
        raw=raw,
        doc=doc,
        version=version,
        is_shim=is_shim,
        name=name if isinstance(name, str) else None,
        claims=claims,
        warnings=[f"{where}: {message}" for where, message in found],
        source_name=source_name,
    )


def load_metadata(
    path: str | os.PathLike[str],
    *,
    strict: bool = False,
    lookup_digest: Digest | None = None,
    limits: Limits = LIMITS,
) -> MetadataDocument:
    """Read a metadata or shim file (regular file only, at most ``limits.metadata_bytes``) and parse it."""
    raw = read_capped(path, limits.metadata_bytes, what="metadata file")
    return parse_metadata(
        raw,
        source_name=os.fspath(path),
        strict=strict,
        lookup_digest=lookup_digest,
        limits=limits,
    )


__all__ = [
    "SignatureClaim",
    "ProvenanceClaim",
    "BinaryClaim",
    "TrustClaims",
    "MetadataDocument",
    "parse_metadata",
    "load_metadata",
]
