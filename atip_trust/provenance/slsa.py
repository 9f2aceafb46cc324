"""In-toto statements in DSSE payloads, SLSA provenance facts, and provenance requirement checks.

The DSSE signature has already been verified when this module runs (``keyless.verify_dsse`` or
``legacy_bundle.verify_legacy_dsse``); what is checked here is what that signature covers
(practice 7, after pypi-attestations: payload type, subject digest, predicate type), then the
SLSA facts against the caller's requirements, slsa-verifier style (principle 2 and 3).

Steps of ``check_provenance``, in order:

1. ``subject``: the artifact's sha256 or sha512 equals one subject's digest. If not, the attestation
   is about another artifact: it does not *apply* (counts as absent, principle 2), and the
   check names both digests.
2. ``predicate_type``: the ``--predicate-type`` filter (default: any SLSA provenance type).
3. ``build_type``: SLSA facts are read only from build types this module understands; any other
   build type fails closed, naming it.
4. ``builder_id``, ``source_uri``, ``source_tag``, ``source_branch``: each requirement given becomes a
   check with expected and actual; ``source``: the repository and ref are one of a set of allowed
   (repository, ref globs) pairs (policy ``trust.sources``; an empty set allows no source).
5. ``builder_signer`` and ``slsa_level``: the level comes ONLY from the trusted-builder map (builder id
   pattern → level), and only when the attestation's verified signature proves that builder signed it
   (the entry's signer binding: the certificate's build-signer workflow, its runner environment, or a
   trusted key). A builder id is text the signer wrote; a tenant workflow that writes the generator's id
   into its own provenance gets no level (slsa-verifier ``VerifyBuilderIdentity``: the builder comes
   from the certificate, not from the provenance). A level claimed anywhere else is reported, never used
   (SLSA v1.0 has no level field at all).

Provenance requirements (``provenanceRequired``, ``--builder-id``, ``--min-slsa-level``, ``--source-*``)
are met only by SLSA provenance predicates (``SLSA_PROVENANCE_TYPES``); an SBOM or any other predicate
about the same artifact never satisfies them.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from google.protobuf import json_format
from in_toto_attestation.v1 import statement_pb2
from in_toto_attestation.v1.statement import Statement as ItStatement  # ours is Statement

from atip_trust._base.jsonio import json_path, load_json_file, parse_json
from atip_trust._base.limits import LIMITS
from atip_trust._base.record import Record, field
from atip_trust._base.shipped import shipped_path
from atip_trust.errors import AtipTrustError, BundleError, PolicyError
from atip_trust.facts.digest import Digest
from atip_trust.facts.report import Check

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

#: DSSE payload type of in-toto statements (in-toto attestation spec, Envelope layer).
INTOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_V01 = "https://in-toto.io/Statement/v0.1"
STATEMENT_V1 = "https://in-toto.io/Statement/v1"
STATEMENT_TYPES = (STATEMENT_V01, STATEMENT_V1)
SLSA_PROVENANCE_V02 = "https://slsa.dev/provenance/v0.2"
SLSA_PROVENANCE_V1 = "https://slsa.dev/provenance/v1"
SLSA_PROVENANCE_TYPES = (SLSA_PROVENANCE_V02, SLSA_PROVENANCE_V1)

# -- Build types whose parameters we know how to read -------------------------------------------------
#: SLSA v1 GitHub Actions workflow build types: externalParameters.workflow {ref, repository, path}
#: (https://slsa-framework.github.io/github-actions-buildtypes/workflow/v1, used by npm provenance and
#: sigstore-js; https://actions.github.io/buildtypes/workflow/v1, used by actions/attest-build-provenance).
_GHA_V1_BUILD_TYPES = (
    "https://slsa-framework.github.io/github-actions-buildtypes/workflow/v1",
    "https://actions.github.io/buildtypes/workflow/v1",
)
#: SLSA v1 GitLab runner provenance: ``https://gitlab.com/gitlab-org/gitlab-runner/-/blob/<v>/PROVENANCE.md``
#: with externalParameters {source, entryPoint, variables} (docs.gitlab.com/ci/pipeline_security/slsa/provenance_v1).
_GITLAB_V1_BUILD_TYPE = re.compile(
    r"^https://gitlab\.com/gitlab-org/gitlab-runner/-/blob/[^/]+/PROVENANCE\.md$"
)
#: SLSA v0.2 build types carrying invocation.configSource {uri: git+<repo>@<ref>, digest, entryPoint}:
#: slsa-github-generator generators/builders (``.../generic@v1``, ``.../container@v1``, ``.../go@v1``)
#: and npm provenance (``https://github.com/npm/cli/gha/v2`` from GitHub Actions,
#: ``https://github.com/npm/cli/gitlab/v0alpha1`` from GitLab CI, whose uri has no ref).
_V02_BUILD_TYPES = (
    "https://github.com/slsa-framework/slsa-github-generator/generic@v1",
    "https://github.com/slsa-framework/slsa-github-generator/container@v1",
    "https://github.com/slsa-framework/slsa-github-generator/go@v1",
    "https://github.com/npm/cli/gha/v2",
    "https://github.com/npm/cli/gha@v1",
    "https://github.com/npm/cli/gitlab/v0alpha1",
)


# =====================================================================================================
# Statements
# =====================================================================================================


class Subject(Record):
    name: str
    #: Only the algorithms atip-trust can compare (sha256, sha512); others are kept in ``other``.
    digests: dict[str, Digest]
    other: dict[str, str] = field(default_factory=dict)


class Statement(Record):
    """An in-toto Statement (v0.1 or v1) as signed: type, subjects, predicate type and predicate."""

    statement_type: str
    predicate_type: str
    subjects: tuple[Subject, ...]
    predicate: dict[str, Any]


def _bad(path: list[str | int], message: str) -> BundleError:
    return BundleError(f"in-toto statement: {message}", path=json_path(path))


def _req_str(obj: dict[str, Any], key: str, path: list[str | int]) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value:
        raise _bad(path + [key], f"expected a non-empty string, got {_shown(value)}")
    return value


def _shown(value: Any) -> str:
    if value is None:
        return "nothing"
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _parse_subject(obj: Any, path: list[str | int]) -> Subject:
    if not isinstance(obj, dict):
        raise _bad(path, f"subject must be an object, got {_shown(obj)}")
    name = obj.get("name", "")
    if not isinstance(name, str):
        raise _bad(path + ["name"], f"expected a string, got {_shown(name)}")
    dg = obj.get("digest")
    if not isinstance(dg, dict) or not dg:
        raise _bad(path + ["digest"], "subject needs a non-empty digest object")
    digests: dict[str, Digest] = {}
    other: dict[str, str] = {}
    for alg, value in dg.items():
        if not isinstance(value, str):
            raise _bad(path + ["digest", alg], f"digest value must be a string, got {_shown(value)}")
        if alg in ("sha256", "sha512"):
            # in-toto digests are lowercase hex (ResourceDescriptor spec); Digest.parse refuses others.
            try:
                digests[alg] = Digest.from_hex(alg, value)
            except AtipTrustError as err:
                raise _bad(path + ["digest", alg], err.message) from err
        else:
            other[alg] = value
    return Subject(name=name, digests=digests, other=other)


def _validate_v1_with_in_toto(doc: dict[str, Any]) -> None:
    """Second opinion from in-toto-attestation's own v1 validator (subjects, digests, predicate)."""
    try:
        pb = statement_pb2.Statement()
        json_format.ParseDict(doc, pb, ignore_unknown_fields=True)
        ItStatement.copy_from_pb(pb).validate()
    except Exception as err:  # noqa: BLE001 - protobuf raises several unrelated types; map them all
        raise _bad([], f"rejected by in-toto-attestation v1 validation: {err}") from err


