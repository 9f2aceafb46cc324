"""atip-trust: supply-chain trust verification and policy for the tools AI agents run.

The public API is exactly the names in ``__all__``; every other module is an implementation detail.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .artifact import Artifact, FileIdentity, resolve
from .digest import Digest, hash_bytes, hash_fd
from .errors import (
    ArtifactAccessError,
    AtipTrustError,
    BundleError,
    EnvironmentFailure,
    InputTooLargeError,
    MalformedInputError,
    MetadataError,
    NetworkError,
    NotARegularFileError,
    PolicyError,
    TrustRootError,
    UntrustedInputError,
    UsageError,
)
from .limits import LIMITS, Limits
from .report import (
    Check,
    Decision,
    ProvenanceResult,
    Reason,
    SignatureResult,
    TrustLevel,
    TrustReport,
)

__all__ = [
    "__version__",
    "Artifact",
    "FileIdentity",
    "resolve",
    "Digest",
    "hash_bytes",
    "hash_fd",
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
    "Limits",
    "LIMITS",
    "TrustLevel",
    "Check",
    "SignatureResult",
    "ProvenanceResult",
    "Reason",
    "Decision",
    "TrustReport",
]
