"""What ``export`` checks and records before building: its arguments, the model's recorded
graph (three runs with ``dynamic_batch``), and which dimensions follow the batch."""
import numpy as np

from dezero_kr.core import Variable, using_config
from dezero_kr.graph.dot import walk_graph
from dezero_kr.layers import Layer
from dezero_kr.onnx.registry import DEFAULT_OPSET, ExportError, MAX_OPSET, MIN_OPSET

def model_doc(model):
    """The ``doc_string`` of the exported model: its class name (valid UTF-8)."""
    name = type(model).__name__.encode('utf-8', 'backslashreplace').decode('utf-8')
    return f'{name} exported by dezero_kr.onnx.export'


def check_opset(opset):
    """``opset`` as an int (None: ``DEFAULT_OPSET``); ValueError outside ``MIN_OPSET..MAX_OPSET``."""
    if opset is None:
        return DEFAULT_OPSET
    if isinstance(opset, bool) or not isinstance(opset, (int, np.integer)) \
            or not MIN_OPSET <= opset <= MAX_OPSET:
        raise ValueError(f'export: opset {opset!r} is not supported; dezero_kr.onnx writes opsets '
                         f'{MIN_OPSET} to {MAX_OPSET} (default {DEFAULT_OPSET})')
    return int(opset)


def example_arrays(example_inputs):
    """The example inputs as arrays; ValueError for none, TypeError for a non-array."""
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


def check_names(what, names, prefix, n):
    """``n`` names (``prefix0``, ... when None); ValueError naming ``what`` for a wrong count or name."""
    if names is None:
        return [f'{prefix}{i}' for i in range(n)]
    names = list(names)
    if len(names) != n or len(set(names)) != n or not all(isinstance(s, str) and s for s in names):
        raise ValueError(f'export: {what} must be {n} distinct non-empty strings (one per '
                         f'{prefix}), got {names!r}')
    for i, name in enumerate(names):
        check_utf8(name, f'{what}[{i}]', 'use a name of real characters', ValueError)
    return names


def check_disjoint(input_names, output_names):
    """ValueError when an output name is also an input name (ONNX Runtime refuses the file)."""
    # ONNX Runtime refuses a file where an output and an input have one name ("Duplicate
    # definition"); an output that is an input is written as an Identity under its own name
    shared = next((name for name in output_names if name in input_names), None)
    if shared is not None:
        raise ValueError(f'export: {shared!r} is the name of an input and of an output; an ONNX '
                         f'file gives every value one name: pass input_names= and output_names= '
                         f'that share none')


def check_utf8(name, what, todo, error=None):
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


def check_batch(arrays):
    """ValueError unless all ``arrays`` have one batch size (axis 0), none of them 0-d or empty."""
    sizes = {a.shape[0] if a.ndim else None for a in arrays}
    if None in sizes or len(sizes) != 1 or 0 in sizes:
        shapes = [a.shape for a in arrays]
        raise ValueError(f'export: dynamic_batch=True needs every input to have the same non-zero '
                         f'batch size on axis 0, got shapes {shapes}; pass dynamic_batch=False to '
                         f'fix every shape to the example\'s')


def parameter_paths(model):
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


def twin_traces(model, arrays, trace):
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
            twins.append(trace_model(model, [a[rows] for a in arrays]))
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


def trace_model(model, arrays):
    """One recorded run of ``model`` on ``arrays`` under test mode: the walked graph."""
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
class BatchDim:
    """A dimension ``k * batch + c`` (found from two traces with different batch sizes)."""
    __slots__ = ('k', 'c')

    def __init__(self, k, c):
        self.k, self.c = k, c

    def __repr__(self):
        text = 'batch' if self.k == 1 else f'{self.k}*batch'
        return text if self.c == 0 else f'{text}{self.c:+d}'


def dims_of(shapes, batches):
    """The first of ``shapes`` (one per run, of batch sizes ``batches``) with every dimension
    that differs between the runs as a ``BatchDim``, and ``None`` for one that is not the same
    ``k * batch + c`` in every run (nor the same number)."""
    dims = []
    for sizes in zip(*shapes):
        k, r = divmod(sizes[1] - sizes[0], batches[1] - batches[0]) if len(sizes) > 1 else (0, 0)
        c = sizes[0] - k * batches[0]
        if r or any(d != k * n + c for d, n in zip(sizes, batches)):
            dims.append(None)
        else:
            dims.append(int(c) if k == 0 else BatchDim(int(k), int(c)))
    return dims


def same_array(a, a2):
    """Whether two recorded values are the same: identical, or equal in shape, dtype and values (NaN equal)."""
    if a is a2:
        return True
    if a is None or a2 is None:
        return a is a2
    a, a2 = np.asarray(a), np.asarray(a2)
    return a.shape == a2.shape and a.dtype == a2.dtype and np.array_equal(a, a2, equal_nan=a.dtype.kind in 'fc')


def reaches_input(name, producers, inputs):
    """Whether the ONNX value ``name`` depends on a graph input (along ``producers``)."""
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
                    and not same_array(x.data, x2.data):
                raise ExportError(
                    f'export: {type(f).__name__} reads a constant of shape {x.shape} that differs '
                    f'between the run with batch {trace.batch} and the run with batch {twin.batch} '
                    f'(shape {x2.shape}): the forward made it from the input outside the graph '
                    f'(x.data, x.shape, numpy).\n  where: {describe_place(f, trace)}\n  what to do: build it '
                    f'with dezero_kr operations on the input, or export with dynamic_batch=False '
                    f'if only the batch size is baked in')


def describe_place(f, trace, hops=4):
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