def parse_statement(payload_type: str, payload: bytes) -> Statement:
    """Parse a verified DSSE payload as an in-toto Statement v0.1 or v1; fail closed on anything else.

    Raises ``BundleError`` naming the JSON path of the first problem.
    """
    if payload_type != INTOTO_PAYLOAD_TYPE:
        raise BundleError(
            f"DSSE payloadType is {payload_type!r}, expected {INTOTO_PAYLOAD_TYPE!r}",
            path="$.dsseEnvelope.payloadType",
        )
    try:
        doc = parse_json(payload, what="in-toto statement", max_depth=LIMITS.json_depth)
    except AtipTrustError as err:
        raise BundleError(f"DSSE payload: {err.message}", path=err.path) from err
    if not isinstance(doc, dict):
        raise _bad([], f"expected a JSON object, got {type(doc).__name__}")
    stype = _req_str(doc, "_type", [])
    if stype not in STATEMENT_TYPES:
        raise _bad(["_type"], f"unsupported statement type {stype!r}; expected one of {', '.join(STATEMENT_TYPES)}")
    ptype = _req_str(doc, "predicateType", [])
    subjects = doc.get("subject")
    if not isinstance(subjects, list) or not subjects:
        raise _bad(["subject"], "expected a non-empty list of subjects")
    if len(subjects) > 10_000:
        raise _bad(["subject"], f"{len(subjects)} subjects is over the cap of 10000")
    parsed = tuple(_parse_subject(s, ["subject", i]) for i, s in enumerate(subjects))
    predicate = doc.get("predicate", {})
    if not isinstance(predicate, dict):
        raise _bad(["predicate"], f"predicate must be an object, got {_shown(predicate)}")
    if stype == STATEMENT_V1:
        _validate_v1_with_in_toto(doc)
    return Statement(statement_type=stype, predicate_type=ptype, subjects=parsed, predicate=predicate)


def match_subject(statement: Statement, artifact_digests: dict[str, Digest]) -> Subject | None:
    """The first subject whose sha256 or sha512 equals the artifact's (constant-time Digest ==)."""
    for subject in statement.subjects:
        for alg, mine in artifact_digests.items():
            theirs = subject.digests.get(alg)
            if theirs is not None and theirs == mine:
                return subject
    return None


# =====================================================================================================
# SLSA facts
# =====================================================================================================


class SlsaFacts(Record):
    """What a SLSA provenance predicate says about the build, normalised across v0.2 and v1."""

    predicate_type: str
    builder_id: str | None
    build_type: str | None
    #: True when ``build_type`` is one this module knows how to read; facts below are None otherwise.
    build_type_known: bool
    #: Source repository, normalised (``https://github.com/o/r``: no ``git+``, no ``.git``, no ``@ref``).
    source_uri: str | None = None
    #: Git ref as written (``refs/tags/v1.2.3``, ``refs/heads/main``), or None when not stated.
    source_ref: str | None = None
    #: Commit digest, ``{"gitCommit"|"sha1": hex}`` as in the provenance.
    source_digest: dict[str, str] | None = None
    #: Workflow file path (GitHub) or job name (GitLab) that ran the build.
    workflow: str | None = None
    #: A level the provenance itself claims (never used for decisions; reported only).
    claimed_level: int | None = None

    def source_json(self) -> dict[str, Any] | None:
        if self.source_uri is None and self.source_ref is None and self.source_digest is None:
            return None
        return {
            "uri": self.source_uri,
            "ref": self.source_ref,
            "digest": dict(self.source_digest) if self.source_digest else None,
            "workflow": self.workflow,
        }


