"""Verification of one Rekor v1 transparency log entry from a Sigstore bundle, against a trusted root.

sigstore-python verifies log entries only inside ``Verifier`` and only for bundles with a certificate;
its Merkle and checkpoint helpers are private (``sigstore._internal``). Key-based bundles
(``verificationMaterial.publicKey``) and the entry kinds it refuses (``intoto/0.0.2``) need the same
checks, so this module implements them on ``cryptography`` alone:

1. parse ``verificationMaterial.tlogEntries[i]`` strictly into a ``LogEntry`` (``BundleError`` + JSON path);
2. find the log key by ``logId`` in the trusted root; it must be valid at ``integratedTime``;
3. inclusion proof (RFC 6962 §2.1.1, RFC 9162 §2.1.3.2): leaf hash ``sha256(0x00 ‖ body)``, audit path
   bottom-up, must reach the proof's ``rootHash``;
4. checkpoint (a signed note, https://github.com/transparency-dev/formats/blob/main/log/README.md):
   signed by the log key, key hint = first 4 bytes of ``logId``; its root hash and tree size must equal
   the proof's;
5. inclusion promise (SET): the log's signature over the RFC 8785 canonical JSON of
   ``{body, integratedTime, logID (hex), logIndex}``;
6. at least one of proof and promise (a proof when the caller requires one).

What the entry's *body* says (which artifact, signature and key) is checked by the caller against the
bundle (``keys.verify_key_bundle`` for ``hashedrekord``); this module proves only that the log
included those exact body bytes at that time.

A failed check raises ``TlogVerificationError``. It is deliberately not an ``AtipTrustError``: a forged
proof is a verification *outcome* (exit 1, a failed check), not an input we could not evaluate (exit 2).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from atip_trust._base.jsonio import b64_bytes, canonical_json, expect_object, get_field, join_path
from atip_trust._base.record import Record
from atip_trust.errors import BundleError
from atip_trust.facts.report import Check, CheckFailure
from atip_trust.signature.algorithms import LOG_SCHEMES, verify_signature
from atip_trust.signature.trustroot import LogKey, TrustRoot

if TYPE_CHECKING:
    from typing import Any

#: Largest value a protobuf (u)int64 field may carry here; Rekor indices and times are non-negative.
_MAX_INT64 = 2**63 - 1
#: An honest log never integrates an entry in the future; allow this much clock skew between the log
#: and this machine (sigstore-python compares integratedTime with nothing, docs/sigstore.md "Time").
MAX_FUTURE_SKEW = timedelta(minutes=5)
#: RFC 6962 domain separation prefixes (§2.1).
_LEAF_PREFIX = b"\x00"
_NODE_PREFIX = b"\x01"
#: A proof deeper than 64 levels would describe a tree of more than 2**64 leaves.
_MAX_PROOF_HASHES = 64
#: Signed-note signature line: em dash U+2014, space, key name, space, base64(hint ‖ signature).
_SIG_LINE = re.compile(r"\u2014 (\S+) ([A-Za-z0-9+/=]+)")

_ENTRY_KEYS = {
    "logIndex",
    "logId",
    "kindVersion",
    "integratedTime",
    "inclusionPromise",
    "inclusionProof",
    "canonicalizedBody",
}
_PROOF_KEYS = {"logIndex", "rootHash", "treeSize", "hashes", "checkpoint"}


class TlogVerificationError(CheckFailure):
    """A log entry failed a check. ``check`` names it (``tlog.inclusion_proof``, ``tlog.checkpoint``,
    ``tlog.set``, ``tlog.key``, ``tlog.time``, ``tlog.integrated_time``, ``tlog.entry``); the message
    names expected and actual."""

    # A forged proof, checkpoint, SET or time is tampering; a log missing from the root is not.
    TAMPER_CHECKS = frozenset({"tlog.inclusion_proof", "tlog.checkpoint", "tlog.set", "tlog.time"})


# --- times --------------------------------------------------------------------------------------------

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def integrated_time_utc(seconds: int, *, path: str = "$.integratedTime") -> datetime:
    """An entry's ``integratedTime`` (seconds since the Unix epoch) as an aware UTC datetime.

    protobuf-specs allows any int64, but a ``datetime`` ends at 9999-12-31T23:59:59 and the platform's
    ``fromtimestamp`` ends earlier still (``OSError``/``OverflowError``/``ValueError`` depending on the
    C library). No honest log writes such a time: the bundle fails closed with the named check
    ``tlog.integrated_time`` (not tampering evidence: nothing has verified the SET that would sign it),
    and the caller goes on with the other bundles. Computed from the epoch, so every platform agrees.
    """
    try:
        return _EPOCH + timedelta(seconds=seconds)
    except OverflowError:
        raise TlogVerificationError(
            f"{path} {seconds} is outside the representable time range (after 9999-12-31T23:59:59Z)",
            check="tlog.integrated_time",
            expected=f"0..{int((datetime.max.replace(tzinfo=UTC) - _EPOCH).total_seconds())}",
            actual=seconds,
        ) from None


def check_integrated_times(doc: Any) -> None:
    """Every ``verificationMaterial.tlogEntries[].integratedTime`` of a bundle is a representable time;
    raises ``TlogVerificationError`` (``tlog.integrated_time``) naming the first that is not.

    Run before handing a bundle to a verifier that converts the time itself (sigstore-python raises
    ``ValueError``/``OSError`` out of ``datetime.fromtimestamp``). Shapes are left to the parsers.
    """
    entries = ((doc.get("verificationMaterial") or {}) if isinstance(doc, dict) else {}).get("tlogEntries")
    if not isinstance(entries, list):
        return
    for i, entry in enumerate(entries):
        raw = entry.get("integratedTime") if isinstance(entry, dict) else None
        if isinstance(raw, bool) or not isinstance(raw, (int, str)):
            continue
        try:
            seconds = int(raw)
        except ValueError:
            continue
        if seconds > 0:
            integrated_time_utc(seconds, path=f"$.verificationMaterial.tlogEntries[{i}].integratedTime")


# --- parsing ------------------------------------------------------------------------------------------


class InclusionProof(Record):
    log_index: int
    root_hash: bytes
    tree_size: int
    hashes: tuple[bytes, ...]
    #: The signed note, exactly as in the bundle; ``None`` when absent (then the root is unauthenticated
    #: and ``verify_checkpoint`` fails: sigstore-python likewise requires it).
    checkpoint: str | None


class LogEntry(Record):
    """One ``TransparencyLogEntry`` (sigstore protobuf-specs ``dev.sigstore.rekor.v1``)."""

    _no_repr = frozenset({"canonicalized_body"})

    log_index: int
    log_id: bytes
    kind: str
    version: str
    #: Seconds since the epoch; ``None`` when absent or 0 (Rekor v2 entries carry no integrated time).
    integrated_time: int | None
    canonicalized_body: bytes
    inclusion_promise: bytes | None
    inclusion_proof: InclusionProof | None
    #: JSON path of the entry in its bundle, for messages.
    path: str = "$"

    @classmethod
    def from_json(cls, obj: Any, *, path: str = "$") -> LogEntry:
        """Parse strictly: unknown keys, wrong types and bad base64 raise ``BundleError`` with a path."""
        where = _Where(path)
        d = where.obj(obj, (), _ENTRY_KEYS)
        log_index = where.uint(d, ("logIndex",), required=True)
        log_id_obj = where.obj(where.get(d, ("logId",), required=True), ("logId",), {"keyId"})
        log_id = where.b64(log_id_obj, ("logId", "keyId"), required=True)
        kv = where.obj(
            where.get(d, ("kindVersion",), required=True), ("kindVersion",), {"kind", "version"}
        )
        kind = where.string(kv, ("kindVersion", "kind"))
        version = where.string(kv, ("kindVersion", "version"))
        integrated = where.uint(d, ("integratedTime",), required=False)
        body = where.b64(d, ("canonicalizedBody",), required=True)
        # protobuf's JSON mapping reads null as the field's default: absent. npm's 2023 v0.1 bundles
        # write ``"inclusionProof": null`` (an entry with only its inclusion promise).
        promise: bytes | None = None
        if d.get("inclusionPromise") is not None:
            p = where.obj(d["inclusionPromise"], ("inclusionPromise",), {"signedEntryTimestamp"})
            promise = where.b64(p, ("inclusionPromise", "signedEntryTimestamp"), required=True)
        proof: InclusionProof | None = None
        if d.get("inclusionProof") is not None:
            proof = where.proof(d["inclusionProof"])
        return cls(
            log_index=assert_int(log_index),
            log_id=log_id or b"",
            kind=kind,
            version=version,
            integrated_time=integrated or None,
            canonicalized_body=body or b"",
            inclusion_promise=promise,
            inclusion_proof=proof,
            path=path,
        )


def assert_int(value: int | None) -> int:
    # Narrowing helper for mypy; a required uint was already checked present.
    if value is None:  # pragma: no cover - unreachable: required fields raise first
        raise BundleError("missing integer")
    return value


class _Where:
    """Typed accessors that raise ``BundleError`` carrying the JSON path of the offending value."""

    def __init__(self, base: str) -> None:
        self.base = base

    def path(self, parts: tuple[str | int, ...]) -> str:
        return join_path(self.base, *parts)

    def fail(self, parts: tuple[str | int, ...], message: str) -> BundleError:
        return BundleError(message, path=self.path(parts))

    def obj(self, value: Any, parts: tuple[str | int, ...], allowed: set[str]) -> dict[str, Any]:
        return expect_object(value, self.path(parts), allowed=allowed, error=BundleError)

    def get(self, d: dict[str, Any], parts: tuple[str | int, ...], *, required: bool) -> Any:
        return get_field(d, str(parts[-1]), object, path=self.path(parts[:-1]), required=required,
                         error=BundleError)

    def string(self, d: dict[str, Any], parts: tuple[str | int, ...]) -> str:
        return get_field(d, str(parts[-1]), str, path=self.path(parts[:-1]), nonempty=True,
                         error=BundleError)

    def uint(self, d: dict[str, Any], parts: tuple[str | int, ...], *, required: bool) -> int | None:
        v = self.get(d, parts, required=required)
        return None if v is None and not required else self.uint_value(v, parts)

    def uint_value(self, v: Any, parts: tuple[str | int, ...]) -> int:
        # protobuf JSON writes 64-bit integers as decimal strings; numbers are accepted too.
        if isinstance(v, bool):
            raise self.fail(parts, f"expected a non-negative integer, got {v!r}")
        if isinstance(v, str):
            if not re.fullmatch(r"0|[1-9][0-9]{0,18}", v):
                raise self.fail(parts, f"expected a non-negative decimal integer, got {v!r:.60}")
            n = int(v)
        elif isinstance(v, int):
            n = v
        else:
            raise self.fail(parts, f"expected a non-negative integer, got {type(v).__name__}")
        if n < 0 or n > _MAX_INT64:
            raise self.fail(parts, f"integer {n} is out of range 0..{_MAX_INT64}")
        return n

    def b64(self, d: dict[str, Any], parts: tuple[str | int, ...], *, required: bool) -> bytes | None:
        v = self.get(d, parts, required=required)
        return None if v is None and not required else self.b64_value(v, parts)

    def b64_value(self, v: Any, parts: tuple[str | int, ...]) -> bytes:
        # Standard alphabet with padding, as protobuf JSON writes bytes (docs/sigstore.md).
        return b64_bytes(v, self.path(parts), error=BundleError)

    def proof(self, value: Any) -> InclusionProof:
        base: tuple[str | int, ...] = ("inclusionProof",)
        p = self.obj(value, base, _PROOF_KEYS)
        log_index = self.uint_value(self.get(p, base + ("logIndex",), required=True), base + ("logIndex",))
        tree_size = self.uint_value(self.get(p, base + ("treeSize",), required=True), base + ("treeSize",))
        root = self.b64_value(self.get(p, base + ("rootHash",), required=True), base + ("rootHash",))
        if len(root) != 32:
            raise self.fail(base + ("rootHash",), f"expected 32 bytes (sha256), got {len(root)}")
        raw_hashes = self.get(p, base + ("hashes",), required=False)
        if raw_hashes is None:
            raw_hashes = []
        if not isinstance(raw_hashes, list):
            raise self.fail(base + ("hashes",), "expected a list of base64 hashes")
        if len(raw_hashes) > _MAX_PROOF_HASHES:
            raise self.fail(
                base + ("hashes",), f"{len(raw_hashes)} hashes, more than {_MAX_PROOF_HASHES}"
            )
        hashes_: list[bytes] = []
        for i, h in enumerate(raw_hashes):
            hb = self.b64_value(h, base + ("hashes", i))
            if len(hb) != 32:
                raise self.fail(base + ("hashes", i), f"expected 32 bytes (sha256), got {len(hb)}")
            hashes_.append(hb)
        cp = self.get(p, base + ("checkpoint",), required=False)
        envelope: str | None = None
        if cp is not None:
            cpd = self.obj(cp, base + ("checkpoint",), {"envelope"})
            envelope = self.string(cpd, base + ("checkpoint", "envelope"))
        return InclusionProof(
            log_index=log_index,
            root_hash=root,
            tree_size=tree_size,
            hashes=tuple(hashes_),
            checkpoint=envelope,
        )


# --- RFC 6962 Merkle inclusion ----------------------------------------------------------------------


def leaf_hash(body: bytes) -> bytes:
    """RFC 6962 §2.1: MTH({d}) = SHA-256(0x00 ‖ d)."""
    return hashlib.sha256(_LEAF_PREFIX + body).digest()


def _node(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(_NODE_PREFIX + left + right).digest()


def root_from_inclusion_proof(index: int, size: int, leaf: bytes, proof: tuple[bytes, ...]) -> bytes:
    """RFC 9162 §2.1.3.2: recompute the root from a leaf hash and its audit path (bottom-up).

    Raises ``TlogVerificationError`` when the index is outside the tree or the path has the wrong length.
    """
    if index >= size:
        raise TlogVerificationError(
            f"inclusion proof leaf index {index} is not inside a tree of size {size}",
            check="tlog.inclusion_proof",
            expected=f"index < {size}",
            actual=index,
        )
    fn, sn = index, size - 1
    r = leaf
    for p in proof:
        if sn == 0:
            raise TlogVerificationError(
                f"inclusion proof has too many hashes for leaf {index} of {size}: got {len(proof)}",
                check="tlog.inclusion_proof",
                actual=len(proof),
            )
        if fn & 1 or fn == sn:
            r = _node(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            r = _node(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise TlogVerificationError(
            f"inclusion proof has too few hashes for leaf {index} of {size}: got {len(proof)}",
            check="tlog.inclusion_proof",
            actual=len(proof),
        )
    return r


def verify_inclusion_proof(entry: LogEntry) -> None:
    """The entry's body is leaf ``proof.log_index`` of a tree whose root is ``proof.root_hash``."""
    proof = entry.inclusion_proof
    if proof is None:
        raise TlogVerificationError(
            "log entry has no inclusion proof", check="tlog.inclusion_proof", expected="a proof"
        )
    computed = root_from_inclusion_proof(
        proof.log_index, proof.tree_size, leaf_hash(entry.canonicalized_body), proof.hashes
    )
    if not hmac.compare_digest(computed, proof.root_hash):
        raise TlogVerificationError(
            f"inclusion proof root sha256 mismatch: expected {proof.root_hash.hex()} (proof rootHash), "
            f"computed {computed.hex()}",
            check="tlog.inclusion_proof",
            expected=proof.root_hash.hex(),
            actual=computed.hex(),
        )


