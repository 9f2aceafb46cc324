"""Signed org policies (issue 25, docs/signed-policy.md): who may sign the org policy, the signature
beside it, and the rollback guard.

A machine requires its org policy to be signed by placing a signers file beside it,
``<policy>.signers.json`` (``{"publicKeys": ["keys/org.pub", ...]}``, paths relative to it), read with
the same ownership and mode checks as the org policy (root- or self-owned, not group/other-writable):
the signers are named next to the policy, never in it, so whoever can edit the policy cannot name
themselves. The signature is ``<policy>.sig.json``: a DSSE envelope (``signature/envelope.py``) whose
payload is the policy file's exact bytes, type ``application/vnd.atip-trust.policy+json``, signed by
one of those keys (``atip-trust policy sign``). It is checked before the policy is parsed or composed.

Rollback: a signed policy's ``serial`` (absent: 0) must not be lower than the highest serial this
machine accepted from that path, kept in the user state directory (``org-policy-serials.json``, keyed
by the policy's real path). Without a signers file nothing here applies (an unsigned org policy stays as
it was: protected by its file ownership alone).
"""

from __future__ import annotations

import json
import os

from atip_trust._base.files import read_capped, write_atomic
from atip_trust._base.jsonio import expect_object, parse_json
from atip_trust.errors import AtipTrustError, EnvironmentFailure, PolicyError
from atip_trust._base.limits import LIMITS
from atip_trust.signature.envelope import envelope_signed_by, load_private_key, parse_envelope, sign_envelope
from atip_trust.signature.keys import load_public_key
from atip_trust.state.dirs import user_state_dir

POLICY_PAYLOAD_TYPE = "application/vnd.atip-trust.policy+json"
SIGNERS_SUFFIX = ".signers.json"
SIGNATURE_SUFFIX = ".sig.json"
#: Environment override of the serial store (tests, and machines whose state lives elsewhere).
SERIALS_ENV = "ATIP_TRUST_POLICY_SERIALS"


def signers_path(policy_path: str) -> str:
    return policy_path + SIGNERS_SUFFIX


def signature_path(policy_path: str) -> str:
    return policy_path + SIGNATURE_SUFFIX


def sign_policy(policy_path: str, key_path: str) -> str:
    """``policy sign FILE --key KEY``: write ``FILE.sig.json`` over the file's exact bytes; its path."""
    data = read_capped(policy_path, LIMITS.policy_bytes, what="policy")
    parse_json(data, what="policy")  # sign only a JSON document (a typo is caught before it is signed)
    envelope = sign_envelope(load_private_key(key_path), POLICY_PAYLOAD_TYPE, data)
    out = signature_path(policy_path)
    write_atomic(out, (json.dumps(envelope) + "\n").encode(), mode=0o644)
    return out


def _signer_keys(path: str) -> list[str]:
    data = read_capped(path, LIMITS.key_bytes * 4, what="org policy signers", follow_links=False,
                       owner_check=PolicyError)
    try:
        doc = expect_object(parse_json(data, what="org policy signers"), "$", allowed=("publicKeys", "$comment"),
                            error=PolicyError)
    except AtipTrustError as err:
        raise PolicyError(f"{path}: {err.message}", path=err.path) from err
    keys = doc.get("publicKeys")
    if not isinstance(keys, list) or not keys or not all(isinstance(k, str) and k for k in keys):
        raise PolicyError(f"{path}: publicKeys must be a non-empty list of PEM file paths", path="$.publicKeys")
    base = os.path.dirname(os.path.realpath(path))
    return [os.path.join(base, k) for k in keys]


def check_signed(policy_path: str, data: bytes) -> int | None:
    """Where ``policy_path`` has a signers file: verify ``data`` (the bytes about to be parsed) against
    its signature, then the rollback guard; the policy's serial, or None when no signature is required.
    Any failure is ``PolicyError`` (exit 2: an org policy that cannot be trusted denies everything)."""
    signers = signers_path(policy_path)
    if not os.path.lexists(signers):
        return None
    keys = _signer_keys(signers)
    sig = signature_path(policy_path)
    if not os.path.lexists(sig):
        raise PolicyError(f"the org policy must be signed ({signers} names its signers) and has no "
                          f"signature: expected {sig}", path=policy_path)
    env = parse_envelope(read_capped(sig, LIMITS.bundle_bytes, what="org policy signature",
                                     follow_links=False), source=sig)
    if env.payload_type != POLICY_PAYLOAD_TYPE or env.payload != data:
        raise PolicyError(f"{sig} signs other bytes than the org policy (expected payloadType "
                          f"{POLICY_PAYLOAD_TYPE} over the file's exact bytes): the policy was changed "
                          "after it was signed", path=policy_path)
    if not any(envelope_signed_by(env, load_public_key(k), None) is not None for k in keys):
        raise PolicyError(f"{sig} is not signed by a key {signers} names (expected one of "
                          f"{[os.path.basename(k) for k in keys]})", path=policy_path)
    doc = parse_json(data, what="policy")
    serial = doc.get("serial", 0) if isinstance(doc, dict) else 0
    serial = serial if isinstance(serial, int) and not isinstance(serial, bool) else 0
    _guard_rollback(os.path.realpath(policy_path), serial)
    return serial


def _serials_file() -> str:
    return os.environ.get(SERIALS_ENV) or os.path.join(user_state_dir(), "org-policy-serials.json")


def _guard_rollback(key: str, serial: int) -> None:
    store = _serials_file()
    seen: dict[str, int] = {}
    if os.path.exists(store):
        try:
            raw = parse_json(read_capped(store, LIMITS.policy_bytes, what="policy serials"), what="policy serials")
        except AtipTrustError as err:  # fail closed: a damaged store cannot vouch for any serial
            raise PolicyError(f"cannot read the org policy serials {store}: {err.message}") from err
        seen = {k: v for k, v in raw.items() if isinstance(v, int)} if isinstance(raw, dict) else {}
    high = seen.get(key, 0)
    if serial < high:
        raise PolicyError(f"org policy serial {serial} is older than serial {high} this machine already "
                          "accepted: refusing a rollback to an older signed policy", path=key)
    if serial > high or key not in seen:
        seen[key] = serial
        try:
            os.makedirs(os.path.dirname(os.path.abspath(store)), exist_ok=True)
            write_atomic(store, (json.dumps(seen, sort_keys=True, indent=1) + "\n").encode())
        except OSError as err:  # fail closed: a serial that cannot be remembered cannot guard a rollback
            raise EnvironmentFailure(f"cannot record org policy serial {serial}: {err.strerror or err} "
                                     f"(set {SERIALS_ENV} to a writable file)", path=store) from err


__all__ = ["POLICY_PAYLOAD_TYPE", "SERIALS_ENV", "SIGNATURE_SUFFIX", "SIGNERS_SUFFIX", "check_signed",
           "sign_policy", "signature_path", "signers_path"]
