"""Records (``atip_trust/_base/record.py``): every value class states its fields once, as annotations,
and inherits the rest — the generated-free ``__init__`` (binding arguments as a dataclass does, with the
same ``TypeError``\\ s), slots, equality, hashing, ``repr``, pickling, ``replace`` — and mypy checks each
constructor call against the fields (``dataclass_transform``), so a swapped pair of arguments is a type
error, not a silently wrong record."""

from __future__ import annotations

import dataclasses
import importlib
import pickle
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import atip_trust
from atip_trust._base.record import FrozenInstanceError, Record, field, replace

REPO = Path(__file__).resolve().parents[2]


def _all_records() -> list[type[Record]]:
    for mod in pkgutil.walk_packages(atip_trust.__path__, "atip_trust."):
        if mod.name.endswith("__main__"):
            continue
        importlib.import_module(mod.name)
    seen: list[type[Record]] = []
    todo = list(Record.__subclasses__())
    while todo:
        cls = todo.pop()
        if cls.__module__.startswith("atip_trust.") and cls not in seen:
            seen.append(cls)
        todo.extend(cls.__subclasses__())
    return seen


RECORDS = _all_records()

#: The records that write an ``__init__``: none (docs/adr/0001-start-up.md). Checks on the values are a
#: ``__post_init__`` (``Digest``, ``IdentityRule``); a field given by another name is ``field(alias=...)``
#: (``Decision``'s ``report_digest``); other ways of making one are classmethods. What owns a resource
#: is no record (``Artifact``, a plain class).
OWN_INIT: set[str] = set()


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def test_the_warm_paths_value_classes_are_all_among_the_records_checked() -> None:
    """The checks below cover what a cache-hit admission builds (else they could pass on an empty list)."""
    names = {_name(c) for c in RECORDS}
    for expected in ("atip_trust.policy.model.Policy", "atip_trust.facts.report.Check",
                     "atip_trust.facts.report.Reason", "atip_trust.facts.digest.Digest",
                     "atip_trust.signature.trustroot.TrustRoot", "atip_trust.admission.admit.Admission",
                     "atip_trust.evaluation.inputs.Constraints", "atip_trust.agents.words.Word",
                     "atip_trust.facts.report.TrustReport", "atip_trust.facts.artifact.FileIdentity",
                     "atip_trust.facts.report.Decision"):
        assert expected in names, expected


def test_no_record_writes_an_init() -> None:
    """Fields are written once, and ``replace`` can rebuild every record through the one generic
    ``__init__`` (a hand-written one made ``replace(Decision("allow"), mode="warn")`` a TypeError)."""
    assert {_name(c) for c in RECORDS if "__init__" in c.__dict__} == OWN_INIT


def test_no_value_class_of_the_package_is_a_dataclass_or_grows_a_dict() -> None:
    assert [c for c in RECORDS if dataclasses.is_dataclass(c)] == []
    for cls in RECORDS:
        assert all("__dict__" not in k.__dict__ for k in cls.__mro__ if k is not object), _name(cls)


class _Sample(Record):
    _no_compare = frozenset({"raw", "tags"})
    _no_repr = frozenset({"raw"})
    name: str
    values: tuple[int, ...] = ()
    raw: bytes = b""
    tags: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a sample needs a name")


@dataclasses.dataclass(frozen=True)
class _Twin:  # the same fields as a dataclass: its TypeErrors are the ones a record must give
    name: str
    values: tuple[int, ...] = ()
    raw: bytes = b""
    tags: list[str] = dataclasses.field(default_factory=list)


class _Mutable(Record, frozen=False):
    count: int
    seen: list[str] = field(default_factory=list)


def test_fields_are_bound_by_position_and_keyword_with_defaults_and_fresh_factories() -> None:
    s = _Sample("a", (1,), raw=b"r")
    assert (s.name, s.values, s.raw, s.tags) == ("a", (1,), b"r", [])
    assert _Sample(name="a").tags is not _Sample(name="a").tags  # a fresh list each
    assert _Sample.__slots__ == ("name", "values", "raw", "tags") and not hasattr(s, "__dict__")


