"""A pytree spec's class is looked up among what its module defines, never through a
module's ``__getattr__``: a file naming ``torch:_dynamo.OptimizedModule`` made ``st.load``
import ``torch._dynamo`` (torch's lazy ``__getattr__``: some 800 modules and 1.5 s, chosen
by the file) before refusing it (session 31).  Checked in another process, where nothing
imported them yet (forked from one that imported torch and safetrace's face: tests/child.py)."""

from __future__ import annotations

import textwrap

from tests import child

_SCRIPT = textwrap.dedent("""
    import io, json, sys
    import torch
    import safetrace as st
    from tests.serialize import hostile

    class M(torch.nn.Module):
        def forward(self, x):
            return x + 1

    buf = io.BytesIO()
    st.save(st.export(M(), (torch.randn(2, 3),)), buf)
    doc, tensors = hostile.parts(buf.getvalue())
    before = set(sys.modules)
    for kind, name in json.loads(sys.argv[1]):
        spec = ({"type": name, "context": None, "children": [None]} if kind == "type" else
                {"type": "namedtuple", "context": name, "children": [None]})
        doc["out_spec"] = spec
        try:
            st.load(hostile.pack(doc, tensors))
        except st.LoadError as err:
            assert "out_spec" in str(err), str(err)
        else:
            raise AssertionError(f"{name} loaded")
    new = sorted(m for m in set(sys.modules) - before if m.startswith("torch"))
    print(json.dumps(new))
""")


_NAMES = ["torch:_dynamo.OptimizedModule", "torch:_dynamo.config", "torch:_inductor.ir.Buffer",
          "torch:_export.ExportedProgram"]


def test_spec_class_never_imports_a_module():
    import json

    out = child.run(["-c", _SCRIPT,
                     json.dumps([[k, n] for n in _NAMES for k in ("type", "namedtuple")])],
                    text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
