"""The shape, indexing and reduction operations behind ``Variable``'s methods, and matmul.

``x.reshape(...)``, ``x.transpose(...)``/``x.T``, ``x[i]``, ``x.sum(...)``,
``x @ W``, ``x.max(...)``, ``x.min(...)`` call the lowercase functions of this
module; each rule is written as ``dezero_kr.operators`` ("how a rule is
written") says, with its tools.  ``dezero_kr.operators``, ``dezero_kr.core``
and ``dezero_kr.functions`` re-export every name."""

import numpy as np

from dezero_kr import cuda
from dezero_kr.array_utils import (array_sum, max_backward_shape, may_hold_nan, reshape_sum_backward,
                                   sum_to as _sum_to_array)
from dezero_kr.core import Function, Variable
from dezero_kr.operators import (ShapeFunction, add_tangents, array_grad, as_grad, broadcast_array,
                                  broadcast_grad, operands, sum_to, to_shape)


class Reshape(ShapeFunction):
    """y = x.reshape(shape); dL/dx = gy.reshape(x.shape)."""
    __slots__ = ()

    def forward(self, x):
        return x.reshape(self.shape)

    def backward(self, gy):
        x = self.inputs[0]
        return as_grad(operands(gy)[0].reshape(x.data.shape), x)

    def backward_arrays(self, gy):
        x = self.inputs[0]
        return array_grad(gy.reshape(x.data.shape), x)

    def jvp(self, dx):
        return reshape(dx, self.shape)


def reshape(x, shape):
    """``x`` with a new ``shape`` (a tuple or an int; one entry may be -1), the same elements
    in C order and the same dtype; ``x`` itself (as a Variable) when the shape is
    unchanged.  dL/dx = gy.reshape(x.shape).  A size mismatch is NumPy's ValueError."""
    return to_shape(Reshape, 'reshape', x, shape)


class Transpose(Function):
    """y = x.transpose(axes); dL/dx = gy.transpose(argsort(axes))."""
    __slots__ = ('axes',)
    backward_reads_values = False

    def __init__(self, axes=None):
        self.axes = axes

    def forward(self, x):
        return x.transpose(self.axes)

    def backward(self, gy):
        return as_grad(operands(gy)[0].transpose(self._inverse_axes()), self.inputs[0])

    def backward_arrays(self, gy):
        return array_grad(gy.transpose(self._inverse_axes()), self.inputs[0])

    def _inverse_axes(self):
        if self.axes is None:
            return None
        return tuple(np.argsort([a % len(self.axes) for a in self.axes]).tolist())

    def jvp(self, dx):
        return transpose(dx, self.axes)


def transpose(x, axes=None):
    """``x`` with its axes permuted (``axes=None`` reverses them), as
    ``np.transpose``; same dtype.  dL/dx = gy transposed by the inverse permutation."""
    return Transpose(axes)(x)


def is_basic_index(slices):
    """Whether ``slices`` is basic indexing (ints, slices, None, Ellipsis): no element is taken twice."""
    # Basic indexing (ints, slices, None, Ellipsis) never repeats an element,
    # so its gradient can be a plain assignment instead of a scatter-add.
    items = slices if isinstance(slices, tuple) else (slices,)
    return all(s is None or s is Ellipsis or isinstance(s, (int, slice, np.integer))
               and not isinstance(s, bool) for s in items)


class GetItem(Function):
    """y = x[slices]; dL/dx = zeros with gy scattered (added) at ``slices``."""
    __slots__ = ('slices',)
    backward_reads_values = False

    def __init__(self, slices):
        self.slices = slices

    def forward(self, x):
        return x[self.slices]

    def backward(self, gy):
        x = self.inputs[0]
        return as_grad(scatter_grad(operands(gy)[0], self.slices, x.data.shape), x)

    def backward_arrays(self, gy):
        x = self.inputs[0]
        return array_grad(_scatter_add_at(gy, self.slices, x.data.shape), x)

    def jvp(self, dx):
        return get_item(dx, self.slices)


def scatter_add(target, index, values):
    """``target[index] += values`` in place on arrays, with repeated indices adding
    up (``np.add.at``; ``cupyx.scatter_add`` for CuPy arrays)."""
    if cuda.get_array_module(target) is np:
        np.add.at(target, index, values)
    else:
        import cupyx  # optional: only reached with CuPy arrays
        cupyx.scatter_add(target, index, values)


