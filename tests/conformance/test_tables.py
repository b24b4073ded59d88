"""Every case of the conformance tables through the one checker (tests/conformance/checker.py).

A case either passes every check, or is listed here: REFUSED when a clear safetrace error is
the documented behaviour (the test then requires exactly that refusal), KNOWN when it is a
bug or a coverage gap of another area (xfail(strict): a fix makes it XPASS, then move the case
out of KNOWN). The transformers table and the cases in SLOW_CASES are marked ``slow``
(``pytest -m slow``).
"""

from __future__ import annotations

import pytest

import tests.conformance.models.patterns_0  # noqa: F401  (registers the pattern cases)
import tests.conformance.models.patterns_1  # noqa: F401
import tests.conformance.models.patterns_2  # noqa: F401
from tests.conformance.checker import Problem, check
from tests.conformance.models.hf import HF
from tests.conformance.models.pattern_base import CASES as PATTERN_CASES
from tests.conformance.models.vision import VISION
from tests.conformance.table_models import ARCH, ARCH2

TABLES = {
    "arch": ARCH,
    "arch2": ARCH2,
    "vision": VISION,
    "patterns": {name: (lambda c=c: c) for name, c in PATTERN_CASES},
    "hf": HF,
}
SLOW_TABLES = {"hf"}
SLOW_CASES = {"arch2/hf_bert_mlm", "arch2/hf_bert_cls", "arch2/hf_gpt2_lm", "arch2/hf_llama_lm",
              "arch2/sd_unet"}   # transformers imports and the biggest model: seconds each

# by design: the error class the case must be refused with
_FLOAT = "float arithmetic on a size specializes it (documented)"
_BRANCH = "a branch on a size rules out part of the declared range: the documented fix is a min"
_PATH = "a size branch whose other side is another program narrows a named Dim (documented)"
REFUSED = {
    "patterns/mha_masks_both_layouts": ("ConstraintViolationError", "`if t == s_len` relates two "
                                        "independent named Dims (documented: declare one Dim.DYNAMIC)"),
    "arch/vit_interp": ("ConstraintViolationError", _FLOAT + ": F.interpolate scale_factor"),
    "arch/packed_lstm": ("UnsupportedOpError", "packing reads the lengths' data"),
    "arch2/dit": ("ConstraintViolationError", _FLOAT + ": int((s*s) ** 0.5)"),
    "arch2/mlp_mixer": ("ConstraintViolationError", "the token-mixing Linear makes the dims static"),
    "arch2/autoformer": ("ConstraintViolationError", _FLOAT + ": int(factor * log(L))"),
    "arch2/nn_transformer": ("DataDependentError", "bool() of (mask == causal).all()"),
    "vision/swin_int_batch": ("ConstraintViolationError", _FLOAT + ": int(a / b)"),
    "patterns/arange_float_step": ("ConstraintViolationError", _FLOAT),
    "patterns/conv_same_functional_even_kernel": ("ConstraintViolationError", _BRANCH),
    "patterns/pack_padded_sequence": ("UnsupportedOpError", "packing reads the lengths' data"),
    "patterns/one_hot_inferred_classes": ("DataDependentError", "num_classes=-1 reads data"),
    "patterns/negative_step_slice": ("OpShapeError", "eager refuses x[::-1] too"),
    "patterns/attributes_branches": ("UnsupportedOpError", "strides of views are not traced"),
    "patterns/contiguity_branch": ("UnsupportedOpError", "strides of views are not traced"),
    "patterns/chunked_loop_over_dynamic": ("ConstraintViolationError",
                                           "a Python loop over the pieces fixes their number"),
    "patterns/tensor_item_loop_bound": ("DataDependentError", "int() of a tensor"),
    "patterns/activation_kwargs": ("ConstraintViolationError", _BRANCH),
    "patterns/squeeze_dynamic_example_one": ("ConstraintViolationError",
                                             "an example size of 1 specializes (documented)"),
    "patterns/broadcast_dynamic_example_one": ("ConstraintViolationError",
                                               "an example size of 1 specializes (documented)"),
    "patterns/tolist_numpy_errors": ("DataDependentError", ".tolist() of a float tensor"),
    "hf/longformer": ("UnsupportedOpError", "reads hidden_states.stride()"),
    "hf/mobilevit": ("ConstraintViolationError", _FLOAT + ": math.ceil(h / patch) * patch"),
    # the branch really takes another path at other sizes (a pad, a shift or a TF padding
    # amount that differs), so a named Dim is refused with the range fix and the words for
    # the sizes that pass (`it holds when h % 4 != 0`); Dim.DYNAMIC makes it a run-time check
    "arch/sam_window": ("ConstraintViolationError", _PATH + " (`if pad_h > 0 or pad_w > 0`)"),
    "arch2/swin_mask": ("ConstraintViolationError", _PATH + " (`if pad_r > 0 or pad_b > 0`)"),
    "hf/swinv2": ("ConstraintViolationError", _PATH + " (`if width % self.patch_size[1] != 0`)"),
    "hf/mobilenet_v1": ("ConstraintViolationError",
                        _PATH + " (TF padding: `if in_height % stride_height == 0`)"),
}

