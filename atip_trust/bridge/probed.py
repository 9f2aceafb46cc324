"""A tool's own ``--agent`` answer as the metadata to compile (``atip-trust compile --tool NAME``).

Probing runs the tool, so this is discovery's rule (discovery/probe.py, RFC §5.2 security note): the tool
is found on PATH once, opened once, admitted with its evidence (bundles by digest in ``bundle_dir``,
shims in ``shim_dir`` and policy's registries), and run with ``--agent`` only when policy vouches for
those bytes (``probe_permission``: VERIFIED from a signer policy trusts, or a digest pin). A shim a
registry signer in policy signed is used instead of running the tool. Anything else is refused with
the probe's machine-readable reason (``ProbeRefused``: exit 1), and a probe that runs but gives no
usable metadata (timeout, too much output, invalid JSON, none) cannot be evaluated (exit 2).

The metadata the probe printed is then admitted again with the same open file, as a metadata file
would be (its effects are the tool's claims about itself: unsigned, they can only tighten).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from atip_trust._base.record import replace
from atip_trust.admission.admit import admit, audit_target, write_audit
from atip_trust.admission.options import AdmitOptions
from atip_trust.admission.verdict_key import hash_artifact, open_cache
from atip_trust.bridge.surface import SurfaceTool
from atip_trust.discovery.probe import ProbeOutcome, probe
from atip_trust.errors import MetadataError
from atip_trust.evaluation.inputs import Evidence
from atip_trust.execution.exec import admit_file, find_bundles, locate
from atip_trust.policy.model import Policy

PathLike = str | os.PathLike[str]


class ProbeRefused(Exception):
    """Policy does not let the tool be run with ``--agent`` (and no signed shim names it): exit 1."""

    exit_code = 1

    def __init__(self, tool: str, outcome: ProbeOutcome):
        self.tool = tool
        self.outcome = outcome
        super().__init__(f"{tool} was not probed ({outcome.reason}): {outcome.message}")


def probe_surface_tool(
    tool: str,
    policy: Policy,
    *,
    bundle_dir: PathLike | None = None,
    shim_dir: PathLike | None = None,
    trusted_root: PathLike | None = None,
    staging: bool = False,
    audit: bool = True,
    audit_log: PathLike | None = None,
    cache: bool = True,
    environ: Mapping[str, str] | None = None,
    fetch: bool = False,
) -> SurfaceTool:
    """The ``SurfaceTool`` for ``tool`` (a name looked up on PATH once, or a path) with the metadata
    its ``--agent`` answer (or a signed shim) gives; see the module docstring. Raises ``ProbeRefused``
    (not run) or an ``AtipTrustError`` (no usable metadata; could not evaluate). ``fetch``: ask
    policy's remote shim registries too (``admit``'s)."""
    name = os.path.basename(tool)
    env = os.environ if environ is None else environ
    found = locate(tool, env.get("PATH", os.defpath))
    target = audit_target(policy, audit, audit_log)
    options = AdmitOptions(name=name, shim_dir=shim_dir, trusted_root=trusted_root, staging=staging,
                           fetch=fetch, cache=cache, audit=audit, audit_log=target)
    evidence = Evidence()
    opened = admit_file(found, policy=policy, command=[], options=options, bundle_dir=bundle_dir)
    with opened.art as art:
        adm = opened.admission
        # Every command is compiled: a partial (--depth=1) answer is completed (discovery/probe.py).
        outcome = probe(art, adm, policy, cache=open_cache(cache), options=options, bundle_dir=bundle_dir,
                        full=True)
        if outcome.metadata is not None:
            raw = outcome.metadata.raw
            bundles = find_bundles(bundle_dir, hash_artifact(art, open_cache(cache))["sha256"].hex)
            # The registries are not asked (fetch off): the tool's own answer is the metadata.
            adm = admit(art, policy=policy, command=[], evidence=Evidence(bundles=bundles, metadata=raw),
                        options=replace(options, fetch=False, defer_audit=True))
            evidence = Evidence(metadata=raw)
        elif not (outcome.reason in ("signed_shim", "signed_metadata") and adm.metadata is not None):
            if audit:
                write_audit(adm)
            if outcome.status == "not_probed":
                raise ProbeRefused(name, outcome)
            raise MetadataError(f"{name} --agent gave no usable ATIP metadata ({outcome.reason}): "
                                f"{outcome.message}", path=str(found))
    if audit:
        write_audit(adm)
    assert adm.metadata is not None
    return SurfaceTool.from_admission(adm, adm.metadata, evidence, options,
                                      None if bundle_dir is None else os.fspath(bundle_dir))


__all__ = ["ProbeRefused", "probe_surface_tool"]
