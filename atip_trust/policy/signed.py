"""Signed org policies (issue 25, docs/signed-policy.md): who may sign the org policy, the signature
beside it, and the rollback guard.

A machine requires its org policy to be signed by placing a signers file beside it,
``<policy>.signers.json`` (``{"publicKeys": ["keys/org.pub", ...], "identities": [{"identity": ...,
"issuer": ...}], "trustedRoot": "root.json"}``, paths relative to it), read with the same ownership and
mode checks as the org policy (root- or self-owned, not group/other-writable): the signers are named next
to the policy, never in it, so whoever can edit the policy cannot name themselves.

A key signs ``<policy>.sig.json``: a DSSE envelope (``signature/envelope.py``) whose payload is the
policy file's exact bytes, type ``application/vnd.atip-trust.policy+json`` (``policy sign --key``). A
Sigstore identity signs ``<policy>.sigstore.json``: a Sigstore bundle with a message signature over the
file's exact bytes (what ``policy sign --keyless`` and ``cosign sign-blob --new-bundle-format`` write), verified
by sigstore-python (``signature/keyless.py``) against the signers file's ``trustedRoot`` (a file, or
``production`` / ``staging``; absent: the embedded public-good root), its certificate matched against
``identities`` as ``trust.signers`` are. Either signature by a listed signer suffices; it is checked
before the policy is parsed or composed.

Rollback: a signed policy's ``serial`` (absent: 0) must not be lower than the highest serial this
machine accepted from that path (policy/serials.py: keyed by the logical path, so switching a link to an
older release is a rollback). Without a signers file nothing here applies, unless a signed policy was
accepted from that path before (policy/serials.py: once signed, always signed); a path never signed
stays as it was, protected by its file ownership alone.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import TYPE_CHECKING

from atip_trust._base.files import exists, read_capped, write_atomic
from atip_trust._base.jsonio import expect_object, parse_json
from atip_trust._base.limits import LIMITS
from atip_trust._base.record import Record
from atip_trust.errors import AtipTrustError, EnvironmentFailure, PolicyError
from atip_trust.facts.digest import Digest
from atip_trust.policy import serials
from atip_trust.policy.model import SignerRule
from atip_trust.policy.rules import signer_from_json
from atip_trust.policy.serials import SERIALS_ENV
from atip_trust.signature.bundle import load_bundles
from atip_trust.signature.envelope import envelope_signed_by, load_private_key, parse_envelope, sign_envelope
from atip_trust.signature.identity import IdentityRule
from atip_trust.signature.keyless import KeylessVerifier
from atip_trust.signature.keyless_sign import ambient_identity, sign_blob
from atip_trust.signature.keys import parse_public_key
from atip_trust.signature.trustroot import TrustRoot

if TYPE_CHECKING:
    from typing import Any

    from atip_trust.signature.keys import PublicKey


POLICY_PAYLOAD_TYPE = "application/vnd.atip-trust.policy+json"
SIGNERS_SUFFIX = ".signers.json"
SIGNATURE_SUFFIX = ".sig.json"
BUNDLE_SUFFIX = ".sigstore.json"


def signers_path(policy_path: str) -> str:
    return policy_path + SIGNERS_SUFFIX


def signature_path(policy_path: str) -> str:
    return policy_path + SIGNATURE_SUFFIX


def bundle_path(policy_path: str) -> str:
    """Where a keyless signature of the policy sits: a Sigstore bundle beside it."""
    return policy_path + BUNDLE_SUFFIX


def sign_policy(policy_path: str, key_path: str) -> str:
    """``policy sign FILE --key KEY``: write ``FILE.sig.json`` over the file's exact bytes; its path."""
    data = read_capped(policy_path, LIMITS.policy_bytes, what="policy")
    parse_json(data, what="policy")  # sign only a JSON document (a typo is caught before it is signed)
    envelope = sign_envelope(load_private_key(key_path), POLICY_PAYLOAD_TYPE, data)
    out = signature_path(policy_path)
    _write_signature(out, (json.dumps(envelope) + "\n").encode())
    return out


def _write_signature(out: str, data: bytes) -> None:
    """Write a signature beside the policy all at once; a folder that cannot take it (read-only, full)
    is a clear error and leaves any earlier signature as it was (``write_atomic`` replaces or leaves)."""
    try:
        write_atomic(out, data, mode=0o644)
    except OSError as err:
        raise EnvironmentFailure(f"cannot write the policy signature {out}: {err.strerror or err} (any "
                                 "earlier signature there is unchanged)", path=out) from err


class Signers(Record):
    """The signers file: the keys and the Sigstore identities that may sign the org policy."""

    path: str
    keys: tuple[str, ...]
    identities: tuple[SignerRule, ...]
    #: ``production``, ``staging`` or a trusted_root.json path (keyless only).
    trusted_root: str


