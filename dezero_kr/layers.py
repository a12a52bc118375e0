"""Layers (``import dezero_kr.layers as L``): objects that own Parameters.

A ``Layer`` registers every attribute that holds a ``Parameter`` or another
``Layer`` *in assignment order* (DeZero kept a set, so the order changed with
``PYTHONHASHSEED``).  ``params()`` walks that tree depth first, each Parameter
once (a Parameter shared by two layers, e.g. tied embeddings, is yielded at its
first path only), and ``named_params()`` gives the same walk with paths such as
``'l0/W'``: the keys of ``save_weights`` files and of optimizer state.

Weights are drawn from NumPy's global RNG (``np.random.randn``) as in DeZero,
so ``np.random.seed(0)`` before building a model makes it reproducible.  On a
GPU the weights are drawn on the CPU and copied, so one seed gives the same
model on both.  Input sizes may be left out (``in_size=None``): the weight is
then created on the first forward pass from the input's shape (a "lazy"
parameter whose ``data`` is None until then).
"""
import math
import weakref

import numpy as np

from dezero_kr import cuda
from dezero_kr.array_utils import pair
from dezero_kr.core import Parameter, Variable, state_lock
from dezero_kr.fileio import (NpzReader, check_array_for, check_header_for, existing_npz_path,  # noqa: F401
                              read_npz, save_npz)  # (read_npz: DeZero-era name)
from dezero_kr.functions_conv import conv2d, deconv2d
from dezero_kr.functions_math import linear, tanh
from dezero_kr.functions_nn import batch_norm, embed_id, layer_norm, rms_norm, sigmoid


