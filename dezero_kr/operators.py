"""The operations behind ``Variable``'s operators and methods.

``x + y``, ``x - y``, ``x * y``, ``x / y``, ``-x``, ``x ** c``, ``x @ W``,
``x[i]``, ``x.T``, ``x.reshape(...)``, ``x.transpose(...)``, ``x.sum(...)``,
``x.max(...)``, ``x.min(...)`` call the lowercase functions of this module;
``sum_to`` and ``broadcast_to`` are here because those rules need them.
DeZero kept them in ``core.py``; ``dezero_kr.core`` and ``dezero_kr.functions``
re-export every name, so ``from dezero_kr.core import Add, add`` still works.

Read the section "how a rule is written" first: every rule of the package
follows it.
"""
import numbers

import numpy as np

from dezero_kr import cuda
from dezero_kr.array_utils import (array_sum, max_backward_shape, may_hold_nan, reshape_sum_backward,
                                   sum_to as _sum_to_array)
from dezero_kr.core import Config, Function, Variable, _plain_array, array_types, as_array, as_variable


def _scalar_or_array(c, op):
    """A constant operand: Python scalars stay scalars, so NumPy's weak-scalar
    rule keeps the Variable's dtype (float32 * 2.5 is float32).  Anything else
    is a TypeError naming the operator ``op`` (``'+'``, ``'**'``, ...); an ndarray
    subclass becomes a plain ndarray, a masked array a TypeError (``core._plain_array``)."""
    if isinstance(c, np.generic):  # first: np.float64 is a float, but not a weak scalar
        if c.dtype.kind in 'biufc':
            return c.item()
    elif isinstance(c, (bool, int, float, complex)):
        return c
    elif isinstance(c, array_types):
        return c if c.__class__ is np.ndarray else _plain_array(c)  # np.matrix: elementwise *
    raise TypeError(f"unsupported operand type(s) for {op}: 'Variable' and '{type(c).__name__}' "
                    f"(expected a Variable, a numpy.ndarray or a Python number)")


# --- how a rule is written ---------------------------------------------------
# Every derivative is written once, as one formula that runs on Variables
# while a graph is recorded (``backward(create_graph=True)``, or forward mode
# under an outer level: the result must be differentiable again) and on plain
# arrays otherwise (a first-order backward then builds no Function objects).
# ``operands`` hands a rule one or the other, ``cached_or_rebuilt`` does the
# same for a value ``forward`` kept, and ``as_grad`` turns the result into the
# gradient Variable of an input.  These helpers (and ``recording``) are the
# only code of the operations that reads ``Config.enable_backprop``.  A rule
# that needs a function such as cos of an operand calls ``cos(a)`` for a
# Variable and the NumPy ufunc for an array (``isinstance`` decides).
#
# Three kinds of rule:
# * elementwise ops give ``forward`` and their derivative ``_slope(x, y)``
#   (``_slopes(x0, x1)`` with two inputs); ``Elementwise`` and
#   ``BinaryElementwise`` derive backward (dL/dx = sum_to(gy * slope)) and
#   jvp (dy = dx * slope) from it;
# * linear ops (reshape, sum, get_item, add, the constant operands, ...): jvp
#   is the op itself applied to the tangent;
# * the rest (matmul, softmax, norms, attention, losses): backward and jvp
#   side by side, sharing a helper for their common sub-expressions.
def operands(*vs):
    """``vs`` (Variables) while a graph is recorded, else their ``.data`` arrays."""
    if Config.enable_backprop:
        return vs
    # Unrolled for the usual 1-4 operands: on Python 3.11 the list comprehension
    # costs 0.3 us more per call (0.47 us instead of 0.13 us for three, measured).
    n = len(vs)
    if n == 1:
        return (vs[0].data,)
    if n == 2:
        return (vs[0].data, vs[1].data)
    if n == 3:
        return (vs[0].data, vs[1].data, vs[2].data)
    if n == 4:
        return (vs[0].data, vs[1].data, vs[2].data, vs[3].data)
    return tuple([v.data for v in vs])


