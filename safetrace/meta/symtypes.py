"""Symbolic values that torch's own argument parser accepts.

PyTorch's C++ argument parser accepts ``torch.SymInt`` / ``SymFloat`` / ``SymBool`` where
an int, float or bool is expected; any other object is converted with ``__index__``, which
would specialize a dynamic size.  These subclasses are the engine's values (all behaviour
comes from ``safetrace.symbolic``) that also pass those checks, so ``x.view(n, -1)`` and
``torch.zeros(n)`` reach the tracer with the symbolic ``n`` intact.

Nothing of torch's own SymInt machinery may run on them (it expects a SymNode): every
operator torch's classes define and the engine does not is answered here, either
symbolically (``torch.sym_max``, ``torch.sym_float``, ``torch.sym_not``) or by
specializing the value (a recorded guard): ``n & 1``, ``math.sqrt(n)``.
Text: ``str(n)`` / ``f"{n}"`` / ``"%d" % n`` in the user's code give the example's digits;
without a guard where the text can only be a message (``textflow``; ``SizeText``:
reading its content still specializes the size), specialized (a guard) otherwise; inside
safetrace and torch they print the expression.
"""

from __future__ import annotations

import dis
import math
import operator
import os
import sys
from typing import Any, Callable

import torch

from safetrace.meta.active import ACTIVE
from safetrace.meta.pins import pin_count
from safetrace.meta.textflow import frame_is_message
import safetrace.symbolic.floats as F
from safetrace.symbolic import (
    DataDependentQuestion, Env, SymBool, SymFloat, SymInt, make_float, sym_max, sym_min,
    sym_not,
)
from safetrace.symbolic.semantics import MATH_FNS

_LIBRARY_DIRS = (os.path.dirname(torch.__file__) + os.sep,
                 os.path.dirname(os.path.dirname(__file__)) + os.sep)


def _from_library(depth: int = 2) -> bool:
    return sys._getframe(depth).f_code.co_filename.startswith(_LIBRARY_DIRS)


def _concrete(v: Any) -> Any:
    if isinstance(v, SymBool):
        return bool(v)
    if isinstance(v, SymInt):
        return int(v)
    if isinstance(v, SymFloat):
        return float(v)
    return v


def _specializing(name: str, convert: Callable[[Any], Any]) -> Callable[..., Any]:
    """``value.<name>(*args)`` computed on the specialized (guarded) concrete value."""

    def method(self: Any, *args: Any) -> Any:
        return getattr(convert(self), name)(*[_concrete(a) for a in args])

    method.__name__ = name
    return method


def _tracing(value: Any, depth: int = 3) -> bool:
    """Is the export that owns `value` in progress (and the caller user code)?"""
    return ACTIVE.env is value.env and not _from_library(depth)


class SizeText(str):
    """``str(n)`` / ``f"{n}"`` of a symbolic size in user code: the example's digits, with
    no guard, because such text is mostly an assert's message that is never read (timm's
    ``_assert(H % p == 0, f"Input height ({H}) ...")``).  Joining it with ``+`` keeps it
    lazy (``"height " + str(h)``); reading its content through ``len``, indexing,
    comparison, hashing, ``int()`` and the str methods specializes the sizes in it first
    (guards), so code that depends on the text stays correct.  Text that CPython joins
    without calling back (``f"a{n}b"`` builds a plain str) holds the digits unguarded: use
    it only for messages."""

    def __new__(cls, text: str, value: Any, convert: Callable[[Any], Any]) -> SizeText:
        return cls._of(text, ((value, convert),))

    @classmethod
    def _of(cls, text: str, parts: tuple) -> SizeText:
        obj = str.__new__(cls, text)
        obj._parts = parts  # type: ignore[attr-defined]  # plain strs and (value, convert)
        return obj

    def _read(self) -> str:
        return "".join(p if isinstance(p, str) else str(p[1](p[0]))
                       for p in self._parts)  # type: ignore[attr-defined]

    def _join(self, other: Any, reverse: bool) -> Any:
        if not isinstance(other, str):
            return NotImplemented
        mine = self._parts  # type: ignore[attr-defined]
        theirs = other._parts if isinstance(other, SizeText) else (str(other),)
        a, b = (theirs, mine) if reverse else (mine, theirs)
        text = str.__add__(str(other), self) if reverse else str.__add__(self, other)
        return SizeText._of(text, a + b)


