"""Relations between named Dims that no Dim declaration can express (issue 21).

``x.reshape(-1) + z`` with ``z``'s dim a named Dim of its own needs ``z.shape[0] ==
x.shape[0]*x.shape[1]``, and ``x.reshape(-1) + y.reshape(-1)`` needs the two products
equal: a product or sum of independent Dims is no ``Dim`` nor derived Dim (one root, one
coefficient).  torch.export accepts such programs, the relation a run-time check of its
program (``s0*s1`` in its range constraints: torch's test_disable_forced_specializations_ok);
so does safetrace, the relation and the related dim's declared range among the program's
input checks, refused before computing by ``ep.module()``, by ``ep.to_torch().module()`` and
after ``st.save`` / ``st.load``.  A relation a Dim can express (``b = 2*a``, ``c = a*a`` of one
Dim) stays a refusal with the fix, as in torch.  (A plain branch on such a relation:
test_dropin_branch_products.py.)"""

from __future__ import annotations

from typing import Any, Callable

import pytest
import torch
from torch import nn
from torch.export import Dim

import safetrace as st

from tests.export.dropin_check import same


class Fn(nn.Module):
    def __init__(self, fn: Callable) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x, z):
        return self.fn(x, z)


class Fn3(Fn):
    def forward(self, x, y, z):
        return self.fn(x, y, z)


def _free_reshape(x, y, z):  # torch's test_disable_forced_specializations_ok
    return x.reshape([-1]) + y.reshape([-1]) + z


def _flat_plus(x, z):
    return x.reshape(-1) + z


def _cat_plus(x, y, z):
    return torch.cat([x, y]) + z


def _t(*shape: int) -> torch.Tensor:
    return torch.randn(*shape)


class _Programs:
    """torch's program, ours, ours converted, ours saved and loaded: their modules."""

    def __init__(self, ref: Any, ours: Any, tmp_path: Any) -> None:
        path = tmp_path / "p.st"
        st.save(ours, path)
        self.ref, self.ours = ref.module(), ours.module()
        self.converted = ours.to_torch()
        self.conv, self.loaded = self.converted.module(), st.load(path).module()

    def refused(self, *args: torch.Tensor) -> None:
        """Refused by torch's program, by ours (its input checks), by our converted program
        as torch's is, and by ours after a save and load."""
        with pytest.raises(Exception) as theirs:
            self.ref(*args)
        with pytest.raises(st.InputMismatchError):
            self.ours(*args)
        with pytest.raises(type(theirs.value)):
            self.conv(*args)
        with pytest.raises(st.InputMismatchError):
            self.loaded(*args)

    def runs(self, fn: Callable, *args: torch.Tensor, torch_too: bool = True) -> None:
        want = fn(*args)
        same(self.ours(*args), want)
        same(self.conv(*args), want)
        same(self.loaded(*args), want)
        if torch_too:
            same(self.ref(*args), want)


# (from 0: ~1.2 s, most of it converting with to_torch)
@pytest.mark.parametrize("low", [2, pytest.param(0, marks=pytest.mark.slow)])
def test_a_named_dim_equal_to_a_product_of_two_others(low: int, tmp_path: Any) -> None:
    """dz0 == dx0*dx1 and dx0*dx1 == dy0*dy1: torch's plain-export loop of
    test_disable_forced_specializations_ok, with Dims from 0 and from 2."""
    model = Fn3(_free_reshape)
    args = (_t(6, 8), _t(3, 16), _t(48))
    spec = ([Dim("dx0", min=low), Dim("dx1", min=low)],
            [Dim("dy0", min=low), Dim("dy1", min=low)], [Dim("dz0", min=4)])
    ref = torch.export.export(model, args, dynamic_shapes=spec)
    ours = st.export(model, args, dynamic_shapes=spec)
    assert "z: float32[s0*s1]" in str(ours), str(ours)
    assert "requires x.shape[0]*x.shape[1] == y.shape[0]*y.shape[1]" in str(ours)
    p = _Programs(ref, ours, tmp_path)
    sizes = [((2, 3), (3, 2), 6), ((4, 2), (2, 4), 8),
             ((5, 5), (25, 1), 25) if low == 0 else ((5, 5), (5, 5), 25)]
    if low == 0:  # (sizes 1 in range: torch's program is traced for 2 and more)
        sizes.append(((1, 4), (2, 2), 4))
    for xs, ys, n in sizes:
        p.runs(_free_reshape, _t(*xs), _t(*ys), _t(n), torch_too=min(xs + ys) >= 2)
    for xs, ys, n in [((2, 3), (2, 2), 6),   # the products differ
                      ((2, 3), (3, 2), 7),   # z is not their product
                      ((2, 2), (2, 2), 5)]:
        p.refused(_t(*xs), _t(*ys), _t(n))
    if low == 0:  # dz0's declared min=4, now a bound of the product
        p.refused(_t(1, 3), _t(3, 1), _t(3))
        p.refused(_t(0, 3), _t(3, 0), _t(0))
    else:
        with pytest.raises(st.InputMismatchError, match="dx0"):
            p.ours(_t(1, 6), _t(2, 3), _t(6))


