"""Signer identity constraints, evaluated on a certificate that has already been chain-verified.

Identity and issuer are matched exactly or by a regular expression that must match the *whole* string
(``re.fullmatch``): cosign's regexps are unanchored and gh's signer-workflow check was a prefix match
(cli/cli#9507); ours are not (principle 4). Several allowed identities mean any one of them;
an empty list allows nobody (practice 6).

Fulcio extensions (https://github.com/sigstore/fulcio/blob/main/docs/oid-info.md): 1.3.6.1.4.1.57264.1.1
to .1.6 hold raw UTF-8 bytes (deprecated v1 form); .1.8 and above hold a DER UTF8String. The issuer is
read from .1.8 when present, else from .1.1 (docs/sigstore.md: a verifier that accepts both must read
both).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from atip_trust._base.lazy import lazy_import
from atip_trust._base.record import Record, field
from atip_trust.errors import UsageError
from atip_trust.facts.report import Check

if TYPE_CHECKING:
    from typing import Any

    from cryptography import x509
else:
    x509 = lazy_import("cryptography.x509")  # only when a certificate is read, never on a cache hit


_FULCIO = "1.3.6.1.4.1.57264.1."

#: Short names (cosign / Fulcio oid-info names, snake_case) → (OID suffix, encoding).
EXTENSIONS: dict[str, tuple[int, str]] = {
    "issuer_v1": (1, "raw"),
    "github_workflow_trigger": (2, "raw"),
    "github_workflow_sha": (3, "raw"),
    "github_workflow_name": (4, "raw"),
    "github_workflow_repository": (5, "raw"),
    "github_workflow_ref": (6, "raw"),
    "issuer": (8, "der"),
    "build_signer_uri": (9, "der"),
    "build_signer_digest": (10, "der"),
    "runner_environment": (11, "der"),
    "source_repository_uri": (12, "der"),
    "source_repository_digest": (13, "der"),
    "source_repository_ref": (14, "der"),
    "source_repository_identifier": (15, "der"),
    "source_repository_owner_uri": (16, "der"),
    "source_repository_owner_identifier": (17, "der"),
    "build_config_uri": (18, "der"),
    "build_config_digest": (19, "der"),
    "build_trigger": (20, "der"),
    "run_invocation_uri": (21, "der"),
    "source_repository_visibility_at_signing": (22, "der"),
}
#: Claims a rule may constrain (everything but the issuer, which has its own field).
CLAIMS = tuple(k for k in EXTENSIONS if k not in ("issuer", "issuer_v1"))
_OTHERNAME_OID = "1.3.6.1.4.1.57264.1.7"
_SAN_OID = "2.5.29.17"  # x509.ExtensionOID.SUBJECT_ALTERNATIVE_NAME, without importing x509 to name it
#: Fulcio extension OID -> (short name, encoding), built once.
_BY_OID: dict[str, tuple[str, str]] = {f"{_FULCIO}{n}": (name, enc) for name, (n, enc) in EXTENSIONS.items()}


def _der_utf8(value: bytes) -> str | None:
    # DER UTF8String: tag 0x0C, then a definite length (short or long form).
    if len(value) < 2 or value[0] != 0x0C:
        return None
    n = value[1]
    off = 2
    if n & 0x80:
        k = n & 0x7F
        if k == 0 or k > 4 or len(value) < 2 + k:
            return None
        n = int.from_bytes(value[2 : 2 + k], "big")
        off = 2 + k
    if len(value) != off + n:
        return None
    try:
        return value[off:].decode("utf-8")
    except UnicodeDecodeError:
        return None


class CertificateFacts(Record):
    """What a Fulcio certificate says about its signer."""

    sans: tuple[str, ...]
    issuer: str | None
    extensions: Mapping[str, str]

    @property
    def identity(self) -> str | None:
        return self.sans[0] if self.sans else None

    @classmethod
    def from_certificate(cls, cert: x509.Certificate) -> CertificateFacts:
        # One pass over the extensions, and one over the SAN's names (cryptography refuses a certificate
        # with an extension twice): ``get_extension_for_class`` and one ``get_values_for_type`` per name
        # type each walked them again, on every verification. SANs are listed URIs first, then e-mail
        # addresses, then Fulcio's OtherName identities, each in certificate order.
        uris: list[str] = []
        emails: list[str] = []
        others: list[str] = []
        exts: dict[str, str] = {}
        for ext in cert.extensions:
            oid = ext.oid.dotted_string
            if oid == _SAN_OID:
                for general in ext.value:
                    kind = type(general)
                    if kind is x509.UniformResourceIdentifier:
                        uris.append(general.value)
                    elif kind is x509.RFC822Name:
                        emails.append(general.value)
                    elif kind is x509.OtherName and general.type_id.dotted_string == _OTHERNAME_OID:
                        # Fulcio's username identity (``foo!oidc.local``): a DER UTF8String, matched
                        # as that exact text; a value of any other encoding is no identity at all.
                        text = _der_utf8(general.value)
                        if text is not None:
                            others.append(text)
                continue
            hit = _BY_OID.get(oid)
            if hit is None:
                continue
            name, enc = hit
            raw = getattr(ext.value, "value", None)
            if not isinstance(raw, bytes):
                continue
            if enc == "der":
                text = _der_utf8(raw)
            else:
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    text = None
            if text is not None:
                exts[name] = text
        issuer = exts.get("issuer", exts.get("issuer_v1"))
        return cls(sans=(*uris, *emails, *others), issuer=issuer, extensions=exts)


class IdentityRule(Record):
    """One allowed signer: identity and issuer (exact or full-match regexp) and optional claims.

    Claims map an extension short name (``source_repository_uri``, ``runner_environment``, ...) to an
    exact value. ``github_workflow_repository`` etc. are accepted too.
    """

    identity: str | None = None
    identity_regexp: str | None = None
    issuer: str | None = None
    issuer_regexp: str | None = None
    claims: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        identity, identity_regexp, issuer, issuer_regexp = (
            self.identity, self.identity_regexp, self.issuer, self.issuer_regexp)
        if (identity is None) == (identity_regexp is None):
            raise UsageError(
                "a signer needs exactly one of identity (--certificate-identity) or identity_regexp "
                "(--certificate-identity-regexp)"
            )
        if (issuer is None) == (issuer_regexp is None):
            raise UsageError(
                "a signer needs exactly one of issuer (--certificate-oidc-issuer) or issuer_regexp "
                "(--certificate-oidc-issuer-regexp)"
            )
        for pat in (identity_regexp, issuer_regexp):
            if pat is not None:
                try:
                    re.compile(pat)
                except re.error as err:
                    raise UsageError(f"invalid regular expression {pat!r}: {err}") from err
        for k in self.claims:
            if k not in CLAIMS:
                raise UsageError(f"unknown certificate claim {k!r}; known: {', '.join(CLAIMS)}")

    @classmethod
    def coerce(cls, obj: Any) -> IdentityRule:
        """Accept our rule or any object with the same field names (the policy's ``SignerRule``)."""
        if isinstance(obj, IdentityRule):
            return obj
        return cls(
            identity=getattr(obj, "identity", None),
            identity_regexp=getattr(obj, "identity_regexp", None),
            issuer=getattr(obj, "issuer", None),
            issuer_regexp=getattr(obj, "issuer_regexp", None),
            claims=dict(getattr(obj, "claims", None) or {}),
        )

    def describe(self) -> str:
        ident = self.identity if self.identity is not None else f"/{self.identity_regexp}/"
        iss = self.issuer if self.issuer is not None else f"/{self.issuer_regexp}/"
        extra = "".join(f", {k}={v}" for k, v in sorted(self.claims.items()))
        return f"{ident} from {iss}{extra}"

    def mismatches(self, facts: CertificateFacts) -> list[tuple[str, str, str | None]]:
        """(check name, expected, actual) for each part of this rule the certificate fails."""
        out: list[tuple[str, str, str | None]] = []
        if self.identity is not None:
            if self.identity not in facts.sans:
                out.append(("identity", self.identity, ", ".join(facts.sans) or None))
        else:
            pat = self.identity_regexp or ""
            if not any(re.fullmatch(pat, s) for s in facts.sans):
                out.append(("identity", f"/{pat}/ (full match)", ", ".join(facts.sans) or None))
        if self.issuer is not None:
            if facts.issuer != self.issuer:
                out.append(("issuer", self.issuer, facts.issuer))
        else:
            pat = self.issuer_regexp or ""
            if facts.issuer is None or not re.fullmatch(pat, facts.issuer):
                out.append(("issuer", f"/{pat}/ (full match)", facts.issuer))
        for k, v in sorted(self.claims.items()):
            actual = facts.extensions.get(k)
            if actual != v:
                out.append((f"claim.{k}", v, actual))
        return out


def match_identities(
    rules: Iterable[IdentityRule],
    facts: CertificateFacts,
    *,
    evidence: str | None = None,
    origin: str | None = None,
) -> tuple[IdentityRule | None, list[Check]]:
    """Return the first rule the certificate satisfies (or None) and the checks to report.

    With a match, one passing check per constrained field; without, the checks of the closest rule
    (fewest mismatches) so the message names expected and actual values. ``origin`` (``flags``) names
    where the rules come from when they are one of several sets that must all hold.
    """
    rules = list(rules)
    by = f" by the {origin} signer rules" if origin else ""
    if not rules:
        return None, [
            Check(
                "identity",
                "fail",
                f"no signer is allowed{by} (empty allowlist)",
                expected=[],
                actual=facts.identity,
                evidence=evidence,
                impact="unverified",
            )
        ]
    best: tuple[IdentityRule, list[tuple[str, str, str | None]]] | None = None
    for rule in rules:
        miss = rule.mismatches(facts)
        if not miss:
            checks = [
                Check("identity", "pass", f"signer is allowed{by}", rule.describe().split(" from ")[0],
                      facts.identity, evidence),
                Check("issuer", "pass", "", rule.issuer or f"/{rule.issuer_regexp}/", facts.issuer,
                      evidence),
            ]
            checks += [
                Check(f"claim.{k}", "pass", "", v, facts.extensions.get(k), evidence)
                for k, v in sorted(rule.claims.items())
            ]
            return rule, checks
        if best is None or len(miss) < len(best[1]):
            best = (rule, miss)
    if best is None:  # unreachable: rules is non-empty; kept so the function cannot fall through
        raise RuntimeError("identity matching found no candidate rule")
    rule, miss = best
    suffix = "" if len(rules) == 1 else f" (closest of {len(rules)} allowed signers)"
    return None, [
        Check(name, "fail", f"signer not allowed{by}{suffix}", exp, act, evidence, impact="unverified")
        for name, exp, act in miss
    ]


__all__ = ["IdentityRule", "CertificateFacts", "match_identities", "EXTENSIONS", "CLAIMS"]
