"""Sigstore trusted roots: the embedded public-good and staging roots, or any ``trusted_root.json``.

The default root is read from the installed sigstore package's own data files (the copy it embeds to
seed its TUF cache), never from the user's TUF cache, so a stale or planted cache cannot win and no
network is used (principle 5, docs/trust-roots.md).

This module gives two views of one file: sigstore-python's ``TrustedRoot`` (for its ``Verifier``) and our
own parsed keys and CA certificates (for the verification code we own: key bundles, legacy bundles).

Choosing a root needs only its bytes and their digest (policy/constraints.py compares digests; the
verdict cache is keyed by it), so a root can be read *deferred* (``from_bytes(..., deferred=True)``):
the JSON, its media type, keys and certificates are checked by ``check()`` (until then its key and
CA tuples are empty), which ``evaluate`` and ``sigstore_trusted_root`` call before verifying anything, and neither cryptography nor sigstore is imported by a
warm admission that reuses a trust report. A root that fails those checks never produced a cached
report under its digest, so a cache hit cannot stand on a broken root.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import os
from functools import lru_cache
from typing import TYPE_CHECKING

from atip_trust._base.files import open_regular, read_fd_capped
from atip_trust._base.jsonio import parse_json
from atip_trust._base.lazy import lazy_import
from atip_trust._base.limits import LIMITS
from atip_trust._base.record import Record
from atip_trust._base.statmemo import Ident, ident_of, memo_get, memo_put, regular_ident
from atip_trust.errors import AtipTrustError, InputTooLargeError, TrustRootError

if TYPE_CHECKING:
    import base64
    import binascii
    import datetime
    import pathlib
    from importlib import util
    from typing import Any

    import sigstore
    from cryptography import exceptions, x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.types import PublicKeyTypes
    from sigstore import errors, models
    from sigstore_models.trustroot import v1
else:
    base64 = lazy_import("base64")  # only for a root's keys and certificates, never on a cache hit
    binascii = lazy_import("binascii")  # (with base64)
    datetime = lazy_import("datetime")  # only when a root's validity periods are read
    util = lazy_import("importlib.util")  # only for a sigstore package no path finder provides
    pathlib = lazy_import("pathlib")  # only for from_path callers that pass text
    # Cryptography, sigstore-python and its models: only when a root's keys are read or sigstore
    # verifies (keyless), never by a warm admission.
    exceptions = lazy_import("cryptography.exceptions")
    serialization = lazy_import("cryptography.hazmat.primitives.serialization")
    x509 = lazy_import("cryptography.x509")
    sigstore = lazy_import("sigstore")
    errors = lazy_import("sigstore.errors")
    models = lazy_import("sigstore.models")
    v1 = lazy_import("sigstore_models.trustroot.v1")

#: Folder names inside the sigstore package's ``_store`` data directory (TUF repository URLs).
_EMBEDDED = {
    "production": "https%3A%2F%2Ftuf-repo-cdn.sigstore.dev",
    "staging": "https%3A%2F%2Ftuf-repo-cdn.sigstage.dev",
}


class LogKey(Record):
    """A transparency log (Rekor) or CT log public key from the trusted root."""

    key_id: bytes
    public_key: PublicKeyTypes
    base_url: str
    valid_from: datetime.datetime | None
    valid_until: datetime.datetime | None

    def valid_at(self, when: datetime.datetime) -> bool:
        if self.valid_from is not None and when < self.valid_from:
            return False
        if self.valid_until is not None and when > self.valid_until:
            return False
        return True


class CertificateAuthority(Record):
    """A Fulcio (or TSA) CA: its chain, leaf-most first as in the file, and validity window."""

    uri: str
    chain: tuple[x509.Certificate, ...]
    valid_from: datetime.datetime | None
    valid_until: datetime.datetime | None


def _ts(value: Any) -> datetime.datetime | None:
    if value is None:
        return None
    try:
        return datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00")).astimezone(datetime.UTC)
    except ValueError as err:
        raise TrustRootError(f"bad timestamp {value!r} in trusted root") from err


def _first_line(err: Exception) -> str:
    return str(err).split(". See https://", 1)[0].splitlines()[0] if str(err) else type(err).__name__


def _b64(value: Any, where: str) -> bytes:
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError) as err:
        raise TrustRootError(f"{where} is not standard base64") from err


def _log_keys(entries: Any, where: str) -> tuple[LogKey, ...]:
    keys: list[LogKey] = []
    for i, tl in enumerate(entries or []):
        pk = tl.get("publicKey") or {}
        raw = _b64(pk.get("rawBytes", ""), f"{where}[{i}].publicKey.rawBytes")
        try:
            key = serialization.load_der_public_key(raw)
        except (ValueError, TypeError, exceptions.UnsupportedAlgorithm) as err:
            # An algorithm or curve cryptography does not implement is this key's refusal, named,
            # not an internal error (cryptography raises UnsupportedAlgorithm outside ValueError).
            raise TrustRootError(f"{where}[{i}] public key refused: {_first_line(err)} (supported: ECDSA "
                                 "P-256/P-384/P-521, Ed25519, RSA)") from err
        valid = pk.get("validFor") or {}
        keys.append(
            LogKey(
                key_id=_b64((tl.get("logId") or {}).get("keyId", ""), f"{where}[{i}].logId.keyId"),
                public_key=key,
                base_url=str(tl.get("baseUrl", "")),
                valid_from=_ts(valid.get("start")),
                valid_until=_ts(valid.get("end")),
            )
        )
    return tuple(keys)


def _cas(entries: Any, where: str) -> tuple[CertificateAuthority, ...]:
    cas: list[CertificateAuthority] = []
    for i, ca in enumerate(entries or []):
        certs = []
        for j, c in enumerate(((ca.get("certChain") or {}).get("certificates")) or []):
            der = _b64(c.get("rawBytes", ""), f"{where}[{i}].certChain.certificates[{j}]")
            try:
                cert = x509.load_der_x509_certificate(der)
                cert.public_key()  # a key of an algorithm cryptography lacks: refused here, named
            except (ValueError, exceptions.UnsupportedAlgorithm) as err:
                raise TrustRootError(f"{where}[{i}] certificate {j} refused: {_first_line(err)}") from err
            certs.append(cert)
        valid = ca.get("validFor") or {}
        cas.append(
            CertificateAuthority(
                uri=str(ca.get("uri", "")),
                chain=tuple(certs),
                valid_from=_ts(valid.get("start")),
                valid_until=_ts(valid.get("end")),
            )
        )
    return tuple(cas)


#: Parsed roots by digest (keys, CAs: immutable), so a process that admits many tools parses its root
#: once. Bounded; a root that fails its checks is never kept.
_PARSED: dict[str, dict[str, Any]] = {}
_MAX_PARSED = 8


@lru_cache(maxsize=_MAX_PARSED)
def _digest_of(raw: bytes) -> str:
    # By the bytes (a bytes object keeps its own hash once computed): a root reused for many
    # admissions is hashed once, as the cached property of a dataclass did.
    return "sha256:" + hashlib.sha256(raw).hexdigest()


class TrustRoot(Record):
    """One trusted root file, read once; its keys and certificates parsed once: at once, or on first
    ``check()`` when ``deferred`` (module docstring; until then the four tuples are empty)."""

    _no_repr = frozenset({"raw"})
    #: The file path or given name; for an embedded root, ``production`` or ``staging``.
    label: str
    raw: bytes
    #: True for a root shipped inside the installed sigstore package.
    embedded_root: bool = False
    tlogs: tuple[LogKey, ...] = ()
    ctlogs: tuple[LogKey, ...] = ()
    fulcio: tuple[CertificateAuthority, ...] = ()
    tsas: tuple[CertificateAuthority, ...] = ()
    #: True once the file was parsed and checked (the four tuples above are its contents).
    checked: bool = False
    #: Whether a bundle must carry a transparency log entry; None: as ``requires_tlog`` infers it.
    tlog_required: bool | None = None
    #: A ``trusted_root.jsonl`` (gh's format, one root per line): its roots, each chosen per bundle by
    #: ``choose`` (the four tuples above then stay empty: no verification ever sees a union of roots).
    members: tuple[TrustRoot, ...] = ()

    @property
    def requires_tlog(self) -> bool:
        """Whether bundles verified with this root must carry a transparency log entry. Stated by the
        policy (``trust.requireTransparencyLog``, ``with_tlog_requirement``), else inferred as gh does
        for a custom root (``newCustomVerifier``: ``WithTransparencyLog`` only when the root lists log
        instances): required by the embedded roots and by any root that lists a log; a root without
        log instances (GitHub's instance) can only vouch through its TSAs."""
        if self.tlog_required is not None:
            return self.tlog_required
        return self.embedded_root or bool(self.check().tlogs)

    @property
    def newest_start(self) -> datetime.datetime | None:
        """The latest ``validFor.start`` of any key or CA in the root (of any member of a ``.jsonl``):
        the root cannot have been written before it, so ``now - newest_start`` never understates how
        old the root is (policy ``trust.rootMaxAge`` for a root no TUF update has vouched for)."""
        root = self.check()
        starts = [x.valid_from for group in (root.tlogs, root.ctlogs, root.fulcio, root.tsas)
                  for x in group if x.valid_from is not None]
        starts += [w for m in root.members if (w := m.newest_start) is not None]
        return max(starts) if starts else None

    def with_tlog_requirement(self, required: bool | None) -> TrustRoot:
        """This root (same bytes, same parse) with the log requirement the policy states; itself when
        the policy is silent. A new object: roots are shared by every evaluation of the process."""
        if required is None or required == self.tlog_required:
            return self
        if not self.checked:  # deferred stays deferred: check() refills from the parsed cache
            return TrustRoot(self.label, self.raw, self.embedded_root, tlog_required=required)
        root = self
        return TrustRoot(root.label, root.raw, root.embedded_root, root.tlogs, root.ctlogs, root.fulcio,
                         root.tsas, True, required,
                         tuple(m.with_tlog_requirement(required) for m in root.members))

    def choose(self, leaf: x509.Certificate | None, log_ids: tuple[bytes, ...] = ()) -> TrustRoot:
        """The root to verify one bundle with: this root itself, or for a ``.jsonl`` the one member
        whose Fulcio CA issued ``leaf`` (its issuer name is a CA certificate's subject, and the leaf's
        authority key id that certificate's key id when both state one), or for a bundle without a
        certificate the one member that lists the bundle's log (``log_ids``). As gh chooses among the
        roots of ``trusted_root.jsonl`` (by the issuing CA), but refused when two roots claim the
        bundle instead of taking the first: two instances must not be able to vouch for one bundle.
        Only a choice: the chosen root then verifies everything. ``RootChoiceError`` when no member or
        more than one fits."""
        root = self.check()
        if not root.members:
            return root
        if leaf is not None:
            fits = [m for m in root.members if any(_issued_by(leaf, c) for ca in m.fulcio for c in ca.chain)]
            what = f"the CA that issued the signing certificate ({_issuer_text(leaf)})"
        else:
            fits = [m for m in root.members if any(t.key_id in log_ids for t in m.tlogs)]
            what = f"the transparency log of the bundle ({', '.join(i.hex() for i in log_ids) or 'none'})"
        if len(fits) == 1:
            return fits[0]
        if not fits:
            raise RootChoiceError(f"no trusted root in {root.name} has {what}",
                                  expected=[m.name for m in root.members], actual=None)
        raise RootChoiceError(f"{len(fits)} trusted roots in {root.name} claim {what}: refused, one "
                              "instance must vouch for a bundle", expected="exactly one root",
                              actual=[m.name for m in fits])

    # One object, one root: equal only to itself, hashed by identity (a root is compared by digest).
    __eq__ = object.__eq__
    __hash__ = object.__hash__

    @property
    def name(self) -> str:
        """Human name used in messages: ``production (embedded in sigstore 4.5.1)`` or the file path."""
        if self.embedded_root:
            return f"{self.label} (embedded in sigstore {sigstore.__version__})"
        return self.label

    @property
    def digest(self) -> str:
        return _digest_of(self.raw)

    def check(self) -> TrustRoot:
        """Parse and check the file now if that was deferred (``TrustRootError``); the root itself.
        Two threads that race here parse the same bytes and store equal values. The same bytes are
        parsed once per process (``_PARSED``, by digest)."""
        if self.checked:
            return self
        known = _PARSED.get(self.digest)
        if known is not None:
            self._fill(known)
            return self
        name = self.name
        lines = _jsonl_lines(self.raw)
        if lines is not None:
            self._fill({"tlogs": (), "ctlogs": (), "fulcio": (), "tsas": (),
                        "members": _members(lines, name, self.tlog_required)})
            return self
        try:
            doc = parse_json(self.raw, what="trusted root", max_depth=LIMITS.json_depth)
        except AtipTrustError as err:
            raise TrustRootError(f"trusted root {name}: {err.diagnostics()}") from err
        if not isinstance(doc, dict):
            raise TrustRootError(f"trusted root {name} is not a JSON object")
        media = doc.get("mediaType")
        if media != "application/vnd.dev.sigstore.trustedroot+json;version=0.1":
            raise TrustRootError(
                f"trusted root {name}: unsupported mediaType {media!r} "
                "(expected application/vnd.dev.sigstore.trustedroot+json;version=0.1)"
            )
        try:
            parts = {
                "tlogs": _log_keys(doc.get("tlogs"), "tlogs"),
                "ctlogs": _log_keys(doc.get("ctlogs"), "ctlogs"),
                "fulcio": _cas(doc.get("certificateAuthorities"), "certificateAuthorities"),
                "tsas": _cas(doc.get("timestampAuthorities"), "timestampAuthorities"),
            }
        except (AttributeError, TypeError) as err:
            raise TrustRootError(f"trusted root {name} has an unexpected shape: {err}") from err
        if len(_PARSED) >= _MAX_PARSED:
            _PARSED.clear()
        _PARSED[self.digest] = parts
        self._fill(parts)
        return self

    def _fill(self, parts: dict[str, Any]) -> None:
        for key, value in parts.items():
            object.__setattr__(self, key, value)  # frozen: filled once, by the one owner of the bytes
        object.__setattr__(self, "checked", True)

    @classmethod
    def from_bytes(cls, raw: bytes, *, name: str, deferred: bool = False,
                   embedded: bool = False) -> TrustRoot:
        root = cls(label=name, raw=raw, embedded_root=embedded)
        return root if deferred else root.check()

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], *, deferred: bool = False) -> TrustRoot:
        """The root in ``path``; a file this process read before, with the same stat identity, is not
        read again (``_ROOT_FILES``)."""
        name = os.fspath(path)
        ident = regular_ident(name)
        root = memo_get(_ROOTS, name, ident)
        if root is None:
            raw = memo_get(_ROOT_FILES, name, ident)
            if raw is None:
                raw = _read_root(name)
            root = cls.from_bytes(raw, name=name, deferred=True)
            if ident is not None and memo_get(_ROOT_FILES, name, ident) is raw:  # these bytes, this identity
                memo_put(_ROOTS, name, ident, root, _MAX_PARSED)
        return root if deferred else root.check()

    @classmethod
    def embedded(cls, instance: str = "production", *, deferred: bool = False) -> TrustRoot:
        """The public-good (or staging) root shipped inside the installed sigstore package (found
        without importing it: a deferred root must not cost sigstore's import)."""
        folder = _EMBEDDED.get(instance)
        if folder is None:
            raise TrustRootError(f"no embedded trusted root named {instance!r}")
        try:
            file = _EMBEDDED_FILES.get(instance)
            if file is None:
                # sys.path's finder first (importlib.machinery: what a site-packages install is found
                # by, loaded with the interpreter); importlib.util (which imports contextlib) only for a
                # package another finder provides. docs/caching.md.
                spec = importlib.machinery.PathFinder.find_spec("sigstore") or util.find_spec("sigstore")
                locations = list(spec.submodule_search_locations or ()) if spec is not None else []
                if not locations:
                    raise FileNotFoundError("the sigstore package is not installed")
                file = os.path.join(locations[0], "_store", folder, "trusted_root.json")
            before = regular_ident(file)
            raw = memo_get(_ROOT_FILES, file, before)
            if raw is None:
                with open(file, "rb") as f:
                    raw = f.read()
                if before is not None and regular_ident(file) == before:
                    memo_put(_ROOT_FILES, file, before, raw, _MAX_PARSED)
        except OSError as err:
            raise TrustRootError(
                f"the {instance} trusted root is missing from the installed sigstore package: {err}"
            ) from err
        _EMBEDDED_FILES[instance] = file
        return cls.from_bytes(raw, name=instance, deferred=deferred, embedded=True)

    def sigstore_trusted_root(self) -> Any:
        """sigstore-python's ``TrustedRoot`` for the same bytes (built on each call; cache the Verifier)."""
        if self.check().members:
            raise TrustRootError(f"{self.name} holds {len(self.members)} trusted roots: one is chosen per "
                                 "bundle (TrustRoot.choose), never all at once")
        try:
            return models.TrustedRoot(v1.TrustedRoot.from_json(_closed_tsa_windows(_spec_defaults(self.raw))))
        except (errors.Error, ValueError, TypeError, KeyError) as err:
            raise TrustRootError(f"trusted root {self.name} rejected by sigstore: {err}") from err


