"""ONNX export: a model's recorded graph as an ``.onnx`` file that ONNX Runtime and Netron read.

    import dezero_kr.onnx
    dezero_kr.onnx.export(model, x, 'model.onnx')   # pip install "dezero_kr[onnx]"

How it works, top to bottom:

1. ``export`` runs ``model(*inputs)`` once under ``test_mode()`` with the graph
   recorded, and walks it from the outputs with the walk of ``plot_dot_graph``
   (``dezero_kr.graph``).  Sorted by ``generation`` the walked Functions are in
   topological order.
2. With ``dynamic_batch=True`` it runs the model twice more, on the example
   batch with its rows repeated to N + 1 and to 2N + 2 rows.  The three graphs
   must be the same Functions in the same order, with the same indices and
   constants (else the forward depends on something the export cannot see, and
   it says so).  Every dimension must be ``k * batch + c`` with the same k and
   c in all three runs: one that is not (``x.shape[0] // 2``) is refused, and
   one that differs is written batch-agnostic (``-1`` in a ``Reshape``, or
   computed from ``Shape(input)`` at run time).
3. Each Function becomes ONNX nodes through the converter registered for its
   class (``_CONVERTERS``; ``register`` adds one, ``mapping_table`` lists them).
   Parameters become initializers named by their paths (``l1/W``,
   ``h0/attn/c_attn/W``: the keys of ``save_weights``), other constants
   initializers named ``const``, ``const_1``, ...  Input and output names are
   kept as given; a weight or helper value whose name they take gets ``_1``.
4. The model is written atomically (``fileio.atomic_write``): an error
   anywhere leaves no file, and an old file at ``path`` untouched.

The ``onnx`` package is imported only inside ``export`` (``import dezero_kr``
never imports it); without it ``export`` raises ImportError naming the extra.
"""
import numpy as np

from dezero_kr import functions_conv as _conv
from dezero_kr import functions_math as _fmath
from dezero_kr import functions_nn as _nn
from dezero_kr import operators as _ops
from dezero_kr import transformer as _tf
from dezero_kr.core import Parameter, Variable, using_config
from dezero_kr.fileio import atomic_write
from dezero_kr.graph.dot import dot_node, walk_graph
from dezero_kr.layers import Layer

__all__ = ['export', 'register', 'mapping_table', 'to_dot', 'ExportError', 'MIN_OPSET', 'MAX_OPSET',
           'DEFAULT_OPSET', 'INSTALL_HINT']

MIN_OPSET = 17      # LayerNormalization is new in opset 17
MAX_OPSET = 23      # the newest opset the tests run against ONNX Runtime 1.32
DEFAULT_OPSET = 17  # the widest reach: runtimes from 2022 on read it
INSTALL_HINT = 'pip install "dezero_kr[onnx]"'
_INT64_MAX = np.iinfo(np.int64).max
_INT64_MIN = np.iinfo(np.int64).min


class ExportError(ValueError):
    """The model cannot be written as ONNX; the message says where in the graph and what to do."""


def _require_onnx():
    """The ``onnx`` package (an optional extra), or ImportError naming the extra to install."""
    try:
        import onnx
        import onnx.numpy_helper  # noqa: F401  (a submodule: imported so ``onnx.numpy_helper`` works)
    except ImportError as e:
        raise ImportError(f'dezero_kr.onnx.export needs the onnx package, which is not installed: '
                          f'{INSTALL_HINT} (or pip install onnx); onnxruntime runs the file') from e
    return onnx


# =============================================================================
# The converter registry
# =============================================================================
_CONVERTERS = {}  # Function class -> (ONNX ops as text, converter)


def register(function_class, onnx_ops):
    """Decorator: ``converter(b, f, ins, outs)`` writes Function class ``function_class`` as ONNX.

    ``onnx_ops`` is the text of the mapping table (``'Gemm'``, ``'MatMul + Add'``).
    The converter gets the builder ``b`` (``b.one(op, inputs, output, **attrs)`` for a node of one
    output, ``b.node(op, inputs, outputs, **attrs)``,
    ``b.const(array)``, ``b.out_dims(i)``, ...), the recorded Function ``f``, the
    ONNX names of its inputs ``ins`` and the names its outputs must get ``outs``.
    Registering a class again replaces its converter.
    """
    def decorate(converter):
        _CONVERTERS[function_class] = (onnx_ops, converter)
        return converter
    return decorate


def mapping_table():
    """The Function -> ONNX mapping as Markdown table rows (``| `Add` | Add |``), sorted by
    class name: the table of docs/onnx.md is this text (a test checks it)."""
    rows = ['| dezero_kr Function | ONNX |', '|---|---|']
    for cls in sorted(_CONVERTERS, key=lambda c: c.__name__.lower()):
        rows.append(f'| `{cls.__name__}` | {_CONVERTERS[cls][0]} |')
    return '\n'.join(rows) + '\n'


# =============================================================================
# export
# =============================================================================
def export(model, example_inputs, path, *, input_names=None, output_names=None, dynamic_batch=True,
           opset=None):
    """Write ``model`` as an ONNX file at ``path`` and return the ``onnx.ModelProto``.

    ``model``: a Layer/Model or any function of Variables, called as
    ``model(*inputs)``; it returns a Variable or a tuple/list of them (the ONNX
    outputs).  ``example_inputs``: one array or Variable, or a tuple/list of
    them (the ONNX inputs, in that order; integer arrays such as token ids are
    inputs too).  ``input_names`` / ``output_names``: default ``input0``, ...,
    ``output0``, ...  ``dynamic_batch``: axis 0 of every input is the batch
    (``batch`` in the file), and the file runs on any batch size; False fixes
    every shape to the example's.  ``opset``: ONNX opset, ``MIN_OPSET`` to
    ``MAX_OPSET`` (default ``DEFAULT_OPSET``).

    dtypes are kept (float32 stays float32, float64 double).  Raises
    ImportError without the ``onnx`` package (naming ``dezero_kr[onnx]``),
    ``ExportError`` (a ValueError) for a Function with no ONNX mapping (naming
    the class and the output it feeds), an output that depends on no input, a
    graph that changes with the batch size, a dimension that is not
    ``k * batch + c`` (Python arithmetic on ``x.shape[0]``), a model that fails
    on the other batch sizes, a name that is not UTF-8 (a lone surrogate), or
    ValueError for a bad opset / name list (an input and an output of one
    name).  An error leaves no file behind; a file it writes loads in ONNX
    Runtime.  The file is written by ``fileio.atomic_write``: an existing file
    keeps its mode and owner, a symbolic link is written through, and a FIFO,
    device (``/dev/null``) or directory at ``path`` is refused
    (``FileExistsError``, ``IsADirectoryError``), never replaced.
    """
    onnx = _require_onnx()
    opset = _check_opset(opset)
    arrays = _example_arrays(example_inputs)
    if dynamic_batch:
        _check_batch(arrays)
    trace = _trace(model, arrays)
    input_names = _check_names('input_names', input_names, 'input', len(arrays))
    output_names = _check_names('output_names', output_names, 'output', len(trace.outputs))
    _check_disjoint(input_names, output_names)
    twins = _twin_traces(model, arrays, trace) if dynamic_batch else []
    b = _Builder(onnx, opset, trace, twins, _param_paths(model))
    graph = b.build(input_names, output_names)
    proto = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid('', opset)],
                                   producer_name='dezero_kr', doc_string=_doc(model))
    proto.ir_version = onnx.helper.find_min_ir_version_for(list(proto.opset_import))
    data = proto.SerializeToString()
    with atomic_write(path, what='onnx.export') as f:
        f.write(data)
    return proto


