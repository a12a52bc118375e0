"""Neural-network functions: activations, losses, normalisation, dropout,
embedding and attention.

Each operation is a ``Function`` subclass with ``forward`` (raw arrays),
``backward`` (reverse mode) and ``jvp`` (forward mode), written once as the
rule idiom of ``dezero_kr.operators`` says, plus a lowercase wrapper. A few
names are documented *compositions* of other operations instead (the
``_simple`` teaching variants, ``binary_cross_entropy``, ``cross_entropy``,
``embed_id``, ``scaled_dot_product_attention``); their derivatives come from
their parts.

Every derivative is written once (see "how a rule is written" in
``dezero_kr.operators``): the elementwise ops give ``forward`` and ``_slope``
(``Elementwise`` / ``Masking`` derive backward and jvp from it); the others
keep ``backward`` and ``jvp`` side by side around a shared helper.  The rules
run on ``operands``: arrays on a first-order backward, Variables while a graph
is recorded; values ``forward`` computed anyway (the attention
probabilities, the normalised x, the softmax of the loss) come back through
``cached_or_rebuilt``.  Two measured in-place fast paths restate a formula
on arrays, each in one helper: ``_gelu_slope_in_place`` and
``_attention_vjp_packed``.

Losses check integer labels up front (dtype, shape, range) and name the
function and the shapes in the error.
"""
import math
import numbers
import warnings

import numpy as np

from dezero_kr import cuda
from dezero_kr.array_utils import rounded_to, sum_to as _sum_to_array, widen
from dezero_kr.core import Config, Function, Variable, as_variable, no_grad, state_lock
from dezero_kr.operators import (Elementwise, add_tangents, as_grad, broadcast_to, cached_or_rebuilt,
                                 get_item, matmul, operands, reshape, sum, sum_to)
from dezero_kr.functions_math import Masking, clip, exp, log, mean, stack, tanh


_xp = cuda.get_array_module  # numpy, or cupy for CuPy arrays


def _in_float32(*operands_):
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
# Input checks shared by the losses
# =============================================================================
def _check_labels(fname, t, x_shape, n_classes):
    """Integer class labels ``t`` of shape ``(N,)`` in ``[0, n_classes)`` for scores of ``x_shape``."""
    t = t.data if isinstance(t, Variable) else t
    if not hasattr(t, 'dtype'):
        raise TypeError(f'{fname}: t must be an integer array of labels, got {type(t).__name__}')
    if t.dtype.kind not in 'iu':
        raise TypeError(f'{fname}: t must hold integer class labels, got dtype {t.dtype} '
                        f'(shape {t.shape}); for probability targets see cross_entropy')
    n = x_shape[0]
    if t.shape != (n,):
        raise ValueError(f'{fname}: t has shape {t.shape} but x has shape {x_shape}; '
                         f'expected labels of shape ({n},)')
    if t.size and not _labels_in_range(t, n_classes):
        raise ValueError(f'{fname}: labels must be in [0, {n_classes}) for x of shape {x_shape}, '
                         f'got values from {t.min()} to {t.max()} (dtype {t.dtype})')
    return t


def _labels_in_range(t, n_classes):
    """Whether every integer label is in ``[0, n_classes)``, checked on the values for any dtype."""
    if t.dtype.kind == 'u':
        return t.max() < n_classes
    if n_classes <= 1 << (8 * t.dtype.itemsize - 1):
        # One pass: viewed as unsigned, a negative label becomes >= 2**(bits-1) >= n_classes,
        # so max() < n_classes checks both ends.  Only valid for n_classes that small:
        # with 1000 classes an int8 -1 (255 unsigned) would pass, hence the two-sided check below.
        return t.view(f'u{t.dtype.itemsize}').max() < n_classes
    return t.min() >= 0 and t.max() < n_classes


def _check_2d(fname, x):
    if x.ndim != 2:
        raise ValueError(f'{fname}: x must be 2-D (N, C), got shape {x.shape}; '
                         f'reshape it to (-1, C) and flatten the labels')


def _one_hot(t, n_classes, dtype, xp):
    out = xp.zeros((t.shape[0], n_classes), dtype=dtype)
    out[xp.arange(t.shape[0]), t] = 1
    return out


# =============================================================================
# Activations
# =============================================================================
def _sigmoid_array(x):
    """The raw sigmoid of an array: 0.5 tanh(0.5 x) + 0.5, in one fresh array (float16 in
    float32: tanh rounds to -1 in float16 from x = -8, where y is still 3e-4)."""
    xp = _xp(x)
    y = xp.asarray(widen(x) * 0.5)  # a 0-d input gives a NumPy scalar: make it an array for out=
    xp.tanh(y, out=y)
    y *= 0.5
    y += 0.5
    return rounded_to(y, x.dtype)


class Sigmoid(Elementwise):
    """y = 1 / (1 + exp(-x)), computed as 0.5 tanh(0.5 x) + 0.5 (no overflow).  dL/dx = gy y (1 - y)."""
    __slots__ = ()

    def forward(self, x):
        return _sigmoid_array(x)

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
        return _xp(x).maximum(x, 0)

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
        return _xp(x).where(x > 0, x, x * self.slope)

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


_GELU_C = math.sqrt(2.0 / math.pi)
_GELU_A = 0.044715


