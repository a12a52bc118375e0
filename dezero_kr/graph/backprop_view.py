"""See backprop happen: an interactive backward-pass viewer (one HTML file).

``plot_backward(L, to_file='backprop.html')`` runs ``L.backward()`` while
recording what the engine does and writes one self-contained page (no CDN,
no server, no network; it opens from disk) with:

* the graph drawn by the same Graphviz renderer and the same DOT text as
  ``plot_dot_graph`` (every drawn Variable and Function is an SVG ``<g>``
  with id ``dz-n<DOT id>``);
* a timeline of the backward pass: at step k the function the engine popped
  is highlighted, the queue shows what is waiting with its ``generation``
  (the heap pops the largest generation first, ties in push order), the
  gradient arriving at each input is shown (shape, dtype, values when small,
  else norm/min/max) and a second arrival at the same Variable is marked as
  an accumulation (``+=``);
* the forward pass the same way: the order recorded by ``record_forward()``,
  or, without a record, the order the graph implies (generation order), and
  the page says which;
* the final leaf gradients, read from ``x.grad`` after the pass.

Where the numbers come from: every value on the page is read from the
engine while it runs, through ``core.observing`` (``on_forward(f, inputs,
outputs)`` and ``on_backward(f, gys, gxs)``).  ``gys`` are the complete
output gradients the engine handed to ``f.backward`` and ``gxs`` what it
returned; the page never recomputes a derivative.  The queue is derived from
the same events: a function waits from the moment one of its outputs first
receives a gradient until the engine pops it.

Limits: at most ``MAX_NODES`` drawn nodes (``collapse=`` and ``max_depth=``
shrink the picture as in ``plot_dot_graph``) and at most ``MAX_STEPS``
functions in the graph (each is one step of the timeline); past either,
``ValueError`` says which and what to pass.  Both are keywords.

In Jupyter the returned ``BackwardView`` displays itself (``_repr_html_``)
as a sandboxed ``<iframe srcdoc>``, so two viewers in one notebook never
share element ids or scripts.
"""
import contextlib
import html
import json
import os
import re
import tempfile
from importlib import resources

import numpy as np

from dezero_kr import cuda
from dezero_kr.core import Variable, observing
from dezero_kr.fileio import atomic_write
from dezero_kr.hooks import Observer
from dezero_kr.graph.dot import (DEFAULT_VALUE_LIMIT, breadth_first_walk, dot_graph, fmt_number,
                                 format_values, plot_dot_graph, require_renderer)

__all__ = ['plot_backward', 'record_forward', 'ForwardRecord', 'BackwardView', 'MAX_NODES',
           'MAX_STEPS']

MAX_NODES = 1000   # drawn Variables + Functions; Graphviz and the browser stay fast below it
MAX_STEPS = 2000   # Functions in the graph: one timeline step each, with gradient summaries

_TEMPLATE = 'backprop_view.html'
_SVG_NODE = re.compile(r'<g id="[^"]*" class="node">(\s*)<title>(\d+)</title>')
_PLACEHOLDER = re.compile(r'__TITLE__|<!--__SVG__-->|/\*__DATA__\*/null')
# A lone surrogate (a name decoded with errors='surrogateescape') cannot be written as
# UTF-8: the page shows its code (\udc80), as the DOT picture does (dot._escape).
_SURROGATES = {i: f'\\u{i:04x}' for i in range(0xD800, 0xE000)}
_JSON_SURROGATES = {i: f'\\\\u{i:04x}' for i in range(0xD800, 0xE000)}  # inside a JSON string
_SVG_EDGE = re.compile(r'<g id="[^"]*" class="edge">(\s*)<title>(\d+)&#45;&gt;(\d+)</title>')