def _reading(name: str) -> Callable[..., Any]:
    def method(self: SizeText, *args: Any, **kwargs: Any) -> Any:
        return getattr(self._read(), name)(*args, **kwargs)

    method.__name__ = name
    return method


for _name in [n for n in vars(str) if not n.startswith("_")] + [
        "__len__", "__getitem__", "__iter__", "__contains__", "__eq__", "__ne__", "__lt__",
        "__le__", "__gt__", "__ge__", "__hash__", "__mul__", "__rmul__",
        "__mod__", "__rmod__", "__reversed__"]:
    setattr(SizeText, _name, _reading(_name))
# ``"%s %s" % (n, m)`` formats each piece with an empty spec: that keeps the text lazy
SizeText.__format__ = lambda self, spec: self if not spec else \
    format(self._read(), spec)  # type: ignore[attr-defined]
SizeText.__add__ = lambda self, o: self._join(o, False)  # type: ignore[assignment]
SizeText.__radd__ = lambda self, o: self._join(o, True)  # type: ignore[attr-defined]
SizeText.__str__ = lambda self: self  # type: ignore[assignment]  # str(text) stays lazy
SizeText.__int__ = lambda self: int(self._read())  # type: ignore[attr-defined]
SizeText.__float__ = lambda self: float(self._read())  # type: ignore[attr-defined]
SizeText.__reduce__ = lambda self: (str, (self._read(),))  # type: ignore[assignment]


def _shown(value: Any) -> str:
    try:
        return str(value.hint)
    except DataDependentQuestion:  # no example value: the expression
        return value._symbolic_str()  # type: ignore[no-any-return]


def _text(convert: Callable[[Any], Any]) -> tuple[Callable[..., str], Callable[..., str]]:
    # Outside an export (meta["val"] shapes, messages) sizes print as expressions.  In user
    # code: text that can only be a message (textflow) holds the example's digits, read
    # lazily (SizeText); any other text specializes the size (a guard), since CPython's
    # joins copy the digits where nothing can follow them (``len(f"a{n}")``).
    def to_str(self: Any) -> str:
        if not _tracing(self):
            return self._symbolic_str()  # type: ignore[no-any-return]
        if not frame_is_message(sys._getframe(1)):
            return str(convert(self))
        return SizeText(_shown(self), self, convert)

    def to_format(self: Any, spec: str) -> str:
        if not _tracing(self):
            return format(self._symbolic_str(), spec)
        if not frame_is_message(sys._getframe(1)):
            return format(convert(self), spec)
        if spec:  # f"{n:>5}": the example formatted, read (a guard) only when inspected
            try:
                shown = format(convert(self.hint), spec)
            except DataDependentQuestion:
                return format(convert(self), spec)
            return SizeText(shown, self, lambda v: format(convert(v), spec))
        return SizeText(_shown(self), self, convert)

    return to_str, to_format


def shape_text(sizes: tuple) -> str:
    """``torch.Size([s0, 4])`` for ``str(x.shape)``: asked from user code while exporting,
    the example's digits, as lazy SizeText where the text is only a message and
    specialized (guards) otherwise, as ``str(n)``; asked from safetrace (messages, graph
    printing), the expressions."""
    symbolic = [s for s in sizes if isinstance(s, SymInt)]
    if not symbolic or not _tracing(symbolic[0], 4):  # (_tracing, this, __repr__, caller)
        return f"torch.Size([{', '.join(str(s) for s in sizes)}])"
    if not frame_is_message(sys._getframe(2)):
        return f"torch.Size([{', '.join(str(int(s)) for s in sizes)}])"
    text: Any = "torch.Size(["
    for i, s in enumerate(sizes):
        text = text + (", " if i else "") + (
            SizeText(_shown(s), s, int) if isinstance(s, SymInt) else str(s))
    return text + "])"  # type: ignore[no-any-return]


