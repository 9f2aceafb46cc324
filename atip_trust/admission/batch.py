"""Many verifications at once, on both cores: ``verify`` (admission/verify.py) per item, in worker processes.

Verification is CPU-bound Python (sigstore-python, pydantic, our binding and identity checks), so a
batch runs on processes, not threads (_base/parallel.py: ``fork``, results in input order, a worker
that dies or hangs fails its own item only). The trusted root and its sigstore ``Verifier`` are built
in the parent before the workers start, so every worker inherits them instead of building its own
(signature/keyless.py keeps one per root digest).

Each item's answer is the JSON of its ``Verification`` (what ``verify --format json`` prints) and
its exit code; an item that could not be evaluated has exit code 2 and its error, like the CLI.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from atip_trust._base.parallel import default_workers, map_processes
from atip_trust._base.record import Record
from atip_trust.admission.options import VerifyOptions
from atip_trust.admission.verify import verify
from atip_trust.errors import AtipTrustError, error_code
from atip_trust.evaluation.inputs import Constraints, Evidence
from atip_trust.policy.constraints import choose_trusted_root
from atip_trust.signature.keyless import KeylessVerifier

PathLike = str | os.PathLike[str]


class VerifyJob(Record):
    """One artifact and its evidence; what every job shares is given to ``verify_batch``."""

    artifact: str
    bundles: tuple[str, ...] = ()
    signature: str | None = None
    metadata: str | None = None


class BatchResult(Record):
    """One job's answer: exit code 0 verified, 1 not, 2 could not evaluate (``error`` says why)."""

    artifact: str
    exit_code: int
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"artifact": self.artifact, "exit_code": self.exit_code, "result": self.result,
                "error": self.error}


class _Shared(Record):
    constraints: Constraints
    policy: str | None
    trusted_root: str | None
    staging: bool
    cache: bool


def _run(args: tuple[_Shared, VerifyJob]) -> BatchResult:
    shared, job = args
    try:
        v = verify(job.artifact, policy=shared.policy,
                   evidence=Evidence(bundles=job.bundles, signature=job.signature, metadata=job.metadata),
                   options=VerifyOptions(constraints=shared.constraints, trusted_root=shared.trusted_root,
                                         staging=shared.staging, cache=shared.cache))
    except AtipTrustError as err:
        return BatchResult(job.artifact, 2, error={"code": error_code(err), "type": type(err).__name__,
                                                   "message": err.diagnostics(), "path": err.path})
    return BatchResult(job.artifact, v.exit_code, result=v.to_json())


def verify_batch(
    jobs: Sequence[VerifyJob],
    *,
    constraints: Constraints | None = None,
    policy: PathLike | None = None,
    trusted_root: PathLike | None = None,
    staging: bool = False,
    cache: bool = True,
    workers: int | None = None,
    timeout: float | None = 300.0,
) -> list[BatchResult]:
    """Verify every job with the same constraints, policy and root; one result per job, in order.

    ``workers``: processes (default: the usable cores, at most 2; 1 runs in this process).
    ``timeout``: seconds one job may take in a worker before it fails (exit 2) on its own.
    """
    shared = _Shared(constraints if constraints is not None else Constraints(),
                     os.fspath(policy) if policy is not None else None,
                     os.fspath(trusted_root) if trusted_root is not None else None, staging, cache)
    n = default_workers() if workers is None else max(1, workers)
    if n > 1 and len(jobs) > 1 and policy is None:
        # Build the root's Verifier once, here, for every forked worker to inherit. (With a policy
        # the root may be the policy's; each worker then builds it once for all its jobs.)
        try:
            KeylessVerifier(choose_trusted_root(None, shared.trusted_root, staging))
        except AtipTrustError:
            pass  # every job reports the root's error itself
    outcomes = map_processes(_run, [(shared, job) for job in jobs], workers=n, timeout=timeout)
    out: list[BatchResult] = []
    for job, o in zip(jobs, outcomes):
        if o.value is not None:
            out.append(o.value)
        else:
            err = o.error
            out.append(BatchResult(job.artifact, 2, error={
                "code": "INTERNAL_ERROR", "type": type(err).__name__,
                "message": f"verification of this item failed: {type(err).__name__}: {err}",
                "path": job.artifact}))
    return out


__all__ = ["BatchResult", "VerifyJob", "verify_batch"]