# =============================================================================
# Recording
# =============================================================================
def _summary(v):
    """What the page shows of an array: shape, dtype and values (small) or norm/min/max.

    Taken when the engine reports it: a gradient array may be added into in
    place later, so a summary taken afterwards could show a later value.
    """
    data = v.data if isinstance(v, Variable) else v
    if data is None:
        return {'shape': None, 'dtype': None, 'values': 'None'}
    a = cuda.as_numpy(data)
    out = {'shape': list(a.shape), 'dtype': str(a.dtype)}
    if a.size <= DEFAULT_VALUE_LIMIT:
        out['values'] = format_values(a)
        return out
    wide = a.astype(np.complex128 if a.dtype.kind == 'c' else np.float64).ravel()
    out['norm'] = fmt_number(float(np.linalg.norm(wide)))
    if a.dtype.kind != 'c':
        out['min'] = fmt_number(a.min().item())
        out['max'] = fmt_number(a.max().item())
    return out


class ForwardRecord(Observer):
    """The Function calls seen inside ``record_forward()``, in the order they ran.

    ``calls``: list of ``(f, inputs, outputs, input summaries, output
    summaries)``; values are summarised at call time (parameters updated in
    place later do not change what was recorded).  Calls made under
    ``no_grad()`` build no graph and are not kept.
    """

    def __init__(self):
        self.calls = []

    def __len__(self):
        return len(self.calls)

    def __repr__(self):
        return f'<ForwardRecord: {len(self.calls)} calls>'

    def on_forward(self, f, inputs, outputs):
        """Keep the call ``f(*inputs) -> outputs`` with summaries of its values (the engine calls this)."""
        if not outputs or outputs[0].creator is not f:  # no graph recorded (no_grad)
            return
        self.calls.append((f, tuple(inputs), tuple(outputs), [_summary(x) for x in inputs],
                           [_summary(y) for y in outputs]))

    def on_backward(self, f, gys, gxs):
        """Nothing: a forward record ignores the backward pass."""


@contextlib.contextmanager
def record_forward():
    """Context manager: record the forward pass for ``plot_backward(..., forward=record)``.

    ``with record_forward() as rec: L = f(x)`` then ``plot_backward(L, forward=rec)``
    shows the functions in the order they really ran, with the values they
    had then.
    """
    record = ForwardRecord()
    with observing(record):
        yield record


class _BackwardRecorder(Observer):
    """Observer of one ``backward`` call: the popped functions, gradients and queue.

    Queue model: the engine pushes a function onto its heap when one of its
    outputs first receives a gradient and pops by ``(-generation, push
    order)``.  The recorder keeps the same set (waiting = pushed, not yet
    popped) from the events alone; the engine decides what is popped.
    """

    def __init__(self, root):
        self.steps = []
        self.arrived = {root: 1}       # Variable -> how many gradients reached it in this pass
        self.pushed = {}               # Function -> push order
        self.waiting = []              # Functions pushed and not yet popped
        self.pending = []              # Functions recorded since the last event (create_graph)
        self.last_gxs = ()
        if root.creator is not None:
            self._push(root.creator)

    def _push(self, f):
        if f not in self.pushed:
            self.pushed[f] = len(self.pushed)
            self.waiting.append(f)

    def queue(self):
        """Waiting functions in the order the engine will pop them."""
        return sorted(self.waiting, key=lambda f: (-f.generation, self.pushed[f]))

    def on_forward(self, f, inputs, outputs):
        if outputs and outputs[0].creator is f:
            self.pending.append(f)

    def _take_pending(self):
        """Split functions recorded since the last event: the accumulation adds of the
        previous step's gradients (their inputs include one of them) and the rest."""
        prev = {id(g) for g in self.last_gxs if g is not None}
        acc = [f for f in self.pending if any(id(x) in prev for x in f.inputs)]
        rest = [f for f in self.pending if not any(id(x) in prev for x in f.inputs)]
        self.pending = []
        return acc, rest

    def on_backward(self, f, gys, gxs):
        acc, made = self._take_pending()
        if acc and self.steps:
            self.steps[-1]['created'].extend(acc)
        before = self.queue()
        if f in self.pushed:
            self.waiting.remove(f)
        outputs = [ref() for ref in f.outputs]
        gy_rows = []
        for y, gy in zip(outputs, gys):
            # An output nobody used gets a zero gradient from the engine (not an arrival).
            count = 0 if y is None else self.arrived.get(y, 0)
            gy_rows.append({'var': y, 'grad': _summary(gy), 'unused': count == 0,
                            'count': count})
        gx_rows = []
        for x, gx in zip(f.inputs, gxs):
            if gx is None:
                gx_rows.append({'var': x, 'grad': None, 'kind': 'none', 'count': 0})
                continue
            count = self.arrived[x] = self.arrived.get(x, 0) + 1
            gx_rows.append({'var': x, 'grad': _summary(gx), 'kind': 'acc' if count > 1 else 'first',
                            'count': count})
            if x.creator is not None:
                self._push(x.creator)
        self.last_gxs = gxs
        self.steps.append({'func': f, 'gys': gy_rows, 'gxs': gx_rows, 'before': before,
                           'after': self.queue(), 'created': made})

    def finish(self):
        acc, rest = self._take_pending()
        if self.steps:
            self.steps[-1]['created'].extend(acc + rest)


