"""``to_dot``: an exported ONNX model as DOT text (what ``docs/make_onnx_graph.py`` draws)."""

from dezero_kr.graph.dot import dot_node


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
