"""A program as one self-contained HTML page (``ep.to_html()``, ``safetrace show --html``),
and as a text summary (``safetrace show --summary``).

The page needs no network: its CSS, script and the graph's SVG are inline. It shows the
graph (operators laid out by depth, grouped by module, with symbolic shapes), every node
with the user's source line, the input contract in words, what each declared dim became,
an operator histogram and the signature. Everything taken from the program (which may
come from an untrusted file) is HTML-escaped; the script only reads the page's own DOM.
"""

from __future__ import annotations

import collections
import html
from typing import Any

import torch

from safetrace.exporter.printing import format_arg, value_annotation
from safetrace.trace.hops import submodules
from safetrace.trace.source import location

_BOX_W, _BOX_H, _GAP_X, _GAP_Y, _MARGIN = 190, 38, 18, 34, 12
_PALETTE = ("#dbeafe", "#dcfce7", "#fef9c3", "#fce7f3", "#ede9fe", "#ffedd5", "#cffafe",
            "#e0e7ff", "#f5f5f4", "#fee2e2")


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def op_name(node: torch.fx.Node) -> str:
    """A node's operator as a short, stable name: ``aten.linear.default``, ``operator.mul``."""
    target = node.target
    if isinstance(target, torch._ops.OpOverload):
        return str(target)
    if isinstance(target, torch._ops.HigherOrderOperator):
        return f"higher_order.{target.name()}"
    if callable(target):
        mod = (getattr(target, "__module__", "") or "").replace("_operator", "operator")
        return f"{mod}.{getattr(target, '__name__', repr(target))}".lstrip(".")
    return str(target)


def op_histogram(graph: torch.fx.Graph) -> collections.Counter:
    """How many times each operator is called, control-flow subgraphs included."""
    counts: collections.Counter = collections.Counter(
        op_name(n) for n in graph.nodes if n.op == "call_function")
    for sub in submodules(graph).values():
        counts.update(op_histogram(sub.graph))
    return counts


def _state_sizes(ep: Any) -> tuple[int, int, int, int]:
    """(parameter tensors, parameter elements, buffer tensors, buffer elements)."""
    kinds = {s.target: s.kind for s in ep.graph_signature.input_specs}
    p = pn = b = bn = 0
    for name, t in ep._state.items():
        if kinds.get(name) == "parameter":
            p, pn = p + 1, pn + t.numel()
        else:
            b, bn = b + 1, bn + t.numel()
    return p, pn, b, bn


def _modules(node: torch.fx.Node) -> list[tuple[str, str]]:
    """The node's module path, outermost first: [(path, class name), ...]."""
    stack = node.meta.get("nn_module_stack") or {}
    out = []
    for entry in stack.values():
        if isinstance(entry, (tuple, list)) and len(entry) == 2:
            path, cls = entry
            out.append((str(path), str(cls).rsplit(".", 1)[-1]))
    return out


def _group(path: str) -> str:
    """The module a node is colored by: the top-level one, or the block of a container
    (``layers.3`` of ``layers.3.attn.q``: a Sequential or ModuleList alone says little)."""
    parts = path.split(".")
    if len(parts) > 1 and parts[1].isdigit():
        return ".".join(parts[:2])
    return parts[0]


def summary_text(ep: Any, top: int = 15) -> str:
    """Inputs, dims, state sizes and the most called operators, as plain text."""
    sig = ep.graph_signature
    nodes = [n for n in ep.graph.nodes if n.op == "call_function"]
    p, pn, b, bn = _state_sizes(ep)
    hist = op_histogram(ep.graph)
    lines = [f"nodes: {len(nodes)} operator calls, {len(hist)} distinct operators",
             f"parameters: {pn:,} elements in {p} tensors; buffers: {bn:,} elements in {b} "
             f"tensors; constants: {len(ep.lifted_constants)}",
             f"inputs: {len(sig.user_inputs)}, outputs: {len(sig.user_outputs)}",
             "", ep.describe_contract().rstrip()]
    dims = ep.dims_report
    if dims:
        lines += ["", "Dims (declared -> as traced):"]
        lines += [f"  {k}: {v}" for k, v in dims.items()]
    lines += ["", f"Operators (top {min(top, len(hist))} of {len(hist)}):"]
    width = max((len(k) for k, _ in hist.most_common(top)), default=0)
    lines += [f"  {count:6d}  {name:<{width}}" for name, count in hist.most_common(top)]
    return "\n".join(line.rstrip() for line in lines) + "\n"


