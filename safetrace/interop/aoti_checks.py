"""The input checks of an AOTInductor package, generated from the program's contract.

An AOTInductor package checks nothing about its inputs unless the serving process sets
``AOTI_RUNTIME_CHECK_INPUTS=1``: inductor compiles static sizes as constants, reads a size
two inputs share from the first one that carries it, and indexes every input with the
strides it was compiled for.  So ``x: [6, 3], y: [5, 3]`` (declared equal), a wrong static
size, a wrong dtype or rank, runs and reads out of bounds, and a transposed input (which
``ep.module()`` accepts) is read as if it were contiguous: garbage.  (torch's optional
checks, when enabled, also refuse a size of 1 that a ``min=1`` Dim admits and a
non-contiguous input the program accepts, and check no relation between inputs.)

While ``st.to_aoti`` compiles, inductor's generator of those checks is replaced (for that
compile, on that thread: ``checking_inputs``) by one that writes the contract's checks in
C++, unconditionally, in the order ``ep.module()`` checks them: per tensor input its
device type, dtype, rank and static sizes; each symbol bound where it first appears;
every derived or shared size; the symbols' ranges; the residual conditions.  A failed
check throws with the message ``ep.module()`` would raise (the same builders, with the
values the package sees filled in at run time).  An input whose strides differ from the
compiled ones (in a dim of size > 1) is copied to the compiled layout before the kernels
run, unless the program writes into it (then it is refused: a copy would lose the write).
Size expressions are lowered with the engine's ``lower`` over a C++ algebra.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

import torch

from safetrace.errors import wrong_layout, wrong_rank
from safetrace.errors.deploy import wrong_device
from safetrace.exporter.checks import condition_origin, mismatch
from safetrace.exporter.contract import Contract, TensorInput
from safetrace.interop.divisions import safe_conditions
from safetrace.symbolic.semantics import Algebra, lower

_MARK = "\x01"
_RANK = 9182736455  # what len() of a shape of unknown rank says while a message is built


class _Slot:
    """A value known only when the package runs: formats as a marker of its C++ form."""

    def __init__(self, index: int) -> None:
        self.text = f"{_MARK}{index}{_MARK}"

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__

    def __format__(self, spec: str) -> str:
        return self.text


class _UnknownShape(list):
    """A shape whose rank is known only at run time (for the wrong-rank message)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def __len__(self) -> int:
        return _RANK

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__


def _literal(text: str) -> str:
    """A C++ string literal (octal escapes: never greedy, any byte)."""
    out = []
    for b in text.encode():
        c = chr(b)
        out.append(c if 32 <= b < 127 and c not in '"\\?' else f"\\{b:03o}")
    return '"' + "".join(out) + '"'


_CPP_FNS: dict[str, Any] = {
    "add": lambda a, b: f"({a} + {b})", "mul": lambda a, b: f"({a} * {b})",
    "floordiv": lambda a, b: f"_st_floordiv({a}, {b})",
    "mod": lambda a, b: f"_st_mod({a}, {b})",
    "min": lambda a, b: f"std::min<int64_t>({a}, {b})",
    "max": lambda a, b: f"std::max<int64_t>({a}, {b})",
    "eq": lambda a, b: f"({a} == {b})", "ne": lambda a, b: f"({a} != {b})",
    "lt": lambda a, b: f"({a} < {b})", "le": lambda a, b: f"({a} <= {b})",
    "ge": lambda a, b: f"({a} >= {b})", "and": lambda a, b: f"({a} && {b})",
    "or": lambda a, b: f"({a} || {b})", "not": lambda a: f"(!{a})"}


def _cpp_leaf(e: Any) -> str:
    if e.op == "sym":
        return f"st_{e.name}"
    if e.op == "const" and isinstance(e.value, bool):
        return "true" if e.value else "false"
    if e.op == "const":
        return f"INT64_C({e.value})" if e.value >= 0 else f"(-INT64_C({-e.value}))"
    raise LookupError(e.op)  # a float size: no C++ form here


CPP = Algebra(_cpp_leaf, fns=_CPP_FNS)

_HELPERS = r"""
struct _StUndefined {};
static int64_t _st_floordiv(int64_t a, int64_t b) {
    if (b == 0) throw _StUndefined();
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}
static int64_t _st_mod(int64_t a, int64_t b) {
    if (b == 0) throw _StUndefined();
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
static std::string _st_ints(const int64_t* v, int64_t n, const char* open, const char* close) {
    std::ostringstream s;
    s << open;
    for (int64_t i = 0; i < n; ++i) s << (i ? ", " : "") << v[i];
    s << close;
    return s.str();
}
static bool _check_aoti_runtime_check_inputs_env() {
    const static char* value = getenv("AOTI_RUNTIME_CHECK_INPUTS");
    const static bool on = value != nullptr && value[0] != '0';
    return on;
}
"""

_DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64",
           "uint8", "uint16", "uint32", "uint64", "bool", "complex64", "complex128")
_DEVICES = ("cpu", "cuda", "xpu", "mps")


def _names_fn() -> str:
    lines = ["static std::string _st_dtype_name(int32_t c) {"]
    lines += [f'    if (c == aoti_torch_dtype_{d}()) return "torch.{d}";' for d in _DTYPES]
    lines += ['    return "dtype #" + std::to_string(c);', "}",
              "static std::string _st_device_name(int32_t c) {"]
    lines += [f'    if (c == aoti_torch_device_type_{d}()) return "{d}";' for d in _DEVICES]
    lines += ['    return "device type #" + std::to_string(c);', "}"]
    return "\n".join(lines)


class PackageChecks:
    """The C++ input checks of one program (`contract`); `written`: indices of the
    contract's inputs the program writes into (never copied to another layout)."""

    def __init__(self, contract: Contract, written: frozenset[int] = frozenset()) -> None:
        self.contract = contract
        self.written = written
        self.emitted = False
        self.unchecked: list[str] = []  # conditions with no C++ form (float sizes)
        self.problem = ""  # why the checks could not be placed (inductor's inputs differ)

    # -- messages --------------------------------------------------------------------------
    def _fail(self, error: Any, slots: list[str], rank: str | None = None) -> str:
        """A C++ statement throwing `error`'s message, its slots (C++ expressions, by
        index) filled in at run time; `rank`: the C++ of what ``_RANK`` stands for."""
        text = str(error)
        if rank is not None:
            slots = [*slots, rank]
            text = text.replace(str(_RANK), str(_Slot(len(slots) - 1)))
        parts = text.split(_MARK)
        pieces = []
        for j, p in enumerate(parts):
            if j % 2 == 0:
                if p:
                    pieces.append(_literal(p))
            else:
                pieces.append(f"({slots[int(p)]})")
        return ("{ std::ostringstream _m; _m << " + " << ".join(pieces or ['""']) +
                "; throw std::runtime_error(_m.str()); }")

    # -- the generated function --------------------------------------------------------------
    def cpp(self, graph_inputs: list[Any], hint: Any) -> str | None:
        """The C++ of ``__check_inputs_outputs`` for inductor's tensor `graph_inputs` (its
        ``ir`` inputs, in order; `hint` gives a size expression's example value), or None
        (and ``problem`` says why) when they are not the contract's tensor inputs."""
        tensors = [(i, inp) for i, inp in enumerate(self.contract.inputs)
                   if isinstance(inp, TensorInput) and not inp.scalar]
        if len(tensors) != len(graph_inputs):
            self.problem = (f"the compiled graph takes {len(graph_inputs)} tensors where the "
                            f"program takes {len(tensors)}")
            return None
        for (i, inp), box in zip(tensors, graph_inputs):
            if box.get_dtype() != inp.dtype or len(box.get_size()) != len(inp.dims):
                self.problem = f"the compiled graph's input for {inp.path} differs from it"
                return None
        body: list[str] = []
        bound: set[str] = set()
        where: dict[int, int] = {}  # contract input index -> handle index
        for k, ((i, inp), box) in enumerate(zip(tensors, graph_inputs)):
            where[i] = k
            body += self._tensor(k, inp, box, bound)
        for i, inp in tensors:
            for d, dim in enumerate(inp.dims):
                if dim.kind in ("derived", "equal"):
                    body += self._relation(where[i], d, inp, dim, bound)
        body += self._ranges(bound)
        body += self._conditions(bound)
        for (i, inp), box in zip(tensors, graph_inputs):
            body += self._layout(where[i], i, inp, box, hint)
        self.emitted = True
        head = [_HELPERS, _names_fn(),
                "AOTI_NOINLINE static void __check_inputs_outputs(",
                "        AtenTensorHandle* input_handles, AtenTensorHandle* output_handles) {"]
        return "\n".join(head + ["    " + line for line in body] + ["}"])

    def _tensor(self, k: int, inp: TensorInput, box: Any, bound: set[str]) -> list[str]:
        h, p = f"input_handles[{k}]", inp.path
        out = [f"int32_t dt{k}; AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_dtype({h}, &dt{k}));",
               f"int32_t dv{k}; AOTI_TORCH_ERROR_CODE_CHECK("
               f"aoti_torch_get_device_type({h}, &dv{k}));",
               f"int64_t nd{k}; AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_dim({h}, &nd{k}));",
               f"int64_t* sz{k}; AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_get_sizes({h}, &sz{k}));",
               f"int64_t* sd{k}; AOTI_TORCH_ERROR_CODE_CHECK("
               f"aoti_torch_get_strides({h}, &sd{k}));"]
        device = box.get_device()
        if device is not None and device.type in _DEVICES:
            err = wrong_device(p, _Slot(0), device.type)
            out.append(f"if (dv{k} != aoti_torch_device_type_{device.type}()) "
                       + self._fail(err, [f"_st_device_name(dv{k})"]))
        dt = str(inp.dtype).split(".")[-1]
        if dt in _DTYPES:
            out.append(f"if (dt{k} != aoti_torch_dtype_{dt}()) "
                       + self._fail(mismatch("dtype", p, _Slot(0), inp.dtype),
                                    [f"_st_dtype_name(dt{k})"]))
        shown = tuple(str(dim.size) for dim in inp.dims)
        rank = wrong_rank(p, _UnknownShape(str(_Slot(0))), shown)
        out.append(f"if (nd{k} != {len(inp.dims)}) " + self._fail(
            rank, [f'_st_ints(sz{k}, nd{k}, "[", "]")'], rank=f"nd{k}"))
        shape = [_Slot(d) for d in range(len(inp.dims))]
        slots = [f"sz{k}[{d}]" for d in range(len(inp.dims))]
        for d, dim in enumerate(inp.dims):
            if dim.kind == "static":
                kind = "static" if dim.why is None else "required"
                exp = (d, dim.size) if dim.why is None else (d, dim.size, dim.why)
                out.append(f"if (sz{k}[{d}] != {dim.size}) "
                           + self._fail(mismatch(kind, p, shape, exp), slots))
            elif dim.kind == "bind":
                out.append(f"int64_t st_{dim.symbol} = sz{k}[{d}];")
                bound.add(dim.symbol)  # type: ignore[arg-type]
        return out

    def _relation(self, k: int, d: int, inp: TensorInput, dim: Any,
                  bound: set[str]) -> list[str]:
        out = []
        if dim.kind == "derived":
            out.append(f"int64_t st_{dim.symbol} = _st_floordiv(sz{k}[{d}] - "
                       f"INT64_C({dim.offset}), INT64_C({dim.coef}));")
            bound.add(dim.symbol)
        try:
            value = lower(dim.size, CPP)
        except (KeyError, LookupError):
            self.unchecked.append(f"{inp.where(d)} == {self.contract.where_text(dim.size)}")
            return out
        n = len(inp.dims)
        shape = [_Slot(j) for j in range(n)]
        info = (self.contract.where_text(dim.size), dim.why or "")
        err = mismatch("relation", inp.path, shape, (d, _Slot(n), info))
        out.append(f"if (sz{k}[{d}] != {value}) "
                   + self._fail(err, [f"sz{k}[{j}]" for j in range(n)] + [value]))
        return out

    def _ranges(self, bound: set[str]) -> list[str]:
        out = []
        for s in self.contract.symbols:
            if s.name not in bound:
                continue
            v = f"st_{s.name}"
            if s.checked_lo > 0:
                err = mismatch("min", s.where, _Slot(0), (s.lo, s.origin))
                out.append(f"if ({v} < {s.lo}) " + self._fail(err, [v]))
            if s.hi is not None:
                err = mismatch("max", s.where, _Slot(0), (s.hi, s.origin))
                out.append(f"if ({v} > {s.hi}) " + self._fail(err, [v]))
        return out

    def _conditions(self, bound: set[str]) -> list[str]:
        out = []
        safe = safe_conditions(self.contract)  # (no zero divisor where an `or` holds)
        for j, c in enumerate(self.contract.conditions):
            if not c.cond.free_symbols <= bound:
                continue  # on sizes computed from data: asserted inside the graph
            try:
                test = lower(safe[j], CPP)
            except (KeyError, LookupError):
                self.unchecked.append(self.contract.where_text(c.cond))
                continue
            text = self.contract.where_text(c.cond)
            why = condition_origin(c.cond, c.origin, self.contract, c.kind)
            undefined = mismatch("undefined", text,
                                 ZeroDivisionError("integer division or modulo by zero"), why)
            out += [f"bool ok{j} = true, undef{j} = false;",
                    f"try {{ ok{j} = {test}; }} catch (const _StUndefined&) {{ undef{j} = true; }}",
                    f"if (undef{j}) " + self._fail(undefined, []),
                    f"if (!ok{j}) " + self._fail(mismatch("guard", text, None, why), [])]
        return out

    def _layout(self, k: int, i: int, inp: TensorInput, box: Any, hint: Any) -> list[str]:
        """The strides the package was compiled for: an input laid out otherwise is copied
        to them (refused where the program asks for contiguity or writes into it)."""
        order = _dense_order([hint(s) for s in box.get_size()],
                             [hint(s) for s in box.get_stride()])
        if order is None:
            self.problem = f"{inp.path} was compiled for a layout that is not dense"
            return []
        n = len(inp.dims)
        out = [f"int64_t want{k}[{max(n, 1)}];", "{", "    int64_t acc = 1;"]
        for d in reversed(order):
            out.append(f"    want{k}[{d}] = acc; acc *= std::max<int64_t>(sz{k}[{d}], 1);")
        out.append("}")
        # (the program read strides: row-major ones on dims of size 0 / 1 too)
        loose = "" if inp.exact_strides else f"sz{k}[{{d}}] <= 1 || "
        same = " && ".join(f"({loose.format(d=d)}sd{k}[{d}] == want{k}[{d}])"
                           for d in range(n)) or "true"
        out.append(f"if (!({same})) {{")
        if inp.layout is not None or i in self.written:
            origin = inp.layout if inp.layout is not None else \
                " (the program writes into this input, and a copy would lose the write)"
            err = wrong_layout(inp.path, _Slot(0), _Slot(1), origin)
            out.append(f"    int64_t off{k}; AOTI_TORCH_ERROR_CODE_CHECK("
                       f"aoti_torch_get_storage_offset(input_handles[{k}], &off{k}));")
            out.append("    " + self._fail(err, [f'_st_ints(sd{k}, nd{k}, "(", ")")',
                                                 f"off{k}"]))
        else:
            out += [f"    int32_t di{k}; AOTI_TORCH_ERROR_CODE_CHECK("
                    f"aoti_torch_get_device_index(input_handles[{k}], &di{k}));",
                    f"    AtenTensorHandle fresh{k};",
                    f"    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(nd{k}, sz{k}, "
                    f"want{k}, dt{k}, dv{k}, di{k}, &fresh{k}));",
                    f"    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_copy_(fresh{k}, "
                    f"input_handles[{k}], 0));",
                    f"    AOTI_TORCH_ERROR_CODE_CHECK("
                    f"aoti_torch_delete_tensor_object(input_handles[{k}]));",
                    f"    input_handles[{k}] = fresh{k};"]
        out.append("}")
        return out