def _doc(model):
    name = type(model).__name__.encode('utf-8', 'backslashreplace').decode('utf-8')
    return f'{name} exported by dezero_kr.onnx.export'


def _check_opset(opset):
    if opset is None:
        return DEFAULT_OPSET
    if isinstance(opset, bool) or not isinstance(opset, (int, np.integer)) \
            or not MIN_OPSET <= opset <= MAX_OPSET:
        raise ValueError(f'export: opset {opset!r} is not supported; dezero_kr.onnx writes opsets '
                         f'{MIN_OPSET} to {MAX_OPSET} (default {DEFAULT_OPSET})')
    return int(opset)


def _example_arrays(example_inputs):
    items = example_inputs if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    if not items:
        raise ValueError('export: example_inputs is empty; give at least one array or Variable')
    arrays = []
    for i, x in enumerate(items):
        a = x.data if isinstance(x, Variable) else x
        if not isinstance(a, np.ndarray):
            raise TypeError(f'export: example input #{i} must be a numpy.ndarray or a Variable '
                            f'holding one, got {type(x).__name__}')
        arrays.append(a)
    return arrays


def _check_names(what, names, prefix, n):
    if names is None:
        return [f'{prefix}{i}' for i in range(n)]
    names = list(names)
    if len(names) != n or len(set(names)) != n or not all(isinstance(s, str) and s for s in names):
        raise ValueError(f'export: {what} must be {n} distinct non-empty strings (one per '
                         f'{prefix}), got {names!r}')
    for i, name in enumerate(names):
        _check_utf8(name, f'{what}[{i}]', 'use a name of real characters', ValueError)
    return names


def _check_disjoint(input_names, output_names):
    # ONNX Runtime refuses a file where an output and an input have one name ("Duplicate
    # definition"); an output that is an input is written as an Identity under its own name
    shared = next((name for name in output_names if name in input_names), None)
    if shared is not None:
        raise ValueError(f'export: {shared!r} is the name of an input and of an output; an ONNX '
                         f'file gives every value one name: pass input_names= and output_names= '
                         f'that share none')


def _check_utf8(name, what, todo, error=None):
    """``name``, or ``error`` (ExportError) if it cannot be written as UTF-8 (a lone surrogate:
    protobuf would raise a UnicodeEncodeError naming nothing)."""
    try:
        name.encode('utf-8')
    except UnicodeEncodeError as e:
        code = ord(name[e.start])
        raise (error or ExportError)(
            f'export: {what} {name!r} cannot be written: ONNX stores names as UTF-8, and this '
            f'one holds a lone surrogate (U+{code:04X}, as bytes decoded with '
            f"errors='surrogateescape' give); {todo}") from None
    return name


def _check_batch(arrays):
    sizes = {a.shape[0] if a.ndim else None for a in arrays}
    if None in sizes or len(sizes) != 1 or 0 in sizes:
        shapes = [a.shape for a in arrays]
        raise ValueError(f'export: dynamic_batch=True needs every input to have the same non-zero '
                         f'batch size on axis 0, got shapes {shapes}; pass dynamic_batch=False to '
                         f'fix every shape to the example\'s')


def _param_paths(model):
    """``{id(array or Parameter): path}`` of a Layer's parameters (BatchNorm passes its running
    statistics as arrays, so their arrays are named too); empty for a plain function."""
    if not isinstance(model, Layer):
        return {}
    paths = {}
    for path, p in model.named_params():
        paths[id(p)] = path
        if p.data is not None:
            paths.setdefault(id(p.data), path)
    return paths


class _Trace:
    """One recorded forward pass: inputs, outputs and the walked Functions in topological order."""

    def __init__(self, inputs, outputs, funcs, consumer):
        self.inputs, self.outputs, self.funcs, self.consumer = inputs, outputs, funcs, consumer
        self.batch = inputs[0].shape[0] if inputs[0].ndim else None


def _twin_traces(model, arrays, trace):
    """The runs on the example rows repeated to N + 1 and 2N + 2 rows, each checked to record
    the Functions of ``trace``: three batch sizes, so a dimension computed from the batch by
    Python arithmetic (``N // 2``) is caught, where two sizes fit any dimension to
    ``k * batch + c``."""
    n = arrays[0].shape[0]
    sizes = (n + 1, 2 * n + 2)
    twins = []
    for size in sizes:
        rows = np.arange(size) % n
        try:
            twins.append(_trace(model, [a[rows] for a in arrays]))
        except Exception as e:  # the model's own error, whatever its type: explained, chained
            raise ExportError(
                f'export: the model ran on the example batch of {n} but raised '
                f'{type(e).__name__} on batch {size}, one of the runs with other batch sizes '
                f'{sizes} that find which axes are the batch (dynamic_batch=True): {e}\n'
                f'  what to do: a layer that keeps a state between calls (L.RNN, L.LSTM) must '
                f'start the forward with reset_state(); a forward that runs on one batch size '
                f'only can be exported with dynamic_batch=False') from e
        _match(trace, twins[-1])
    return twins


def _trace(model, arrays):
    inputs = [Variable(a) for a in arrays]
    with using_config('train', False), using_config('enable_backprop', True):
        out = model(*inputs)
    outputs = list(out) if isinstance(out, (tuple, list)) else [out]
    for i, y in enumerate(outputs):
        if not isinstance(y, Variable):
            raise TypeError(f'export: the model must return Variables; output #{i} is '
                            f'{type(y).__name__}')
    walk = walk_graph(outputs)
    funcs = sorted(walk.funcs, key=lambda f: f.generation)  # stable: BFS order within a level
    return _Trace(inputs, outputs, funcs, walk.consumer)