_RESIDUAL = ("a residual guard on a named Dim narrows its range at run time instead of a "
             "ConstraintViolationError at export; owner: exporter")
_RELATION = ("a branch relating two named Dims becomes a run-time relation instead of a "
             "ConstraintViolationError at export (issue 14); owner: exporter")
_CLAMP = "a slice/max of sizes is guarded instead of clamped (issue 14); owner: rules"
KNOWN = {
    "arch2/mae": _RESIDUAL + " (`int(L * (1 - mask_ratio))`)",
    "arch/nerf": _CLAMP + " (`expand(dists[..., :1].shape)` requires samples >= 2)",
    "patterns/adaptive_pool_none_sizes": ("adaptive pooling with a None output size requires "
                                          "h >= 2 (eager takes 1); owner: rules"),
    "patterns/interp_fractional_scale": ("F.interpolate(scale_factor=0.5, mode='area') guards "
                                         "h // 2 != 1 (issue 14, float sizes); owner: rules"),
    "patterns/pad_negative_crop_symbolic": _RELATION + " (`if d >= 0` with d = y - x)",
    "patterns/setitem_tensor_index_broadcast": ("z[x > 1] = x[x > 1] * 10: the two counts of "
                                                "the same mask are unrelated unbacked symbols "
                                                "(DataDependentError); owner: trace"),
    "patterns/int_outputs_from_shapes": ("returning size arithmetic (b * t, -b, b + 1 > t, ...) "
                                         "specializes the batch; owner: trace"),
    "hf/prophetnet": "relative-bucket indexing requires dec_seq <= 62; owner: rules",
    "hf/led": ("torch.div(16, 4, rounding_mode='trunc') on Python ints is an UnsupportedOpError; "
               "owner: trace"),
    "hf/swin": _RELATION + " (`if min(input_resolution) <= self.window_size`)",
    "hf/longt5": _RESIDUAL + " (`if x.shape[dim] % block_len != 0`)",
    "hf/mobilenet_v2": ("int(features.shape[-2]) specializes the size (torch.export keeps an "
                        "int() of a size symbolic); owner: trace"),
    "hf/segformer": ("the tiny config fails in eager (mat1 and mat2 shapes cannot be "
                     "multiplied); owner: conformance (the case's config)"),
}


def _params():
    out = []
    for table, cases in TABLES.items():
        for name in cases:
            key = f"{table}/{name}"
            marks = [pytest.mark.slow] if table in SLOW_TABLES or key in SLOW_CASES else []
            if key in KNOWN:
                marks.append(pytest.mark.xfail(strict=True, reason=KNOWN[key]))
            out.append(pytest.param(table, name, id=key, marks=marks))
    return out


@pytest.mark.parametrize("table,name", _params())
def test_case(table, name):
    key = f"{table}/{name}"
    case = TABLES[table][name]()
    if key not in REFUSED:
        check(case)
        return
    cls, why = REFUSED[key]
    with pytest.raises(Problem) as info:
        check(case)
    # the catalogue's classes are subclasses of the documented ones (DeclaredSpaceViolation
    # is a ConstraintViolationError): the expected class or any subclass of it
    kinds = {k.__name__ for k in type(info.value.__cause__).__mro__}
    assert info.value.kind == "refused" and cls in kinds, (
        f"expected a {cls} ({why}), got {info.value}")


def test_tables_list_only_existing_cases():
    keys = {f"{t}/{n}" for t, cases in TABLES.items() for n in cases}
    assert not (set(REFUSED) | set(KNOWN)) - keys
    assert not set(REFUSED) & set(KNOWN)
