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
# the slowest of the rest (>= 3.3 s each on the 2-core machine under load, 2026-12-03;
# together a third of the tables' time): `make test-full` runs them, `make test` does not
SLOW_CASES |= {
    "arch/capsnet", "arch/convnextv2", "arch/espcn", "arch/fcn_vae", "arch/ghostnet", "arch/moe",
    "arch/unet_pad", "arch2/bifpn", "arch2/dit", "arch2/dit_hw", "arch2/graph_transformer",
    "arch2/informer", "arch2/mae", "arch2/mamba2_ssd_torchbool", "arch2/nn_transformer_causal",
    "arch2/retnet", "arch2/rwkv_v2", "arch2/squeezeformer", "arch2/tabtransformer", "arch2/vqvae",
    "arch2/wavenet", "patterns/grouped_dilated_same_conv", "patterns/large_eps_norms",
    "patterns/transformer_decoder_masks", "patterns/unfold_fold_roundtrip", "vision/deeplab",
    "vision/densenet", "vision/inception", "vision/pointnet", "vision/squeezenet",
    "vision/swin_int_batch", "vision/tcn", "vision/yolo",
}

# by design: the error class the case must be refused with
_BRANCH = "a branch on a size rules out part of the declared range: the documented fix is a min"
_NARROW = ("a run-time condition on a named Dim fails inside its declared range (documented: "
           "the fix is Dim.DYNAMIC, or the range where it holds)")
REFUSED = {
    "arch/packed_lstm": ("UnsupportedOpError", "packing reads the lengths' data"),
    "arch2/mlp_mixer": ("ConstraintViolationError", "the token-mixing Linear makes the dims static"),
    "arch2/nn_transformer": ("DataDependentError", "bool() of (mask == causal).all()"),
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
    "patterns/tolist_numpy_errors": ("DataDependentError", ".tolist() of a tensor with a "
                                     "dynamic first dim (a list of unknown length)"),
    "hf/longformer": ("DataDependentError", "`if is_global_attn:` of `.any().item()` picks "
                      "the global-attention branch from data (its chunk views' stride() "
                      "traces since session 32; with the model's own check that no token is "
                      "global, and seq a multiple of the window, it exports: the sweep's "
                      "longformer_w8)"),
    "hf/led": ("DataDependentError", "Longformer's chunked attention: as hf/longformer "
               "(the sweep's led_w8 exports)"),
    "hf/prophetnet": ("ConstraintViolationError", "dec_seq <= 62 is right: eager fails from 63 "
                      "on (its position embeddings: IndexError), the case declares max=64"),
    "hf/mobilevit": ("ConstraintViolationError", _NARROW + " (math.ceil(h / patch) * patch is "
                     "symbolic now; `if new_width != orig_width` leaves `(h // 32) % 2 == 0`)"),
    "hf/swin": ("ConstraintViolationError", _NARROW + " (`if width % self.patch_size[1] != 0:`)"),
    "hf/swinv2": ("ConstraintViolationError", _NARROW + " (`if width % self.patch_size[1] != 0:`)"),
    "hf/mobilenet_v1": ("ConstraintViolationError",
                        _NARROW + " (TF padding: `if in_height % stride_height == 0:`)"),
    "hf/mobilenet_v2": ("ConstraintViolationError", _NARROW + " (TF padding at 5 strides: `if "
                        "in_height % stride_height == 0:` on h, h//2, ..., h//16; the fix is "
                        "h = 32*_h with _h = Dim('_h', min=1, max=16))"),
    "arch/sam_window": ("ConstraintViolationError", _NARROW + " (`if pad_h > 0 or pad_w > 0`)"),
}

_CLAMP = "a slice/max of sizes is guarded instead of clamped (issue 14); owner: rules"
# (hf/segformer left this list in session 31: its eager failure was export's doing, the
# output-recording hooks transformers registers on a first call kept after export and
# registered again by the next eager call; exporter/snapshot.py takes them back now)
KNOWN: dict[str, str] = {}


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
