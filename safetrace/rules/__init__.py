"""Shape and dtype rules for ATen operators, one module per op family.

Importing this package registers every rule.  To find the rule of an op, look in the
module named after its family (``elementwise``, ``reductions``, ``views``, ...).
"""

from safetrace.rules.registry import RULES, get_rule, register_shape_rule, rule

from safetrace.rules import families as _families  # noqa: F401  (registers the rules)

__all__ = ["RULES", "get_rule", "register_shape_rule", "rule"]