# =============================================================================
# Batch-dependent dimensions
# =============================================================================
class _BatchDim:
    """A dimension ``k * batch + c`` (found from two traces with different batch sizes)."""
    __slots__ = ('k', 'c')

    def __init__(self, k, c):
        self.k, self.c = k, c

    def __repr__(self):
        text = 'batch' if self.k == 1 else f'{self.k}*batch'
        return text if self.c == 0 else f'{text}{self.c:+d}'


def _dims(shapes, batches):
    """The first of ``shapes`` (one per run, of batch sizes ``batches``) with every dimension
    that differs between the runs as a ``_BatchDim``, and ``None`` for one that is not the same
    ``k * batch + c`` in every run (nor the same number)."""
    dims = []
    for sizes in zip(*shapes):
        k, r = divmod(sizes[1] - sizes[0], batches[1] - batches[0]) if len(sizes) > 1 else (0, 0)
        c = sizes[0] - k * batches[0]
        if r or any(d != k * n + c for d, n in zip(sizes, batches)):
            dims.append(None)
        else:
            dims.append(int(c) if k == 0 else _BatchDim(int(k), int(c)))
    return dims


# =============================================================================
# The builder
# =============================================================================
class _Builder:
    """Collects nodes and initializers while the converters run, one Function at a time."""

    def __init__(self, onnx, opset, trace, twins, param_paths):
        self.onnx, self.helper, self.opset = onnx, onnx.helper, opset
        self.trace, self.twins, self.param_paths = trace, twins, param_paths
        self.batches = [t.batch for t in [trace] + twins]
        self.nodes, self.inits, self.names = [], [], set()
        self._paths = set(param_paths.values())  # kept for the parameters: no helper takes one
        self.values = {}         # Variable -> ONNX name
        self.index_inputs = {}   # id(array of an input) -> its ONNX name (token ids, ...)
        self._consts = {}        # id(array) -> (array, name): one initializer per array
        self._batch = None
        self.f, self.f2s = None, []  # the Function being converted, and its twins
        self.f_tag = 'export'

    # --- names ---------------------------------------------------------------
    def fresh(self, hint, path=False):
        """A new unique value name from ``hint``: ``hint``, else ``hint_1``, ``hint_2``, ...
        Only a parameter (``path=True``) takes a name that is a parameter's path, so the
        weights keep their paths unless an input or output name took one."""
        _check_utf8(hint, 'the name', 'rename what has that name')
        name, i = hint, 0
        while name in self.names or (not path and name in self._paths):
            i += 1
            name = f'{hint}_{i}'
        self.names.add(name)
        return name

    def node(self, op, inputs, outputs=None, **attrs):
        """Append an ONNX node ``op``; returns its output names (``outputs``, or one fresh name)."""
        if outputs is None:
            outputs = [self.fresh(f'{self._tag}/{op}')]
        name = self.fresh(f'{self._tag}/{op}')
        self.nodes.append(self.helper.make_node(op, list(inputs), list(outputs), name=name, **attrs))
        return list(outputs)

    def one(self, op, inputs, out=None, **attrs):
        """``node`` with one output: its name."""
        return self.node(op, inputs, None if out is None else [out], **attrs)[0]

    @property
    def _tag(self):
        """The current Function's tag (``Linear_3``), the prefix of its nodes' names."""
        return self.f_tag if self.f is not None else 'export'

    # --- constants -------------------------------------------------------------
    def const(self, value, dtype=None, hint='const'):
        """An initializer holding ``value`` (an array or a number, as ``dtype`` if given):
        its name.  A parameter's array gets the parameter's path as its name."""
        arr = value if isinstance(value, np.ndarray) else np.asarray(value)
        if dtype is not None and arr.dtype != dtype:
            arr = arr.astype(dtype)
        known = self._consts.get(id(arr))
        if known is not None and known[0] is arr:
            return known[1]
        path = self.param_paths.get(id(value))  # a parameter's array, or a BatchNorm statistic
        if path is not None:
            _check_utf8(path, 'the parameter path', 'rename the layer attribute')
        name = self.fresh(hint if path is None else path, path is not None)
        self.inits.append(self.onnx.numpy_helper.from_array(_contiguous(arr), name))
        self._consts[id(arr)] = (arr, name)
        return name

    def ints(self, values, hint='const'):
        """An int64 initializer: 1-D for a list (shapes, axes, pads), 0-d for a number."""
        return self.const(np.asarray(values, dtype=np.int64), hint=hint)

    def indices(self, array):
        """Integer index array ``array``: the ONNX input it is (token ids passed to the model),
        else an int64 initializer."""
        name = self.index_inputs.get(id(array))
        return name if name is not None else self.const(array, np.int64, 'indices')

    def cast(self, name, from_dtype, to_dtype):
        """``name`` cast to ``to_dtype`` (itself when the dtypes agree)."""
        if np.dtype(from_dtype) == np.dtype(to_dtype):
            return name
        return self.one('Cast', [name], to=_tensor_type(self.helper, to_dtype))

    def value(self, v):
        """The ONNX name of Variable ``v``: computed already, or a leaf made an initializer
        (a parameter under its path, any other constant under its name or ``const``)."""
        name = self.values.get(v)
        if name is None:
            name = self.const(v.data, hint=self.param_paths.get(id(v)) or v.name or 'const')
            self.values[v] = name
        return name

    # --- shapes ----------------------------------------------------------------
    def out_dims(self, i=0):
        """Output ``i`` of the current Function's shape, batch multiples as ``_BatchDim``;
        an ExportError if a dimension is not the same ``k * batch + c`` in every run."""
        ys = [g.outputs[i]() for g in [self.f] + self.f2s]
        if any(y is None for y in ys):  # an output nobody kept in one of the runs
            return list(ys[0].shape)
        dims = _dims([y.shape for y in ys], self.batches)
        if None in dims:
            axis = dims.index(None)
            shapes = [f'{y.shape} for batch {n}' for y, n in zip(ys, self.batches)]
            raise self.error(
                f'has an output of shape {", ".join(shapes[:-1])} and {shapes[-1]}: axis {axis} '
                f'{tuple(y.shape[axis] for y in ys)} is not k * batch + c, so the forward '
                f'computed it from the batch size by Python arithmetic (x.shape[0] // 2) that '
                f'the file cannot repeat for another batch',
                'keep the batch on an axis of its own (x.shape[0] or -1 in a reshape), or '
                'export with dynamic_batch=False to fix the batch')
        return dims

    def batch_size(self):
        """A 1-D int64 tensor [N]: the batch size of the run (axis 0 of the first input)."""
        if self._batch is None:
            f, self.f = self.f, None
            self._batch = self.one('Shape', [self.values[self.trace.inputs[0]]],
                                   self.fresh('batch_size'), start=0, end=1)
            self.f = f
        return self._batch

    def shape(self, dims):
        """A 1-D int64 tensor of ``dims``: an initializer, or computed from the batch size."""
        if not any(isinstance(d, _BatchDim) for d in dims):
            return self.ints(dims, 'shape')
        parts = []
        for d in dims:
            if isinstance(d, _BatchDim):
                n = self.batch_size()
                n = n if d.k == 1 else self.one('Mul', [n, self.ints([d.k])])
                parts.append(n if d.c == 0 else self.one('Add', [n, self.ints([d.c])]))
            else:
                parts.append(self.ints([d]))
        return self.one('Concat', parts, axis=0)

    def reshape(self, x, dims, out=None):
        """``Reshape(x)`` to ``dims``: a constant target, with ``-1`` for the one batch-dependent
        dimension (or computed at run time when several depend on the batch)."""
        batch_dims = [i for i, d in enumerate(dims) if isinstance(d, _BatchDim)]
        if len(batch_dims) == 1:
            target = self.ints([-1 if isinstance(d, _BatchDim) else d for d in dims], 'shape')
        else:
            target = self.shape(dims)
        return self.one('Reshape', [x, target], out)

    def reduce(self, op, x, axes, keepdims, out=None):
        """``op`` (ReduceSum, ReduceMax, ...) over ``axes`` (None: all): axes as an input from
        opset 18 on (ReduceSum since 13), an attribute before."""
        keep = int(bool(keepdims))
        if axes is None:
            return self.one(op, [x], out, keepdims=keep)
        if op == 'ReduceSum' or self.opset >= 18:
            return self.one(op, [x, self.ints(list(axes), 'axes')], out, keepdims=keep)
        return self.one(op, [x], out, axes=list(axes), keepdims=keep)

    def same_const(self, name):
        """The attribute ``name`` (a mask, a constant operand), refused if it differs in a run
        with another batch size (then the forward computed it from the input's values or its
        batch size, outside the graph, and the file would hold one run's number)."""
        a = getattr(self.f, name)
        for f2, n2 in zip(self.f2s, self.batches[1:]):
            a2 = getattr(f2, name)
            if not _same_value(a, a2):
                raise self.error(f'has a constant {name} that differs between the run with batch '
                                 f'{self.trace.batch} (shape {np.shape(a)}) and the run with batch '
                                 f'{n2} (shape {np.shape(a2)}): the forward computed it from '
                                 f'the input outside the graph (x.data, x.shape, float(x))',
                                 'compute it with dezero_kr operations on the input Variables, or '
                                 'export with dynamic_batch=False if only the batch size is baked in')
        return a

    # --- errors ----------------------------------------------------------------
    def error(self, problem, todo):
        """An ExportError about the current Function: its class, where it sits, ``problem``,
        and what to do (``todo``)."""
        return ExportError(f'export: {type(self.f).__name__} ({type(self.f).__module__}) {problem}.\n'
                           f'  where: {_where(self.f, self.trace)}\n  what to do: {todo}')

    # --- the graph -------------------------------------------------------------
    def build(self, input_names, output_names):
        """Convert every walked Function; the ``onnx.GraphProto``."""
        self._name_inputs(input_names, output_names)
        out_of = {}
        for y, name in zip(self.trace.outputs, output_names):
            out_of.setdefault(y, name)
        twins = list(zip(*(t.funcs for t in self.twins))) or [[]] * len(self.trace.funcs)
        for k, f in enumerate(self.trace.funcs):
            self._convert(k, f, list(twins[k]), out_of)
        self._finish_outputs(output_names, out_of)
        self._check_connected(input_names, output_names)
        return self.helper.make_graph(
            self.nodes, 'dezero_kr', self._value_infos(self.trace.inputs, input_names, True),
            self._value_infos(self.trace.outputs, output_names, False), self.inits)

    def _name_inputs(self, input_names, output_names):
        self.names.update(output_names)  # reserved: no initializer or node may take them
        for x, name in zip(self.trace.inputs, input_names):
            self.names.add(name)
            self.values[x] = name
            self.index_inputs[id(x.data)] = name

    def _convert(self, k, f, f2s, out_of):
        entry = _CONVERTERS.get(type(f))
        self.f, self.f2s, self.f_tag = f, f2s, f'{type(f).__name__}_{k}'
        if entry is None:
            raise self.error('has no ONNX mapping',
                             'export the part of the model before it (return the scores, not the '
                             'loss), write that step with mapped operations (docs/onnx.md lists '
                             'them), or add a converter with dezero_kr.onnx.register')
        ins = self._inputs(f)
        outs = []
        for ref in f.outputs:
            y = ref()
            name = out_of.pop(y, None) if y is not None else None
            if name is not None:
                self.names.add(name)
            name = name or self.fresh(self.f_tag)
            outs.append(name)
            if y is not None:
                self.values[y] = name
        entry[1](self, f, ins, outs)
        for i, ref in enumerate(f.outputs if f2s else ()):  # refused if not k * batch + c,
            if ref() is not None:                             # whatever the converter read
                self.out_dims(i)
        self.f, self.f2s = None, []

    def _inputs(self, f):
        """The ONNX names of ``f``'s inputs, each floating input cast to the output's dtype where
        it differs: NumPy computed in the promoted dtype (float32 x @ float64 W is float64),
        and an ONNX op takes one dtype."""
        y = next((r() for r in f.outputs if r() is not None), None)
        dtype = y.dtype if y is not None else None
        ins = []
        for x in f.inputs:
            name = self.value(x)
            if dtype is not None and dtype.kind == 'f' and x.dtype.kind == 'f':
                name = self.cast(name, x.dtype, dtype)
            ins.append(name)
        return ins

    def _finish_outputs(self, output_names, out_of):
        """Outputs no Function produced under their name (an input returned as it is, or one
        Variable returned twice) get an Identity node."""
        for y, name in zip(self.trace.outputs, output_names):
            if self.values.get(y) != name:
                self.names.add(name)
                self.one('Identity', [self.value(y)], name)

    def _check_connected(self, input_names, output_names):
        """Every output must depend on an input, and every input must be used."""
        producers = {o: n for n in self.nodes for o in n.output}
        for name in output_names:
            if not _reaches_input(name, producers, set(input_names)):
                raise ExportError(
                    f'export: output {name!r} does not depend on any input: the forward computed it '
                    f'from values the graph does not record (x.data, float(x), numpy on the data, a '
                    f'Python number), so ONNX would return the same numbers for every input. '
                    f'Compute it with dezero_kr operations on the input Variables')
        used = {i for n in self.nodes for i in n.input}
        for name in input_names:
            if name not in used:
                raise ExportError(
                    f'export: input {name!r} is not used by the exported graph: the forward read '
                    f'its values outside the graph (x.data, numpy, Python control flow), so the '
                    f'file would ignore it. Use dezero_kr operations on it, or leave it out of '
                    f'example_inputs')

    def _value_infos(self, variables, names, is_input):
        runs = [t.inputs if is_input else t.outputs for t in self.twins]
        infos = []
        for i, (v, name) in enumerate(zip(variables, names)):
            # every dimension was checked: the Function that made it (or an input: axis 0)
            dims = _dims([v.shape] + [r[i].shape for r in runs], self.batches)
            shape = [d if isinstance(d, int) else (repr(d) if d and d.c == 0 else None) for d in dims]
            infos.append(self.helper.make_tensor_value_info(
                name, _tensor_type(self.helper, v.dtype), shape))
        return infos


