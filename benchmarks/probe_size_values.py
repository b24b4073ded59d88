"""Probe corpus: Python constructs over a dynamic size, exported once (example size 5,
``Dim.AUTO``) and compared with eager at other sizes.  Each probe is classified:

- ``ok``: the program follows eager at every size tried;
- ``specialized``: the program refuses the sizes it cannot follow (InputMismatchError),
  follows eager at the others;
- ``refused``: export raised an ExportError;
- ``WRONG``: the program returned something else than eager, or ran where eager raises,
  or raised at run time where eager did not.

Run: ``python benchmarks/probe_size_values.py`` (``-v`` prints every probe).  Exits 1 when
a probe is WRONG.
"""

from __future__ import annotations

import sys
import textwrap
import traceback
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import safetrace as st  # noqa: E402

SIZES = (0, 1, 2, 3, 7, 10, 12, 64, 100)

# body of ``def f(x):`` with ``n = x.shape[0]`` bound; ``r`` is what it returns (a number)
PROBES: dict[str, str] = {
    # text
    "pct_d_len": "r = len('%d' % n)",
    "pct_s_len": "r = len('%s' % n)",
    "pct_r_len": "r = len('%r' % n)",
    "pct_x_len": "r = len('%x' % n)",
    "pct_tuple": "r = len('%d-%d' % (n, n))",
    "pct_dict": "r = len('%(a)d' % {'a': n})",
    "pct_5d_branch": "r = 1 if ('%5d' % n).strip() == '5' else 2",
    "bytes_pct": "r = len(b'%d' % n)",
    "format_len": "r = len('{}'.format(n))",
    "format_spec_len": "r = len('{:d}'.format(n))",
    "format_kw": "r = len('{a}'.format(a=n))",
    "format_map": "r = len('{a}'.format_map({'a': n}))",
    "fstring_len": "r = len(f'{n}')",
    "fstring_join_len": "r = len(f'n={n}')",
    "fstring_spec_len": "r = len(f'{n:d}')",
    "fstring_spec_join": "r = len(f'a{n:>3}b')",
    "fstring_repr": "r = len(f'{n!r}')",
    "fstring_str": "r = len(f'{n!s}x')",
    "fstring_eq": "r = f'{n}' == '5'",
    "fstring_dict": "r = {'5': 1, '7': 2}.get(f'{n}', 3)",
    "fstring_key_join": "r = {'l5': 1, 'l7': 2}.get(f'l{n}', 3)",
    "str_len": "r = len(str(n))",
    "str_eq": "r = str(n) == '5'",
    "repr_len": "r = len(repr(n))",
    "repr_eq": "r = repr(n) == '5'",
    "ascii_len": "r = len(ascii(n))",
    "format_builtin": "r = len(format(n))",
    "format_builtin_spec": "r = len(format(n, '03d'))",
    "join_map_str": "r = len(','.join(map(str, x.shape)))",
    "join_listcomp": "r = len(','.join([str(s) for s in x.shape]))",
    "join_gen": "r = len(','.join(str(s) for s in x.shape))",
    "join_repr": "r = len(' '.join(map(repr, [n])))",
    "str_shape": "r = len(str(x.shape))",
    "repr_shape": "r = len(repr(x.shape))",
    "str_tuple_shape": "r = len(str(tuple(x.shape)))",
    "str_list_shape": "r = len(str(list(x.shape)))",
    "repr_tuple": "r = len(repr((n, 3)))",
    "str_dict": "r = len(str({'n': n}))",
    "fstring_shape": "r = len(f'{x.shape}')",
    "fstring_tuple": "r = len(f'{tuple(x.shape)}')",
    "concat_str": "r = len('a' + str(n))",
    "str_mul": "r = len('ab' * n)",
    "str_in": "r = '5' in str(n)",
    "str_startswith": "r = str(n).startswith('5')",
    "str_to_int": "r = int(str(n)) + 1",
    "str_isdigit": "r = str(n).isdigit()",
    "module_name": "r = 1 if ('layer' + str(n)) == 'layer5' else 2",
    "module_name_f": "r = 1 if f'layer{n}' == 'layer5' else 2",
    "getattr_f": "r = getattr(M, f'a{n}', 9)",
    "getattr_pct": "r = getattr(M, 'a%d' % n, 9)",
    "hex_len": "r = len(hex(n))",
    "bin_len": "r = len(bin(n))",
    "oct_len": "r = len(oct(n))",
    "hex_eq": "r = hex(n) == '0x5'",
    "to_bytes": "r = len(n.to_bytes(2, 'little')) + n.to_bytes(2, 'little')[0]",
    "struct_pack": "r = struct.pack('<i', n)[0]",
    "bytes_n": "r = len(bytes(n))",
    "bytearray_n": "r = len(bytearray(n))",
    "fstring_comma": "r = len(f'{n * 1000:,}')",
    "fstring_debug": "r = len(f'{n=}')",
    "pct_float": "r = len('%.2f' % (n / 3))",
    "str_float": "r = len(str(n / 3))",
    "fstring_float": "r = len(f'{n / 3:.1f}x')",
    "dunder_str": "r = len(n.__str__())",
    "dunder_format": "r = len(n.__format__('d'))",
    "operator_mod_text": "r = len(operator.mod('%d', n))",
    "template": "r = len(string.Template('$a').substitute(a=n))",
    "path_join": "r = len(os.path.join('a', str(n)))",
    "zfill_msg": "torch._assert(n >= 0, str(n).zfill(4))\nr = 1",
    "genexpr_msg": "torch._assert(n >= 0, ', '.join(str(s) for s in x.shape))\nr = 1",
    "str_bool": "r = len(str(n > 3))",
    "fstring_bool": "r = len(f'{n > 3}')",
    "repr_float": "r = len(repr(n / 4))",
    "print_then_len": "print(n, end='')\nr = 1",
    "print_to_buffer": "b = io.StringIO()\nprint(n, file=b)\nr = len(b.getvalue())",
    "print_f_to_buffer": "b = io.StringIO()\nprint(f'n={n}', file=b)\nr = len(b.getvalue())",
    "print_stderr": "print(f'n={n}', file=sys.stderr)\nr = 1",
    "encode": "r = len(str(n).encode())",
    "bytes_str": "r = len(bytes(str(n), 'ascii'))",
    "in_text": "r = '5' in f'a{n}'",
    "text_contains": "r = str(n) in 'a5b'",
    "re_match": "r = bool(re.match('5', str(n)))",
    "unbacked_text": "u = (x[:, 0] > 0).nonzero().shape[0]\nr = len(str(u))",
    "unbacked_msg": "u = (x[:, 0] > 0).nonzero().shape[0]\n"
                    "torch._assert(u >= 0, f'{u} rows')\nr = 1",
    "unbacked_type": "u = (x[:, 0] > 0).nonzero().shape[0]\nr = type(u) is int",
    "unbacked_pct": "u = (x[:, 0] > 0).nonzero().shape[0]\nr = len('%d' % u)",
    # identity / types
    "type_is_int": "r = type(n) is int",
    "type_eq_int": "r = type(n) == int",
    "type_name": "r = type(n).__name__ == 'int'",
    "class_is_int": "r = n.__class__ is int",
    "isinstance_int": "r = isinstance(n, int)",
    "isinstance_integral": "r = isinstance(n, numbers.Integral)",
    "isinstance_number": "r = isinstance(n, numbers.Number)",
    "isinstance_bool": "r = isinstance(n, bool)",
    "isinstance_float": "r = isinstance(n, float)",
    "isinstance_tuple": "r = isinstance(n, (str, int))",
    "isinstance_torch_symint": "r = isinstance(n, torch.SymInt)",
    "type_in": "r = type(n) in (int, float)",
    "type_float_n": "r = type(n * 0.5) is float",
    "type_div": "r = type(n / 2) is float",
    "type_floordiv": "r = type(n // 2) is int",
    "type_bool": "r = type(n > 2) is bool",
    "isinstance_cond_bool": "r = isinstance(n > 2, bool)",
    "isinstance_cond_int": "r = isinstance(n > 2, int)",
    "type_call_3": "r = type('T', (), {'v': n}).v + 1",
    "type_of_n_call": "r = type(n)(3) + n",
    "class_name": "r = n.__class__.__name__ == 'int'",
    "class_float": "r = (n / 2).__class__ is float",
    "match_float": "match n / 2:\n    case float():\n        r = 1\n    case _:\n        r = 2",
    "pickle_shape": "r = pickle.loads(pickle.dumps(tuple(x.shape)))[0] + 1",
    "fraction_of_int": "r = fractions.Fraction(int(n), 4).numerator",
    "is_integer": "r = float(n).is_integer()",
    "hash_eq": "r = hash(n) == 5",
    "hash_mod": "r = hash(n) % 3",
    "id_eq": "r = 1",
    "getsizeof": "r = sys.getsizeof(n)",
    "getsizeof_float": "r = sys.getsizeof(n / 2)",
    "copy": "r = copy.copy(n) + 1",
    "deepcopy": "r = copy.deepcopy(n) + 1",
    "deepcopy_shape": "r = copy.deepcopy(tuple(x.shape))[0] + 1",
    "pickle": "r = pickle.loads(pickle.dumps(n)) + 1",
    "dataclass": "r = DC(n).a + 1",
    "dataclass_eq": "r = DC(n) == DC(5)",
    "dataclass_repr": "r = len(repr(DC(n)))",
    "namedtuple_repr": "r = len(repr(NT(n)))",
    # containers
    "in_set": "r = n in {1, 5}",
    "in_tuple": "r = n in (1, 5)",
    "in_list": "r = n in [1, 5]",
    "in_range": "r = n in range(4, 6)",
    "dict_key": "r = {5: 1, 7: 2}.get(n, 3)",
    "dict_index": "r = {n: 4}[n]",
    "dict_index_5": "r = {n: 4}.get(5, 0)",
    "dict_from_keys": "r = len({n: 1, 5: 2})",
    "set_len": "r = len({n, 5})",
    "set_shape": "r = len(set(x.shape))",
    "list_index": "r = [5, 7, n].index(n)",
    "list_count": "r = [5, 7].count(n)",
    "list_remove": "l = [5, 7, n]; l.remove(5); r = len(l)",
    "sorted_shape": "r = sorted([n, 5])[0]",
    "sorted_shape2": "r = sorted(x.shape)[0]",
    "reversed_shape": "r = list(reversed(x.shape))[-1]",
    "enumerate_shape": "r = sum(i * s for i, s in enumerate(x.shape))",
    "list_mul": "r = len([0] * n)",
    "tuple_mul": "r = len((0,) * n)",
    "list_slice": "r = len(list(range(20))[:n])",
    "list_slice_neg": "r = len(list(range(20))[-n:])",
    "list_getitem": "r = list(range(200))[n]",
    "range_last": "r = range(n + 1)[-1]",
    "range_len": "r = len(range(n))",
    "range_sum": "r = sum(range(n))",
    "range_list": "r = len(list(range(n)))",
    "counter": "r = collections.Counter([n, 5])[5]",
    "max_shape": "r = max(x.shape)",
    "min_key": "r = min([n, 5], key=lambda v: -v)",
    "any_shape": "r = any(s == 5 for s in x.shape)",
    "all_shape": "r = all(x.shape)",
    "sum_shape": "r = sum(x.shape)",
    "zip_shape": "r = sum(a * b for a, b in zip(x.shape, (2, 3)))",
    "bisect": "r = bisect.bisect([1, 4, 8], n)",
    "heapq": "r = heapq.nsmallest(1, [n, 5])[0]",
    # numbers
    "divmod": "q, m = divmod(n, 3); r = q * 10 + m",
    "round": "r = round(n / 3)",
    "round_digits": "r = round(n / 3, 1)",
    "abs_neg": "r = abs(-n)",
    "pow_mod": "r = pow(n, 2, 7)",
    "pow3": "r = pow(n, 2)",
    "bit_length": "r = n.bit_length()",
    "bit_count": "r = n.bit_count()",
    "bool_n": "r = bool(n)",
    "and_n": "r = n and 7",
    "or_n": "r = n or 7",
    "not_n": "r = not n",
    "and_shift": "r = (n & 1) + (n >> 1) + (n << 1) + (n ^ 3) + (n | 8)",
    "invert": "r = ~n",
    "neg_mod": "r = (-n) % 4",
    "float_n": "r = float(n) / 3",
    "int_half": "r = int(n * 0.5)",
    "complex_n": "r = complex(n, 0).real",
    "fraction": "r = float(fractions.Fraction(n, 4))",
    "decimal": "r = float(decimal.Decimal(n) / 4)",
    "as_integer_ratio": "r = n.as_integer_ratio()[0]",
    "numerator": "r = n.numerator + n.denominator",
    "conjugate": "r = n.conjugate() + n.real + n.imag",
    "index_op": "r = operator.index(n) + 1",
    "int_n_base": "r = int(str(n), 16)",
    # math
    "math_floor": "r = math.floor(n / 3)",
    "math_ceil": "r = math.ceil(n / 3)",
    "math_gcd": "r = math.gcd(n, 4)",
    "math_lcm": "r = math.lcm(n, 4)",
    "math_log2": "r = math.log2(n + 1)",
    "math_sqrt": "r = math.sqrt(n)",
    "math_prod": "r = math.prod(x.shape)",
    "math_isqrt": "r = math.isqrt(n)",
    "math_comb": "r = math.comb(n, 2)",
    "math_factorial": "r = math.factorial(min(n, 10))",
    "math_trunc": "r = math.trunc(n / 3)",
    "math_fsum": "r = math.fsum([n, 0.5])",
    "math_isclose": "r = math.isclose(n, 5)",
    "math_copysign": "r = math.copysign(n, -1)",
    "math_fmod": "r = math.fmod(n, 3)",
    "math_exp": "r = math.exp(n / 100)",
    "math_pow": "r = math.pow(n, 2)",
    "math_hypot": "r = math.hypot(n, 3)",
    "math_dist": "r = math.dist((n,), (0,))",
    "math_isfinite": "r = math.isfinite(n)",
    "math_log": "r = math.log(n + 1, 2)",
    "operator_add": "r = operator.add(n, 1)",
    "operator_mul": "r = operator.mul(n, 2)",
    "operator_mod": "r = operator.mod(n, 3)",
    "operator_eq": "r = operator.eq(n, 5)",
    "operator_truth": "r = operator.truth(n)",
    "operator_getitem": "r = operator.getitem(x.shape, 0)",
    "operator_contains": "r = operator.contains([5], n)",
    "reduce_mul": "r = functools.reduce(operator.mul, x.shape, 1)",
    "reduce_lambda": "r = functools.reduce(lambda a, b: a * b, x.shape)",
    "itertools_product": "r = len(list(itertools.product(range(n), range(2))))",
    "itertools_accumulate": "r = list(itertools.accumulate([n, n]))[-1]",
    "itertools_repeat": "r = len(list(itertools.repeat(0, n)))",
    "itertools_islice": "r = len(list(itertools.islice(range(100), n)))",
    "lru_cache": "r = cached(n)",
    "numpy_int": "r = int(np.int64(n))",
    "numpy_sqrt": "r = float(np.sqrt(n))",
    "numpy_array": "r = float(np.array([n]).sum())",
    "numpy_prod": "r = int(np.prod(x.shape))",
    "numpy_arange": "r = len(np.arange(n))",
    "numpy_zeros": "r = np.zeros(n).shape[0]",
    "json_dumps": "r = len(json.dumps(list(x.shape)))",
    "json_dumps_n": "r = len(json.dumps(n))",
    # torch.Size
    "size_eq_tuple": "r = x.shape == (5, 3)",
    "size_ne_tuple": "r = x.shape != (5, 3)",
    "size_slice_eq": "r = x.shape[1:] == (3,)",
    "size_concat": "r = len(x.shape + (1,))",
    "size_concat_val": "r = (x.shape + (1,))[0]",
    "size_lt": "r = x.shape < (6, 0)",
    "size_tuple_lt": "r = tuple(x.shape) < (6, 0)",
    "size_numel": "r = x.shape.numel()",
    "size_count": "r = x.shape.count(5)",
    "size_index": "r = x.shape.index(3)",
    "size_hash": "r = hash(x.shape) == hash((5, 3))",
    "size_in_dict": "r = {(5, 3): 1}.get(tuple(x.shape), 2)",
    "size_in_dict2": "r = {torch.Size([5, 3]): 1}.get(x.shape, 2)",
    "size_unpack_kw": "r = kw(**dict(zip('ab', x.shape)))",
    "size_star": "r = kw(*x.shape)",
    "torch_size_new": "r = torch.Size([n, 2]).numel()",
    "size_mul": "r = len(x.shape * 2)",
    "numel": "r = x.numel() // 3 + 1",
    "numel_branch": "r = 1 if x.numel() > 20 else 2",
    "len_x": "r = len(x) + 1",
    "dim_x": "r = x.dim() + x.ndim",
    "size_call": "r = x.size(0) + x.size()[0]",
    "shape_eq_other": "r = x.shape[0] == x.shape[1]",
    # control flow
    "match_case": "match n:\n    case 5:\n        r = 1\n    case _:\n        r = 2",
    "match_tuple": "match tuple(x.shape):\n    case (5, 3):\n        r = 1\n"
                   "    case _:\n        r = 2",
    "match_int": "match n:\n    case int():\n        r = 1\n    case _:\n        r = 2",
    "while_loop": "r = 0\ni = n\nwhile i > 0:\n    i //= 2\n    r += 1",
    "for_range": "r = 0\nfor i in range(n):\n    r += i",
    "if_n": "r = 1 if n else 2",
    "if_eq": "r = 1 if n == 5 else 2",
    "ternary_chain": "r = 1 if 3 < n < 8 else 2",
    "walrus": "r = (m := n * 2) + m",
    "getattr_layers": "r = getattr(M, 'a' + str(n), 9)",
    "str_format_percent_s_msg": "torch._assert(n >= 0, 'n is %s' % n)\nr = 1",
    "assert_fstring_msg": "torch._assert(n >= 0, f'n is {n}')\nr = 1",
    "check_msg": "torch._check(n >= 0, lambda: f'n is {n}')\nr = 1",
    "warn_msg": "warnings.warn(f'n is {n}') if n < 0 else None\nr = 1",
    "stored_msg": "msg = f'n is {n}'\nr = 1",
    "stored_msg_len": "msg = f'n is {n}'\nr = len(msg)",
    "list_of_str": "r = len(str([n]))",
    "tensor_from_n": "r = torch.tensor(n).item() + 0",
    "tensor_full": "r = torch.full((2,), n).sum()",
    "x_view_t": "r = x.t().reshape(-1).sum()",
}

