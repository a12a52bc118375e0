"""Activations: sigmoid, relu, leaky_relu, gelu, softmax, log_softmax, masked_fill, dropout
(each rule written once, see ``dezero_kr.operators``; gathered by ``dezero_kr.functions_nn``)."""
import math
import numbers

import numpy as np

from dezero_kr import cuda
from dezero_kr.array_utils import rounded_to, widen
from dezero_kr.core import Config, Function, Variable, as_variable
from dezero_kr.operators import Elementwise, as_grad, operands
from dezero_kr.operators_shape import sum
from dezero_kr.functions_math import Masking, exp, tanh


def in_float32(*operands_):
    """A rule's array operands with float16 widened to float32 (``array_utils.widen``: the
    library's float16 policy); Variables (a recorded or forward-mode rule) as they are.

    A plain loop, no generator: it runs in every backward of the norms, softmax and
    attention, and float16 is the rare case (this form costs a third of the first one)."""
    half = False
    for a in operands_:
        if isinstance(a, Variable):
            return operands_
        half = half or a.dtype.char == 'e'
    return tuple([widen(a) for a in operands_]) if half else operands_


# =============================================================================
# Activations
# =============================================================================
def sigmoid_array(x):
    """The raw sigmoid of an array: 0.5 tanh(0.5 x) + 0.5, in one fresh array (float16 in
    float32: tanh rounds to -1 in float16 from x = -8, where y is still 3e-4)."""
    xp = cuda.get_array_module(x)
    y = xp.asarray(widen(x) * 0.5)  # a 0-d input gives a NumPy scalar: make it an array for out=
    xp.tanh(y, out=y)
    y *= 0.5
    y += 0.5
    return rounded_to(y, x.dtype)


class Sigmoid(Elementwise):
    """y = 1 / (1 + exp(-x)), computed as 0.5 tanh(0.5 x) + 0.5 (no overflow).  dL/dx = gy y (1 - y)."""
    __slots__ = ()

    def forward(self, x):
        return sigmoid_array(x)

    def _slope(self, x, y):
        # two factors: the gradient is (gy * y) * (1 - y), grouped as DeZero's gy * y * (1 - y)
        return y, 1 - y


def sigmoid(x):
    """Logistic sigmoid, elementwise: y = 1 / (1 + exp(-x)) in [0, 1], same shape and dtype as x
    (no overflow for large ``abs(x)``).  dL/dx = gy * y * (1 - y)."""
    return Sigmoid()(x)


def sigmoid_simple(x):
    """``1 / (1 + exp(-x))`` composed from exp, add and div (for teaching; overflows warn for x << 0)."""
    x = as_variable(x)
    return 1 / (1 + exp(-x))


class ReLU(Masking):
    """y = max(x, 0).  dL/dx = gy where x > 0, else exactly 0 (also at x == 0, as PyTorch, and
    where gy is inf or nan: see ``mask_grad``)."""
    __slots__ = ()

    def forward(self, x):
        return cuda.get_array_module(x).maximum(x, 0)

    def _slope(self, x, y):
        return x > 0  # bool: multiplying keeps gy's dtype


def relu(x):
    """Rectified linear unit, elementwise: y = max(x, 0), same shape and dtype as x.
    dL/dx = gy where x > 0, else exactly 0 (at x == 0 too)."""
    return ReLU()(x)


class LeakyReLU(Elementwise):
    """y = x for x > 0, slope * x otherwise.  dL/dx = gy * (1 or slope)."""
    __slots__ = ('slope',)

    def __init__(self, slope):
        self.slope = slope

    def forward(self, x):
        return cuda.get_array_module(x).where(x > 0, x, x * self.slope)

    def _slope(self, x, y):
        x = self.inputs[0].data  # piecewise constant: an array even while recording
        d = (x > 0).astype(x.dtype)
        d *= 1 - self.slope
        d += self.slope
        return d


def leaky_relu(x, slope=0.2):
    """Leaky ReLU, elementwise: y = x where x > 0, else slope * x; same shape and dtype as x.
    dL/dx = gy where x > 0, else gy * slope (the negative side at x == 0)."""
    return LeakyReLU(slope)(x)


GELU_C = math.sqrt(2.0 / math.pi)
GELU_A = 0.044715