def _complete(cls: type, ours: type, theirs: type, convert: Callable[[Any], Any]) -> None:
    """Answer every dunder torch's class has and the engine's does not."""
    concrete_type = {SymInt: int, SymFloat: float, SymBool: bool}[ours]
    for name in vars(theirs):
        if not (name.startswith("__") and name.endswith("__")) or hasattr(ours, name) or \
                name in ("__weakref__", "__dict__", "__module__", "__doc__", "__init__"):
            continue
        if name in vars(cls):
            continue
        if hasattr(concrete_type, name):
            setattr(cls, name, _specializing(name, convert))
        elif name.startswith("__sym_") and "f" + name[6:-2] in MATH_FNS:
            # torch.sym_sqrt(n) / sym_log2: the engine's own float expression
            setattr(cls, name, lambda self, _op="f" + name[6:-2]: make_float(
                F.fun(_op, self.expr if isinstance(self, SymFloat) else
                      F.fun("float", self.expr)), self.env))
        elif name.startswith("__sym_") and hasattr(math, name[6:-2]):
            fn = getattr(math, name[6:-2])
            setattr(cls, name, lambda self, _fn=fn: _fn(float(self)))
        else:  # torch-internal spellings (__float_pow__, ...): specialize the operands
            op = {"float_pow": "__pow__", "rfloat_pow": "__rpow__",
                  "float_truediv": "__truediv__", "rfloat_truediv": "__rtruediv__",
                  "int_truediv": "__truediv__", "rint_truediv": "__rtruediv__",
                  "int_floordiv": "__floordiv__", "rint_floordiv": "__rfloordiv__",
                  "pow_by_natural": "__pow__", "rpow_by_natural": "__rpow__"}.get(name[2:-2])
            if op is not None:
                setattr(cls, name, _specializing(op, convert))
    cls._symbolic_str = ours.__str__
    cls.__str__, cls.__format__ = _text(convert)
    cls.__repr__ = cls.__str__  # repr((n, 3)) / f"{n!r}" in user code: the digits too


class _Node:
    """What torch's own Python helpers ask of a symbolic value's ``.node``
    (``torch.broadcast_shapes`` -> ``guard_or_false`` -> ``node.guard_bool``): answered
    by the engine (a guard, as ``bool()`` is); there is no torch ShapeEnv behind it."""

    __slots__ = ("owner",)

    def __init__(self, owner: Any) -> None:
        self.owner = owner

    def is_nested_int(self) -> bool:
        return False

    def is_symbolic(self) -> bool:
        return True

    def has_hint(self) -> bool:
        return True

    def maybe_as_int(self) -> None:
        return None

    def guard_bool(self, file: Any = None, line: Any = None) -> bool:
        return bool(self.owner)

    def guard_int(self, file: Any = None, line: Any = None) -> int:
        return int(self.owner)

    def guard_float(self, file: Any = None, line: Any = None) -> float:
        return float(self.owner)

    def expect_true(self, file: Any = None, line: Any = None) -> bool:
        return bool(self.owner)


def _node(self: Any) -> _Node:
    return _Node(self)


_BINARY_OP = dis.opmap.get("BINARY_OP")
_REMAINDERS = {i for i, (name, _) in enumerate(getattr(dis, "_nb_ops", ()))
               if name in ("NB_REMAINDER", "NB_INPLACE_REMAINDER")}


def _percent_formatting(value: Any) -> bool:
    """Is the user's code running ``"..." % n`` right now (CPython's %-formatting asks
    ``__int__`` / ``__float__`` from C, with the user's frame at the ``%``), making text
    that is only a message (textflow)?  Only str and bytes formatting convert the right
    operand there: numbers and tensors answer ``%`` without it, and Python-level
    ``__mod__`` methods have frames of their own."""
    if _BINARY_OP is None or not _REMAINDERS or not _tracing(value, 5):
        return False
    f = sys._getframe(3)  # this, _hint_or, __int__, then the frame C was called from
    code, at = f.f_code.co_code, f.f_lasti
    return 0 <= at < len(code) - 1 and code[at] == _BINARY_OP and \
        code[at + 1] in _REMAINDERS and frame_is_message(f)


