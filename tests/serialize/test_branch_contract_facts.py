"""A ``torch.cond`` side of a size split judged with the contract's conditions and its
predicate together (session 27).

``arch2/swin_mask`` pads its window grid where ``(3*w) % 4 >= 1`` (a split of two sides).
In the side without padding the contract's ``... or (3*s1) % 4 >= 1`` leaves
``(3*s1) % 4 == 0``: ``s1`` is a multiple of 4, at least 4, so ``(s0*(s1//4))//(s1//4)`` is
``s0``.  The loader took the predicate as a fact but not what it leaves of a one-symbol
fact's range (``s1 >= 4``) nor of its values (``s1 = 4*t``), so it refused our own file
(matmul and view sizes "not the graph's").  Now a branch's one-symbol facts tighten the
symbol's range, and where they leave one value in every ``m`` a record is compared with
the symbol written ``m*t + c``.  A record that is not the graph's is still refused.
"""

from __future__ import annotations

import io

import pytest
import torch

import safetrace as st
from tests.conformance.models.arch2_1 import swin_mask
from tests.serialize.hostile_static import parts
from tests.serialize import surgery

pytestmark = pytest.mark.slow  # (the export takes about 2 s)


@pytest.fixture(scope="module")
def saved():
    case = swin_mask()
    args, kwargs = case.make(*case.ex)
    buf = io.BytesIO()
    st.save(st.export(case.model, args, kwargs, dynamic_shapes=case.spec), buf)
    return case, buf.getvalue()


def test_our_split_file_loads_and_matches_eager(saved):
    case, blob = saved
    mod = st.load(io.BytesIO(blob)).module()
    for sizes in [case.ex, *case.others]:
        args, kwargs = case.make(*sizes)
        torch.testing.assert_close(mod(*args, **kwargs), case.model(*args, **kwargs),
                                   rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("size", [["add", "s0", 1], ["mul", 2, "s0"]])
def test_a_sides_record_the_facts_do_not_make_is_still_refused(saved, size):
    doc, tensors = parts(saved[1])
    side = next(s for s in doc["subgraphs"] if s["path"] == "false_graph_0.true_graph_0")
    node = next(n for n in side["nodes"] if n["name"] == "view_12")
    node["meta"]["val"]["tensor"]["shape"][0] = size
    with pytest.raises(st.LoadError, match=r"node 'view_12': the file records its value as "
                                           r"float32\[(s0 \+ 1|2\*s0), "):
        surgery.load(doc, tensors)