# --- checkpoint (signed note) ----------------------------------------------------------------------


class Checkpoint(Record):
    origin: str
    tree_size: int
    root_hash: bytes
    extra: tuple[str, ...]
    #: The signed text: the note body including its final newline (the signature covers exactly this).
    note: bytes
    #: (key name, key hint, signature) per signature line.
    signatures: tuple[tuple[str, bytes, bytes], ...]


def _cp_fail(message: str, **kw: Any) -> TlogVerificationError:
    return TlogVerificationError(f"checkpoint: {message}", check="tlog.checkpoint", **kw)


def parse_checkpoint(text: str) -> Checkpoint:
    """Split a signed note into its body and signature lines (transparency-dev note format)."""
    if text.count("\n\n") != 1:
        raise _cp_fail(
            "malformed signed note: expected exactly one blank line between text and signatures, "
            f"found {text.count(chr(10) * 2)}"
        )
    split = text.index("\n\n")
    body, sigblock = text[: split + 1], text[split + 2 :]
    if not sigblock.endswith("\n"):
        raise _cp_fail("malformed signed note: signature block does not end with a newline")
    sigs: list[tuple[str, bytes, bytes]] = []
    for line in sigblock[:-1].split("\n"):
        m = _SIG_LINE.fullmatch(line)
        if m is None:
            raise _cp_fail(f"malformed signature line {line[:80]!r} (expected '\u2014 NAME BASE64')")
        try:
            raw = base64.b64decode(m.group(2), validate=True)
        except (binascii.Error, ValueError) as err:
            raise _cp_fail(f"signature of {m.group(1)!r} is not valid base64") from err
        if len(raw) < 5:
            raise _cp_fail(f"signature of {m.group(1)!r} is {len(raw)} bytes, too short")
        sigs.append((m.group(1), raw[:4], raw[4:]))
    lines = body[:-1].split("\n")
    if len(lines) < 3:
        raise _cp_fail(f"note has {len(lines)} lines, expected origin, size and root hash")
    origin = lines[0]
    if not origin:
        raise _cp_fail("note has an empty origin line")
    if not re.fullmatch(r"0|[1-9][0-9]{0,18}", lines[1]):
        raise _cp_fail(f"tree size {lines[1][:40]!r} is not a decimal integer")
    try:
        root = base64.b64decode(lines[2], validate=True)
    except (binascii.Error, ValueError) as err:
        raise _cp_fail(f"root hash {lines[2][:60]!r} is not valid base64") from err
    return Checkpoint(
        origin=origin,
        tree_size=int(lines[1]),
        root_hash=root,
        extra=tuple(lines[3:]),
        note=body.encode("utf-8"),
        signatures=tuple(sigs),
    )


