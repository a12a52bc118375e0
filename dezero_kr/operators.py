"""The operations behind ``Variable``'s operators and methods.

``x + y``, ``x - y``, ``x * y``, ``x / y``, ``-x``, ``x ** c`` call the
lowercase functions of this module; ``sum_to`` and ``broadcast_to`` are here
because those rules need them.  The shape, indexing and reduction operations
(``x[i]``, ``x.T``, ``x.reshape(...)``, ``x.sum(...)``, ``x.max(...)``, ``x @ W``)
are in ``dezero_kr.operators_shape``, written with this module's tools.
DeZero kept them in ``core.py``; ``dezero_kr.core`` and ``dezero_kr.functions``
re-export every name, so ``from dezero_kr.core import Add, add`` still works.

Read the section "how a rule is written" first: every rule of the package
follows it.
"""
import numbers

import numpy as np

from dezero_kr import cuda
from dezero_kr.array_utils import sum_to as _sum_to_array
from dezero_kr.core import Config, Function, Variable, plain_array, array_types, as_array, as_variable


def _scalar_or_array(c, op):
    """A constant operand: Python scalars stay scalars, so NumPy's weak-scalar
    rule keeps the Variable's dtype (float32 * 2.5 is float32).  Anything else
    is a TypeError naming the operator ``op`` (``'+'``, ``'**'``, ...); an ndarray
    subclass becomes a plain ndarray, a masked array a TypeError (``core.plain_array``)."""
    if isinstance(c, np.generic):  # first: np.float64 is a float, but not a weak scalar
        if c.dtype.kind in 'biufc':
            return c.item()
    elif isinstance(c, (bool, int, float, complex)):
        return c
    elif isinstance(c, array_types):
        return c if c.__class__ is np.ndarray else plain_array(c)  # np.matrix: elementwise *
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
# A rule may also give ``backward_arrays``: the same formula called with gradient arrays
# (backprop off), returning arrays (``array_grad``, ``broadcast_array``), for a tool that
# runs a backward pass with no Variables at all (``Function.backward_arrays``).
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
    return Variable(array_grad(g, x))


def array_grad(g, x):
    """``as_grad`` for ``backward_arrays``: the array ``g`` (a NumPy scalar from a 0-d
    operation becomes a 0-d array) summed over broadcast axes to input ``x``'s shape."""
    shape = x.data.shape
    if g.__class__ is not np.ndarray:
        g = as_array(g)  # a NumPy scalar (or a CuPy array)
    return g if g.shape == shape else _sum_to_array(g, shape)


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


def times_slope(g, slope):
    """``g * slope``, the chain rule of an elementwise op.  A slope given as a tuple of
    factors is multiplied in from the left (``(g * a) * b``, the grouping of a rule
    written ``gy * a * b``); the factors after the first must not widen the product's
    shape or dtype: they multiply the fresh product array in place (one temporary
    array fewer)."""
    if type(slope) is not tuple:
        return g * slope
    g = g * slope[0]
    for factor in slope[1:]:
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
        return as_grad(times_slope(g, self._slope(a, y)), x)

    def backward_arrays(self, gy):
        x = self.inputs[0]
        return array_grad(times_slope(gy, self._slope(x.data, self.outputs[0]().data)), x)

    def jvp(self, dx):
        y = self.outputs[0]()
        return _bcast_tangent(times_slope(dx, self._slope(*operands(self.inputs[0], y))), y)


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

    def backward_arrays(self, gy):
        x0, x1 = self.inputs
        s0, s1 = self._slopes(x0.data, x1.data)
        return array_grad(gy * s0, x0), array_grad(gy * s1, x1)

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

    def backward_arrays(self, gy):
        x0, x1 = self.inputs
        return array_grad(gy, x0), array_grad(gy, x1)

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

    def backward_arrays(self, gy):
        x0, x1 = self.inputs
        return array_grad(gy, x0), array_grad(-gy, x1)

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

    def backward_arrays(self, gy):
        return array_grad(-gy, self.inputs[0])

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

    def backward_arrays(self, gy):
        return array_grad(self._linear(gy), self.inputs[0])

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


def binary_operator(name, op, constant_op, symbol, doc, reflected=False):
    """The wrapper ``name(x0, x1)`` of a binary operator: ``op()(x0, x1)`` when ``x1`` is a
    Variable (``op()(x1, x0)`` if ``reflected``), else ``constant_op(c)(x0)`` with the
    constant ``c`` (a Python number, NumPy scalar or array, not differentiated; anything
    else is a TypeError naming ``symbol``).  Shapes broadcast as NumPy's; the dtype is
    NumPy's result type (a Python scalar keeps x0's dtype).  A closure, not a call
    through a shared helper: ``x + y`` costs one Python call before the operation."""
    def apply(x0, x1):
        if isinstance(x1, Variable):
            return op()(x1, x0) if reflected else op()(x0, x1)
        return constant_op(_scalar_or_array(x1, symbol))(x0)
    apply.__name__ = apply.__qualname__ = name
    apply.__doc__ = doc + ('\n\n    Operands, shape and dtype: as ``binary_operator`` says.')
    return apply


