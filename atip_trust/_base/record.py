"""Immutable value classes for the warm path, without ``dataclasses``' import-time code generation.

Why not ``@dataclass(frozen=True)``: every such class ``exec``s five or six generated methods when its
module is imported (~0.5-1.3 ms each class on this project's machines) and ``dataclasses`` itself pulls in
``inspect``/``ast``/``dis`` (~10 ms). A cache-hit ``atip-trust admit`` imports ~40 value classes, so those
two costs were half of its own time (README "Verdict cache", ``python -m bench --only admit``). A
``Record`` subclass states its fields once as ``__slots__`` (declaration order), annotates them, and
writes a plain ``__init__`` that hands the values, in that order, to :func:`init`. Everything else —
equality, hashing, ``repr``, refusing assignment, pickling, :func:`replace` — is the base class's, written
once here.

``tests/test_record.py`` checks, for every ``Record`` subclass in the package, that ``__init__``'s
parameters are exactly the slots in order (the one thing a hand-written ``__init__`` could get wrong) and
that instances refuse assignment.

Modules off the warm path may keep ``dataclasses``; nothing on it may import it (tests/test_startup.py).
"""

from __future__ import annotations

from operator import attrgetter
from collections.abc import Callable
TYPE_CHECKING = False  # typing's constant without importing typing at run time (README "Verdict cache")
if TYPE_CHECKING:
    from typing import Any, ClassVar, TypeVar, dataclass_transform

    R = TypeVar("R", bound="Record")
else:
    def dataclass_transform(**_: object) -> object:  # for type checkers only: nothing at run time
        return lambda cls: cls

__all__ = ["FrozenInstanceError", "Record", "init", "replace"]


class FrozenInstanceError(AttributeError):
    """Assignment to a field of a record (the same contract as ``dataclasses.FrozenInstanceError``)."""


@dataclass_transform(frozen_default=True)
class Record:
    """Base of an immutable value class: fields are the ``__slots__`` of the class and its bases.

    ``_no_compare`` names fields that equality and hashing ignore (carried data, not identity);
    ``_no_repr`` names fields ``repr`` leaves out (raw bytes, large documents).
    """

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()
    _compared: ClassVar[tuple[str, ...]] = ()
    _shown: ClassVar[tuple[str, ...]] = ()
    _no_compare: ClassVar[frozenset[str]] = frozenset()
    _no_repr: ClassVar[frozenset[str]] = frozenset()
    #: The compared fields' values as a tuple (a C-level getter built once per class).
    _key: ClassVar[Callable[..., tuple[Any, ...]]] = staticmethod(lambda _obj: ())
    #: Each field's slot setter (its member descriptor's ``__set__``), in field order: :func:`init`
    #: calls these directly instead of ``object.__setattr__`` looking each name up through the MRO
    #: (a record is made on every decision; python -m bench --only decide).
    _setters: ClassVar[tuple[Callable[[Any, Any], None], ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fields: list[str] = []
        setters: list[Callable[[Any, Any], None]] = []
        for klass in reversed(cls.__mro__):
            slots = klass.__dict__.get("__slots__", ())
            for name in (slots,) if isinstance(slots, str) else slots:
                fields.append(name)
                setters.append(klass.__dict__[name].__set__)  # the member descriptor the slot made
        cls._fields = tuple(fields)
        cls._setters = tuple(setters)
        cls._compared = tuple(f for f in fields if f not in cls._no_compare)
        cls._shown = tuple(f for f in fields if f not in cls._no_repr)
        # One C-level getter per class: equality and hashing compare these tuples.
        cls._key = staticmethod(_tuple_getter(cls._compared))

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r} of {type(self).__name__}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r} of {type(self).__name__}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._key(self) == self._key(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._key(self))

    def __repr__(self) -> str:
        body = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._shown)
        return f"{type(self).__qualname__}({body})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickling (process pools carry reports back): rebuilt without __init__, like a dataclass copy.
        return (_rebuild, (type(self), tuple([getattr(self, f) for f in self._fields])))


def init(self: Record, *values: Any) -> None:
    """Set a record's fields, in slot order, from its ``__init__`` (the only writer of a record)."""
    setters = self._setters
    if len(values) != len(setters):  # a bug in a hand-written __init__ (tests/test_record.py)
        raise ValueError(f"{type(self).__name__} has {len(setters)} fields, {len(values)} values given")
    for setter, value in zip(setters, values):
        setter(self, value)


def _tuple_getter(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    if len(names) > 1:
        return attrgetter(*names)  # already a tuple, in C
    if names:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda _obj: ()


def _rebuild(cls: type[R], values: tuple[Any, ...]) -> R:
    obj = cls.__new__(cls)
    for setter, value in zip(cls._setters, values):
        setter(obj, value)
    return obj


def replace(obj: R, **changes: Any) -> R:
    """A copy of ``obj`` with ``changes`` applied, through its ``__init__`` (so its checks run again)."""
    unknown = set(changes) - set(obj._fields)
    if unknown:
        raise TypeError(f"{type(obj).__name__} has no field(s) {', '.join(sorted(unknown))}")
    values = {f: getattr(obj, f) for f in obj._fields}
    values.update(changes)
    return type(obj)(**values)
