"""Plain Python attributes that forward changes (``self.n += 1``): exported where the graph
does not read them, refused (pointing at a buffer) where it does — torch.export keeps the
value export saw and answers wrongly from the second call on."""

from __future__ import annotations

import copy

import pytest
import torch

import safetrace as st


class Counter(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x + self.calls


class Logged(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.lin = torch.nn.Linear(3, 2)

    def forward(self, x):
        self.calls += 1  # for logging: nothing computed reads it
        self.last = "seen"  # an attribute forward adds
        self.mode = "run"  # set to the value it has
        return self.lin(x).relu()


class FirstCall(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first = True

    def forward(self, x):
        if self.first:
            self.first = False
            return x * 0
        return x + 1


class Outer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = torch.nn.Module()
        self.inner.scale = 2.0

    def forward(self, x):
        self.inner.scale = self.inner.scale * 2
        return x * self.inner.scale


class BufferCounter(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("calls", torch.tensor(0, dtype=torch.long))

    def forward(self, x):
        self.calls += 1
        return x + self.calls


def test_a_counter_the_graph_reads_is_refused_with_the_buffer_fix():
    m = Counter()
    with pytest.raises(st.UnsupportedOpError) as info:
        st.export(m, (torch.randn(4, 3),))
    text = str(info.value)
    assert "`self.calls` (0 -> 1)" in text
    assert 'self.register_buffer("calls", torch.tensor(0, dtype=torch.long))' in text
    assert m.calls == 0  # export never changes the model
    # torch.export keeps the value export saw: the second call answers x + 1, eager x + 2
    x = torch.randn(4, 3)
    tm = torch.export.export(Counter(), (x,)).module()
    tm(x)
    eager = Counter()
    eager(x)
    assert not torch.equal(tm(x), eager(x))


def test_the_buffer_the_fix_names_gives_eagers_answers_on_every_call():
    x = torch.randn(4, 3)
    mod = st.export(BufferCounter(), (x,)).module()
    eager = BufferCounter()
    for _ in range(3):
        torch.testing.assert_close(mod(x), eager(x))


def test_an_attribute_nothing_computed_reads_exports_as_torch_does():
    m = Logged()
    b = st.Dim("b")
    ep = st.export(m, (torch.randn(4, 3),), dynamic_shapes=({0: b},))
    assert m.calls == 0 and not hasattr(m, "last")
    tep = torch.export.export(copy.deepcopy(m), (torch.randn(4, 3),),
                              dynamic_shapes=({0: torch.export.Dim("b")},))
    mod, tmod = ep.module(), tep.module()
    for n in (0, 1, 7):
        x = torch.randn(n, 3)
        torch.testing.assert_close(mod(x), m(x))
        torch.testing.assert_close(tmod(x), m(x))
    with pytest.raises(st.InputMismatchError):
        mod(torch.randn(4, 5))


def test_a_first_call_flag_is_refused():
    m = FirstCall()
    with pytest.raises(st.UnsupportedOpError, match=r"`self\.first` \(True -> False\)"):
        st.export(m, (torch.randn(3),))
    assert m.first is True


def test_a_submodules_attribute_is_named_by_its_path():
    m = Outer()
    with pytest.raises(st.UnsupportedOpError, match=r"`self\.inner\.scale` \(2\.0 -> 4\.0\)"):
        st.export(m, (torch.randn(3),))
    assert m.inner.scale == 2.0


class SizeCounter(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.last = None

    def forward(self, x):
        self.last = x.shape[0]  # kept for logging: fine
        self.calls = self.calls + x.shape[0] % 2  # read below: the next call's value varies
        return x + self.calls


def test_an_attribute_computed_from_a_dynamic_size_is_checked_too():
    m = SizeCounter()
    with pytest.raises(st.UnsupportedOpError, match=r"`self\.calls` \(0 -> "):
        st.export(m, (torch.ones(4, 2),), dynamic_shapes=({0: st.Dim("n", max=8)},))
    assert m.calls == 0 and m.last is None


class History(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.sizes = []
        self.activations = []

    def forward(self, x):
        self.sizes.append(x.shape[0])
        y = x * 2
        self.activations.append(y)  # tensors kept for debugging: read by nothing
        return y * len(self.sizes)


class Logs(History):
    def forward(self, x):
        self.sizes.append(x.shape[0])  # read by nothing computed
        return x * 2


def test_a_list_the_graph_reads_after_forward_appends_is_refused():
    m = History()
    with pytest.raises(st.UnsupportedOpError, match=r"`self\.sizes` \(\[\] -> \[s0\]\)"):
        st.export(m, (torch.ones(4, 2),), dynamic_shapes=({0: st.Dim("n", max=8)},))
    assert m.sizes == [] and m.activations == []
    m = Logs()
    ep = st.export(m, (torch.ones(4, 2),), dynamic_shapes=({0: st.Dim("n", max=8)},))
    assert m.sizes == []
    for n in (0, 1, 8):
        x = torch.randn(n, 2)
        torch.testing.assert_close(ep.module()(x), x * 2)
    with pytest.raises(st.InputMismatchError):
        ep.module()(torch.randn(9, 2))


def test_explain_reports_what_export_refuses():
    m = Counter()
    report = st.explain(m, (torch.randn(4, 3),))
    assert not report.ok
    assert "self.calls" in str(report)
    assert m.calls == 0
    assert st.explain(Logged(), (torch.randn(4, 3),)).ok


class Warmup(torch.nn.Module):
    """The graph never reads the counter, but forward's Python branches on it: the first two
    calls take one side, the third on the other."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls > 2:
            return x * 3
        return x + 1


class DecayLogged(Warmup):
    def __init__(self) -> None:
        super().__init__()
        self.rate = 1.0

    def forward(self, x):
        self.calls += 1
        self.rate = self.rate * 0.5
        print(f"call {self.calls} rate {self.rate:.3f}")  # formatted, never decided on
        return x * 2


def test_a_branch_on_a_changing_counter_is_refused_though_the_next_call_agrees(capsys):
    """Tracing again at calls=1 gives the same program as at calls=0; the third call does not
    (torch.export returns ``x + 1`` on every call)."""
    x = torch.randn(3)
    with pytest.raises(st.UnsupportedOpError,
                       match=r"decides on it in Python \(a comparison of `self\.calls` at "
                             r".*test_python_state\.py:\d+\)(.|\n)*torch\.where"):
        st.export(Warmup(), (x,))
    eager, theirs = Warmup(), torch.export.export(Warmup(), (x,)).module()
    outs = [(eager(x), theirs(x)) for _ in range(3)]
    assert not torch.equal(outs[2][0], outs[2][1])  # torch's third call is wrong
    ep = st.export(DecayLogged(), (x,), dynamic_shapes=({0: st.Dim("n")},))  # only printed
    m, eager = ep.module(), DecayLogged()
    for n in (0, 1, 5):
        x = torch.randn(n)
        torch.testing.assert_close(m(x), eager(x))
    with pytest.raises(st.InputMismatchError):
        m(torch.randn(2, 2))


class KeptTensors(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.hist: list = []
        self.memo: dict = {}
        self.acts: list = []

    def forward(self, x, mode: str):
        if mode == "hist":  # eager stacks one more tensor on every call
            self.hist.append(x * 2)
            return torch.stack(self.hist).sum(0)
        if mode == "memo":  # eager keeps the first call's sum
            if "k" not in self.memo:
                self.memo["k"] = x.sum()
            return x + self.memo["k"]
        y = x.relu()
        self.acts.append(y)  # collected for the caller, never read by forward
        return y * 2


@pytest.mark.parametrize("mode", ["hist", "memo"])
def test_tensors_forward_keeps_in_a_list_or_dict_and_reads_back_are_refused(mode):
    x = torch.randn(3)
    with pytest.raises(st.UnsupportedOpError, match=r"`self\.(hist|memo)` \(.* -> .*<tensor "
                                                    r"float32, [01] dims>"):
        st.export(KeptTensors(), (x, mode))
    eager, theirs = KeptTensors(), torch.export.export(KeptTensors(), (x, mode)).module()
    a, b = torch.randn(3), torch.randn(3)
    eager(a, mode), theirs(a, mode)
    assert not torch.allclose(eager(b, mode), theirs(b, mode))  # torch's second call


def test_tensors_forward_only_collects_export():
    m = KeptTensors()
    ep = st.export(m, (torch.randn(3), "acts"), dynamic_shapes=({0: st.Dim("n")}, None))
    assert m.acts == []
    mod = ep.module()
    for n in (0, 1, 5):
        x = torch.randn(n)
        torch.testing.assert_close(mod(x, "acts"), m(x, "acts"))


class _Settings:
    def __init__(self) -> None:
        self.n = 0
        self.note = "none"


class WithSettings(torch.nn.Module):
    def __init__(self, reads: bool) -> None:
        super().__init__()
        self.cfg = _Settings()
        self.reads = reads

    def forward(self, x):
        self.cfg.n += 1
        self.cfg.note = "ran"
        self.cfg.last = x * 2  # a tensor forward leaves on a plain object
        return x * self.cfg.n if self.reads else x * 2


def test_attributes_of_a_plain_object_the_model_holds_are_put_back_and_checked():
    """``self.cfg.n += 1``: export left the user's object changed (n=1, and a traced tensor
    on it), and the program kept n=1 on every call."""
    m = WithSettings(reads=True)
    with pytest.raises(st.UnsupportedOpError, match=r"`self\.cfg\.n` \(0 -> 1\)"):
        st.export(m, (torch.randn(3),))
    assert vars(m.cfg) == {"n": 0, "note": "none"}
    m = WithSettings(reads=False)
    ep = st.export(m, (torch.randn(3),), dynamic_shapes=({0: st.Dim("n")},))
    assert vars(m.cfg) == {"n": 0, "note": "none"}
    mod = ep.module()
    for n in (0, 1, 4):
        x = torch.randn(n)
        torch.testing.assert_close(mod(x), x * 2)
    with pytest.raises(st.InputMismatchError):
        mod(torch.randn(2, 2))


class _Cache:
    def __init__(self) -> None:
        self.k = torch.zeros(0, 2)


class GrowingCache(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cache = _Cache()

    def forward(self, x):
        self.cache.k = torch.cat([self.cache.k, x])  # eager's grows on every call
        return self.cache.k.sum(0)


def test_a_tensor_forward_replaces_on_a_plain_object_is_checked_and_put_back():
    m = GrowingCache()
    with pytest.raises(st.UnsupportedOpError, match=r"`self\.cache\.k` \(<tensor float32, 2 "
                                                    r"dims> -> <tensor float32, 2 dims>\)"):
        st.export(m, (torch.ones(1, 2),))
    assert m.cache.k.shape == (0, 2)


class Memos(torch.nn.Module):
    """Tensors made from sizes and parameters alone: kept in a dict by new keys (a memo),
    appended to a list (state) or grown from the value they replace (state)."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self.w = torch.nn.Parameter(torch.ones(3))
        self.tables: dict = {}
        self.hist: list = []
        self.cache = _Cache()

    def forward(self, x):
        n = x.shape[0]
        if self.kind == "memo":
            if n not in self.tables:
                self.tables[n] = torch.arange(n, dtype=x.dtype) * 2 + self.w
            return x + self.tables[n]
        if self.kind == "list":
            self.hist.append(torch.ones(3))
            return x + torch.stack(self.hist).sum(0)
        if self.kind == "written":  # a memo's entry written on every call: state
            if n not in self.tables:
                self.tables[n] = torch.zeros(n)
            self.tables[n].add_(1)
            return x + self.tables[n]
        self.cache.k = torch.cat([self.cache.k, torch.ones(1, 2)])
        return x + self.cache.k.sum()


@pytest.mark.parametrize("kind", ["memo", "list", "grown", "written"])
def test_a_memo_of_size_tables_exports_and_state_made_without_inputs_is_refused(kind):
    x = torch.randn(3)
    if kind != "memo":
        with pytest.raises(st.UnsupportedOpError, match=r"forward changes `self\.(hist|tables|"
                                                        r"cache\.k)`"):
            st.export(Memos(kind), (x,))
        return
    m = Memos(kind)
    ep = st.export(m, (x,))
    assert m.tables == {}
    mod, eager = ep.module(), Memos(kind)
    for _ in range(3):
        x = torch.randn(3)
        torch.testing.assert_close(mod(x), eager(x))
    with pytest.raises(st.InputMismatchError):
        mod(torch.randn(4))



class GrowsALog(torch.nn.Module):
    def __init__(self, reads: bool) -> None:
        super().__init__()
        self.log, self.reads = "", reads

    def forward(self, x):
        self.log += "."
        if self.reads and len(self.log) > 6:  # a branch only calls after the sixth take
            return x * 3
        return x * 2


def test_a_string_new_on_every_call_is_refused_even_when_nothing_reads_it():
    """Stricter than torch.export on purpose: a string forward extends on every call
    cannot be told apart from one a later branch reads (Python's string operations are not
    traced), so after five traces of new values export refuses both, with the buffer fix.
    torch.export exports both and is wrong on the one that reads it (its 7th call)."""
    for reads in (False, True):
        with pytest.raises(st.UnsupportedOpError, match=r"a new value on each of .* traces"):
            st.export(GrowsALog(reads), (torch.randn(3),))
    ep = torch.export.export(GrowsALog(True), (torch.randn(3),))
    eager, ours = GrowsALog(True), ep.module()
    x = torch.randn(3)
    outs = [(eager(x), ours(x)) for _ in range(7)]
    torch.testing.assert_close(outs[0][1], outs[0][0])
    assert not torch.equal(outs[6][1], outs[6][0])  # torch's 7th call keeps x * 2