# -- the graph picture --------------------------------------------------------------------

def _layout(graph: torch.fx.Graph) -> tuple[list[torch.fx.Node], dict, int, int]:
    """Nodes to draw (user inputs, operators, output) at (rank, slot): rank = longest path
    from an input; state placeholders and size arithmetic (``sym_size``, ``s0*4``) are
    left out of the picture (they are listed in the table: drawn, their edges to every
    view and reshape would hide the data flow)."""
    shown = [n for n in graph.nodes if (n.op != "placeholder"
             or n.meta.get("kind") in (None, "user_input")) and not _is_size(n)]
    keep = set(shown)
    rank: dict[torch.fx.Node, int] = {}
    for n in shown:
        ins = [a for a in n.all_input_nodes if a in keep]
        rank[n] = 1 + max((rank[a] for a in ins), default=-1)
    slots: dict[int, int] = collections.Counter()
    pos = {}
    for n in shown:
        pos[n] = (rank[n], slots[rank[n]])
        slots[rank[n]] += 1
    depth = 1 + max(rank.values(), default=0)
    width = max(slots.values(), default=1)
    return shown, pos, depth, width


def _is_size(n: torch.fx.Node) -> bool:
    return n.op in ("call_function", "placeholder") and value_annotation(
        n.meta.get("val")).startswith("Sym(")