class RootChoiceError(Exception):
    """No root, or more than one, of a ``trusted_root.jsonl`` fits a bundle (``TrustRoot.choose``): a
    failure of that bundle, reported as its ``certificate.chain`` check."""

    def __init__(self, message: str, *, expected: Any, actual: Any) -> None:
        super().__init__(message)
        self.message, self.expected, self.actual = message, expected, actual


#: At most this many roots in one ``trusted_root.jsonl`` (gh's holds two: public-good and GitHub's).
MAX_ROOTS_PER_FILE = 16


def _jsonl_lines(raw: bytes) -> list[bytes] | None:
    """The lines of a ``trusted_root.jsonl`` (gh ``attestation trusted-root`` writes one compact root
    per line), or None for a single root document (pretty-printed or not): a set has two or more
    non-empty lines, each a whole JSON object on its own."""
    lines = [ln.strip() for ln in raw.split(b"\n") if ln.strip()]
    if len(lines) < 2 or not all(ln.startswith(b"{") and ln.endswith(b"}") for ln in lines):
        return None
    return lines


def _members(lines: list[bytes], name: str, tlog_required: bool | None) -> tuple[TrustRoot, ...]:
    """Each line as its own root, parsed and checked (a bad line is the file's error, named by line);
    a root given twice (same bytes) counts once."""
    if len(lines) > MAX_ROOTS_PER_FILE:
        raise TrustRootError(f"trusted root {name} holds {len(lines)} roots, over the cap of "
                             f"{MAX_ROOTS_PER_FILE}")
    out: dict[str, TrustRoot] = {}
    for i, line in enumerate(lines, 1):
        member = TrustRoot(label=f"{name}#{i}", raw=line, tlog_required=tlog_required).check()
        out.setdefault(member.digest, member)
    return tuple(out.values())