def sign_policy_keyless(policy_path: str, trust_config: str | None) -> str:
    """``policy sign FILE --keyless``: write ``FILE.sigstore.json``, a Sigstore bundle over the file's
    exact bytes signed with the CI's ambient OIDC identity (signature/keyless_sign.py); its path."""
    token = ambient_identity("--keyless")  # before anything else: exit 2 without one
    data = read_capped(policy_path, LIMITS.policy_bytes, what="policy")
    parse_json(data, what="policy")
    bundle = sign_blob(data, flag="--keyless", config=trust_config, token=token)
    out = bundle_path(policy_path)
    _write_signature(out, (bundle.strip() + "\n").encode())
    return out


def _read_signers(path: str) -> Signers:
    data = read_capped(path, LIMITS.key_bytes * 4, what="org policy signers", follow_links=False,
                       owner_check=PolicyError)
    try:
        doc = expect_object(parse_json(data, what="org policy signers"), "$",
                            allowed=("publicKeys", "identities", "trustedRoot", "$comment"), error=PolicyError)
    except AtipTrustError as err:
        raise PolicyError(f"{path}: {err.message}", path=err.path) from err
    keys, idents, root = doc.get("publicKeys", []), doc.get("identities", []), doc.get("trustedRoot", "production")
    if not isinstance(keys, list) or not all(isinstance(k, str) and k for k in keys):
        raise PolicyError(f"{path}: publicKeys must be a list of PEM file paths", path="$.publicKeys")
    if not isinstance(idents, list) or not all(isinstance(i, dict) for i in idents):
        raise PolicyError(f"{path}: identities must be a list of signer rules ({{\"identity\" or "
                          "\"identityRegexp\", \"issuer\" or \"issuerRegexp\"}})", path="$.identities")
    if not keys and not idents:
        raise PolicyError(f"{path}: names no signer: give publicKeys or identities", path="$")
    if not isinstance(root, str) or not root:
        raise PolicyError(f"{path}: trustedRoot must be production, staging or a file path", path="$.trustedRoot")
    rules = []
    for i, raw in enumerate(idents):
        try:
            expect_object(raw, f"$.identities[{i}]", error=PolicyError,
                          allowed=("identity", "identityRegexp", "issuer", "issuerRegexp", "claims"))
            if not all(isinstance(v, str) for k, v in raw.items() if k != "claims"):
                raise PolicyError("identity and issuer must be strings", path=f"$.identities[{i}]")
            rule = signer_from_json(raw, f"$.identities[{i}]")
            IdentityRule.coerce(rule)  # exactly one identity and one issuer form
        except AtipTrustError as err:
            raise PolicyError(f"{path}: {err.message}", path=err.path or f"$.identities[{i}]") from err
        rules.append(rule)
    base = os.path.dirname(os.path.realpath(path))
    if root not in ("production", "staging"):
        root = os.path.join(base, root)
    return Signers(path, tuple(os.path.join(base, k) for k in keys), tuple(rules), root)


def _key_problem(sig: str, data: bytes, signers: Signers) -> str | None:
    """Why ``sig`` (a DSSE envelope) is not a listed key's signature over ``data``; None when it is."""
    env = parse_envelope(read_capped(sig, LIMITS.bundle_bytes, what="org policy signature",
                                     follow_links=False), source=sig)
    if env.payload_type != POLICY_PAYLOAD_TYPE or env.payload != data:
        return (f"{sig} signs other bytes than the org policy (expected payloadType {POLICY_PAYLOAD_TYPE} "
                "over the file's exact bytes): the policy was changed after it was signed")
    if not signers.keys:
        return f"{sig} is a key signature and {signers.path} names no key"
    if not any(envelope_signed_by(env, _signer_key(k), None) is not None for k in signers.keys):
        return (f"{sig} is not signed by a key {signers.path} names (expected one of "
                f"{[os.path.basename(k) for k in signers.keys]})")
    return None


def _signer_key(path: str) -> PublicKey:
    """A key the signers file names, read with the signers file's ownership and mode checks and never
    through a link: whoever could rewrite the key file could sign any policy with their own key."""
    raw = read_capped(path, LIMITS.key_bytes, what="org policy signers' public key", follow_links=False,
                      owner_check=PolicyError)
    return parse_public_key(raw, source=path)


def _trust_root(signers: Signers) -> TrustRoot:
    """The root a keyless policy signature is verified against. A file is read with the signers file's
    ownership and mode checks: whoever could rewrite it could name their own CA and sign as anyone."""
    if signers.trusted_root in ("production", "staging"):
        return TrustRoot.embedded(signers.trusted_root)
    raw = read_capped(signers.trusted_root, LIMITS.trusted_root_bytes, what="org policy signers' trusted root",
                      follow_links=False, owner_check=PolicyError)
    return TrustRoot.from_bytes(raw, name=signers.trusted_root)