def _verify_log_signature(key: object, signature: bytes, data: bytes) -> bool:
    """A log's signature: ECDSA with the hash matching the curve (Rekor v1 uses P-256/SHA-256), Ed25519
    (Rekor v2), or RSA PKCS#1 v1.5 with SHA-256 (``algorithms.LOG_SCHEMES``)."""
    return verify_signature(key, signature, data, LOG_SCHEMES) is not None


def find_log_key(entry: LogEntry, trust_root: TrustRoot) -> LogKey:
    """The trusted root's log whose ``logId.keyId`` equals the entry's ``logId``.

    Unlike sigstore-python's keyring (which falls back to trying every key when the id is unknown),
    the id must match: an entry claiming a log we do not trust is refused, by name.
    """
    for lk in trust_root.tlogs:
        if hmac.compare_digest(lk.key_id, entry.log_id):
            return lk
    known = ", ".join(f"{lk.base_url} ({lk.key_id.hex()[:16]}…)" for lk in trust_root.tlogs) or "none"
    raise TlogVerificationError(
        f"log {entry.log_id.hex()} is not a transparency log of the trusted root {trust_root.name} "
        f"(its logs: {known})",
        check="tlog.key",
        expected=[lk.key_id.hex() for lk in trust_root.tlogs],
        actual=entry.log_id.hex(),
    )


