"""Value classes: fields written once, as class annotations, without ``dataclasses``' code generation.

A ``Record`` subclass states each field once, as an annotation with its default if it has one::

    class Reason(Record):
        code: str
        message: str
        rule: str | None = None
        notes: list[str] = field(default_factory=list)   # a fresh list per instance

Everything else is derived from those lines, here, once: ``__slots__`` (so no ``__dict__``), a generic
``__init__`` binding positional and keyword arguments to the fields in order (and raising ``TypeError``
for a missing, unknown or doubled argument, with the messages a dataclass gives), equality, hashing,
``repr``, refusing assignment, pickling and :func:`replace`. ``typing.dataclass_transform`` (PEP 681) on
the metaclass tells the type checker the same, so ``mypy --strict`` checks every constructor call's
arguments and keywords against the annotations (a swapped pair of differently typed values fails).

``class X(Record, frozen=False)`` is the mutable flavour (for values filled in step by step, such as a
``TrustReport``): assignment allowed, unhashable, as a non-frozen dataclass. A ``__post_init__`` runs
after the fields are set (validation; :func:`replace` runs it again). No record writes its own
``__init__`` (tests/base/test_record.py): one that did could not be rebuilt by :func:`replace`.
``field(alias="x")`` gives a field to the constructor and :func:`replace` under another name (PEP 681's
``alias``, which the type checker reads too): an internal ``_x`` whose public name is a property ``x``
(``Decision``'s ``report_digest``, worked out on first read).

A record is a value: what owns a resource (a file descriptor, a lock) is a plain class with explicit
``close`` and context-manager methods (``facts/artifact.py`` ``Artifact``), since a value can be
copied, pickled and compared, and a copy of a descriptor owner would close another's file.

A field named ``_x`` is internal state: left out of equality and ``repr`` — unless the class has a
property ``x``, which is then what equality and ``repr`` read (a value worked out on first read).
``_no_compare`` names fields equality and hashing ignore (carried data, not identity); ``_no_repr``
fields ``repr`` leaves out (raw bytes, large documents).

Why not ``@dataclass``: each such class ``exec``s five or six generated methods when its module is
imported (~0.5-1.3 ms a class here), and ``dataclasses`` itself pulls in ``inspect``/``ast``/``dis``;
a cache-hit ``atip-trust admit`` imports ~40 value classes (docs/caching.md,
``python -m bench --only admit``).
This base generates nothing: its methods are ordinary functions reading per-class tables built when
the class is created.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING, dataclass_transform

from atip_trust._base.lazy import lazy_import

if TYPE_CHECKING:
    import inspect
    from typing import Any, ClassVar, NoReturn, TypeVar

    R = TypeVar("R", bound="Record")
    T = TypeVar("T")
else:
    inspect = lazy_import("inspect")  # only for inspect.signature(a record class), never at start-up

__all__ = ["FrozenInstanceError", "Record", "field", "fields_json", "replace"]


class FrozenInstanceError(AttributeError):
    """Assignment to a field of a record (the same contract as ``dataclasses.FrozenInstanceError``)."""


class _Factory:
    """A mutable default: ``factory()`` is called once per instance built without that argument."""

    __slots__ = ("factory",)

    def __init__(self, factory: Callable[[], Any]) -> None:
        self.factory = factory

    def __repr__(self) -> str:
        return "<factory>"  # as dataclasses shows it in a signature


_MISSING = object()


class _Alias:
    """A field given to the constructor (and :func:`replace`) under another name: ``field(alias=...)``,
    PEP 681's ``alias``, for an internal ``_x`` field whose public name is a property ``x``."""

    __slots__ = ("alias", "default")

    def __init__(self, alias: str, default: Any) -> None:
        self.alias = alias
        self.default = default


def field(*, default: Any = _MISSING, default_factory: Callable[[], T] | None = None,
          alias: str | None = None) -> T:
    """A field's default made fresh for each instance (``field(default_factory=list)``), as
    ``dataclasses.field``; with ``alias``, the name the constructor and :func:`replace` take it by
    (PEP 681). The type checker knows both through ``field_specifiers``."""
    made: Any = _Factory(default_factory) if default_factory is not None else default
    if alias is not None:
        made = _Alias(alias, made)
    return made  # type: ignore[no-any-return]  # a marker the metaclass takes away


