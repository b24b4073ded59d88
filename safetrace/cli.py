"""The ``safetrace`` command: show, check, export and run saved programs.

    safetrace show FILE                      the input contract in words and the graph
    safetrace show --summary FILE            operators, inputs, dims, parameter count
    safetrace show --html FILE -o PAGE.html  the graph as a self-contained HTML page
    safetrace check FILE                     validate a file (exit status 1 if invalid)
    safetrace export MODULE:FACTORY -o FILE  export what FACTORY() returns and save it
    safetrace run FILE [--n N] [--seed S]    run on random inputs drawn from the contract

Options of show/check/run: --allow-ops NS::OP (repeatable) lets the graph call that
custom operator (it must be registered in this process: --import MODULE imports it);
--allow-cuda lets it name CUDA devices (a program exported on a GPU).
Everything printed that comes from a file is escaped to printable text.

MODULE may be a dotted name or a file (path/to/models.py:make).  Errors are one message
on stderr, never a traceback (SAFETRACE_DEBUG=1 shows it).

Exit status: 0 success; 1 the file is invalid or refused (LoadError), or export failed;
2 bad command line, module or factory; 3 running failed (no inputs could be drawn under
--max-numel, or the program raised); 130 interrupted; 141 stdout closed early (| head).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import math
import os
import random
import statistics
import sys
import time
from typing import Any, Sequence

import torch

from safetrace.errors import (ExportError, InputMismatchError, LoadError, allow_ops_entry,
                              no_inputs_drawn)
from safetrace.exporter.html import render_html, summary_text


EXIT_OK, EXIT_INVALID, EXIT_USAGE, EXIT_RUN = 0, 1, 2, 3
EXIT_INTERRUPTED, EXIT_PIPE = 130, 141  # as a shell reports SIGINT, SIGPIPE


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status.  Every failure is a
    message on stderr and an exit status, never a traceback (``SAFETRACE_DEBUG=1``
    re-raises internal errors, for a bug report)."""
    parser = _parser()
    try:
        ns = parser.parse_args(argv)
    except SystemExit as exit_:
        return EXIT_USAGE if exit_.code else EXIT_OK
    try:
        for name in getattr(ns, "imports", None) or ():
            _import(name)
        status = ns.func(ns)
        sys.stdout.flush()  # (here, so that a closed pipe is reported below, not at exit)
        return status
    except BrokenPipeError:
        # the reader went away (`safetrace show m.st | head`): stop quietly, as `cat` does
        _quiet_stdout()
        return EXIT_PIPE
    except KeyboardInterrupt:
        _err("interrupted")
        return EXIT_INTERRUPTED
    except LoadError as err:
        _err(f"error: {ns.file if hasattr(ns, 'file') else ''}: {err}")
        return EXIT_INVALID
    except ExportError as err:
        _err(f"error: {type(err).__name__}: {err}")
        return EXIT_INVALID
    except _UsageError as err:
        _err(f"error: {err}")
        return EXIT_USAGE
    except _RunError as err:
        _err(f"error: {err}")
        return EXIT_RUN
    except Exception as err:  # noqa: BLE001 - a message, never a traceback
        if os.environ.get("SAFETRACE_DEBUG"):
            raise
        _err(f"error: {type(err).__name__}: {str(err)[:4000]}\n(an unexpected error: run "
             f"with SAFETRACE_DEBUG=1 for the traceback)")
        return EXIT_INVALID


class _RunError(Exception):
    """Running a loaded program failed (reported as a message, exit status 3)."""


class _UsageError(Exception):
    """A bad command line, module or factory (reported as a message, exit status 2)."""


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that flushing it at exit raises nothing more."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):
        pass


def _import(name: str) -> Any:
    """A module by dotted name, or from a file (``path/to/models.py``)."""
    try:
        if name.endswith(".py") or os.sep in name or "/" in name:
            return _import_file(name)
        return importlib.import_module(name)
    except _UsageError:
        raise
    except Exception as err:  # noqa: BLE001 - the user's module failed to import
        raise _UsageError(f"cannot import {name}: {type(err).__name__}: {err}") from None