# Memoised (a pure function of one string): a decision compares every allowed source of the policy
# with the report's, on every call.
@functools.lru_cache(maxsize=1024)
def normalize_source_uri(uri: str) -> str:
    """Normalise a repository URI for comparison, after slsa-verifier's ``NormalizeGitURI``.

    slsa-verifier (utils.NormalizeGitURI + ParseGitURIAndRef) prefixes ``git+https://`` when there is no
    scheme and compares the part before ``@`` exactly. We compare without the ``git+`` prefix instead,
    and also drop one trailing ``/`` and ``.git`` (npm writes ``git+https://github.com/o/r.git``).
    The host is lower-cased (DNS is case-insensitive); the path is compared exactly.
    """
    s = uri.strip()
    if s.startswith("git+"):
        s = s[4:]
    if "://" not in s:
        s = "https://" + s
    scheme, _, rest = s.partition("://")
    host, slash, path = rest.partition("/")
    # A ``@ref`` suffix belongs to the ref, not the repository (``...repo@refs/heads/main``).
    if "@" in path:
        path = path.split("@", 1)[0]
    path = path.rstrip("/")
    if path.endswith(".git"):
        path = path[:-4]
    return f"{scheme.lower()}://{host.lower()}{slash}{path}"


def source_matches(repository: str, refs: Sequence[str], uri: str | None, ref: str | None) -> bool:
    """Is (``uri``, ``ref``) the allowed ``repository`` at one of ``refs``? The one matcher for allowed
    sources, used by verification (``check_provenance``) and by policy decisions (``policy.decide``).

    Repositories compare after ``normalize_source_uri`` (slsa-verifier's rules); a ref glob matches the
    whole ref (``fnmatchcase``: no case folding, ``refs/tags/v*``); no refs means any ref.
    """
    if not isinstance(uri, str) or normalize_source_uri(repository) != normalize_source_uri(uri):
        return False
    if not refs:
        return True
    return isinstance(ref, str) and any(fnmatch.fnmatchcase(ref, pat) for pat in refs)


class AllowedSource(Record):
    """One allowed source repository and the refs it may be built from (policy ``trust.sources``)."""

    repository: str
    refs: tuple[str, ...] = ()

    def matches(self, uri: str | None, ref: str | None) -> bool:
        return source_matches(self.repository, self.refs, uri, ref)

    def describe(self) -> str:
        return f"{normalize_source_uri(self.repository)} refs {', '.join(self.refs) or '*'}"


def _split_uri_ref(uri: str) -> tuple[str, str | None]:
    """``git+https://github.com/o/r@refs/tags/v1`` → (``https://github.com/o/r``, ``refs/tags/v1``)."""
    s = uri[4:] if uri.startswith("git+") else uri
    scheme, sep, rest = s.partition("://")
    if "@" in rest:
        base, ref = rest.split("@", 1)
        return normalize_source_uri(f"{scheme}{sep}{base}"), ref or None
    return normalize_source_uri(s), None