def _issued_by(leaf: x509.Certificate, ca: x509.Certificate) -> bool:
    """Whether ``ca`` names the issuer of ``leaf`` (a choice among roots, not a verification)."""
    if leaf.issuer != ca.subject:
        return False
    try:
        aki = leaf.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value.key_identifier
        ski = ca.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value.digest
    except (x509.ExtensionNotFound, ValueError):
        return True  # no key ids to compare: the name decides
    return aki is None or aki == ski


def _issuer_text(leaf: x509.Certificate) -> str:
    try:
        return leaf.issuer.rfc4514_string()
    except ValueError:
        return "an unreadable issuer name"


#: Trusted-root files read by this process, by path and stat identity (_base/statmemo.py): a runtime
#: admitting a tool per call neither reads nor hashes an unchanged root again.
_ROOT_FILES: dict[str, tuple[Ident, bytes]] = {}
#: The TrustRoot objects made from those files, by the same path and identity: a runtime's per-call
#: admission builds none (a root is immutable once checked; ``check`` fills one from the same bytes).
_ROOTS: dict[str, tuple[Ident, TrustRoot]] = {}
#: Where the installed sigstore package keeps each embedded root (found once per process).
_EMBEDDED_FILES: dict[str, str] = {}


def _read_root(name: str) -> bytes:
    """``read_capped``'s checks and errors, and the identity of the file that was read."""
    cap = LIMITS.trusted_root_bytes
    try:
        fd, st = open_regular(name, what="trusted root")
        try:
            if st.st_size > cap:
                raise InputTooLargeError(
                    f"trusted root is {st.st_size} bytes, over the cap of {cap} bytes", path=name)
            raw = read_fd_capped(fd, cap, what="trusted root", path=name)
            try:
                unchanged = ident_of(os.fstat(fd)) == ident_of(st)
            except OSError:
                unchanged = False
        finally:
            os.close(fd)
    except AtipTrustError as err:
        raise TrustRootError(f"cannot read trusted root: {err.diagnostics()}") from err
    if unchanged:  # a file that changed while it was read is not remembered
        memo_put(_ROOT_FILES, name, ident_of(st), raw, _MAX_PARSED)
    return raw