def cached_or_rebuilt(cached, rebuild):
    """A value ``forward`` kept, as a rule operand: the array ``cached`` on the
    plain path; while a graph is recorded, ``rebuild()``, the same value
    built as Variables from the inputs (so the rule is differentiable again)."""
    if Config.enable_backprop:
        return rebuild()
    return cached


def recording():
    """Whether a graph is being recorded now: a ``forward`` may skip work that
    only a later backward or jvp needs (max pooling's argmax positions)."""
    return Config.enable_backprop


def as_grad(g, x):
    """A backward result ``g`` (Variable, or an array on the plain path) as the
    gradient of input ``x``: summed over broadcast axes to ``x``'s shape."""
    shape = x.data.shape
    if g.__class__ is np.ndarray:  # the plain path, tested first: it is the hot one
        return Variable(g if g.shape == shape else _sum_to_array(g, shape))
    if isinstance(g, Variable):
        return sum_to(g, shape) if g.data.shape != shape else g
    g = as_array(g)  # a NumPy scalar from a 0-d operation (or a CuPy array)
    return Variable(g if g.shape == shape else _sum_to_array(g, shape))


def _bcast_tangent(t, y):
    """A tangent broadcast to the output ``y``'s shape (None stays None)."""
    if t is not None and t.data.shape != y.data.shape:
        return broadcast_to(t, y.data.shape)
    return t


def add_tangents(a, b):
    """Sum of two tangents for jvp rules, where None means zero."""
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def _times_factors(g, factors):
    """``g`` times a slope given as a tuple of factors, multiplied in from the left
    (``(g * a) * b``, the grouping of a rule written ``gy * a * b``).  The factors after
    the first must not widen the product's shape or dtype: they multiply the fresh
    product array in place (one temporary array fewer)."""
    g = g * factors[0]
    for factor in factors[1:]:
        g *= factor  # (a Variable has no in-place *=: g = g * factor, a new node)
    return g


class Elementwise(Function):
    """Base of the one-input elementwise ops y = f(x): a subclass gives
    ``forward`` and ``_slope(x, y)``, the derivative f'(x) computed from the
    operands x and y (arrays, or Variables while a graph is recorded); the
    slope broadcasts to y's shape.  It may be a tuple of factors whose product
    is f'(x): they multiply the gradient one by one, from the left (sigmoid's
    ``(gy * y) * (1 - y)``, DeZero's grouping of ``gy * y * (1 - y)``).

    dL/dx = sum_to(gy * f'(x), x.shape);  jvp: dy = dx * f'(x), broadcast to y.
    """
    __slots__ = ()

    def backward(self, gy):
        x = self.inputs[0]
        g, a, y = operands(gy, x, self.outputs[0]())
        s = self._slope(a, y)
        return as_grad(g * s if type(s) is not tuple else _times_factors(g, s), x)

    def jvp(self, dx):
        y = self.outputs[0]()
        s = self._slope(*operands(self.inputs[0], y))
        return _bcast_tangent(dx * s if type(s) is not tuple else _times_factors(dx, s), y)


class BinaryElementwise(Function):
    """Base of the two-input elementwise ops y = f(x0, x1) (broadcasting): a
    subclass gives ``forward`` and ``_slopes(x0, x1)``, the partial
    derivatives (df/dx0, df/dx1) computed from the operands x0 and x1.

    dL/dx_i = sum_to(gy * df/dx_i, x_i.shape);  jvp: dy = dx0 df/dx0 + dx1 df/dx1.
    """
    __slots__ = ()

    def backward(self, gy):
        x0, x1 = self.inputs
        g, a0, a1 = operands(gy, x0, x1)
        s0, s1 = self._slopes(a0, a1)
        return as_grad(g * s0, x0), as_grad(g * s1, x1)

    def jvp(self, dx0, dx1):
        s0, s1 = self._slopes(*operands(*self.inputs))
        t0 = None if dx0 is None else dx0 * s0
        t1 = None if dx1 is None else dx1 * s1
        return _bcast_tangent(add_tangents(t0, t1), self.outputs[0]())