def scatter_grad(g, slices, shape):
    """The gradient of ``x[slices]`` for an ``x`` of ``shape``: zeros with ``g``
    added at ``slices`` (repeated indices add up).  ``g`` a Variable (a graph is
    recorded): a ``GetItemGrad`` node, so it is differentiable again; ``g`` an
    array (the plain path): the array, no Function built."""
    if isinstance(g, Variable):
        return GetItemGrad(slices, shape)(g)
    return _scatter_add_at(g, slices, shape)


def _scatter_add_at(gy, slices, shape):
    """Zeros of ``shape`` with the array ``gy`` added at ``slices`` (repeated indices add up)."""
    gx = cuda.get_array_module(gy).zeros(shape, dtype=gy.dtype)
    if is_basic_index(slices):
        gx[slices] = gy
    else:
        scatter_add(gx, slices, gy)
    return gx


class GetItemGrad(Function):
    """gx = zeros(in_shape); gx[slices] += gy (repeated indices add up)."""
    __slots__ = ('slices', 'in_shape')
    backward_reads_values = False

    def __init__(self, slices, in_shape):
        self.slices = slices
        self.in_shape = in_shape

    def forward(self, gy):
        return _scatter_add_at(gy, self.slices, self.in_shape)

    def backward(self, ggx):
        return get_item(ggx, self.slices)

    def jvp(self, dgy):
        return GetItemGrad(self.slices, self.in_shape)(dgy)


def get_item(x, slices):
    """``x[slices]`` (the operator ``[]``): any NumPy index (ints, slices, None,
    Ellipsis, integer or bool arrays; a Variable index is used as its array).

    Shape and dtype as NumPy's indexing.  dL/dx = zeros of x's shape with gy
    added at ``slices`` (an element picked twice gets both gradients).  An
    out-of-range index is NumPy's IndexError."""
    if isinstance(slices, Variable):
        slices = slices.data
    return GetItem(slices)(x)


# --- reductions and broadcasting ---------------------------------------------
class Sum(Function):
    """y = x.sum(axis, keepdims); dL/dx = gy broadcast back to x.shape."""
    __slots__ = ('axis', 'keepdims')
    backward_reads_values = False

    def __init__(self, axis, keepdims):
        self.axis = axis
        self.keepdims = keepdims

    def forward(self, x):
        return array_sum(x, self.axis, self.keepdims)

    def backward(self, gy):
        x_shape = self.inputs[0].data.shape
        g = reshape_sum_backward(operands(gy)[0], x_shape, self.axis, self.keepdims)
        return broadcast_grad(g, x_shape)

    def backward_arrays(self, gy):
        x_shape = self.inputs[0].data.shape
        return broadcast_array(reshape_sum_backward(gy, x_shape, self.axis, self.keepdims), x_shape)

    def jvp(self, dx):
        return sum(dx, self.axis, self.keepdims)


def sum(x, axis=None, keepdims=False):
    """Sum of the elements over ``axis`` (None: all; an int or a tuple), as
    ``np.sum``; ``keepdims`` keeps the reduced axes as length 1.  dtype as NumPy's
    sum (float32 stays float32; float16 is accumulated in float32, then rounded).
    dL/dx = gy broadcast back to x.shape.  A bad axis is NumPy's AxisError."""
    return Sum(axis, keepdims)(x)


class MatMul(Function):
    """y = x @ W (2-D, batched or 1-D, as NumPy).  dL/dx = gy @ W^T, dL/dW = x^T @ gy."""
    __slots__ = ()

    def forward(self, x, W):
        return x @ W

    def backward(self, gy):
        return self._vjp(as_grad, *operands(gy, *self.inputs))

    def backward_arrays(self, gy):
        x, W = self.inputs
        return self._vjp(array_grad, gy, x.data, W.data)

    def _vjp(self, to_grad, g, a, w):
        """The rule on operands ``g, a, w`` (Variables or arrays); ``to_grad`` makes each result."""
        x, W = self.inputs
        # A 1-D operand is a (1, n) row / (n, 1) column whose added axis NumPy
        # dropped from y: put it back in gy, use the matrix rule, drop it again.
        a2 = a if a.ndim > 1 else a.reshape((1,) + a.shape)
        w2 = w if w.ndim > 1 else w.reshape(w.shape + (1,))
        if a2 is not a or w2 is not w:
            batch = np.broadcast_shapes(a2.shape[:-2], w2.shape[:-2])
            g = g.reshape(batch + (a2.shape[-2], w2.shape[-1]))
        gx = gW = None
        if x.requires_grad:
            gx = to_grad(_summed_to(g @ swap_last(w2), a2.shape).reshape(x.shape), x)
        if W.requires_grad:
            gW = to_grad(_summed_to(swap_last(a2) @ g, w2.shape).reshape(W.shape), W)
        return gx, gW

    def jvp(self, dx, dW):
        x, W = self.inputs
        t0 = None if dx is None else matmul(dx, W)
        t1 = None if dW is None else matmul(x, dW)
        return add_tangents(t0, t1)