def verify_checkpoint(entry: LogEntry, trust_root: TrustRoot) -> None:
    """The proof's checkpoint is signed by the entry's log and commits to the proof's root and size."""
    proof = entry.inclusion_proof
    if proof is None:
        raise _cp_fail("log entry has no inclusion proof, so no checkpoint", expected="a checkpoint")
    if proof.checkpoint is None:
        raise _cp_fail(
            "inclusion proof has no checkpoint, so its root hash is not signed by the log",
            expected="a signed checkpoint",
            actual=None,
        )
    log = find_log_key(entry, trust_root)
    cp = parse_checkpoint(proof.checkpoint)
    hint = entry.log_id[:4]
    candidates = [s for s in cp.signatures if hmac.compare_digest(s[1], hint)]
    if not candidates:
        found = ", ".join(f"{name}:{h.hex()}" for name, h, _ in cp.signatures)
        raise _cp_fail(
            f"no signature with key hint {hint.hex()} (first 4 bytes of logId); found {found}",
            expected=hint.hex(),
            actual=[h.hex() for _, h, _ in cp.signatures],
        )
    if not any(_verify_log_signature(log.public_key, sig, cp.note) for _, _, sig in candidates):
        raise _cp_fail(
            f"signature by key hint {hint.hex()} does not verify with the {log.base_url} log key "
            f"{log.key_id.hex()}",
            expected=f"valid signature by {log.key_id.hex()}",
            actual="invalid signature",
        )
    if not hmac.compare_digest(cp.root_hash, proof.root_hash):
        raise _cp_fail(
            f"root hash mismatch: expected {cp.root_hash.hex()} (signed checkpoint), "
            f"got {proof.root_hash.hex()} (inclusion proof rootHash)",
            expected=cp.root_hash.hex(),
            actual=proof.root_hash.hex(),
        )
    if cp.tree_size != proof.tree_size:
        raise _cp_fail(
            f"tree size mismatch: expected {cp.tree_size} (signed checkpoint), "
            f"got {proof.tree_size} (inclusion proof treeSize)",
            expected=cp.tree_size,
            actual=proof.tree_size,
        )


