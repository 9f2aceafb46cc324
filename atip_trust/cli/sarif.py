"""SARIF 2.1.0 for GitHub code scanning: rules, results with locations, fingerprints.

Every failure and every denial is a result, so a CI job that uploads the log sees an alert for each
reason its gate failed (an exit-2 error included). GitHub's code-scanning subset is followed: each rule
has ``shortDescription``, ``fullDescription`` and ``help``; each result has a ``message``, one location
(``artifactLocation.uri`` relative to the working directory, under ``uriBaseId`` ``%SRCROOT%``, with
``region.startLine``) and ``partialFingerprints`` so that the same problem on the same artifact is one
alert across runs. A path outside the working directory (a tool found on PATH) is an absolute ``file:``
URI: GitHub cannot place it in the repository, but the result stays valid and names the file.

Rule ids never change meaning once published: checks are ``atip-trust/<check>``, decision reasons
``atip-trust/decision/<code>``, errors ``atip-trust/error/<code>``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote_from_bytes

from atip_trust._base.record import Record

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL_URI = "https://github.com/atip-trust/atip-trust"
#: The base GitHub resolves relative URIs against (the repository checkout).
SRCROOT = "%SRCROOT%"
#: Our own stable fingerprint; GitHub's own key is filled in too so that an API upload (which does not
#: compute fingerprints) still deduplicates alerts.
FINGERPRINT_KEY = "atipTrust/v1"

_HELP_TAIL = " Run the same command with --format json to see every check with what was expected and " \
    "what was found; README 'CLI reference' lists the exit codes."


class Rule(Record):
    """One ``reportingDescriptor``: what the rule checks, and what to do when it fires."""

    short: str
    full: str
    help: str

    def to_json(self, rid: str, level: str) -> dict[str, Any]:
        return {
            "id": rid,
            "name": _camel(rid),
            "shortDescription": {"text": self.short},
            "fullDescription": {"text": self.full},
            "help": {"text": self.help, "markdown": self.help},
            "defaultConfiguration": {"level": level},
            "properties": {"tags": ["security", "supply-chain"], "precision": "very-high"},
        }


def _camel(rid: str) -> str:
    words = re.split(r"[^A-Za-z0-9]+", rid.removeprefix("atip-trust/"))
    return "".join(w[:1].upper() + w[1:].lower() for w in words if w) or "Rule"


#: Verification checks by name, or by the family their name starts with (``tlog.set`` -> ``tlog``).
CHECK_RULES: dict[str, Rule] = {
    "digest": Rule(
        "Signed digest differs from the artifact's",
        "The signature or attestation covers a different digest than the bytes of this artifact: the "
        "artifact was changed after signing, or the material belongs to another file (COMPROMISED).",
        "Do not run or ship this artifact. Compare it with the released bytes and re-download it from "
        "the publisher." + _HELP_TAIL),
    "signature": Rule(
        "Signature does not verify",
        "The cryptographic signature over the artifact or its attestation is invalid for the signing "
        "certificate or key: evidence of tampering (RFC §3.2.2 COMPROMISED).",
        "Treat the artifact as tampered with; obtain it and its bundle again from the publisher."
        + _HELP_TAIL),
    "certificate": Rule(
        "Signing certificate is not trusted",
        "The Fulcio signing certificate does not chain to the trusted root, lacks a valid SCT, or has "
        "the wrong profile, so the signer's identity cannot be vouched for.",
        "Check that --trusted-root (or the policy's trust.trustedRoots) is the root the signer used "
        "(public-good or staging)." + _HELP_TAIL),
    "tlog": Rule(
        "Transparency log proof fails",
        "The Rekor entry, its inclusion proof, checkpoint or signed entry timestamp does not verify "
        "against the trusted root, or the logged body does not match the bundle.",
        "Re-fetch the bundle from the publisher; a bundle whose log proof fails cannot be trusted."
        + _HELP_TAIL),
    "detached": Rule(
        "Detached certificate and signature are not the bundle's",
        "--cert and --signature were given with a bundle that carries another certificate or "
        "signature; that bundle is not counted for them (cosign checks the same).",
        "Give the bundle written by the same signing as the certificate and signature, or the bundle "
        "alone." + _HELP_TAIL),
    "time": Rule(
        "Signing time is outside the certificate's validity",
        "No trusted time (log integration time or RFC 3161 timestamp) falls within the short-lived "
        "certificate's validity window.",
        "The bundle's timestamps do not prove when it was signed; obtain a complete bundle." + _HELP_TAIL),
    "identity": Rule(
        "Signer identity is not allowed",
        "The certificate's subject (workflow URI or email) does not fully match any identity the flags "
        "or the policy trust; regexps match the whole string (docs/architecture.md, principle 4).",
        "If this signer should be trusted, add it to the policy's trust.signers or pass "
        "--certificate-identity; otherwise the artifact is not from whom you expect." + _HELP_TAIL),
    "issuer": Rule(
        "OIDC issuer is not allowed",
        "The certificate's OIDC issuer does not match the issuer the flags or the policy require.",
        "Check --certificate-oidc-issuer or the policy signer's issuer." + _HELP_TAIL),
    "subject": Rule(
        "Attestation is about another artifact",
        "The attestation is valid but none of its subjects has this artifact's digest; it does not "
        "apply to these bytes.",
        "Use the attestation published for this exact artifact." + _HELP_TAIL),
    "provenance": Rule(
        "Provenance requirement not met",
        "SLSA provenance is missing, does not verify, or does not meet the builder, source, predicate "
        "type or minimum SLSA level required by the flags or the policy (PROVENANCE_FAIL).",
        "Check --builder-id, --source-uri and --min-slsa-level, or the policy's requirements and "
        "trust.trustedBuilders." + _HELP_TAIL),
    "claim": Rule(
        "Metadata claim contradicts the artifact",
        "The ATIP metadata declares a checksum, signer or provenance that the artifact's evidence "
        "contradicts (claims are checked, never used as expectations).",
        "The metadata does not describe this binary; obtain matching metadata or a signed shim."
        + _HELP_TAIL),
    "metadata": Rule(
        "Metadata is not verified or not bound to the tool",
        "The metadata's own signature does not verify against the signers the policy names, or the "
        "metadata does not name this tool's digest and name (RFC §4.5).",
        "Use a shim or metadata signed by a registry signer listed in the policy." + _HELP_TAIL),
}
for _alias, _family in (("certificate_chain", "certificate"), ("dsse", "signature"), ("key", "signature"),
                        ("timestamp", "time"), ("gh", "identity"), ("builder_signer", "provenance"),
                        ("statement", "provenance"), ("payload_type", "provenance"),
                        ("build_type", "provenance"), ("builder", "provenance"), ("source", "provenance"),
                        ("slsa_level", "provenance"), ("predicate_type", "provenance"),
                        ("bundle", "signature")):
    CHECK_RULES.setdefault(_alias, CHECK_RULES[_family])

#: Decision reasons (policy/decide.py), for the reasons that can deny or ask.
REASON_RULES: dict[str, Rule] = {
    "TOOL_DENIED_DIGEST": Rule(
        "Artifact digest is denied by policy",
        "The policy's tools.deny lists this exact digest: these bytes must not run, whoever signed them.",
        "Remove the artifact, or change tools.deny if the denial is no longer wanted."),
    "TOOL_DENIED": Rule(
        "Tool is denied by policy", "The policy's tools.deny lists this tool by name.",
        "Use another tool, or change tools.deny."),
    "DIGEST_PIN_MISMATCH": Rule(
        "Tool is pinned to other bytes",
        "The policy pins this tool name to a digest (tools.allow) and the bytes found differ.",
        "Install the pinned release, or update the pin after reviewing the new release."),
    "TRUST_BELOW_MINIMUM": Rule(
        "Trust level below the policy's minimum",
        "The artifact's trust level (RFC §3.2.2) is lower than requirements.minTrustLevel.",
        "See the failed checks of the same run for what kept the level down."),
    "TRUST_NOT_VERIFIED": Rule(
        "Artifact is not VERIFIED",
        "The policy requires VERIFIED and the artifact reached a lower trust level.",
        "See the failed checks of the same run for what kept the level down."),
    "SIGNER_NOT_IN_POLICY": Rule(
        "Signer is not one the policy trusts",
        "The artifact is signed, but not by an identity listed in trust.signers.",
        "Add the signer to trust.signers if it should be trusted."),
    "PROVENANCE_REQUIRED": Rule(
        "Provenance is required", "requirements.provenanceRequired is set and no verified provenance "
        "was found.", "Publish or supply SLSA provenance for the artifact."),
    "SLSA_LEVEL_TOO_LOW": Rule(
        "SLSA level too low", "The builder's SLSA level in the trusted-builder map is lower than "
        "requirements.minSlsaLevel.", "Build with a builder of the required level."),
    "SOURCE_NOT_ALLOWED": Rule(
        "Source repository not allowed", "The provenance's source is not in trust.sources.",
        "Add the repository and ref to trust.sources if it should be trusted."),
    "COMMAND_DENIED": Rule(
        "Command is denied by a rule", "A permissions.deny rule matches the command.",
        "Do not run the command, or change the rule."),
    "NO_MATCHING_RULE": Rule(
        "No rule allows the command", "No permissions rule matches; defaults.noMatch decides.",
        "Add an allow rule for the command if it should run."),
}

for _level, _why in (
    ("COMPROMISED", "shows evidence of tampering: an invalid signature over it, or a digest mismatch"),
    ("UNSIGNED", "has no applicable signature material"),
    ("UNVERIFIED", "has signature material that could not be checked or whose signer is not trusted"),
    ("PROVENANCE_FAIL", "is signed by a trusted signer, but required provenance is missing or fails"),
):
    REASON_RULES[_level] = Rule(
        f"Artifact is {_level}, VERIFIED required",
        f"The artifact {_why} (RFC §3.2.2 trust level {_level}); verify admits only VERIFIED.",
        "See the failed checks of the same run for what kept the level down." + _HELP_TAIL)

#: Exit-2 errors (errors.py ``error_code``, reported by the one catch point in cli/common.py).
ERROR_RULES: dict[str, Rule] = {
    "USAGE_ERROR": Rule(
        "Command line cannot be evaluated", "The flags are missing, conflicting or malformed; nothing "
        "was verified, which counts as a denial (exit 2).", "Fix the command line; see --help."),
    "MALFORMED_INPUT": Rule(
        "Input is malformed", "An input file (bundle, policy, metadata, key) is not what it claims to "
        "be, or the path is not a regular file; nothing was verified (exit 2, a denial).",
        "The message names the file and the JSON path of the first error."),
    "ENVIRONMENT_ERROR": Rule(
        "Input could not be read", "A file, trusted root or network resource could not be read; "
        "nothing was verified (exit 2, a denial).", "Check the path, permissions and trust root."),
    "ERROR": Rule(
        "Could not evaluate", "atip-trust could not evaluate the input (exit 2, a denial).",
        "Run again with -v for details."),
    "INTERNAL_ERROR": Rule(
        "Internal error", "atip-trust failed unexpectedly (exit 2, a denial).",
        "Run again with -v and report the traceback."),
}


def check_rule_id(check_name: str) -> str:
    return f"atip-trust/{check_name}"


def reason_rule_id(code: str) -> str:
    return f"atip-trust/decision/{code.lower()}"


def error_rule_id(code: str) -> str:
    return f"atip-trust/error/{code.lower()}"


def check_rule(name: str) -> Rule:
    family = CHECK_RULES.get(name) or CHECK_RULES.get(re.split(r"[._]", name, maxsplit=1)[0])
    if family is not None:
        return family
    return Rule(f"Check '{name}' failed", f"The verification check '{name}' failed or could not run.",
                "See the check's expected and actual values." + _HELP_TAIL)


def reason_rule(code: str) -> Rule:
    if code in REASON_RULES:
        return REASON_RULES[code]
    return Rule(f"Policy decision {code}", f"The decision was not allow; reason code {code}.",
                "See the decision's reasons and the policy rule named in the message." + _HELP_TAIL)


def error_rule(code: str) -> Rule:
    return ERROR_RULES.get(code, ERROR_RULES["ERROR"])


def _path_bytes(path: str) -> bytes:
    try:
        return os.fsencode(path)
    except UnicodeEncodeError:  # a lone surrogate that is not surrogate-escaped bytes
        return path.encode("utf-8", "surrogatepass")


def artifact_location(path: str | None) -> dict[str, Any]:
    """``artifactLocation`` for a file: relative to the working directory under ``%SRCROOT%``, or an
    absolute ``file:`` URI outside it. Always percent-encoded, so a ``:`` in a name (``sha256:...``)
    cannot be read as a URI scheme and a newline cannot break a consumer's line."""
    raw = path or "."
    try:
        absolute = os.path.abspath(raw)
        rel = os.path.relpath(absolute, os.getcwd())
    except (ValueError, OSError):
        absolute, rel = raw, raw
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return {"uri": "file://" + quote_from_bytes(_path_bytes(Path(absolute).as_posix()), safe="/")}
    return {"uri": quote_from_bytes(_path_bytes(Path(rel).as_posix()), safe="/"), "uriBaseId": SRCROOT}