class GELU(Elementwise):
    """GELU, tanh approximation (GPT-2): y = 0.5 x (1 + tanh(c (x + a x^3))), c = sqrt(2/pi), a = 0.044715.

    dL/dx = gy * (0.5 (1 + t) + 0.5 c x (1 - t^2) (1 + 3 a x^2)) with t = tanh(c (x + a x^3)).
    ``forward`` keeps ``t`` (one array the size of x), so a first-order backward
    needs no tanh (while a graph is recorded, t is rebuilt from x, differentiably).
    """
    __slots__ = ('t',)

    def forward(self, x):
        xp = cuda.get_array_module(x)
        dtype, x = x.dtype, widen(x)  # float16: x^3 overflows from |x| = 40
        u = x * x
        u *= GELU_A
        u += 1
        u *= x
        u *= GELU_C
        t = self.t = xp.tanh(u)
        xp.add(t, 1, out=u)
        u *= x
        u *= 0.5
        return rounded_to(u, dtype)

    def _slope(self, x, y):
        if not isinstance(x, Variable):
            return rounded_to(_gelu_slope_in_place(widen(x), self.t), x.dtype)
        t = tanh(GELU_C * (x + GELU_A * x * x * x))
        return 0.5 * (1 + t) + (0.5 * GELU_C) * x * (1 - t * t) * (1 + (3 * GELU_A) * x * x)


def _gelu_slope_in_place(x, t):
    """GELU's slope on arrays, with ``t`` cached by forward: the formula of ``GELU._slope``.

    An in-place fast path: two scratch arrays instead of six fresh temporaries,
    0.19 ms instead of 0.64 ms on (32, 16, 256) float32 (measured; GELU is in bench gpt).
    """
    s = x * x  # s = 0.5 c x (1 + 3 a x^2) (1 - t^2) + 0.5 (1 + t), built in place
    s *= 3 * GELU_A
    s += 1
    s *= x
    s *= 0.5 * GELU_C
    w = t * t
    cuda.get_array_module(w).subtract(1, w, out=w)
    s *= w
    cuda.get_array_module(w).multiply(t, 0.5, out=w)
    s += w
    s += 0.5
    return s


def gelu(x):
    """GELU (tanh approximation, as GPT-2), elementwise: y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
    same shape and dtype as x.  dL/dx: see ``GELU``."""
    return GELU()(x)


def _shift_by_max(x, axis):
    """``(x - m, m)`` with ``m`` the max along ``axis`` (kept), 0 where that max is not finite.

    For an all ``-inf`` row the shift is 0, so its exponentials are exactly 0 (not nan).
    """
    m = x.max(axis=axis, keepdims=True)
    m[~cuda.get_array_module(m).isfinite(m)] = 0
    return x - m, m


def sum_exp(e, axis):
    """``sum(e, axis)`` (kept), with 1 where the sum is 0 (an all ``-inf`` row) so dividing is safe."""
    s = e.sum(axis=axis, keepdims=True)
    s[s == 0] = 1
    return s


class Softmax(Function):
    """y = exp(x) / sum(exp(x), axis), shifted by the max (no overflow).

    ``-inf`` entries get exactly 0; a row that is entirely ``-inf`` gives all
    zeros (not nan).  dL/dx = y * (gy - sum(gy * y, axis)).
    """
    __slots__ = ('axis',)

    def __init__(self, axis=1):
        self.axis = axis

    def forward(self, x):
        y = _shift_by_max(widen(x), self.axis)[0]
        cuda.get_array_module(x).exp(y, out=y)
        y /= sum_exp(y, self.axis)
        return rounded_to(y, x.dtype)

    def _jacobian_times(self, g):
        """J g = y * (g - sum(g * y, axis)) for the (symmetric) softmax Jacobian J."""
        dtype = g.dtype
        y, g = in_float32(operands(self.outputs[0]())[0], g)
        yg = y * g
        return rounded_to(yg - y * yg.sum(axis=self.axis, keepdims=True), dtype)

    def backward(self, gy):
        return as_grad(self._jacobian_times(operands(gy)[0]), self.inputs[0])

    def jvp(self, dx):
        return self._jacobian_times(dx)


def softmax(x, axis=1):
    """Softmax along ``axis``: y = exp(x) / sum(exp(x), axis), same shape and dtype as x; each
    slice along ``axis`` sums to 1 (no overflow; ``-inf`` entries get exactly 0).
    dL/dx = y * (gy - sum(gy * y, axis))."""
    return Softmax(axis)(x)


def softmax_simple(x, axis=1):
    """Softmax composed from exp, sum and div; shifted by the (constant) row max."""
    x = as_variable(x)
    y = exp(x - x.data.max(axis=axis, keepdims=True))
    return y / sum(y, axis, keepdims=True)


