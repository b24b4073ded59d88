"""Regenerate safetrace/serialize/load_ops.py: the ATen overloads a loaded graph may call.

Run: PYTHONPATH=. .venv/bin/python tools/gen_load_ops.py   (rewrites the data module)

A loaded file may call what safetrace's exporter records, and nothing else:

* every ATen overload with one of the library's shape rules (``safetrace/rules/``);
* every core ATen overload (what a decomposition leaves: ``ep.run_decompositions()``);
* the overloads of the ATen namesakes of torch's public functions and Tensor methods
  (``torch.atleast_3d``, ``x.mT``: the tracer records those it has no rule for through
  their meta kernels), of Python's operators on tensors (``names.DUNDERS``), of the ATen
  operators safetrace's own code names (handlers, composites) and of those torch's
  decompositions and references call;

less what a loaded graph may never call (``allowlist.DENIED``, out= variants, writes of an
argument other than the first), backend and gradient kernels outside the rules (core
ATen's included: ``max_pool2d_with_indices_backward`` writes where its indices say) and,
outside the rules and core ATen, what this script's review refuses: private operators (but
those of ``REVIEWED_IN``, which the tracer records), backend and gradient kernels, operators of arguments or
results a graph does not hold, and the families of ``REVIEWED_OUT`` (devices, sparse and
quantized tensors, autograd state, kernels that trust their caller).  The list is data:
``st.load`` looks an overload up by name in it, so what a file may call does not change
with the torch it is loaded under.
"""

from __future__ import annotations

import pathlib
import re
import sys

import torch

from safetrace.rules import RULES
from safetrace.rules.registry import FAMILY
from safetrace.serialize.allowlist import DENIED, structural_refusal
from safetrace.trace import names

ROOT = pathlib.Path(__file__).resolve().parent.parent
TARGET = ROOT / "safetrace" / "serialize" / "load_ops.py"
aten = torch.ops.aten

# Reviewed: public operators the tracer could reach through a namesake that a loaded graph
# may not call (refused whatever their arguments), by family, with the reason.
REVIEWED_OUT: dict[str, tuple[str, ...]] = {
    # a device's runtime (CUDA initialised by a file) or a device query
    "devices": ("pin_memory", "is_pinned", "cuda", "cpu", "get_device", "is_distributed",
                "to_mkldnn", "record_stream"),
    # sparse tensors: built from indices torch does not check by default, resized in place
    "sparse": ("sparse_coo_tensor", "sparse_csr_tensor", "sparse_csc_tensor",
               "sparse_bsr_tensor", "sparse_bsc_tensor", "sparse_compressed_tensor",
               "sparse_resize_", "sparse_resize_and_clear_", "resize_as_sparse_", "to_sparse",
               "to_sparse_csr", "to_sparse_csc", "to_sparse_bsr", "to_sparse_bsc", "to_dense",
               "coalesce", "is_coalesced", "indices", "indices_copy", "values", "values_copy",
               "crow_indices", "crow_indices_copy", "col_indices", "col_indices_copy",
               "ccol_indices", "ccol_indices_copy", "row_indices", "row_indices_copy",
               "sparse_dim", "dense_dim", "sparse_mask", "hspmm", "smm", "sspaddmm"),
    # quantized tensors (their kernels trust scales, zero points and axes)
    "quantized": ("quantize_per_tensor", "quantize_per_channel", "quantize_per_tensor_dynamic",
                  "dequantize", "int_repr", "q_scale", "q_zero_point", "q_per_channel_axis",
                  "q_per_channel_scales", "q_per_channel_zero_points", "empty_quantized",
                  "choose_qparams_optimized"),
    # nested tensors
    "nested": ("to_padded_tensor",),
    # autograd state of the caller's tensors, tracing markers
    "autograd": ("requires_grad_", "retains_grad", "is_leaf", "output_nr", "lift", "data"),
    # packed-sequence RNNs and the distributed batch norm's pieces: kernels that index by
    # the values of another operand (batch sizes, counts) as their callers computed them
    "trusting": ("batch_norm_elemt", "batch_norm_stats", "batch_norm_gather_stats",
                 "batch_norm_gather_stats_with_counts", "batch_norm_update_stats",
                 "batch_norm_backward_elemt", "batch_norm_backward_reduce", "segment_reduce",
                 "slice_inverse"),
}
_REVIEWED = {p: family for family, ps in REVIEWED_OUT.items() for p in ps}
# (packed-sequence overloads of the RNNs: ``lstm.data`` and the like)
_REVIEWED_OVERLOADS = {"lstm.data", "gru.data", "rnn_relu.data", "rnn_tanh.data"}

# private operators the tracer records through their meta kernels, each reviewed: a pure
# computation of its tensor operands, reading no index, offset or length from their data
# (``torch._weight_norm`` of ``nn.utils.weight_norm`` and its parametrization: wav2vec2,
# hubert, wavlm, sew, unispeech); ``aten._assert_async.msg``: a check of one boolean
# tensor, raising with the program's message (the index check exporter/index_checks.py
# puts before a program's first state write; trace/draft.py's bool() of a tensor)
REVIEWED_IN = {"_weight_norm.default", "_assert_async.msg"}

_PLAIN_ARGS = frozenset(("Tensor", "int", "float", "number", "bool", "str", "ScalarType",
                         "Layout", "Device", "MemoryFormat"))
_PLAIN_RETURNS = frozenset(("Tensor", "List[Tensor]", "int", "float", "bool", "number"))
_BACKEND_KERNELS = ("mkldnn", "miopen", "cudnn", "quantized_", "fbgemm")


