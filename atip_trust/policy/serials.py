"""The machine's memory of signed org policies (docs/signed-policy.md): for each org policy path, that a
signed release was accepted there and the highest serial accepted.

Two promises rest on it (policy/signed.py): a release older than one accepted is a rollback, and a
path where a signed policy was once accepted stays signed: its signers file or signature going
missing is a refusal, not a return to an unsigned policy (deleting two files must not turn signing
off). The key is the *logical* path, the one the policy was named by, made absolute but never
resolved through links: with ``current -> releases/v7`` switched to ``releases/v3`` the real path
changes and a key by real path would meet release 3 as a first use. Stores written before keyed by
the real path; that key is read as well (the higher mark wins).

The store is a JSON object ``{path: serial}`` (user state directory, ``org-policy-serials.json``;
``ATIP_TRUST_POLICY_SERIALS`` names another file), read owner- and mode-checked and never through a
link: whoever can write the mark can lower it. A store that cannot be read as that object, or whose
presence cannot be told, refuses the policy (fail closed); one that cannot be written refuses it too,
naming the file, and the previous store stays as it was (an atomic replace).
"""

from __future__ import annotations

import json
import os

from atip_trust._base.files import exists, read_capped, write_atomic
from atip_trust._base.jsonio import parse_json
from atip_trust._base.limits import LIMITS
from atip_trust.errors import AtipTrustError, EnvironmentFailure, PolicyError
from atip_trust.state.dirs import user_state_dir

#: Environment override of the serial store (tests, and machines whose state lives elsewhere).
SERIALS_ENV = "ATIP_TRUST_POLICY_SERIALS"


def serials_file() -> str:
    return os.environ.get(SERIALS_ENV) or os.path.join(user_state_dir(), "org-policy-serials.json")


def policy_key(policy_path: str) -> str:
    """The logical path of an org policy: absolute, ``.`` and ``..`` folded, links left as named."""
    return os.path.abspath(policy_path)


def read_serials() -> dict[str, int]:
    """Every mark the store holds (empty when there is no store)."""
    store = serials_file()
    if not exists(store, what="policy serials store", error=PolicyError):
        return {}
    try:
        raw = parse_json(read_capped(store, LIMITS.policy_bytes, what="policy serials", follow_links=False,
                                     owner_check=PolicyError), what="policy serials")
    except AtipTrustError as err:  # fail closed: a damaged store cannot vouch for any serial
        raise PolicyError(f"cannot read the org policy serials {store}: {err.message}") from err
    bad = [k for k, v in raw.items() if not isinstance(v, int) or isinstance(v, bool)] \
        if isinstance(raw, dict) else None
    if bad is None or bad:
        # An entry read as absent would be serial 0: any older release accepted again.
        raise PolicyError(f"cannot read the org policy serials {store}: expected an object of integer "
                          f"serials by policy path, got {type(raw).__name__ if bad is None else bad}")
    return {str(k): int(v) for k, v in raw.items()}


def accepted(policy_path: str, seen: dict[str, int] | None = None) -> int | None:
    """The highest serial accepted from ``policy_path`` (its logical path, or the real path an older
    store used), or None when no signed policy was ever accepted there."""
    seen = read_serials() if seen is None else seen
    if not seen:
        return None  # no mark at all (most machines): no path to resolve
    marks = [seen[k] for k in (policy_key(policy_path), os.path.realpath(policy_path)) if k in seen]
    return max(marks) if marks else None


def require_unsigned_allowed(policy_path: str, missing: str) -> None:
    """An org policy read without its signers file, or a standard org policy path with no file at all:
    refused where a signed policy was accepted before (``missing`` names the file that is gone)."""
    high = accepted(policy_path)
    if high is not None:
        raise PolicyError(f"a signed org policy (serial {high}) was accepted from {policy_path} before, and "
                          f"{missing} is missing: once signed, the policy must stay signed (restore the "
                          f"file; to retire signing, remove the path from {serials_file()})", path=policy_path)


def guard_rollback(policy_path: str, serial: int) -> None:
    """Refuse ``serial`` below the highest accepted from ``policy_path``; else remember it."""
    seen = read_serials()
    high = accepted(policy_path, seen)
    if high is not None and serial < high:
        raise PolicyError(f"org policy serial {serial} is older than serial {high} this machine already "
                          "accepted: refusing a rollback to an older signed policy", path=policy_key(policy_path))
    key = policy_key(policy_path)
    if seen.get(key) == serial:
        return
    seen[key] = serial
    store = serials_file()
    try:
        os.makedirs(os.path.dirname(os.path.abspath(store)), exist_ok=True)
        write_atomic(store, (json.dumps(seen, sort_keys=True, indent=1) + "\n").encode())
    except OSError as err:  # fail closed: a serial that cannot be remembered cannot guard a rollback
        raise EnvironmentFailure(f"cannot record org policy serial {serial} in {store}: {err.strerror or err} "
                                 f"(the previous store is unchanged; free space or set {SERIALS_ENV} to a "
                                 "writable file)", path=store) from err


__all__ = ["SERIALS_ENV", "accepted", "guard_rollback", "policy_key", "read_serials", "require_unsigned_allowed",
           "serials_file"]
