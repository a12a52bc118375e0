"""The builder: the walked Functions become ONNX nodes, initializers and value infos."""
import numpy as np

from dezero_kr.onnx.registry import CONVERTERS, ExportError
from dezero_kr.onnx.tracing import (BatchDim, check_utf8, describe_place, dims_of, reaches_input,
                                    same_array)

# =============================================================================
# The builder
# =============================================================================
class Builder:
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
        check_utf8(hint, 'the name', 'rename what has that name')
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
            check_utf8(path, 'the parameter path', 'rename the layer attribute')
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
        """Output ``i`` of the current Function's shape, batch multiples as ``BatchDim``;
        an ExportError if a dimension is not the same ``k * batch + c`` in every run."""
        ys = [g.outputs[i]() for g in [self.f] + self.f2s]
        if any(y is None for y in ys):  # an output nobody kept in one of the runs
            return list(ys[0].shape)
        dims = dims_of([y.shape for y in ys], self.batches)
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
        if not any(isinstance(d, BatchDim) for d in dims):
            return self.ints(dims, 'shape')
        parts = []
        for d in dims:
            if isinstance(d, BatchDim):
                n = self.batch_size()
                n = n if d.k == 1 else self.one('Mul', [n, self.ints([d.k])])
                parts.append(n if d.c == 0 else self.one('Add', [n, self.ints([d.c])]))
            else:
                parts.append(self.ints([d]))
        return self.one('Concat', parts, axis=0)

    def reshape(self, x, dims, out=None):
        """``Reshape(x)`` to ``dims``: a constant target, with ``-1`` for the one batch-dependent
        dimension (or computed at run time when several depend on the batch)."""
        batch_dims = [i for i, d in enumerate(dims) if isinstance(d, BatchDim)]
        if len(batch_dims) == 1:
            target = self.ints([-1 if isinstance(d, BatchDim) else d for d in dims], 'shape')
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
            if not same_array(a, a2):
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
                           f'  where: {describe_place(self.f, self.trace)}\n  what to do: {todo}')

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
        entry = CONVERTERS.get(type(f))
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
            if not reaches_input(name, producers, set(input_names)):
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
            dims = dims_of([v.shape] + [r[i].shape for r in runs], self.batches)
            shape = [d if isinstance(d, int) else (repr(d) if d and d.c == 0 else None) for d in dims]
            infos.append(self.helper.make_tensor_value_info(
                name, _tensor_type(self.helper, v.dtype), shape))
        return infos


def _contiguous(a):
    # not np.ascontiguousarray: it makes a 0-d array 1-d, and a scalar must stay a scalar
    return a if a.flags.c_contiguous else a.copy(order='C')


def _tensor_type(helper, dtype):
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