def _contiguous(a):
    # not np.ascontiguousarray: it makes a 0-d array 1-d, and a scalar must stay a scalar
    return a if a.flags.c_contiguous else a.copy(order='C')


def _tensor_type(helper, dtype):
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def _same_value(a, a2):
    if a is a2:
        return True
    if a is None or a2 is None:
        return a is a2
    a, a2 = np.asarray(a), np.asarray(a2)
    return a.shape == a2.shape and a.dtype == a2.dtype and np.array_equal(a, a2, equal_nan=a.dtype.kind in 'fc')


def _reaches_input(name, producers, inputs):
    stack, seen = [name], set()
    while stack:
        n = stack.pop()
        if n in inputs:
            return True
        node = producers.get(n)
        if node is None or n in seen:
            continue
        seen.add(n)
        stack.extend(node.input)
    return False


def _match(trace, twin):
    """ExportError unless ``twin`` (a run with another batch size) recorded the Functions of
    ``trace`` in the same order, reading the same constants."""
    sig1 = [(type(f).__name__, len(f.inputs), len(f.outputs)) for f in trace.funcs]
    sig2 = [(type(f).__name__, len(f.inputs), len(f.outputs)) for f in twin.funcs]
    if sig1 != sig2:
        k = next((i for i, (a, b) in enumerate(zip(sig1, sig2)) if a != b), min(len(sig1), len(sig2)))
        raise ExportError(
            f'export: the recorded graph changes with the batch size ({len(sig1)} Functions for '
            f'batch {trace.batch}, {len(sig2)} for batch {twin.batch}; they first differ at '
            f'Function #{k}): the forward depends on Python values the export cannot see (the '
            f'batch size, the data, a Python loop over rows, or the state a layer kept from the '
            f'run before: call reset_state() at the start of the forward of L.RNN, L.LSTM). '
            f'Export with dynamic_batch=False to fix the batch, or write the forward without them')
    for f, f2 in zip(trace.funcs, twin.funcs):
        for x, x2 in zip(f.inputs, f2.inputs):
            if x.creator is None and all(x is not i for i in trace.inputs) \
                    and not _same_value(x.data, x2.data):
                raise ExportError(
                    f'export: {type(f).__name__} reads a constant of shape {x.shape} that differs '
                    f'between the run with batch {trace.batch} and the run with batch {twin.batch} '
                    f'(shape {x2.shape}): the forward made it from the input outside the graph '
                    f'(x.data, x.shape, numpy).\n  where: {_where(f, trace)}\n  what to do: build it '
                    f'with dezero_kr operations on the input, or export with dynamic_batch=False '
                    f'if only the batch size is baked in')


