"""Keyless signing with the CI's ambient OIDC identity: ``verify --emit-vsa ... --vsa-keyless`` and
``policy sign FILE --keyless`` (issue 25 items 1 and 4).

sigstore-python's own signer does the work (``sigstore.sign.SigningContext``/``Signer``): it asks the
Fulcio of the signing configuration for a certificate binding an ephemeral key to the OIDC identity
(checking the certificate's SCT against the trusted root's CT keys), signs, and logs the signature in the
configuration's Rekor. The identity is the CI's *ambient* one (``sigstore.oidc.detect_credential``: the
``id`` package's detectors for GitHub Actions, GitLab CI, Buildkite, CircleCI and GCP); atip-trust never
opens a browser or asks for a token (CI runs with no stdin).

The instance is a Sigstore ``ClientTrustConfig`` (trusted root + signing configuration, media type
``application/vnd.dev.sigstore.clienttrustconfig.v0.1+json``, as ``sigstore --trust-config`` reads
it), or the public-good instance from Sigstore's TUF repository. Every bundle is verified again by
``signature/keyless.py`` against that trusted root before it is returned: nothing unverifiable is ever
written as a signature.
"""

from __future__ import annotations

import hashlib
import os
from typing import TYPE_CHECKING

from sigstore import dsse, models, oidc, sign

from atip_trust._base.files import read_capped
from atip_trust._base.limits import LIMITS
from atip_trust.errors import AtipTrustError, EnvironmentFailure, UsageError
from atip_trust.facts.digest import Digest
from atip_trust.signature import keyless
from atip_trust.signature.bundle import bundles_from_bytes
from atip_trust.signature.trustroot import TrustRoot

if TYPE_CHECKING:
    from typing import Any


#: Where an ambient identity comes from, for the refusal's message (the ``id`` package's detectors).
AMBIENT_SOURCES = (
    "GitHub Actions (GITHUB_ACTIONS with ACTIONS_ID_TOKEN_REQUEST_URL and ACTIONS_ID_TOKEN_REQUEST_TOKEN: "
    "the job needs `permissions: id-token: write`), GitLab CI (GITLAB_CI with SIGSTORE_ID_TOKEN: an "
    "`id_tokens` entry with `aud: sigstore`), Buildkite, CircleCI or a GCP service account"
)


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def _offline() -> bool:
    """``ATIP_OFFLINE``, read as net/fetch.py's ``env_flag`` reads it (that layer is not this one's to
    import): keyless signing is nothing but network requests (token, Fulcio, Rekor), so it is refused."""
    return os.environ.get("ATIP_OFFLINE", "").strip().lower() not in ("", "0", "false", "no", "off")


def ambient_identity(flag: str) -> Any:
    """The CI's ambient OIDC identity token (``sigstore.oidc.IdentityToken``, audience ``sigstore``).

    None found: ``UsageError`` (exit 2) naming what is missing; found but unusable: ``EnvironmentFailure``."""
    if _offline():
        raise EnvironmentFailure(f"{flag} needs the network (an OIDC token, Fulcio, Rekor) and ATIP_OFFLINE "
                                 "is set: sign with a key instead, or unset ATIP_OFFLINE")
    try:
        raw = oidc.detect_credential()
    except Exception as err:  # noqa: BLE001 - IdentityError, and whatever a detector's HTTP client raises
        raise EnvironmentFailure(f"{flag}: the CI's ambient OIDC credential could not be obtained: "
                                 f"{_first_line(err)}") from err
    if raw is None:
        raise UsageError(f"{flag} signs with the CI's ambient OIDC identity and found none: expected a "
                         f"credential from {AMBIENT_SOURCES}")
    try:
        return oidc.IdentityToken(raw)
    except oidc.IdentityError as err:
        raise EnvironmentFailure(f"{flag}: the ambient OIDC token is not usable for Sigstore: "
                                 f"{_first_line(err)}") from err


def trust_config(path: str | os.PathLike[str] | None) -> Any:
    """The Sigstore instance to sign with: a ClientTrustConfig file, or public-good over TUF."""
    try:
        if path is None:
            return models.ClientTrustConfig.production()
        raw = read_capped(path, LIMITS.bundle_bytes, what="Sigstore trust config")
        return models.ClientTrustConfig.from_json(raw.decode("utf-8"))
    except EnvironmentFailure:
        raise
    except Exception as err:  # noqa: BLE001 - sigstore and betterproto raise several types for a bad file
        where = os.fspath(path) if path is not None else "the public-good TUF repository"
        raise EnvironmentFailure(f"cannot read the Sigstore trust config ({where}): {_first_line(err)}") from err


def _self_check(bundle: str, config: Any, sha256: str, flag: str) -> None:
    """Verify the bundle just signed as any reader will (signature/keyless.py, the instance's trusted
    root, bound to ``sha256``): a signing instance that hands back something unverifiable fails here."""
    try:
        root = TrustRoot.from_bytes(str(config._inner.trusted_root.to_json()).encode(), name="signing trust config")
        verifier = keyless.KeylessVerifier(root)
        for b in bundles_from_bytes("signed bundle", bundle.encode()):
            out = verifier.verify(b, {"sha256": Digest.from_hex("sha256", sha256)})
            if not out.valid:
                failed = next((c for c in out.checks if c.failed), None)
                raise EnvironmentFailure(f"{flag}: the bundle just signed does not verify against the signing "
                                         f"instance's trusted root: {failed.message if failed else 'no reason'}")
    except AtipTrustError as err:
        if isinstance(err, EnvironmentFailure):
            raise
        raise EnvironmentFailure(f"{flag}: the bundle just signed cannot be checked: {err.message}") from err


def _sign(flag: str, config_path: str | os.PathLike[str] | None, how: str, data: bytes, sha256: str,
          token: Any) -> str:
    """Sign ``data`` (``how``: ``"dsse"`` an in-toto statement, ``"blob"`` a file's bytes); the bundle JSON.
    ``token``: the ambient identity already found, else it is looked for now."""
    token = token if token is not None else ambient_identity(flag)
    config = trust_config(config_path)
    try:
        context = sign.SigningContext.from_trust_config(config)
        with context.signer(token, cache=True) as signer:
            signed = (signer.sign_dsse(dsse.Statement(data)) if how == "dsse"
                      else signer.sign_artifact(data))
        bundle = str(signed.to_json())
    except Exception as err:  # noqa: BLE001 - the one boundary for signing: Fulcio, Rekor, network, token
        raise EnvironmentFailure(f"{flag}: keyless signing failed: {_first_line(err)}") from err
    _self_check(bundle, config, sha256, flag)
    return bundle


def sign_statement(statement: bytes, *, sha256: str, flag: str, config: str | os.PathLike[str] | None,
                   token: Any = None) -> str:
    """An in-toto statement about the artifact ``sha256`` signed keylessly: a Sigstore bundle (DSSE,
    a dsse/0.0.1 log entry)."""
    return _sign(flag, config, "dsse", statement, sha256, token)


def sign_blob(data: bytes, *, flag: str, config: str | os.PathLike[str] | None, token: Any = None) -> str:
    """A file's bytes signed keylessly: a Sigstore bundle (message signature, hashedrekord/0.0.1), the
    same as ``cosign sign-blob --new-bundle-format --bundle`` writes."""
    return _sign(flag, config, "blob", data, hashlib.sha256(data).hexdigest(), token)


__all__ = ["AMBIENT_SOURCES", "ambient_identity", "sign_blob", "sign_statement", "trust_config"]
