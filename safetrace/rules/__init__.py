"""Shape and dtype rules for ATen operators, one module per op family.

Importing this package registers every rule.  To find the rule of an op, search for the
op object (``aten.max.other``): rules are registered under it, in the module named after
its family (``elementwise``, ``reductions``, ``views``, ...).
"""

from safetrace.rules.registry import RULES, get_rule, register_shape_rule, rule

# importing a family registers its rules
from safetrace.rules import (  # noqa: F401
    activations,
    attention,
    casts,
    conv,
    data_dependent,
    elementwise,
    embedding,
    factories,
    fft,
    indexing,
    interpolate,
    joins,
    linalg,
    linalg_decomp,
    losses,
    norms,
    padding,
    pooling,
    reductions,
    rnn,
    rotations,
    shuffles,
    special,
    splitting,
    views,
)

__all__ = ["RULES", "get_rule", "register_shape_rule", "rule"]