def _where(f, trace, hops=4):
    """Where ``f`` sits: its input shapes, and the chain of Functions its output feeds."""
    ins = ', '.join(f'{x.shape} {x.dtype}' for x in f.inputs)
    parts = [f'{type(f).__name__}({ins})']
    outputs = {y: i for i, y in enumerate(trace.outputs)}
    while hops:
        y = next((r() for r in f.outputs if r() is not None), None)
        if y is None:
            break
        parts.append(f'-> {y.shape} {y.dtype}')
        if y in outputs:
            parts.append(f'= model output #{outputs[y]}')
            break
        f = trace.consumer.get(y)
        if f is None:
            break
        parts.append(f'-> {type(f).__name__}')
        hops -= 1
    return ' '.join(parts)


# =============================================================================
# Converters: arithmetic
# =============================================================================
def _out_dtype(f, i=0):
    return f.outputs[i]().dtype


def _unary(op, **attrs):
    def convert(b, f, ins, outs):
        b.one(op, ins, outs[0], **attrs)
    return convert


for _cls, _op in ((_ops.Neg, 'Neg'), (_ops.Log, 'Log'), (_fmath.Exp, 'Exp'), (_fmath.Sqrt, 'Sqrt'),
                  (_fmath.Tanh, 'Tanh'), (_fmath.Sin, 'Sin'), (_fmath.Cos, 'Cos'),
                  (_fmath.Tan, 'Tan'), (_fmath.Abs, 'Abs'), (_nn.Sigmoid, 'Sigmoid'),
                  (_nn.ReLU, 'Relu')):
    register(_cls, _op)(_unary(_op))


def _binary(op):
    def convert(b, f, ins, outs):
        b.one(op, ins, outs[0])
    return convert


for _cls, _op in ((_ops.Add, 'Add'), (_ops.Sub, 'Sub'), (_ops.Mul, 'Mul'), (_ops.Div, 'Div'),
                  (_ops.PowVariable, 'Pow'), (_fmath.Maximum, 'Max'), (_fmath.Minimum, 'Min')):
    register(_cls, _op)(_binary(_op))


def _with_constant(op, constant_first):
    def convert(b, f, ins, outs):
        dtype = _out_dtype(f)
        c = b.const(b.same_const('c'), dtype, 'c')
        b.one(op, [c, ins[0]] if constant_first else [ins[0], c], outs[0])
    return convert


for _cls, _op, _first in ((_ops.AddConstant, 'Add', False), (_ops.SubConstant, 'Sub', False),
                          (_ops.RSubConstant, 'Sub', True), (_ops.MulConstant, 'Mul', False),
                          (_ops.DivConstant, 'Div', False), (_ops.RDivConstant, 'Div', True),
                          (_ops.Pow, 'Pow', False), (_ops.RPow, 'Pow', True)):
    register(_cls, f'{_op} (constant {"first" if _first else "second"})')(_with_constant(_op, _first))


@register(_ops.MatMul, 'MatMul')
def _matmul(b, f, ins, outs):
    b.one('MatMul', ins, outs[0])