class Add(Function):
    """y = x0 + x1 (broadcasting).  dL/dx0 = sum_to(gy), dL/dx1 = sum_to(gy)."""
    __slots__ = ()
    backward_reads_values = False

    def forward(self, x0, x1):
        return x0 + x1

    def backward(self, gy):
        x0, x1 = self.inputs
        g, = operands(gy)
        return as_grad(g, x0), as_grad(g, x1)

    def jvp(self, dx0, dx1):
        y = self.outputs[0]()
        return _bcast_tangent(add_tangents(dx0, dx1), y)


class Sub(Function):
    """y = x0 - x1.  dL/dx0 = sum_to(gy), dL/dx1 = -sum_to(gy)."""
    __slots__ = ()
    backward_reads_values = False

    def forward(self, x0, x1):
        return x0 - x1

    def backward(self, gy):
        x0, x1 = self.inputs
        g, = operands(gy)
        return as_grad(g, x0), as_grad(-g, x1)

    def jvp(self, dx0, dx1):
        return _bcast_tangent(add_tangents(dx0, None if dx1 is None else -dx1),
                              self.outputs[0]())


class Neg(Function):
    """y = -x; dL/dx = -gy."""
    __slots__ = ()
    backward_reads_values = False

    def forward(self, x):
        return -x

    def backward(self, gy):
        return as_grad(-operands(gy)[0], self.inputs[0])

    def jvp(self, dx):
        return -dx


class _ConstantOperand(Function):
    """Base of y = x (op) c with a constant c (a number or an array, not
    differentiated): y is affine in x, so the rule is its linear part
    ``_linear(g)`` (g, g * c, ...) applied to gy (summed back to x's shape) in
    backward and to the tangent (broadcast to y) in jvp."""
    __slots__ = ('c',)
    backward_reads_values = False

    def __init__(self, c):
        self.c = c

    def backward(self, gy):
        return as_grad(self._linear(operands(gy)[0]), self.inputs[0])

    def jvp(self, dx):
        return _bcast_tangent(self._linear(dx), self.outputs[0]())

    def _linear(self, g):
        return g


class AddConstant(_ConstantOperand):
    """y = x + c for a constant c (scalar or array); dL/dx = sum_to(gy)."""
    __slots__ = ()

    def forward(self, x):
        return x + self.c


class SubConstant(_ConstantOperand):
    """y = x - c for a constant c; dL/dx = sum_to(gy)."""
    __slots__ = ()

    def forward(self, x):
        return x - self.c


class RSubConstant(_ConstantOperand):
    """y = c - x for a constant c; dL/dx = -sum_to(gy)."""
    __slots__ = ()

    def forward(self, x):
        return self.c - x

    def _linear(self, g):
        return -g


class MulConstant(_ConstantOperand):
    """y = x * c for a constant c; dL/dx = sum_to(gy * c)."""
    __slots__ = ()

    def forward(self, x):
        return x * self.c

    def _linear(self, g):
        return g * self.c


class DivConstant(_ConstantOperand):
    """y = x / c for a constant c; dL/dx = sum_to(gy / c)."""
    __slots__ = ()

    def forward(self, x):
        return x / self.c

    def _linear(self, g):
        return g / self.c


class Mul(BinaryElementwise):
    """y = x0 * x1 (broadcasting).  dL/dx0 = sum_to(gy * x1), dL/dx1 = sum_to(gy * x0)."""
    __slots__ = ()

    def forward(self, x0, x1):
        return x0 * x1

    def _slopes(self, x0, x1):
        return x1, x0