def _dense_order(sizes: list[int], strides: list[int]) -> list[int] | None:
    """The dims from outermost to innermost of a dense layout with these example sizes and
    strides (size-1 dims anywhere), or None if the layout is not dense."""
    order = sorted(range(len(sizes)), key=lambda d: (-strides[d], d))
    acc = 1
    for d in reversed(order):
        if sizes[d] > 1 and strides[d] != acc:
            return None
        acc *= max(sizes[d], 1)
    return order


_LOCK = threading.Lock()
_ACTIVE = threading.local()


@contextlib.contextmanager
def checking_inputs(checks: PackageChecks) -> Iterator[PackageChecks]:
    """While inside, AOTInductor compiles on this thread write `checks` as their input
    checks (compiles on other threads keep torch's); torch's generator is put back on
    exit."""
    from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu
    from torch._inductor.virtualized import V

    with _LOCK:
        original = CppWrapperCpu.__dict__["generate_input_output_runtime_checks"]

        def generate(self: Any) -> None:
            active = getattr(_ACTIVE, "checks", None)
            if active is None:
                return original(self)
            boxes = [b for b in V.graph.graph_inputs.values()
                     if isinstance(b, torch._inductor.ir.TensorBox)]
            text = active.cpp(boxes, lambda e: V.graph.sizevars.optimization_hint(e, fallback=2))
            if text is None:
                return original(self)
            self.prefix.splice_aot(text)
            return None

        CppWrapperCpu.generate_input_output_runtime_checks = generate
        _ACTIVE.checks = checks
        try:
            yield checks
        finally:
            _ACTIVE.checks = None
            CppWrapperCpu.generate_input_output_runtime_checks = original