def _get(obj: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(k)
    return obj


def _opt_str(obj: Any, path: list[str | int]) -> str | None:
    if obj is None:
        return None
    if not isinstance(obj, str):
        raise _bad(path, f"expected a string, got {_shown(obj)}")
    return obj


def _str_digest(obj: Any, path: list[str | int]) -> dict[str, str] | None:
    if obj is None:
        return None
    if not isinstance(obj, dict) or not all(isinstance(v, str) for v in obj.values()):
        raise _bad(path, f"expected an object of strings, got {_shown(obj)}")
    return {str(k): str(v) for k, v in obj.items()}


def _claimed_level(predicate: dict[str, Any]) -> int | None:
    # Some producers write a level into metadata; SLSA v1.0 defines no such field. Reported only.
    for path in (("metadata", "slsaLevel"), ("runDetails", "metadata", "slsaLevel"), ("slsaLevel",)):
        value = _get(predicate, *path)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _facts_v02(pred: dict[str, Any]) -> SlsaFacts:
    base: list[str | int] = ["predicate"]
    builder_id = _opt_str(_get(pred, "builder", "id"), base + ["builder", "id"])
    build_type = _opt_str(pred.get("buildType"), base + ["buildType"])
    if not builder_id:
        raise _bad(base + ["builder", "id"], "SLSA v0.2 provenance needs builder.id")
    if not build_type:
        raise _bad(base + ["buildType"], "SLSA v0.2 provenance needs buildType")
    common: dict[str, Any] = dict(
        predicate_type=SLSA_PROVENANCE_V02,
        builder_id=builder_id,
        build_type=build_type,
        claimed_level=_claimed_level(pred),
    )
    if build_type not in _V02_BUILD_TYPES:
        return SlsaFacts(build_type_known=False, **common)
    cs_path = base + ["invocation", "configSource"]
    uri = _opt_str(_get(pred, "invocation", "configSource", "uri"), cs_path + ["uri"])
    if not uri:
        raise _bad(cs_path + ["uri"], f"build type {build_type} needs invocation.configSource.uri")
    source_uri, ref = _split_uri_ref(uri)
    digest = _str_digest(_get(pred, "invocation", "configSource", "digest"), cs_path + ["digest"])
    entry = _opt_str(_get(pred, "invocation", "configSource", "entryPoint"), cs_path + ["entryPoint"])
    return SlsaFacts(
        build_type_known=True,
        source_uri=source_uri,
        source_ref=ref,
        source_digest=digest,
        workflow=entry,
        **common,
    )


def _facts_v1(pred: dict[str, Any]) -> SlsaFacts:
    base: list[str | int] = ["predicate"]
    builder_id = _opt_str(_get(pred, "runDetails", "builder", "id"), base + ["runDetails", "builder", "id"])
    build_type = _opt_str(
        _get(pred, "buildDefinition", "buildType"), base + ["buildDefinition", "buildType"]
    )
    if not builder_id:
        raise _bad(base + ["runDetails", "builder", "id"], "SLSA v1 provenance needs runDetails.builder.id")
    if not build_type:
        raise _bad(base + ["buildDefinition", "buildType"], "SLSA v1 provenance needs buildDefinition.buildType")
    common: dict[str, Any] = dict(
        predicate_type=SLSA_PROVENANCE_V1,
        builder_id=builder_id,
        build_type=build_type,
        claimed_level=_claimed_level(pred),
    )
    ext_path = base + ["buildDefinition", "externalParameters"]
    ext = _get(pred, "buildDefinition", "externalParameters")
    deps = _get(pred, "buildDefinition", "resolvedDependencies")
    dep0: dict[str, Any] = {}
    if deps is not None:
        if not isinstance(deps, list) or not all(isinstance(d, dict) for d in deps):
            raise _bad(base + ["buildDefinition", "resolvedDependencies"], "expected a list of objects")
        if deps:
            dep0 = deps[0]
    dep_path: list[str | int] = base + ["buildDefinition", "resolvedDependencies", 0]

    if build_type in _GHA_V1_BUILD_TYPES:
        wf_path = ext_path + ["workflow"]
        repo = _opt_str(_get(ext, "workflow", "repository"), wf_path + ["repository"])
        ref = _opt_str(_get(ext, "workflow", "ref"), wf_path + ["ref"])
        wf = _opt_str(_get(ext, "workflow", "path"), wf_path + ["path"])
        if not repo or not ref or not wf:
            raise _bad(wf_path, f"build type {build_type} needs workflow.repository, .ref and .path")
        source_uri = normalize_source_uri(repo)
        digest = _str_digest(dep0.get("digest"), dep_path + ["digest"])
        dep_uri = _opt_str(dep0.get("uri"), dep_path + ["uri"])
        if dep_uri is not None:
            # The first resolved dependency is the source checkout (slsa-verifier checks it too): it
            # must name the same repository and ref as the workflow parameters, or the facts disagree.
            dep_repo, dep_ref = _split_uri_ref(dep_uri)
            if dep_repo != source_uri or (dep_ref is not None and dep_ref != ref):
                raise _bad(
                    dep_path + ["uri"],
                    f"source {dep_uri!r} disagrees with workflow {repo}@{ref}",
                )
        return SlsaFacts(
            build_type_known=True,
            source_uri=source_uri,
            source_ref=ref,
            source_digest=digest,
            workflow=wf,
            **common,
        )
    if _GITLAB_V1_BUILD_TYPE.match(build_type):
        src = _opt_str(_get(ext, "source"), ext_path + ["source"])
        if not src:
            raise _bad(ext_path + ["source"], f"build type {build_type} needs externalParameters.source")
        entry = _opt_str(_get(ext, "entryPoint"), ext_path + ["entryPoint"])
        digest = _str_digest(dep0.get("digest"), dep_path + ["digest"])
        ref = None
        dep_uri = _opt_str(dep0.get("uri"), dep_path + ["uri"])
        if dep_uri is not None:
            _, ref = _split_uri_ref(dep_uri)
        return SlsaFacts(
            build_type_known=True,
            source_uri=normalize_source_uri(src),
            source_ref=ref,
            source_digest=digest,
            workflow=entry,
            **common,
        )
    return SlsaFacts(build_type_known=False, **common)


def slsa_facts(statement: Statement) -> SlsaFacts | None:
    """SLSA facts of a provenance statement; None when the predicate is not SLSA provenance.

    Raises ``BundleError`` (with the JSON path) when a SLSA predicate is malformed.
    """
    pred = statement.predicate
    if statement.predicate_type == SLSA_PROVENANCE_V02:
        return _facts_v02(pred)
    if statement.predicate_type == SLSA_PROVENANCE_V1:
        return _facts_v1(pred)
    return None


# =====================================================================================================
# Builder id patterns and the trusted-builder map
# =====================================================================================================

#: What a ``*`` in a builder-id pattern may stand for: one ref name segment (no ``/``, ``@``, spaces).
_GLOB_TAIL = re.compile(r"^[A-Za-z0-9._+-]+$")


class BuilderPattern(Record):
    """A builder id: exact, or ``<id>@refs/<kind>/<prefix>*`` (a glob only at the end of the ref).

    principle 3: never a substring or prefix match on the id itself. The part before ``@`` is
    compared exactly; ``*`` stands for one ref-name segment (``[A-Za-z0-9._+-]+``).
    """

    text: str

    def __post_init__(self) -> None:
        if "*" in self.text:
            head, at, ref = self.text.partition("@")
            if (
                not at
                or "*" in head
                or not ref.startswith("refs/")
                or ref.count("*") != 1
                or not ref.endswith("*")
            ):
                raise PolicyError(
                    f"builder id pattern {self.text!r}: '*' is only allowed once, at the end of the "
                    "ref after '@refs/' (for example '...@refs/tags/v*')"
                )

    @property
    def is_glob(self) -> bool:
        return "*" in self.text

    @property
    def regexp(self) -> str:
        """The same match as a whole-string regexp (a signer identity rule, signature/identity.py)."""
        if not self.is_glob:
            return re.escape(self.text)
        return re.escape(self.text[:-1]) + _GLOB_TAIL.pattern[1:-1]

    def matches(self, builder_id: str) -> bool:
        if not self.is_glob:
            return builder_id == self.text
        prefix = self.text[:-1]
        if not builder_id.startswith(prefix):
            return False
        # The id part (before '@') must be identical, so '...generator.yml-evil@refs/tags/v1' fails:
        if builder_id.partition("@")[0] != self.text.partition("@")[0]:
            return False
        return bool(_GLOB_TAIL.match(builder_id[len(prefix):]))


#: The OIDC issuer of GitHub Actions tokens, whose Fulcio certificates carry the workflow extensions.
GITHUB_ACTIONS_ISSUER = "https://token.actions.githubusercontent.com"
_KEY_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


class BuildSigner(Record):
    """Who signed an attestation, from its *verified* signature, never from the statement.

    Keyless: the Fulcio certificate's issuer, subject alternative names and extensions (identity.py short
    names: ``build_signer_uri`` is OID 1.3.6.1.4.1.57264.1.9, ``runner_environment`` .1.11). Key-based:
    the digest (``sha256:<hex>`` of the DER SubjectPublicKeyInfo) of the trusted key that verified it.
    """

    issuer: str | None = None
    identities: tuple[str, ...] = ()
    extensions: Mapping[str, str] = field(default_factory=dict)
    key_digest: str | None = None

    @property
    def workflow_uris(self) -> tuple[str, ...]:
        """The signing workflow as the certificate states it: the Build Signer URI (.1.9) and every SAN.

        Fulcio writes both from the token's ``job_workflow_ref`` for GitHub Actions; slsa-verifier reads
        the SAN. Both must name the builder, so a certificate that disagrees with itself proves nothing.
        """
        out: list[str] = []
        bsu = self.extensions.get("build_signer_uri")
        if bsu:
            out.append(bsu)
        out.extend(i for i in self.identities if i not in out)
        return tuple(out)

    def describe(self) -> str:
        if self.key_digest is not None:
            return f"key {self.key_digest}"
        env = self.extensions.get("runner_environment")
        return (f"{', '.join(self.workflow_uris) or 'no identity'} from {self.issuer}"
                f"; runner_environment {env if env is not None else 'absent'}")


def binding_json(workflows: Sequence[str], runner_environment: str | None, issuer: str | None,
                 keys: Sequence[str]) -> dict[str, Any]:
    """A signer binding in the JSON names of the trusted-builder map and the policy schema, only the
    fields stated (``SignerBinding``, and policy/model.py ``BuilderRule`` as policy states it)."""
    out: dict[str, Any] = {}
    if workflows:
        out["signerWorkflow"] = list(workflows)
    if runner_environment is not None:
        out["runnerEnvironment"] = runner_environment
    if issuer is not None:
        out["signerIssuer"] = issuer
    if keys:
        out["signerKey"] = list(keys)
    return out


class SignerBinding(Record):
    """How a trusted-builder entry's signature proves the builder (fields of the map entry).

    ``signerWorkflow``: the certificate's build-signer workflow (and SAN) must match one of these builder
    id patterns (a glob only at the end of the ref, as for builder ids): the slsa-github-generator signs
    with its own reusable workflow at a release tag (BYOB builders with the delegator's), which a tenant
    workflow cannot do. ``runnerEnvironment``: the certificate's Runner Environment extension (set by
    Fulcio from the OIDC token, not by the workflow) must equal it (``github-hosted``; slsa-verifier
    refuses npm's ``github-hosted`` builder when it is absent or ``self-hosted``). ``signerIssuer``: the
    certificate's OIDC issuer must equal it. ``signerKey``: key-signed provenance counts when the key's
    digest is listed. An entry stating none of ``signerWorkflow``, ``runnerEnvironment`` or ``signerKey``
    grants no level: nothing would tie the level to the signature (fail closed).
    """

    workflows: tuple[BuilderPattern, ...] = ()
    runner_environment: str | None = None
    issuer: str | None = None
    keys: tuple[str, ...] = ()

    @property
    def stated(self) -> bool:
        return bool(self.workflows or self.runner_environment is not None or self.keys)

    def describe(self) -> str:
        parts: list[str] = []
        if self.issuer is not None:
            parts.append(f"issuer {self.issuer}")
        if self.workflows:
            parts.append("build signer " + " or ".join(w.text for w in self.workflows))
        if self.runner_environment is not None:
            parts.append(f"runner_environment {self.runner_environment}")
        keyless = "; ".join(parts)
        if self.keys:
            keyed = "key " + " or ".join(self.keys)
            return f"{keyless}, or {keyed}" if keyless else keyed
        return keyless or "no signer binding stated (no level)"

    def to_json(self) -> dict[str, Any]:
        return binding_json([w.text for w in self.workflows], self.runner_environment, self.issuer, self.keys)

    @classmethod
    def from_json(cls, b: Mapping[str, Any], where: str) -> SignerBinding:
        """From a map or policy entry's ``signerWorkflow`` (string or list), ``runnerEnvironment``,
        ``signerIssuer`` and ``signerKey`` (string or list of ``sha256:<hex>``)."""

        def strings(key: str) -> tuple[str, ...]:
            raw = b.get(key)
            if raw is None:
                return ()
            items = [raw] if isinstance(raw, str) else raw
            if not isinstance(items, list) or not items or not all(isinstance(x, str) and x for x in items):
                raise PolicyError(f"'{key}' must be a non-empty string or list of them, got {_shown(raw)}",
                                  path=f"{where}.{key}")
            return tuple(items)

        workflows: list[BuilderPattern] = []
        for i, text in enumerate(strings("signerWorkflow")):
            try:
                workflows.append(BuilderPattern(text))
            except PolicyError as err:
                err.path = f"{where}.signerWorkflow" + (f"[{i}]" if isinstance(b.get("signerWorkflow"), list) else "")
                raise
        keys = strings("signerKey")
        for k in keys:
            if not _KEY_DIGEST.match(k):
                raise PolicyError(f"'signerKey' entries are sha256:<64 hex>, got {k!r}", path=f"{where}.signerKey")
        single: dict[str, str | None] = {}
        for key in ("runnerEnvironment", "signerIssuer"):
            value = b.get(key)
            if value is not None and (not isinstance(value, str) or not value):
                raise PolicyError(f"'{key}' must be a non-empty string, got {_shown(value)}", path=f"{where}.{key}")
            single[key] = value
        return cls(tuple(workflows), single["runnerEnvironment"], single["signerIssuer"], keys)

    def proves(self, builder_id: str, signer: BuildSigner | None) -> tuple[bool, str]:
        """Does this verified signer prove ``builder_id``? (ok, what the certificate or key showed)."""
        if signer is None:
            return False, "no verified signer"
        actual = signer.describe()
        if not self.stated:
            return False, actual
        if signer.key_digest is not None:
            return signer.key_digest in self.keys, actual
        if not (self.workflows or self.runner_environment is not None):
            return False, actual  # only keys listed; a certificate cannot be one of them
        if self.issuer is not None and signer.issuer != self.issuer:
            return False, actual
        if self.runner_environment is not None:
            if signer.extensions.get("runner_environment") != self.runner_environment:
                return False, actual
        if self.workflows:
            uris = signer.workflow_uris
            if not uris or not all(any(w.matches(u) for w in self.workflows) for u in uris):
                return False, actual
            # A builder that signs as itself (not a BYOB delegator signing for a builder workflow) must
            # name exactly the workflow and tag that signed (slsa-verifier compares the certificate's
            # builder id with the provenance's): the generator at v1.9.0 cannot vouch for "v2.0.0".
            head = builder_id.partition("@")[0]
            if any(u.partition("@")[0] == head for u in uris) and any(u != builder_id for u in uris):
                return False, actual
        return True, actual


class BuilderEntry(Record):
    pattern: BuilderPattern
    level: int
    name: str = ''
    source: str = ''
    #: How the attestation's signature must prove this builder; without one the entry grants no level.
    binding: SignerBinding = field(default_factory=SignerBinding)


class BuilderMap(Record):
    """Trusted builders: builder id pattern → SLSA Build level (SLSA v1.0 Build track, levels 0–3)."""

    entries: tuple[BuilderEntry, ...]
    origin: str = ''

    @classmethod
    def from_json(cls, doc: Any, *, origin: str = "") -> BuilderMap:
        """From ``{"builders": [{"id": ..., "level": 0-3, "name"?, "source"?, "signerWorkflow"?,
        "runnerEnvironment"?, "signerIssuer"?, "signerKey"?}], ...}`` (``SignerBinding``)."""
        if not isinstance(doc, dict):
            raise PolicyError("trusted-builder map must be a JSON object", path=origin or "$")
        builders = doc.get("builders")
        if not isinstance(builders, list):
            raise PolicyError("trusted-builder map needs a 'builders' list", path=f"{origin}$.builders")
        entries: list[BuilderEntry] = []
        for i, b in enumerate(builders):
            where = f"{origin}$.builders[{i}]"
            if not isinstance(b, dict):
                raise PolicyError("expected an object", path=where)
            bid, level = b.get("id"), b.get("level")
            if not isinstance(bid, str) or not bid:
                raise PolicyError("'id' must be a non-empty string", path=where + ".id")
            if not isinstance(level, int) or isinstance(level, bool) or not 0 <= level <= 3:
                raise PolicyError(f"'level' must be an integer 0-3, got {_shown(level)}", path=where + ".level")
            try:
                pattern = BuilderPattern(bid)
            except PolicyError as err:
                err.path = where + ".id"
                raise
            entries.append(
                BuilderEntry(pattern, level, str(b.get("name", "")), str(b.get("source", "")),
                             SignerBinding.from_json(b, where))
            )
        return cls(tuple(entries), origin)

    @classmethod
    def load(cls, path: str | Path) -> BuilderMap:
        try:
            doc = load_json_file(path, LIMITS.policy_bytes, what="trusted-builder map")
        except AtipTrustError as err:
            raise PolicyError(err.message, path=err.path or str(path)) from err
        return cls.from_json(doc, origin=str(path))

    @classmethod
    def default(cls) -> BuilderMap:
        """The map shipped in ``policies/trusted-builders.json`` (installed as ``atip_trust._policies``)."""

        try:
            with open(shipped_path("policies", "trusted-builders.json"), "rb") as f:
                raw = f.read()
        except OSError as err:
            raise PolicyError(f"the default trusted-builder map cannot be read: {err}") from err
        return cls.from_json(parse_json(raw, what="trusted-builder map"), origin="trusted-builders.json")

    def lookup(self, builder_id: str) -> BuilderEntry | None:
        """The entry for ``builder_id``; when several match, the lowest level wins (fail safe)."""
        found = [e for e in self.entries if e.pattern.matches(builder_id)]
        if not found:
            return None
        return min(found, key=lambda e: e.level)


# =====================================================================================================
# Requirements and the ordered check
# =====================================================================================================


class ProvenanceRequirements(Record):
    """slsa-verifier's flags (README): every field None means "not required"."""

    predicate_type: str | None = None
    builder_id: str | None = None
    source_uri: str | None = None
    source_tag: str | None = None
    source_branch: str | None = None
    min_slsa_level: int | None = None
    #: Allowed (repository, refs) pairs; None: no requirement; empty: no source is allowed.
    sources: tuple[AllowedSource, ...] | None = None
    #: Policy ``provenanceRequired``: some SLSA provenance must name the artifact.
    provenance_required: bool = False

    def __post_init__(self) -> None:
        if self.builder_id is not None:
            BuilderPattern(self.builder_id)  # validates the glob form (PolicyError)
        if self.min_slsa_level is not None and not 0 <= self.min_slsa_level <= 3:
            raise PolicyError(f"--min-slsa-level must be 0-3 (SLSA v1.0 Build track), got {self.min_slsa_level}")

    @property
    def needs_slsa(self) -> bool:
        """Only SLSA provenance can meet these requirements (everything but a bare predicate filter)."""
        return self.provenance_required or self.sources is not None or any(
            v is not None
            for v in (self.builder_id, self.source_uri, self.source_tag, self.source_branch, self.min_slsa_level)
        )

    @property
    def any(self) -> bool:
        return self.provenance_required or self.sources is not None or any(
            v is not None
            for v in (
                self.predicate_type,
                self.builder_id,
                self.source_uri,
                self.source_tag,
                self.source_branch,
                self.min_slsa_level,
            )
        )


class ProvenanceOutcome(Record, frozen=False):
    """Result of checking one attestation against one artifact and the requirements.

    ``applies`` False: the attestation names another artifact (or is filtered out by predicate type);
    it counts as absent. ``passed``: applies and every check passed. ``level``: from the builder map.
    """

    checks: list[Check]
    applies: bool
    passed: bool
    statement: Statement | None = None
    facts: SlsaFacts | None = None
    level: int | None = None
    level_source: str | None = None


def _check(name: str, ok: bool, message: str, expected: Any, actual: Any, evidence: str | None) -> Check:
    return Check(
        name=name,
        status="pass" if ok else "fail",
        message=message,
        expected=expected,
        actual=actual,
        evidence=evidence,
        impact="none" if ok else "provenance",
    )


def _ref_kind(ref: str | None, kind: str) -> str | None:
    prefix = f"refs/{kind}/"
    if ref is not None and ref.startswith(prefix):
        return ref[len(prefix):]
    return None


class _Checking(Record, frozen=False):
    """One ``check_provenance`` call: what every step reads, the checks made so far, and what step (4)
    finds about the builder for step (5)."""

    statement: Statement
    requirements: ProvenanceRequirements
    evidence: str | None
    checks: list[Check] = field(default_factory=list)
    #: The trusted-builder map's entry for the provenance's builder id, if any.
    entry: BuilderEntry | None = None
    #: Whether the verified signer proves that entry's builder, and the signer as reported.
    proven: bool = False
    signer_shown: str | None = None

    def add(self, name: str, ok: bool, message: str, expected: Any, actual: Any) -> None:
        self.checks.append(_check(name, ok, message, expected, actual, self.evidence))

    def stop(self, *, applies: bool, passed: bool = False) -> ProvenanceOutcome:
        return ProvenanceOutcome(self.checks, applies=applies, passed=passed, statement=self.statement)


def check_provenance(
    statement: Statement,
    artifact_digests: dict[str, Digest],
    requirements: ProvenanceRequirements,
    builders: BuilderMap,
    *,
    evidence: str | None = None,
    signer: BuildSigner | None = None,
) -> ProvenanceOutcome:
    """Run steps 1–5 of the module docstring on one verified statement. Never raises for bad content.

    ``signer`` is who the verified signature says signed the statement; without it no builder is proven,
    so no SLSA level is granted.
    """
    c = _Checking(statement, requirements, evidence)
    stop = _step_subject(c, artifact_digests)
    if stop is None:
        stop = _step_predicate_type(c)
    if stop is not None:
        return stop
    facts = _step_build_type(c)
    if isinstance(facts, ProvenanceOutcome):
        return facts
    _step_builder(c, facts, builders, signer)
    _step_source(c, facts)
    level, level_source = _step_level(c, facts)
    passed = not any(check.failed for check in c.checks)
    return ProvenanceOutcome(
        c.checks, applies=True, passed=passed, statement=statement, facts=facts,
        level=level, level_source=level_source,
    )


def _step_subject(c: _Checking, artifact_digests: dict[str, Digest]) -> ProvenanceOutcome | None:
    """(1) subject: does this attestation talk about this artifact at all? (An outcome when it does not.)"""
    statement = c.statement
    subject = match_subject(statement, artifact_digests)
    if subject is None:
        theirs = [
            f"{s.name or '?'} " + ", ".join(str(d) for d in s.digests.values())
            for s in statement.subjects[:10]
        ]
        c.add(
            "subject",
            False,
            "the attestation names another artifact, so it does not apply to this one",
            [str(d) for d in artifact_digests.values()],
            theirs,
        )
        return c.stop(applies=False)
    matched_alg = next(a for a, d in artifact_digests.items() if subject.digests.get(a) == d)
    c.add(
        "subject",
        True,
        f"subject {subject.name!r} matches by {matched_alg}",
        str(artifact_digests[matched_alg]),
        str(subject.digests[matched_alg]),
    )
    return None


def _step_predicate_type(c: _Checking) -> ProvenanceOutcome | None:
    """(2) predicate type: the filter, or by default any SLSA provenance type. (An outcome when it fails.)"""
    statement, requirements = c.statement, c.requirements
    wanted = requirements.predicate_type
    if wanted is not None and statement.predicate_type != wanted:
        c.add("predicate_type", False, "predicate type is not the one required",
              wanted, statement.predicate_type)
        return c.stop(applies=False)
    if requirements.needs_slsa and statement.predicate_type not in SLSA_PROVENANCE_TYPES:
        # An SBOM, a release attestation or an unknown predicate about this artifact is not provenance:
        # it says nothing about who built it, so it never meets a provenance requirement.
        c.add("predicate_type", False,
              "not SLSA provenance: provenance requirements are met only by SLSA provenance",
              list(SLSA_PROVENANCE_TYPES), statement.predicate_type)
        return c.stop(applies=True)
    c.add("predicate_type", True, "", wanted or "any", statement.predicate_type)
    return None


def _step_build_type(c: _Checking) -> SlsaFacts | ProvenanceOutcome:
    """(3) SLSA facts from a build type we understand (an outcome when there are none to check)."""
    try:
        facts = slsa_facts(c.statement)
    except BundleError as err:
        c.checks.append(
            Check("build_type", "error", err.diagnostics(), None, None, c.evidence, "provenance")
        )
        return c.stop(applies=True)
    if facts is None:
        # Not SLSA provenance and nothing needs it to be (checked in step 2).
        return c.stop(applies=True, passed=True)
    if not facts.build_type_known:
        c.add("build_type", False,
              f"build type {facts.build_type} is not one atip-trust can read; failing closed",
              "a supported build type", facts.build_type)
    else:
        c.add("build_type", True, "", None, facts.build_type)
    return facts


def _step_builder(c: _Checking, facts: SlsaFacts, builders: BuilderMap, signer: BuildSigner | None) -> None:
    """(4) builder requirements; keeps the map entry and whether the signer proves it for step (5)."""
    requirements = c.requirements
    entry = c.entry = builders.lookup(facts.builder_id) if facts.builder_id else None
    c.proven, c.signer_shown = (
        entry.binding.proves(facts.builder_id, signer) if entry is not None and facts.builder_id
        else (False, signer.describe() if signer is not None else None)
    )
    if requirements.builder_id is not None:
        pat = BuilderPattern(requirements.builder_id)
        ok = facts.builder_id is not None and pat.matches(facts.builder_id)
        c.add(
            "builder_id", ok,
            "" if ok else "builder id does not match" + (" the glob" if pat.is_glob else " exactly"),
            requirements.builder_id, facts.builder_id,
        )
    if entry is not None and (requirements.builder_id is not None or requirements.min_slsa_level is not None):
        # The builder id is what the signer wrote. A map entry that says how its signature proves it
        # makes it a fact; an entry stating no binding leaves it a claim: no level (step 5), and a
        # --builder-id still compares the claim, as it does for builders outside the map.
        if entry.binding.stated:
            c.add(
                "builder_signer", c.proven,
                f"signed by builder {entry.pattern.text!r}" if c.proven else
                f"builder {facts.builder_id!r} is named by the provenance but its signature does "
                "not come from that builder, so the builder id is only a claim (no level)",
                entry.binding.describe(), c.signer_shown,
            )
        else:
            c.checks.append(
                Check("builder_signer", "skip",
                      f"trusted-builder entry {entry.pattern.text!r} states no signer binding "
                      "(signerWorkflow, runnerEnvironment or signerKey), so it grants no level",
                      entry.binding.describe(), c.signer_shown, c.evidence)
            )


def _step_source(c: _Checking, facts: SlsaFacts) -> None:
    """(4) source requirements: repository, tag, branch, and the policy's allowed sources."""
    requirements = c.requirements
    if requirements.source_uri is not None:
        want = normalize_source_uri(requirements.source_uri)
        ok = facts.build_type_known and facts.source_uri == want
        c.add("source_uri", ok, "" if ok else "source repository differs", want, facts.source_uri)
    # A tag and a branch are checked alike: the ref of that kind, without its refs/<kind>/ prefix.
    for name, want_ref, kind, noun in (("source_tag", requirements.source_tag, "tags", "tag"),
                                       ("source_branch", requirements.source_branch, "heads", "branch")):
        if want_ref is not None:
            want_name = want_ref.removeprefix(f"refs/{kind}/")
            ok = facts.build_type_known and _ref_kind(facts.source_ref, kind) == want_name
            c.add(name, ok, "" if ok else f"not built from that {noun}", f"refs/{kind}/{want_name}",
                  facts.source_ref)

    if requirements.sources is not None:
        ok = facts.build_type_known and any(
            s.matches(facts.source_uri, facts.source_ref) for s in requirements.sources
        )
        c.add("source", ok, "" if ok else "source repository or ref is not one policy allows",
              [s.describe() for s in requirements.sources] or "no source (empty list)",
              f"{facts.source_uri} {facts.source_ref}")


def _step_level(c: _Checking, facts: SlsaFacts) -> tuple[int | None, str | None]:
    """(5) level from the trusted-builder map only, and only for a builder its signature proves."""
    entry, proven, requirements = c.entry, c.proven, c.requirements
    level = entry.level if entry is not None and proven else None
    level_source = entry.pattern.text if entry is not None and proven else None
    if requirements.min_slsa_level is not None:
        ok = level is not None and level >= requirements.min_slsa_level
        if entry is not None and not proven:
            msg = (f"builder {facts.builder_id!r} maps to L{entry.level} via {entry.pattern.text!r}, but "
                   f"the signature does not prove that builder (expected {entry.binding.describe()}; "
                   f"actual {c.signer_shown}), so it has no level")
        elif level is None:
            msg = f"builder {facts.builder_id!r} is not in the trusted-builder map, so it has no level"
        elif not ok:
            msg = f"builder maps to SLSA Build L{level} via {level_source!r}"
        else:
            msg = f"via {level_source!r}"
        if facts.claimed_level is not None:
            msg += f" (the provenance claims level {facts.claimed_level}; claims are not used)"
        c.add("slsa_level", ok, msg, f">= {requirements.min_slsa_level}", level)
    return level, level_source


def missing_provenance_checks(requirements: ProvenanceRequirements) -> list[Check]:
    """Checks for when no applicable provenance exists: every requirement fails (principle 2,
    "a missing provenance never passes a minimum SLSA level")."""
    out: list[Check] = []
    for name, value in (
        ("predicate_type", requirements.predicate_type),
        ("builder_id", requirements.builder_id),
        ("source_uri", requirements.source_uri),
        ("source_tag", requirements.source_tag),
        ("source_branch", requirements.source_branch),
        ("slsa_level", None if requirements.min_slsa_level is None else f">= {requirements.min_slsa_level}"),
        ("source", None if requirements.sources is None
         else [s.describe() for s in requirements.sources] or "no source (empty list)"),
    ):
        if value is not None:
            out.append(
                Check(name, "fail", "no applicable provenance for this artifact", value, None, None, "provenance")
            )
    return out


__all__ = [
    "INTOTO_PAYLOAD_TYPE",
    "SLSA_PROVENANCE_V02",
    "SLSA_PROVENANCE_V1",
    "Subject",
    "Statement",
    "SlsaFacts",
    "BuilderPattern",
    "BuilderEntry",
    "BuilderMap",
    "BuildSigner",
    "SignerBinding",
    "GITHUB_ACTIONS_ISSUER",
    "SLSA_PROVENANCE_TYPES",
    "ProvenanceRequirements",
    "ProvenanceOutcome",
    "parse_statement",
    "match_subject",
    "slsa_facts",
    "normalize_source_uri",
    "AllowedSource",
    "check_provenance",
    "missing_provenance_checks",
]
