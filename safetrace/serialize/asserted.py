"""What a loaded graph's own run-time assertions (``assert_sym``) establish, and for which
of its nodes.

An assertion raises where its condition fails, before the nodes after it run: what it
checks holds for those nodes, and for no node before it.  The condition is the loader's
own reading of the graph (its comparison of values the evaluation works out), never the
file's metadata; one of the loader's own checks a file holds is none (``requirements.strip``
drops them), nor is one whose operands the evaluation does not know.

- In a subgraph (a branch, a loop or map body) it is a fact of the evaluation for the
  subgraph's later nodes, which ends with the subgraph (``memory.StaticMemory._call``).
- In the main graph it is no fact of the evaluation: the bytes and the work a call may
  take are bounded over the declared sizes (at load, and before each call by
  ``peak.CallCheck``), before any of the graph's assertions run, so no bound may rest on
  one (a file asserting ``s0 <= 1`` after ``zeros(s0 * 2**30)`` must still have its
  allocation checked before the call).  It is a fact only where a later node's recorded
  value is held against the evaluated one (``recorded.Recorded.check``): the exporter wrote
  that value knowing it (``u0 >= 0`` and ``u0 + s0 <= 8`` make ``cache[:s0]`` ``s0`` rows,
  where the evaluation without them has ``min(s0, 8)``).
"""

from __future__ import annotations

from typing import Any

import torch

from safetrace.serialize.branch_facts import branch_conditions
from safetrace.serialize.memory_control import SIZE_ARITHMETIC
from safetrace.serialize.predicate_sizes import predicate_values
from safetrace.serialize.requirements import is_own_check
from safetrace.trace.asserts import assert_sym


class Asserted:
    """The conditions a graph's assertions establish, as the evaluation meets them.

    ``facts``: the main graph's, in its order (those before the node being evaluated; a
    subgraph's evaluation happens at its control node, after the ones before that)."""

    def __init__(self, env: Any, main: torch.fx.Graph) -> None:
        self.env, self.main = env, main
        self.facts: list = []

    def node(self, node: torch.fx.Node, values: dict) -> None:
        """Take what ``node`` asserts, if it is an assertion whose condition is known."""
        if node.target is not assert_sym or is_own_check(node) or not node.args:
            return
        # (its sizes of Python's min/max worked out as a cond predicate's: the exporter's
        # size-oblivious ``min(u0, 2) >= 2`` of ``x[mask][:2]``, which the table leaves unknown)
        fact = branch_conditions(node.args[0], predicate_values(
            node.args[0], values, self.env, SIZE_ARITHMETIC), self.env.int_cls)[0]
        if fact is None:
            return
        if node.graph is self.main:
            self.facts.append(fact)
            return
        try:
            self.env.add_fact(fact)
        except ValueError:
            pass  # (the assertion fails wherever it runs: nothing assumed)


__all__ = ["Asserted"]