def fingerprint(*parts: object) -> str:
    text = "\0".join(json.dumps(p, sort_keys=True, default=str) for p in parts)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def sarif_result(
    rid: str,
    message: str,
    path: str | None,
    *,
    level: str = "error",
    line: int = 1,
    props: dict[str, Any] | None = None,
    identity: Iterable[object] = (),
) -> dict[str, Any]:
    """One result at ``path`` (line ``line``; 1 for a binary or a whole file).

    ``identity`` is what makes two results the same problem across runs besides the rule and the
    location (the artifact's digest, the evidence file): it feeds ``partialFingerprints``.
    """
    loc = artifact_location(path)
    fp = fingerprint(rid, loc["uri"], line, *identity)
    res: dict[str, Any] = {
        "ruleId": rid,
        "level": level,
        "message": {"text": message or rid},
        "locations": [{"physicalLocation": {"artifactLocation": loc, "region": {"startLine": line}}}],
        "partialFingerprints": {FINGERPRINT_KEY: fp, "primaryLocationLineHash": f"{fp[:16]}:1"},
    }
    if props:
        res["properties"] = props
    return res


def sarif_log(
    results: list[dict[str, Any]], rules: Mapping[str, str | Rule], *, version: str
) -> dict[str, Any]:
    """The log: one run, the rules the results use (a plain string is a short description)."""
    levels: dict[str, str] = {}
    for r in results:
        levels.setdefault(r["ruleId"], r.get("level", "error"))
    descriptors = []
    for rid in sorted(set(rules) | set(levels)):
        spec = rules.get(rid)
        if not isinstance(spec, Rule):
            text = spec or rid
            spec = Rule(text, f"{text} ({rid}).", "See the result's message." + _HELP_TAIL)
        descriptors.append(spec.to_json(rid, levels.get(rid, "error")))
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "atip-trust",
                        "version": version,
                        "semanticVersion": version,
                        "informationUri": TOOL_URI,
                        "rules": descriptors,
                    }
                },
                "results": results,
            }
        ],
    }


