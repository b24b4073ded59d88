"""A Dim.AUTO length whose range starts far above 2 (sew's audio, eager raising below 100
samples) and a condition on it that fails past the example (sew's `if
hidden_states.shape[1] < n_input_timesteps:`, `t//20 < 2*((t + 20)//40)`, false at 400
and true at 420..439, 500..519, ...).  The re-export with the length a named Dim splits
it on that condition, but the programs were compared at sizes 2 to 64 only, where the
length has none: the first program, refusing 555, was kept.  Now they are also compared
from the Dim's lower end and up to four times its example (``auto_small._larger``)."""

import pytest
import torch

import safetrace as st

AUTO = st.Dim.AUTO


class Frames(torch.nn.Module):
    def forward(self, x):
        anchor = x[:, 99]  # (eager raises below 100 samples)
        if x.shape[1] // 20 < 2 * ((x.shape[1] + 20) // 40):
            return x.sum(1) * 2 + anchor
        return x.cumsum(1)[:, -1] + anchor


MODEL = Frames()


@pytest.fixture(scope="module")
def program():
    return st.export(MODEL, (torch.randn(2, 400),), dynamic_shapes=({0: AUTO, 1: AUTO},))


@pytest.mark.parametrize("b,n", [(3, 555), (1, 430), (2, 100), (1, 101), (0, 420), (1, 400),
                                 (2, 1000), (1, 439), (1, 440)])
def test_lengths_match_eager(program, b, n):
    x = torch.randn(b, n)
    torch.testing.assert_close(program.module()(x), MODEL(x))


@pytest.mark.parametrize("shape", [(2, 99), (1, 0), (2, 400, 1)])
def test_outside_the_space_is_refused_before_running(program, shape):
    x = torch.randn(*shape)
    if shape[1:2] in ((99,), (0,)):
        with pytest.raises(IndexError):  # (eager raises there)
            MODEL(x)
    with pytest.raises(st.InputMismatchError):
        program.module()(x)


def test_the_refusal_below_the_range_names_the_line_not_a_hidden_dim(program):
    with pytest.raises(st.InputMismatchError) as err:
        program.module()(torch.randn(2, 99))
    assert "as declared" not in str(err.value)  # (the user declared Dim.AUTO, no Dim)
    assert "x[:, 99]" in str(err.value)