def _hint_or(value: Any, convert: Callable[[Any], Any], specialize: Callable[[], Any]) -> Any:
    """The example's value for %-formatting a message (no guard), else ``specialize()``."""
    if _percent_formatting(value):
        try:
            return convert(value.hint)
        except DataDependentQuestion:
            pass
    return specialize()


def _pinned_index(n: SymInt) -> int:
    """``SymInt.__int__``'s guard ``n == hint``, its origin marked as a count."""
    v = int(n.env.hint(n.expr))
    pin_count(n, v, "index")
    return v


# ``n.__class__`` and the class an isinstance test falls back to (``case int():``): read
# through ``_st_class``, a plain class attribute (the class itself: C calls only, no
# Python frame for the isinstance tests torch asks of sizes) that an export whose user
# code reads ``__class__`` or matches classes replaces with a property answering eager's
# class to the user's code (trace/pycalls.py).
_CLASS = property(operator.attrgetter("_st_class"))


class TorchSymInt(SymInt, torch.SymInt):
    __slots__ = ()
    __class__ = _CLASS  # type: ignore[assignment]
    node = property(_node)

    def __int__(self) -> int:
        return _hint_or(self, int, lambda: SymInt.__int__(self))  # type: ignore[no-any-return]

    def __index__(self) -> int:  # range(n), a list index: a count, pinned (meta/pins.py)
        return _hint_or(self, int, lambda: _pinned_index(self))  # type: ignore[no-any-return]

    def __float__(self) -> float:
        return _hint_or(self, float, lambda: SymInt.__float__(self))  # type: ignore

    def __sym_max__(self, other: Any) -> Any:
        return sym_max(self, other)

    def __sym_min__(self, other: Any) -> Any:
        return sym_min(self, other)

    def __sym_float__(self) -> Any:
        return SymFloat._of(self, self.env)


class TorchSymBool(SymBool, torch.SymBool):
    __slots__ = ()
    __class__ = _CLASS  # type: ignore[assignment]
    node = property(_node)

    def __sym_not__(self) -> Any:
        return sym_not(self)

    def __sym_ite__(self, then: Any, otherwise: Any) -> Any:
        return then if self else otherwise  # a guard on the condition

    def __sym_float__(self) -> float:
        return float(bool(self))

    # A bool is an int in Python arithmetic (`(n > 1) * n + 1`): decided (a guard on the
    # condition alone), then 0 or 1, so that the other operand stays symbolic (torch.SymBool's
    # own operators would need a SymNode).
    def __add__(self, o: Any) -> Any:
        return int(bool(self)) + o

    def __radd__(self, o: Any) -> Any:
        return o + int(bool(self))

    def __sub__(self, o: Any) -> Any:
        return int(bool(self)) - o

    def __rsub__(self, o: Any) -> Any:
        return o - int(bool(self))

    def __mul__(self, o: Any) -> Any:
        return int(bool(self)) * o

    def __rmul__(self, o: Any) -> Any:
        return o * int(bool(self))


class TorchSymFloat(SymFloat, torch.SymFloat):
    __slots__ = ()
    __class__ = _CLASS  # type: ignore[assignment]
    node = property(_node)

    def __float__(self) -> float:
        return _hint_or(self, float, lambda: SymFloat.__float__(self))  # type: ignore

    def __int__(self) -> int:
        return _hint_or(self, int, lambda: SymFloat.__int__(self))  # type: ignore

    def __sym_max__(self, other: Any) -> Any:
        return max(float(self), _concrete(other))

    def __sym_min__(self, other: Any) -> Any:
        return min(float(self), _concrete(other))

    def __sym_float__(self) -> Any:
        return self

    def __sym_int__(self) -> Any:
        return self.__trunc__()


TorchSymInt._st_class = TorchSymInt  # type: ignore[attr-defined]
# the classes whose ``__class__`` (read by isinstance tests too) an export may answer in
# Python (trace/pycalls.py's ``_st_class``, when the user's code reads classes): safetrace's
# own hot type tests look at ``type(v)`` first
SYM_CLASSES = frozenset((TorchSymInt, TorchSymFloat, TorchSymBool))
TorchSymBool._st_class = TorchSymBool  # type: ignore[attr-defined]
TorchSymFloat._st_class = TorchSymFloat  # type: ignore[attr-defined]
_complete(TorchSymInt, SymInt, torch.SymInt, int)
_complete(TorchSymBool, SymBool, torch.SymBool, bool)
_complete(TorchSymFloat, SymFloat, torch.SymFloat, float)

