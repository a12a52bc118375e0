"""Elementwise math, shape helpers, reductions and linear maps.

Each operation is a ``Function`` subclass with ``forward`` (raw arrays),
``backward`` (reverse mode) and ``jvp`` (forward mode), written once as the
rule idiom of ``dezero_kr.operators`` says, plus a one-line lowercase
wrapper. The arithmetic, reshape/transpose/indexing, sum/broadcast, matmul,
max/min and ``log`` live in ``dezero_kr.operators`` (Variable's operators
need them); ``dezero_kr.functions`` re-exports everything.
"""
import warnings

import numpy as np

from dezero_kr import cuda
from dezero_kr.array_utils import may_hold_nan
from dezero_kr.core import Constant, Function, Variable, as_variable
from dezero_kr.operators import (  # noqa: F401
    BinaryElementwise, Elementwise, Log, add_tangents, array_grad, as_grad, broadcast_to, log,
    operands)
from dezero_kr.operators_shape import matmul, reshape, sum, transpose  # noqa: F401

# NumPy's own exception for a bad axis (a ValueError and an IndexError); moved in NumPy 2.
_AxisError = getattr(np, 'exceptions', np).AxisError


_xp = cuda.get_array_module  # numpy, or cupy for CuPy arrays


# =============================================================================
# Elementwise functions: forward and the derivative (``_slope``), once
# =============================================================================
class Sin(Elementwise):
    """y = sin(x); dL/dx = gy * cos(x).  Same shape and dtype as x."""
    __slots__ = ()

    def forward(self, x):
        return _xp(x).sin(x)

    def _slope(self, x, y):
        return cos(x) if isinstance(x, Variable) else _xp(x).cos(x)


def sin(x):
    """Sine, elementwise: y = sin(x), same shape and dtype as x; dL/dx = gy * cos(x)."""
    return Sin()(x)


class Cos(Elementwise):
    """y = cos(x); dL/dx = -gy * sin(x).  Same shape and dtype as x."""
    __slots__ = ()

    def forward(self, x):
        return _xp(x).cos(x)

    def _slope(self, x, y):
        return -(sin(x) if isinstance(x, Variable) else _xp(x).sin(x))


def cos(x):
    """Cosine, elementwise: y = cos(x), same shape and dtype as x; dL/dx = -gy * sin(x)."""
    return Cos()(x)


class Tan(Elementwise):
    """y = tan(x); dL/dx = gy * (1 + y^2).  Same shape and dtype as x."""
    __slots__ = ()

    def forward(self, x):
        return _xp(x).tan(x)

    def _slope(self, x, y):
        return 1 + y * y


def tan(x):
    """Tangent, elementwise: y = tan(x), same shape and dtype as x; dL/dx = gy * (1 + y^2)."""
    return Tan()(x)


class Tanh(Elementwise):
    """y = tanh(x); dL/dx = gy * (1 - y^2).  Same shape and dtype as x."""
    __slots__ = ()

    def forward(self, x):
        return _xp(x).tanh(x)

    def _slope(self, x, y):
        return 1 - y * y


def tanh(x):
    """Hyperbolic tangent, elementwise: y = tanh(x) in (-1, 1), same shape and dtype as x;
    dL/dx = gy * (1 - y^2)."""
    return Tanh()(x)


class Exp(Elementwise):
    """y = exp(x); dL/dx = gy * y.  Same shape and dtype as x (overflow gives inf, as NumPy)."""
    __slots__ = ()

    def forward(self, x):
        return _xp(x).exp(x)

    def _slope(self, x, y):
        return y


def exp(x):
    """Exponential, elementwise: y = exp(x), same shape and dtype as x; dL/dx = gy * y."""
    return Exp()(x)


class Sqrt(Elementwise):
    """y = sqrt(x); dL/dx = gy / (2 y) (inf at x = 0; nan for x < 0, as NumPy)."""
    __slots__ = ()

    def forward(self, x):
        return _xp(x).sqrt(x)

    def _slope(self, x, y):
        return 1 / (2 * y)


