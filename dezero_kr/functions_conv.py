"""Convolution and pooling on NCHW images (DeZero's ``functions_conv``).

Read top to bottom:

1. Argument checks (stride/pad/kernel as int or pair, 4-D shapes, channels).
2. Raw-array helpers: the strided *window view* of a zero-padded image,
   ``im2col_array`` / ``col2im_array`` and the max-pooling kernels.
3. ``Conv2d``, ``Deconv2d`` and ``Conv2DGradW``: a convolution is one batched
   matmul ``W (OC, C*KH*KW) @ col (N, C*KH*KW, OH*OW)`` whose result is
   already NCHW; its input gradient is a transposed convolution and its weight
   gradient ``Conv2DGradW`` is differentiable again (both its inputs).
4. Max pooling (``Pooling`` / ``Pooling2DGrad`` / ``Pooling2DWithIndexes``: a
   gather and a scatter-add at the remembered argmax positions, each the
   adjoint of the other) and ``AveragePooling``.
5. ``Im2col`` / ``Col2im`` as Functions and the teaching compositions
   ``conv2d_simple`` / ``pooling_simple``.

Shapes: x ``(N, C, H, W)``; conv weight ``(OC, C, KH, KW)``; deconv weight
``(C, OC, KH, KW)``; bias ``(OC,)``; ``OH = (H + 2*PH - KH) // SH + 1``.
Padding is with zeros, for pooling too (DeZero's definition: a max-pool window
that reaches into the padding sees zeros).
"""
import numpy as np

from dezero_kr import cuda
from dezero_kr.array_utils import get_conv_outsize, get_deconv_outsize, may_hold_nan, pair
from dezero_kr.core import Function
from dezero_kr.core import as_variable  # noqa: F401  (DeZero's functions_conv exports it)
from dezero_kr.operators import add_tangents, broadcast_to, recording
from dezero_kr.operators_shape import max as _max, reshape, scatter_add, sum as _sum, transpose
from dezero_kr.functions_math import linear


# =============================================================================
# Argument checks
# =============================================================================
def _int_pair(fname, name, value, minimum):
    """``value`` (int or 2-tuple of ints) as a pair of ints >= ``minimum``, else ValueError."""
    try:
        p = pair(value)
    except ValueError:
        p = None
    if p is None or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in p):
        raise ValueError(f'{fname}: {name} must be an int or a pair of ints, got {value!r}')
    if p[0] < minimum or p[1] < minimum:
        raise ValueError(f'{fname}: {name} must be >= {minimum}, got {value!r}')
    return int(p[0]), int(p[1])


def _check_4d(fname, name, a):
    if a.ndim != 4:
        raise ValueError(f'{fname}: {name} must be 4-D (N, C, H, W), got shape {a.shape}')


def _out_hw(fname, hw, kernel, stride, pad):
    """(OH, OW) of a KHxKW window sliding over an (H, W) image; ValueError if it does not fit."""
    (H, W), (KH, KW), (SH, SW), (PH, PW) = hw, kernel, stride, pad
    if KH > H + 2 * PH or KW > W + 2 * PW:
        raise ValueError(f'{fname}: kernel {(KH, KW)} is larger than the padded input '
                         f'{(H + 2 * PH, W + 2 * PW)} (input {(H, W)}, pad {(PH, PW)})')
    return get_conv_outsize(H, KH, SH, PH), get_conv_outsize(W, KW, SW, PW)


def _check_conv_args(fname, x, W, b, in_axis):
    """x (N, C, H, W); W 4-D with C on axis ``in_axis``; b (out channels,) or None."""
    _check_4d(fname, 'x', x)
    if W.ndim != 4:
        raise ValueError(f'{fname}: W must be 4-D, got shape {W.shape}')
    if x.shape[1] != W.shape[in_axis]:
        raise ValueError(f'{fname}: x has {x.shape[1]} channels (shape {x.shape}) but W expects '
                         f'{W.shape[in_axis]} (W shape {W.shape})')
    out_channels = W.shape[1 - in_axis]
    if b is not None and tuple(b.shape) != (out_channels,):
        raise ValueError(f'{fname}: b must have shape ({out_channels},) for W of shape {W.shape}, '
                         f'got {b.shape}')