@register(_fmath.Linear, 'Gemm (x of more axes: Reshape to 2-D first and back, as dezero_kr does)')
def _linear(b, f, ins, outs):
    x = f.inputs[0]
    if x.ndim == 2:
        b.one('Gemm', ins, outs[0])
        return
    flat = b.one('Reshape', [ins[0], b.ints([-1, x.shape[-1]], 'shape')])  # (..., I) -> (rows, I)
    b.reshape(b.one('Gemm', [flat] + ins[1:]), b.out_dims(), outs[0])


@register(_fmath.Clip, 'Clip')
def _clip(b, f, ins, outs):
    dtype = _out_dtype(f)
    bounds = []
    for name in ('x_min', 'x_max'):
        c = getattr(f, name)
        if c is not None and np.ndim(c):
            raise b.error(f'has an array bound {name} of shape {np.shape(c)}',
                          'use scalar bounds, or F.maximum / F.minimum with the array')
        bounds.append('' if c is None else b.const(np.asarray(c, dtype=dtype), hint=name))
    b.one('Clip', [ins[0]] + bounds, outs[0])


@register(_fmath.Where, 'Where (condition constant)')
def _where_op(b, f, ins, outs):
    cond = b.const(np.asarray(b.same_const('condition'), dtype=bool), hint='condition')
    b.one('Where', [cond] + ins, outs[0])


@register(_nn.MaskedFill, 'Where (mask constant)')
def _masked_fill(b, f, ins, outs):
    dtype = _out_dtype(f)
    mask = b.const(np.asarray(b.same_const('mask'), dtype=bool), hint='mask')
    b.one('Where', [mask, b.const(np.asarray(f.value, dtype=dtype), hint='fill'), ins[0]], outs[0])


@register(_nn.LeakyReLU, 'LeakyRelu (float64: Where, Greater, Mul)')
def _leaky_relu(b, f, ins, outs):
    dtype = _out_dtype(f)
    if dtype == np.float32:
        b.one('LeakyRelu', ins, outs[0], alpha=float(f.slope))
        return
    # LeakyRelu's alpha is a float32 attribute: 0.2 would be rounded for float64 data
    positive = b.one('Greater', [ins[0], b.const(np.asarray(0, dtype), hint='zero')])
    scaled = b.one('Mul', [ins[0], b.const(np.asarray(f.slope, dtype), hint='slope')])
    b.one('Where', [positive, ins[0], scaled], outs[0])


@register(_nn.GELU, 'Mul, Add, Tanh (the tanh formula)')
def _gelu(b, f, ins, outs):
    # The order of dezero_kr's forward, so the rounding is the same:
    # u = ((x * x * a + 1) * x) * c;  y = (tanh(u) + 1) * x * 0.5
    dtype = _out_dtype(f)
    x = ins[0]
    u = b.one('Mul', [b.one('Mul', [x, x]), b.const(np.asarray(_nn._GELU_A, dtype), hint='gelu_a')])
    u = b.one('Add', [u, b.const(np.asarray(1, dtype), hint='one')])
    u = b.one('Mul', [b.one('Mul', [u, x]), b.const(np.asarray(_nn._GELU_C, dtype), hint='gelu_c')])
    t = b.one('Add', [b.one('Tanh', [u]), b.const(np.asarray(1, dtype), hint='one')])
    b.one('Mul', [b.one('Mul', [t, x]), b.const(np.asarray(0.5, dtype), hint='half')], outs[0])


@register(_nn.Softmax, 'Softmax')
def _softmax(b, f, ins, outs):
    _check_int_axis(b, f.axis, 'Softmax')
    b.one('Softmax', ins, outs[0], axis=int(f.axis))


@register(_nn.LogSoftmax, 'LogSoftmax')
def _log_softmax(b, f, ins, outs):
    _check_int_axis(b, f.axis, 'LogSoftmax')
    b.one('LogSoftmax', ins, outs[0], axis=int(f.axis))


def _check_int_axis(b, axis, op):
    if not isinstance(axis, (int, np.integer)):
        raise b.error(f'has axis={axis!r}; ONNX {op} takes one axis', f'use one int axis for {op}')


# =============================================================================
# Converters: shapes, indexing, reductions
# =============================================================================
@register(_ops.Reshape, 'Reshape')
def _reshape(b, f, ins, outs):
    b.reshape(ins[0], b.out_dims(), outs[0])


@register(_ops.Transpose, 'Transpose')
def _transpose(b, f, ins, outs):
    ndim = f.inputs[0].ndim
    axes = range(ndim)[::-1] if f.axes is None else [a % ndim for a in f.axes]
    b.one('Transpose', ins, outs[0], perm=[int(a) for a in axes])


@register(_ops.Sum, 'ReduceSum')
def _sum(b, f, ins, outs):
    b.reduce('ReduceSum', ins[0], _axes(f.axis, f.inputs[0].ndim), f.keepdims, outs[0])


@register(_ops.Max, 'ReduceMax')
def _max(b, f, ins, outs):
    b.reduce('ReduceMax', ins[0], _axes(f.axis, f.inputs[0].ndim), f.keepdims, outs[0])


@register(_ops.Min, 'ReduceMin')
def _min(b, f, ins, outs):
    b.reduce('ReduceMin', ins[0], _axes(f.axis, f.inputs[0].ndim), f.keepdims, outs[0])


def _axes(axis, ndim):
    if axis is None:
        return None
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    return [int(a) % ndim for a in axes]


@register(_ops.SumTo, 'ReduceSum + Reshape')
def _sum_to(b, f, ins, outs):
    x_shape, shape = f.inputs[0].shape, f.shape
    lead = len(x_shape) - len(shape)
    axes = list(range(lead)) + [lead + i for i, s in enumerate(shape) if s == 1 and x_shape[lead + i] != 1]
    summed = b.reduce('ReduceSum', ins[0], axes, True) if axes else ins[0]
    b.reshape(summed, b.out_dims(), outs[0])


@register(_ops.BroadcastTo, 'Expand')
def _broadcast_to(b, f, ins, outs):
    b.one('Expand', [ins[0], b.shape(b.out_dims())], outs[0])


@register(_fmath.Concat, 'Concat')
def _concat(b, f, ins, outs):
    b.one('Concat', ins, outs[0],
          axis=int(f.axis))