def sqrt(x):
    """Square root, elementwise: y = sqrt(x), same shape and dtype as x; dL/dx = gy / (2 y)
    (x < 0 gives nan with NumPy's RuntimeWarning)."""
    return Sqrt()(x)


class Abs(Elementwise):
    """y = abs(x); dL/dx = gy * sign(x) (0 at x = 0, as NumPy's sign).  Same shape and dtype as x."""
    __slots__ = ()

    def forward(self, x):
        return _xp(x).abs(x)

    def _slope(self, x, y):
        x = self.inputs[0].data  # sign is piecewise constant: an array even while recording
        return _xp(x).sign(x)


def abs(x):
    """Absolute value, elementwise: y = abs(x), same shape and dtype as x; dL/dx = gy * sign(x)."""
    return Abs()(x)


def mask_grad(g, mask):
    """``g * mask``, with an exact 0 wherever ``mask`` is 0 even where ``g`` is inf or nan.

    The one rule of the ops that route a gradient (or a tangent) through a
    mask: ``relu``, ``clip``, ``where``, ``maximum``/``minimum``, ``masked_fill``,
    in reverse and in forward mode alike.  A blocked element does not depend
    on that input at all, so its derivative is 0, as PyTorch gives; the plain
    product would make it ``0 * inf = nan``.  ``mask``: a bool array or weights
    (0, 0.5, 1), broadcastable to ``g``.

    Arrays: the product, repaired only when it holds a non-finite value (the
    check is one BLAS dot over the product, a quarter of the product's time);
    GPU arrays are always repaired (one ``where``, no device-to-host read).
    Variables (a graph is being recorded, or a tangent):
    ``where(mask != 0, g * mask, 0)``, differentiable again.
    """
    is_bool = mask.dtype == bool
    if isinstance(g, Variable):
        if is_bool:
            return where(mask, g, 0)
        with np.errstate(invalid='ignore'):  # inf * 0 at a blocked element: where() drops it
            weighted = g * mask
        return where(mask != 0, weighted, 0)
    out = g * mask
    # A GPU array is repaired without the check: reading its result would make the host
    # wait for the device at every masked op.
    if out.dtype.kind in 'fc' and (type(out) is not np.ndarray or not _all_finite(out)):
        xp = _xp(out)
        out = xp.where(~mask if is_bool else mask == 0, xp.zeros((), out.dtype), out)
    return out


class Masking(Elementwise):
    """An elementwise op whose slope is a mask (bool, or weights such as 0, 0.5, 1):
    backward and jvp multiply by it with ``mask_grad``, so blocked elements get an exact 0.
    A mask is piecewise constant: ``_slope`` gets the raw arrays x and y, even while recording."""
    __slots__ = ()

    def backward(self, gy):
        x = self.inputs[0]
        mask = self._slope(x.data, self.outputs[0]().data)
        return as_grad(mask_grad(operands(gy)[0], mask), x)

    def backward_arrays(self, gy):
        x = self.inputs[0]
        return array_grad(mask_grad(gy, self._slope(x.data, self.outputs[0]().data)), x)

    def jvp(self, dx):
        return mask_grad(dx, self._slope(self.inputs[0].data, self.outputs[0]().data))


class BinaryMasking(BinaryElementwise):
    """A two-input op whose partial derivatives are masks (``Maximum``, ``Where``), given the
    raw arrays x0 and x1: dL/dx_i = sum_to(mask_grad(gy, mask_i)),
    dy = mask_grad(dx0, mask0) + mask_grad(dx1, mask1)."""
    __slots__ = ()

    def _masks(self):
        x0, x1 = self.inputs
        return self._slopes(x0.data, x1.data)

    def backward(self, gy):
        x0, x1 = self.inputs
        g, = operands(gy)
        m0, m1 = self._masks()
        return as_grad(mask_grad(g, m0), x0), as_grad(mask_grad(g, m1), x1)

    def backward_arrays(self, gy):
        x0, x1 = self.inputs
        m0, m1 = self._masks()
        return array_grad(mask_grad(gy, m0), x0), array_grad(mask_grad(gy, m1), x1)

    def jvp(self, dx0, dx1):
        m0, m1 = self._masks()
        t0 = None if dx0 is None else mask_grad(dx0, m0)
        t1 = None if dx1 is None else mask_grad(dx1, m1)
        return add_tangents(t0, t1)


