"""``verify --emit-vsa``: the flags that make a CI verification write a signed SLSA VSA (docs/vsa.md).

Kept apart from ``cmd_verify.py`` so the VSA's flags and their checks are one piece of code.
"""

from __future__ import annotations

import argparse
import os

from atip_trust._base.lazy import lazy_import
from atip_trust.errors import UsageError
from atip_trust.admission.verify import Verification, load_verify_policy
from atip_trust.evaluation.inputs import Constraints

TYPE_CHECKING = False  # typing's constant without importing typing at run time (docs/caching.md)
# Signing only with --emit-vsa: a warm verify loads no cryptography (docs/caching.md).
if TYPE_CHECKING:
    from atip_trust.admission import vsa as gate_vsa
else:
    gate_vsa = lazy_import("atip_trust.admission.vsa")


def add_emit_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("verification summary (SLSA VSA v1)")
    g.add_argument("--emit-vsa", metavar="FILE",
                   help="write a signed VSA of this verification, PASSED or FAILED, as one JSON line "
                   "(a DSSE envelope, as slsa-verifier verify-vsa reads it); one ARTIFACT only")
    g.add_argument("--vsa-key", metavar="KEY.pem", help="unencrypted PEM private key that signs the VSA")
    g.add_argument("--vsa-key-id", metavar="ID",
                   help="the signature's keyid (default: the key's SHA256 fingerprint, which "
                   "slsa-verifier matches without --public-key-id)")
    g.add_argument("--vsa-verifier-id", metavar="URI", help="verifier.id: who vouches (e.g. the CI job's URI)")
    g.add_argument("--vsa-resource-uri", metavar="URI",
                   help="resourceUri: the artifact as its consumers name it (e.g. a release URL or purl)")
    g.add_argument("--vsa-policy-uri", metavar="URI",
                   help="policy.uri (default: file:// of --policy, or atip-trust:verify-flags)")


def check_emit_flags(args: argparse.Namespace) -> None:
    """Refuse an incomplete VSA request before verifying anything."""
    named = [f for f in ("vsa_key", "vsa_verifier_id", "vsa_resource_uri", "vsa_key_id", "vsa_policy_uri")
             if getattr(args, f)]
    if not args.emit_vsa:
        if named:
            raise UsageError(f"--{named[0].replace('_', '-')} needs --emit-vsa FILE")
        return
    for flag in ("vsa_key", "vsa_verifier_id", "vsa_resource_uri"):
        if not getattr(args, flag):
            raise UsageError(f"--emit-vsa needs --{flag.replace('_', '-')}")
    if len(args.artifact) != 1:
        raise UsageError(f"--emit-vsa summarises one ARTIFACT, got {len(args.artifact)}")


def emit(args: argparse.Namespace, res: Verification, constraints: Constraints) -> None:
    """Sign and write the VSA of ``res``. The policy digest is the composed policy's (org layers
    included), as ``verify`` applied it."""
    digest = load_verify_policy(args.policy).digest if args.policy else None
    uri = args.vsa_policy_uri or ("file://" + os.path.abspath(args.policy) if args.policy else None)
    policy_uri, policy_digest = gate_vsa.policy_reference(digest, repr(constraints), uri)
    line = gate_vsa.emit_vsa(res.report, res.decision, key=args.vsa_key, verifier_id=args.vsa_verifier_id,
                    resource_uri=args.vsa_resource_uri, policy_uri=policy_uri, policy_digest=policy_digest,
                    bundles=list(args.bundle), key_id=args.vsa_key_id)
    gate_vsa.write_vsa(args.emit_vsa, line)