# --- inclusion promise (SET) -----------------------------------------------------------------------


def set_payload(entry: LogEntry) -> bytes:
    """RFC 8785 canonical JSON of the SET payload (what Rekor v1 signs; sigstore ``_encode_canonical``).

    The shape is fixed: four keys already in RFC 8785 order (UTF-16 code unit order equals ASCII order
    here), two integers and two ASCII strings (base64 and hex need no escaping), so ``canonical_json``
    (sorted keys, no whitespace, ASCII) produces exactly the RFC 8785 form. A test pins this against
    the ``rfc8785`` package.
    """
    payload = {
        "body": base64.b64encode(entry.canonicalized_body).decode("ascii"),
        "integratedTime": _integrated_time(entry, ", so its inclusion promise cannot be checked", "tlog.set"),
        "logID": entry.log_id.hex(),
        "logIndex": entry.log_index,
    }
    return canonical_json(payload)


def _integrated_time(entry: LogEntry, consequence: str, check: str) -> int:
    """The entry's integratedTime; an entry without one (Rekor v2) fails ``check``, saying what it costs."""
    if entry.integrated_time is None:
        raise TlogVerificationError(f"log entry has no integratedTime{consequence}", check=check,
                                    expected="integratedTime", actual=None)
    return entry.integrated_time