def _all_finite(a):
    """Whether ``a`` has no inf or nan.

    Large float32/64 arrays: one BLAS dot ``a . a`` (about half the time of
    ``isfinite(a).all()``).  It also overflows for finite values above ~1e19
    (float32); then the caller's repair pass runs for nothing, which is still
    correct, and the overflow is silenced (``errstate`` costs ~3 us, so small
    arrays take the plain check instead).
    """
    xp = _xp(a)
    if a.size >= 4096 and (a.dtype == np.float32 or a.dtype == np.float64):
        flat = a.ravel(order='K')  # a view of a fresh product
        with np.errstate(over='ignore', invalid='ignore'):
            return bool(xp.isfinite(xp.dot(flat, flat)))
    return bool(xp.isfinite(a).all())


class Clip(Masking):
    """y = clip(x, x_min, x_max); dL/dx = gy where x_min <= x <= x_max, else exactly 0."""
    __slots__ = ('x_min', 'x_max')

    def __init__(self, x_min, x_max):
        self.x_min = x_min
        self.x_max = x_max

    def forward(self, x):
        return _xp(x).clip(x, self.x_min, self.x_max)

    def _slope(self, x, y):
        return (x >= self.x_min) & (x <= self.x_max)  # inclusive: slope 1 at the bounds, as PyTorch


def clip(x, x_min, x_max):
    """Elementwise ``min(max(x, x_min), x_max)``, same shape and dtype as x (bounds are scalars
    or arrays broadcastable to x).  dL/dx = gy where x_min <= x <= x_max (bounds included),
    else exactly 0 (even where gy is inf or nan)."""
    return Clip(x_min, x_max)(x)


def _as_operand(x, like):
    """A non-Variable operand as a constant Variable (for two-input ops)."""
    if isinstance(x, Variable):
        return x
    xp = _xp(like.data)
    return Constant(xp.asarray(x, dtype=np.result_type(like.data.dtype, x)))


class Maximum(BinaryMasking):
    """y = maximum(x0, x1) (broadcasting).  The larger input gets gy; a tie splits it in half:
    dL/dx0 = sum_to(gy * w0), dL/dx1 = sum_to(gy * (1 - w0)), w0 = [x0 > x1] + [x0 == x1] / 2.
    NaN wins (y is NaN, as NumPy): a NaN against a number gets all of gy, two NaNs a half each."""
    __slots__ = ()

    def forward(self, x0, x1):
        return _xp(x0).maximum(x0, x1)

    def _wins(self, x0, x1):
        return x0 > x1

    def _slopes(self, x0, x1):
        y = self.outputs[0]().data
        dtype = y.dtype
        w0 = self._wins(x0, x1).astype(dtype) + 0.5 * (x0 == x1).astype(dtype)
        if may_hold_nan(y):
            xp = _xp(y)
            nan0, nan1 = xp.isnan(x0), xp.isnan(x1)
            w0 = xp.where(nan0 | nan1, nan0.astype(dtype) - 0.5 * (nan0 & nan1), w0)
        return w0, 1 - w0


class Minimum(Maximum):
    """y = minimum(x0, x1); the smaller input gets gy; a tie splits it in half; NaN wins."""
    __slots__ = ()

    def forward(self, x0, x1):
        return _xp(x0).minimum(x0, x1)

    def _wins(self, x0, x1):
        return x0 < x1