# =============================================================================
# The page
# =============================================================================
def _check_count(name, value, default):
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f'plot_backward: {name} must be an int >= 1, got {value!r}')
    return value


def _reachable_functions(root):
    return breadth_first_walk([root], None, False).funcs


def _graph_order(funcs):
    """An order the graph implies: by generation, then as far from the output as possible."""
    index = {f: i for i, f in enumerate(funcs)}  # breadth-first from the output
    return sorted(funcs, key=lambda f: (f.generation, -index[f]))


class _PageNames:
    """Stable keys and display labels for the Variables and Functions on the page."""

    def __init__(self, node_ids):
        self.node_ids = node_ids
        self.keys = {}
        self.table = []

    def key(self, obj):
        k = self.keys.get(obj)
        if k is None:
            k = self.keys[obj] = len(self.table)
            node = self.node_ids.get(obj)
            self.table.append({'label': self._label(obj, node),
                               'node': None if node is None else f'dz-n{node}',
                               'kind': 'var' if isinstance(obj, Variable) else 'func'})
        return k

    @staticmethod
    def _label(obj, node):
        tag = '' if node is None else f' #{node}'
        if isinstance(obj, Variable):
            if obj.name is not None:
                return str(obj.name)
            if obj.creator is not None:
                return f'{type(obj.creator).__name__} 출력 (output){tag}'
            return f'잎 (leaf){tag}'
        return f'{type(obj).__name__}{tag}'


def _svg_with_ids(svg):
    """The renderer's SVG, from ``<svg`` on, with ``id="dz-n<N>"`` on node N and
    ``data-edge="A-B"`` on each edge A -> B (N, A, B: DOT node ids)."""
    start = svg.find('<svg')
    if start < 0:
        raise RuntimeError('plot_backward: the renderer returned no <svg> element')
    svg = svg[start:]
    svg = _SVG_NODE.sub(r'<g id="dz-n\2" class="node" data-node="\2">\1<title>\2</title>', svg)
    return _SVG_EDGE.sub(r'<g class="edge" data-edge="\2-\3">\1<title>\2&#45;&gt;\3</title>', svg)


def _render_svg(output, options, node_ids, renderer, timeout):
    """Draw the graph with ``plot_dot_graph`` (same DOT text, same renderer discovery) and
    check that every node the trace refers to can be found in the SVG."""
    with tempfile.TemporaryDirectory(prefix='dezero_kr_view_') as tmp:
        path = plot_dot_graph(output, to_file=os.path.join(tmp, 'graph.svg'), renderer=renderer,
                              timeout=timeout, keep_dot=False, **options)
        with open(path, encoding='utf-8') as f:
            svg = _svg_with_ids(f.read())
    found = set(re.findall(r'<g id="dz-n(\d+)"', svg))
    missing = sorted({n for n in node_ids.values() if str(n) not in found})
    if missing:
        raise RuntimeError(f'plot_backward: the SVG the renderer drew has no element for DOT '
                           f'node(s) {missing[:10]} (expected <g class="node"><title>N</title> as '
                           f'Graphviz writes); the page could not highlight them. Try system '
                           f'Graphviz (`apt-get install graphviz`) or graphviz-pure')
    return svg


