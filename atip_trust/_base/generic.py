"""``typing.Generic`` for type checkers, a no-op base at run time.

A class generic in a type variable (``StatMemo[V]``, ``Outcome[R]``) is subscripted in annotations only,
which mypy reads and the interpreter never evaluates (``from __future__ import annotations``). Its base
need not be the real ``Generic``, whose import is typing's (~3 ms of a warm admission, README "Verdict
cache"): at run time ``Generic[X]`` is this empty, slot-less class, and a type variable is ``None``::

    if TYPE_CHECKING:
        from typing import TypeVar
        V = TypeVar("V")
    else:
        V = None

    class StatMemo(Generic[V]): ...
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's constant without importing typing at run time (README "Verdict cache")
if TYPE_CHECKING:
    from typing import Generic as Generic
else:
    class Generic:
        __slots__ = ()

        def __class_getitem__(cls, item: object) -> type:
            return cls

__all__ = ["Generic"]