def maximum(x0, x1):
    """Elementwise larger of x0 and x1 (broadcast shapes; NumPy's result dtype).  x1 may be a
    scalar or an array (a constant).  dL/dx0 = gy where x0 > x1, gy / 2 at a tie, else 0."""
    x0 = as_variable(x0) if not isinstance(x0, Variable) else x0
    return Maximum()(x0, _as_operand(x1, x0))


def minimum(x0, x1):
    """Elementwise smaller of x0 and x1 (broadcast shapes; NumPy's result dtype).  x1 may be a
    scalar or an array (a constant).  dL/dx0 = gy where x0 < x1, gy / 2 at a tie, else 0."""
    x0 = as_variable(x0) if not isinstance(x0, Variable) else x0
    return Minimum()(x0, _as_operand(x1, x0))


class Where(BinaryMasking):
    """y = where(condition, x0, x1) (broadcasting); dL/dx0 = sum_to(gy where condition, else 0),
    dL/dx1 = sum_to(gy where not condition, else 0)."""
    __slots__ = ('condition',)

    def __init__(self, condition):
        self.condition = condition

    def forward(self, x0, x1):
        return _xp(x0).where(self.condition, x0, x1)

    def _slopes(self, x0, x1):
        c = _xp(self.condition).broadcast_to(self.condition, self.outputs[0]().shape)
        return c, ~c


def where(condition, x0, x1):
    """Elementwise ``x0 if condition else x1`` (broadcast shapes; NumPy's result dtype).

    ``condition`` is a bool array (or Variable; not differentiated); one of x0, x1
    may be a scalar or an array (a constant), else TypeError.
    dL/dx0 = gy where condition, else exactly 0; dL/dx1 the other way round.
    """
    if isinstance(condition, Variable):
        condition = condition.data
    condition = _xp(condition).asarray(condition, dtype=bool)
    if not isinstance(x0, Variable):
        if not isinstance(x1, Variable):
            raise TypeError('where: x0 or x1 must be a Variable')
        x0 = _as_operand(x0, x1)
    return Where(condition)(x0, _as_operand(x1, x0))


# =============================================================================
# Shape helpers
# =============================================================================
def expand_dims(x, axis):
    """Insert a length-1 axis at ``axis`` (a reshape), as ``np.expand_dims``.

    ``axis`` is an int in ``[-(ndim + 1), ndim]``; otherwise NumPy's ``AxisError``
    (a ``ValueError``) naming the axis and the shape; a non-int axis is a ``TypeError``.
    """
    x = as_variable(x)
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f'expand_dims: axis must be an int, got {axis!r} of type {type(axis).__name__}')
    if not -(x.ndim + 1) <= axis <= x.ndim:
        raise _AxisError(f'expand_dims: axis {axis} is out of bounds for the {x.ndim}-D input of shape '
                         f'{x.shape} (valid: {-(x.ndim + 1)} to {x.ndim})')
    shape = list(x.shape)
    shape.insert(axis % (x.ndim + 1) if axis < 0 else int(axis), 1)
    return reshape(x, tuple(shape))


def flatten(x):
    """Flatten all axes but the first (batch) axis: (N, ...) -> (N, -1)."""
    return reshape(x, (x.shape[0], -1))


class Concat(Function):
    """y = concatenate(xs, axis); dL/dx_i = the slice of gy that x_i occupies."""
    __slots__ = ('axis',)

    def __init__(self, axis=0):
        self.axis = axis

    def forward(self, *xs):
        return _xp(xs[0]).concatenate(xs, axis=self.axis)

    def _slices(self):
        ndim = self.inputs[0].ndim
        axis = self.axis % ndim
        start = 0
        for x in self.inputs:
            stop = start + x.shape[axis]
            yield (slice(None),) * axis + (slice(start, stop),)
            start = stop

    def backward(self, gy):
        g, = operands(gy)
        return tuple(as_grad(g[s], x) for s, x in zip(self._slices(), self.inputs))

    def jvp(self, *dxs):
        parts = []
        for x, dx in zip(self.inputs, dxs):
            parts.append(dx if dx is not None else Constant(_xp(x.data).zeros_like(x.data)))
        return concat(parts, self.axis)