add = binary_operator('add', Add, AddConstant, '+', """``x0 + x1`` (the operator ``+``);
    dL/dx0 = sum_to(gy, x0.shape), dL/dx1 = sum_to(gy, x1.shape).""")
sub = binary_operator('sub', Sub, SubConstant, '-', """``x0 - x1`` (the operator ``-``);
    dL/dx0 = sum_to(gy), dL/dx1 = -sum_to(gy), each to its input's shape.""")
rsub = binary_operator('rsub', Sub, RSubConstant, '-', """``x1 - x0``, the reflected
    operator ``c - x``; dL/dx0 = -sum_to(gy, x0.shape).""", reflected=True)
mul = binary_operator('mul', Mul, MulConstant, '*', """``x0 * x1`` (the operator ``*``);
    dL/dx0 = sum_to(gy * x1), dL/dx1 = sum_to(gy * x0).""")
div = binary_operator('div', Div, DivConstant, '/', """``x0 / x1`` (the operator ``/``);
    dL/dx0 = sum_to(gy / x1), dL/dx1 = sum_to(-gy * x0 / x1^2).  The dtype is NumPy's
    true-division result type; division by zero gives inf or nan with NumPy's
    RuntimeWarning, not an exception.""")
rdiv = binary_operator('rdiv', Div, RDivConstant, '/', """``x1 / x0``, the reflected
    operator ``c / x``; dL/dx0 = sum_to(-gy * y / x0).""", reflected=True)


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
    return PowVariable()(c, x) if isinstance(c, Variable) else RPow(_scalar_or_array(c, '**'))(x)


def neg(x):
    """``-x`` (unary minus), same shape and dtype as x; dL/dx = -gy."""
    return Neg()(x)


# --- shape operations ----------------------------------------------------------


def as_shape(fname, shape):
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


def to_shape(cls, fname, x, shape):
    """``cls(shape)(x)`` for the operations that take a target shape (reshape, sum_to,
    broadcast_to): ``shape`` read by ``as_shape``, and ``x`` itself (as a Variable) when
    it already has that shape, so no operation is recorded."""
    shape = as_shape(fname, shape)
    if x.shape == shape:
        return as_variable(x)
    return cls(shape)(x)


class ShapeFunction(Function):
    """The base of the operations that take a target shape (Reshape, SumTo, BroadcastTo):
    ``shape`` kept as a tuple of ints (``as_shape``; a TypeError names the class)."""
    __slots__ = ('shape',)
    backward_reads_values = False

    def __init__(self, shape):
        self.shape = as_shape(type(self).__name__, shape)


class SumTo(ShapeFunction):
    """y = sum_to(x, shape) (undo broadcasting); dL/dx = broadcast_to(gy, x.shape)."""
    __slots__ = ()

    def forward(self, x):
        return _sum_to_array(x, self.shape)

    def backward(self, gy):
        return broadcast_grad(operands(gy)[0], self.inputs[0].data.shape)

    def backward_arrays(self, gy):
        return broadcast_array(gy, self.inputs[0].data.shape)

    def jvp(self, dx):
        return sum_to(dx, self.shape)


def sum_to(x, shape):
    """Sum ``x`` down to ``shape`` (undo broadcasting: leading axes and axes
    where ``shape`` has 1 are summed, kept as in ``shape``); ``x`` itself when the
    shape already matches; ``shape`` a tuple or an int.  dL/dx = broadcast_to(gy, x.shape)."""
    return to_shape(SumTo, 'sum_to', x, shape)


class BroadcastTo(ShapeFunction):
    """y = broadcast_to(x, shape); dL/dx = sum_to(gy, x.shape)."""
    __slots__ = ()

    def forward(self, x):
        xp = cuda.get_array_module(x)
        return xp.broadcast_to(x, self.shape)

    def backward(self, gy):
        return as_grad(operands(gy)[0], self.inputs[0])  # summed to x's shape

    def backward_arrays(self, gy):
        return array_grad(gy, self.inputs[0])

    def jvp(self, dx):
        return broadcast_to(dx, self.shape)


def broadcast_grad(g, shape):
    """A gradient operand broadcast to ``shape`` (a read-only view for an array), as a Variable."""
    if isinstance(g, Variable):
        return broadcast_to(g, shape)
    return Variable(broadcast_array(g, shape))


def broadcast_array(g, shape):
    """``broadcast_grad`` for ``backward_arrays``: the array ``g`` as a read-only view of ``shape``."""
    return cuda.get_array_module(g).broadcast_to(g, shape)


def broadcast_to(x, shape):
    """``x`` broadcast to ``shape`` as ``np.broadcast_to`` (same dtype); ``x``
    itself when the shape already matches; ``shape`` a tuple or an int.
    dL/dx = sum_to(gy, x.shape).  Shapes that do not broadcast are NumPy's ValueError."""
    return to_shape(BroadcastTo, 'broadcast_to', x, shape)