class GELU(Elementwise):
    """GELU, tanh approximation (GPT-2): y = 0.5 x (1 + tanh(c (x + a x^3))), c = sqrt(2/pi), a = 0.044715.

    dL/dx = gy * (0.5 (1 + t) + 0.5 c x (1 - t^2) (1 + 3 a x^2)) with t = tanh(c (x + a x^3)).
    ``forward`` keeps ``t`` (one array the size of x), so a first-order backward
    needs no tanh (while a graph is recorded, t is rebuilt from x, differentiably).
    """
    __slots__ = ('t',)

    def forward(self, x):
        xp = _xp(x)
        dtype, x = x.dtype, widen(x)  # float16: x^3 overflows from |x| = 40
        u = x * x
        u *= _GELU_A
        u += 1
        u *= x
        u *= _GELU_C
        t = self.t = xp.tanh(u)
        xp.add(t, 1, out=u)
        u *= x
        u *= 0.5
        return rounded_to(u, dtype)

    def _slope(self, x, y):
        if not isinstance(x, Variable):
            return rounded_to(_gelu_slope_in_place(widen(x), self.t), x.dtype)
        t = tanh(_GELU_C * (x + _GELU_A * x * x * x))
        return 0.5 * (1 + t) + (0.5 * _GELU_C) * x * (1 - t * t) * (1 + (3 * _GELU_A) * x * x)


def _gelu_slope_in_place(x, t):
    """GELU's slope on arrays, with ``t`` cached by forward: the formula of ``GELU._slope``.

    An in-place fast path: two scratch arrays instead of six fresh temporaries,
    0.19 ms instead of 0.64 ms on (32, 16, 256) float32 (measured; GELU is in bench gpt).
    """
    s = x * x  # s = 0.5 c x (1 + 3 a x^2) (1 - t^2) + 0.5 (1 + t), built in place
    s *= 3 * _GELU_A
    s += 1
    s *= x
    s *= 0.5 * _GELU_C
    w = t * t
    _xp(w).subtract(1, w, out=w)
    s *= w
    _xp(w).multiply(t, 0.5, out=w)
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
    m[~_xp(m).isfinite(m)] = 0
    return x - m, m


def _sum_exp(e, axis):
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
        _xp(x).exp(y, out=y)
        y /= _sum_exp(y, self.axis)
        return rounded_to(y, x.dtype)

    def _jacobian_times(self, g):
        """J g = y * (g - sum(g * y, axis)) for the (symmetric) softmax Jacobian J."""
        dtype = g.dtype
        y, g = _in_float32(operands(self.outputs[0]())[0], g)
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
        xp = _xp(x)
        y = _shift_by_max(widen(x), self.axis)[0]
        y -= xp.log(_sum_exp(xp.exp(y), self.axis))
        return rounded_to(y, x.dtype)

    def _p(self):
        """softmax(x) = exp(y)."""
        y, = operands(self.outputs[0]())
        return exp(y) if isinstance(y, Variable) else _xp(y).exp(widen(y))

    def backward(self, gy):
        g, = operands(gy)
        dtype = g.dtype
        g, p = _in_float32(g, self._p())
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
        xp = _xp(x)
        return xp.where(self.mask, xp.asarray(self.value, dtype=x.dtype), x)

    def _slope(self, x, y):
        return ~self.mask


def masked_fill(x, mask, value):
    """Replace the elements of ``x`` where the bool array ``mask`` is True by ``value``."""
    x = as_variable(x)
    mask = mask.data if isinstance(mask, Variable) else mask
    mask = _xp(x.data).asarray(mask, dtype=bool)
    try:
        ok = np.broadcast_shapes(mask.shape, x.shape) == x.shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f'masked_fill: mask of shape {mask.shape} does not broadcast to x of shape '
                         f'{x.shape}')
    return MaskedFill(mask, value)(x)


def causal_mask(t_q, t_k=None, xp=np):
    """Bool ``(t_q, t_k)`` mask, True above the (bottom-right aligned) diagonal: future keys.

    Query i sits at position ``t_k - t_q + i`` of the key sequence (the queries
    are its last ``t_q`` positions, as when decoding with a KV cache) and sees
    keys ``0 .. t_k - t_q + i``.  PyTorch's ``is_causal=True`` aligns top-left
    instead (query i sees keys ``0 .. i``); the two agree when ``t_q == t_k``.
    With ``t_q > t_k`` the first ``t_q - t_k`` rows hide every key (their output is 0).
    """
    t_k = t_q if t_k is None else t_k
    return xp.triu(xp.ones((t_q, t_k), dtype=bool), k=t_k - t_q + 1)


def _swap_last(a):
    """The matrix transpose of a batch (last two axes) of an array or a Variable."""
    return a.transpose(tuple(range(a.ndim - 2)) + (a.ndim - 1, a.ndim - 2))


def _attend(q, k, v, hidden, scale):
    """Raw forward of attention: (P v, P) with P = softmax(q k^T * scale, -inf where hidden).

    The scores are masked, shifted, exponentiated and normalised in place.
    """
    xp = _xp(q)
    s = q @ _swap_last(k)
    s *= scale
    if hidden is not None:
        xp.copyto(s, -xp.inf, where=hidden)
    m = s.max(axis=-1, keepdims=True)
    m[~xp.isfinite(m)] = 0  # an all-hidden row: exp(-inf - 0) = 0, not nan
    s -= m
    xp.exp(s, out=s)
    s /= _sum_exp(s, -1)
    return s @ v, s


def _attention_probs(q, k, hidden, scale):
    """P as a composition of Variables (softmax of the masked, scaled scores): differentiable."""
    s = matmul(q, _swap_last(k)) * scale
    if hidden is not None:
        s = masked_fill(s, hidden, -np.inf)
    return softmax(s, axis=-1)


def _through_softmax(p, g):
    """The softmax Jacobian (symmetric) applied to g: P * (g - sum(g * P, -1))."""
    return p * (g - (g * p).sum(axis=-1, keepdims=True))


def _attention_vjp(q, k, v, p, g, scale):
    """(dq, dk, dv) for y = P v: dS = scale P * (dP - sum(dP * P)), dP = g v^T;
    dq = dS k, dk = dS^T q, dv = P^T g.  Arrays, or Variables while a graph is recorded."""
    ds = _through_softmax(p, g @ _swap_last(v)) * scale
    return ds @ k, _swap_last(ds) @ q, _swap_last(p) @ g