def verify_set(entry: LogEntry, trust_root: TrustRoot) -> None:
    """The inclusion promise is the entry's log's signature over the canonical payload."""
    if entry.inclusion_promise is None:
        raise TlogVerificationError(
            "log entry has no inclusion promise (SET)", check="tlog.set", expected="a SET"
        )
    log = find_log_key(entry, trust_root)
    if not _verify_log_signature(log.public_key, entry.inclusion_promise, set_payload(entry)):
        raise TlogVerificationError(
            f"inclusion promise (SET) does not verify with the {log.base_url} log key "
            f"{log.key_id.hex()} over logIndex {entry.log_index}, integratedTime "
            f"{entry.integrated_time}, body sha256 {hashlib.sha256(entry.canonicalized_body).hexdigest()}",
            check="tlog.set",
            expected=f"valid signature by {log.key_id.hex()}",
            actual="invalid signature",
        )


# --- the whole entry --------------------------------------------------------------------------------


class EntryResult(Record):
    """What was proven about one entry. Not truthy on purpose: read the fields."""

    proof: bool
    promise: bool
    integrated_time: datetime
    log_url: str
    log_id: bytes
    log_index: int
    checks: tuple[Check, ...]

    def __bool__(self) -> bool:  # pragma: no cover - guard against `if result:`
        raise TypeError("EntryResult has no truth value; read .proof / .promise")


