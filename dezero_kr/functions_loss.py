"""Losses and accuracy: mean_squared_error, softmax_cross_entropy, sigmoid_cross_entropy,
binary_cross_entropy, cross_entropy, accuracy.  Integer labels are checked up front (dtype,
shape, range): the error names the function and the shapes."""

import numpy as np

from dezero_kr import cuda
from dezero_kr.array_utils import rounded_to, widen
from dezero_kr.core import Function, Variable, as_variable, no_grad
from dezero_kr.operators import add_tangents, array_grad, as_grad, operands
from dezero_kr.operators_shape import reshape, sum
from dezero_kr.functions_math import clip, log
from dezero_kr.functions_activation import sigmoid, sigmoid_array, softmax

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
    if t.size and not labels_in_range(t, n_classes):
        raise ValueError(f'{fname}: labels must be in [0, {n_classes}) for x of shape {x_shape}, '
                         f'got values from {t.min()} to {t.max()} (dtype {t.dtype})')
    return t


def labels_in_range(t, n_classes):
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


def one_hot(t, n_classes, dtype, xp):
    """The one-hot matrix of the integer labels ``t`` (shape ``(len(t), n_classes)``, ``dtype``, on ``xp``)."""
    out = xp.zeros((t.shape[0], n_classes), dtype=dtype)
    out[xp.arange(t.shape[0]), t] = 1
    return out


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
    in float32).  dL/dx = (softmax(x) - onehot(t)) (gy / N), the softmax as ``exp(x - m) / s``
    with the forward's ``exp(x - m)`` (kept: (N, C), as PyTorch keeps its log-softmax).
    """
    __slots__ = ('m', 's', 'e')

    def forward(self, x, t):
        xp = cuda.get_array_module(x)
        n = x.shape[0]
        dtype, x = x.dtype, widen(x)
        m = x.max(axis=1, keepdims=True)
        z = x - m
        e = xp.exp(z)
        s = e.sum(axis=1, keepdims=True)
        loss = -(z[xp.arange(n), t] - xp.log(s)[:, 0]).sum() / n
        self.m, self.s, self.e = m, s, e  # softmax(x) = e / s in the rules
        return rounded_to(loss, dtype)  # a scalar of x's dtype (float32 stays float32)

    def _slope(self):
        """(softmax(x) - onehot(t), 1 / N), shape (N, C) and a float: dy/dx is their product."""
        x, t = self.inputs
        n, c = x.shape
        a, = operands(x)
        if isinstance(a, Variable):
            p = softmax(a)
            return p - one_hot(t.data, c, p.dtype, cuda.get_array_module(x.data)), 1 / n
        p = self.e / self.s  # DeZero's softmax exp(x - m) / s, with the forward's exp(x - m)
        return p - one_hot(t.data, c, p.dtype, cuda.get_array_module(x.data)), 1 / n

    def backward(self, gy):
        return as_grad(self._grad_x(operands(gy)[0]), self.inputs[0]), None

    def backward_arrays(self, gy):
        return array_grad(self._grad_x(gy), self.inputs[0]), None

    def _grad_x(self, g):
        d, inv_n = self._slope()
        # grouped as DeZero's (softmax(x) - onehot(t)) * (gy * (1 / N))
        return rounded_to(d * (g * inv_n), self.inputs[0].dtype)

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
    tlog_p = log(p)[cuda.get_array_module(t).arange(n), t]
    return -sum(tlog_p) / n


def _as_target(fname, t, like):
    """Targets shaped like ``like`` (reshaped as DeZero does), cast to its float dtype."""
    if isinstance(t, Variable):
        if t.size != like.size:
            raise ValueError(f'{fname}: t has shape {t.shape} but x has shape {like.shape}')
        return reshape(t, like.shape)
    t = cuda.get_array_module(like.data).asarray(t)
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
        xp = cuda.get_array_module(x)
        dtype, x, t = np.result_type(x.dtype, t.dtype), widen(x), widen(t)
        loss = xp.maximum(x, 0)
        loss -= x * t
        loss += xp.log1p(xp.exp(-xp.abs(x)))
        return rounded_to(loss.sum() / _batch_size(x.shape), dtype)

    def _slope_x(self):
        """dy/dx = (sigmoid(x) - t) / N."""
        x, t = operands(*self.inputs)
        p = sigmoid(x) if isinstance(x, Variable) else sigmoid_array(x)
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
        return -sum(log_p[cuda.get_array_module(t).arange(n), t]) / n
    if not isinstance(t, Variable):
        t = cuda.get_array_module(p.data).asarray(t).astype(p.dtype, copy=False)
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
        return cuda.get_array_module(y).asarray((pred == t).mean(), dtype=dtype)

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
