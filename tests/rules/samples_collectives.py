"""Samples of torch's functional collectives (collectives.py), checked on meta tensors
(every rank holds the same shapes; no process group is needed to compute them).

Their rules are registered the first time an export meets the op (``trace/custom.py``);
they are registered here the same way, so the samples run whatever ran before."""

import torch

from safetrace.rules import get_rule, rule
from safetrace.rules.collectives import NAMED_RULES
from tests.rules.harness import Sample, T

SAMPLES: list = []
try:
    import torch.distributed._functional_collectives  # noqa: F401  (defines the ops)
    c10d = torch.ops._c10d_functional
    ops = {name: getattr(c10d, name.split("::")[1]).default for name in NAMED_RULES}
except (ImportError, AttributeError, RuntimeError):  # torch built without distributed
    ops = {}
for name, op in ops.items():
    if get_rule(op) is None:
        rule(op)(NAMED_RULES[name])

if ops:
    c = {name.split("::")[1]: op for name, op in ops.items()}
    SAMPLES = [
        Sample(c["all_reduce"], (T(6, 3), "sum", "g")),
        Sample(c["all_reduce"], (T(0, 3), "avg", "g")),
        Sample(c["broadcast"], (T(2, 5), 0, "g")),
        Sample(c["wait_tensor"], (T(4,),)),
        Sample(c["all_reduce_coalesced"], ([T(2, 3), T(5)], "sum", "g")),
        Sample(c["all_gather_into_tensor"], (T(6, 3), 4, "g")),
        Sample(c["all_gather_into_tensor"], (T(1,), 2, "g")),
        Sample(c["reduce_scatter_tensor"], (T(6, 3), "sum", 3, "g")),
        Sample(c["reduce_scatter_tensor"], (T(8,), "sum", 2, "g")),
        Sample(c["all_to_all_single"], (T(6, 3), [1, 5], [2, 4], "g")),
        Sample(c["all_to_all_single"], (T(6, 3), [], [], "g")),
    ]