#: Fields the protobuf-specs TrustedRoot allows to be absent (proto3: every field is optional; a
#: repeated field absent is empty) but sigstore-python 4.5.1's model (sigstore_models, pydantic)
#: requires. Each is filled with the proto3 default, and only where it carries no trust: the lists
#: (absent = empty) and a CA's or TSA's informational ``subject`` name (sigstore's own scaffolding
#: writes subjects without ``commonName``; verification reads the certificates, never this name).
_ABSENT_LISTS = ("tlogs", "ctlogs", "certificateAuthorities", "timestampAuthorities")
_SUBJECT_FIELDS = ("organization", "commonName")


def _spec_defaults(raw: bytes) -> bytes:
    """The same root with the proto3 defaults of ``_ABSENT_LISTS`` and CA/TSA subject names filled in,
    for sigstore-python's model only (the digest we report stays that of the file). Keys, certificates,
    validity windows, log ids and key details are never filled: a root missing one stays refused."""
    doc = json.loads(raw)  # already parsed under our caps by check(); this cannot fail here
    changed = False
    for name in _ABSENT_LISTS:
        if doc.get(name) is None:
            doc[name] = []
            changed = True
    for name in ("certificateAuthorities", "timestampAuthorities"):
        for ca in doc[name] if isinstance(doc[name], list) else ():
            if not isinstance(ca, dict):
                continue
            subject = ca.get("subject")
            if subject is None:
                subject = ca["subject"] = {}
            if isinstance(subject, dict):
                for field_name in _SUBJECT_FIELDS:
                    if subject.get(field_name) is None:
                        subject[field_name] = ""
                        changed = True
    return json.dumps(doc).encode() if changed else raw


