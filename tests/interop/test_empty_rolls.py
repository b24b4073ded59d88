"""``torch.roll`` over a dim the program admits at 0, deployed (``interop/empty_rolls.py``).

Before (session 38, benchmarks/deploy_sizes.py's ``roll`` at ``Dim(max=16)``): the ONNX
model refused n == 0 (onnxruntime: ``Integer modulo by zero``) and ``st.to_executorch``
refused the program up front (ExecuTorch's roll kernel stops the process at 0, SIGFPE);
``ep.module()`` returns an empty tensor there.  Now each such roll is written as a gather
with a divisor clamped to 1, and both artifacts give eager's values at every size."""

from __future__ import annotations

import warnings

import pytest
import torch

import safetrace as st

warnings.filterwarnings("ignore")


class RollRows(torch.nn.Module):
    def forward(self, z):
        return torch.roll(z, 1, 0)


class RollBoth(torch.nn.Module):
    def forward(self, z):
        return torch.roll(z, (-2, 5), (0, 1)) * 2


_CASES = [
    (RollRows(), {0: st.Dim("n", max=16)}, [(0, 3), (1, 3), (2, 3), (5, 3), (16, 3)],
     [(17, 3), (3, 1), (3, 0)]),
    (RollBoth(), {0: st.Dim("n", max=16), 1: st.Dim("k", max=8)},
     [(0, 3), (1, 3), (3, 0), (3, 1), (2, 2), (7, 8), (16, 5)], [(17, 3), (3, 9)]),
]


def _export(model, spec):
    return st.export(model, (torch.randn(4, 3),), dynamic_shapes=(spec,))


@pytest.mark.parametrize("model, spec, inside, outside", _CASES, ids=["rows", "both"])
def test_onnx_roll_is_eager_at_zero_and_every_size(model, spec, inside, outside):
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(st.to_onnx(_export(model, spec)).model_proto
                                .SerializeToString())
    name = sess.get_inputs()[0].name
    for shape in inside:
        x = torch.randn(*shape)
        got = torch.as_tensor(sess.run(None, {name: x.numpy()})[0])
        torch.testing.assert_close(got, model(x))
    for shape in outside:
        with pytest.raises(Exception):
            sess.run(None, {name: torch.randn(*shape).numpy()})


@pytest.mark.parametrize("model, spec, inside, outside", _CASES, ids=["rows", "both"])
def test_executorch_roll_is_eager_at_zero_and_every_size(model, spec, inside, outside,
                                                          tmp_path):
    pytest.importorskip("executorch")
    from executorch.runtime import Runtime

    st.to_executorch(_export(model, spec), tmp_path / "m.pte")
    method = Runtime.get().load_program(tmp_path / "m.pte").load_method("forward")
    for shape in inside:
        x = torch.randn(*shape)
        torch.testing.assert_close(method.execute([x])[0], model(x))
    for shape in outside:
        with pytest.raises(Exception):
            method.execute([torch.randn(*shape)])


def test_a_flattened_roll_at_zero_is_still_refused_by_executorch(tmp_path):
    # (torch.roll without dims: left to ExecuTorch's kernel, refused up front where the
    # program admits 0, as before)
    pytest.importorskip("executorch")

    class Flat(torch.nn.Module):
        def forward(self, z):
            return torch.roll(z, 2)

    ep = _export(Flat(), {0: st.Dim("n", max=16)})
    with pytest.raises(st.errors.ConversionError, match="admits at 0"):
        st.to_executorch(ep, tmp_path / "m.pte")