# What Python's int / float offers that neither the engine nor torch's classes answer
# (``n.to_bytes``, ``n.bit_count()``; torch's ``n | 8`` and ``x.is_integer()`` need a
# SymNode): computed on the specialized value (a guard).  ``n.real`` / ``n.numerator`` are
# the size itself.
_ANSWERED = {"__class__", "__new__", "__init__", "__getattribute__", "__setattr__",
             "__delattr__", "__init_subclass__", "__subclasshook__", "__reduce__",
             "__reduce_ex__", "__getnewargs__", "__sizeof__", "__dir__", "__doc__",
             "__getstate__", "__hash__", "__eq__", "__ne__", "__repr__", "__str__",
             "__format__", "from_bytes", "fromhex"}
for _cls, _ours, _theirs, _convert in ((TorchSymInt, SymInt, torch.SymInt, int),
                                       (TorchSymFloat, SymFloat, torch.SymFloat, float)):
    for _name in dir(_convert):
        if _name in _ANSWERED or not callable(getattr(_convert, _name)) or \
                any(_name in vars(c) for c in _cls.__mro__[:_cls.__mro__.index(_theirs)]):
            continue
        if _name in vars(_theirs) and _name not in ("__or__", "__ror__", "is_integer",
                                                   "conjugate", "hex"):
            continue  # (torch's own answer works on ours: as_integer_ratio, bit_length)
        setattr(_cls, _name, _specializing(_name, _convert))
TorchSymInt.real = TorchSymInt.numerator = property(lambda self: self)  # type: ignore
TorchSymInt.denominator = property(lambda self: 1)  # type: ignore
TorchSymInt.imag = property(lambda self: 0)  # type: ignore
TorchSymFloat.real = property(lambda self: self)  # type: ignore
TorchSymFloat.imag = property(lambda self: 0.0)  # type: ignore
TorchSymInt.conjugate = lambda self: self  # type: ignore
TorchSymInt.__invert__ = lambda self: -self - 1  # type: ignore
_int_pow = TorchSymInt.__pow__
TorchSymInt.__pow__ = lambda self, k, mod=None: _int_pow(self, k) if mod is None else \
    pow(int(self), _concrete(k), _concrete(mod))  # type: ignore


def _no_memory_size(self: Any) -> int:
    """``sys.getsizeof(n)``: CPython adds our class's header to what this returns, so an
    int's size cannot be given: refused (the export names it size_as_python_value)."""
    raise TypeError(f"sys.getsizeof() of a size: '{type(self).__name__}' is not an int "
                    f"in memory")


TorchSymInt.__sizeof__ = TorchSymFloat.__sizeof__ = _no_memory_size  # type: ignore
# pickle.dumps(n): the specialized int (copy.copy / deepcopy keep the size itself)
TorchSymInt.__reduce_ex__ = lambda self, protocol: (int, (int(self),))  # type: ignore
TorchSymFloat.__reduce_ex__ = lambda self, protocol: (float, (float(self),))  # type: ignore
TorchSymBool.__reduce_ex__ = lambda self, protocol: (bool, (bool(self),))  # type: ignore


def torch_env() -> Env:
    """An Env whose symbolic values are accepted by torch functions."""
    env = Env()
    env.int_cls, env.bool_cls, env.float_cls = TorchSymInt, TorchSymBool, TorchSymFloat
    env.opaque_float = _opaque
    return env


# -- floats the engine cannot express ---------------------------------------------------

_OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
        "truediv": operator.truediv, "pow": operator.pow, "neg": operator.neg}


