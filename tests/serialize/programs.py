"""Programs to round-trip: (name, make) where make() returns a Case."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import torch
from torch import nn

import safetrace as st
from safetrace import Dim
from tests.export import test_models_static as ms
from tests.export import test_scenarios_dynamic as sd
from tests.export import test_scenarios_static as ss
from tests.models import MLP, Attention, ConvNet


@dataclasses.dataclass
class Case:
    model: Any
    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)
    dynamic_shapes: Any = None
    good: list = dataclasses.field(default_factory=list)  # [(args, kwargs)] accepted
    bad: list = dataclasses.field(default_factory=list)   # [(args, kwargs)] rejected

    def export(self) -> st.ExportedProgram:
        return st.export(self.model, self.args, self.kwargs, dynamic_shapes=self.dynamic_shapes)


def r(*shape: int) -> torch.Tensor:
    return torch.randn(*shape)


@dataclasses.dataclass
class Pair:
    a: torch.Tensor
    k: int


st.register_dataclass(Pair)


class DictOut(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 3)
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))

    def forward(self, p: Pair, flag: bool = True, name: str = "a"):
        self.steps.add_(1)
        y = self.lin(p.a) * p.k
        return {"y": y, "pair": (y.sum(), p.a.shape[0]), "none": None, "name": name}


class Dtypes(nn.Module):
    def forward(self, x, idx, mask):
        y = x.to(torch.float64)[idx] * 2.5
        z = torch.where(mask, x, torch.zeros_like(x)).to(torch.bfloat16)
        return y, z.float().clamp(min=float("-inf")) + 1e-3, x.new_ones(2, dtype=torch.int32)


def _dyn_mlp() -> Case:
    batch = Dim("batch", min=1, max=64)
    return Case(MLP(), (r(4, 16),), dynamic_shapes={"x": {0: batch}},
                good=[((r(1, 16),), {}), ((r(9, 16),), {})],
                bad=[((r(65, 16),), {}), ((r(3, 15),), {}), ((r(3, 16, 1),), {}),
                     ((torch.zeros(3, 16, dtype=torch.int64),), {})])


def _scenario_7() -> Case:
    x, y, z = r(3, 5), r(3, 4), r(4, 5)
    sc = st.ShapesCollection()
    for t in (x, y, z):
        sc[t] = (Dim.DYNAMIC, Dim.DYNAMIC)
    return Case(sd.AddMM(), (x, y, z), dynamic_shapes=sc,
                good=[((r(6, 6), r(6, 6), r(6, 6)), {}), ((r(2, 7), r(2, 3), r(3, 7)), {})],
                bad=[((r(6, 6), r(7, 6), r(6, 6)), {}), ((r(6, 6), r(6, 5), r(6, 6)), {})])


def _scenario_8() -> Case:
    dyn = (Dim.DYNAMIC, Dim.DYNAMIC)
    return Case(sd.CatMM(), (r(3, 5), r(3, 6), [r(2, 5), r(4, 5)]),
                dynamic_shapes=(dyn, dyn, [dyn, dyn]),
                good=[((r(2, 3), r(2, 7), [r(3, 3), r(4, 3)]), {})],
                bad=[((r(2, 3), r(2, 8), [r(3, 3), r(4, 3)]), {}),
                     ((r(2, 3), r(2, 7), [r(3, 3)]), {})])


def _scenario_9() -> Case:
    dyn = (Dim.DYNAMIC, Dim.DYNAMIC)
    return Case(sd.SliceCatMM(), (r(7, 5), r(3, 6), [r(2, 5), r(4, 5)]),
                dynamic_shapes=(dyn, (3, Dim.DYNAMIC), [dyn, dyn]),
                good=[((r(3, 2), r(3, 4), [r(1, 2), r(3, 2)]), {})],
                bad=[((r(2, 5), r(3, 6), [r(2, 5), r(4, 5)]), {}),
                     ((r(7, 5), r(6, 6), [r(2, 5), r(4, 5)]), {})])


def _scenario_10() -> Case:
    auto = (Dim.AUTO, Dim.AUTO)
    return Case(sd.WithState(), (r(6, 4), r(6, 4)), dynamic_shapes={"x": auto, "y": auto},
                good=[((r(7, 4), r(7, 4)), {})], bad=[((r(7, 5), r(7, 4)), {})])


def _derived() -> Case:
    class Halves(nn.Module):
        def forward(self, x, y):
            return x[: y.shape[0]] + y, x.shape[0] // 2

    d = Dim("d", min=2, max=100)
    return Case(Halves(), (r(8, 3), r(4, 3)), dynamic_shapes={"x": {0: 2 * d}, "y": {0: d}},
                good=[((r(10, 3), r(5, 3)), {})],
                bad=[((r(10, 3), r(4, 3)), {}), ((r(2, 3), r(1, 3)), {})])


CASES: dict[str, Callable[[], Case]] = {
    "mlp": lambda: Case(MLP().eval(), (r(4, 16),), good=[((r(4, 16),), {})],
                        bad=[((r(5, 16),), {})]),
    "convnet": lambda: Case(ConvNet().eval(), (r(2, 3, 16, 16),),
                            good=[((r(2, 3, 16, 16),), {})], bad=[((r(2, 3, 15, 16),), {})]),
    "convnet_train": lambda: Case(ConvNet().train(), (r(2, 3, 8, 8),),
                                  good=[((r(2, 3, 8, 8),), {})] * 2),
    "attention": lambda: Case(Attention().eval(), (r(2, 5, 32),), good=[((r(2, 5, 32),), {})]),
    "inplace": lambda: Case(ms.InPlace(), (r(3, 4),), good=[((r(3, 4),), {})]),
    "counter": lambda: Case(ms.Counter(), (r(3),), good=[((r(3),), {})] * 3),
    "reassign": lambda: Case(ms.Reassign(), (torch.ones(2),), good=[((torch.ones(2),), {})] * 2),
    "constants": lambda: Case(ms.Constants(), (r(4),), good=[((r(4),), {})]),
    "indexing": lambda: Case(ms.Indexing(), (r(5, 4), torch.tensor([0, 3])),
                             good=[((r(5, 4), torch.tensor([4, 1])), {})],
                             bad=[((r(5, 4), torch.tensor([4, 1, 2])), {})]),
    "scenario_1": lambda: Case(ss.AddConst(), (r(3, 4), 3), good=[((r(3, 4), 3), {})],
                               bad=[((r(3, 4), 4), {}), ((r(3, 4), 3.0), {})]),
    "scenario_2": lambda: Case(ss.Lists(), ([r(2, 2), r(2, 2)], [3, 4, 5]),
                               good=[(([r(2, 2), r(2, 2)], [3, 4, 5]), {})],
                               bad=[(([r(2, 2)] * 3, [3, 4, 5]), {}),
                                    (([r(2, 2), r(2, 2)], [3, 4, 6]), {})]),
    "scenario_4": lambda: Case(ss.SumOfShapes(), ([r(2, 2), r(2, 2)], [r(3), r(4), r(5)]),
                               bad=[(([r(2, 2), r(2, 2)], [r(3), r(4), r(6)]), {})]),
    "scenario_5": lambda: Case(ss.CatShape(), ([r(2, 2), r(2, 2)], [r(3), r(4), r(5)])),
    "scenario_6": lambda: Case(ss.Branch(), ([r(2, 2), r(2, 2)], [r(6), r(7), r(8)])),
    "dataclass_dict_out": lambda: Case(DictOut(), (Pair(r(2, 4), 3),), {"name": "b"},
                                       good=[((Pair(r(2, 4), 3),), {"name": "b"})] * 2,
                                       bad=[((Pair(r(2, 4), 2),), {"name": "b"}),
                                            ((Pair(r(2, 4), 3),), {"name": "c"}),
                                            ((Pair(r(2, 4), 3),), {})]),
    "dtypes": lambda: Case(Dtypes(), (r(4), torch.tensor([1, 2]), torch.tensor([1, 0, 1, 0]) > 0),
                           good=[((r(4), torch.tensor([0, 3]), torch.ones(4) > 0), {})]),
    "dyn_mlp": _dyn_mlp,
    "scenario_7": _scenario_7,
    "scenario_8": _scenario_8,
    "scenario_9": _scenario_9,
    "scenario_10": _scenario_10,
    "derived": _derived,
}