def _import_file(path: str) -> Any:
    if not os.path.isfile(path):
        raise _UsageError(f"cannot import {path}: no such file")
    stem = os.path.splitext(os.path.basename(path))[0]
    if not stem.isidentifier():
        raise _UsageError(f"cannot import {path}: {stem!r} is not a module name")
    folder = os.path.dirname(os.path.abspath(path))
    if folder not in sys.path:
        sys.path.insert(0, folder)  # (its own imports of neighbouring modules work)
    spec = importlib.util.spec_from_file_location(stem, path)
    if spec is None or spec.loader is None:
        raise _UsageError(f"cannot import {path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[stem] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(stem, None)
        raise
    return module


_ESCAPES = {"\n": "\n", "\t": "\t"}


def printable(text: str) -> str:
    """``text`` with every non-printable character (terminal escapes, bidi controls)
    escaped as ``\\xNN`` / ``\\uNNNN``; newlines and tabs stay."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in _ESCAPES else
                   (f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}"
                    if ord(c) < 65536 else f"\\U{ord(c):08x}") for c in text)


def _out(text: str, end: str = "\n") -> None:
    sys.stdout.write(printable(text) + end)


def _err(text: str) -> None:
    sys.stderr.write(printable(text) + "\n")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="safetrace", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("show", help="print the input contract and the readable graph")
    _file_args(s)
    s.set_defaults(func=_show)
    _view_args(s)
    s = sub.add_parser("check", help="validate a saved program (allowlist included)")
    _file_args(s)
    s.set_defaults(func=_check)
    s = sub.add_parser("export", help="export MODULE:FACTORY (returns (model, args[, "
                                      "dynamic_shapes])) and save it")
    s.add_argument("factory", help="e.g. mypkg.models:make")
    s.add_argument("-o", "--output", required=True)
    s.set_defaults(func=_export)
    s = sub.add_parser("run", help="run on random inputs drawn from the contract")
    _file_args(s)
    s.add_argument("--n", type=int, default=10, help="number of calls (default 10)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--max-numel", type=int, default=1 << 22,
                   help="most elements of one drawn input tensor (default 4194304)")
    s.set_defaults(func=_run)
    return p


def _file_args(s: argparse.ArgumentParser) -> None:
    s.add_argument("file")
    s.add_argument("--allow-ops", action="append", default=[], metavar="NS::OP",
                   help="let the graph call this custom operator (repeatable)")
    s.add_argument("--weights", default=None,
                   help="safetensors weights for a file saved with weights=False")
    s.add_argument("--allow-cuda", action="store_true",
                   help="let the graph name CUDA devices (a program exported on a GPU)")
    s.add_argument("--import", dest="imports", action="append", default=[],
                   metavar="MODULE", help="import MODULE first (registers custom ops)")


def _load(ns: argparse.Namespace) -> Any:
    from safetrace.serialize import load

    try:
        return load(ns.file, allow_ops=ns.allow_ops, weights=ns.weights,
                    allow_cuda=ns.allow_cuda)
    except TypeError as err:  # a malformed --allow-ops entry
        raise allow_ops_entry(str(err)) from None


def _show(ns: argparse.Namespace) -> int:
    ep = _load(ns)
    _out(ep.describe_contract())
    _out("")
    _out(ep.graph_module.print_readable(print_output=False), end="")
    return 0


def _view_args(s: argparse.ArgumentParser) -> None:
    """``show --html`` (a self-contained page) and ``show --summary`` (text)."""
    s.add_argument("--html", action="store_true",
                   help="write the program as one self-contained HTML page")
    s.add_argument("--summary", action="store_true",
                   help="operator histogram, inputs, dims and parameter count")
    s.add_argument("-o", "--output", default=None,
                   help="where --html writes the page (default: standard output)")
    s.set_defaults(func=_show_view)


def _show_view(ns: argparse.Namespace) -> int:
    if not (ns.html or ns.summary):
        return _show(ns)
    ep = _load(ns)
    if ns.summary:
        _out(summary_text(ep), end="")
    if ns.html:
        page = render_html(ep, title=f"safetrace: {ns.file}")
        if ns.output is None:
            sys.stdout.write(page)
        else:
            with open(ns.output, "w", encoding="utf-8") as f:
                f.write(page)
            _err(f"wrote {ns.output} ({len(page):,} bytes)")
    return 0


def _check(ns: argparse.Namespace) -> int:
    ep = _load(ns)
    n_nodes = len(ep.graph.nodes)
    n_bytes = sum(t.numel() * t.element_size() for t in [*ep._state.values(),
                                                           *ep.lifted_constants.values()])
    _out(f"{ns.file}: OK ({n_nodes} nodes, {len(ep._state)} state tensors, "
         f"{len(ep.lifted_constants)} constants, {n_bytes} bytes of weights, "
         f"{len(ep.contract.inputs)} inputs; every call on the allowlist)")
    return 0


def _export(ns: argparse.Namespace) -> int:
    from safetrace.exporter.api import export
    from safetrace.serialize import load, save

    t0 = time.perf_counter()

    def step(text: str) -> None:
        print(f"[{time.perf_counter() - t0:7.2f}s] {text}", flush=True)

    mod_name, sep, fn_name = ns.factory.rpartition(":")
    if not sep or not mod_name or not fn_name.isidentifier():
        raise _UsageError(f"expected MODULE:FACTORY or path/to/file.py:FACTORY (e.g. "
                          f"mypkg.models:make), got {ns.factory!r}")
    step(f"importing {mod_name}")
    if "" not in sys.path:
        sys.path.insert(0, "")
    module = _import(mod_name)
    factory = getattr(module, fn_name, None)
    if not callable(factory):
        raise _UsageError(f"{mod_name} has no function {fn_name}")
    step(f"calling {fn_name}()")
    try:
        made = factory()
    except Exception as err:  # noqa: BLE001 - the user's factory failed
        raise _UsageError(f"{fn_name}() raised {type(err).__name__}: {err}") from None
    if not isinstance(made, tuple) or len(made) not in (2, 3):
        raise _UsageError("the factory must return (model, args) or (model, args, "
                          "dynamic_shapes)")
    model, args = made[0], made[1]
    dynamic_shapes = made[2] if len(made) == 3 else None
    step(f"exporting {type(model).__name__}")
    ep = export(model, tuple(args) if isinstance(args, list) else args,
                dynamic_shapes=dynamic_shapes)
    step(f"traced {len(ep.graph.nodes)} nodes; saving {ns.output}")
    save(ep, ns.output)
    step("verifying the saved file")
    load(ns.output)
    step(f"done: {ns.output}")
    return 0


def _run(ns: argparse.Namespace) -> int:
    ep = _load(ns)
    rng = random.Random(ns.seed)
    gen = torch.Generator().manual_seed(ns.seed)
    mod = ep.module()
    times = []
    for i in range(max(ns.n, 0)):
        try:
            args, kwargs, sizes = draw_inputs(ep, rng, gen, use_hints=(i == 0),
                                              max_numel=ns.max_numel)
        except InputMismatchError as err:
            raise _RunError(str(err)) from None
        t = time.perf_counter()
        try:
            mod(*args, **kwargs)
        except Exception as err:  # noqa: BLE001 - the program's failure, as a message
            raise _RunError(f"call {i} ({sizes}) raised {type(err).__name__}: "
                            f"{str(err)[:2000]}") from None
        times.append(time.perf_counter() - t)
        _out(f"call {i}: {sizes}  {times[-1] * 1e3:.3f} ms")
    if times:
        _out(f"{len(times)} calls: median {statistics.median(times) * 1e3:.3f} ms, "
             f"mean {statistics.fmean(times) * 1e3:.3f} ms per call")
    return 0


def draw_inputs(ep: Any, rng: random.Random, gen: torch.Generator,
                use_hints: bool = False, tries: int = 200,
                max_numel: int = 1 << 22) -> tuple[tuple, dict, str]:
    """Random inputs that pass ``ep``'s checks: sizes from the contract's symbols, no
    tensor over ``max_numel`` elements (a file's hints are not trusted to be small)."""
    from safetrace import pytree

    hints = _hints(ep)
    for attempt in range(tries):
        # the file's hints first (when asked) and last; they are drawn around when they
        # would make a tensor over the cap
        first = use_hints and attempt == 0
        binding = dict(hints) if first or attempt == tries - 1 else _draw(ep, rng, hints)
        leaves = _leaves(ep, binding, gen, max_numel)
        if leaves is None:
            continue
        args, kwargs = pytree.tree_unflatten(leaves, ep.in_spec)
        try:
            ep.check_inputs(args, kwargs)
        except InputMismatchError:
            continue
        sizes = ", ".join(f"{k}={v}" for k, v in sorted(binding.items())) or "static"
        return args, kwargs, sizes
    raise no_inputs_drawn(max_numel)


def _symbols(ep: Any) -> list[str]:
    names: set = set()
    for inp in ep.contract.inputs:
        for dim in getattr(inp, "dims", ()):
            if not isinstance(dim.size, int):
                names |= dim.size.free_symbols
    return sorted(names)


def _hints(ep: Any) -> dict[str, int]:
    out = {}
    for node in ep.graph.nodes:
        meta = getattr(node.meta.get("val"), "st_meta", None)
        if node.op != "placeholder" or meta is None:
            continue
        for s in meta.shape:
            env = getattr(s, "env", None)
            if env is not None:
                for name in s.expr.free_symbols:
                    info = env.symbols.get(name)
                    if info is not None and info.hint is not None:
                        out[name] = info.hint
    return out


def _draw(ep: Any, rng: random.Random, hints: dict[str, int]) -> dict[str, int]:
    binding = {}
    for name in _symbols(ep):
        found = ep.contract.symbol(name)
        lo, hi = (found.lo, found.hi) if found is not None else (None, None)
        lo = max(lo or 0, 1)
        hi = min(hi if hi is not None else lo + 15, lo + 15)
        binding[name] = rng.randint(lo, max(lo, hi))
    return binding


def _leaves(ep: Any, binding: dict[str, int], gen: torch.Generator,
            max_numel: int) -> list | None:
    out = []
    for inp in ep.contract.inputs:
        if not hasattr(inp, "dims"):  # a specialized constant
            out.append(inp.value)
            continue
        shape = []
        for dim in inp.dims:
            try:
                v = dim.size if isinstance(dim.size, int) else dim.size.evaluate(binding)
            except (ArithmeticError, KeyError):
                return None
            if isinstance(v, bool) or v < 0:
                return None
            shape.append(int(v))
        if getattr(inp, "scalar", False):  # a dynamic int: its one "dim" is its value
            out.append(shape[0] if shape else 0)
            continue
        if math.prod(shape) > max_numel:
            return None
        out.append(_tensor(shape, inp.dtype, gen))
    return out


def _tensor(shape: list[int], dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(shape, generator=gen).to(dtype)
    if dtype is torch.bool:
        return torch.rand(shape, generator=gen) > 0.5
    return torch.zeros(shape, dtype=dtype)  # index-like: 0 is valid wherever a dim is > 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