@pytest.mark.parametrize("args, kwargs", [
    ((), {}),  # missing the required field
    (("a",), {"nope": 1}),  # unknown keyword
    (("a",), {"name": "b"}),  # the same field twice
    (("a", (), b"", [], "extra"), {}),  # one positional too many
    ((), {"values": (1,)}),  # keywords only, the required one missing
    (("a",), {"name": "b", "nope": 1}),  # two wrongs: the first one named is the one reported
    (("a",), {"nope": 1, "name": "b"}),
])
def test_a_wrong_missing_or_unknown_argument_raises_the_typeerror_a_dataclass_raises(
        args: tuple[object, ...], kwargs: dict[str, object]) -> None:
    with pytest.raises(TypeError) as ours:
        _Sample(*args, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(TypeError) as theirs:
        _Twin(*args, **kwargs)  # type: ignore[arg-type]
    assert str(ours.value).replace("_Sample", "X") == str(theirs.value).replace("_Twin", "X")


def test_a_record_refuses_assignment_and_deletion() -> None:
    s = _Sample("a")
    with pytest.raises(FrozenInstanceError):
        s.name = "b"  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del s.values  # type: ignore[misc]
    with pytest.raises(AttributeError):
        s.extra = 1  # type: ignore[attr-defined]
    assert s.name == "a"


def test_the_mutable_flavour_assigns_and_is_unhashable_as_a_non_frozen_dataclass() -> None:
    m = _Mutable(1)
    m.count = 2
    m.seen.append("x")
    assert m == _Mutable(2, ["x"]) and m != _Mutable(2) and repr(m) == "_Mutable(count=2, seen=['x'])"
    with pytest.raises(TypeError):
        hash(m)
    with pytest.raises(AttributeError):
        m.other = 1  # type: ignore[attr-defined]
    assert pickle.loads(pickle.dumps(m)) == m


def test_equality_and_hash_use_compared_fields_of_the_same_class_only() -> None:
    a, b = _Sample("a", (1,), b"x"), _Sample("a", (1,), b"y")
    assert a == b and hash(a) == hash(b)
    assert a != _Sample("a", (2,))
    assert a != ("a", (1,), b"x")
    assert "raw" not in repr(a) and repr(a) == "_Sample(name='a', values=(1,), tags=[])"


def test_post_init_checks_run_on_construction_and_replace_and_pickle_keeps_values() -> None:
    with pytest.raises(ValueError, match="needs a name"):
        _Sample("")
    a = _Sample("a", (1, 2), b"raw")
    back = pickle.loads(pickle.dumps(a))
    assert (back.name, back.values, back.raw) == ("a", (1, 2), b"raw")
    assert replace(a, values=(3,)).values == (3,)
    with pytest.raises(ValueError, match="needs a name"):
        replace(a, name="")
    with pytest.raises(TypeError, match="no field"):
        replace(a, nope=1)


def test_a_class_whose_fields_cannot_be_an_init_is_refused_when_defined() -> None:
    with pytest.raises(TypeError, match="non-default field 'b' follows default field 'a'"):
        class _Bad(Record):
            a: int = 0
            b: int
    with pytest.raises(TypeError, match="frozen"):
        class _Thaw(_Sample, frozen=False):
            more: int = 0


#: Calls mypy must refuse (each line marked ``# E``) and one it must accept: the promise that fields
#: written once are checked at every constructor call.
TYPED_CALLS = '''
from atip_trust._base.record import Record, field
from atip_trust.policy.model import SourceRule


class Pair(Record):
    name: str
    count: int
    tags: list[str] = field(default_factory=list)


class Box(Record, frozen=False):
    size: int = 0


Pair("a", 1, ["x"])
Box().size = 2
Pair(1, "a")  # E
Pair("a", 1, nope=2)  # E
Pair("a")  # E
Pair("a", 1).name = "b"  # E
SourceRule(("v1",), "github.com/acme/tool")  # E
'''


@pytest.mark.slow
def test_mypy_refuses_swapped_missing_and_unknown_constructor_arguments(tmp_path: Path) -> None:
    """Where a hand-written ``__init__`` passing two values in swapped order passed mypy (issue 23), the
    annotations are now the signature mypy checks."""
    pytest.importorskip("mypy")
    src = tmp_path / "typed_calls.py"
    src.write_text(TYPED_CALLS)
    p = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--config-file", "",
                        "--cache-dir", str(tmp_path / "cache"), str(src)], cwd=REPO, capture_output=True,
                       text=True, timeout=300, stdin=subprocess.DEVNULL)
    # Only this file's lines: the package it imports is checked without the project's mypy settings here
    # (--config-file ""), which can report the optional stubs the project's settings allow to be missing.
    flagged = {int(line.split(":")[1]) for line in p.stdout.splitlines()
               if ": error:" in line and line.startswith(str(src))}
    expected = {n for n, line in enumerate(TYPED_CALLS.splitlines(), 1) if line.endswith("# E")}
    assert flagged == expected, p.stdout + p.stderr