def _is_classvar(annotation: object) -> bool:
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar"))


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
class _RecordMeta(type):
    """Builds each record class's slots and tables from its annotations (the module docstring)."""

    def __new__(mcs, name: str, bases: tuple[type, ...], ns: dict[str, Any],
                frozen: bool | None = None, **kwargs: Any) -> _RecordMeta:
        parent = next((b for b in bases if isinstance(b, _RecordMeta)), None)
        inherited: tuple[str, ...] = getattr(parent, "_fields", ())
        defaults: dict[str, Any] = dict(getattr(parent, "_defaults", {}))
        was_frozen: bool | None = getattr(parent, "_frozen", None) if inherited or parent else None
        if frozen is None:
            frozen = True if was_frozen is None else was_frozen
        if inherited and was_frozen is not None and frozen != was_frozen:
            raise TypeError(f"{name}: cannot change frozen={was_frozen} of its base record")
        own = [f for f, ann in ns.get("__annotations__", {}).items()
               if not _is_classvar(ann) and f not in inherited]
        inits: tuple[str, ...] = getattr(parent, "_inits", inherited)
        for f in own:
            init = f
            if f in ns:
                default = ns.pop(f)  # a class attribute would shadow the slot
                if default.__class__ is _Alias:
                    init, default = default.alias, default.default
                if default is not _MISSING:  # field(alias=...) may have no default
                    defaults[f] = default
            inits += (init,)
        fields = inherited + tuple(own)
        _check_default_order(name, fields, defaults)
        extra = ns.get("__slots__", ())  # internal state that is no field (rare)
        extra = (extra,) if isinstance(extra, str) else tuple(extra)
        ns["__slots__"] = tuple(own) + tuple(x for x in extra if x not in own)
        if parent is not None and not frozen:
            ns.setdefault("__setattr__", object.__setattr__)
            ns.setdefault("__delattr__", object.__delattr__)
            ns.setdefault("__hash__", None)  # mutable: unhashable, as a non-frozen dataclass
        if parent is None:
            return super().__new__(mcs, name, bases, ns, **kwargs)
        # The tables are Record's class variables, given in the namespace the class is made from (a
        # class attribute set afterwards costs a type update each).
        ns["_frozen"] = frozen
        ns["_fields"] = fields
        ns["_defaults"] = defaults
        ns["_template"] = tuple([defaults.get(f, _MISSING) for f in fields])
        ns["_inits"] = inits
        ns["_index"] = {f: i for i, f in enumerate(inits)}
        ns["_required"] = len(fields) - len(defaults)
        ns["_factories"] = tuple([i for i, f in enumerate(fields) if defaults.get(f).__class__ is _Factory])
        made = super().__new__(mcs, name, bases, ns, **kwargs)
        cls: Any = made
        # The inherited fields' slot setters are the base's; the own fields' slots are this class's own
        # member descriptors (each own field is in its ``__slots__``).
        own_slots = made.__dict__
        cls._setters = getattr(parent, "_setters", ())[:len(inherited)] + tuple([own_slots[f].__set__ for f in own])
        no_compare, no_repr = cls._no_compare, cls._no_repr
        shown_as = [(f, f if f[0] != "_" else _shown_as(made, f)) for f in fields]
        cls._compared = compared = tuple([s for f, s in shown_as if s and f not in no_compare])
        cls._shown = tuple([s for f, s in shown_as if s and f not in no_repr])
        cls._key = staticmethod(_tuple_getter(compared))  # one C-level getter a class
        cls._post_init = getattr(made, "__post_init__", None)
        return made

    @property
    def __signature__(cls) -> Any:
        """What ``inspect.signature(cls)`` reports: the fields as parameters, as for a dataclass (made on
        request, so that nothing imports ``inspect`` at start-up)."""
        notes: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            notes.update(klass.__dict__.get("__annotations__", {}))
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        defaults: dict[str, Any] = getattr(cls, "_defaults", {})
        return inspect.Signature([
            inspect.Parameter(name, kind, default=defaults.get(f, inspect.Parameter.empty),
                              annotation=notes.get(f, inspect.Parameter.empty))
            for f, name in zip(getattr(cls, "_fields", ()), getattr(cls, "_inits", ()))])


def _check_default_order(name: str, fields: tuple[str, ...], defaults: dict[str, Any]) -> None:
    seen_default = None
    for f in fields:
        if f in defaults:
            seen_default = f
        elif seen_default is not None:
            raise TypeError(f"{name}: non-default field {f!r} follows default field {seen_default!r}")


def _shown_as(cls: type, name: str) -> str:
    """The name equality and repr read a field by: itself, its property, or none (internal state)."""
    if not name.startswith("_"):
        return name
    return name[1:] if isinstance(getattr(cls, name[1:], None), property) else ""


