"""Mutable value classes for the warm path, without ``dataclasses`` (the mutable twin of record.py).

A few value classes are filled in step by step (a ``TrustReport`` gets its decision, an ``Artifact``
its digests) and so cannot be :class:`~atip_trust._base.record.Record`\\ s; as ``@dataclass`` they
cost the same import-time code generation (record.py says why that matters). A ``Slotted`` subclass
states its fields as ``__slots__`` (declaration order) and writes a plain ``__init__``. A slot named
``_x`` is the storage of a field ``x`` when the class defines a property ``x`` (a value worked out on
first read), and internal state otherwise, no field at all. Equality
(same class, equal fields), ``repr`` (``Name(a=1, b=2)``, without the ``_no_repr`` fields) and being
unhashable are the base class's, as they were the dataclass's. Pickling is Python's own for slots.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's constant without importing typing at run time (README "Verdict cache")
if TYPE_CHECKING:
    from typing import Any, ClassVar

__all__ = ["Slotted"]


class Slotted:
    """Base of a mutable value class: its fields are the ``__slots__`` of the class and its bases."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()
    _shown: ClassVar[tuple[str, ...]] = ()
    _no_repr: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fields: list[str] = []
        for klass in reversed(cls.__mro__):
            slots = klass.__dict__.get("__slots__", ())
            for name in (slots,) if isinstance(slots, str) else slots:
                if not name.startswith("_"):
                    fields.append(name)
                elif isinstance(getattr(cls, name[1:], None), property):
                    fields.append(name[1:])
        cls._fields = tuple(fields)
        cls._shown = tuple(f for f in fields if f not in cls._no_repr)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            # As a dataclass compares: the field tuples (so identical objects are equal, NaN or not).
            return ([getattr(self, f) for f in self._fields]
                    == [getattr(other, f) for f in self._fields])
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable: unhashable, as a non-frozen dataclass

    def __repr__(self) -> str:
        body = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._shown)
        return f"{type(self).__qualname__}({body})"
