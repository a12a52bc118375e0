"""``export``: the model's recorded graph written as an ``.onnx`` file (see ``dezero_kr.onnx``)."""

from dezero_kr.fileio import atomic_write
from dezero_kr.onnx.registry import require_onnx
from dezero_kr.onnx.tracing import (check_batch, check_disjoint, check_names, check_opset, example_arrays,
                                    model_doc, parameter_paths, trace_model, twin_traces)
from dezero_kr.onnx.builder import Builder

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
    onnx = require_onnx()
    opset = check_opset(opset)
    arrays = example_arrays(example_inputs)
    if dynamic_batch:
        check_batch(arrays)
    trace = trace_model(model, arrays)
    input_names = check_names('input_names', input_names, 'input', len(arrays))
    output_names = check_names('output_names', output_names, 'output', len(trace.outputs))
    check_disjoint(input_names, output_names)
    twins = twin_traces(model, arrays, trace) if dynamic_batch else []
    b = Builder(onnx, opset, trace, twins, parameter_paths(model))
    graph = b.build(input_names, output_names)
    proto = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid('', opset)],
                                   producer_name='dezero_kr', doc_string=model_doc(model))
    proto.ir_version = onnx.helper.find_min_ir_version_for(list(proto.opset_import))
    data = proto.SerializeToString()
    with atomic_write(path, what='onnx.export') as f:
        f.write(data)
    return proto