def test_the_related_dims_declared_range_is_checked(tmp_path: Any) -> None:
    """z's Dim('c', min=13, max=40) holds of x.shape[0]*x.shape[1] once c is that product:
    torch's range constraint on s0*s1; ours two input checks (and the same for a
    Dim.DYNAMIC range, which the program's relation made a product too)."""
    args = (_t(2, 7), _t(14))
    model = Fn(_flat_plus)
    for zdim in (Dim("c", min=13, max=40), Dim.DYNAMIC(min=13, max=40)):
        spec = ((Dim("a"), Dim("b")), (zdim,))
        ref = torch.export.export(model, args, dynamic_shapes=spec)
        ours = st.export(model, args, dynamic_shapes=spec)
        assert "requires x.shape[0]*x.shape[1] >= 13" in str(ours), str(ours)
        # to_torch()'s range constraint of z's dim (the product) is the declared range,
        # as torch's is (its own symbol for a named Dim, the product for Dim.DYNAMIC)
        p = _Programs(ref, ours, tmp_path)
        assert _z_range(p.converted) == _z_range(ref) == (13, 40)
        for xs in [(3, 5), (1, 13), (4, 10), (13, 1)]:
            p.runs(_flat_plus, _t(*xs), _t(xs[0] * xs[1]), torch_too=min(xs) >= 2)
        for xs, n in [((2, 6), 12), ((5, 9), 45), ((0, 4), 0), ((3, 5), 14)]:
            p.refused(_t(*xs), _t(n))


def _z_range(ep: Any) -> tuple:
    """The range constraint of the last input's first dim (its size expression's)."""
    z = [n for n in ep.graph.nodes if n.op == "placeholder"][-1]
    vr = ep.range_constraints[z.meta["val"].shape[0].node.expr]
    return int(vr.lower), int(vr.upper)


def test_a_named_dim_equal_to_a_sum_of_two_others(tmp_path: Any) -> None:
    model = Fn3(_cat_plus)
    args = (_t(2), _t(3), _t(5))
    spec = ((Dim("a", min=2),), (Dim("b", min=2),), (Dim("c", min=2),))
    p = _Programs(torch.export.export(model, args, dynamic_shapes=spec),
                  st.export(model, args, dynamic_shapes=spec), tmp_path)
    for m, n in [(4, 7), (2, 2), (9, 3)]:
        p.runs(_cat_plus, _t(m), _t(n), _t(m + n))
    p.refused(_t(4), _t(7), _t(12))


def _square(x, z):
    return x.reshape(-1) + z


def test_relations_a_dim_expresses_stay_refused() -> None:
    """c == a*a (one Dim: torch refuses it too, "c = a**2") and b == 2*a (the fix is a
    derived Dim, as torch's)."""
    sq = (Fn(_square), (_t(3, 3), _t(9)), ((Dim("a"), Dim("a")), (Dim("c"),)))
    with pytest.raises(Exception, match="c = a"):
        torch.export.export(sq[0], sq[1], dynamic_shapes=sq[2])
    with pytest.raises(st.ConstraintViolationError, match="c = Dim.AUTO"):
        st.export(sq[0], sq[1], dynamic_shapes=sq[2])
    two = (Fn(lambda x, y: torch.cat([x, x]) + y), (_t(3), _t(6)),
           ((Dim("a"),), (Dim("b"),)))
    with pytest.raises(Exception, match="b = 2\\*a"):
        torch.export.export(two[0], two[1], dynamic_shapes=two[2])
    with pytest.raises(st.ConstraintViolationError, match="b = 2\\*a"):
        st.export(two[0], two[1], dynamic_shapes=two[2])