def _svg(graph: torch.fx.Graph, colors: dict[str, str]) -> str:
    shown, pos, depth, width = _layout(graph)

    def xy(n: torch.fx.Node) -> tuple[int, int]:
        r, s = pos[n]
        return _MARGIN + s * (_BOX_W + _GAP_X), _MARGIN + r * (_BOX_H + _GAP_Y)

    w = 2 * _MARGIN + width * (_BOX_W + _GAP_X)
    h = 2 * _MARGIN + depth * (_BOX_H + _GAP_Y)
    out = [f'<svg id="graph" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           f'viewBox="0 0 {w} {h}">']
    for n in shown:  # edges first, under the boxes
        x1, y1 = xy(n)
        for a in n.all_input_nodes:
            if a in pos:
                x0, y0 = xy(a)
                sx, sy, ex, ey = x0 + _BOX_W // 2, y0 + _BOX_H, x1 + _BOX_W // 2, y1
                mid = (sy + ey) // 2
                out.append(f'<path class="edge" data-from="{_esc(a.name)}" '
                           f'data-to="{_esc(n.name)}" d="M{sx},{sy} C{sx},{mid} {ex},{mid} '
                           f'{ex},{ey}"/>')
    for n in shown:
        x, y = xy(n)
        mods = _modules(n)
        top = _group(mods[-1][0]) if mods else ""
        fill = colors.get(top, "#ffffff") if n.op == "call_function" else "#e5e7eb"
        label = n.name if n.op != "call_function" else op_name(n).split(".")[-2 if op_name(
            n).count(".") >= 2 else -1]
        shape = value_annotation(n.meta.get("val"))
        where = mods[-1][0] if mods else ""
        out.append(
            f'<g class="node" data-name="{_esc(n.name)}" transform="translate({x},{y})">'
            f'<title>{_esc(n.name)} = {_esc(op_name(n))}\n{_esc(shape)}'
            f'{chr(10) + "module: " + _esc(where) if where else ""}</title>'
            f'<rect width="{_BOX_W}" height="{_BOX_H}" rx="5" fill="{fill}"/>'
            f'<text x="6" y="15" class="op">{_esc(_clip(label, 26))}</text>'
            f'<text x="6" y="31" class="shape">{_esc(_clip(shape, 30))}</text></g>')
    out.append("</svg>")
    return "".join(out)


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "\u2026"


# -- the node table, grouped by module ----------------------------------------------------

def _rows(graph: torch.fx.Graph, colors: dict[str, str], prefix: str = "") -> list[str]:
    out: list[str] = []
    open_groups: list[str] = []
    for n in graph.nodes:
        mods = _modules(n) if n.op == "call_function" else []
        paths = [p for p, _ in mods]
        common = 0
        while (common < len(open_groups) and common < len(paths)
               and open_groups[common] == paths[common]):
            common += 1
        while len(open_groups) > common:
            out.append("</div></details>")
            open_groups.pop()
        for path, cls in mods[common:]:
            color = colors.get(_group(path), "#ffffff")
            out.append(f'<details open class="module"><summary style="background:{color}">'
                       f'<code>{_esc(path)}</code> <span class="cls">{_esc(cls)}</span>'
                       f'</summary><div class="members">')
            open_groups.append(path)
        out.append(_row(n, prefix))
    out.extend("</div></details>" for _ in open_groups)
    for name, sub in submodules(graph).items():
        out.append(f'<details open class="module subgraph"><summary><code>{_esc(prefix + name)}'
                   f'</code> <span class="cls">subgraph</span></summary><div class="members">')
        out.extend(_rows(sub.graph, colors, prefix + name + "."))
        out.append("</div></details>")
    return out


def _row(n: torch.fx.Node, prefix: str) -> str:
    shape = value_annotation(n.meta.get("val"))
    if n.op == "placeholder":
        what = f'input ({_esc(n.meta.get("kind", "user_input"))}' + (
            f' <code>{_esc(n.meta["target"])}</code>)' if n.meta.get("target") else ")")
    elif n.op == "output":
        what = f"return {_esc(format_arg(n.args[0]))}"
    elif n.op == "get_attr":
        what = f"subgraph <code>{_esc(n.target)}</code>"
    else:
        args = [format_arg(a) for a in n.args]
        args += [f"{k}={format_arg(v)}" for k, v in n.kwargs.items()]
        what = (f'<span class="opname">{_esc(op_name(n))}</span>'
                f'({_esc(_clip(", ".join(args), 240))})')
    src = location(n.meta.get("stack_trace", "") or "")
    ins = " ".join(_esc(prefix + a.name) for a in n.all_input_nodes)
    return (f'<div class="row" id="n-{_esc(prefix + n.name)}" data-name="{_esc(prefix + n.name)}"'
            f' data-in="{ins}"><span class="name">{_esc(n.name)}</span>'
            f'<span class="shape">{_esc(shape)}</span><span class="what">{what}</span>'
            f'<span class="src">{_esc(src)}</span></div>')


# -- the page ------------------------------------------------------------------------------

def render_html(ep: Any, title: str = "safetrace program") -> str:
    """The whole page, as a string (``ep.to_html()``)."""
    graph = ep.graph
    tops: list[str] = []
    for n in graph.nodes:
        for path, _ in _modules(n):
            if _group(path) not in tops:
                tops.append(_group(path))
    colors = {t: _PALETTE[i % len(_PALETTE)] for i, t in enumerate(tops)}
    hist = op_histogram(graph)
    most = max(hist.values(), default=1)
    p, pn, b, bn = _state_sizes(ep)
    calls = sum(hist.values())
    sig = ep.graph_signature
    dims = ep.dims_report
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_esc(title)}</title>", f"<style>{_CSS}</style></head><body>",
        f"<h1>{_esc(title)}</h1>",
        f'<p class="stats">{calls} operator calls ({len(hist)} distinct) &middot; '
        f"{pn:,} parameter elements in {p} tensors &middot; {bn:,} buffer elements in {b} "
        f"tensors &middot; {len(sig.user_inputs)} inputs &middot; {len(sig.user_outputs)} "
        f'outputs <span id="js-status"></span></p>',
        '<nav><a href="#contract">contract</a> <a href="#dims">dims</a> '
        '<a href="#ops">operators</a> <a href="#picture">graph</a> '
        '<a href="#nodes">nodes</a> <a href="#signature">signature</a></nav>',
        '<h2 id="contract">Input contract</h2>',
        f"<pre>{_esc(ep.describe_contract())}</pre>",
        '<h2 id="dims">Declared dims</h2>',
        ("<table><tr><th>dim</th><th>as traced</th></tr>" + "".join(
            f"<tr><td><code>{_esc(k)}</code></td><td>{_esc(v)}</td></tr>"
            for k, v in dims.items()) + "</table>") if dims else
        "<p>No dim was declared dynamic: every size is static.</p>",
        '<h2 id="ops">Operators</h2><table class="hist">',
        "".join(f'<tr><td><code>{_esc(name)}</code></td><td class="count">{count}</td>'
                f'<td class="bar"><div style="width:{100 * count // most}%"></div></td></tr>'
                for name, count in hist.most_common()),
        "</table>",
        '<h2 id="picture">Graph</h2><p class="hint">Operators by depth from the inputs '
        "(parameters, buffers and size arithmetic are left out), colored by module (a "
        "container's blocks apart). Click a box "
        "to find its node below.</p>",
        f'<div class="scroll">{_svg(graph, colors)}</div>',
        '<h2 id="nodes">Nodes by module</h2>',
        '<p><input id="filter" type="search" placeholder="filter by name, operator, shape '
        'or source"></p>',
        '<div id="rows">', *_rows(graph, colors), "</div>",
        '<h2 id="signature">Signature</h2>',
        f"<pre>{_esc(str(sig))}</pre>",
        f"<script>{_JS}</script></body></html>",
    ]
    return "\n".join(parts)