# =============================================================================
# Raw-array helpers
# =============================================================================
def _pad(img, pad):
    """Zero-padded copy of ``img`` (N, C, H, W); ``img`` itself when pad is (0, 0)."""
    PH, PW = pad
    if PH == 0 and PW == 0:
        return img
    N, C, H, W = img.shape
    xp = cuda.get_array_module(img)
    out = xp.zeros((N, C, H + 2 * PH, W + 2 * PW), dtype=img.dtype)
    out[:, :, PH:PH + H, PW:PW + W] = img
    return out


def _windows(img, kernel, stride, out_hw):
    """Read-only view (N, C, KH, KW, OH, OW) of an (already padded) image:
    ``view[n, c, i, j, oh, ow] = img[n, c, oh*SH + i, ow*SW + j]`` (no copy)."""
    xp = cuda.get_array_module(img)
    N, C = img.shape[:2]
    s0, s1, s2, s3 = img.strides
    (KH, KW), (SH, SW), (OH, OW) = kernel, stride, out_hw
    shape, strides = (N, C, KH, KW, OH, OW), (s0, s1, s2, s3, s2 * SH, s3 * SW)
    if xp is np:  # windows overlap: a write through the view would hit several of them
        return np.lib.stride_tricks.as_strided(img, shape, strides, writeable=False)
    return xp.lib.stride_tricks.as_strided(img, shape, strides)  # CuPy has no `writeable`


def _col(x, kernel, stride, pad, out_hw):
    """im2col for the batched matmul: (N, C*KH*KW, OH*OW), possibly a view of ``x``."""
    xp = cuda.get_array_module(x)
    view = _windows(_pad(x, pad), kernel, stride, out_hw)
    N, C = x.shape[:2]
    return xp.ascontiguousarray(view).reshape(N, C * kernel[0] * kernel[1], out_hw[0] * out_hw[1])


def im2col_array(img, kernel_size, stride, pad, to_matrix=True):
    """Patches of ``img`` (N, C, H, W): (N, C, KH, KW, OH, OW), or with ``to_matrix``
    (N*OH*OW, C*KH*KW) whose rows are (n, oh, ow) and columns (c, kh, kw).  A new array."""
    _check_4d('im2col', 'img', img)
    kernel = _int_pair('im2col', 'kernel_size', kernel_size, 1)
    stride = _int_pair('im2col', 'stride', stride, 1)
    pad = _int_pair('im2col', 'pad', pad, 0)
    N, C, H, W = img.shape
    out_hw = _out_hw('im2col', (H, W), kernel, stride, pad)
    view = _windows(_pad(img, pad), kernel, stride, out_hw)
    if to_matrix:
        # explicit sizes, no -1: an empty batch (N = 0) cannot infer one
        return view.transpose(0, 4, 5, 1, 2, 3).copy().reshape(N * out_hw[0] * out_hw[1],
                                                                C * kernel[0] * kernel[1])
    return view.copy()