def concat(xs, axis=0):
    """Join Variables/arrays along an existing axis (``np.concatenate``)."""
    return Concat(axis)(*xs)


def stack(xs, axis=0):
    """Join Variables/arrays along a new axis (``np.stack``)."""
    xs = [as_variable(x) for x in xs]
    return concat([expand_dims(x, axis) for x in xs], axis)


# =============================================================================
# Reductions and linear maps
# =============================================================================
def average(x, axis=None, keepdims=False):
    """Mean over ``axis``: ``sum(x, axis) * (y.size / x.size)``; dL/dx = gy / count, broadcast.

    As NumPy, the mean over no elements (an empty ``x``) is ``nan`` with a
    ``RuntimeWarning`` ("Mean of empty slice"); an empty result stays empty.
    """
    x = as_variable(x)
    y = sum(x, axis, keepdims)
    if x.data.size == 0:  # 0 / 0 elements: NumPy's nan and warning, not ZeroDivisionError
        if y.data.size == 0:
            return y
        warnings.warn('average: Mean of empty slice (the input has shape '
                      f'{x.shape}); the result is nan, as NumPy\'s mean', RuntimeWarning, stacklevel=2)
        return y * float('nan')
    return y * (y.data.size / x.data.size)


mean = average


class Linear(Function):
    """y = x @ W + b for x (N, I) (or (..., I)), W (I, O), b (O,) or absent.

    dL/dx = gy @ W^T, dL/dW = x^T @ gy (batch axes flattened), dL/db = sum of gy
    over the batch axes.  The data batch's gradient is skipped (a Constant).
    Batch axes are flattened inside the op (one matrix product, and no Reshape
    nodes around it), so (..., I) costs the same as (N, I).
    """
    __slots__ = ()

    def forward(self, x, W, b=None):
        if x.ndim > 2:  # one (N, I) @ (I, O) GEMM, not NumPy's loop over the batch axes:
            # (32, 16, 64) @ (64, 256) float32 takes 0.17 ms instead of 0.25 ms (measured)
            y = (x.reshape(-1, x.shape[-1]) @ W).reshape(x.shape[:-1] + W.shape[-1:])
        else:
            y = x @ W
        if b is not None:
            y += b  # in place: y is our own fresh array
        return y

    def backward(self, gy):
        return self._vjp(as_grad, *operands(gy, *self.inputs[:2]))

    def backward_arrays(self, gy):
        x, W = self.inputs[:2]
        return self._vjp(array_grad, gy, x.data, W.data)

    def _vjp(self, to_grad, g, a, w):
        """The rule on operands ``g, a, w`` (Variables or arrays); ``to_grad`` makes each result."""
        x, W = self.inputs[:2]
        if g.ndim != 2:  # (..., O) and (..., I): the rows of all batch axes together
            g, a = g.reshape(-1, g.shape[-1]), a.reshape(-1, a.shape[-1])
        gx = to_grad((g @ w.T).reshape(x.shape), x) if x.requires_grad else None
        gW = to_grad(a.T @ g, W) if W.requires_grad else None
        if len(self.inputs) == 2:
            return gx, gW
        b = self.inputs[2]
        return gx, gW, to_grad(g, b) if b.requires_grad else None

    def jvp(self, dx, dW, db=None):
        x, W = self.inputs[:2]
        t = add_tangents(None if dx is None else matmul(dx, W),
                         None if dW is None else matmul(x, dW))
        if db is not None:
            t = add_tangents(t, broadcast_to(db, self.outputs[0]().shape))
        return t


def linear(x, W, b=None):
    """Affine map ``x @ W + b`` as one Function (fast path; see ``linear_simple``)."""
    if b is None:
        return Linear()(x, W)
    return Linear()(x, W, b)


def linear_simple(x, W, b=None):
    """The same affine map composed from ``matmul`` and ``+`` (for teaching)."""
    t = matmul(x, W)
    if b is None:
        return t
    return t + b
