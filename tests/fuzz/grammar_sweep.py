"""Statement kinds of the long fuzz run (benchmarks/fuzz.py) for the rule families a run's
traces asked least (``benchmarks/fuzz.py --reach``, session 29: fft 0 of 10 overloads,
special 1 of 130, linalg decompositions 4 of 42, padding 1 of 10, activations 3 of 18,
rnn 2 of 8, embedding 2 of 6):

  unarysweep  one of ~90 unary functions (torch.*, torch.special.*, F.* activations), on
              a float / double / half / bfloat16 / int / uint8 / bool cast of a tensor,
              out of place or in place on a clone (result dtypes: each op's own rule)
  binarysweep one of ~35 binary functions on two casts (promotion), a 0-d tensor or a
              Python number from a size
  sweep       fft (``fft`` / ``rfft`` with ``n`` from sizes, ``irfft``, ``fftn``,
              ``fftshift``), linalg on well-conditioned matrices (``inv``, ``det``,
              ``slogdet``, ``cholesky``, ``qr``, ``eigvalsh``, ``svdvals``, ``pinv``,
              ``matrix_power`` / ``matrix_exp``, ``solve``), padding (constant with a value,
              reflect / replicate / circular on 2-4 d), ``embedding`` / ``embedding_bag``
              with indices from sizes, rnn cells, ``multi_head_attention_forward``
"""

from __future__ import annotations

from tests.fuzz.grammar import _t

UNARY = [
    "torch.abs", "torch.acos", "torch.asin", "torch.atan", "torch.ceil", "torch.floor",
    "torch.round", "torch.trunc", "torch.frac", "torch.sign", "torch.sgn", "torch.neg",
    "torch.reciprocal", "torch.rsqrt", "torch.sqrt", "torch.exp", "torch.exp2",
    "torch.expm1", "torch.log", "torch.log2", "torch.log10", "torch.log1p", "torch.sin",
    "torch.cos", "torch.tan", "torch.sinh", "torch.cosh", "torch.tanh", "torch.asinh",
    "torch.acosh", "torch.atanh", "torch.erf", "torch.erfc", "torch.erfinv", "torch.lgamma",
    "torch.digamma", "torch.i0", "torch.sigmoid", "torch.logit", "torch.nan_to_num",
    "torch.signbit", "torch.isfinite", "torch.isnan", "torch.isinf", "torch.isneginf",
    "torch.isposinf", "torch.angle", "torch.positive", "torch.deg2rad", "torch.rad2deg",
    "torch.logical_not", "torch.square", "torch.fix", "torch.sinc", "torch.special.expit",
    "torch.special.entr", "torch.special.ndtr", "torch.special.ndtri",
    "torch.special.log_ndtr", "torch.special.erfcx", "torch.special.i0e",
    "torch.special.i1", "torch.special.i1e", "torch.special.bessel_j0",
    "torch.special.bessel_j1", "torch.special.spherical_bessel_j0",
    "torch.special.log1p", "torch.special.exp2", "torch.special.expm1",
    "torch.special.psi", "torch.special.gammaln", "torch.special.round",
    "F.elu", "F.selu", "F.celu", "F.gelu", "F.silu", "F.mish", "F.softplus", "F.softsign",
    "F.hardswish", "F.hardsigmoid", "F.hardtanh", "F.relu6", "F.leaky_relu", "F.logsigmoid",
    "F.tanhshrink", "F.softshrink", "F.hardshrink", "F.relu", "torch.bitwise_not",
]
ARGS = {"F.gelu": ", approximate='tanh'", "F.leaky_relu": ", 0.2", "F.softplus": ", 2, 5",
        "F.hardtanh": ", -0.5, 0.5", "torch.nan_to_num": ", 0.0, 1.0, -1.0",
        "torch.logit": ", 1e-3", "torch.round": ", decimals=1", "F.celu": ", 0.5"}