class Div(BinaryElementwise):
    """y = x0 / x1 (broadcasting).  dL/dx0 = sum_to(gy / x1), dL/dx1 = sum_to(-gy * x0 / x1^2)."""
    __slots__ = ()

    def forward(self, x0, x1):
        return x0 / x1

    def _slopes(self, x0, x1):
        inv = 1 / x1
        return inv, -x0 * inv * inv


class RDivConstant(Elementwise):
    """y = c / x for a constant c; dL/dx = sum_to(-gy * y / x)."""
    __slots__ = ('c',)

    def __init__(self, c):
        self.c = c

    def forward(self, x):
        return self.c / x

    def _slope(self, x, y):
        return -y / x


class Pow(Elementwise):
    """y = x ** c for a constant exponent c; dL/dx = sum_to(gy * c * x ** (c - 1)).

    Where ``c == 0`` the derivative is 0 at every x, x = 0 included (``x ** 0``
    is the constant 1; the formula would give ``0 * inf = nan`` there), as in
    PyTorch.  So the (n+1)-th derivative of ``x ** n`` is 0 everywhere.
    """
    __slots__ = ('c',)

    def __init__(self, c):
        self.c = c

    def forward(self, x):
        return x ** self.c

    def _slope(self, x, y):
        return _pow_slope(x, self.c)


def _pow_slope(x, c):
    """``c * x ** (c - 1)`` (Variable or array ``x``, constant ``c``), exactly 0 where c == 0."""
    if isinstance(c, array_types):
        xp = cuda.get_array_module(c)
        return c * x ** (xp.where(c == 0, 1, c) - 1)
    return c * x ** (c - 1) if c != 0 else 0 * x ** 0


class RPow(Elementwise):
    """y = c ** x for a constant base c; dL/dx = sum_to(gy * y * log(c)).

    Where ``c == 0`` and ``x >= 0`` the derivative is 0 (``0 ** x`` is 0, or 1
    at x = 0, and the formula would give ``0 * -inf``), as in PyTorch.
    """
    __slots__ = ('c',)

    def __init__(self, c):
        self.c = c

    def forward(self, x):
        return self.c ** x

    def _slope(self, x, y):
        y_data = self.outputs[0]().data
        xp = cuda.get_array_module(y_data)
        c = xp.asarray(self.c, dtype=y_data.dtype)
        zero = c == 0
        if not zero.any():
            return y * xp.log(c)
        with np.errstate(divide='ignore'):
            log_c = xp.where(zero & (self.inputs[0].data >= 0), 0, xp.log(c)).astype(y_data.dtype)
        return y * log_c


class PowVariable(BinaryElementwise):
    """y = x ** e with both a Variable.  dL/dx = gy * e * x**(e-1), dL/de = gy * y * log(x).

    As PyTorch: dL/dx is 0 where e == 0, and dL/de is 0 where x == 0 and
    e >= 0 (instead of the ``0 * inf = nan`` of the formulas there).
    """
    __slots__ = ()

    def forward(self, x, e):
        return x ** e

    def _slopes(self, x, e):
        y, = operands(self.outputs[0]())
        x_data, e_data = self.inputs[0].data, self.inputs[1].data
        xp = cuda.get_array_module(x_data)
        dtype = self.outputs[0]().data.dtype
        # e - 1, but 0 where e == 0 (the added mask is a constant: d/de is still 1)
        e_zero = e_data == 0
        slope_exp = e - 1 + xp.asarray(e_zero, dtype=dtype) if e_zero.any() else e - 1
        # log(x), but log(1) = 0 where x == 0 and e >= 0 (y is 0 or 1 there, so y * log = 0)
        x_zero = (x_data == 0) & (e_data >= 0)
        x_log = x + xp.asarray(x_zero, dtype=dtype) if x_zero.any() else x
        return e * x ** slope_exp, y * (log(x_log) if isinstance(x_log, Variable) else xp.log(x_log))


class Log(Elementwise):
    """y = log(x) (natural); dL/dx = gy / x.  (Here because PowVariable needs it;
    ``dezero_kr.functions_math`` re-exports it with the other elementary functions.)"""
    __slots__ = ()

    def forward(self, x):
        return cuda.get_array_module(x).log(x)

    def _slope(self, x, y):
        return 1 / x


