"""``atip-trust policy check FILE`` and ``policy explain FILE``.

``--format`` (text, json, sarif) is honoured before or after the action. ``check`` validates against
schema/policy.schema.json and the semantic checks (regexps compile, rules
parse, dates parse) and explains the rules; any error is exit 2 naming the JSON path. ``explain`` prints
what the policy allows in plain words.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any
from xml.etree import ElementTree

from atip_trust._base.files import write_atomic
from atip_trust._base.jsonio import load_json_file
from atip_trust._base.limits import LIMITS
from atip_trust._version import __version__
from atip_trust.admission import policy_test
from atip_trust.cli import policy_install
from atip_trust.cli.common import EXIT_FAIL, EXIT_OK, add_common_options
from atip_trust.cli.output import dump_json, one_line
from atip_trust.cli.sarif import Rule, sarif_log, sarif_result
from atip_trust.errors import ArtifactAccessError, UsageError
from atip_trust.policy import signed
from atip_trust.policy.compose import compose
from atip_trust.policy.explain import explain_policy
from atip_trust.policy.load import load_layer
from atip_trust.provenance.slsa import BuilderMap


def register(sub: Any) -> None:
    p = add_common_options(sub.add_parser("policy", help="validate and explain policy files"))
    psub = p.add_subparsers(dest="policy_command", metavar="ACTION", required=True,
                            parser_class=type(p))
    for name, help_text in (("check", "validate a policy against its schema and explain it"),
                            ("explain", "say what a policy allows, in plain words")):
        q = add_common_options(psub.add_parser(name, help=help_text))
        q.add_argument("file", metavar="FILE", help="policy file (JSON, schema/policy.schema.json)")
        q.add_argument("--org", action="store_true",
                       help="treat FILE as an org (managed) policy: refuse unsafe ownership or mode")
        q.set_defaults(func=run)
    g = add_common_options(psub.add_parser(
        "sign", help="sign an org policy with a key (writes FILE.sig.json beside it) or keylessly "
        "(FILE.sigstore.json)"))
    g.add_argument("file", metavar="FILE", help="policy file to sign (its exact bytes are signed)")
    how = g.add_mutually_exclusive_group(required=True)
    how.add_argument("--key", metavar="KEY.pem", help="unencrypted PEM private key")
    how.add_argument("--keyless", action="store_true",
                     help="sign with the CI's ambient OIDC identity (Sigstore: a Fulcio certificate and a "
                     "Rekor entry), as cosign sign-blob --new-bundle-format --bundle")
    g.add_argument("--trust-config", metavar="FILE",
                   help="with --keyless: the Sigstore instance, a ClientTrustConfig JSON (trusted root and "
                   "signing config; default: public-good, from Sigstore's TUF repository)")
    g.set_defaults(func=run_sign)
    t = add_common_options(psub.add_parser(
        "test", help="run a policy's test cases through admission; exit 1 on any mismatch"))
    t.add_argument("cases", metavar="CASES", nargs="+",
                   help="case file(s), JSON or YAML (atip_trust/admission/policy_test.py, docs/policy-test.md)")
    t.add_argument("--junit", metavar="FILE",
                   help="also write a JUnit XML report to FILE (a testcase per case, a failure per mismatch)")
    t.set_defaults(func=run_test)
    policy_install.register(psub)


def _builder_map(path: str) -> list[str] | None:
    """policies/ also holds the trusted-builder map; check it with its own loader (provenance.py)."""

    doc = load_json_file(path, LIMITS.policy_bytes, what="policy")
    if not (isinstance(doc, dict) and "builders" in doc and "trust" not in doc):
        return None

    bm = BuilderMap.from_json(doc, origin=f"{path}:")
    return [f"Trusted-builder map: {len(bm.entries)} builder(s); SLSA levels come from this list."]


def run(args: argparse.Namespace) -> int:
    lines_bm = None if args.org else _builder_map(args.file)
    if args.format == "sarif":
        # A policy that loads has nothing to report; one that does not is an exit-2 error, which the
        # catch point (cli/common.py) reports as a located SARIF result.
        if lines_bm is None:
            load_layer(args.file, source="org" if args.org else "local")
        dump_json(sarif_log([], {}, version=__version__))
        return EXIT_OK
    if lines_bm is not None:
        if args.format == "json":
            dump_json({"path": args.file, "valid": True, "kind": "trusted-builders", "explain": lines_bm})
        else:
            if args.policy_command == "check":
                sys.stdout.write(one_line(f"ok: {args.file} is a valid trusted-builder map") + "\n")
            sys.stdout.write("".join(one_line(line) + "\n" for line in lines_bm))
        return EXIT_OK
    layer = load_layer(args.file, source="org" if args.org else "local")
    policy = compose([layer])
    lines = explain_policy(policy)
    if args.format == "json":
        dump_json({"path": args.file, "valid": True, "digest": policy.digest, "explain": lines})
        return EXIT_OK
    if args.policy_command == "check":
        sys.stdout.write(one_line(f"ok: {args.file} is a valid policy ({policy.digest})") + "\n")
    for line in lines:
        sys.stdout.write(one_line(line) + "\n")
    return EXIT_OK


def run_sign(args: argparse.Namespace) -> int:
    """``policy sign FILE (--key KEY | --keyless)``: the policy is checked (it must load), then signed."""
    if args.trust_config and not args.keyless:
        raise UsageError("--trust-config needs --keyless")
    load_layer(args.file, source="local")
    if args.keyless:
        out = signed.sign_policy_keyless(args.file, args.trust_config)
    else:
        out = signed.sign_policy(args.file, args.key)
    if args.format == "json":
        dump_json({"command": "policy sign", "path": args.file, "signature": out})
    else:
        sys.stdout.write(one_line(f"signed: {args.file} -> {out}") + "\n")
    return EXIT_OK


RULE_MISMATCH = "atip-trust/policy-test/mismatch"
_MISMATCH_RULE_TEXT = ("Policy test case does not hold",
                       ("A case file states the decision a policy must give; the admission gave another, "
                        "or a reason code the case expects is missing."),
                       ("Either the policy changed a decision on purpose (update the case) or by mistake "
                        "(fix the policy)."))


def _case_files(args: argparse.Namespace) -> list[tuple[str, list[Any]]]:
    return [(path, policy_test.run_cases(path)) for path in args.cases]


def _actual(r: Any) -> str:
    detail = f" missing {', '.join(r.missing)}" if r.missing else ""
    return f"{r.actual} {' '.join(r.actual_reasons)}{detail}".strip()


def _junit(files: list[tuple[str, list[Any]]]) -> str:
    """JUnit XML, as CI systems read it: a testsuite per case file, a failure per mismatch."""
    root = ElementTree.Element("testsuites", name="atip-trust policy test")
    for path, results in files:
        suite = ElementTree.SubElement(root, "testsuite", name=path, tests=str(len(results)),
                              failures=str(sum(1 for r in results if not r.ok)))
        for r in results:
            case = ElementTree.SubElement(suite, "testcase", classname=path, name=r.name)
            if not r.ok:
                fail = ElementTree.SubElement(case, "failure", message=f"expected {r.expected}, got {r.actual}")
                fail.text = f"expected: {r.expected} {' '.join(r.expected_reasons)}\nactual: {_actual(r)}"
                if r.error:
                    fail.text += f"\nerror: {r.error}"
    return ElementTree.tostring(root, encoding="unicode") + "\n"


def run_test(args: argparse.Namespace) -> int:
    """``policy test CASES...``: a table (text), ``{"files": [...], "passed", "failed", "exit_code"}``
    (json) or a SARIF result per mismatch; ``--junit FILE`` too."""
    files = _case_files(args)
    failed = sum(1 for _, results in files for r in results if not r.ok)
    passed = sum(1 for _, results in files for r in results if r.ok)
    code = EXIT_FAIL if failed else EXIT_OK
    if args.junit:
        try:
            write_atomic(args.junit, _junit(files).encode("utf-8"), mode=0o644)
        except OSError as err:
            raise ArtifactAccessError(f"cannot write the JUnit report (--junit): {err.strerror or err}",
                                      path=args.junit) from err
    if args.format == "json":
        dump_json({"command": "policy test", "files": [
            {"path": path, "cases": [r.to_json() for r in results]} for path, results in files],
            "passed": passed, "failed": failed, "exit_code": code})
        return code
    if args.format == "sarif":
        found = [sarif_result(RULE_MISMATCH, f"{r.name}: expected {r.expected} "
                              f"{' '.join(r.expected_reasons)}, got {_actual(r)}".replace("  ", " "), path,
                              identity=(r.name,))
                 for path, results in files for r in results if not r.ok]
        dump_json(sarif_log(found, {RULE_MISMATCH: Rule(*_MISMATCH_RULE_TEXT)}, version=__version__))
        return code
    rows = [("RESULT", "CASE", "EXPECTED", "ACTUAL")]
    for path, results in files:
        for r in results:
            rows.append(("ok" if r.ok else "MISMATCH", f"{path}: {r.name}",
                         f"{r.expected} {' '.join(r.expected_reasons)}".strip(), _actual(r)))
    widths = [max(len(one_line(row[i])) for row in rows) for i in range(3)]
    for row in rows:
        cells = [one_line(c).ljust(widths[i]) if i < 3 else one_line(c) for i, c in enumerate(row)]
        sys.stdout.write("  ".join(cells).rstrip() + "\n")
    sys.stdout.write(f"{passed} passed, {failed} failed\n")
    return code
