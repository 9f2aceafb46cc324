"""``atip-trust verify-vsa``: check a key-signed SLSA VSA with slsa-verifier's flags and meaning.

Flags are slsa-verifier ``verify-vsa``'s (its README, "The verify-vsa command"): ``--attestation-path``,
``--subject-digest ALG:VALUE`` (repeatable, any digest type), ``--verifier-id``, ``--resource-uri``,
``--verified-level`` (repeatable; ``SLSA_<TRACK>_LEVEL_<N>`` means at least N, any other level must be
listed), ``--public-key-path``, ``--public-key-id`` (default: the key's SHA256 fingerprint; needed when
the envelope names its key otherwise, e.g. ``keystore://...``), ``--print-attestation``.
Beyond slsa-verifier: without ``--public-key-path``, a VSA in a Sigstore bundle (keyless) is checked
against cosign's identity flags and ``--trusted-root``/``--staging``.
Exit 0 PASSED, 1 FAILED (signature or an expectation), 2 cannot evaluate (unreadable or malformed input).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from atip_trust.admission.vsa import verify_vsa, verify_vsa_keyless
from atip_trust.cli.common import EXIT_FAIL, EXIT_OK, add_common_options
from atip_trust.cli.identity_flags import add_identity_flags, identity_rules
from atip_trust.cli.output import json_text, one_line
from atip_trust.errors import UsageError
from atip_trust.policy.constraints import choose_trusted_root


def register(sub: Any) -> None:
    p = add_common_options(sub.add_parser(
        "verify-vsa",
        help="verify a key-signed SLSA Verification Summary Attestation (slsa-verifier's flags)",
        description="Verify a SLSA VSA (a DSSE envelope signed with a key) as slsa-verifier verify-vsa "
        "does: signature, subject digests, verifier id, resource URI, PASSED, levels. Exit 0 PASSED, "
        "1 FAILED, 2 cannot evaluate.",
    ))
    p.add_argument("--attestation-path", required=True, metavar="FILE",
                   help="the VSA: a DSSE envelope, one JSON line (.jsonl) or a JSON file")
    p.add_argument("--subject-digest", action="append", default=[], required=True, metavar="ALG:VALUE",
                   help="a digest the VSA's subjects must include (any type, e.g. sha256:<hex> or "
                   "gce_image_id:<id>); repeatable: every one must be found")
    p.add_argument("--verifier-id", required=True, metavar="URI", help="the verifier.id the VSA must state")
    p.add_argument("--resource-uri", required=True, metavar="URI", help="the resourceUri the VSA must state")
    p.add_argument("--verified-level", action="append", default=[], metavar="LEVEL",
                   help="a level the VSA must state; SLSA_<TRACK>_LEVEL_<N> is met by N or higher; "
                   "repeatable")
    p.add_argument("--public-key-path", metavar="FILE",
                   help="the verifier's PEM public key (a DSSE envelope); without it, the VSA is a "
                   "Sigstore bundle checked against the identity flags (keyless)")
    p.add_argument("--public-key-id", metavar="ID",
                   help="the key id a signature must name (default: the key's SHA256 fingerprint, "
                   "SHA256:<base64>; a signature with no keyid is tried with any)")
    add_identity_flags(p)
    p.add_argument("--trusted-root", "--custom-trusted-root", metavar="FILE",
                   help="keyless: a Sigstore trusted_root.json (default: the embedded public-good root)")
    p.add_argument("--staging", action="store_true", help="keyless: use the embedded staging root")
    p.add_argument("--print-attestation", action="store_true",
                   help="text output: print the verified statement to standard output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    fmt = getattr(args, "format", "text")
    if fmt not in ("text", "json"):
        raise UsageError(f"verify-vsa writes --format text or json, not {fmt}")
    signers = identity_rules(args)
    expect = {"digests": list(args.subject_digest), "verifier_id": args.verifier_id,
              "resource_uri": args.resource_uri, "levels": list(args.verified_level)}
    if args.public_key_path and signers:
        raise UsageError("give --public-key-path (a key-signed envelope) or identity flags (a keyless "
                         "Sigstore bundle), not both")
    if args.public_key_path:
        res = verify_vsa(args.attestation_path, public_key=args.public_key_path, key_id=args.public_key_id,
                         **expect)
    elif signers:
        root = choose_trusted_root(None, args.trusted_root, args.staging)
        res = verify_vsa_keyless(args.attestation_path, trust_root=root, signers=signers, **expect)
    else:
        raise UsageError("give --public-key-path (key-signed VSA) or --certificate-identity and "
                         "--certificate-oidc-issuer (keyless VSA in a Sigstore bundle)")
    if fmt == "json":
        sys.stdout.write(json_text(res.to_json()))
    else:
        if res.passed and args.print_attestation:
            sys.stdout.write(res.statement.decode("utf-8", "replace") + "\n")
        if res.passed:
            sys.stderr.write("Verifying VSA: PASSED\n")
        else:
            p = res.problems[0]
            sys.stderr.write(f"Verifying VSA: FAILED: {p.code}: {one_line(p.message)} "
                             f"(expected {p.expected!r}, got {p.actual!r})\n")
    return EXIT_OK if res.passed else EXIT_FAIL