def _attention_jvp(q, k, v, p, dq, dk, dv, scale):
    """Tangent of y = P v: dP v + P dv, dP = softmax Jacobian (scale (dq k^T + q dk^T))."""
    t = None
    if dq is not None or dk is not None:
        ds = add_tangents(None if dq is None else dq @ _swap_last(k),
                          None if dk is None else q @ _swap_last(dk))
        t = _through_softmax(p, ds * scale) @ v
    if dv is not None:
        t = add_tangents(t, p @ dv)
    return t


class ScaledDotProductAttention(Function):
    """y = P v with P = softmax(s, axis=-1), s = q k^T * scale, s = -inf where ``hidden``.

    q ``(..., Tq, d)``, k ``(..., Tk, d)``, v ``(..., Tk, dv)``; ``hidden`` a bool
    array broadcastable to ``(..., Tq, Tk)`` or None.  With dS = P * (dP - sum(dP * P, -1)),
    dP = gy v^T:  dL/dq = scale dS k,  dL/dk = scale dS^T q,  dL/dv = P^T gy.
    One op instead of the six of the composition (matmul, transpose, scale, mask,
    softmax, matmul).  While a graph is recorded, P is rebuilt from that
    composition, so the gradient is differentiable again.
    """
    __slots__ = ('hidden', 'scale', 'p')

    def __init__(self, hidden, scale):
        self.hidden = hidden
        self.scale = scale

    def forward(self, q, k, v):
        y, self.p = _attend(widen(q), widen(k), widen(v), self.hidden, self.scale)  # float16: float32
        return rounded_to(y, np.result_type(q.dtype, k.dtype, v.dtype))

    def _operands(self):
        """(q, k, v, P): Variables and a differentiable P while recording, else arrays and the cached P."""
        q, k, v = operands(*self.inputs)
        return q, k, v, cached_or_rebuilt(self.p, lambda: _attention_probs(q, k, self.hidden, self.scale))

    def backward(self, gy):
        q, k, v, p = self._operands()
        grads = _attention_vjp(*_in_float32(q, k, v, p, operands(gy)[0]), self.scale)
        return tuple(as_grad(rounded_to(g, x.dtype), x) for g, x in zip(grads, self.inputs))

    def jvp(self, dq, dk, dv):
        q, k, v, p = self._operands()
        return _attention_jvp(q, k, v, p, dq, dk, dv, self.scale)