INPLACE = {"torch.abs": "abs_", "torch.ceil": "ceil_", "torch.exp": "exp_",
           "torch.sigmoid": "sigmoid_", "torch.tanh": "tanh_", "torch.sqrt": "sqrt_",
           "torch.neg": "neg_", "torch.frac": "frac_", "torch.sign": "sign_",
           "torch.logit": "logit_", "torch.nan_to_num": "nan_to_num_", "F.relu": "relu_",
           "torch.erfinv": "erfinv_", "torch.i0": "i0_", "torch.digamma": "digamma_"}
BINARY = [
    "torch.atan2", "torch.hypot", "torch.fmod", "torch.remainder", "torch.copysign",
    "torch.nextafter", "torch.logaddexp", "torch.logaddexp2", "torch.xlogy",
    "torch.float_power", "torch.pow", "torch.fmax", "torch.fmin", "torch.heaviside",
    "torch.floor_divide", "torch.true_divide", "torch.maximum", "torch.minimum",
    "torch.eq", "torch.ne", "torch.lt", "torch.ge", "torch.logical_xor",
    "torch.logical_and", "torch.special.xlog1py", "torch.special.zeta", "torch.igamma",
    "torch.bitwise_and", "torch.bitwise_or", "torch.bitwise_xor", "torch.gcd", "torch.lcm",
    "torch.bitwise_left_shift", "torch.bitwise_right_shift", "torch.ldexp", "torch.mul",
    "torch.sub", "torch.add", "torch.div", "torch.clamp_min", "torch.isclose",
]
DTYPES = ["", ".double()", ".half()", ".bfloat16()", ".long()", ".int()",
          ".to(torch.uint8)", ".bool()", ".to(torch.int8)", ".to(torch.int16)"]


def _cast(rng, a):
    d = rng.choice(DTYPES)
    if d in (".long()", ".int()", ".to(torch.int8)", ".to(torch.int16)"):
        return f"({a} * 4){d}"
    if d == ".to(torch.uint8)":
        return f"({a}.abs() * 4){d}"
    if d == ".bool()":
        return f"({a} > 0)"
    return f"{a}{d}"


def unarysweep(rng, env, v):
    a = _t(env, rng, 0, True)
    if a is None:
        return None
    op = rng.choice(UNARY)
    x = _cast(rng, a)
    if op in INPLACE and rng.random() < 0.3:
        return f"{v} = {x}.clone()\n{v}.{INPLACE[op]}()"
    return f"{v} = {op}({x}{ARGS.get(op, '')})"


def binarysweep(rng, env, v):
    a, b = _t(env, rng, 0, True), _t(env, rng, 0, True)
    if a is None:
        return None
    op = rng.choice(BINARY)
    x = _cast(rng, a)
    s = f"{a}.shape[0]" if env[a].ndim else "3"
    other = rng.choice([_cast(rng, b), _cast(rng, b), f"torch.tensor({s})",
                        f"{s}", f"{s} / 2 + 0.5", f"{b}.sum()", "2"])
    if rng.random() < 0.15:
        x, other = other, x
    return f"{v} = {op}({x}, {other})"


