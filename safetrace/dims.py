"""The dynamic-shapes spec language: Dim, Dim.AUTO / DYNAMIC / STATIC, derived dims.

Mirrors torch.export's names so that a spec written for torch.export works here:

    batch = Dim("batch", min=1, max=1024)
    dynamic_shapes = {"x": {0: batch}, "y": (batch, Dim.AUTO), "z": {0: 2 * batch}}
"""

from __future__ import annotations

import math


class DimHint:
    """Dim.AUTO / Dim.DYNAMIC / Dim.STATIC, optionally with a range: ``Dim.DYNAMIC(min=2)``.

    As in torch.export, the three names are factories: calling one gives a hint with a
    range (``Dim.STATIC(min=, max=)`` too: the example size must lie in it), and a hint
    with a range cannot be called again.
    """

    __slots__ = ("kind", "min", "max", "factory")

    def __init__(self, kind: str, min: int | None = None, max: int | None = None,
                 factory: bool = False) -> None:
        self.kind = kind
        self.min = min
        self.max = max
        self.factory = factory

    def __call__(self, min: int | None = None, max: int | None = None) -> DimHint:
        if not self.factory:
            raise TypeError(f"{self!r} is a dim hint with a range; only Dim.{self.kind.upper()}"
                            f" itself can be called")
        for name, v in (("min", min), ("max", max)):
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
                raise ValueError(f"Dim.{self.kind.upper()}({name}={v!r}): {name} must be an "
                                 f"int >= 0")
        if min is not None and max is not None and min > max:
            raise ValueError(f"Dim.{self.kind.upper()}(min={min}, max={max}): min is greater "
                             f"than max")
        return DimHint(self.kind, min, max)

    def __repr__(self) -> str:
        base = f"Dim.{self.kind.upper()}"
        if self.min is None and self.max is None:
            return base
        parts = [f"min={self.min}"] if self.min is not None else []
        parts += [f"max={self.max}"] if self.max is not None else []
        return f"{base}({', '.join(parts)})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DimHint) and (self.kind, self.min, self.max) == (
            other.kind, other.min, other.max)

    def __hash__(self) -> int:
        return hash((self.kind, self.min, self.max))


class Dim:
    """A named dynamic dimension; the same Dim in two places means equal sizes."""

    AUTO = DimHint("auto", factory=True)
    DYNAMIC = DimHint("dynamic", factory=True)
    STATIC = DimHint("static", factory=True)

    __slots__ = ("name", "min", "max")

    def __init__(self, name: str, *, min: int | None = None, max: int | None = None) -> None:
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"Dim name must be a Python identifier, got {name!r}")
        lo = 0 if min is None else min
        hi = math.inf if max is None else max
        if lo < 0:
            raise ValueError(f"Dim({name!r}): min={lo} must be >= 0")
        if lo > hi:
            raise ValueError(f"Dim({name!r}): min={lo} is greater than max={hi}")
        self.name = name
        self.min = lo
        self.max = hi

    def _derive(self, coef: int, offset: int) -> DerivedDim:
        return DerivedDim(self, coef, offset)

    def __mul__(self, k: int) -> DerivedDim:
        if not isinstance(k, int) or k <= 0:
            return NotImplemented
        return self._derive(k, 0)

    __rmul__ = __mul__

    def __add__(self, k: int) -> DerivedDim:
        if not isinstance(k, int):
            return NotImplemented
        return self._derive(1, k)

    __radd__ = __add__

    def __sub__(self, k: int) -> DerivedDim:
        if not isinstance(k, int):
            return NotImplemented
        return self._derive(1, -k)

    def __repr__(self) -> str:
        parts = [repr(self.name)]
        if self.min != 0:
            parts.append(f"min={self.min}")
        if self.max != math.inf:
            parts.append(f"max={self.max}")
        return f"Dim({', '.join(parts)})"


class DerivedDim:
    """``coef * root + offset`` for a named root Dim (``2*d``, ``d + 1``, ``2*d - 1``)."""

    __slots__ = ("root", "coef", "offset")

    def __init__(self, root: Dim, coef: int, offset: int) -> None:
        self.root = root
        self.coef = coef
        self.offset = offset

    @property
    def name(self) -> str:
        return repr(self)

    def __mul__(self, k: int) -> DerivedDim:
        if not isinstance(k, int) or k <= 0:
            return NotImplemented
        return DerivedDim(self.root, self.coef * k, self.offset * k)

    __rmul__ = __mul__

    def __add__(self, k: int) -> DerivedDim:
        if not isinstance(k, int):
            return NotImplemented
        return DerivedDim(self.root, self.coef, self.offset + k)

    __radd__ = __add__

    def __sub__(self, k: int) -> DerivedDim:
        if not isinstance(k, int):
            return NotImplemented
        return DerivedDim(self.root, self.coef, self.offset - k)

    def __repr__(self) -> str:
        text = self.root.name if self.coef == 1 else f"{self.coef}*{self.root.name}"
        if self.offset > 0:
            text += f" + {self.offset}"
        elif self.offset < 0:
            text += f" - {-self.offset}"
        return text


def dims(*names: str, min: int | None = None, max: int | None = None) -> tuple[Dim, ...]:
    """Several Dims at once: ``batch, seq = dims("batch", "seq")``."""
    return tuple(Dim(n, min=min, max=max) for n in names)