def col2im_array(col, img_shape, kernel_size, stride, pad, to_matrix=True):
    """Adjoint of ``im2col_array``: add every patch back at its place in an
    ``img_shape`` (N, C, H, W) image (overlaps add up; padding is dropped)."""
    kernel = _int_pair('col2im', 'kernel_size', kernel_size, 1)
    stride = _int_pair('col2im', 'stride', stride, 1)
    pad = _int_pair('col2im', 'pad', pad, 0)
    if len(img_shape) != 4:
        raise ValueError(f'col2im: img_shape must be 4-D (N, C, H, W), got {tuple(img_shape)}')
    N, C, H, W = img_shape
    (KH, KW), (SH, SW), (PH, PW) = kernel, stride, pad
    OH, OW = _out_hw('col2im', (H, W), kernel, stride, pad)
    shape6 = (N, C, KH, KW, OH, OW)
    if to_matrix:
        if col.shape != (N * OH * OW, C * KH * KW):
            raise ValueError(f'col2im: col has shape {col.shape}, expected '
                             f'{(N * OH * OW, C * KH * KW)} for image {tuple(img_shape)}')
        col = col.reshape(N, OH, OW, C, KH, KW).transpose(0, 3, 4, 5, 1, 2)
    elif col.shape != shape6:
        raise ValueError(f'col2im: col has shape {col.shape}, expected {shape6} '
                         f'for image {tuple(img_shape)}')
    xp = cuda.get_array_module(col)
    img = xp.zeros((N, C, H + 2 * PH, W + 2 * PW), dtype=col.dtype)
    for i in range(KH):
        rows = slice(i, i + SH * OH, SH)
        for j in range(KW):
            img[:, :, rows, j:j + SW * OW:SW] += col[:, :, i, j]
    if PH == 0 and PW == 0:
        return img
    return xp.ascontiguousarray(img[:, :, PH:PH + H, PW:PW + W])


def _is_max(v, y):
    return v == y


def _is_max_or_both_nan(v, y):
    xp = cuda.get_array_module(v)
    return (v == y) | (xp.isnan(v) & xp.isnan(y))