SETUP = """
import bisect, collections, copy, dataclasses, decimal, fractions, functools, heapq
import io, itertools, json, math, numbers, operator, os, pickle, re, string, struct
import sys, warnings
import numpy as np, torch

@dataclasses.dataclass
class DC:
    a: int

NT = collections.namedtuple("NT", "a")

class M:
    a5 = 1
    a7 = 2

def kw(a, b):
    return a * 10 + b

@functools.lru_cache(maxsize=None)
def cached(v):
    return v + 1
"""


def _build(name: str, body: str):
    src = SETUP + f"\ndef f(x):\n    n = x.shape[0]\n{textwrap.indent(body, '    ')}\n" \
        "    return x.sum() * 0 + r\n"
    ns: dict = {}
    exec(compile(src, f"<probe {name}>", "exec"), ns)
    return ns["f"]


def _eager(f, x):
    try:
        return f(x), None
    except Exception as e:  # noqa: BLE001
        return None, e


def classify(name: str, body: str) -> tuple[str, str]:
    f = _build(name, body)
    try:
        ep = st.export(f, (torch.randn(5, 3),), dynamic_shapes={"x": (st.Dim.AUTO, 3)})
    except st.ExportError as e:
        return "refused", str(e).splitlines()[0][:110]
    except Exception as e:  # noqa: BLE001
        return "CRASH", f"{type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''}"
    seen = []
    specialized = False
    for n in SIZES:
        x = torch.randn(n, 3)
        want, err = _eager(f, x)
        try:
            got = ep.module()(x)
        except st.InputMismatchError:
            specialized = True
            continue
        except Exception as e:  # noqa: BLE001
            if err is None:
                return "WRONG", f"n={n}: program raised {type(e).__name__}, eager did not"
            continue
        if err is not None:
            return "WRONG", f"n={n}: eager raised {type(err).__name__}: {err}, program ran"
        if not torch.equal(torch.as_tensor(got), torch.as_tensor(want)) and not (
                torch.as_tensor(got).isnan().all() and torch.as_tensor(want).isnan().all()):
            return "WRONG", f"n={n}: program {got.tolist()} eager {want.tolist()}"
        seen.append(n)
    return ("specialized" if specialized else "ok"), f"ran at {seen}"


def main() -> int:
    verbose = "-v" in sys.argv
    only = [a for a in sys.argv[1:] if not a.startswith("-")]
    counts: dict[str, int] = {}
    for name, body in PROBES.items():
        if only and name not in only:
            continue
        try:
            kind, why = classify(name, body)
        except Exception:  # noqa: BLE001
            kind, why = "CRASH", traceback.format_exc().splitlines()[-1]
        counts[kind] = counts.get(kind, 0) + 1
        if verbose or kind in ("WRONG", "CRASH"):
            print(f"{kind:12} {name:26} {why}")
    print(f"{len(PROBES) if not only else len(only)} probes:", counts)
    return 1 if counts.get("WRONG") else 0


if __name__ == "__main__":
    sys.exit(main())