def log(x):
    """Natural logarithm, elementwise: ``y = log(x)``, same shape and dtype; dL/dx = gy / x."""
    return Log()(x)


def add(x0, x1):
    """``x0 + x1`` (the operator ``+``), elementwise with NumPy broadcasting.

    Shape: the broadcast shape; dtype: NumPy's result type (a Python scalar
    keeps x0's dtype).  dL/dx0 = sum_to(gy, x0.shape), dL/dx1 = sum_to(gy, x1.shape).
    ``x1`` a Variable, or a constant (Python number, NumPy scalar or array, not
    differentiated); anything else is a TypeError naming the operator.
    """
    if isinstance(x1, Variable):
        return Add()(x0, x1)
    return AddConstant(_scalar_or_array(x1, '+'))(x0)


def sub(x0, x1):
    """``x0 - x1`` (the operator ``-``), elementwise with NumPy broadcasting.

    Shape: the broadcast shape; dtype: NumPy's result type (a Python scalar
    keeps x0's dtype).  dL/dx0 = sum_to(gy), dL/dx1 = -sum_to(gy), each to its input's shape.
    ``x1`` a Variable, or a constant (Python number, NumPy scalar or array, not
    differentiated); anything else is a TypeError naming the operator.
    """
    if isinstance(x1, Variable):
        return Sub()(x0, x1)
    return SubConstant(_scalar_or_array(x1, '-'))(x0)


def rsub(x0, x1):
    """``x1 - x0``, the reflected operator ``c - x`` (as ``sub`` with the operands swapped).

    dL/dx0 = -sum_to(gy, x0.shape).  ``x1`` a Variable, or a constant (Python number, NumPy scalar or array, not
    differentiated); anything else is a TypeError naming the operator.
    """
    if isinstance(x1, Variable):
        return Sub()(x1, x0)
    return RSubConstant(_scalar_or_array(x1, '-'))(x0)


def mul(x0, x1):
    """``x0 * x1`` (the operator ``*``), elementwise with NumPy broadcasting.

    Shape: the broadcast shape; dtype: NumPy's result type (a Python scalar
    keeps x0's dtype).  dL/dx0 = sum_to(gy * x1), dL/dx1 = sum_to(gy * x0).
    ``x1`` a Variable, or a constant (Python number, NumPy scalar or array, not
    differentiated); anything else is a TypeError naming the operator.
    """
    if isinstance(x1, Variable):
        return Mul()(x0, x1)
    return MulConstant(_scalar_or_array(x1, '*'))(x0)


def neg(x):
    """``-x`` (unary minus), same shape and dtype as x; dL/dx = -gy."""
    return Neg()(x)


def div(x0, x1):
    """``x0 / x1`` (the operator ``/``), elementwise with NumPy broadcasting.

    Shape: the broadcast shape; dtype: NumPy's true-division result type.
    dL/dx0 = sum_to(gy / x1), dL/dx1 = sum_to(-gy * x0 / x1^2).  Division by
    zero gives inf or nan with NumPy's RuntimeWarning, not an exception.
    ``x1`` a Variable, or a constant (Python number, NumPy scalar or array, not
    differentiated); anything else is a TypeError naming the operator.
    """
    if isinstance(x1, Variable):
        return Div()(x0, x1)
    return DivConstant(_scalar_or_array(x1, '/'))(x0)


def rdiv(x0, x1):
    """``x1 / x0``, the reflected operator ``c / x``; dL/dx0 = sum_to(-gy * y / x0).

    ``x1`` a Variable, or a constant (Python number, NumPy scalar or array, not
    differentiated); anything else is a TypeError naming the operator.
    """
    if isinstance(x1, Variable):
        return Div()(x1, x0)
    return RDivConstant(_scalar_or_array(x1, '/'))(x0)