def _max_pool_array(x, kernel, stride, pad, with_positions):
    """Max over each window of zero-padded ``x``: y (N, C, OH, OW) and, if asked,
    the flat index into the padded image of each window's first maximum (row-major
    in the window, as ``argmax``; NaN counts as the maximum, as in ``np.argmax``)."""
    xp = cuda.get_array_module(x)
    N, C, H, W = x.shape
    out_hw = _out_hw('pooling', (H, W), kernel, stride, pad)
    xpad = _pad(x, pad)
    (KH, KW), (SH, SW), (OH, OW) = kernel, stride, out_hw
    # A contiguous (N, C, KH*KW, OH, OW) copy makes every step below a fast
    # pass over contiguous (OH, OW) planes (strided passes cost about twice as much).
    col = xp.ascontiguousarray(_windows(xpad, kernel, stride, out_hw)).reshape(N, C, KH * KW, OH, OW)
    y = col.max(axis=2)
    if not with_positions:
        return y, None
    Hp, Wp = xpad.shape[2:]
    # NaN is the maximum (np.max, PyTorch): a window with a NaN takes its first NaN.
    wins = _is_max_or_both_nan if may_hold_nan(y) else _is_max
    # Window k wins where it equals the max and no earlier window did
    # (boolean arithmetic: masked assignment is an order of magnitude slower in NumPy).
    taken = wins(col[:, :, 0], y)
    offset = xp.zeros(y.shape, dtype=np.int32)
    for k in range(1, KH * KW):
        first = wins(col[:, :, k], y)
        first &= ~taken
        taken |= first
        offset += first * np.int32((k // KW) * Wp + k % KW)
    corner = (xp.arange(OH, dtype=np.int64)[:, None] * (SH * Wp) + xp.arange(OW, dtype=np.int64) * SW
              + (xp.arange(N * C, dtype=np.int64) * (Hp * Wp)).reshape(N, C, 1, 1))
    corner += offset
    return y, corner


# =============================================================================
# Convolution
# =============================================================================
def _with_bias_grad(f, gy, gx, gW):
    """``(gx, gW)``, or ``(gx, gW, gb)`` with gb = gy summed over N, H, W when the
    convolution ``f`` has a bias (None when the bias needs no gradient)."""
    if len(f.inputs) == 2:
        return gx, gW
    return gx, gW, (_sum(gy, axis=(0, 2, 3)) if f.inputs[2].requires_grad else None)


class Conv2d(Function):
    """y[n, o] = sum_{c,i,j} W[o, c, i, j] * xpad[n, c, oh*SH + i, ow*SW + j] + b[o].

    x (N, C, H, W), W (OC, C, KH, KW), b (OC,) or absent -> y (N, OC, OH, OW).
    dL/dx = deconv2d(gy, W) (skipped when x needs no grad, e.g. the data batch),
    dL/dW = Conv2DGradW(x, gy), dL/db = gy summed over (N, OH, OW).
    """
    __slots__ = ('stride', 'pad')

    def __init__(self, stride=1, pad=0):
        self.stride = _int_pair('conv2d', 'stride', stride, 1)
        self.pad = _int_pair('conv2d', 'pad', pad, 0)

    def forward(self, x, W, b=None):
        _check_conv_args('conv2d', x, W, b, in_axis=1)
        N = x.shape[0]
        OC = W.shape[0]
        kernel = W.shape[2:]
        OH, OW = _out_hw('conv2d', x.shape[2:], kernel, self.stride, self.pad)
        col = _col(x, kernel, self.stride, self.pad, (OH, OW))
        y = W.reshape(OC, -1) @ col  # (N, OC, OH*OW): NCHW without a transpose
        if b is not None:
            y += b.reshape(1, OC, 1)
        return y.reshape(N, OC, OH, OW)

    def backward(self, gy):
        x, W = self.inputs[:2]
        gx = deconv2d(gy, W, stride=self.stride, pad=self.pad, outsize=x.shape[2:]) if x.requires_grad else None
        gW = Conv2DGradW(self)(x, gy) if W.requires_grad else None
        return _with_bias_grad(self, gy, gx, gW)

    def jvp(self, dx, dW, db=None):
        x, W = self.inputs[:2]
        t = add_tangents(None if dx is None else conv2d(dx, W, stride=self.stride, pad=self.pad),
                         None if dW is None else conv2d(x, dW, stride=self.stride, pad=self.pad))
        if db is not None:
            y_shape = self.outputs[0]().shape
            t = add_tangents(t, broadcast_to(reshape(db, (1, -1, 1, 1)), y_shape))
        return t


def conv2d(x, W, b=None, stride=1, pad=0):
    """2-D convolution (cross-correlation) of x (N, C, H, W) with W (OC, C, KH, KW)."""
    f = Conv2d(stride, pad)
    return f(x, W) if b is None else f(x, W, b)


class Deconv2d(Function):
    """Transposed convolution: the adjoint of ``conv2d`` in x, plus a bias.

    x (N, C, H, W), W (C, OC, KH, KW), b (OC,) -> y (N, OC, OH, OW) with
    ``OH = SH*(H - 1) + KH - 2*PH`` unless ``outsize`` says otherwise (then
    ``conv2d`` of a y-sized image must give H again).
    dL/dx = conv2d(gy, W), dL/dW = Conv2DGradW(gy, x), dL/db = gy summed over (N, OH, OW).
    """
    __slots__ = ('stride', 'pad', 'outsize')

    def __init__(self, stride=1, pad=0, outsize=None):
        self.stride = _int_pair('deconv2d', 'stride', stride, 1)
        self.pad = _int_pair('deconv2d', 'pad', pad, 0)
        if outsize is not None:
            outsize = _int_pair('deconv2d', 'outsize', tuple(outsize), 1)
        self.outsize = outsize

    def _out_hw(self, x, W):
        (H, Wd), kernel = x.shape[2:], W.shape[2:]
        if self.outsize is None:
            out = tuple(get_deconv_outsize(n, k, s, p)
                        for n, k, s, p in zip((H, Wd), kernel, self.stride, self.pad))
            if out[0] < 1 or out[1] < 1:
                raise ValueError(f'deconv2d: output size {out} is empty for x {x.shape}, '
                                 f'W {W.shape}, stride {self.stride}, pad {self.pad}')
            return out
        back = _out_hw('deconv2d', self.outsize, kernel, self.stride, self.pad)
        if back != (H, Wd):
            raise ValueError(f'deconv2d: outsize {self.outsize} does not fit x {x.shape}: conv2d '
                             f'(kernel {tuple(kernel)}, stride {self.stride}, pad {self.pad}) of '
                             f'an image that size gives {back}, not {(H, Wd)}')
        return self.outsize

    def forward(self, x, W, b=None):
        _check_conv_args('deconv2d', x, W, b, in_axis=0)
        N, C, H, Wd = x.shape
        OC, KH, KW = W.shape[1:]
        out_h, out_w = self._out_hw(x, W)
        # gcol[n, (o, i, j), (h, w)] = sum_c W[c, o, i, j] x[n, c, h, w], then scatter the patches.
        gcol = W.reshape(C, -1).T @ x.reshape(N, C, H * Wd)
        y = col2im_array(gcol.reshape(N, OC, KH, KW, H, Wd), (N, OC, out_h, out_w), (KH, KW),
                         self.stride, self.pad, to_matrix=False)
        if b is not None:
            y += b.reshape(1, OC, 1, 1)
        return y

    def backward(self, gy):
        x, W = self.inputs[:2]
        gx = conv2d(gy, W, stride=self.stride, pad=self.pad) if x.requires_grad else None
        gW = Conv2DGradW(self)(gy, x) if W.requires_grad else None
        return _with_bias_grad(self, gy, gx, gW)

    def jvp(self, dx, dW, db=None):
        x, W = self.inputs[:2]
        y_shape = self.outputs[0]().shape
        kw = dict(stride=self.stride, pad=self.pad, outsize=y_shape[2:])
        t = add_tangents(None if dx is None else deconv2d(dx, W, **kw),
                         None if dW is None else deconv2d(x, dW, **kw))
        if db is not None:
            t = add_tangents(t, broadcast_to(reshape(db, (1, -1, 1, 1)), y_shape))
        return t


def deconv2d(x, W, b=None, stride=1, pad=0, outsize=None):
    """Transposed convolution of x (N, C, H, W) with W (C, OC, KH, KW) -> (N, OC, OH, OW)."""
    f = Deconv2d(stride, pad, outsize)
    return f(x, W) if b is None else f(x, W, b)


class Conv2DGradW(Function):
    """The weight gradient of a convolution: gW[o, c, i, j] = sum_{n,oh,ow}
    gy[n, o, oh, ow] * xpad[n, c, oh*SH + i, ow*SW + j].

    Inputs x (N, C, H, W) and gy (N, OC, OH, OW); output (OC, C, KH, KW).
    Bilinear, so dL/dx = deconv2d(gy, ggW) and dL/dgy = conv2d(x, ggW).
    Built from the ``Conv2d`` / ``Deconv2d`` (or ``Conv2DGradW``) it belongs to.
    """
    __slots__ = ('kernel_size', 'stride', 'pad')

    def __init__(self, conv2d):
        if isinstance(conv2d, Conv2DGradW):
            self.kernel_size = conv2d.kernel_size
        else:
            self.kernel_size = tuple(conv2d.inputs[1].shape[2:])
        self.stride = conv2d.stride
        self.pad = conv2d.pad

    def forward(self, x, gy):
        _check_4d('conv2d (weight gradient)', 'x', x)
        _check_4d('conv2d (weight gradient)', 'gy', gy)
        N, C = x.shape[:2]
        OC = gy.shape[1]
        out_hw = _out_hw('conv2d (weight gradient)', x.shape[2:], self.kernel_size, self.stride,
                         self.pad)
        if gy.shape != (N, OC) + out_hw:
            raise ValueError(f'conv2d (weight gradient): gy has shape {gy.shape}, expected '
                             f'{(N, OC) + out_hw} for x of shape {x.shape}')
        col = _col(x, self.kernel_size, self.stride, self.pad, out_hw)
        # One (OC, P) @ (P, K) product per sample, then the batch sum: the
        # transposed operand goes to BLAS as a flag, nothing is copied.
        # (explicit OH*OW, no -1: an empty batch cannot infer it; its gW is the empty sum, 0)
        gW = (gy.reshape(N, OC, out_hw[0] * out_hw[1]) @ col.transpose(0, 2, 1)).sum(axis=0)
        return gW.reshape((OC, C) + self.kernel_size)

    def backward(self, ggW):
        x, gy = self.inputs
        gx = ggy = None
        if x.requires_grad:
            gx = deconv2d(gy, ggW, stride=self.stride, pad=self.pad, outsize=x.shape[2:])
        if gy.requires_grad:
            ggy = conv2d(x, ggW, stride=self.stride, pad=self.pad)
        return gx, ggy

    def jvp(self, dx, dgy):
        x, gy = self.inputs
        return add_tangents(None if dx is None else Conv2DGradW(self)(dx, gy),
                            None if dgy is None else Conv2DGradW(self)(x, dgy))


# =============================================================================
# Pooling
# =============================================================================
def _pool_args(fname, kernel_size, stride, pad):
    return (_int_pair(fname, 'kernel_size', kernel_size, 1), _int_pair(fname, 'stride', stride, 1),
            _int_pair(fname, 'pad', pad, 0))


class _MaxPoolingBase(Function):
    """State shared by max pooling and its two linear companions.

    ``positions`` (N, C, OH, OW): flat index, into the zero-padded input
    (N, C, H + 2*PH, W + 2*PW), of the element each window took.  Forward
    ``Pooling2DWithIndexes`` gathers there; ``Pooling2DGrad`` scatter-adds there;
    each is the other's adjoint, so every order of derivative is one of them.
    """
    __slots__ = ('kernel_size', 'stride', 'pad', 'input_shape', 'positions')

    def __init__(self, mpool2d):
        # Copy the state (not a reference to mpool2d: that would keep its graph alive).
        self.kernel_size, self.stride, self.pad = mpool2d.kernel_size, mpool2d.stride, mpool2d.pad
        self.input_shape, self.positions = mpool2d.input_shape, mpool2d.positions

    def backward(self, gy):
        return self._adjoint(self)(gy)  # a linear map's gradient is its adjoint's forward

    def jvp(self, dx):
        return type(self)(self)(dx)  # a linear map is its own forward-mode rule

    def _padded_shape(self):
        N, C, H, W = self.input_shape
        return N, C, H + 2 * self.pad[0], W + 2 * self.pad[1]

    @property
    def indexes(self):
        """DeZero's view of ``positions``: the argmax within each window, i*KW + j."""
        Hp, Wp = self._padded_shape()[2:]
        SH, SW = self.stride
        OH, OW = self.positions.shape[2:]
        xp = cuda.get_array_module(self.positions)
        in_plane = self.positions % (Hp * Wp)
        i = in_plane // Wp - xp.arange(OH)[:, None] * SH
        j = in_plane % Wp - xp.arange(OW) * SW
        return i * self.kernel_size[1] + j

    def _gather(self, x):
        """Gather: the elements of x (N, C, H, W) at the positions, shape (N, C, OH, OW)."""
        if tuple(x.shape) != tuple(self.input_shape):
            raise ValueError(f'{type(self).__name__}: x has shape {x.shape}, expected '
                             f'{tuple(self.input_shape)}')
        xp = cuda.get_array_module(x)
        return xp.take(_pad(x, self.pad), self.positions)

    def _scatter(self, gy):
        """Scatter-add: zeros of the input shape, with gy (N, C, OH, OW) added at the positions."""
        if gy.shape != self.positions.shape:
            raise ValueError(f'{type(self).__name__}: gy has shape {gy.shape}, expected '
                             f'{self.positions.shape}')
        xp = cuda.get_array_module(gy)
        N, C, Hp, Wp = self._padded_shape()
        gx = xp.zeros(N * C * Hp * Wp, dtype=gy.dtype)
        scatter_add(gx, self.positions.ravel(), gy.ravel())
        gx = gx.reshape(N, C, Hp, Wp)
        PH, PW = self.pad
        if PH == 0 and PW == 0:
            return gx
        H, W = self.input_shape[2:]
        return xp.ascontiguousarray(gx[:, :, PH:PH + H, PW:PW + W])


class Pooling(_MaxPoolingBase):
    """Max pooling: y[n, c, oh, ow] = max of the KHxKW window at (oh*SH, ow*SW) of zero-padded x.

    dL/dx = gy added at each window's (first) maximum: ``Pooling2DGrad``.  A window
    holding a NaN has y = NaN and routes to its first NaN (NaN is the maximum).
    """
    __slots__ = ()

    def __init__(self, kernel_size, stride=1, pad=0):
        self.kernel_size, self.stride, self.pad = _pool_args('pooling', kernel_size, stride, pad)
        self.positions = None

    def forward(self, x):
        _check_4d('pooling', 'x', x)
        self.input_shape = x.shape
        # Under no_grad no backward will ask for the argmax: skip finding it
        # (forward mode may still ask: then _recorded_state finds it late).
        y, self.positions = _max_pool_array(x, self.kernel_size, self.stride, self.pad,
                                            with_positions=recording())
        return y

    def _recorded_state(self):
        if self.positions is None:
            _, self.positions = _max_pool_array(self.inputs[0].data, self.kernel_size, self.stride,
                                                self.pad, with_positions=True)
        return self

    def backward(self, gy):
        return Pooling2DGrad(self._recorded_state())(gy)

    def jvp(self, dx):
        return Pooling2DWithIndexes(self._recorded_state())(dx)


def pooling(x, kernel_size, stride=1, pad=0):
    """Max pooling of x (N, C, H, W) -> (N, C, OH, OW); padding counts as zeros."""
    return Pooling(kernel_size, stride, pad)(x)


class Pooling2DGrad(_MaxPoolingBase):
    """gx = zeros(x.shape) with gy added at the pooled positions: max pooling's
    gradient, linear in gy, so dL/dgy = Pooling2DWithIndexes(ggx) (its adjoint)."""
    __slots__ = ()
    forward = _MaxPoolingBase._scatter


class Pooling2DWithIndexes(_MaxPoolingBase):
    """y = x at the positions a max pooling chose (no new argmax; made from a
    ``Pooling`` or a companion).  Linear in x: dL/dx = Pooling2DGrad(gy)."""
    __slots__ = ()
    forward = _MaxPoolingBase._gather


Pooling2DGrad._adjoint, Pooling2DWithIndexes._adjoint = Pooling2DWithIndexes, Pooling2DGrad


class AveragePooling(Function):
    """y = mean of each KHxKW window of zero-padded x (padding counts in the mean).

    dL/dx = col2im of gy / (KH*KW) spread over every window.
    """
    __slots__ = ('kernel_size', 'stride', 'pad', 'input_shape')

    def __init__(self, kernel_size, stride=1, pad=0):
        self.kernel_size, self.stride, self.pad = _pool_args('average_pooling', kernel_size, stride,
                                                             pad)

    def forward(self, x):
        _check_4d('average_pooling', 'x', x)
        self.input_shape = x.shape
        N, C, H, W = x.shape
        out_hw = _out_hw('average_pooling', (H, W), self.kernel_size, self.stride, self.pad)
        col = _col(x, self.kernel_size, self.stride, self.pad, out_hw)
        KK = self.kernel_size[0] * self.kernel_size[1]
        return col.reshape(N, C, KK, *out_hw).mean(axis=2)

    def backward(self, gy):
        N, C, OH, OW = gy.shape
        KH, KW = self.kernel_size
        gy = reshape(gy * (1 / (KH * KW)), (N, C, 1, 1, OH, OW))
        gcol = broadcast_to(gy, (N, C, KH, KW, OH, OW))
        return col2im(gcol, self.input_shape, self.kernel_size, self.stride, self.pad,
                      to_matrix=False)

    def jvp(self, dx):
        return average_pooling(dx, self.kernel_size, self.stride, self.pad)


def average_pooling(x, kernel_size, stride=1, pad=0):
    """Average pooling of x (N, C, H, W) -> (N, C, OH, OW)."""
    return AveragePooling(kernel_size, stride, pad)(x)


# =============================================================================
# im2col / col2im as Functions, and the teaching compositions
# =============================================================================
class Im2col(Function):
    """y = im2col_array(x) (see there for the layouts); dL/dx = col2im(gy)."""
    __slots__ = ('input_shape', 'kernel_size', 'stride', 'pad', 'to_matrix')

    def __init__(self, kernel_size, stride, pad, to_matrix):
        self.kernel_size, self.stride, self.pad = _pool_args('im2col', kernel_size, stride, pad)
        self.to_matrix = to_matrix

    def forward(self, x):
        self.input_shape = x.shape
        return im2col_array(x, self.kernel_size, self.stride, self.pad, self.to_matrix)

    def backward(self, gy):
        return col2im(gy, self.input_shape, self.kernel_size, self.stride, self.pad, self.to_matrix)

    def jvp(self, dx):
        return im2col(dx, self.kernel_size, self.stride, self.pad, self.to_matrix)


def im2col(x, kernel_size, stride=1, pad=0, to_matrix=True):
    """Patches of x (N, C, H, W): (N*OH*OW, C*KH*KW), or (N, C, KH, KW, OH, OW)."""
    return Im2col(kernel_size, stride, pad, to_matrix)(x)


class Col2im(Function):
    """y = col2im_array(x) (patches added back into an image); dL/dx = im2col(gy)."""
    __slots__ = ('input_shape', 'kernel_size', 'stride', 'pad', 'to_matrix')

    def __init__(self, input_shape, kernel_size, stride, pad, to_matrix):
        self.input_shape = tuple(input_shape)
        self.kernel_size, self.stride, self.pad = _pool_args('col2im', kernel_size, stride, pad)
        self.to_matrix = to_matrix

    def forward(self, x):
        return col2im_array(x, self.input_shape, self.kernel_size, self.stride, self.pad,
                            self.to_matrix)

    def backward(self, gy):
        return im2col(gy, self.kernel_size, self.stride, self.pad, self.to_matrix)

    def jvp(self, dx):
        return col2im(dx, self.input_shape, self.kernel_size, self.stride, self.pad, self.to_matrix)


def col2im(x, input_shape, kernel_size, stride=1, pad=0, to_matrix=True):
    """Add patches (as ``im2col`` lays them out) back into an ``input_shape`` image."""
    return Col2im(input_shape, kernel_size, stride, pad, to_matrix)(x)


def conv2d_simple(x, W, b=None, stride=1, pad=0):
    """``conv2d`` composed from ``im2col`` + ``linear`` (same values; slower, for teaching)."""
    _check_conv_args('conv2d_simple', x, W, b, in_axis=1)
    N, _, H, Wd = x.shape
    OC, _, KH, KW = W.shape
    OH, OW = _out_hw('conv2d_simple', (H, Wd), (KH, KW), _int_pair('conv2d_simple', 'stride', stride, 1),
                     _int_pair('conv2d_simple', 'pad', pad, 0))
    col = im2col(x, (KH, KW), stride, pad, to_matrix=True)       # (N*OH*OW, C*KH*KW)
    t = linear(col, transpose(reshape(W, (OC, -1))), b)          # (N*OH*OW, OC)
    return transpose(reshape(t, (N, OH, OW, OC)), (0, 3, 1, 2))


def pooling_simple(x, kernel_size, stride=1, pad=0):
    """Max pooling composed from ``im2col`` + ``max`` (for teaching; ties all get the gradient)."""
    _check_4d('pooling_simple', 'x', x)
    N, C, H, W = x.shape
    kernel, stride, pad = _pool_args('pooling_simple', kernel_size, stride, pad)
    OH, OW = _out_hw('pooling_simple', (H, W), kernel, stride, pad)
    col = im2col(x, kernel, stride, pad, to_matrix=True)          # (N*OH*OW, C*KH*KW)
    y = _max(reshape(col, (-1, kernel[0] * kernel[1])), axis=1)  # rows are (n, oh, ow, c)
    return transpose(reshape(y, (N, OH, OW, C)), (0, 3, 1, 2))