#: A valid instance of each record whose ``__post_init__`` checks its values (``replace`` runs it again):
#: the sentinel values the test below gives every other record would not pass those checks.
def _checked_examples() -> dict[str, Record]:
    from atip_trust.admission.options import VerifyOptions
    from atip_trust.facts.digest import Digest
    from atip_trust.provenance.slsa import BuilderPattern, ProvenanceRequirements
    from atip_trust.signature.identity import IdentityRule

    return {_name(type(r)): r for r in (
        Digest.parse("sha256:" + "ab" * 32),
        BuilderPattern("https://github.com/slsa-framework/slsa-github-generator/.github/workflows/x.yml@refs/tags/v2"),
        ProvenanceRequirements(min_slsa_level=2),
        IdentityRule(identity="a@example.com", issuer="https://accounts.example.com"),
        VerifyOptions(cache=False),
    )}


def _some_instance(cls: type[Record]) -> Record:
    """An instance of ``cls`` without knowing its fields' types: each required field a fresh sentinel,
    each default its default (built as ``pickle`` rebuilds one, so no check runs on the sentinels)."""
    from atip_trust._base.record import _MISSING, _Factory

    values = [object() if d is _MISSING else d for d in cls._template]
    obj = cls.__new__(cls)
    for setter, value in zip(cls._setters, values):
        setter(obj, value.factory() if isinstance(value, _Factory) else value)
    return obj


def test_replace_works_for_every_record_of_the_package() -> None:
    """``replace(obj)`` rebuilds each record through its constructor, and one changed field is changed
    and nothing else (every record, iterated: a hand-written ``__init__`` that took other names than its
    fields, as Decision's did, fails here)."""
    checked = _checked_examples()
    failures = []
    for cls in RECORDS:
        obj = checked.get(_name(cls)) or _some_instance(cls)
        if cls._post_init is not None and _name(cls) not in checked:
            failures.append(f"{_name(cls)}: has a __post_init__, needs an example in _checked_examples")
            continue
        try:
            same = replace(obj)
            assert [getattr(same, f) for f in cls._fields] == [getattr(obj, f) for f in cls._fields]
            if cls._fields and _name(cls) not in checked:
                first, init = cls._fields[-1], cls._inits[-1]
                marker = object()
                changed = replace(obj, **{init: marker})
                assert getattr(changed, first) is marker
                assert [getattr(changed, f) for f in cls._fields[:-1]] == [getattr(obj, f) for f in cls._fields[:-1]]
        except Exception as err:  # collected: one run names every record that fails
            failures.append(f"{_name(cls)}: {type(err).__name__}: {err}")
    assert failures == []
    assert len(RECORDS) > 100  # the package's records, not an empty list


def test_replace_decision_keeps_its_report_digest_and_changes_the_mode() -> None:
    """The issue's example: ``replace(Decision("allow"), mode="warn")`` raised TypeError."""
    from atip_trust.facts.report import Decision, Reason, TrustReport

    assert replace(Decision("allow"), mode="warn") == Decision("allow", mode="warn")
    d = Decision("deny", [Reason("UNSIGNED", "not signed")], report_digest="sha256:" + "0" * 64)
    assert replace(d, behavior="allow").report_digest == "sha256:" + "0" * 64
    assert replace(d, report_digest=None).report_digest is None
    with pytest.raises(TypeError, match="_report_digest"):
        replace(d, _report_digest="x")  # the field's name is internal: its alias is what is given
    # A decision whose digest is not worked out yet keeps the report it will work it out from.
    report = TrustReport.__new__(TrustReport)
    lazy = Decision("allow", report=report)
    assert replace(lazy, mode="warn")._report is report


def test_an_alias_is_the_constructor_name_and_the_signature_says_so() -> None:
    import inspect

    class _Aliased(Record, frozen=False):
        name: str
        _secret: str | None = field(default=None, alias="secret")

        @property
        def secret(self) -> str | None:
            return self._secret

    one = _Aliased("n", secret="s")
    assert one.secret == "s" and repr(one).endswith("_Aliased(name='n', secret='s')")
    assert list(inspect.signature(_Aliased).parameters) == ["name", "secret"]
    with pytest.raises(TypeError, match="unexpected keyword argument '_secret'"):
        _Aliased("n", _secret="s")  # type: ignore[call-arg]
    assert replace(one, secret="t").secret == "t" and one.secret == "s"