def verify_entry(
    entry: LogEntry,
    trust_root: TrustRoot,
    *,
    require_proof: bool,
    now: datetime | None = None,
    evidence: str | None = None,
) -> EntryResult:
    """Run every check on one Rekor v1 entry, in order; the first failure raises.

    (1) the log is in the trusted root; (2) the entry has an integrated time, not in the future, at
    which the log key was valid; (3) inclusion proof and (4) its checkpoint, when present (required
    when ``require_proof``: v0.2+ bundles); (5) the SET, when present; (6) at least one of them.
    """
    checks: list[Check] = []
    # (1)
    log = find_log_key(entry, trust_root)
    checks.append(
        Check("tlog.key", "pass", f"log {log.base_url} is in the trusted root",
              expected=trust_root.name, actual=log.key_id.hex(), evidence=evidence)
    )
    # (2) Rekor v1 entries always carry integratedTime; without it (Rekor v2) the time must come from
    # a timestamp authority, which this module does not verify.
    integrated = _integrated_time(entry, " (a Rekor v2 entry?); only Rekor v1 entries are supported",
                                  "tlog.entry")
    when = integrated_time_utc(integrated, path=f"{entry.path}.integratedTime")
    current = now or datetime.now(UTC)
    if when > current + MAX_FUTURE_SKEW:
        raise TlogVerificationError(
            f"integratedTime {when.isoformat()} is in the future (now {current.isoformat()}, "
            f"allowed skew {int(MAX_FUTURE_SKEW.total_seconds())} s)",
            check="tlog.time",
            expected=f"<= {(current + MAX_FUTURE_SKEW).isoformat()}",
            actual=when.isoformat(),
        )
    if not log.valid_at(when):
        window = (
            f"{log.valid_from.isoformat() if log.valid_from else '-inf'}.."
            f"{log.valid_until.isoformat() if log.valid_until else '+inf'}"
        )
        raise TlogVerificationError(
            f"log key {log.key_id.hex()} ({log.base_url}) was not valid at integratedTime "
            f"{when.isoformat()}: validity {window}",
            check="tlog.key",
            expected=window,
            actual=when.isoformat(),
        )
    # (3)+(4)
    if entry.inclusion_proof is not None:
        verify_inclusion_proof(entry)
        checks.append(
            Check("tlog.inclusion_proof", "pass",
                  f"leaf {entry.inclusion_proof.log_index} of {entry.inclusion_proof.tree_size}",
                  expected=entry.inclusion_proof.root_hash.hex(),
                  actual=entry.inclusion_proof.root_hash.hex(), evidence=evidence)
        )
        verify_checkpoint(entry, trust_root)
        checks.append(
            Check("tlog.checkpoint", "pass", f"signed by {log.base_url}",
                  expected=log.key_id.hex(), actual=log.key_id.hex(), evidence=evidence)
        )
    elif require_proof:
        raise TlogVerificationError(
            "log entry has no inclusion proof (required for this bundle version)",
            check="tlog.inclusion_proof",
            expected="inclusion proof",
            actual=None,
        )
    # (5)
    if entry.inclusion_promise is not None:
        verify_set(entry, trust_root)
        checks.append(
            Check("tlog.set", "pass", f"signed by {log.base_url}",
                  expected=log.key_id.hex(), actual=log.key_id.hex(), evidence=evidence)
        )
    # (6)
    if entry.inclusion_proof is None and entry.inclusion_promise is None:
        raise TlogVerificationError(
            "log entry has neither an inclusion proof nor an inclusion promise",
            check="tlog.entry",
            expected="inclusion proof or SET",
            actual=None,
        )
    return EntryResult(
        proof=entry.inclusion_proof is not None,
        promise=entry.inclusion_promise is not None,
        integrated_time=when,
        log_url=log.base_url,
        log_id=entry.log_id,
        log_index=entry.log_index,
        checks=tuple(checks),
    )


__all__ = [
    "MAX_FUTURE_SKEW",
    "Checkpoint",
    "EntryResult",
    "InclusionProof",
    "LogEntry",
    "TlogVerificationError",
    "check_integrated_times",
    "find_log_key",
    "integrated_time_utc",
    "leaf_hash",
    "parse_checkpoint",
    "root_from_inclusion_proof",
    "set_payload",
    "verify_checkpoint",
    "verify_entry",
    "verify_inclusion_proof",
    "verify_set",
]
