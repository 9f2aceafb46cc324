"""How one admission or verification runs, apart from the evidence it is given: one value each, as
python-tuf's ``UpdaterConfig`` is the one settings value of its ``Updater``.

``admit(tool, policy=..., command=..., evidence=Evidence(...), options=AdmitOptions(...))`` and
``verify(artifact, evidence=Evidence(...), options=VerifyOptions(...))``: what is offered about the
artifact (untrusted, ``evaluation/inputs.py``) and how to decide about it are two values, and the
verdict cache's key is derived from both in one place (``admission/verdict_key.py``,
``verdict_key``): every field of either is in the key unless it is named in the field list
``NOT_IN_KEY`` of its class, each with the reason it cannot change the cached report
(tests/admission/test_verdict_key_fields.py changes each field in turn and checks the key).

The keyword arguments ``admit`` and ``verify`` took before (``bundles=``, ``trusted_root=``, ...) are
still accepted: each is a field of ``Evidence`` or of the options value, and is routed there by name
(:func:`split_keywords`), so there is one list of them, the fields.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from atip_trust._base.record import Record, replace
from atip_trust.errors import expect_type
from atip_trust.evaluation.inputs import Constraints, Evidence

if TYPE_CHECKING:
    from atip_trust.admission.interactive import Interactive

    O = TypeVar("O", "AdmitOptions", "VerifyOptions")  # noqa: E741 - the options type

PathLike = str | os.PathLike[str]


#: The check ``registry_pin`` adds to the report (admission/agent_tools.py); failed, the admission is
#: denied in every mode (admission/admit.py ``decided``, which reads the name here so that a report
#: without the tree's checks loads nothing of the tree's).
REGISTRY_CHECK = "agent_tools.registry"


class AdmitOptions(Record):
    """How ``admit`` decides, apart from the evidence (``admission/admit.py`` documents each)."""

    #: The name the rules match (default: the file's name, or the bare name given).
    name: str | None = None
    #: Trusted public keys (PEM files), added to the policy's (``--key``): one path or several.
    keys: PathLike | Sequence[PathLike] = ()
    #: A folder of shims by digest (``sha256/<hex>.json``, RFC §4.3, §4.9), read when no metadata is given.
    shim_dir: PathLike | None = None
    #: One of the trusted roots the policy pins (default: its first), or with ``staging`` its staging one.
    trusted_root: PathLike | None = None
    staging: bool = False
    #: Ask policy's remote shim registries over the network (docs/network.md: no network unless asked).
    fetch: bool = False
    #: Whether someone can answer an ``ask`` (``admission/interactive.py`` ``can_ask``).
    interactive: bool | Interactive = False
    audit: bool = True
    audit_log: PathLike | None = None
    #: Leave the decision's audit line to the caller (``admit.write_audit``).
    defer_audit: bool = False
    #: Use the verdict cache (state/verdict_cache.py): ``False`` neither reads nor writes it.
    cache: bool = True
    #: Read RFC §4.2's agent-tools tree (admission/agent_tools.py): its registry.json pin, tools/, shims/
    #: and signed overrides/. ``False`` for a runtime that keeps its own pins.
    agent_tools: bool = True
    #: Check registry.json's digest for the name; False only for ``scan --update-registry``, which pins anew.
    registry_pin: bool = True

    #: Fields that cannot change the cached trust report, so the verdict key leaves them out
    #: (``admission/verdict_key.py``); every other field is in the key.
    NOT_IN_KEY: ClassVar[Mapping[str, str]] = {
        "interactive": "decides whether an ask can be put to someone: the decision, made anew on each call",
        "audit": "where the decision is written, after it is made",
        "audit_log": "where the decision is written, after it is made",
        "defer_audit": "when the decision is written, after it is made",
        "cache": "whether the cache is used at all: off, there is no key",
    }


class VerifyOptions(Record):
    """How ``verify`` checks, apart from the evidence (``admission/verify.py`` documents each)."""

    #: Trust anchors and requirements from flags; with a policy they only tighten it.
    constraints: Constraints | None = None
    trusted_root: PathLike | None = None
    staging: bool = False
    #: Fetch the metadata's provenance URL (the only network use, docs/network.md).
    fetch: bool = False
    cache: bool = True
    #: ``sha256:<hex>`` digests of the other artifacts the same evidence was given for (``verify A B
    #: --bundle attestations.jsonl``): a bundle that signs or names one of them is about that artifact,
    #: not tampering with this one (evaluation/evaluate.py ``_set_aside_others``).
    shared_with: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # A dict of flags where the Constraints value belongs would fail later, inside verification.
        expect_type("VerifyOptions constraints", self.constraints, Constraints, optional=True)

    #: As ``AdmitOptions.NOT_IN_KEY``.
    NOT_IN_KEY: ClassVar[Mapping[str, str]] = {
        "fetch": "with fetch nothing is cached (fetched material is new each time): there is no key",
        "cache": "whether the cache is used at all: off, there is no key",
    }


#: Evidence fields that cannot change the cached trust report: read and checked on every call,
#: after the report is stored (admission/admit.py steps (4a), (4b)), so never part of it.
EVIDENCE_NOT_IN_KEY: Mapping[str, str] = {
    "vsas": "checked on every call, after the cached report (their age changes: docs/vsa.md)",
    "contract": "the AIP-14 TOOL.md is verified on every call, after the cached report",
    "contract_bundle": "verified with the contract on every call, after the cached report",
}


def split_keywords(function: str, given: Evidence | None, options: O | None, kind: type[O],
                   keywords: Mapping[str, Any]) -> tuple[Evidence, O]:
    """``Evidence`` and the options value (of class ``kind``) with the keyword arguments of the older
    call form applied: each keyword is a field of one of the two (``Evidence`` first), anything else
    a ``TypeError`` naming it, as Python's own for an unknown keyword. A value of another type where
    ``Evidence`` or the options value belongs (a plain dict) is an ``ArgumentTypeError`` (a
    ``TypeError``) here, at the door, not an ``AttributeError`` deep in the call."""
    expect_type(f"{function}() evidence", given, Evidence, optional=True)
    expect_type(f"{function}() options", options, kind, optional=True)
    if not keywords:
        return (given if given is not None else _NO_EVIDENCE), (
            options if options is not None else _DEFAULTS[kind])  # type: ignore[return-value]  # kind's own
    to_evidence: dict[str, Any] = {}
    to_options: dict[str, Any] = {}
    evidence_fields, options_fields = Evidence._index, kind._index
    for key, value in keywords.items():
        if key in evidence_fields:
            to_evidence[key] = value
        elif key in options_fields:
            to_options[key] = value
        else:
            raise TypeError(f"{function}() got an unexpected keyword argument {key!r}")
    # Built from the keywords alone when nothing else was given (one constructor each, no copy),
    # else the given value with the keywords replacing its fields.
    if given is None:
        given = Evidence(**to_evidence) if to_evidence else _NO_EVIDENCE
    elif to_evidence:
        given = replace(given, **to_evidence)
    made: O
    if options is None:
        made = kind(**to_options) if to_options else _DEFAULTS[kind]  # type: ignore[assignment]  # kind's own
    else:
        made = replace(options, **to_options) if to_options else options
    return given, made


#: The evidence, and the options, of a call that names none (a Record is immutable: one will do).
_NO_EVIDENCE = Evidence()
_DEFAULTS: dict[type, AdmitOptions | VerifyOptions] = {AdmitOptions: AdmitOptions(), VerifyOptions: VerifyOptions()}


__all__ = ["REGISTRY_CHECK", "AdmitOptions", "EVIDENCE_NOT_IN_KEY", "VerifyOptions", "split_keywords"]