_DIGEST_PATH = re.compile(r"sha(256|512):[0-9a-f]+")
_CHECK_REASON = re.compile(r"CHECK_(.+)_(FAIL|ERROR)")


def _report_location(out: Mapping[str, Any]) -> str:
    """The report's file; for ``verify sha256:<hex>`` (no file), the first evidence file."""
    path = str((out.get("artifact") or {}).get("path") or "")
    if _DIGEST_PATH.fullmatch(path) and not os.path.exists(path):
        for att in out.get("attestations") or []:
            ev = att.get("evidence") if isinstance(att, dict) else None
            if isinstance(ev, str) and ev:
                return ev.split("#", 1)[0]
    return path


def report_results(
    out: Mapping[str, Any], message_of_check: Callable[[Mapping[str, Any]], str]
) -> tuple[list[dict[str, Any]], dict[str, Rule]]:
    """Results for one trust report's JSON: every failed check, and every reason of a deny or ask.

    A failed check is an error when the decision is deny, a warning otherwise (it did not decide). A
    reason that only restates a failed check (``CHECK_<NAME>_FAIL`` from verify's own verdict) is not
    repeated: the check's result already carries it.
    """
    results: list[dict[str, Any]] = []
    rules: dict[str, Rule] = {}
    path = _report_location(out)
    digest = (out.get("artifact") or {}).get("digest") or {}
    decision = out.get("decision") or {}
    behavior = decision.get("behavior")
    level = {"deny": "error", "ask": "warning"}.get(str(behavior), "warning")
    common = {"trust_level": out.get("trust_level"), "decision": behavior}
    failed = [c for c in out.get("checks") or [] if c.get("status") in ("fail", "error")]
    restated = {c["name"].upper().replace(".", "_") for c in failed}
    for c in failed:
        rid = check_rule_id(c["name"])
        rules[rid] = check_rule(c["name"])
        results.append(sarif_result(
            rid, message_of_check(c), path, level=level,
            props={**common, "expected": c.get("expected"), "actual": c.get("actual"),
                   "evidence": c.get("evidence")},
            identity=(digest, c.get("evidence"), c.get("expected"))))
    if behavior in ("deny", "ask"):
        for r in decision.get("reasons") or []:
            m = _CHECK_REASON.fullmatch(r.get("code", ""))
            if m and m.group(1) in restated:
                continue
            rid = reason_rule_id(r["code"])
            rules[rid] = reason_rule(r["code"])
            text = f"{behavior}: {r['code']}: {r.get('message', '')}"
            results.append(sarif_result(
                rid, text, path, level=level,
                props={**common, "rule": r.get("rule"), "expected": r.get("expected"),
                       "actual": r.get("actual"), "policy_digest": decision.get("policy_digest")},
                identity=(digest, r.get("rule"))))
    return results, rules