def pow(x, c):
    """``x ** c`` (the operator ``**``), elementwise with broadcasting.

    ``c`` a constant (as DeZero; dL/dx = gy * c * x^(c-1), exactly 0 where c == 0)
    or a Variable (also dL/dc = gy * y * log(x), 0 where x == 0 and c >= 0).
    Shape: the broadcast shape; dtype: NumPy's result type.  Anything else
    than a Variable, a number or an array is a TypeError.
    """
    if isinstance(c, Variable):
        return PowVariable()(x, c)
    return Pow(_scalar_or_array(c, '**'))(x)


def rpow(x, c):
    """``c ** x``, the reflected operator (``2 ** x``); dL/dx = gy * y * log(c)
    (0 where c == 0 and x >= 0).  ``c`` a number, an array or a Variable, else TypeError."""
    if isinstance(c, Variable):
        return PowVariable()(c, x)
    return RPow(_scalar_or_array(c, '**'))(x)


# --- shape operations ----------------------------------------------------------
class Reshape(Function):
    """y = x.reshape(shape); dL/dx = gy.reshape(x.shape)."""
    __slots__ = ('shape',)
    backward_reads_values = False

    def __init__(self, shape):
        self.shape = shape

    def forward(self, x):
        return x.reshape(self.shape)

    def backward(self, gy):
        x = self.inputs[0]
        return as_grad(operands(gy)[0].reshape(x.data.shape), x)

    def jvp(self, dx):
        return reshape(dx, self.shape)


def _as_shape(fname, shape):
    """``shape`` as a tuple of ints: a tuple, a list or a single int (``6`` means ``(6,)``,
    as NumPy and DeZero take it); anything else is a TypeError naming ``fname``."""
    if shape.__class__ is tuple:
        return shape
    if isinstance(shape, (list, tuple)) or hasattr(shape, 'tolist') and getattr(shape, 'ndim', 0) == 1:
        return tuple(shape)
    if isinstance(shape, numbers.Integral) and not isinstance(shape, (bool, np.bool_)):
        return (int(shape),)
    raise TypeError(f'{fname}: shape must be an int or a tuple of ints, got {type(shape).__name__} '
                    f'{shape!r:.60}')


def reshape(x, shape):
    """``x`` with a new ``shape`` (a tuple or an int; one entry may be -1), the same elements
    in C order and the same dtype; ``x`` itself (as a Variable) when the shape is
    unchanged.  dL/dx = gy.reshape(x.shape).  A size mismatch is NumPy's ValueError."""
    shape = _as_shape('reshape', shape)
    if x.shape == shape:
        return as_variable(x)
    return Reshape(shape)(x)


class Transpose(Function):
    """y = x.transpose(axes); dL/dx = gy.transpose(argsort(axes))."""
    __slots__ = ('axes',)
    backward_reads_values = False

    def __init__(self, axes=None):
        self.axes = axes

    def forward(self, x):
        return x.transpose(self.axes)

    def backward(self, gy):
        inv_axes = None
        if self.axes is not None:
            inv_axes = tuple(np.argsort([a % len(self.axes) for a in self.axes]).tolist())
        return as_grad(operands(gy)[0].transpose(inv_axes), self.inputs[0])

    def jvp(self, dx):
        return transpose(dx, self.axes)


def transpose(x, axes=None):
    """``x`` with its axes permuted (``axes=None`` reverses them), as
    ``np.transpose``; same dtype.  dL/dx = gy transposed by the inverse permutation."""
    return Transpose(axes)(x)


def _is_basic_index(slices):
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
    if _is_basic_index(slices):
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
        return _broadcast_grad(g, x_shape)

    def jvp(self, dx):
        return sum(dx, self.axis, self.keepdims)


def sum(x, axis=None, keepdims=False):
    """Sum of the elements over ``axis`` (None: all; an int or a tuple), as
    ``np.sum``; ``keepdims`` keeps the reduced axes as length 1.  dtype as NumPy's
    sum (float32 stays float32; float16 is accumulated in float32, then rounded).
    dL/dx = gy broadcast back to x.shape.  A bad axis is NumPy's AxisError."""
    return Sum(axis, keepdims)(x)