def _json_for_script(data):
    """JSON safe inside ``<script>``: no ``</script>``, no ``<!--`` can end it early."""
    text = json.dumps(data, ensure_ascii=False, separators=(',', ':')).translate(_JSON_SURROGATES)
    return text.replace('<', '\\u003c').replace('>', '\\u003e').replace('&', '\\u0026')


def _template():
    return resources.files('dezero_kr').joinpath('data', _TEMPLATE).read_text(encoding='utf-8')


def _check_path(path):
    path = os.path.abspath(os.fspath(path))
    if os.path.splitext(path)[1].lower() not in ('.html', '.htm'):
        raise ValueError(f'plot_backward: to_file must end in .html or .htm, got {path!r}')
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        raise FileNotFoundError(f'plot_backward: folder {folder!r} of to_file does not exist')
    return path


class BackwardView:
    """The page ``plot_backward`` built.

    ``html``: the self-contained page (str).  ``path``: where it was saved
    (None unless ``to_file``/``save``).  ``data``: the JSON-able trace the
    page displays (``backward``, ``forward``, ``final``, ``names``).
    ``node_id(obj)``: the SVG element id of a drawn Variable/Function (None
    when it is not drawn).  Displays inline in Jupyter.
    """

    def __init__(self, html_text, data, node_ids):
        self.html = html_text
        self.data = data
        self.path = None
        self._node_ids = node_ids

    def node_id(self, obj):
        """The SVG element id (``'dz-n<DOT id>'``) of a drawn Variable/Function, or None when not drawn."""
        n = self._node_ids.get(obj)
        return None if n is None else f'dz-n{n}'

    def save(self, path):
        """Write the page to ``path`` (``.html``/``.htm``) atomically; return its absolute path."""
        path = _check_path(path)
        with atomic_write(path, 'wb') as f:
            f.write(self.html.encode('utf-8'))
        self.path = path
        return path

    def _repr_html_(self):
        # An iframe keeps this page's ids, styles and script apart from the notebook's
        # and from other viewers; no allow-same-origin, so it cannot touch the notebook.
        height = self.data['height']
        return (f'<iframe class="dezero-kr-backprop-view" sandbox="allow-scripts" '
                f'style="width:100%;height:{height}px;border:1px solid #ccc" '
                f'srcdoc="{html.escape(self.html, quote=True)}"></iframe>')

    def __repr__(self):
        where = f' saved to {self.path}' if self.path else ''
        return (f'<BackwardView: {len(self.data["backward"])} backward steps, '
                f'{len(self.data["forward"])} forward steps{where}>')