def sweep(rng, env, v):
    a = _t(env, rng, 1, True)
    if a is None:
        return None
    t = env[a]
    n = f"{a}.shape[-1]"
    m = f"{a}.flatten(0, -2)" if t.ndim > 2 else (f"{a}[None]" if t.ndim == 1 else a)
    sq = f"({a}.flatten()[:4].reshape(-1, 1) * {a}.flatten()[:4] + " \
         f"torch.eye(min({a}.numel(), 4)) * 5)"
    idx = f"(torch.arange({a}.shape[0]) % 3)"
    forms = [
        f"torch.fft.fft({a}).abs()", f"torch.fft.rfft({a}, n=max({n}, 1) + 1).real",
        f"torch.fft.irfft(torch.fft.rfft({a}), n={n})" if t.shape[-1] > 0
        else f"torch.fft.fft({a}).imag",
        f"torch.fft.fftn({a}).abs()", f"torch.fft.fftshift({a})",
        f"torch.fft.ifft(torch.fft.fft({a}, dim=0), dim=0).real",
        f"torch.fft.hfft({a}[..., :{n} // 2 + 1].to(torch.complex64), n={n})"
        if t.shape[-1] > 1 else f"torch.fft.rfftfreq(max({n}, 1))",
        f"torch.fft.fftfreq({n}, d=0.5)",
        f"torch.linalg.inv({sq})", f"torch.linalg.det({sq})",
        f"torch.linalg.slogdet({sq}).logabsdet", f"torch.linalg.cholesky({sq} @ {sq}.mT)",
        f"torch.linalg.qr({m}).R.abs()", f"torch.linalg.eigvalsh({sq} + {sq}.mT)",
        f"torch.linalg.svdvals({m})", f"torch.linalg.pinv({sq})",
        f"torch.linalg.matrix_power({sq}, {a}.shape[0] % 3)",
        f"torch.linalg.matrix_exp({sq} * 0.1)", f"torch.linalg.solve({sq}, {sq}[:, :1])",
        f"torch.linalg.norm({m}, 'fro')", f"torch.linalg.matrix_norm({m}, ord=1)",
        f"torch.inverse({sq})", f"torch.linalg.lu_factor({sq}).LU",
        # (not lstsq: eager's own results differ in the last bits from call to call)
        f"F.pad({a}, (1, 2), value=-3.0)", f"F.pad({a}, (0, 0, 1, 1)) if {a}.ndim >= 2 "
        f"else F.pad({a}, (2, 0))",
        f"F.pad({a}[None, None] if {a}.ndim == 1 else {a}[None], (1, 1), mode='"
        f"{rng.choice(['reflect', 'replicate', 'circular'])}')" if t.shape[-1] >= 2
        else f"F.pad({a}, (1, 1))",
        f"F.embedding({idx}, torch.arange(12.0).reshape(3, 4))",
        f"F.embedding({idx}[None], torch.arange(12.0).reshape(3, 4), padding_idx=1)",
        f"F.embedding_bag({idx}, torch.arange(12.0).reshape(3, 4), torch.tensor([0]), "
        f"mode='{rng.choice(['sum', 'mean', 'max'])}')" if t.shape[0]
        else f"F.embedding({idx}, torch.ones(3, 2))",
        f"torch.rnn_tanh_cell({m}, torch.zeros({m}.shape[0], 2), torch.ones(2, {m}.shape[1]),"
        f" torch.ones(2, 2))",
        f"torch.rnn_relu_cell({m}, torch.zeros({m}.shape[0], 2), torch.ones(2, {m}.shape[1]),"
        f" torch.ones(2, 2), torch.zeros(2), torch.zeros(2))",
        f"F.log_softmax({a}, -1, dtype=torch.float64)", f"F.softmin({a}, 0)",
        f"F.normalize({a}, dim=-1)", f"F.dropout({a}, 0.5, training=False)",
        f"F.glu({a}.repeat_interleave(2, -1), -1)", f"F.prelu({a}, torch.tensor([0.25]))",
        f"F.threshold({a}, 0.1, -2.0)", f"F.rrelu({a}, training=False)",
        f"torch.logcumsumexp({a}, 0)", f"torch.special.logsumexp({a}, 0)",
        f"torch.special.softmax({a}, -1)", f"torch.special.multigammaln({a}.abs() + 2, 2)",
        f"torch.special.polygamma(1, {a}.abs() + 1)", f"torch.mvlgamma({a}.abs() + 2, 1)",
    ]
    return f"{v} = " + rng.choice(forms)


SWEEP_KINDS = {f.__name__: f for f in (unarysweep, binarysweep, sweep)}
