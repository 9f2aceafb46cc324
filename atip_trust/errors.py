"""The error tree of atip-trust.

Three families, after python-tuf's split (practice 4). Every exception a dependency raises is
mapped into one of them at the boundary where we call it; the CLI catches ``AtipTrustError`` at one point
and maps it to exit code 2 ("could not evaluate", docs/contract.md). A *failed verification* is not an
exception: it is a ``TrustReport`` whose checks failed (exit 1).

    AtipTrustError                      base; ``.diagnostics()`` gives the one-line message
    ├── UntrustedInputError             input we were handed is malformed or failed a check
    │   ├── InputTooLargeError          over a byte or depth cap (before parsing)
    │   ├── MalformedInputError         not JSON / not UTF-8 / wrong shape; carries the JSON path
    │   │   ├── MetadataError           an ATIP metadata document or shim
    │   │   ├── BundleError             a Sigstore bundle, signature or key file
    │   │   └── PolicyError             a policy file
    │   └── NotARegularFileError        a directory, FIFO, device or socket where a file was expected
    ├── EnvironmentFailure              the world failed us: I/O, permissions, network, missing trust root
    │   ├── ArtifactAccessError         cannot open / read / stat the artifact or another input file
    │   ├── TrustRootError              trusted root missing, unreadable or unusable
    │   └── NetworkError                a fetch failed, timed out, redirected off-host, or was too big
    └── UsageError                      misuse: bad flags, missing identity constraint, API misuse
        └── ArgumentTypeError           a public function given a value of the wrong type (also a TypeError)
"""

from __future__ import annotations


class AtipTrustError(Exception):
    """Base of every error atip-trust raises on purpose."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        #: Where in the input the problem is: a JSON path (``$.trust.integrity``) or a file name.
        self.path = path

    def diagnostics(self) -> str:
        """One line for a human: where, then what."""
        if self.path:
            return f"{self.path}: {self.message}"
        return self.message


class UntrustedInputError(AtipTrustError):
    """Input failed a check before or while being parsed."""


class InputTooLargeError(UntrustedInputError):
    """Input exceeded a byte or nesting-depth cap (caps are enforced before parsing)."""


class MalformedInputError(UntrustedInputError):
    """Input is not what it claims to be: bad encoding, bad JSON, or fails its schema."""


class MetadataError(MalformedInputError):
    """An ATIP metadata document or shim is malformed."""


class BundleError(MalformedInputError):
    """A Sigstore bundle, detached signature or key file is malformed."""


class PolicyError(MalformedInputError):
    """A policy file is malformed or refused (unknown key, wrong type, unsafe ownership)."""


class NotARegularFileError(UntrustedInputError):
    """A path names something other than a regular file."""


class EnvironmentFailure(AtipTrustError):
    """I/O, permission, network or configuration failure: nothing was proven either way."""


class ArtifactAccessError(EnvironmentFailure):
    """The artifact or another input file could not be opened, read or inspected."""


class TrustRootError(EnvironmentFailure):
    """The trusted root is missing, unreadable, or does not contain what verification needs."""


class NetworkError(EnvironmentFailure):
    """A fetch failed: connection, timeout, status, size cap, or an off-host redirect."""


class UsageError(AtipTrustError):
    """The caller misused the CLI or the API (missing constraint, conflicting flags)."""


class ArgumentTypeError(UsageError, TypeError):
    """A public function was given a value of the wrong type: a plain ``dict`` where ``Evidence``
    belongs is refused at the call, naming what was expected and what came, rather than failing later
    inside the work as an ``AttributeError``. A ``TypeError``, as Python's own for a bad argument, and
    a ``UsageError``, so the CLI's one catch point and a runtime catching ``AtipTrustError`` see it."""


def expect_type(where: str, value: object, expected: type | tuple[type, ...], *,
                optional: bool = False) -> None:
    """Raise ``ArgumentTypeError`` unless ``value`` is an instance of ``expected`` (or None, when
    ``optional``). ``where``: the function and parameter, as ``admit() evidence``."""
    if isinstance(value, expected) or (optional and value is None):
        return
    names = [t.__name__ for t in (expected if isinstance(expected, tuple) else (expected,))]
    wanted = " or ".join(names + (["None"] if optional else []))
    raise ArgumentTypeError(f"{where}: expected {wanted}, actual {type(value).__name__}")


def error_code(err: BaseException) -> str:
    """The machine-readable code for an error, as JSON/SARIF output and the audit log name it."""
    if isinstance(err, UsageError):
        return "USAGE_ERROR"
    if isinstance(err, UntrustedInputError):
        return "MALFORMED_INPUT"
    if isinstance(err, EnvironmentFailure):
        return "ENVIRONMENT_ERROR"
    if isinstance(err, AtipTrustError):
        return "ERROR"
    return "INTERNAL_ERROR"


__all__ = [
    "error_code",
    "AtipTrustError",
    "UntrustedInputError",
    "InputTooLargeError",
    "MalformedInputError",
    "MetadataError",
    "BundleError",
    "PolicyError",
    "NotARegularFileError",
    "EnvironmentFailure",
    "ArtifactAccessError",
    "TrustRootError",
    "NetworkError",
    "UsageError",
    "ArgumentTypeError",
    "expect_type",
]
