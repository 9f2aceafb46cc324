"""``verify --emit-vsa``: the flags that make a CI verification write a signed SLSA VSA (docs/vsa.md).

Kept apart from ``cmd_verify.py`` so the VSA's flags and their checks are one piece of code.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from atip_trust._base.lazy import lazy_import
from atip_trust.admission.verify import Verification, load_verify_policy
from atip_trust.errors import UsageError
from atip_trust.evaluation.inputs import Constraints

if TYPE_CHECKING:
    from atip_trust.admission import vsa
else:
    vsa = lazy_import("atip_trust.admission.vsa")  # signing: only with --emit-vsa (a warm verify loads no cryptography)


def add_emit_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("verification summary (SLSA VSA v1)")
    g.add_argument("--emit-vsa", metavar="FILE",
                   help="write a signed VSA of this verification, PASSED or FAILED, as one JSON line "
                   "(a DSSE envelope, as slsa-verifier verify-vsa reads it; with --vsa-keyless a Sigstore "
                   "bundle); one ARTIFACT only")
    g.add_argument("--vsa-key", metavar="KEY.pem", help="unencrypted PEM private key that signs the VSA")
    g.add_argument("--vsa-keyless", action="store_true",
                   help="sign the VSA with the CI's ambient OIDC identity instead of a key (Sigstore: a "
                   "Fulcio certificate and a Rekor entry); writes a Sigstore bundle")
    g.add_argument("--vsa-trust-config", metavar="FILE",
                   help="with --vsa-keyless: the Sigstore instance to sign with, a ClientTrustConfig JSON "
                   "(trusted root and signing config; default: public-good, from Sigstore's TUF repository)")
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
    named = [f for f in ("vsa_key", "vsa_keyless", "vsa_trust_config", "vsa_verifier_id", "vsa_resource_uri",
                         "vsa_key_id", "vsa_policy_uri") if getattr(args, f)]
    if not args.emit_vsa:
        if named:
            raise UsageError(f"--{named[0].replace('_', '-')} needs --emit-vsa FILE")
        return
    if bool(args.vsa_key) == bool(args.vsa_keyless):
        raise UsageError("--emit-vsa needs exactly one of --vsa-key KEY.pem or --vsa-keyless")
    if args.vsa_keyless and args.vsa_key_id:
        raise UsageError("--vsa-key-id names a key; a keyless VSA is named by its certificate's identity")
    if args.vsa_trust_config and not args.vsa_keyless:
        raise UsageError("--vsa-trust-config needs --vsa-keyless")
    for flag in ("vsa_verifier_id", "vsa_resource_uri"):
        if not getattr(args, flag):
            raise UsageError(f"--emit-vsa needs --{flag.replace('_', '-')}")
    if len(args.artifact) != 1:
        raise UsageError(f"--emit-vsa summarises one ARTIFACT, got {len(args.artifact)}")
    # Keyless: the CI's ambient identity is looked for before anything is verified (exit 2 without one).
    args.vsa_identity = vsa.ambient_identity() if args.vsa_keyless else None


def emit(args: argparse.Namespace, res: Verification, constraints: Constraints) -> None:
    """Sign and write the VSA of ``res``. The policy digest is the composed policy's (org layers
    included), as ``verify`` applied it."""
    digest = load_verify_policy(args.policy).digest if args.policy else None
    uri = args.vsa_policy_uri or ("file://" + os.path.abspath(args.policy) if args.policy else None)
    policy_uri, policy_digest = vsa.policy_reference(digest, repr(constraints), uri)
    line = vsa.emit_vsa(res.report, res.decision, key=args.vsa_key, verifier_id=args.vsa_verifier_id,
                    resource_uri=args.vsa_resource_uri, policy_uri=policy_uri, policy_digest=policy_digest,
                    bundles=list(args.bundle), key_id=args.vsa_key_id, keyless=args.vsa_keyless,
                    trust_config=args.vsa_trust_config, identity=args.vsa_identity)
    vsa.write_vsa(args.emit_vsa, line)