class LogSoftmax(Function):
    """y = x - logsumexp(x, axis).  dL/dx = gy - exp(y) * sum(gy, axis).

    An all ``-inf`` row stays ``-inf`` (not nan), and its gradient stays finite.
    """
    __slots__ = ('axis',)

    def __init__(self, axis=1):
        self.axis = axis

    def forward(self, x):
        xp = cuda.get_array_module(x)
        y = _shift_by_max(widen(x), self.axis)[0]
        y -= xp.log(sum_exp(xp.exp(y), self.axis))
        return rounded_to(y, x.dtype)

    def _p(self):
        """softmax(x) = exp(y)."""
        y, = operands(self.outputs[0]())
        return exp(y) if isinstance(y, Variable) else cuda.get_array_module(y).exp(widen(y))

    def backward(self, gy):
        g, = operands(gy)
        dtype = g.dtype
        g, p = in_float32(g, self._p())
        return as_grad(rounded_to(g - p * g.sum(axis=self.axis, keepdims=True), dtype), self.inputs[0])

    def jvp(self, dx):
        return dx - sum(self._p() * dx, self.axis, keepdims=True)


def log_softmax(x, axis=1):
    """Log of the softmax along ``axis``: y = x - log(sum(exp(x), axis)), same shape and dtype as x
    (computed without overflow).  dL/dx = gy - softmax(x) * sum(gy, axis)."""
    return LogSoftmax(axis)(x)


class MaskedFill(Masking):
    """y = value where mask else x (mask broadcast to x's shape).  dL/dx = gy where not mask, else 0.

    With ``value=-inf`` before ``softmax`` this is the causal-attention mask.
    """
    __slots__ = ('mask', 'value')

    def __init__(self, mask, value):
        self.mask = mask
        self.value = value

    def forward(self, x):
        xp = cuda.get_array_module(x)
        return xp.where(self.mask, xp.asarray(self.value, dtype=x.dtype), x)

    def _slope(self, x, y):
        return ~self.mask


def masked_fill(x, mask, value):
    """Replace the elements of ``x`` where the bool array ``mask`` is True by ``value``."""
    x = as_variable(x)
    mask = mask.data if isinstance(mask, Variable) else mask
    mask = cuda.get_array_module(x.data).asarray(mask, dtype=bool)
    try:
        ok = np.broadcast_shapes(mask.shape, x.shape) == x.shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f'masked_fill: mask of shape {mask.shape} does not broadcast to x of shape '
                         f'{x.shape}')
    return MaskedFill(mask, value)(x)


# =============================================================================
# Dropout
# =============================================================================
class Dropout(Elementwise):
    """Inverted dropout: y = x * mask / (1 - ratio), mask ~ Bernoulli(1 - ratio).

    dL/dx = gy * mask / (1 - ratio).  The mask is drawn as ``rand(*x.shape) > ratio``
    from NumPy's global RNG (float64 uniforms, whatever x's dtype, so a seed gives
    the same mask in float32 and float64) and kept as a bool array.
    """
    __slots__ = ('ratio', 'keep')

    def __init__(self, ratio):
        self.ratio = ratio

    def forward(self, x):
        xp = cuda.get_array_module(x)
        self.keep = xp.random.rand(*x.shape) > self.ratio
        y = x * self.keep  # bool * float keeps x's dtype
        y *= 1.0 / (1.0 - self.ratio)
        return y

    def _slope(self, x, y):
        slope = self.keep.astype(self.inputs[0].dtype)  # x's dtype: float32 stays float32
        slope *= 1.0 / (1.0 - self.ratio)
        return slope


def dropout(x, dropout_ratio=0.5):
    """Drop each element with probability ``dropout_ratio`` while ``Config.train``; identity in test mode.

    Uses NumPy's global RNG (``np.random.seed`` makes it reproducible).
    """
    x = as_variable(x)
    if isinstance(dropout_ratio, (bool, np.bool_)) or not isinstance(dropout_ratio, numbers.Real):
        raise TypeError(f'dropout: dropout_ratio must be a real number in [0, 1), got {dropout_ratio!r} '
                        f'of type {type(dropout_ratio).__name__}')
    if not 0 <= dropout_ratio < 1:
        raise ValueError(f'dropout: dropout_ratio must be in [0, 1), got {dropout_ratio}')
    if not Config.train or dropout_ratio == 0:
        return x
    return Dropout(dropout_ratio)(x)