#: ``scan``: what each finding means (docs/cli-guide.md, ``atip-trust scan``).
SCAN_RULES: dict[str, Rule] = {
    "blocked": Rule("Tool blocked from the agent's surface",
                    "Discovery refused this tool: tampered bytes, a policy denial, a failed probe or an "
                    "error.", "See the row's surface reason and decision reasons." + _HELP_TAIL),
    "not-verified": Rule("Tool not verified, never probed",
                         "No digest pin, signed shim or trusted signature vouches for this tool, so it "
                         "was listed without being run.",
                         "Sign the tool, pin its digest in tools.allow, or publish a signed shim."
                         + _HELP_TAIL),
    "unsafe-location": Rule("Unsafe directory or file skipped",
                            "A directory, ancestor or file that group or others can write, or another "
                            "user owns, decides which programs run; the scan skipped it.",
                            "Remove the entry from PATH or fix its owner and mode." + _HELP_TAIL),
    "lock-drift": Rule("Tool changed since the lock file",
                       "The tool's signer, source or effects changed, it is new, or unsigned bytes "
                       "replaced it: approval is needed.",
                       "Review the diff; run atip-trust lock --accept-change TOOL to approve it."
                       + _HELP_TAIL),
}


def surface_to_sarif(surface: Mapping[str, Any], changes: Sequence[Mapping[str, Any]], *,
                     lock_file: str, version: str) -> dict[str, Any]:
    """SARIF for ``scan``: one result per blocked or unverified tool, per unsafe place skipped, and per
    lock change that needs approval."""
    results: list[dict[str, Any]] = []
    for row in surface.get("tools", []):
        placement = row["surface"]["placement"]
        if placement == "blocked":
            rid, level = "atip-trust/scan/blocked", "error"
        elif row["trust"] != "verified":
            rid, level = "atip-trust/scan/not-verified", "warning"
        else:
            continue
        msg = (f"{row['name']}: {row['trust']}, {placement} ({row['surface']['reason']}), decision "
               f"{row['decision']['behavior']}" + (f": {row['error']}" if row.get("error") else ""))
        results.append(sarif_result(rid, msg, row["resolved"], level=level,
                                    props={"digest": row["digest"], "surface": row["surface"]},
                                    identity=(row["digest"], row["surface"]["reason"])))
    for s in surface.get("skipped", []):
        if s["reason"].startswith(("directory_writable", "directory_foreign", "ancestor_", "symlink_into",
                                   "symlink_foreign", "symlink_in_unsafe", "file_writable", "file_foreign")):
            results.append(sarif_result("atip-trust/scan/unsafe-location", f"{s['path']}: {s['message']}",
                                        s["path"], props={"reason": s["reason"]}, identity=(s["reason"],)))
    for c in changes:
        if c["needs_approval"] and not c["accepted"]:
            diff = "; ".join(f"{k}: {v['old']} -> {v['new']}" for k, v in c["fields"].items())
            results.append(sarif_result("atip-trust/scan/lock-drift",
                                        f"{c['tool']}: {', '.join(c['needs_approval'])}: {diff}", lock_file,
                                        props=dict(c), identity=(c["tool"], tuple(c["needs_approval"]))))
    used = {r["ruleId"] for r in results}
    rules = {f"atip-trust/scan/{k}": v for k, v in SCAN_RULES.items()}
    return sarif_log(results, {k: v for k, v in rules.items() if k in used}, version=version)


__all__ = [
    "surface_to_sarif",
    "Rule",
    "SARIF_SCHEMA",
    "SRCROOT",
    "artifact_location",
    "check_rule",
    "check_rule_id",
    "error_rule",
    "error_rule_id",
    "reason_rule",
    "reason_rule_id",
    "report_results",
    "sarif_log",
    "sarif_result",
]