def _keyless_problem(bundle: str, data: bytes, signers: Signers) -> str | None:
    """Why ``bundle`` is not a listed Sigstore identity's signature over ``data``; None when it is.
    sigstore-python verifies it (chain, SCT, log entry, signature over these bytes' sha256)."""
    if not signers.identities:
        return f"{bundle} is a keyless signature and {signers.path} names no identity"
    if os.path.islink(bundle):
        return f"{bundle} is a symbolic link (a signature beside the org policy is read as a file)"
    verifier = KeylessVerifier(_trust_root(signers))
    digest = {"sha256": Digest.from_hex("sha256", hashlib.sha256(data).hexdigest())}
    rules = [IdentityRule.coerce(r) for r in signers.identities]
    why = f"{bundle} holds no Sigstore bundle"
    for b in load_bundles(bundle):
        if b.content != "message_signature":
            why = f"{b.label}: not a message signature over the policy file"
            continue
        out = verifier.verify(b, digest)
        if out.compromised:
            return f"{b.label} signs other bytes than the org policy: the policy was changed after it was signed"
        failed = next((c for c in out.checks if c.failed), None)
        if not out.valid or out.facts is None:
            why = f"{b.label} does not verify: {failed.message if failed else 'no verified signature'}"
            continue
        if any(not r.mismatches(out.facts) for r in rules):
            return None
        why = (f"{b.label} is signed by {out.facts.identity} from {out.facts.issuer}, not an identity "
               f"{signers.path} names (expected one of {[r.describe() for r in rules]})")
    return why


def check_signed(policy_path: str, data: bytes) -> int | None:
    """Where ``policy_path`` has a signers file: verify ``data`` (the bytes about to be parsed) against
    its signature (a listed key's, or a listed Sigstore identity's), then the rollback guard; the
    policy's serial, or None when no signature is required. Any failure is ``PolicyError`` (exit 2: an
    org policy that cannot be trusted denies everything)."""
    serial = verify_signature(policy_path, data)
    if serial is not None:
        serials.guard_rollback(policy_path, serial)
    return serial


def verify_signature(policy_path: str, data: bytes) -> int | None:
    """``check_signed`` without the rollback guard: ``policy install`` checks a release where it was
    signed, before it is copied to where the CLI reads it (nothing is recorded for the source path)."""
    path = signers_path(policy_path)
    if not exists(path, what="org policy signers file", error=PolicyError):
        return None
    signers = _read_signers(path)
    sig, bundle = signature_path(policy_path), bundle_path(policy_path)
    found = [(f, check) for f, check in ((sig, _key_problem), (bundle, _keyless_problem)) if exists(f, what="org policy signature", error=PolicyError)]
    if not found:
        raise PolicyError(f"the org policy must be signed ({path} names its signers) and has no "
                          f"signature: expected {sig} or {bundle}", path=policy_path)
    problems = [check(f, data, signers) for f, check in found]
    if all(p is not None for p in problems):
        raise PolicyError("; ".join(p for p in problems if p is not None), path=policy_path)
    doc: Any = parse_json(data, what="policy")
    serial = doc.get("serial", 0) if isinstance(doc, dict) else 0
    return serial if isinstance(serial, int) and not isinstance(serial, bool) else 0


def signer_files(policy_path: str) -> list[str]:
    """The files the signers file beside ``policy_path`` names (keys, a trusted root file), as written
    there (relative to it, or absolute); none without a signers file."""
    path = signers_path(policy_path)
    if not exists(path, what="org policy signers file", error=PolicyError):
        return []
    doc = parse_json(read_capped(path, LIMITS.key_bytes * 4, what="org policy signers"), what="org policy signers")
    if not isinstance(doc, dict):
        return []
    root = doc.get("trustedRoot")
    named = [k for k in doc.get("publicKeys", []) if isinstance(k, str)]
    return named + ([root] if isinstance(root, str) and root not in ("production", "staging") else [])


def accepted_serial(policy_path: str) -> int:
    """The highest serial this user accepted from ``policy_path`` (0: none; policy/serials.py):
    ``policy install`` refuses to put an older release there, which every later admission would refuse."""
    return serials.accepted(policy_path) or 0


__all__ = ["BUNDLE_SUFFIX", "POLICY_PAYLOAD_TYPE", "SERIALS_ENV", "SIGNATURE_SUFFIX", "SIGNERS_SUFFIX", "Signers",
           "accepted_serial", "bundle_path", "check_signed", "sign_policy", "sign_policy_keyless", "signature_path",
           "signer_files", "signers_path", "verify_signature"]