class OpaqueFloat(torch.SymFloat):
    """A float computed from sizes that is no ratio of integer expressions (``n ** -0.5``,
    ``10000.0 ** (2 * i / d)``).  The graph computes it from its recipe (``fn`` applied to
    ``args``); arithmetic on it makes new recipes; anything that needs its value in Python
    (comparisons, ``float()``, printing) specializes the sizes it depends on."""

    opaque = True  # recognised by the layers above (rules, tracer) without importing this

    def __init__(self, fn: Callable[..., Any], args: tuple, env: Any) -> None:
        self.fn, self.args, self.env = fn, args, env

    @property
    def node(self) -> _Node:
        return _Node(self)

    @property
    def hint(self) -> float:
        return float(self.fn(*[_hint_of(a) for a in self.args]))

    def _value(self) -> float:
        """The concrete value: the sizes it depends on are specialized (guards)."""
        return float(self.fn(*[_specialize(a) for a in self.args]))

    def _with(self, op: str, other: Any, reverse: bool = False) -> Any:
        if not isinstance(other, (int, float, SymInt, SymFloat, OpaqueFloat)) or \
                isinstance(other, bool):
            return NotImplemented
        args = (other, self) if reverse else (self, other)
        return OpaqueFloat(_OPS[op], args, self.env)

    def __add__(self, o: Any) -> Any: return self._with("add", o)
    def __radd__(self, o: Any) -> Any: return self._with("add", o, True)
    def __sub__(self, o: Any) -> Any: return self._with("sub", o)
    def __rsub__(self, o: Any) -> Any: return self._with("sub", o, True)
    def __mul__(self, o: Any) -> Any: return self._with("mul", o)
    def __rmul__(self, o: Any) -> Any: return self._with("mul", o, True)
    def __truediv__(self, o: Any) -> Any: return self._with("truediv", o)
    def __rtruediv__(self, o: Any) -> Any: return self._with("truediv", o, True)
    def __pow__(self, o: Any) -> Any: return self._with("pow", o)
    def __rpow__(self, o: Any) -> Any: return self._with("pow", o, True)

    def __neg__(self) -> Any:
        return OpaqueFloat(operator.neg, (self,), self.env)

    def __pos__(self) -> Any:
        return self

    def __float__(self) -> float:
        return self._value()

    def __int__(self) -> int:
        return int(self._value())

    def __bool__(self) -> bool:
        return bool(self._value())

    def __hash__(self) -> int:
        return hash(self._value())

    def __lt__(self, o: Any) -> bool: return self._value() < _specialize(o)
    def __le__(self, o: Any) -> bool: return self._value() <= _specialize(o)
    def __gt__(self, o: Any) -> bool: return self._value() > _specialize(o)
    def __ge__(self, o: Any) -> bool: return self._value() >= _specialize(o)
    def __eq__(self, o: Any) -> bool: return self._value() == _specialize(o)  # type: ignore
    def __ne__(self, o: Any) -> bool: return self._value() != _specialize(o)  # type: ignore

    def __floor__(self) -> int:
        return math.floor(self._value())

    def __ceil__(self) -> int:
        return math.ceil(self._value())

    def __trunc__(self) -> int:
        return math.trunc(self._value())

    def __round__(self, n: Any = None) -> Any:
        return round(self._value(), n)

    def __sym_float__(self) -> Any:
        return self

    def _symbolic_str(self) -> str:
        name = getattr(self.fn, "__name__", "f")
        return f"{name}({', '.join(_text_of(a) for a in self.args)})"

    def __str__(self) -> str:
        return str(self._value()) if _tracing(self) else self._symbolic_str()

    def __format__(self, spec: str) -> str:
        return format(self._value() if _tracing(self) else self._symbolic_str(), spec)

    __repr__ = _symbolic_str


def _hint_of(v: Any) -> Any:
    return v.hint if isinstance(v, (SymInt, SymFloat, OpaqueFloat)) else v


def _specialize(v: Any) -> Any:
    if isinstance(v, OpaqueFloat):
        return v._value()
    if isinstance(v, SymInt):
        return int(v)
    if isinstance(v, SymFloat):
        return float(v)
    return v


def _text_of(v: Any) -> str:
    return v._symbolic_str() if hasattr(v, "_symbolic_str") else str(v)


def _opaque(op: str, args: tuple) -> OpaqueFloat:
    env = next(a.env for a in args if hasattr(a, "env"))
    return OpaqueFloat(_OPS[op], args, env)