@register(_ops.GetItem, 'Slice + Reshape (basic index), Gather (an int array on one axis)')
def _get_item(b, f, ins, outs):
    items = f.slices if isinstance(f.slices, tuple) else (f.slices,)
    if _ops._is_basic_index(items):
        for f2, n2 in zip(b.f2s, b.batches[1:]):
            if repr(f2.slices) != repr(f.slices):
                items2 = f2.slices if isinstance(f2.slices, tuple) else (f2.slices,)
                raise b.error(f'has the index {_index_text(items)} for batch {b.trace.batch} but '
                              f'{_index_text(items2)} for batch {n2}: the forward computed it '
                              f'from the input', 'index with numbers that do not depend on the '
                              'batch, or export with dynamic_batch=False')
        _basic_index(b, f, ins, outs, items)
        return
    arrays = [i for i, s in enumerate(items) if isinstance(s, np.ndarray)]
    rest_full = all(isinstance(s, slice) and s == slice(None) for i, s in enumerate(items)
                    if i not in arrays)
    if len(arrays) == 1 and rest_full and items[arrays[0]].dtype.kind in 'iu':
        axis = arrays[0]
        b.one('Gather', [ins[0], b.indices(items[axis])], outs[0], axis=axis)
        return
    raise b.error(f'uses advanced indexing {_index_text(items)} (bool masks, several index arrays '
                  f'or lists), which has no ONNX mapping here',
                  'index with ints and slices (basic indexing), or with one integer array on one '
                  'axis and full slices elsewhere (ONNX Gather)')


def _index_text(items):
    return '[' + ', '.join(f'array{s.shape} {s.dtype}' if isinstance(s, np.ndarray) else repr(s)
                           for s in items) + ']'


def _basic_index(b, f, ins, outs, items):
    ndim = f.inputs[0].ndim
    n_real = sum(1 for s in items if s is not None and s is not Ellipsis)
    expanded = []
    for s in items:
        expanded.extend([slice(None)] * (ndim - n_real) if s is Ellipsis else [s])
    starts, ends, axes, steps, axis = [], [], [], [], 0
    for s in expanded:
        if s is None:
            continue
        start, end, step = _slice_bounds(s)
        if (start, end, step) != (0, _INT64_MAX, 1):
            starts.append(start), ends.append(end), axes.append(axis), steps.append(step)
        axis += 1
    x = ins[0]
    if axes:
        x = b.one('Slice', [x, b.ints(starts, 'starts'), b.ints(ends, 'ends'), b.ints(axes, 'axes'),
                            b.ints(steps, 'steps')])
    if any(s is None or not isinstance(s, slice) for s in expanded):
        b.reshape(x, b.out_dims(), outs[0])  # ints drop an axis, None adds one
    else:
        b.one('Identity', [x], outs[0])


def _slice_bounds(s):
    """(start, end, step) of an int or a slice for ONNX Slice (NumPy's meaning kept for
    negative indices and steps, on any size of the axis)."""
    if not isinstance(s, slice):
        s = int(s)
        return s, (s + 1 if s != -1 else _INT64_MAX), 1
    step = 1 if s.step is None else int(s.step)
    if step > 0:
        return (0 if s.start is None else int(s.start)), \
            (_INT64_MAX if s.stop is None else int(s.stop)), step
    return (_INT64_MAX if s.start is None else int(s.start)), \
        (_INT64_MIN if s.stop is None else int(s.stop)), step


# =============================================================================
# Converters: normalisation
# =============================================================================
@register(_nn.LayerNorm, 'LayerNormalization (float64: the formula, as RMSNorm)')
def _layer_norm(b, f, ins, outs):
    x = f.inputs[0]
    dtype = _out_dtype(f)
    if dtype != np.float32:  # epsilon is a float32 attribute, and ORT's float64 kernel differs
        _normalize_formula(b, f, ins, outs)
        return
    scale = ins[1] if len(ins) > 1 else b.const(np.ones(x.shape[-1], dtype), hint='ones')
    b.one('LayerNormalization', [ins[0], scale] + ins[2:3], outs[0], axis=-1, epsilon=float(f.eps))


@register(_nn.RMSNorm, 'Mul, ReduceSum, Add, Sqrt, Reciprocal (the formula)')
def _normalize_formula(b, f, ins, outs):
    """dezero_kr's order: xc = x - sum(x) / n (LayerNorm only); r = 1 / sqrt(sum(xc * xc) * (1/n)
    + eps); y = xc * r (* gamma) (+ beta), the sums over the last axis."""
    x, dtype = f.inputs[0], _out_dtype(f)
    axes, inv_n = [x.ndim - 1], b.const(np.asarray(1 / x.shape[-1], dtype), hint='inv_n')
    xc = ins[0]
    if f.center:
        mu = b.one('Mul', [b.reduce('ReduceSum', xc, axes, True), inv_n])
        xc = b.one('Sub', [xc, mu])
    var = b.one('Mul', [b.reduce('ReduceSum', b.one('Mul', [xc, xc]), axes, True), inv_n])
    var = b.one('Add', [var, b.const(np.asarray(f.eps, dtype), hint='eps')])
    last = len(ins) - 1  # the step that writes the output: 0 (no gamma), 1 (gamma), 2 (beta)
    y = b.one('Mul', [xc, b.one('Reciprocal', [b.one('Sqrt', [var])])], outs[0] if last == 0 else None)
    for i, op in ((1, 'Mul'), (2, 'Add')):
        if last >= i:
            y = b.one(op, [y, ins[i]], outs[0] if last == i else None)


@register(_nn.BatchNorm, 'BatchNormalization (test mode; float64: the formula)')
def _batch_norm(b, f, ins, outs):
    if f.train:
        raise b.error('was recorded in training mode (it normalises with the batch statistics)',
                      'export runs the model under test_mode(); call F.batch_norm without '
                      'forcing training')
    dtype = _out_dtype(f)
    mean = b.const(f.mean, dtype, 'mean')
    var = b.const(f.var, dtype, 'var')
    if dtype == np.float32:
        b.one('BatchNormalization', ins + [mean, var], outs[0], epsilon=float(f.eps))
        return
    # epsilon is a float32 attribute: float64 data gets dezero_kr's formula, in its order,
    # y = (x - mean) * (1 / sqrt(var + eps)) * gamma + beta, the statistics shaped (1, C, 1, 1)
    pshape = b.ints(f.pshape, 'pshape')
    mean, var, gamma, beta = (b.one('Reshape', [n, pshape]) for n in (mean, var, ins[1], ins[2]))
    var = b.one('Add', [var, b.const(np.asarray(f.eps, dtype), hint='eps')])
    xhat = b.one('Mul', [b.one('Sub', [ins[0], mean]), b.one('Reciprocal', [b.one('Sqrt', [var])])])
    b.one('Add', [b.one('Mul', [xhat, gamma]), beta], outs[0])


# =============================================================================
# Converters: convolution and pooling
# =============================================================================
def _pads(pad):
    return [int(pad[0]), int(pad[1]), int(pad[0]), int(pad[1])]


@register(_conv.Conv2d, 'Conv')
def _conv2d(b, f, ins, outs):
    b.one('Conv', ins, outs[0], strides=list(f.stride), pads=_pads(f.pad))