def _closed_tsa_windows(raw: bytes) -> bytes:
    """The same root with each TSA ``validFor.end`` one microsecond later, for sigstore-python only.

    Why: protobuf-specs ``TimeRange`` is a closed interval ``[start, end]`` (sigstore-conformance
    ``trust-root-tsa-validity-end-inclusive``), but sigstore-python 4.5.1 accepts a TSA timestamp only
    when ``gen_time < end`` (``Verifier._verify_signed_timestamp``). Both times are datetimes with
    microsecond resolution, so ``gen_time < end + 1 µs`` is exactly ``gen_time <= end``: nothing after
    the real end is ever accepted. The digest we report stays that of the unmodified file. Every other
    window sigstore checks (log keys, CT keys, Fulcio CAs) is already compared as a closed interval.
    """
    doc = json.loads(raw)  # already parsed under our caps by from_bytes; this cannot fail here
    changed = False
    for tsa in doc.get("timestampAuthorities") or []:
        valid = tsa.get("validFor") if isinstance(tsa, dict) else None
        end = _ts(valid.get("end")) if isinstance(valid, dict) else None
        if end is not None and isinstance(valid, dict):
            later = end + datetime.timedelta(microseconds=1)  # datetime's resolution
            valid["end"] = later.isoformat(timespec="microseconds").replace("+00:00", "Z")
            changed = True
    return json.dumps(doc).encode() if changed else raw


