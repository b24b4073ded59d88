"""``torch.sym_sum`` as chained ``+`` for ExecuTorch (``st.to_executorch``).

``to_edge`` decomposes the program by retracing it (``run_decompositions``).  Where that
retrace meets a size it holds no node for (``start + seq`` of a slice's output inside a
size split's cond branch, ``start`` read from data), torch rebuilds it from its symbolic
form, and a sum becomes ``torch.sym_sum([a, b])``: a function neither torch's
``ExportPassBase`` (which ``to_edge``'s own passes are) nor ExecuTorch's scalar operators
know (``ExportPassBaseError: Unsupported target type: <function sym_sum>``), so no
``.pte``.  ``for_executorch`` hands ``to_edge`` the program in a form whose decomposition
writes each such sum as ``a + b + ...`` (``operator.add``, ExecuTorch's
``executorch_prim::add``), in every graph: the program's, its branches' and loop bodies'.
"""

from __future__ import annotations

import copy
import operator
from typing import Any

import torch

from safetrace.interop.input_guards import rebind


def sums_as_adds(gm: Any) -> int:
    """Rewrite every ``torch.sym_sum`` node of `gm` and its graph modules below as a chain
    of ``operator.add``; returns how many were rewritten."""
    count = 0
    for sub in [m for _, m in gm.named_modules() if isinstance(m, torch.fx.GraphModule)]:
        graph = sub.graph
        for node in list(graph.nodes):
            if node.op != "call_function" or node.target is not torch.sym_sum:
                continue
            terms = node.args[0] if (len(node.args) == 1 and
                                     isinstance(node.args[0], (list, tuple))) else node.args
            terms = list(terms)
            if not terms:
                node.replace_all_uses_with(0)  # the empty sum
                graph.erase_node(node)
                count += 1
                continue
            total, value = terms[0], _val(terms[0])
            with graph.inserting_before(node):
                for term in terms[1:]:
                    value = value + _val(term) if value is not None and \
                        _val(term) is not None else None
                    total = graph.call_function(operator.add, (total, term))
                    if value is not None:
                        total.meta["val"] = value
            if isinstance(total, torch.fx.Node):
                for key, v in node.meta.items():  # the sum's own facts (its val, trace)
                    total.meta[key] = v
            node.replace_all_uses_with(total)
            graph.erase_node(node)
            count += 1
        if count:
            sub.recompile()
    return count


def _val(term: Any) -> Any:
    return term.meta.get("val") if isinstance(term, torch.fx.Node) else term


def for_executorch(tep: Any) -> Any:
    """`tep` (a ``torch.export.ExportedProgram``) whose ``run_decompositions`` results,
    and theirs in turn, hold no ``torch.sym_sum`` (``sums_as_adds``); a shallow copy, so
    the caller's program is left as it was."""
    from torch.export import ExportedProgram  # (interop imports torch.export lazily)

    class _SumsAsAdds(ExportedProgram):
        def run_decompositions(self, *args: Any, **kwargs: Any) -> Any:
            out = ExportedProgram.run_decompositions(self, *args, **kwargs)
            sums_as_adds(out.graph_module)
            out.__class__ = _SumsAsAdds
            return out

    ours = copy.copy(tep)
    ours.__class__ = _SumsAsAdds
    rebind(ours)  # (to_torch's input guards: else their wrapper decomposes the original)
    return ours