class Record(metaclass=_RecordMeta):
    """Base of a value class: the fields are the annotations of the class and its record bases."""

    __slots__ = ()
    _frozen: ClassVar[bool] = True
    _fields: ClassVar[tuple[str, ...]] = ()
    #: The name each field is given by to the constructor and ``replace``: its own, or its alias.
    _inits: ClassVar[tuple[str, ...]] = ()
    _defaults: ClassVar[dict[str, Any]] = {}
    #: For binding arguments (_bind): the defaults in field order (_MISSING where required), each field's
    #: position, how many lead without a default, and where a default is a factory.
    _template: ClassVar[tuple[Any, ...]] = ()
    _index: ClassVar[dict[str, int]] = {}
    _required: ClassVar[int] = 0
    _factories: ClassVar[tuple[int, ...]] = ()
    _compared: ClassVar[tuple[str, ...]] = ()
    _shown: ClassVar[tuple[str, ...]] = ()
    _no_compare: ClassVar[frozenset[str]] = frozenset()
    _no_repr: ClassVar[frozenset[str]] = frozenset()
    #: The compared fields' values as a tuple (a C-level getter built once per class).
    _key: ClassVar[Callable[..., tuple[Any, ...]]] = staticmethod(lambda _obj: ())
    #: Each field's slot setter (its member descriptor's ``__set__``), in field order: calling these
    #: directly skips ``object.__setattr__``'s lookup through the MRO (python -m bench --only decide).
    _setters: ClassVar[tuple[Callable[[Any, Any], None], ...]] = ()
    #: The class's ``__post_init__`` (checks run after the fields are set), or None.
    _post_init: ClassVar[Callable[[Any], None] | None] = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        cls = type(self)
        setters = cls._setters
        values: Any = args
        if kwargs or len(args) != len(setters):
            values = _bind(cls, args, kwargs)
        for setter, value in zip(setters, values):
            setter(self, value)
        post = cls._post_init
        if post is not None:
            post(self)

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


def _bind(cls: type[Record], args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """The values of ``cls(*args, **kwargs)`` in field order, or the ``TypeError`` Python gives."""
    n = len(args)
    values = list(cls._template)
    if n > len(values):
        _refuse(cls, args, kwargs)
    values[:n] = args
    index = cls._index
    for name, value in kwargs.items():
        if index.get(name, -1) < n:  # unknown, or given by position too
            _refuse(cls, args, kwargs)
        values[index[name]] = value
    for i in range(n, cls._required):
        if values[i] is _MISSING:
            _refuse(cls, args, kwargs)
    for i in cls._factories:
        if values[i].__class__ is _Factory:
            values[i] = values[i].factory()
    return values


def _refuse(cls: type[Record], args: tuple[Any, ...], kwargs: dict[str, Any]) -> NoReturn:
    """Raise the ``TypeError`` Python gives for a call ``_bind`` cannot bind (worded as for a dataclass)."""
    fields = cls._fields
    where = f"{cls.__qualname__}.__init__()"
    if len(args) > len(fields):
        most, least = len(fields) + 1, len(fields) + 1 - len(cls._defaults)
        takes = f"from {least} to {most}" if least < most else str(most)
        plural = "s" if most > 1 else ""
        raise TypeError(f"{where} takes {takes} positional argument{plural} but {len(args) + 1} were given")
    for name in kwargs:  # in the order given, as the interpreter checks them
        if name not in cls._index:
            raise TypeError(f"{where} got an unexpected keyword argument {name!r}")
        if cls._index[name] < len(args):
            raise TypeError(f"{where} got multiple values for argument {name!r}")
    missing = [name for f, name in zip(fields[len(args):], cls._inits[len(args):])
               if name not in kwargs and f not in cls._defaults]
    if missing:
        names = " and ".join(", ".join(repr(m) for m in missing).rsplit(", ", 1))
        plural = "s" if len(missing) > 1 else ""
        raise TypeError(f"{where} missing {len(missing)} required positional argument{plural}: {names}")
    raise AssertionError(f"{where}: arguments _bind could not bind")  # pragma: no cover


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
    unknown = set(changes) - set(obj._index)
    if unknown:
        raise TypeError(f"{type(obj).__name__} has no field(s) {', '.join(sorted(unknown))}")
    # By the names the constructor takes (a field's alias: Decision's ``report_digest``), with each
    # field's stored value (an internal field as kept, not its property's worked-out value).
    values = {name: getattr(obj, f) for f, name in zip(obj._fields, obj._inits)}
    values.update(changes)
    return type(obj)(**values)


def fields_json(obj: Record) -> dict[str, Any]:
    """Every field of ``obj`` by name, in declaration order, values as they are: the ``to_json`` of a
    record whose fields are already JSON data."""
    return {name: getattr(obj, name) for name in obj._fields}