# =============================================================================
# Layer: the parameter container
# =============================================================================
class Layer:
    """Base class.  Subclasses call ``super().__init__()`` first, assign
    Parameters / sub-Layers as attributes and define ``forward``."""

    # Bumped whenever any Layer registers or drops a Parameter/Layer attribute;
    # the flattened parameter list of a Layer is cached against it.
    _structure_version = 0

    def __init__(self):
        self._params = {}  # attribute names in registration order (a dict as an ordered set)

    def __setattr__(self, name, value):
        registry = self.__dict__.get('_params')
        if isinstance(value, (Parameter, Layer)):
            if registry is None:
                raise AttributeError(f'{type(self).__name__}: call super().__init__() before '
                                     f'assigning the parameter or layer {name!r}')
            registry[name] = None
            Layer._structure_version += 1
        elif registry is not None and name in registry:
            if value is not None:
                self._refuse_replacing(name, value)
            del registry[name]  # ``self.b = None``: no longer a parameter
            Layer._structure_version += 1
        super().__setattr__(name, value)

    def _refuse_replacing(self, name, value):
        """``TypeError``: a registered Parameter/Layer may only be replaced by its kind or None.

        ``lin.W = lin.W * 1.0`` would otherwise turn ``W`` into a plain
        Variable that ``params()``, the optimizer and ``save_weights`` no
        longer see (PyTorch refuses the same assignment).
        """
        kind = 'Parameter' if isinstance(self.__dict__.get(name), Parameter) else 'Layer'
        how = (f'to change its values assign {type(self).__name__}.{name}.data = <array>; to replace it '
               f'assign a Parameter' if kind == 'Parameter' else 'assign a Layer')
        raise TypeError(f'{type(self).__name__}: cannot assign a {type(value).__name__} to {name!r}, which '
                        f'holds a {kind} (params(), the optimizer and save_weights would lose it): {how}, '
                        f'or None to remove it')

    def __getstate__(self):
        """The attributes to pickle/deepcopy: all but the last call's weak references and caches.

        ``inputs``/``outputs`` are weak references to the last call's
        Variables (DeZero's fields), which pickle cannot store; a copy starts
        without them, as a layer that was never called.  Parameters pickle
        with their data and grad.  An attribute holding a computed Variable
        (one with a creator, e.g. ``RNN.h`` after a call) raises ``TypeError``
        naming the layer and the attribute: copying it would copy the graph.
        """
        state = {k: v for k, v in self.__dict__.items() if k not in ('inputs', 'outputs', '_param_cache')}
        for name, value in state.items():
            for v in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(v, Variable) and v.creator is not None:
                    raise TypeError(
                        f'cannot pickle or deepcopy {type(self).__name__}: its attribute {name!r} holds a '
                        f'Variable computed by {type(v.creator).__name__} (the graph of the last call); '
                        f'clear it first (reset_state() for RNN/LSTM, or {name} = None), or save the '
                        f'parameters with save_weights')
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __delattr__(self, name):
        if self.__dict__.get('_params', {}).pop(name, 0) is None:
            Layer._structure_version += 1
        super().__delattr__(name)

    def __call__(self, *inputs):
        """``forward(*inputs)``, returned as it is (a Variable or a tuple/list of them).

        Weak references to the inputs and outputs are kept in ``inputs`` /
        ``outputs`` as in DeZero (they keep nothing alive).
        """
        outputs = self.forward(*inputs)
        outs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
        # DeZero keeps weak references to the last call's inputs and outputs
        # (stored directly: they are never parameters).
        d = self.__dict__
        try:
            d['inputs'] = [weakref.ref(x) for x in inputs]
            d['outputs'] = [weakref.ref(y) for y in outs]
        except TypeError:  # an int or another object without weak references
            d['inputs'] = [_weak(x) for x in inputs]
            d['outputs'] = [_weak(y) for y in outs]
        return outputs

    def forward(self, *inputs):
        """The layer's computation; subclasses define it (the base raises ``NotImplementedError``)."""
        raise NotImplementedError(f'{type(self).__name__}.forward is not implemented')

    # --- walking the parameter tree ----------------------------------------------
    def named_params(self):
        """Iterate over ``(path, Parameter)`` depth first in registration order, each Parameter once."""
        return iter(self._param_lists()[0])

    def params(self):
        """Iterate over every Parameter of this layer and its sub-layers (see ``named_params``)."""
        return iter(self._param_lists()[1])

    def _param_lists(self):
        cache = self.__dict__.get('_param_cache')
        if cache is None or cache[0] != Layer._structure_version:
            named = [(path, param) for path, param, _, _ in self._walk_params()]
            cache = (Layer._structure_version, named, [p for _, p in named])
            self.__dict__['_param_cache'] = cache
        return cache[1], cache[2]

    def _walk_params(self):
        """``(path, Parameter, owning Layer, attribute name)`` depth first, each Parameter once."""
        seen_params, seen_layers = set(), {id(self)}
        stack = [('', self, iter(list(self._params)))]
        while stack:
            prefix, layer, names = stack[-1]
            name = next(names, None)
            if name is None:
                stack.pop()
                continue
            obj = layer.__dict__[name]
            path = prefix + name
            if isinstance(obj, Layer):
                if id(obj) not in seen_layers:
                    seen_layers.add(id(obj))
                    stack.append((path + '/', obj, iter(list(obj._params))))
            elif id(obj) not in seen_params:
                seen_params.add(id(obj))
                yield path, obj, layer, name

    def _flatten_params(self, params_dict, parent_key=''):
        """Fill ``params_dict`` with ``{'parent/path': Parameter}`` (DeZero's helper)."""
        for path, param in self.named_params():
            params_dict[f'{parent_key}/{path}' if parent_key else path] = param

    def cleargrads(self):
        """Set every parameter's ``grad`` to None (call before each ``backward``)."""
        for param in self.params():
            param.cleargrad()

    def to_cpu(self):
        """Move every parameter's data to NumPy arrays (its grad is left as it is); returns self."""
        for param in self.params():
            param.to_cpu()
        return self

    def to_gpu(self):
        """Move every parameter's data to CuPy arrays (its grad is left as it is); returns self.

        Raises ``RuntimeError`` (from ``cuda.require_gpu``) when CuPy or a GPU is missing.
        """
        cuda.require_gpu(f'{type(self).__name__}.to_gpu')
        for param in self.params():
            param.to_gpu()
        return self

    # --- weights files -------------------------------------------------------------
    def _params_by_path(self, what):
        """``{path: Parameter}`` of ``named_params``; two parameters on one path raise ``ValueError``.

        ``setattr(model, 'a/W', p)`` beside a sub-layer ``a`` holding ``W``
        gives both the path ``'a/W'``: one file entry could hold only one.
        """
        by_path, owners = {}, {}
        for path, param, layer, attr in self._walk_params():
            owner = f'attribute {attr!r} of {type(layer).__name__}'
            if path in by_path:
                raise ValueError(f'{what}: two parameters have the path {path!r}: {owners[path]} and '
                                 f'{owner}; rename one (a "/" inside an attribute name collides with a '
                                 f'sub-layer\'s path)')
            by_path[path], owners[path] = param, owner
        return by_path

    def save_weights(self, path):
        """Write every parameter to an ``.npz`` file (keys = ``named_params`` paths).

        The write is atomic (``fileio.atomic_write``): a temporary file in the
        same folder is renamed over ``path`` only when complete, so a crash
        leaves the old file intact, and temporary files left by killed
        processes in that folder are removed.  Arrays are copied to the host;
        a GPU model stays on the GPU.  ``.npz`` is appended if missing, as
        ``np.savez`` does.  Every path is stored as it is (``file`` and
        ``allow_pickle`` too: they are zip member names, not keywords).

        Raises:
            ValueError: a lazy parameter has no data yet (run one forward pass
                first or give the layer its input size), or two parameters
                have the same path (both named).
            FileNotFoundError: the folder of ``path`` does not exist (named), or
                ``path`` is a symbolic link to nothing.
            FileExistsError / IsADirectoryError: ``path`` is a FIFO, device,
                socket or directory (or a link to one): never replaced.

        An existing file keeps its mode and (where allowed) owner; a symbolic
        link is written through (its target is replaced, the link stays).
        """
        arrays = {}
        for key, param in self._params_by_path('save_weights').items():
            if param.data is None:
                raise ValueError(f'save_weights: parameter {key!r} is not initialised yet (its layer '
                                 f'creates it on the first forward pass); call the model once on an '
                                 f'input or pass the input size to the layer')
            arrays[key] = cuda.as_numpy(param.data)
        save_npz(path, arrays, what='save_weights')

    def load_weights(self, path):
        """Load an ``.npz`` written by ``save_weights`` (never unpickles); all or nothing.

        ``path`` names the file as ``save_weights`` was given it:
        ``'model.weights'`` loads ``model.weights.npz``, and raises
        ``FileExistsError`` when a file ``model.weights`` exists too.  The
        file's keys, shapes and dtypes are checked from its headers before any
        data is read (``fileio.NpzReader``), and only the members the model
        expects are read, so a small hostile file cannot take gigabytes.
        Every key, shape and dtype conversion is checked before any parameter
        changes: missing or unexpected keys, a shape that differs, strings,
        objects, complex values into a real parameter, values that overflow
        the parameter's dtype (1e300 into float32) or non-whole floats into an
        integer parameter raise ``ValueError`` naming the key, the stored
        dtype and the parameter's; so do a file that is not an ``.npz``, a
        truncated or corrupt member and two parameters with one path.  Values
        are converted to each parameter's dtype and device; a lazy parameter
        (data None) takes the stored (numeric) array as it is.
        """
        what = 'load_weights'
        targets = self._params_by_path(what)
        path = existing_npz_path(path, what)
        with NpzReader(path, what) as npz:
            stored = npz.keys()
            missing = [k for k in targets if k not in stored]
            extra = [k for k in stored if k not in targets]
            if missing or extra:
                raise ValueError(f'{what}: {path} does not match {type(self).__name__}: '
                                 f'missing keys {missing}, unexpected keys {extra}')
            for key, param in targets.items():
                shape, dtype = npz.header(key)
                target = (dtype, None) if param.data is None else (param.data.dtype, param.data.shape)
                check_header_for(shape, dtype, *target, what, key, path)
            new = {}
            for key, param in targets.items():
                a = npz.read(key)
                if param.data is None:
                    new[key] = check_array_for(a, a.dtype, None, what, key, path)
                else:
                    a = check_array_for(a, param.data.dtype, param.data.shape, what, key, path)
                    new[key] = cuda.get_array_module(param.data).asarray(a)
        for key, param in targets.items():
            param.data = new[key]


