"""Records (``atip_trust/_base/record.py``): the warm path's value classes are hand-written, so the one
thing a hand-written ``__init__`` could get wrong — its parameters not being the fields, in order — is
checked here for every ``Record`` subclass in the package, with the contract every such class inherits:
no assignment, equality and hashing by compared fields only, pickling, ``replace`` through ``__init__``."""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil

import pytest

import atip_trust
from atip_trust._base.record import FrozenInstanceError, Record, init, replace


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


def test_the_warm_paths_value_classes_are_all_among_the_records_checked() -> None:
    """The check below covers what a cache-hit admission builds (else it could pass on an empty list)."""
    names = {f"{c.__module__}.{c.__qualname__}" for c in RECORDS}
    for expected in ("atip_trust.policy.model.Policy", "atip_trust.facts.report.Check",
                     "atip_trust.facts.report.Reason", "atip_trust.facts.digest.Digest",
                     "atip_trust.signature.trustroot.TrustRoot", "atip_trust.gate.admit.Admission",
                     "atip_trust.inputs.Constraints", "atip_trust.agents.words.Word"):
        assert expected in names, expected


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_a_records_init_takes_exactly_its_fields_in_order(cls: type[Record]) -> None:
    assert "__slots__" in cls.__dict__, f"{cls.__qualname__} must state __slots__ (else it grows a __dict__)"
    params = [p for p in inspect.signature(cls.__init__).parameters.values()][1:]
    assert [p.name for p in params] == list(cls._fields), cls.__qualname__
    assert all(p.kind is p.POSITIONAL_OR_KEYWORD for p in params), cls.__qualname__


class _Sample(Record):
    __slots__ = ("name", "values", "raw")
    _no_compare = frozenset({"raw"})
    _no_repr = frozenset({"raw"})
    name: str
    values: tuple[int, ...]
    raw: bytes

    def __init__(self, name: str, values: tuple[int, ...] = (), raw: bytes = b"") -> None:
        if not name:
            raise ValueError("a sample needs a name")
        init(self, name, values, raw)


def test_a_record_refuses_assignment_and_deletion() -> None:
    s = _Sample("a")
    with pytest.raises(FrozenInstanceError):
        s.name = "b"  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del s.values  # type: ignore[misc]
    with pytest.raises(AttributeError):
        s.extra = 1  # type: ignore[attr-defined]
    assert s.name == "a"


def test_equality_and_hash_use_compared_fields_of_the_same_class_only() -> None:
    a, b = _Sample("a", (1,), b"x"), _Sample("a", (1,), b"y")
    assert a == b and hash(a) == hash(b)
    assert a != _Sample("a", (2,))
    assert a != ("a", (1,), b"x")
    assert "raw" not in repr(a) and repr(a) == "_Sample(name='a', values=(1,))"


def test_pickle_and_replace_keep_values_and_replace_runs_init_checks() -> None:
    a = _Sample("a", (1, 2), b"raw")
    back = pickle.loads(pickle.dumps(a))
    assert (back.name, back.values, back.raw) == ("a", (1, 2), b"raw")
    assert replace(a, values=(3,)).values == (3,)
    with pytest.raises(ValueError, match="needs a name"):
        replace(a, name="")
    with pytest.raises(TypeError, match="no field"):
        replace(a, nope=1)


def test_an_init_giving_the_wrong_number_of_values_is_an_error() -> None:
    class Bad(Record):
        __slots__ = ("a", "b")

        def __init__(self, a: int, b: int) -> None:
            init(self, a)

    with pytest.raises(ValueError):
        Bad(1, 2)