def _split_heads(qkv, n_head):
    """(B, T, 3C) packed [q | k | v] -> q, k, v of shape (B, H, T, C / H); views of an array or Variables."""
    B, T, C3 = qkv.shape
    heads = qkv.reshape((B, T, 3, n_head, C3 // (3 * n_head))).transpose((2, 0, 3, 1, 4))
    return heads[0], heads[1], heads[2]


def _heads_view(y, n_head):
    """(B, T, C) -> (B, H, T, C / H): the heads of y (a view of an array: writing a head writes y)."""
    B, T, C = y.shape
    return y.reshape((B, T, n_head, C // n_head)).transpose((0, 2, 1, 3))


def _merge_heads(y):
    """(B, H, T, D) -> (B, T, H D): the heads side by side again."""
    B, H, T, D = y.shape
    return y.transpose((0, 2, 1, 3)).reshape((B, T, H * D))


class MultiHeadAttention(Function):
    """Multi-head attention on packed projections: qkv (B, T, 3C) -> y (B, T, C).

    q, k, v = the column blocks 0:C, C:2C, 2C:3C of qkv, each split into H heads
    of width D = C / H; y = the heads of ``ScaledDotProductAttention`` side by side.
    dL/dqkv packs (dq, dk, dv) of that rule the same way.  The head split and
    merge happen on array views inside the op: one node instead of eight
    (reshape, transpose, three slices, attention, transpose, reshape); forward +
    backward on microgpt's (1, 12, 48) take 96 us instead of 190 us (measured).
    """
    __slots__ = ('n_head', 'hidden', 'scale', 'p')

    def __init__(self, n_head, hidden, scale):
        self.n_head = n_head
        self.hidden = hidden
        self.scale = scale

    def forward(self, qkv):
        q, k, v = _split_heads(widen(qkv), self.n_head)  # float16: computed in float32
        y, self.p = _attend(q, k, v, self.hidden, self.scale)
        return rounded_to(_merge_heads(y), qkv.dtype)

    def _operands(self):
        """(q, k, v, P) of the heads: as ``ScaledDotProductAttention._operands``."""
        q, k, v = _split_heads(operands(self.inputs[0])[0], self.n_head)
        return q, k, v, cached_or_rebuilt(self.p, lambda: _attention_probs(q, k, self.hidden, self.scale))

    def backward(self, gy):
        q, k, v, p = self._operands()
        g, = operands(gy)
        if not isinstance(g, Variable):
            gqkv = _attention_vjp_packed(*_in_float32(q, k, v, p, g), self.n_head, self.scale)
            return Variable(rounded_to(gqkv, self.inputs[0].dtype))
        B, T, C = g.shape
        grads = _attention_vjp(q, k, v, p, _heads_view(g, self.n_head), self.scale)
        return as_grad(stack(grads).transpose((1, 3, 0, 2, 4)).reshape((B, T, 3 * C)), self.inputs[0])

    def jvp(self, dqkv):
        q, k, v, p = self._operands()
        dq, dk, dv = _split_heads(dqkv, self.n_head)
        return _merge_heads(_attention_jvp(q, k, v, p, dq, dk, dv, self.scale))


def _attention_vjp_packed(q, k, v, p, gy, n_head, scale):
    """``_attention_vjp`` on arrays, written into the packed (B, T, 3C) gradient of qkv.

    An in-place fast path: dS is built in the dP buffer and dq, dk, dv are
    multiplied straight into their column blocks (no stack, no packing copy);
    MultiHeadAttention's backward in bench gpt: 0.47 instead of 0.65 ms a step (measured).
    """
    g = _heads_view(gy, n_head)
    xp = _xp(gy)
    gqkv = xp.empty(gy.shape[:2] + (3 * gy.shape[2],), dtype=xp.result_type(gy, p))
    dq, dk, dv = _split_heads(gqkv, n_head)  # views into gqkv
    ds = g @ _swap_last(v)  # dP, then dS = scale P * (dP - sum(dP * P)) in its buffer
    ds -= (ds * p).sum(axis=-1, keepdims=True)
    ds *= p
    ds *= scale
    xp.matmul(ds, k, out=dq)
    xp.matmul(_swap_last(ds), q, out=dk)
    xp.matmul(_swap_last(p), g, out=dv)
    return gqkv


_causal_masks = {}


def _cached_causal_mask(t_q, t_k):
    # The same few (Tq, Tk) come back every step: build each mask once (read-only, shared).
    mask = _causal_masks.get((t_q, t_k))
    if mask is None:
        mask = causal_mask(t_q, t_k)
        mask.flags.writeable = False
        _causal_masks[(t_q, t_k)] = mask
    return mask


def scaled_dot_product_attention(q, k, v, mask=None, causal=False):
    """``softmax(q k^T / sqrt(d) masked, axis=-1) v``, one ``ScaledDotProductAttention`` op.

    q ``(..., Tq, d)``, k ``(..., Tk, d)``, v ``(..., Tk, dv)`` -> ``(..., Tq, dv)``.
    ``mask``: bool array broadcastable to ``(..., Tq, Tk)``, True = not attended.
    ``causal=True`` hides future keys, aligned bottom-right when ``Tq != Tk`` (the
    queries are the last Tq positions, as with a KV cache; see ``causal_mask``;
    PyTorch's ``is_causal`` aligns top-left).  Masked scores are ``-inf``, so they get
    exactly zero weight and no gradient; a row with every key hidden gives 0.
    """
    q, k, v = as_variable(q), as_variable(k), as_variable(v)
    xp = _xp(q.data)
    hidden = None
    if causal:
        t_q, t_k = q.shape[-2], k.shape[-2]
        hidden = _cached_causal_mask(t_q, t_k) if xp is np else causal_mask(t_q, t_k, xp)
    if mask is not None:
        mask = xp.asarray(mask.data if isinstance(mask, Variable) else mask, dtype=bool)
        hidden = mask if hidden is None else hidden | mask
    if hidden is not None:
        try:
            scores = np.broadcast_shapes(q.shape[:-1], k.shape[:-2] + (1,)) + k.shape[-2:-1]
            ok = np.broadcast_shapes(hidden.shape, scores) == scores
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f'scaled_dot_product_attention: mask of shape {hidden.shape} does not '
                             f'broadcast to the scores of q {q.shape} and k {k.shape}')
    return ScaledDotProductAttention(hidden, 1.0 / math.sqrt(q.shape[-1]))(q, k, v)


def multi_head_attention(qkv, n_head, causal=False):
    """Attention of ``n_head`` heads on packed projections: qkv ``(B, T, 3C)`` -> ``(B, T, C)``.

    The same as splitting qkv into q, k, v (columns 0:C, C:2C, 2C:3C), each into
    heads ``(B, H, T, C / H)``, calling ``scaled_dot_product_attention(q, k, v,
    causal=causal)`` and putting the heads side by side again; one op.  ``n_head``
    not a positive int, or a width not divisible by ``3 n_head``: ValueError.
    """
    qkv = as_variable(qkv)
    if (isinstance(n_head, (bool, np.bool_)) or not isinstance(n_head, numbers.Integral)
            or n_head < 1):
        raise ValueError(f'multi_head_attention: n_head must be a positive int, got {n_head!r}')
    if qkv.ndim != 3 or qkv.shape[-1] % (3 * n_head):
        raise ValueError(f'multi_head_attention: qkv must have shape (B, T, 3C) with C divisible by '
                         f'n_head={n_head}, got {qkv.shape}')
    T = qkv.shape[1]
    xp = _xp(qkv.data)
    hidden = None
    if causal:
        hidden = _cached_causal_mask(T, T) if xp is np else causal_mask(T, T, xp)
    d = qkv.shape[-1] // (3 * n_head)
    return MultiHeadAttention(n_head, hidden, 1.0 / math.sqrt(d))(qkv)


# =============================================================================
# Losses
# =============================================================================
def _batch_size(shape):
    # DeZero divides by len(x): the batch size, or 1 for a 0-d input.
    return shape[0] if len(shape) else 1


class MeanSquaredError(Function):
    """y = sum((x0 - x1)^2) / len(x0 - x1) (DeZero divides by the batch size, not the element count).

    Broadcasting shapes are allowed: dL/dx0 = sum_to(2 gy (x0 - x1) / N, x0.shape), dL/dx1 = -(same for x1).
    """
    __slots__ = ()

    def forward(self, x0, x1):
        dtype = np.result_type(x0.dtype, x1.dtype)
        diff = widen(x0) - widen(x1)  # float16: squares overflow from 256
        return rounded_to((diff * diff).sum() / _batch_size(diff.shape), dtype)

    def _slope(self):
        """dy/dx0 = 2 (x0 - x1) / N (and dy/dx1 = -dy/dx0), broadcast shape."""
        a0, a1 = operands(*self.inputs)
        d = a0 - a1
        return d * (2 / _batch_size(d.shape))

    def backward(self, gy):
        x0, x1 = self.inputs
        g = operands(gy)[0] * self._slope()  # elementwise: float16 as is
        gx0 = as_grad(g, x0) if x0.requires_grad else None
        gx1 = as_grad(-g, x1) if x1.requires_grad else None
        return gx0, gx1

    def jvp(self, dx0, dx1):
        s = self._slope()
        t0 = None if dx0 is None else sum(dx0 * s)
        t1 = None if dx1 is None else -sum(dx1 * s)
        return add_tangents(t0, t1)


def mean_squared_error(x0, x1):
    """``sum((x0 - x1)^2) / len(x0 - x1)``, a 0-d Variable of the inputs' dtype (DeZero divides by
    the batch size N, not the element count; x0 and x1 broadcast).  dL/dx0 = 2 gy (x0 - x1) / N,
    summed to x0's shape; dL/dx1 = the negative, summed to x1's shape."""
    return MeanSquaredError()(x0, x1)


def mean_squared_error_simple(x0, x1):
    """``sum((x0 - x1)**2) / len(diff)`` composed from sub, pow, sum and div."""
    x0, x1 = as_variable(x0), as_variable(x1)
    diff = x0 - x1
    return sum(diff ** 2) / _batch_size(diff.shape)


class SoftmaxCrossEntropy(Function):
    """Mean over the batch of ``-log softmax(x)[i, t_i]``; x (N, C) logits, t (N,) int labels.

    Each row's ``log softmax(x)[i, t_i]`` is ``(x[i, t_i] - m_i) - log s_i`` with ``m_i`` the
    row's max and ``s_i = sum(exp(x[i] - m_i))``: no overflow, and no ``log s_i`` lost next to
    a huge ``m_i`` (DeZero's ``x[i, t_i] - (m_i + log s_i)`` is 0 for the logits ``[1e8, 1e8]``
    in float32).  dL/dx = (softmax(x) - onehot(t)) (gy / N), the softmax as ``exp(x - m) / s``.
    """
    __slots__ = ('m', 's')

    def forward(self, x, t):
        xp = _xp(x)
        n = x.shape[0]
        dtype, x = x.dtype, widen(x)
        m = x.max(axis=1, keepdims=True)
        z = x - m
        s = xp.exp(z).sum(axis=1, keepdims=True)
        loss = -(z[xp.arange(n), t] - xp.log(s)[:, 0]).sum() / n
        self.m, self.s = m, s  # (N, 1) each: softmax(x) = exp(x - m) / s in the rules
        return rounded_to(loss, dtype)  # a scalar of x's dtype (float32 stays float32)

    def _slope(self):
        """(softmax(x) - onehot(t), 1 / N), shape (N, C) and a float: dy/dx is their product."""
        x, t = self.inputs
        n, c = x.shape
        a, = operands(x)
        if isinstance(a, Variable):
            p = softmax(a)
        else:  # DeZero's softmax: exp(x - m) / s, with the forward's m and s
            p = _xp(a).exp(widen(a) - self.m)
            p /= self.s
        return p - _one_hot(t.data, c, p.dtype, _xp(x.data)), 1 / n

    def backward(self, gy):
        x = self.inputs[0]
        d, inv_n = self._slope()
        # grouped as DeZero's (softmax(x) - onehot(t)) * (gy * (1 / N))
        return as_grad(rounded_to(d * (operands(gy)[0] * inv_n), x.dtype), x), None

    def jvp(self, dx, dt=None):
        if dx is None:
            return None
        d, inv_n = self._slope()
        return sum(dx * d) * inv_n


def softmax_cross_entropy(x, t):
    """Mean cross entropy of logits ``x`` (N, C) against integer labels ``t`` (N,)."""
    x = as_variable(x)
    _check_2d('softmax_cross_entropy', x)
    t = _check_labels('softmax_cross_entropy', t, x.shape, x.shape[1])
    return SoftmaxCrossEntropy()(x, t)


def softmax_cross_entropy_simple(x, t):
    """``-mean(log(clip(softmax(x), 1e-15, 1))[i, t_i])`` composed from softmax, clip, log, indexing."""
    x = as_variable(x)
    _check_2d('softmax_cross_entropy_simple', x)
    t = _check_labels('softmax_cross_entropy_simple', t, x.shape, x.shape[1])
    n = x.shape[0]
    p = clip(softmax(x), 1e-15, 1.0)
    tlog_p = log(p)[_xp(t).arange(n), t]
    return -sum(tlog_p) / n


def _as_target(fname, t, like):
    """Targets shaped like ``like`` (reshaped as DeZero does), cast to its float dtype."""
    if isinstance(t, Variable):
        if t.size != like.size:
            raise ValueError(f'{fname}: t has shape {t.shape} but x has shape {like.shape}')
        return reshape(t, like.shape)
    t = _xp(like.data).asarray(t)
    if t.size != like.size:
        raise ValueError(f'{fname}: t has shape {t.shape} but x has shape {like.shape}')
    return t.reshape(like.shape).astype(like.dtype, copy=False)


class SigmoidCrossEntropy(Function):
    """Binary cross entropy on logits, summed and divided by len(x):
    ``sum(max(x, 0) - x t + log(1 + exp(-|x|))) / N`` (stable for any x).

    dL/dx = gy (sigmoid(x) - t) / N,  dL/dt = -gy x / N.
    """
    __slots__ = ()

    def forward(self, x, t):
        xp = _xp(x)
        dtype, x, t = np.result_type(x.dtype, t.dtype), widen(x), widen(t)
        loss = xp.maximum(x, 0)
        loss -= x * t
        loss += xp.log1p(xp.exp(-xp.abs(x)))
        return rounded_to(loss.sum() / _batch_size(x.shape), dtype)

    def _slope_x(self):
        """dy/dx = (sigmoid(x) - t) / N."""
        x, t = operands(*self.inputs)
        p = sigmoid(x) if isinstance(x, Variable) else _sigmoid_array(x)
        return (p - t) * (1 / _batch_size(x.shape))

    def _slope_t(self):
        """dy/dt = -x / N."""
        x, = operands(self.inputs[0])
        return x * (-1 / _batch_size(x.shape))

    def backward(self, gy):
        x, t = self.inputs
        g, = operands(gy)
        gx = as_grad(g * self._slope_x(), x) if x.requires_grad else None
        gt = as_grad(g * self._slope_t(), t) if t.requires_grad else None
        return gx, gt

    def jvp(self, dx, dt):
        return add_tangents(None if dx is None else sum(dx * self._slope_x()),
                            None if dt is None else sum(dt * self._slope_t()))


def sigmoid_cross_entropy(x, t):
    """Mean (over len(x)) binary cross entropy of logits ``x`` against 0/1 (or probability) targets ``t``."""
    x = as_variable(x)
    return SigmoidCrossEntropy()(x, _as_target('sigmoid_cross_entropy', t, x))


def _log_eps(dtype):
    # Smallest probability kept before log: tiny enough not to bias, large
    # enough that 1 - eps is still below 1 in the dtype.
    return float(np.finfo(dtype).eps) if np.dtype(dtype).kind == 'f' else 1e-15


def binary_cross_entropy(p, t):
    """``-sum(t log p + (1 - t) log(1 - p)) / len(p)`` for probabilities ``p`` (a composition).

    ``p`` is clipped to ``[eps, 1 - eps]`` (eps = the dtype's machine epsilon), so
    the loss stays finite at 0 and 1 and the gradient is 0 outside that band.
    """
    p = as_variable(p)
    t = _as_target('binary_cross_entropy', t, p)
    eps = _log_eps(p.dtype)
    p = clip(p, eps, 1.0 - eps)
    tlog_p = t * log(p) + (1 - t) * log(1 - p)
    return -sum(tlog_p) / _batch_size(p.shape)


def cross_entropy(p, t):
    """Mean cross entropy of probabilities ``p`` (N, C) (a composition; p clipped below at eps).

    ``t`` is either integer labels (N,) -> ``-mean(log p[i, t_i])``, or a
    float array (N, C) of one-hot / probability targets -> ``-sum(t log p) / N``.
    """
    p = as_variable(p)
    _check_2d('cross_entropy', p)
    n = p.shape[0]
    t_data = t.data if isinstance(t, Variable) else t
    log_p = log(clip(p, _log_eps(p.dtype), 1.0))
    if getattr(t_data, 'ndim', 0) == 1:  # labels (checked: an int dtype is required)
        t = _check_labels('cross_entropy', t_data, p.shape, p.shape[1])
        return -sum(log_p[_xp(t).arange(n), t]) / n
    if not isinstance(t, Variable):
        t = _xp(p.data).asarray(t).astype(p.dtype, copy=False)
    if t.shape != p.shape:
        raise ValueError(f'cross_entropy: probability targets t have shape {t.shape} but p has '
                         f'shape {p.shape}; pass int labels of shape ({n},) or targets of shape {p.shape}')
    return -sum(t * log_p) / n


class _Accuracy(Function):
    """accuracy's value as an operation, so ``static_graph`` replays its forward at every call
    (a value computed outside an operation would be a constant of the plan).  Piecewise
    constant in y: its gradient and tangent are zero (None); ``accuracy`` calls it under
    ``no_grad``, so its result is a leaf, as before."""
    __slots__ = ()
    backward_reads_values = False

    def forward(self, y, t):
        pred = y.argmax(axis=1)
        dtype = y.dtype if y.dtype.kind == 'f' else np.float64
        return _xp(y).asarray((pred == t).mean(), dtype=dtype)

    def backward(self, gy):
        return None, None

    def jvp(self, dy, dt):
        return None


def accuracy(y, t):
    """Fraction of rows where ``argmax(y, axis=1) == t`` (not differentiable); a 0-d Variable
    with no creator."""
    y_data = y.data if isinstance(y, Variable) else y
    if y_data.ndim != 2:
        raise ValueError(f'accuracy: y must be 2-D (N, C) scores, got shape {y_data.shape}')
    t_data = _check_labels('accuracy', t, y_data.shape, y_data.shape[1])
    with no_grad():
        return _Accuracy()(y, t_data)


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
        xp = _xp(x)
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


# =============================================================================
# Normalisation (batch norm, layer norm, RMS norm)
# =============================================================================
class _Normalize(Function):
    """Shared math of the normalisations, over the reduction axes ``axes``:

    xhat = (x - mean) / sqrt(var + eps)   (``center=False``: x / sqrt(mean(x^2) + eps))
    y    = xhat * gamma (+ beta), gamma/beta broadcast as ``pshape``; y = xhat without gamma
           (LayerNorm/RMSNorm called with x alone: nothing to learn, no multiply by ones).

    dL/dxhat = gy gamma;  dL/dx = r (g - mean(g) - xhat mean(g xhat)) with r = 1/sqrt(...)
    (no ``mean(g)`` term when not centred); dL/dgamma = sum(gy xhat); dL/dbeta = sum(gy).
    """
    __slots__ = ('axes', 'eps', 'center', 'pshape', 'xhat', 'inv_std')

    def _normalize(self, x):
        """Raw forward: store xhat and r; return xhat, the mean (None if not centred) and var.

        float16 is normalised in float32 (squared deviations overflow from 256): xhat, r
        and the statistics are float32 then, and the callers round y to float16.
        """
        xp = _xp(x)
        x = widen(x)
        # sum / n: ndarray.mean's and .var's numbers bit for bit (DeZero's batch statistics),
        # without their Python wrappers' ~1.4 us a call (measured)
        n = math.prod(x.shape[a] for a in self.axes)
        mu = x.sum(axis=self.axes, keepdims=True) / n if self.center else None
        xc = x - mu if self.center else x
        var = (xc * xc).sum(axis=self.axes, keepdims=True) / n
        self.inv_std = 1 / xp.sqrt(var + self.eps)
        self.xhat = xc * self.inv_std
        return self.xhat, mu, var

    def _affine(self, xhat, gamma, beta, x):
        """y = xhat gamma + beta, in NumPy's result dtype of x, gamma and beta (a float16 x
        was normalised in float32: y is rounded to float16 once, here)."""
        dtype = x.dtype if gamma is None else np.result_type(
            x.dtype, gamma.dtype, *(() if beta is None else (beta.dtype,)))
        if gamma is None:
            return rounded_to(xhat, dtype)  # may share the cache: ops never write into inputs
        y = xhat * gamma.reshape(self.pshape)
        if beta is not None:
            y += beta.reshape(self.pshape)
        return rounded_to(y, dtype)

    def _stats(self):
        """(xhat, r): graph Variables built from x while recording, else the cached arrays."""
        return cached_or_rebuilt((self.xhat, self.inv_std), self._rebuild_stats)

    def _rebuild_stats(self):
        x = self.inputs[0]
        xc = x - mean(x, self.axes, keepdims=True) if self.center else x
        inv_std = (mean(xc * xc, self.axes, keepdims=True) + self.eps) ** -0.5
        return xc * inv_std, inv_std

    def _dxhat_to_dx(self, g, xhat, inv_std):
        """Map a gradient (or tangent) on xhat to one on x: the Jacobian of xhat is symmetric.

        Written with ``.sum`` (arrays and Variables both have it), so the plain
        first-order pass stays on arrays.
        """
        n = xhat.size // inv_std.size  # elements per normalised group
        proj = xhat * ((g * xhat).sum(axis=self.axes, keepdims=True) * (1 / n))
        if self.center:
            proj = proj + g.sum(axis=self.axes, keepdims=True) * (1 / n)
        return (g - proj) * inv_std

    def _param_grads(self, gy, xhat):
        """dL/dgamma = sum(gy xhat), dL/dbeta = sum(gy) over the normalised axes; gy an array or a Variable."""
        if len(self.inputs) == 1:
            return ()
        gamma = self.inputs[1]
        ggamma = _sum_to_param(gy * xhat, self.pshape, gamma) if gamma.requires_grad else None
        if len(self.inputs) < 3:
            return (ggamma,)
        beta = self.inputs[2]
        gbeta = _sum_to_param(gy, self.pshape, beta) if beta.requires_grad else None
        return ggamma, gbeta

    def backward(self, gy):
        x = self.inputs[0]
        xhat, inv_std = self._stats()
        g, = _in_float32(operands(gy)[0])  # float16: the sums below in float32 (array path)
        gx = None
        if x.requires_grad:
            gx = as_grad(rounded_to(self._grad_x(g, xhat, inv_std), x.dtype), x)
        return (gx,) + self._param_grads(g, xhat)

    def _grad_x(self, gy, xhat, inv_std):
        """dL/dx from gy: gamma first (dL/dxhat = gy gamma), then ``_dxhat_to_dx``."""
        gxhat = gy if len(self.inputs) == 1 else gy * operands(self.inputs[1])[0].reshape(self.pshape)
        return self._dxhat_to_dx(gxhat, xhat, inv_std)

    def _tangent_x(self, dx, xhat, inv_std):
        """The tangent of y from that of x: ``_dxhat_to_dx`` (the Jacobian is symmetric), then gamma."""
        t = self._dxhat_to_dx(dx, xhat, inv_std)
        return t if len(self.inputs) == 1 else t * reshape(self.inputs[1], self.pshape)

    def jvp(self, dx, dgamma=None, dbeta=None):
        x = self.inputs[0]
        xhat, inv_std = self._stats()
        t = None
        if dx is not None:
            t = self._tangent_x(dx, xhat, inv_std)
        if dgamma is not None:
            t = add_tangents(t, xhat * reshape(dgamma, self.pshape))
        if dbeta is not None:
            t = add_tangents(t, broadcast_to(reshape(dbeta, self.pshape), x.shape))
        return t


def _sum_to_param(g, pshape, p):
    """``g`` summed to ``pshape`` and shaped like the parameter ``p``: a gradient Variable
    (of ``p``'s dtype: a float16 parameter's gradient is summed in float32, then rounded)."""
    if isinstance(g, Variable):
        return reshape(sum_to(g, pshape), p.shape)
    return Variable(rounded_to(_sum_to_array(g, pshape).reshape(p.shape), p.dtype))


class LayerNorm(_Normalize):
    """Layer normalisation over the last axis: y = (x - mean) / sqrt(var + eps) * gamma + beta."""
    __slots__ = ()

    def __init__(self, eps=1e-5):
        self.axes = (-1,)
        self.eps = eps
        self.center = True
        self.pshape = None

    def forward(self, x, gamma=None, beta=None):
        self.pshape = None if gamma is None else gamma.shape
        return self._affine(self._normalize(x)[0], gamma, beta, x)


def _check_feature_param(fname, x, p, axis, what):
    n = x.shape[axis]
    if p.ndim != 1 or p.shape[0] != n:
        raise ValueError(f'{fname}: {what} has shape {p.shape} but x has shape {x.shape}; '
                         f'expected ({n},) (axis {axis} of x)')


def layer_norm(x, gamma=None, beta=None, eps=1e-5):
    """Normalise each row over the last axis; gamma, beta have shape (D,) = x.shape[-1:].

    Without gamma and beta: y = (x - mean) / sqrt(var + eps), no affine part.
    """
    x = as_variable(x)
    if gamma is None and beta is None:
        return LayerNorm(eps)(x)
    if gamma is None or beta is None:
        raise ValueError('layer_norm: pass both gamma and beta, or neither (no affine part)')
    gamma, beta = as_variable(gamma), as_variable(beta)
    _check_feature_param('layer_norm', x, gamma, -1, 'gamma')
    _check_feature_param('layer_norm', x, beta, -1, 'beta')
    return LayerNorm(eps)(x, gamma, beta)


class RMSNorm(LayerNorm):
    """RMS normalisation over the last axis: y = x / sqrt(mean(x^2) + eps) * gamma (no centring, no beta)."""
    __slots__ = ()

    def __init__(self, eps=1e-5):
        super().__init__(eps)
        self.center = False


def rms_norm(x, gamma=None, eps=1e-5):
    """y = x / sqrt(mean(x^2, axis=-1) + eps) * gamma; gamma has shape (D,) = x.shape[-1:] (None: no gain)."""
    x = as_variable(x)
    if gamma is None:
        return RMSNorm(eps)(x)
    gamma = as_variable(gamma)
    _check_feature_param('rms_norm', x, gamma, -1, 'gamma')
    return RMSNorm(eps)(x, gamma)


class BatchNorm(_Normalize):
    """Batch normalisation over every axis but the channel axis 1 ((N, C) or (N, C, H, W)).

    Training (``Config.train``): normalise with the batch statistics and update
    the running ``mean`` / ``var`` arrays in place:
    ``mean = decay mean + (1 - decay) batch_mean``, ``var`` likewise with the
    unbiased batch variance.  Test mode: normalise with the running statistics
    (then y is affine in x: dL/dx = gy gamma / sqrt(var + eps)).
    """
    __slots__ = ('mean', 'var', 'decay', 'train')

    def __init__(self, mean, var, decay=0.9, eps=2e-5):
        self.mean = mean
        self.var = var
        self.decay = decay
        self.eps = eps
        self.center = True
        self.train = Config.train

    def forward(self, x, gamma, beta):
        self.axes = (0,) + tuple(range(2, x.ndim))
        self.pshape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
        if self.train:
            xhat, batch_mean, batch_var = self._normalize(x)
            m = x.size // x.shape[1]
            unbias = m / max(m - 1, 1)  # the running var estimates the population variance
            new_mean = (1 - self.decay) * batch_mean.reshape(-1)
            new_var = ((1 - self.decay) * unbias) * batch_var.reshape(-1)
            with state_lock:  # one whole update at a time when threads share the layer
                self.mean *= self.decay
                self.mean += new_mean
                self.var *= self.decay
                self.var += new_var
        else:
            xp = _xp(x)
            self.inv_std = (1 / xp.sqrt(self.var + self.eps)).astype(x.dtype, copy=False).reshape(self.pshape)
            xhat = (x - self.mean.reshape(self.pshape)) * self.inv_std
            self.xhat = xhat
        return self._affine(xhat, gamma, beta, x)

    def _rebuild_stats(self):
        if self.train:
            return super()._rebuild_stats()
        return (self.inputs[0] - self.mean.reshape(self.pshape)) * self.inv_std, self.inv_std

    def _dxhat_to_dx(self, g, xhat, inv_std):
        if self.train:
            return super()._dxhat_to_dx(g, xhat, inv_std)
        return g * inv_std

    def _through_gamma(self, g, xhat, inv_std):
        """dL/dx (g = gy) and the tangent of y (g = dx) alike: gamma is constant along the
        reduced axes, so it commutes with the symmetric Jacobian of xhat.  Training: DeZero's
        (g - sum(g) / n - xhat sum(xhat g) / n) (gamma r), its grouping; test mode: g (gamma r)."""
        scale = operands(self.inputs[1])[0].reshape(self.pshape) * inv_std
        if not self.train:
            return g * scale
        n = xhat.size // inv_std.size
        axes = self.axes
        return (g - g.sum(axis=axes, keepdims=True) / n
                - xhat * (xhat * g).sum(axis=axes, keepdims=True) / n) * scale

    _grad_x = _tangent_x = _through_gamma


def _check_batch_norm(x, gamma, beta, mean_, var):
    if x.ndim not in (2, 4):
        raise ValueError(f'batch_norm: x must be (N, C) or (N, C, H, W), got shape {x.shape}')
    c = x.shape[1]
    for name, p in (('gamma', gamma), ('beta', beta), ('mean', mean_), ('var', var)):
        if p.shape != (c,):
            raise ValueError(f'batch_norm: {name} has shape {p.shape} but x has shape {x.shape}; '
                             f'expected ({c},)')


def batch_norm(x, gamma, beta, mean, var, decay=0.9, eps=2e-5):
    """Batch normalisation; ``mean``/``var`` are the running statistics (arrays, updated in place
    while training)."""
    x, gamma, beta = as_variable(x), as_variable(gamma), as_variable(beta)
    mean = mean.data if isinstance(mean, Variable) else mean
    var = var.data if isinstance(var, Variable) else var
    _check_batch_norm(x, gamma, beta, mean, var)
    return BatchNorm(mean, var, decay, eps)(x, gamma, beta)


_batch_nrom_warned = False


def batch_nrom(x, gamma, beta, mean, var, decay=0.9, eps=2e-5):
    """Deprecated alias of ``batch_norm`` (DeZero's misspelling); warns once per process."""
    global _batch_nrom_warned
    if not _batch_nrom_warned:
        _batch_nrom_warned = True
        warnings.warn('batch_nrom is a misspelling kept for DeZero code; use batch_norm',
                      DeprecationWarning, stacklevel=2)
    return batch_norm(x, gamma, beta, mean, var, decay, eps)


# =============================================================================
# Embedding
# =============================================================================
def embed_id(x, W):
    """Rows of ``W`` (V, D) picked by the integer ids ``x`` (any shape) -> ``x.shape + (D,)`` (= ``W[x]``).

    A composition (``get_item``): the gradient scatter-adds into the used rows.
    """
    W = as_variable(W)
    ids = x.data if isinstance(x, Variable) else x
    ids = _xp(W.data).asarray(ids)
    if ids.dtype.kind not in 'iu':
        raise TypeError(f'embed_id: ids must be integers, got dtype {ids.dtype} (shape {ids.shape})')
    if ids.size:
        lo, hi = int(ids.min()), int(ids.max())
        if lo < 0 or hi >= W.shape[0]:
            raise ValueError(f'embed_id: ids must be in [0, {W.shape[0]}) for W of shape {W.shape}, '
                             f'got values from {lo} to {hi} (ids shape {ids.shape})')
    return get_item(W, ids)