def _weak(x):
    try:
        return weakref.ref(x)
    except TypeError:  # ints and other objects without weak references
        return lambda: x


def _check_size(layer, name, value):
    """A layer size must be a positive int (``Linear(-3)`` would fail later inside NumPy)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f'{layer}: {name} must be a positive int, got {value!r} of type {type(value).__name__}')
    if value < 1:
        raise ValueError(f'{layer}: {name} must be a positive int, got {value}')


def _init_weight(shape, fan_in, dtype, xp):
    """``randn(*shape) * sqrt(1 / fan_in)`` in ``dtype`` (DeZero's init), drawn on the CPU."""
    w = np.random.randn(*shape).astype(dtype) * math.sqrt(1 / fan_in)
    return w if xp is np else cuda.as_cupy(w)


# =============================================================================
# Linear and convolutions
# =============================================================================
class Linear(Layer):
    """y = x @ W + b; x (N, I) -> (N, O).  W (I, O) ~ randn * sqrt(1/I), b zeros.

    Inputs with more axes (..., I) are mapped over the leading axes.
    ``out_size`` (and ``in_size`` if given) must be positive ints
    (``TypeError`` / ``ValueError`` naming the argument); ``in_size=None``
    creates W on the first call from ``x.shape[-1]``.  ``nobias=True``: no b.
    W and b have ``dtype`` (float32 by default).
    """

    def __init__(self, out_size, nobias=False, dtype=np.float32, in_size=None):
        super().__init__()
        _check_size('Linear', 'out_size', out_size)
        if in_size is not None:
            _check_size('Linear', 'in_size', in_size)
        self.in_size = in_size
        self.out_size = out_size
        self.dtype = dtype
        self.W = Parameter(None, name='W')
        if in_size is not None:
            self._init_W()
        self.b = None if nobias else Parameter(np.zeros(out_size, dtype=dtype), name='b')

    def _init_W(self, xp=np):
        self.W.data = _init_weight((self.in_size, self.out_size), self.in_size, self.dtype, xp)

    def forward(self, x):
        """``x @ W + b``: (..., I) -> (..., O); a wrong last axis raises ``ValueError`` (from ``linear``)."""
        if self.W.data is None:
            with state_lock:  # threads' first calls: one creates W, the others use it
                if self.W.data is None:
                    self.in_size = x.shape[-1]
                    self._init_W(cuda.get_array_module(x))
        return linear(x, self.W, self.b)  # (..., I) -> (..., O)


class Conv2d(Layer):
    """2-D convolution; x (N, C, H, W) -> (N, OC, OH, OW).  W (OC, C, KH, KW) ~ randn * sqrt(1/(C KH KW)).

    OH = (H + 2 PH - KH) // SH + 1 (likewise OW); ``kernel_size``, ``stride``
    and ``pad`` are ints or pairs.  b (OC,) zeros unless ``nobias``.
    ``in_channels=None`` creates W on the first call from ``x.shape[1]``.
    Parameters have ``dtype`` (float32 by default).
    """

    def __init__(self, out_channels, kernel_size, stride=1, pad=0, nobias=False, dtype=np.float32,
                 in_channels=None):
        super().__init__()
        _check_size(type(self).__name__, 'out_channels', out_channels)
        if in_channels is not None:
            _check_size(type(self).__name__, 'in_channels', in_channels)
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size, self.stride, self.pad = kernel_size, stride, pad
        self.dtype = dtype
        self.W = Parameter(None, name='W')
        if in_channels is not None:
            self._init_W()
        self.b = None if nobias else Parameter(np.zeros(out_channels, dtype=dtype), name='b')

    def _w_shape(self):
        return (self.out_channels, self.in_channels) + pair(self.kernel_size)

    def _init_W(self, xp=np):
        kh, kw = pair(self.kernel_size)
        self.W.data = _init_weight(self._w_shape(), self.in_channels * kh * kw, self.dtype, xp)

    def _op(self):
        return conv2d

    def forward(self, x):
        """The convolution of x (N, C, H, W) with W, plus b; a channel mismatch raises ``ValueError``."""
        if self.W.data is None:
            with state_lock:  # threads' first calls: one creates W, the others use it
                if self.W.data is None:
                    self.in_channels = x.shape[1]
                    self._init_W(cuda.get_array_module(x))
        return self._op()(x, self.W, self.b, self.stride, self.pad)


class Deconv2d(Conv2d):
    """Transposed 2-D convolution (the gradient of ``Conv2d`` with respect to its input).

    x (N, C, H, W) -> (N, OC, OH, OW) with OH = SH (H - 1) + KH - 2 PH
    (likewise OW).  W has shape (C, OC, KH, KW) (in channels first),
    ~ randn * sqrt(1/(C KH KW)); the other arguments are ``Conv2d``'s.
    """

    def _w_shape(self):
        return (self.in_channels, self.out_channels) + pair(self.kernel_size)

    def _op(self):
        return deconv2d


# =============================================================================
# Recurrent layers
# =============================================================================
class RNN(Layer):
    """Elman RNN: h = tanh(x2h(x) + h2h(h_prev)); the state persists across calls until ``reset_state``.

    x (N, in_size) -> h (N, hidden_size).  Weights are drawn from NumPy's global
    RNG in DeZero's order, so one seed gives DeZero's weights: with ``in_size``
    given, x2h.W then h2h.W at construction; without it, x2h.W on the first
    call and h2h.W on the second (the first call has no previous state).
    h2h.W is (hidden_size, hidden_size) in both cases (DeZero built it with
    ``in_size`` and failed on the second step when in_size != hidden_size).
    """

    def __init__(self, hidden_size, in_size=None):
        super().__init__()
        self.x2h = Linear(hidden_size, in_size=in_size)
        # Lazy exactly when DeZero's is lazy, to keep its RNG draw order.
        self.h2h = Linear(hidden_size, in_size=None if in_size is None else hidden_size, nobias=True)
        self.h = None

    def reset_state(self):
        """Forget the hidden state: the next call starts a new sequence."""
        self.h = None

    def forward(self, x):
        """One time step: x (N, in_size) -> h (N, hidden_size), stored as the state for the next call."""
        if self.h is None:
            h_new = tanh(self.x2h(x))
        else:
            h_new = tanh(self.x2h(x) + self.h2h(self.h))
        self.h = h_new
        return h_new


class LSTM(Layer):
    """LSTM with DeZero's parameter layout (x2f x2i x2o x2u, h2f h2i h2o h2u).

    f, i, o = sigmoid(x2*(x) + h2*(h)), u = tanh(x2u(x) + h2u(h)),
    c = f c_prev + i u, h = o tanh(c).  All are ``Linear`` layers of
    ``hidden_size`` outputs (the h2* without bias); on the first step (no
    state) the h2* terms and ``f c_prev`` are left out.
    """

    def __init__(self, hidden_size, in_size=None):
        super().__init__()
        H, I = hidden_size, in_size
        self.x2f = Linear(H, in_size=I)
        self.x2i = Linear(H, in_size=I)
        self.x2o = Linear(H, in_size=I)
        self.x2u = Linear(H, in_size=I)
        self.h2f = Linear(H, in_size=H, nobias=True)
        self.h2i = Linear(H, in_size=H, nobias=True)
        self.h2o = Linear(H, in_size=H, nobias=True)
        self.h2u = Linear(H, in_size=H, nobias=True)
        self.reset_state()

    def reset_state(self):
        """Forget the hidden state ``h`` and the cell ``c``: the next call starts a new sequence."""
        self.h = None
        self.c = None

    def forward(self, x):
        """One time step: x (N, in_size) -> h (N, hidden_size); h and c are kept for the next call."""
        if self.h is None:
            f = sigmoid(self.x2f(x))
            i = sigmoid(self.x2i(x))
            o = sigmoid(self.x2o(x))
            u = tanh(self.x2u(x))
        else:
            f = sigmoid(self.x2f(x) + self.h2f(self.h))
            i = sigmoid(self.x2i(x) + self.h2i(self.h))
            o = sigmoid(self.x2o(x) + self.h2o(self.h))
            u = tanh(self.x2u(x) + self.h2u(self.h))
        c_new = i * u if self.c is None else f * self.c + i * u
        h_new = o * tanh(c_new)
        self.h, self.c = h_new, c_new
        return h_new


# =============================================================================
# Embedding and normalisation
# =============================================================================
class EmbedID(Layer):
    """Lookup table: integer ids (any shape) -> ``ids.shape + (out_size,)``.  W (in_size, out_size) ~ randn.

    y[..., :] = W[ids[...], :]; the gradient adds into the looked-up rows.
    DeZero's W was float64; here it has ``dtype`` (float32 by default, like Linear).
    """

    def __init__(self, in_size, out_size, dtype=np.float32):
        super().__init__()
        self.W = Parameter(np.random.randn(in_size, out_size).astype(dtype), name='W')

    def forward(self, x):
        """``W[x]``; non-integer ids raise ``TypeError``, ids outside [0, in_size) ``ValueError``."""
        return embed_id(x, self.W)


class Embedding(EmbedID):
    """PyTorch's name for ``EmbedID``: ``Embedding(num_embeddings, embedding_dim)``."""

    def __init__(self, num_embeddings, embedding_dim, dtype=np.float32):
        super().__init__(num_embeddings, embedding_dim, dtype)


class BatchNorm(Layer):
    """Batch normalisation over axis 1 of (N, C) or (N, C, H, W) inputs.

    Training: y = gamma (x - mean) / sqrt(var + eps) + beta with the batch's
    per-channel statistics, and avg <- decay avg + (1 - decay) batch_stat
    (the variance unbiased, as in DeZero); under ``test_mode()`` the running
    averages are used instead.  Parameters ``avg_mean``, ``avg_var`` (running statistics, updated in place
    while training, never by an optimizer: they get no gradient), ``gamma``,
    ``beta``; all sized on the first call and in the input's dtype.
    """

    def __init__(self, decay=0.9, eps=2e-5):
        super().__init__()
        self.decay = decay
        self.eps = eps
        self.avg_mean = Parameter(None, name='avg_mean')
        self.avg_var = Parameter(None, name='avg_var')
        self.gamma = Parameter(None, name='gamma')
        self.beta = Parameter(None, name='beta')

    def _init_params(self, x):
        xp = cuda.get_array_module(x)
        c, dtype = x.shape[1], x.dtype
        # avg_mean last: forward reads it as "all four exist" (another thread may be looking)
        for param, fill in ((self.avg_var, 1), (self.gamma, 1), (self.beta, 0), (self.avg_mean, 0)):
            if param.data is None:
                param.data = xp.full(c, fill, dtype=dtype)

    def forward(self, x):
        """Normalise x (N, C[, H, W]) per channel, same shape and dtype; a channel count that
        differs from the first call's raises ``ValueError``."""
        if self.avg_mean.data is None:
            with state_lock:  # threads' first calls: one creates the parameters
                self._init_params(x)  # fills only what is still None
        return batch_norm(x, self.gamma, self.beta, self.avg_mean.data, self.avg_var.data,
                          decay=self.decay, eps=self.eps)


class _LastAxisNorm(Layer):
    # gamma (and beta) of shape (D,) for inputs (..., D); D from the first input if not given.

    def __init__(self, normalized_size, eps, dtype, names):
        super().__init__()
        self.eps = eps
        self.dtype = dtype
        for name in names:
            setattr(self, name, Parameter(None, name=name))
        if normalized_size is not None:
            self._init_params(normalized_size, np)

    def _init_params(self, size, xp):
        if 'beta' in self._params:
            self.beta.data = xp.zeros(size, dtype=self.dtype)
        self.gamma.data = xp.ones(size, dtype=self.dtype)  # last: "initialised" (see _ensure_params)

    def _ensure_params(self, x):
        if self.gamma.data is None:
            with state_lock:  # threads' first calls: one creates the parameters
                if self.gamma.data is None:
                    self._init_params(x.shape[-1], cuda.get_array_module(x))


class LayerNorm(_LastAxisNorm):
    """Layer normalisation over the last axis: (x - mean) / sqrt(var + eps) * gamma + beta.

    gamma (D,) ones, beta (D,) zeros in ``dtype``; D = ``normalized_size``, or
    the last axis of the first input when it is None.
    """

    def __init__(self, normalized_size=None, eps=1e-5, dtype=np.float32):
        super().__init__(normalized_size, eps, dtype, ('gamma', 'beta'))

    def forward(self, x):
        """Normalise x (..., D) over its last axis, same shape; another D raises ``ValueError``."""
        self._ensure_params(x)
        return layer_norm(x, self.gamma, self.beta, eps=self.eps)


class RMSNorm(_LastAxisNorm):
    """RMS normalisation over the last axis: x / sqrt(mean(x^2) + eps) * gamma.

    gamma (D,) ones in ``dtype``; D = ``normalized_size``, or the last axis of
    the first input when it is None.  No beta, no mean subtraction.
    """

    def __init__(self, normalized_size=None, eps=1e-5, dtype=np.float32):
        super().__init__(normalized_size, eps, dtype, ('gamma',))

    def forward(self, x):
        """Normalise x (..., D) over its last axis, same shape; another D raises ``ValueError``."""
        self._ensure_params(x)
        return rms_norm(x, self.gamma, eps=self.eps)