def plot_backward(output, to_file=None, *, forward=None, retain_grad=False, create_graph=False,
                  verbose=True, max_depth=None, collapse=False, max_nodes=None, max_steps=None,
                  renderer=None, timeout=60.0, title=None):
    """Run ``output.backward()`` while recording it; return a ``BackwardView`` (and save it).

    ``output``: a non-leaf Variable.  Its backward pass runs exactly as
    ``output.backward(retain_grad, create_graph)`` would (leaf ``.grad``
    accumulates; call ``cleargrad()`` first for fresh gradients).
    ``to_file``: an ``.html`` path to write the page to (atomically).
    ``forward``: a ``ForwardRecord`` from ``record_forward()``; without it the
    forward tab shows the graph's own order (by generation) and says so.
    ``create_graph=True``: the gradients' own graphs are drawn too (dashed
    ``grad`` edges) and each step lists the functions it recorded.
    ``verbose``, ``max_depth``, ``collapse``: as in ``plot_dot_graph``.
    ``max_nodes`` (default ``MAX_NODES`` = 1000 drawn nodes) and
    ``max_steps`` (default ``MAX_STEPS`` = 2000 functions): past either a
    ``ValueError`` is raised before anything runs.  ``renderer``,
    ``timeout``: as in ``plot_dot_graph``.

    Raises TypeError (``output`` not a Variable, ``forward`` not a
    ForwardRecord), ValueError (a leaf or data-less ``output``, limits),
    ``dot.RendererNotFoundError`` (also ``graph.RendererNotFoundError``) when no Graphviz renderer is found.
    """
    _check_arguments(output, forward, to_file)
    max_nodes = _check_count('max_nodes', max_nodes, MAX_NODES)
    max_steps = _check_count('max_steps', max_steps, MAX_STEPS)
    funcs = _reachable_functions(output)
    if len(funcs) > max_steps:
        raise ValueError(f'plot_backward: the graph of {output!r} has {len(funcs)} functions, more '
                         f'than max_steps={max_steps} (one timeline step each); view a smaller '
                         f'part of the model, or pass a larger max_steps=')
    options = {'verbose': verbose, 'max_depth': max_depth, 'collapse': collapse}
    _, node_ids = dot_graph(output, **options)
    n_nodes = len(set(node_ids.values()))
    if n_nodes > max_nodes:
        raise ValueError(f'plot_backward: the picture of {output!r} would have {n_nodes} nodes, '
                         f'more than max_nodes={max_nodes}; pass collapse=True or max_depth=N '
                         f'(as in plot_dot_graph), or a larger max_nodes=')
    leaves = [x for f in funcs for x in f.inputs if x.creator is None]
    had_grad = {x for x in leaves if x.grad is not None}
    seed = _summary(output.grad if output.grad is not None else np.ones_like(output.data))
    require_renderer(renderer, 'plot_backward')  # no renderer: fail before backward touches a gradient
    snapshot = _grad_snapshot(output, funcs)
    try:
        return _run_and_draw(output, to_file, forward, retain_grad, create_graph, options, funcs, leaves,
                             had_grad, seed, max_nodes, renderer, timeout, title)
    except BaseException:
        _restore_grads(snapshot)  # a retry must not add the gradients a second time
        raise


def _grad_snapshot(output, funcs):
    """``(variable, grad, copy of grad.data)`` for every Variable of the graph.

    ``backward`` may add into a gradient's array in place, so the values are
    copied, not only the ``grad`` objects.
    """
    variables = {id(output): output}
    for f in funcs:
        for x in f.inputs:
            variables[id(x)] = x
        for ref in f.outputs:
            y = ref()
            if y is not None:
                variables[id(y)] = y
    return [(v, v.grad, None if v.grad is None else v.grad.data.copy()) for v in variables.values()]


def _restore_grads(snapshot):
    """Put back every ``.grad`` (object and values) that ``_grad_snapshot`` saw."""
    for v, grad, data in snapshot:
        if grad is not None:
            grad.data = data
        v.grad = grad


def _run_and_draw(output, to_file, forward, retain_grad, create_graph, options, funcs, leaves, had_grad,
                  seed, max_nodes, renderer, timeout, title):
    """The backward pass with the recorder on, then the picture and the page (``plot_backward``)."""
    recorder = _BackwardRecorder(output)
    with observing(recorder):
        output.backward(retain_grad=retain_grad, create_graph=create_graph)
    recorder.finish()

    if create_graph:  # draw the gradients' graphs too, when they fit
        _, grad_ids = dot_graph(output, follow_grads=True, **options)
        if len(set(grad_ids.values())) <= max_nodes:
            options['follow_grads'] = True
    _, node_ids = dot_graph(output, **options)  # the ids of the picture drawn now
    svg = _render_svg(output, options, node_ids, renderer, timeout)
    data = _page_data(output, recorder, forward, funcs, leaves, had_grad, seed, node_ids,
                      create_graph and options.get('follow_grads', False))
    data['title'] = (str(title) if title is not None else _default_title(output)).translate(_SURROGATES)
    data['height'] = 640
    fill = {'__TITLE__': html.escape(data['title']), '<!--__SVG__-->': svg,
            '/*__DATA__*/null': _json_for_script(data)}
    # One pass, so text inside a filled-in part is never taken for a placeholder.
    page = _PLACEHOLDER.sub(lambda m: fill[m.group(0)], _template())
    view = BackwardView(page, data, node_ids)
    if to_file is not None:
        view.save(to_file)
    return view


