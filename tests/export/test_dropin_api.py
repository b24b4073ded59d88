"""torch.export's calling conventions, as a user switching imports writes them (issue 21):
``mod=``, a namedtuple of inputs, a tuple ``dynamic_shapes`` bound in signature order when
keyword inputs were written in another order, and torch's own ShapesCollection,
AdditionalInputs and Dim objects.  Each is compared with torch.export on the same call."""

from __future__ import annotations

import collections

import pytest
import torch
from torch.export import AdditionalInputs as TorchAdditionalInputs
from torch.export import Dim as TorchDim
from torch.export import ShapesCollection as TorchShapesCollection

import safetrace as st


class Three(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor | None = None,
                z: torch.Tensor | None = None) -> torch.Tensor:
        return x.sum(0) + 2 * y.sum(0) + 3 * z.sum(0)


def _inputs(a: int, b: int, c: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return torch.randn(a, 2), torch.randn(b, 2), torch.randn(c, 2)


def _same_refusals(ep: st.ExportedProgram, tep, calls: list) -> None:
    """Our program accepts and refuses what torch's accepts and refuses, with its values."""
    for args, kwargs in calls:
        try:
            want = tep.module()(*args, **kwargs)
        except Exception:  # noqa: BLE001 - torch refuses: so must we
            with pytest.raises(st.InputMismatchError):
                ep.module()(*args, **kwargs)
            continue
        torch.testing.assert_close(ep.module()(*args, **kwargs), want)


def test_mod_keyword_is_torchs_name_for_the_model() -> None:
    x, y, z = _inputs(3, 4, 5)
    ep = st.export(mod=Three(), args=(x, y, z))
    torch.testing.assert_close(ep.module()(x, y, z), Three()(x, y, z))
    with pytest.raises(TypeError, match="both model and mod="):
        st.export(Three(), (x, y, z), mod=Three())


def test_a_namedtuple_of_inputs_is_the_positional_inputs() -> None:
    Inputs = collections.namedtuple("Inputs", "x y z")
    inp = Inputs(*_inputs(3, 4, 5))
    ep = st.export(Three(), inp)
    tep = torch.export.export(Three(), inp)
    _same_refusals(ep, tep, [(tuple(inp), {}), (_inputs(3, 4, 5), {}), (_inputs(2, 4, 5), {})])


def test_a_tuple_spec_follows_the_signature_not_the_kwargs_order() -> None:
    x, y, z = _inputs(3, 4, 5)
    spec = ({0: TorchDim("a", max=16)}, None, {0: TorchDim("c", max=16)})  # y static
    ep = st.export(Three(), (x,), {"z": z, "y": y}, dynamic_shapes=spec)
    tep = torch.export.export(Three(), (x,), {"z": z, "y": y}, dynamic_shapes=spec)
    calls = []
    for a, b, c in [(6, 4, 7), (1, 4, 1), (6, 7, 5), (3, 4, 9)]:
        x2, y2, z2 = _inputs(a, b, c)
        calls.append(((x2,), {"y": y2, "z": z2}))
    _same_refusals(ep, tep, calls)
    with pytest.raises(st.InputMismatchError):  # y was static at 4 rows
        ep.module()(torch.randn(3, 2), y=torch.randn(5, 2), z=torch.randn(5, 2))


def test_torchs_shapes_collection_and_dims() -> None:
    x, y, z = _inputs(3, 4, 5)
    sc = TorchShapesCollection()
    sc[x] = {0: TorchDim("a", max=16)}
    sc[z] = {0: TorchDim.AUTO}
    ep = st.export(Three(), (x, y, z), dynamic_shapes=sc)
    tep = torch.export.export(Three(), (x, y, z), dynamic_shapes=sc)
    _same_refusals(ep, tep, [(_inputs(a, b, c), {}) for a, b, c in
                             [(1, 4, 1), (16, 4, 9), (17, 4, 5), (3, 5, 5)]])


def test_torchs_additional_inputs() -> None:
    ai = TorchAdditionalInputs()
    ai.add(_inputs(3, 4, 5))
    ai.add(_inputs(6, 4, 8))
    example = _inputs(3, 4, 5)
    ep = st.export(Three(), example, dynamic_shapes=ai)
    tep = torch.export.export(Three(), example, dynamic_shapes=ai)
    _same_refusals(ep, tep, [(_inputs(a, b, c), {}) for a, b, c in
                             [(9, 4, 2), (1, 4, 1), (3, 5, 5), (0, 4, 0)]])


def test_torchs_additional_inputs_that_torch_refuses_give_an_export_error() -> None:
    class Scale(torch.nn.Module):
        def forward(self, x, s):
            return x * s

    ai = TorchAdditionalInputs()
    ai.add((torch.randn(3), 2.0))
    ai.add((torch.randn(4), 3.0))   # a float that differs: torch cannot make it dynamic
    with pytest.raises(ValueError):
        torch.export.export(Scale(), (torch.randn(3), 2.0), dynamic_shapes=ai)
    with pytest.raises(st.errors.SpecExampleError, match="differing values") as info:
        st.export(Scale(), (torch.randn(3), 2.0), dynamic_shapes=ai)
    assert "st.AdditionalInputs" in str(info.value)


def test_example_inputs_are_kept_as_torch_keeps_them() -> None:
    x, y, z = _inputs(3, 4, 5)
    ep = st.export(Three(), (x,), {"y": y, "z": z})
    tep = torch.export.export(Three(), (x,), {"y": y, "z": z})
    args, kwargs = ep.example_inputs
    targs, tkwargs = tep.example_inputs
    assert len(args) == len(targs) and set(kwargs) == set(tkwargs)
    assert args[0] is x and kwargs["y"] is y and kwargs["z"] is z
    torch.testing.assert_close(ep.module()(*args, **kwargs), tep.module()(*targs, **tkwargs))


class StridedSum(torch.nn.Module):
    def forward(self, x, y, z):
        return x + y[1::3] + z


def test_range_constraints_key_a_derived_dims_expression_as_torchs(tmp_path) -> None:
    """torch's test_dim_auto_and_dim (its derived part): ``ep.range_constraints`` keys the
    root symbol and the derived dim's expression (``3*s0 + 1``) with its range; ours did
    only the symbol (its to_torch() had both).  Indexed by a placeholder's symbolic size."""
    dx = TorchDim("dx", min=2, max=10)
    args = (torch.randn(4), torch.randn(13), torch.randn(4))
    spec = {"x": (dx,), "y": (3 * dx + 1,), "z": (TorchDim.AUTO,)}
    ref = torch.export.export(StridedSum(), args, dynamic_shapes=spec)
    ours = st.export(StridedSum(), args, dynamic_shapes=spec)
    st.save(ours, tmp_path / "p.st")
    for ep in (ours, ours.to_torch(), st.load(tmp_path / "p.st")):
        got = {str(k).replace(str(next(iter(k.free_symbols))), "s"): (v.lower, v.upper)
               for k, v in ep.range_constraints.items()}
        want = {str(k).replace(str(next(iter(k.free_symbols))), "s"): (v.lower, v.upper)
                for k, v in ref.range_constraints.items()}
        assert got == want == {"s": (2, 10), "3*s + 1": (7, 31)}
    y = [n for n in ours.to_torch().graph.nodes if n.op == "placeholder"][1]
    assert ours.to_torch().range_constraints[y.meta["val"].shape[0].node.expr].upper == 31


class SumThree(torch.nn.Module):
    def forward(self, x, y, z):
        return x.sum() + 2 * y.sum() + 3 * z.sum()


def test_a_derived_dim_of_a_derived_dim_exports() -> None:
    """A derived Dim derived again (``2 * (d + 1)``) once escaped st.export as ``KeyError:
    's0'`` (issue 21).  The program declares both relations and checks them before running;
    torch.export's own programs agree where it exports the nested form."""
    d = TorchDim("d", min=2, max=50)
    spec = ({0: d}, {0: d + 1}, {0: 2 * (d + 1)})
    ep = st.export(SumThree(), _inputs(4, 5, 10), dynamic_shapes=spec)
    try:
        ref = torch.export.export(SumThree(), _inputs(4, 5, 10), dynamic_shapes=spec)
    except Exception:  # noqa: BLE001 - torch refuses the nested form on this torch
        ref = None
    good = [((_inputs(n, n + 1, 2 * n + 2)), {}) for n in (2, 7, 50)]
    bad = [((_inputs(n, m, k)), {}) for n, m, k in ((3, 4, 9), (3, 5, 8), (1, 2, 4), (51, 52, 104))]
    for prog in (ep.module(), ep.to_torch().module()):
        for args, _ in good:
            torch.testing.assert_close(prog(*args), SumThree()(*args))
    for args, _ in bad:
        with pytest.raises(st.InputMismatchError):
            ep.module()(*args)
    if ref is not None:
        _same_refusals(ep, ref, good + bad)