def embedded_tuf_root(instance: str) -> bytes:
    """The TUF ``root.json`` the installed sigstore package embeds for ``instance`` (``production`` or
    ``staging``): where a first TUF update of that repository starts (state/tufroot.py)."""
    TrustRoot.embedded(instance, deferred=True)  # finds the package's files (or TrustRootError)
    path = os.path.join(os.path.dirname(_EMBEDDED_FILES[instance]), "root.json")
    try:
        with open(path, "rb") as f:
            return f.read(LIMITS.trusted_root_bytes * 8)
    except OSError as err:
        raise TrustRootError(f"the {instance} TUF root is missing from the installed sigstore package: "
                             f"{err}") from err


def default_trust_root(*, staging: bool = False, path: str | os.PathLike[str] | None = None,
                       deferred: bool = False) -> TrustRoot:
    """``--trusted-root FILE`` wins; else ``--staging``; else the embedded public-good root."""
    if path is not None:
        return TrustRoot.from_file(pathlib.Path(path), deferred=deferred)
    return TrustRoot.embedded("staging" if staging else "production", deferred=deferred)


__all__ = ["TrustRoot", "LogKey", "embedded_tuf_root", "CertificateAuthority", "RootChoiceError", "MAX_ROOTS_PER_FILE",
           "default_trust_root"]