@register(_conv.Deconv2d, 'ConvTranspose')
def _deconv2d(b, f, ins, outs):
    (H, W), (KH, KW) = f.inputs[0].shape[2:], f.inputs[1].shape[2:]
    out_hw = f.outputs[0]().shape[2:]
    natural = [s * (n - 1) + k - 2 * p for s, n, k, p in zip(f.stride, (H, W), (KH, KW), f.pad)]
    extra = [int(o - n) for o, n in zip(out_hw, natural)]
    b.one('ConvTranspose', ins, outs[0], strides=list(f.stride), pads=_pads(f.pad),
          output_padding=extra)


@register(_conv.Pooling, 'MaxPool (Pad with zeros first when pad > 0)')
def _max_pool(b, f, ins, outs):
    x = ins[0]
    if any(f.pad):  # dezero_kr pads with zeros (DeZero's definition); MaxPool's padding is -inf
        ph, pw = f.pad
        x = b.one('Pad', [x, b.ints([0, 0, ph, pw, 0, 0, ph, pw], 'pads')], mode='constant')
    b.one('MaxPool', [x], outs[0], kernel_shape=list(f.kernel_size), strides=list(f.stride))


@register(_conv.AveragePooling, 'AveragePool (count_include_pad=1)')
def _average_pool(b, f, ins, outs):
    b.one('AveragePool', ins, outs[0], kernel_shape=list(f.kernel_size), strides=list(f.stride),
          pads=_pads(f.pad), count_include_pad=1)


# =============================================================================
# Converters: attention and embeddings
# =============================================================================
def _attention(b, q, k, v, hidden, scale, dtype, out=None):
    """softmax(q k^T * scale, -inf where hidden) v, in dezero_kr's order (``_attend``)."""
    ndim = 4
    kt = b.one('Transpose', [k], perm=list(range(ndim - 2)) + [ndim - 1, ndim - 2])
    s = b.one('Mul', [b.one('MatMul', [q, kt]), b.const(np.asarray(scale, dtype), hint='scale')])
    if hidden is not None:
        s = b.one('Where', [b.const(np.asarray(hidden, bool), hint='causal_mask'),
                            b.const(np.asarray(-np.inf, dtype), hint='minus_inf'), s])
    return b.one('MatMul', [b.one('Softmax', [s], axis=-1), v], out)


@register(_nn.MultiHeadAttention, 'Reshape, Transpose, Gather, MatMul, Mul, Where, Softmax')
def _multi_head_attention(b, f, ins, outs):
    B, T, C3 = f.inputs[0].shape
    H = f.n_head
    D = C3 // (3 * H)
    heads = b.one('Reshape', [ins[0], b.ints([0, 0, 3, H, D], 'shape')])  # 0: keep B (and T)
    heads = b.one('Transpose', [heads], perm=[2, 0, 3, 1, 4])              # (3, B, H, T, D)
    q, k, v = (b.one('Gather', [heads, b.ints(i, 'index')], axis=0) for i in (0, 1, 2))
    y = _attention(b, q, k, v, b.same_const('hidden'), f.scale, _out_dtype(f))
    y = b.one('Transpose', [y], perm=[0, 2, 1, 3])
    b.one('Reshape', [y, b.ints([0, 0, C3 // 3], 'shape')], outs[0])


@register(_nn.ScaledDotProductAttention, 'Transpose, MatMul, Mul, Where, Softmax')
def _sdpa(b, f, ins, outs):
    if f.inputs[0].ndim != 4 or f.inputs[1].ndim != 4:
        raise b.error(f'has q {f.inputs[0].shape}, k {f.inputs[1].shape}; the export takes 4-D '
                      f'(B, H, T, D)', 'reshape q, k, v to (B, H, T, D) first')
    _attention(b, ins[0], ins[1], ins[2], b.same_const('hidden'), f.scale, _out_dtype(f), outs[0])


@register(_tf.TokenPositionEmbedding, 'Gather + Slice + Add')
def _token_position(b, f, ins, outs):
    T = f.ids.shape[1]
    tok = b.one('Gather', [ins[0], b.indices(f.ids)], axis=0)
    pos = b.one('Slice', [ins[1], b.ints([0], 'starts'), b.ints([T], 'ends'), b.ints([0], 'axes')])
    b.one('Add', [tok, pos], outs[0])


# =============================================================================
# Drawing an exported model
# =============================================================================
_DTYPE_NAMES = {1: 'float32', 2: 'uint8', 3: 'int8', 6: 'int32', 7: 'int64', 9: 'bool', 10: 'float16',
                11: 'float64'}


def to_dot(model_proto):
    """DOT text of an ONNX model (an ``onnx.ModelProto``) in the look of ``get_dot_graph``.

    Every ONNX node is a light-blue box labelled with its op type; every value
    an ellipse labelled ``name: shape dtype`` (orange; initializers grey).
    Shapes of intermediate values show where the model carries them
    (``onnx.shape_inference.infer_shapes`` adds them).  Node ids follow the
    graph's node order, so one model always gives the same text; draw it with
    ``dezero_kr.graph.render_dot``.
    """
    g = model_proto.graph
    labels = {vi.name: _type_text(vi.type.tensor_type) for vi in
              list(g.input) + list(g.output) + list(g.value_info)}
    constants = {t.name for t in g.initializer}
    for t in g.initializer:
        labels[t.name] = f'{tuple(t.dims)} {_DTYPE_NAMES.get(t.data_type, t.data_type)}'
    lines, ids = ['digraph g {'], {}

    def value(name):
        if name not in ids:
            ids[name] = len(ids) + 1
            text = f'{name}: {labels[name]}' if name in labels else name
            lines.append(dot_node(ids[name], text, 'const' if name in constants else 'var'))
        return ids[name]

    for vi in g.input:
        value(vi.name)
    for node in g.node:
        nid = len(ids) + 1
        ids[(node.name, nid)] = nid
        lines.append(dot_node(nid, node.op_type, 'func'))
        lines.extend(f'{value(i)} -> {nid}' for i in node.input if i)
        lines.extend(f'{nid} -> {value(o)}' for o in node.output)
    lines += ['}', '']
    return '\n'.join(lines)


def _type_text(tensor_type):
    dims = tuple(d.dim_value if d.HasField('dim_value') else _dim_param(d.dim_param)
                 for d in tensor_type.shape.dim)
    dims_text = '(' + ', '.join(str(d) for d in dims) + (',)' if len(dims) == 1 else ')')
    return f'{dims_text} {_DTYPE_NAMES.get(tensor_type.elem_type, tensor_type.elem_type)}'


def _dim_param(name):
    # shape inference names the sizes it cannot know unk__0, unk__1, ...: shown as '?'
    return '?' if not name or name.startswith('unk__') else name