def overloads(packet: str) -> list:
    p = getattr(aten, packet, None)
    if not isinstance(p, torch._ops.OpOverloadPacket):
        return []
    return [getattr(p, o) for o in p.overloads()]


def rules() -> set:
    """The library's rules (a user's ``st.register_shape_rule`` is not the library's)."""
    return {op for op in RULES if op.namespace == "aten" and
            FAMILY[op].startswith("safetrace.rules.")}


def every_aten() -> set:
    """Every ATen overload registered in this process (``dir(torch.ops.aten)`` lists only
    the packets looked up so far)."""
    packets = {n.split("::", 1)[1].split(".", 1)[0]
               for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::")}
    return {op for p in packets for op in overloads(p)}


def core() -> set:
    return {op for op in every_aten() if torch.Tag.core in op.tags}


def namesakes() -> set:
    """Overloads of the ATen namesakes of torch's public callables (``trace/dispatch.py``)."""
    prefixes = {torch.linalg: "linalg_", torch.fft: "fft_", torch.special: "special_"}
    packets = {packet for packet, _ in names.DUNDERS.values()}
    for space in (torch, torch.Tensor, torch.nn.functional, *prefixes):
        for name in dir(space):
            if name.startswith("_") or name in names.PASSTHROUGH_NAMES:
                continue
            packet = names.ALIASES.get(name, name)
            packets |= {packet, prefixes.get(space, "") + packet}
    return {op for p in packets for op in overloads(p)}


def named_in(files: list) -> set:
    """Overloads named in source files (``aten.x`` or ``aten.x.overload``)."""
    found = set()
    for f in files:
        for m in re.finditer(r"\baten\.(\w+)(?:\.(\w+))?", pathlib.Path(f).read_text()):
            ops = overloads(m.group(1))
            exact = [op for op in ops if op._overloadname == m.group(2)]
            found.update(exact or ops)
    return found


def refusal(op) -> str | None:
    """Why the review refuses an overload outside the rules and core ATen (None: kept)."""
    packet = op._schema.name.split("::", 1)[1]
    if packet in _REVIEWED or f"{packet}.{op._overloadname}" in _REVIEWED_OVERLOADS:
        return f"reviewed out ({_REVIEWED.get(packet, 'trusting')})"
    if packet.startswith("_"):
        return "a private operator"
    if packet.startswith(_BACKEND_KERNELS) or packet.endswith("_backward"):
        return "a backend or gradient kernel"
    schema = op._schema
    returns = [str(r.real_type) for r in schema.returns]
    if not returns or any(r not in _PLAIN_RETURNS for r in returns):
        return "returns nothing, or what a graph does not hold"
    kinds = [_base(str(a.real_type)) for a in schema.arguments]
    if any(k not in _PLAIN_ARGS for k in kinds):
        return "takes an argument a graph does not hold"
    if "Tensor" not in returns[0] and "Tensor" not in kinds:
        return "not a tensor operator"
    return None


def _trusting(packet: str) -> bool:
    """A backend or gradient kernel: refused even in core ATen (a forward program never
    calls one; ``max_pool2d_with_indices_backward`` writes where its ``indices`` say, out
    of bounds, and crashes the process)."""
    return packet.startswith(_BACKEND_KERNELS) or packet.endswith("_backward")


def _base(kind: str) -> str:
    while kind.startswith(("Optional[", "List[")):
        kind = kind[kind.index("[") + 1:-1]
    return kind


def allowed() -> list[str]:
    torch_dir = pathlib.Path(torch.__file__).parent
    ours = sorted(str(f) for f in (ROOT / "safetrace").rglob("*.py"))
    decomps = [torch_dir / "_decomp" / "decompositions.py", torch_dir / "_refs" / "__init__.py",
               torch_dir / "_refs" / "nn" / "functional" / "__init__.py",
               torch_dir / "_refs" / "linalg" / "__init__.py"]
    rules_ = rules()
    trusted = rules_ | core()
    others = namesakes() | named_in(ours) | named_in([f for f in decomps if f.exists()])
    reviewed_in = {op for name in REVIEWED_IN for op in overloads(name.split(".")[0])
                   if f"{op._schema.name.split('::', 1)[1]}.{op._overloadname}" in REVIEWED_IN}
    out = set()
    for op in trusted | others | reviewed_in:
        packet = op._schema.name.split("::", 1)[1]
        if packet in DENIED or packet in _REVIEWED or structural_refusal(op) is not None:
            continue
        if op in rules_ or refusal(op) is None or op in trusted and not _trusting(packet) \
                or f"{packet}.{op._overloadname}" in REVIEWED_IN:
            out.add(f"{packet}.{op._overloadname}")
    return sorted(out)


def render(ops: list[str]) -> str:
    lines, line = [], ""
    for name in ops:
        if len(line) + len(name) + 1 > 88:
            lines.append(line)
            line = ""
        line = f"{line} {name}" if line else name
    lines.append(line)
    body = "\n".join(lines)
    return (f'"""The ATen overloads a loaded graph may call: what safetrace\'s exporter '
            f'records.\n\nGenerated by tools/gen_load_ops.py (torch {torch.__version__}); '
            f'do not edit: rerun it\nand review the difference.  {len(ops)} overloads, '
            f'``packet.overload``.\n"""\n\nTORCH_VERSION = "{torch.__version__}"\n\n'
            f'OPS = frozenset("""\n{body}\n""".split())\n')


def main() -> int:
    ops = allowed()
    TARGET.write_text(render(ops))
    print(f"{len(ops)} overloads -> {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