_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em;color:#111}
h1{font-size:1.4em;margin:0 0 .2em} h2{font-size:1.15em;margin-top:1.6em}
pre{background:#f6f8fa;padding:.8em;overflow:auto} code{font-size:12.5px}
nav a{margin-right:1em} .stats{color:#444} .hint{color:#555;font-size:.9em}
table{border-collapse:collapse} td,th{padding:2px 8px;text-align:left;vertical-align:top}
.hist .count{text-align:right} .hist .bar{width:240px}
.hist .bar div{background:#60a5fa;height:10px}
.scroll{overflow:auto;max-height:70vh;border:1px solid #ddd}
#graph .edge{fill:none;stroke:#9ca3af;stroke-width:1.2}
#graph .node rect{stroke:#6b7280;stroke-width:1;cursor:pointer}
#graph .node.hl rect{stroke:#dc2626;stroke-width:2.5}
#graph .edge.hl{stroke:#dc2626;stroke-width:2}
#graph text{font:11px monospace} #graph .shape{fill:#374151}
details.module{margin:.2em 0 .2em .6em;border-left:2px solid #ccc}
details.module>summary{padding:1px 6px;cursor:pointer} .cls{color:#555;font-size:.9em}
.members{margin-left:.4em}
.row{display:grid;grid-template-columns:11em 13em 1fr;gap:0 1em;padding:1px 6px;font:12px monospace}
.row .src{grid-column:1/4;color:#6b7280;padding-left:2em;white-space:pre-wrap}
.row .src:empty{display:none} .row.hl{background:#fde68a} .row.in{background:#fef3c7}
.row.hidden{display:none} .opname{color:#1d4ed8}
"""

_JS = """
'use strict';
(function () {
  const rows = Array.from(document.querySelectorAll('#rows .row'));
  const byName = new Map(rows.map(r => [r.dataset.name, r]));
  const boxes = Array.from(document.querySelectorAll('#graph .node'));
  const edges = Array.from(document.querySelectorAll('#graph .edge'));
  function select(name) {
    document.querySelectorAll('.hl,.in').forEach(e => e.classList.remove('hl', 'in'));
    const row = byName.get(name);
    if (row) {
      row.classList.add('hl');
      (row.dataset.in || '').split(' ').forEach(i => {
        const r = byName.get(i); if (r) r.classList.add('in');
      });
      let d = row.parentElement;
      while (d) { if (d.tagName === 'DETAILS') d.open = true; d = d.parentElement; }
      row.scrollIntoView({block: 'center'});
    }
    boxes.forEach(b => { if (b.dataset.name === name) b.classList.add('hl'); });
    edges.forEach(e => {
      if (e.dataset.from === name || e.dataset.to === name) e.classList.add('hl');
    });
  }
  boxes.forEach(b => b.addEventListener('click', () => select(b.dataset.name)));
  rows.forEach(r => r.addEventListener('click', () => select(r.dataset.name)));
  const filter = document.getElementById('filter');
  filter.addEventListener('input', () => {
    const q = filter.value.toLowerCase();
    rows.forEach(r => r.classList.toggle('hidden', q !== '' &&
                                         !r.textContent.toLowerCase().includes(q)));
  });
  document.getElementById('js-status').textContent =
      '\\u00b7 viewer ready: ' + rows.length + ' nodes, ' + boxes.length + ' drawn';
  document.body.dataset.viewer = 'ready';
})();
"""