def swap_last(a):
    """Transpose the last two axes (the matrix transpose of a batch): an array or a Variable."""
    axes = tuple(range(a.ndim - 2)) + (a.ndim - 1, a.ndim - 2)
    return a.transpose(axes)


def _summed_to(g, shape):
    """An operand ``g`` summed over broadcast batch axes down to ``shape``."""
    if g.shape == tuple(shape):
        return g
    return sum_to(g, shape) if isinstance(g, Variable) else _sum_to_array(g, shape)


def matmul(x, W):
    """Matrix product ``x @ W`` (the operator ``@``) with NumPy's rules: 2-D,
    batched (leading axes broadcast) or 1-D operands.  dtype: NumPy's result type.
    dL/dx = gy @ W^T, dL/dW = x^T @ gy (summed over broadcast batch axes).
    Mismatched inner sizes are NumPy's ValueError."""
    return MatMul()(x, W)


class Max(Function):
    """y = x.max(axis, keepdims).  dL/dx = gy / k at the k elements equal to the max, else 0.

    Ties split the gradient evenly (two tied maxima get gy / 2 each), in
    ``backward`` and ``jvp`` alike, as PyTorch's ``amax``/``max`` and JAX: a
    valid subgradient, so forward- and reverse-mode Jacobians agree.  (Max
    *pooling* routes to the first maximum instead; see functions_conv.)
    NaN is the maximum (and the minimum), as ``np.max`` and PyTorch: where y
    is NaN the gradient goes to the NaN elements (split evenly among them).
    """
    __slots__ = ('axis', 'keepdims')

    def __init__(self, axis=None, keepdims=False):
        self.axis = axis
        self.keepdims = keepdims

    def forward(self, x):
        return x.max(axis=self.axis, keepdims=self.keepdims)

    def _weights(self):
        """(1/k at the k extreme elements of each reduction, else 0; gy's shape with kept axes)."""
        x = self.inputs[0].data
        y = self.outputs[0]().data
        shape = max_backward_shape(x, self.axis)
        mask = x == y.reshape(shape)
        xp = cuda.get_array_module(x)
        if may_hold_nan(y):  # NaN is the extreme: it takes the gradient
            mask |= xp.isnan(x) & xp.isnan(y.reshape(shape))
        count = mask.sum(axis=self.axis, keepdims=True)
        weights = mask / xp.maximum(count, 1)  # count is 0 only for an empty reduction
        if x.dtype.kind in 'fc':
            weights = weights.astype(x.dtype, copy=False)
        return weights, shape

    def backward(self, gy):
        weights, shape = self._weights()
        return as_grad(operands(gy)[0].reshape(shape) * weights, self.inputs[0])

    def jvp(self, dx):
        weights, _ = self._weights()
        return sum(dx * weights, self.axis, self.keepdims)


class Min(Max):
    """y = x.min(axis, keepdims); gradient as for Max (ties split evenly)."""
    __slots__ = ()

    def forward(self, x):
        return x.min(axis=self.axis, keepdims=self.keepdims)


def max(x, axis=None, keepdims=False):
    """Maximum over ``axis`` (None: all; an int or a tuple), as ``np.max``;
    same dtype.  dL/dx = gy / k at the k elements equal to the maximum (ties
    split evenly), 0 elsewhere.  An empty reduction is NumPy's ValueError."""
    return Max(axis, keepdims)(x)


def min(x, axis=None, keepdims=False):
    """Minimum over ``axis``, as ``np.min``; gradient as ``max`` (ties split evenly)."""
    return Min(axis, keepdims)(x)
