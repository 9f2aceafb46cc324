"""Reading Sigstore bundles (``.json``, ``.sigstore.json``, ``.jsonl``) and routing them by shape.

We look at the untrusted JSON only far enough to choose a verifier; every field read here is re-checked
by the verifier that owns that shape:

* certificate + ``hashedrekord``/``dsse`` 0.0.1 entry with an inclusion proof → sigstore-python
  (``keyless.py``);
* public-key verification material (cosign "managed key" bundles) → ``keys.py``;
* ``intoto/0.0.2`` entries, or v0.1/v0.2 bundles with only an inclusion promise → ``legacy_bundle.py``;
* no log entry at all, only RFC 3161 timestamps (GitHub's instance) → ``legacy_bundle.py``'s
  ``verify_timestamped_*``, for a trusted root that does not require a log entry;
* cosign's own ``--bundle`` file (``base64Signature``/``cert``/``rekorBundle``) is read as the v0.1
  bundle that says the same (``cosign_bundle_as_v01``) and so goes the legacy way too.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
from typing import Any, Literal

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from atip_trust._base.files import path_name, read_capped
from atip_trust._base.jsonio import parse_json
from atip_trust._base.limits import LIMITS
from atip_trust._base.record import Record, field
from atip_trust.errors import BundleError, InputTooLargeError, MalformedInputError

Route = Literal["sigstore", "key", "legacy", "timestamp", "malformed"]

BUNDLE_MEDIA_TYPES = {
    "application/vnd.dev.sigstore.bundle+json;version=0.1": "0.1",
    "application/vnd.dev.sigstore.bundle+json;version=0.2": "0.2",
    "application/vnd.dev.sigstore.bundle+json;version=0.3": "0.3",
    "application/vnd.dev.sigstore.bundle.v0.3+json": "0.3",
}


def bundle_version(media: Any) -> str | None:
    """The bundle format version (``"0.1"`` to ``"0.3"``) a ``mediaType`` value names; None for any
    other value. Every verifier reads the version through here (``BUNDLE_MEDIA_TYPES`` is the one table)."""
    return BUNDLE_MEDIA_TYPES.get(media) if isinstance(media, str) else None


def proof_required(version: str) -> bool:
    """From v0.2 on the bundle format requires an inclusion proof (sigstore protobuf-specs ``Bundle``
    comment; conformance case ``intoto-missing-inclusion-proof``); a v0.1 bundle may carry only an
    inclusion promise."""
    return version != "0.1"


class BundleInput(Record, frozen=False):
    """One bundle as read from disk: its label (``file`` or ``file#N`` for ``.jsonl``), bytes, JSON."""

    label: str
    raw: bytes
    doc: dict[str, Any]
    version: str = ""
    content: Literal["message_signature", "dsse"] = "message_signature"
    material: Literal["certificate", "chain", "public_key"] = "certificate"
    entry_kinds: list[str] = field(default_factory=list)
    has_inclusion_proof: bool = False
    route: Route = "sigstore"
    #: Route ``malformed``: why this bundle (one line of a ``.jsonl``) could not be read; the file's
    #: other bundles are still verified (a malformed bundle never affects another's evaluation).
    error: BundleError | None = None

    def signing_certificate(self) -> x509.Certificate | None:
        """The leaf certificate, *unverified*: only to name the Sigstore instance in messages."""
        vm = self.doc.get("verificationMaterial")
        if not isinstance(vm, dict):
            return None
        raw = (vm.get("certificate") or {}).get("rawBytes") if isinstance(vm.get("certificate"), dict) else None
        chain = vm.get("x509CertificateChain")
        certs = chain.get("certificates") if isinstance(chain, dict) else None
        if raw is None and isinstance(certs, list) and certs:
            first = certs[0]
            raw = first.get("rawBytes") if isinstance(first, dict) else None
        try:
            return x509.load_der_x509_certificate(base64.b64decode(str(raw), validate=True))
        except (binascii.Error, ValueError, TypeError):
            return None

    def instance_hint(self, message: str = "") -> str:
        """A hint naming the Sigstore instance when it is one whose root we do not embed, or, when
        ``message`` says the certificate or timestamp did not chain to the trusted root, that it may
        come from another instance (staging and production intermediates share their names, so the
        chain failure is the only sign) and which flag selects that instance's root.

        GitHub runs its own Fulcio (issuer ``O=GitHub, Inc.``) with its own TSA and no Rekor entries;
        its trusted root is distributed from tuf-repo.github.com and is not in sigstore-python.
        """
        cert = self.signing_certificate()
        if cert is None:
            return ""
        try:
            issuer = cert.issuer.rfc4514_string()
        except ValueError:
            return ""
        if "GitHub" in issuer:
            return (
                f"; the certificate was issued by GitHub's Sigstore instance ({issuer}): GitHub's "
                "trusted root (tuf-repo.github.com) is missing, pass it with --trusted-root (`gh "
                "attestation trusted-root > trusted_root.jsonl` writes it with the public-good root)"
            )
        if _CHAIN_FAILURE.search(message):
            return ("; the certificate or timestamp does not chain to this trusted root: it may come "
                    "from another Sigstore instance (staging: --staging; GitHub's or a private one: "
                    "--trusted-root FILE)")
        return ""

    def log_ids(self) -> tuple[bytes, ...]:
        """The log key ids the bundle's entries name, *unverified*: only to choose a root."""
        vm = self.doc.get("verificationMaterial")
        entries = vm.get("tlogEntries") if isinstance(vm, dict) else None
        out: list[bytes] = []
        for e in entries if isinstance(entries, list) else ():
            key_id = (e.get("logId") or {}).get("keyId") if isinstance(e, dict) and isinstance(
                e.get("logId"), dict) else None
            try:
                out.append(base64.b64decode(str(key_id), validate=True))
            except (binascii.Error, ValueError):
                continue
        return tuple(out)

    def names_key(self, key_sha256: bytes) -> bool:
        """Whether the bundle names the key whose SubjectPublicKeyInfo has this sha256 as its signer,
        *unverified*: ``publicKey.hint`` (cosign: base64 of the digest) or a DSSE signature's ``keyid``
        (npm: ``SHA256:`` and the unpadded base64 of the digest)."""
        b64 = base64.b64encode(key_sha256).decode()
        forms = {b64, f"SHA256:{b64.rstrip('=')}"}
        vm = self.doc.get("verificationMaterial")
        pk = vm.get("publicKey") if isinstance(vm, dict) else None
        named = [pk.get("hint")] if isinstance(pk, dict) else []
        env = self.doc.get("dsseEnvelope")
        sigs = env.get("signatures") if isinstance(env, dict) else None
        named += [s.get("keyid") for s in sigs if isinstance(s, dict)] if isinstance(sigs, list) else []
        return any(isinstance(n, str) and n in forms for n in named)

    def dsse_payload(self) -> tuple[str, bytes] | None:
        """The DSSE payload type and bytes, *unverified*: only to see which artifact it names."""
        env = self.doc.get("dsseEnvelope")
        if not isinstance(env, dict):
            return None
        try:
            return str(env.get("payloadType", "")), base64.b64decode(str(env.get("payload", "")))
        except (binascii.Error, ValueError):
            return None


def _classify(b: BundleInput) -> BundleInput:
    """Read the bundle's shape far enough to route it, checking on the way that the shape is one the
    ``mediaType`` allows (on every route: a v0.3 bundle relabelled v0.1 must not reach a verifier that
    reads v0.1 rules). Every malformed field is a ``BundleError`` naming its JSON path; nothing else
    escapes, whatever JSON value a field holds."""
    doc = b.doc

    def bad(where: str, message: str) -> BundleError:
        return BundleError(message, path=f"{b.label}: ${where}")

    media = doc.get("mediaType")
    version = bundle_version(media)
    if version is None:
        raise bad(".mediaType", f"unsupported bundle mediaType {_short(media)}; expected one of "
                  + ", ".join(sorted(BUNDLE_MEDIA_TYPES)))
    b.version = version
    contents = [k for k in ("messageSignature", "dsseEnvelope") if k in doc]
    if len(contents) != 1:
        # protobuf-specs Bundle: ``content`` is a oneof; two would let two verifiers read two bundles.
        raise bad("", "bundle must carry exactly one of messageSignature and dsseEnvelope, "
                  f"actual {contents or 'neither'}")
    if not isinstance(doc[contents[0]], dict):
        raise bad(f".{contents[0]}", f"expected a JSON object, got {_short(doc[contents[0]])}")
    b.content = "dsse" if contents[0] == "dsseEnvelope" else "message_signature"
    vm = doc.get("verificationMaterial")
    if not isinstance(vm, dict):
        raise bad(".verificationMaterial", "verificationMaterial is missing or not a JSON object")
    b.material = _material_kind(vm, version, bad)
    b.entry_kinds, b.has_inclusion_proof = _entry_shapes(vm, bad)
    _timestamp_shapes(vm, bad)
    kinds = b.entry_kinds
    if b.material == "public_key":
        b.route = "key"
    elif not kinds:
        # No log entry, any version: the timestamp-only verifier (legacy_bundle.py), which requires a
        # root without logs (or a policy's requireTransparencyLog: false) and a verified signed
        # timestamp. protobuf-specs says a v0.1 bundle's time is its entry's promise, but sigstore-go
        # verifies a v0.1 bundle without entries under such a root (GitHub's staging instance), and
        # under a root with logs the verifier still refuses it, naming the missing entry.
        b.route = "timestamp"
    elif any(k == "intoto/0.0.2" for k in kinds) or (kinds and not b.has_inclusion_proof
                                                      and b.version in ("0.1", "0.2")):
        b.route = "legacy"
    else:
        b.route = "sigstore"
    return b


def _short(value: Any) -> str:
    """A JSON value for a message: its repr, cut (an attacker chooses its length)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


_MATERIALS: dict[str, Literal["certificate", "chain", "public_key"]] = {
    "publicKey": "public_key", "x509CertificateChain": "chain", "certificate": "certificate"}


def _material_kind(vm: dict[str, Any], version: str, bad: Any) -> Literal["certificate", "chain", "public_key"]:
    """Which verification material the bundle carries, checked against its version: a single
    ``certificate`` from v0.3 on, an ``x509CertificateChain`` before (protobuf-specs Bundle comments;
    sigstore-python ``Bundle._verify`` refuses either the other way round), a public key in any."""
    present = [k for k in _MATERIALS if k in vm]
    if len(present) != 1:
        raise bad(".verificationMaterial", "verificationMaterial must carry exactly one of a certificate, "
                  f"certificate chain or public key, actual {present or 'none'}")
    key = present[0]
    if not isinstance(vm[key], dict):
        raise bad(f".verificationMaterial.{key}", f"expected a JSON object, got {_short(vm[key])}")
    if key == "certificate" and version != "0.3":
        raise bad(".verificationMaterial.certificate", f"a v{version} bundle carries an "
                  "x509CertificateChain; a single certificate is the v0.3 form (mediaType and shape disagree)")
    if key == "x509CertificateChain" and version == "0.3":
        raise bad(".verificationMaterial.x509CertificateChain", "a v0.3 bundle carries a single "
                  "certificate; x509CertificateChain is the v0.1/v0.2 form (mediaType and shape disagree)")
    if key == "certificate":
        _der_certificate(vm[key].get("rawBytes"), ".verificationMaterial.certificate.rawBytes", bad)
    elif key == "x509CertificateChain":
        certs = vm[key].get("certificates")
        where = ".verificationMaterial.x509CertificateChain.certificates"
        if not isinstance(certs, list) or not certs:
            raise bad(where, f"expected a non-empty list of certificates, got {_short(certs)}")
        for i, c in enumerate(certs):
            _der_certificate(c.get("rawBytes") if isinstance(c, dict) else c, f"{where}[{i}].rawBytes", bad)
    return _MATERIALS[key]


def _der_certificate(value: Any, where: str, bad: Any) -> None:
    """``value`` is standard base64 of a DER X.509 certificate (parsed, not verified: each verifier
    verifies it), so that no verifier meets an unparsable certificate as an exception of its own."""
    try:
        x509.load_der_x509_certificate(base64.b64decode(value, validate=True) if isinstance(value, str) else b"")
    except (binascii.Error, ValueError) as err:
        raise bad(where, f"expected base64 of a DER X.509 certificate, got {_short(value)} ({err})") from None


def _entry_shapes(vm: dict[str, Any], bad: Any) -> tuple[list[str], bool]:
    """``kind/version`` of each log entry and whether any carries an inclusion proof; each entry, its
    ``kindVersion`` and its ``inclusionProof`` (absent, null or an object) checked for type."""
    entries = vm.get("tlogEntries")
    if entries is None:
        return [], False
    if not isinstance(entries, list):
        raise bad(".verificationMaterial.tlogEntries", f"expected a list, got {_short(entries)}")
    kinds: list[str] = []
    proof = False
    for i, e in enumerate(entries):
        where = f".verificationMaterial.tlogEntries[{i}]"
        if not isinstance(e, dict):
            raise bad(where, f"expected a JSON object, got {_short(e)}")
        kv = e.get("kindVersion")
        if not isinstance(kv, dict) or not isinstance(kv.get("kind"), str) or not isinstance(
                kv.get("version"), str):
            raise bad(f"{where}.kindVersion", "expected {\"kind\": string, \"version\": string}, "
                      f"got {_short(kv)}")
        kinds.append(f"{kv['kind']}/{kv['version']}")
        ip = e.get("inclusionProof")
        if ip is not None and not isinstance(ip, dict):
            raise bad(f"{where}.inclusionProof", f"expected a JSON object or null, got {_short(ip)}")
        proof = proof or isinstance(ip, dict)
    return kinds, proof


def _timestamp_shapes(vm: dict[str, Any], bad: Any) -> None:
    """``timestampVerificationData``: absent, or an object whose ``rfc3161Timestamps`` is a list of
    objects (their contents are checked by the verifier that reads them)."""
    tvd = vm.get("timestampVerificationData")
    if tvd is None:
        return
    where = ".verificationMaterial.timestampVerificationData"
    if not isinstance(tvd, dict):
        raise bad(where, f"expected a JSON object, got {_short(tvd)}")
    tokens = tvd.get("rfc3161Timestamps")
    if tokens is None:
        return
    if not isinstance(tokens, list) or not all(isinstance(t, dict) for t in tokens):
        raise bad(f"{where}.rfc3161Timestamps", f"expected a list of objects, got {_short(tokens)}")


def route_of(doc: Any) -> Route | None:
    """Which verifier owns this bundle document, or None when it is not a bundle we can route.

    The one place that decides routing: ``legacy_bundle.is_legacy`` asks here too.
    """
    if not isinstance(doc, dict):
        return None
    try:
        return _classify(BundleInput(label="<bundle>", raw=b"", doc=doc)).route
    except BundleError:
        return None


def load_bundles(path: str | os.PathLike[str]) -> list[BundleInput]:
    """Read one bundle file. ``.jsonl``: one bundle per non-empty line, labelled ``file#N`` (1-based)."""
    p = os.fspath(path)  # text, not a Path: this runs for every bundle of every verification
    name = path_name(p)
    is_lines = name.endswith(".jsonl")
    cap = LIMITS.bundle_lines_bytes if is_lines else LIMITS.bundle_bytes
    raw = read_capped(p, cap, what="bundle")
    out: list[BundleInput] = []
    if is_lines:
        lines = [ln for ln in raw.split(b"\n") if ln.strip()]
        if len(lines) > LIMITS.bundle_lines:
            raise InputTooLargeError(
                f"{len(lines)} bundles in one file, over the cap of {LIMITS.bundle_lines}", path=p
            )
        chunks = [(f"{name}#{i}", ln) for i, ln in enumerate(lines, 1)]
    else:
        chunks = [(name, raw)]
    if not chunks:
        raise BundleError("no bundle in file", path=p)
    for label, data in chunks:
        if len(data) > LIMITS.bundle_bytes:
            raise InputTooLargeError(f"bundle is over the cap of {LIMITS.bundle_bytes} bytes", path=label)
        try:
            out.extend(_read_one(label, data))
        except BundleError as err:
            # One malformed line of several: that bundle's failure only (evaluation/evaluate.py reports it); the
            # whole of a one-bundle file: the file's error (below).
            out.append(BundleInput(label=label, raw=data, doc={}, route="malformed", error=err))
        if len(out) > LIMITS.bundle_lines:
            raise InputTooLargeError(f"{len(out)} bundles in one file, over the cap of {LIMITS.bundle_lines}",
                                     path=p)
    if all(b.error is not None for b in out):
        first = out[0].error
        if first is not None:  # every line is malformed: the file is, as a single bundle would be
            raise first
    return out


def bundles_from_bytes(label: str, data: bytes) -> list[BundleInput]:
    """The bundles in one bundle document held in memory (a bundle just signed), classified."""
    return _read_one(label, data)


def _classify_or_mark(b: BundleInput) -> BundleInput:
    """``_classify``, or the bundle marked ``malformed`` with its error (evaluation/evaluate.py reports it)."""
    try:
        return _classify(b)
    except BundleError as err:
        return BundleInput(label=b.label, raw=b.raw, doc={}, route="malformed", error=err)


def _read_one(label: str, data: bytes) -> list[BundleInput]:
    """The bundles in one bundle document (several for a GitHub attestations answer), classified."""
    try:
        doc = parse_json(data, what="bundle", max_depth=LIMITS.json_depth)
    except InputTooLargeError as err:
        raise InputTooLargeError(err.message, path=label) from err
    except MalformedInputError as err:
        raise BundleError(err.message, path=label) from err
    if not isinstance(doc, dict):
        raise BundleError("bundle is not a JSON object", path=f"{label}: $")
    if "attestations" in doc and "mediaType" not in doc:
        # Each attestation is a bundle of its own: a malformed one is that bundle's failure only.
        return [_classify_or_mark(b) for b in _github_attestations(doc, label)]
    if "rekorBundle" in doc and "mediaType" not in doc:
        doc = cosign_bundle_as_v01(doc, label)
        data = json.dumps(doc, separators=(",", ":")).encode()
    return [_classify(BundleInput(label=label, raw=data, doc=doc))]


def cosign_bundle_as_v01(doc: dict[str, Any], label: str) -> dict[str, Any]:
    """cosign's own ``sign-blob --bundle`` file (cosign 1.x-2.x without ``--new-bundle-format``:
    ``{"base64Signature", "cert", "rekorBundle": {"SignedEntryTimestamp", "Payload": {"body",
    "integratedTime", "logIndex", "logID"}}}``) as the v0.1 Sigstore bundle that says the same.

    The two carry the same facts: the SET signs exactly ``Payload`` (tlog.py rebuilds it from the
    entry), and ``body`` is the logged entry. A v0.1 bundle with a promise and no proof is routed to
    legacy_bundle.verify_legacy_message, which checks the SET, the certificate at the integrated time,
    the signature over the artifact, and that the logged body names this artifact, signature and
    certificate: the checks cosign skipped in GHSA-8gw7-4j42-w388. Only the shape is checked here.
    """
    def bad(where: str, message: str) -> BundleError:
        return BundleError(message, path=f"{label}: $.{where}")

    sig, cert, rb = doc.get("base64Signature"), doc.get("cert"), doc.get("rekorBundle")
    if not isinstance(sig, str) or not sig:
        raise bad("base64Signature", "cosign bundle without a base64Signature string")
    if not isinstance(rb, dict) or not isinstance(rb.get("Payload"), dict):
        raise bad("rekorBundle", "cosign bundle without a rekorBundle.Payload object")
    payload = rb["Payload"]
    set_b64, body_b64 = rb.get("SignedEntryTimestamp"), payload.get("body")
    log_id, index, itime = payload.get("logID"), payload.get("logIndex"), payload.get("integratedTime")
    if not isinstance(set_b64, str) or not isinstance(body_b64, str):
        raise bad("rekorBundle", "SignedEntryTimestamp and Payload.body must be base64 strings")
    if not isinstance(log_id, str) or not re.fullmatch(r"[0-9a-f]{64}", log_id):
        raise bad("rekorBundle.Payload.logID", "must be the log's key id in hex")
    if type(index) is not int or type(itime) is not int or index < 0 or itime < 0:
        raise bad("rekorBundle.Payload", "logIndex and integratedTime must be non-negative integers")
    try:
        der = x509.load_pem_x509_certificate(base64.b64decode(str(cert), validate=True)).public_bytes(
            serialization.Encoding.DER)
        body = parse_json(base64.b64decode(body_b64, validate=True), what="log entry body")
    except (binascii.Error, ValueError, MalformedInputError) as err:
        raise bad("cert", f"cert must be base64 of a PEM certificate and Payload.body base64 of "
                  f"the logged JSON ({err})") from err
    kind = body.get("kind") if isinstance(body, dict) else None
    version = body.get("apiVersion") if isinstance(body, dict) else None
    return {
        "mediaType": "application/vnd.dev.sigstore.bundle+json;version=0.1",
        "verificationMaterial": {
            "x509CertificateChain": {"certificates": [{"rawBytes": base64.b64encode(der).decode()}]},
            "tlogEntries": [{
                "logIndex": str(index),
                "logId": {"keyId": base64.b64encode(bytes.fromhex(log_id)).decode()},
                "kindVersion": {"kind": str(kind), "version": str(version)},
                "integratedTime": str(itime),
                "inclusionPromise": {"signedEntryTimestamp": set_b64},
                "canonicalizedBody": body_b64,
            }],
        },
        "messageSignature": {"signature": sig},
    }


def _github_attestations(doc: dict[str, Any], label: str) -> list[BundleInput]:
    """The bundles in a GitHub attestations API answer, ``{"attestations": [{"bundle": {...}}, ...]}``.

    ``GET /repos/{owner}/{repo}/attestations/sha256:{hex}`` answers this way and ``gh attestation
    verify`` reads it; each bundle is then verified on its own like any other. Anything else under
    ``attestations`` is malformed, named by its JSON path.
    """
    items = doc.get("attestations")
    if not isinstance(items, list) or not items:
        raise BundleError("'attestations' must be a non-empty list of {\"bundle\": {...}} objects",
                          path=f"{label}: $.attestations")
    found: list[BundleInput] = []
    for i, item in enumerate(items):
        bundle = item.get("bundle") if isinstance(item, dict) else None
        if not isinstance(bundle, dict):
            raise BundleError("attestation without a bundle object",
                              path=f"{label}: $.attestations[{i}].bundle")
        raw = json.dumps(bundle, separators=(",", ":")).encode()
        found.append(BundleInput(label=f"{label}#attestations[{i}]", raw=raw, doc=bundle))
    return found




#: How sigstore-python and cryptography word a chain that does not reach the trusted root.
def root_mismatch(b: BundleInput, message: str, root_name: str) -> str | None:
    """The failure named as what it is when ``message`` (sigstore's or ours) says the certificate or
    timestamp does not chain to the trusted root: a root mismatch (the bundle belongs to another
    Sigstore instance, or the root given is the wrong one), with the flag that selects the right
    root; None for any other failure."""
    if not _CHAIN_FAILURE.search(message):
        return None
    hint = b.instance_hint() or ("; it may come from another Sigstore instance (staging: --staging; "
                                 "GitHub's or a private one: --trusted-root FILE)")
    return (f"root mismatch: the signing certificate or its timestamp does not chain to trusted root "
            f"{root_name} ({message}){hint}")


_CHAIN_FAILURE = re.compile(
    r"certificate chain|candidates exhausted|unable to get local issuer|chain to a trusted root|"
    r"not signed by a trusted|invalid signing cert|no valid certificate path|"
    r"is not a transparency log of the trusted root", re.IGNORECASE)


#: Sigstore's (protobuf-specs) names for hash algorithms, in the vocabulary of our output.
_DIGEST_NAMES = {"SHA2_256": "sha256", "SHA2_384": "sha384", "SHA2_512": "sha512"}


def digest_text(algorithm: object, hex_value: str) -> str:
    """A digest a bundle declares, written as every digest in our output is: ``sha256:<hex>``."""
    name = _DIGEST_NAMES.get(algorithm, str(algorithm).lower()) if isinstance(algorithm, str) else (
        "sha256" if algorithm is None else str(algorithm))
    return f"{name}:{hex_value}"


__all__ = [
    "cosign_bundle_as_v01",
    "digest_text",
    "BundleInput",
    "load_bundles",
    "route_of",
    "BUNDLE_MEDIA_TYPES",
    "Route",
    "bundle_version",
    "proof_required",
]