def _check_arguments(output, forward, to_file):
    """``TypeError``/``ValueError`` for an ``output`` that is not a non-leaf Variable with data,
    a ``forward`` that is not a ``ForwardRecord``, or a ``to_file`` that is not an HTML path."""
    if not isinstance(output, Variable):
        kind = type(output)
        raise TypeError(f'plot_backward: output must be a Variable, got '
                        f'{kind.__module__}.{kind.__qualname__}')
    if output.data is None:
        raise ValueError(f'plot_backward: {output!r} has no data')
    if output.creator is None:
        raise ValueError(f'plot_backward: {output!r} is a leaf (no creator): there is no '
                         f'backward pass to show; pass the result of a computation')
    if forward is not None and not isinstance(forward, ForwardRecord):
        kind = type(forward)
        raise TypeError(f'plot_backward: forward must be a ForwardRecord from record_forward(), '
                        f'got {kind.__module__}.{kind.__qualname__}')
    if to_file is not None:
        _check_path(to_file)


def _default_title(output):
    name = output.name if output.name is not None else 'output'
    return f'{name}.backward()'


def _page_data(output, recorder, forward, funcs, leaves, had_grad, seed, node_ids, grads_drawn):
    names = _PageNames(node_ids)
    key = names.key

    def queue(fs):
        return [{'func': key(f), 'generation': f.generation} for f in fs]

    def created(fs):
        return [key(f) for f in dict.fromkeys(fs) if f in node_ids]

    def var_rows(rows, extra):
        return [dict({'var': key(r['var']) if r['var'] is not None else None,
                      'grad': r['grad']}, **{k: r[k] for k in extra}) for r in rows]

    backward = [{'func': key(s['func']), 'generation': s['func'].generation,
                 'inputs': [key(x) for x in s['func'].inputs],
                 'gys': var_rows(s['gys'], ('unused', 'count')),
                 'gxs': var_rows(s['gxs'], ('kind', 'count')),
                 'before': queue(s['before']), 'after': queue(s['after']),
                 'created': created(s['created'])} for s in recorder.steps]

    in_graph = set(funcs)
    if forward is not None:
        calls = [c for c in forward.calls if c[0] in in_graph]
        if not calls:
            raise ValueError(f'plot_backward: the forward record ({len(forward)} calls) holds none '
                             f'of the functions of {output!r}; compute output inside '
                             f'record_forward()')
        forward_source = 'recorded'
    else:
        calls = [(f, f.inputs, [ref() for ref in f.outputs], None, None)
                 for f in _graph_order(funcs)]
        forward_source = 'graph'
    forward_steps = []
    for f, inputs, outputs, in_sum, out_sum in calls:
        in_sum = in_sum or [_summary(x) for x in inputs]
        out_sum = out_sum or [None if y is None else _summary(y) for y in outputs]
        forward_steps.append({
            'func': key(f), 'generation': f.generation,
            'inputs': [{'var': key(x), 'value': s} for x, s in zip(inputs, in_sum)],
            'outputs': [{'var': None if y is None else key(y), 'value': s}
                        for y, s in zip(outputs, out_sum)]})

    final = []
    for x in dict.fromkeys(leaves):
        if x in recorder.arrived and x.grad is not None:
            final.append({'var': key(x), 'grad': _summary(x.grad), 'had_grad': x in had_grad})
    return {'backward': backward, 'forward': forward_steps, 'forward_source': forward_source,
            'final': final, 'seed': {'var': key(output), 'grad': seed},
            'root': key(output.creator), 'grads_drawn': bool(grads_drawn),
            'names': names.table}