class SumTo(Function):
    """y = sum_to(x, shape) (undo broadcasting); dL/dx = broadcast_to(gy, x.shape)."""
    __slots__ = ('shape',)
    backward_reads_values = False

    def __init__(self, shape):
        self.shape = tuple(shape)

    def forward(self, x):
        return _sum_to_array(x, self.shape)

    def backward(self, gy):
        return _broadcast_grad(operands(gy)[0], self.inputs[0].data.shape)

    def jvp(self, dx):
        return sum_to(dx, self.shape)


def sum_to(x, shape):
    """Sum ``x`` down to ``shape`` (undo broadcasting: leading axes and axes
    where ``shape`` has 1 are summed, kept as in ``shape``); ``x`` itself when the
    shape already matches; ``shape`` a tuple or an int.  dL/dx = broadcast_to(gy, x.shape)."""
    shape = _as_shape('sum_to', shape)
    if x.shape == shape:
        return as_variable(x)
    return SumTo(shape)(x)


class BroadcastTo(Function):
    """y = broadcast_to(x, shape); dL/dx = sum_to(gy, x.shape)."""
    __slots__ = ('shape',)
    backward_reads_values = False

    def __init__(self, shape):
        self.shape = tuple(shape)

    def forward(self, x):
        xp = cuda.get_array_module(x)
        return xp.broadcast_to(x, self.shape)

    def backward(self, gy):
        return as_grad(operands(gy)[0], self.inputs[0])  # summed to x's shape

    def jvp(self, dx):
        return broadcast_to(dx, self.shape)


def _broadcast_grad(g, shape):
    """A gradient operand broadcast to ``shape`` (a read-only view for an array), as a Variable."""
    if isinstance(g, Variable):
        return broadcast_to(g, shape)
    return Variable(cuda.get_array_module(g).broadcast_to(g, shape))


def broadcast_to(x, shape):
    """``x`` broadcast to ``shape`` as ``np.broadcast_to`` (same dtype); ``x``
    itself when the shape already matches; ``shape`` a tuple or an int.
    dL/dx = sum_to(gy, x.shape).  Shapes that do not broadcast are NumPy's ValueError."""
    shape = _as_shape('broadcast_to', shape)
    if x.shape == shape:
        return as_variable(x)
    return BroadcastTo(shape)(x)


class MatMul(Function):
    """y = x @ W (2-D, batched or 1-D, as NumPy).  dL/dx = gy @ W^T, dL/dW = x^T @ gy."""
    __slots__ = ()

    def forward(self, x, W):
        return x @ W

    def backward(self, gy):
        x, W = self.inputs
        g, a, w = operands(gy, x, W)
        # A 1-D operand is a (1, n) row / (n, 1) column whose added axis NumPy
        # dropped from y: put it back in gy, use the matrix rule, drop it again.
        a2 = a if a.ndim > 1 else a.reshape((1,) + a.shape)
        w2 = w if w.ndim > 1 else w.reshape(w.shape + (1,))
        if a2 is not a or w2 is not w:
            batch = np.broadcast_shapes(a2.shape[:-2], w2.shape[:-2])
            g = g.reshape(batch + (a2.shape[-2], w2.shape[-1]))
        gx = gW = None
        if x.requires_grad:
            gx = as_grad(_summed_to(g @ _swap_last(w2), a2.shape).reshape(x.shape), x)
        if W.requires_grad:
            gW = as_grad(_summed_to(_swap_last(a2) @ g, w2.shape).reshape(W.shape), W)
        return gx, gW

    def jvp(self, dx, dW):
        x, W = self.inputs
        t0 = None if dx is None else matmul(dx, W)
        t1 = None if dW is None else matmul(x, dW)
        return add_tangents(t0, t1)


def _swap_last(a):
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
