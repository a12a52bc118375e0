"""Graph export: the recorded computation graph as DOT text, SVG, PNG, ...

The drawing helpers ``dezero_kr.graph`` (the public module, DeZero's two
functions) and ``dezero_kr.graph.backprop_view`` (the backward-pass viewer) both
use: the DOT text, the graph walk, value formatting and the renderer.  Both
import this module and neither imports the other's helpers, so there is no
import cycle; users import from ``dezero_kr.graph`` (or ``dezero_kr.utils``).
``walk_graph`` (the walk) and ``dot_node`` (a node line in this look) are for
the package's other writers of the graph (``dezero_kr.onnx``).

DeZero's two functions, with the same signatures and the same look:

* ``get_dot_graph(output, verbose=True) -> str``: Graphviz DOT text.  A
  Variable is an orange ellipse labelled ``name: shape dtype`` (``verbose``),
  a Function a light-blue box labelled with its class name, and the edges run
  input -> function -> output.
* ``plot_dot_graph(output, verbose=True, to_file='graph.png')``: the same
  text drawn by a Graphviz renderer into ``to_file`` (format from the
  extension: png, svg, jpg, pdf where the renderer can, dot).

What is different from DeZero:

1. Every Variable and Function is one node, however often it is used (an
   input used twice gets two edges, not two nodes), and node ids are
   ``1, 2, 3, ...`` in the order of a breadth-first walk from the output, so
   the same graph always gives byte-identical text.
2. Labels are escaped (quotes, backslashes, control characters); any Unicode
   name (Korean) is kept as it is.
3. ``plot_dot_graph`` writes only into the folder of ``to_file``: the DOT
   text goes next to it (``graph.png`` -> ``graph.dot``), the picture is
   written atomically, and a missing or failing renderer raises an error that
   says what to install, with the renderer's own message.
4. Keyword options (all off by default, so the text stays DeZero's):
   ``param_names`` (label parameters ``l0/W``), ``show_values`` (values of
   small tensors and scalar hyper-parameters of functions), ``show_grads``
   (gradient shape and norm, or values), ``mark_nonfinite`` (red outline on
   Variables holding NaN/inf and on the function that produced the first
   one), ``follow_grads`` (also draw the graphs behind ``.grad``, the
   higher-order graphs of ``backward(create_graph=True)``), ``max_depth``
   (cut with a ``...`` node) and ``collapse`` (a run of identical functions
   becomes one ``Sin x1000`` box).  Constants (``requires_grad`` False,
   e.g. a raw data batch) are grey; ``mark_constants=False`` makes them
   orange like any Variable.

Walking the graph is one iterative loop (no recursion), linear in its size:
100,000 nodes take well under a second.

Which program draws the picture (``find_renderer``): ``$DEZERO_KR_DOT`` if
set (a command name or a path to ``dot`` or ``graphviz-pure``), else the
system Graphviz ``dot``, else ``graphviz-pure``, a Rust port of Graphviz that
``pip install dezero_kr`` brings along.  The renderer is run directly (no
shell, no Python ``graphviz`` package) with a timeout.
"""
import collections
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import warnings

import numpy as np

from dezero_kr import cuda
from dezero_kr.core import Function, Variable, array_types
from dezero_kr.fileio import atomic_write

__all__ = ['get_dot_graph', 'plot_dot_graph', 'render_dot', 'find_renderer', 'find_graphviz_pure',
           'RenderedGraph', 'GraphRenderError', 'RendererNotFoundError', 'RENDERER_ENV']

RENDERER_ENV = 'DEZERO_KR_DOT'
DEFAULT_VALUE_LIMIT = 10      # show_values=True: tensors of at most this many elements

_VAR_STYLE = 'color=orange, style=filled'
_CONST_STYLE = 'color=lightgray, style=filled'
_FUNC_STYLE = 'color=lightblue, style=filled, shape=box'
_BAD_VAR_STYLE = 'color=red, fillcolor=orange, style=filled, penwidth=3'
_BAD_FUNC_STYLE = 'color=red, fillcolor=lightblue, style=filled, shape=box, penwidth=3'
_CUT_STYLE = 'label="...", shape=plaintext'
_CUT_EDGE = ' [style=dashed]'
_GRAD_EDGE = ' [style=dashed, label="grad", constraint=false]'
_TEXT_FORMATS = ('dot', 'gv')
# Formats graphviz-pure 0.2 writes (``graphviz-pure -Tx`` lists them); it has no pdf.
_PURE_FORMATS = frozenset(['canon', 'dot', 'dot_json', 'gv', 'jpe', 'jpeg', 'jpg', 'json',
                           'json0', 'plain', 'plain-ext', 'png', 'svg', 'xdot', 'xdot1.2',
                           'xdot1.4', 'xdot_json'])
_RASTER_FORMATS = frozenset(['png', 'jpg', 'jpeg', 'jpe', 'gif', 'bmp', 'tif', 'tiff'])
_RENDERER_HINT = ('install a renderer: `pip install graphviz-pure` (no system package needed; '
                 'Linux/macOS/Windows on x86_64 or arm64), or Graphviz itself '
                 '(`apt-get install graphviz`, `brew install graphviz`, `conda install graphviz`), '
                 f'or point ${RENDERER_ENV} at a `dot` or `graphviz-pure` executable')


class GraphRenderError(RuntimeError):
    """The renderer failed, timed out or cannot write the requested format."""


class RendererNotFoundError(GraphRenderError):
    """No Graphviz renderer (``dot`` or ``graphviz-pure``) could be found."""


# =============================================================================
# DOT text
# =============================================================================
def get_dot_graph(output, verbose=True, *, param_names=None, show_values=False,
                  show_grads=False, mark_nonfinite=False, mark_constants=True,
                  follow_grads=False, max_depth=None, collapse=False):
    """Return the graph that produced ``output`` as Graphviz DOT text.

    ``output``: a Variable (or a list of them).  ``verbose``: add
    ``: shape dtype`` to Variable labels.  ``param_names``: ``{Variable:
    str}`` or an object with ``named_params()`` yielding ``(path, Parameter)``
    (a Layer/Model) to label parameters by path.  ``show_values``: True
    (tensors of at most 10 elements) or an element limit.  ``show_grads``:
    gradient ``shape norm=...`` (or values under ``show_values``).
    ``mark_nonfinite``: red outline on NaN/inf.  ``mark_constants``: grey
    Constants.  ``follow_grads``: also walk ``.grad`` links (dashed edges).
    ``max_depth``: expand at most this many functions (and grad links) from
    the output.  ``collapse``: True (runs of 3 or more) or a minimum run
    length for merging chains of same-class functions.
    """
    return dot_graph(output, verbose, param_names, show_values, show_grads, mark_nonfinite,
                      mark_constants, follow_grads, max_depth, collapse)[0]


def dot_graph(output, verbose, param_names=None, show_values=False, show_grads=False,
               mark_nonfinite=False, mark_constants=True, follow_grads=False, max_depth=None,
               collapse=False):
    """``(text, node_ids)``: ``get_dot_graph``'s text and ``{Variable or Function: DOT node
    id}`` for what it drew (every function of a collapsed run maps to the run's box).  The
    backward viewer uses the ids to find the drawn nodes in the SVG."""
    roots = _as_roots(output)
    limit = _count_option('show_values', show_values, DEFAULT_VALUE_LIMIT, -1, 0)
    if max_depth is not None and (not isinstance(max_depth, int) or max_depth < 0):
        raise ValueError(f'get_dot_graph: max_depth must be None or an int >= 0, got {max_depth!r}')
    min_run = _count_option('collapse', collapse, 3, 0, 2)
    walk = breadth_first_walk(roots, max_depth, follow_grads)
    labels = _param_labels(param_names)
    for v, g in walk.grad_links:  # an unnamed gradient of x is labelled x.grad
        name = labels.get(v, v.name)
        if g.name is None and g not in labels and name is not None:
            labels[g] = f'{name}.grad'
    writer = _DotWriter(verbose, labels, limit, show_grads, mark_nonfinite, mark_constants)
    runs = _find_runs(walk, roots, labels, writer, follow_grads, min_run) if min_run else {}
    text = writer.write(walk, roots, runs)
    node_ids = {k: n for k, n in writer.ids.items() if not isinstance(k, tuple)}
    for f, (run, _) in runs.items():
        node_ids[f] = writer.ids[run[-1]]
    return text, node_ids


def _as_roots(output):
    items = list(output) if isinstance(output, (list, tuple)) else [output]
    roots = {}
    for v in items:
        if not isinstance(v, Variable):
            kind = type(v)
            raise TypeError(f'get_dot_graph: output must be a Variable or a list of Variables, '
                            f'got {kind.__module__}.{kind.__qualname__}')
        roots[v] = None  # dict: drops repeats, keeps order
    if not roots:
        raise ValueError('get_dot_graph: no output Variable given')
    return list(roots)


def _count_option(name, value, if_true, off, minimum):
    """A bool-or-count keyword: True -> if_true, False/None -> off, an int >= minimum -> itself."""
    if value is True:
        return if_true
    if value is False or value is None:
        return off
    if isinstance(value, int) and value >= minimum:
        return value
    raise ValueError(f'get_dot_graph: {name} must be a bool or an int >= {minimum}, got {value!r}')


def _param_labels(param_names):
    """``{Variable: label}`` from a dict or from ``obj.named_params()``."""
    if param_names is None:
        return {}
    if isinstance(param_names, dict):
        pairs = param_names.items()
    elif callable(getattr(param_names, 'named_params', None)):
        pairs = ((p, path) for path, p in param_names.named_params())
    else:
        kind = type(param_names)
        raise TypeError(f'get_dot_graph: param_names must be a dict {{Variable: str}} or an object '
                        f'with named_params() (a Layer), got {kind.__module__}.{kind.__qualname__}')
    labels = {}
    for v, name in pairs:
        if not isinstance(v, Variable):
            raise TypeError(f'get_dot_graph: param_names maps {type(v).__name__} {v!r} to '
                            f'{name!r}; its keys must be Variables')
        labels[v] = str(name)
    return labels


class _Walk:
    """What a breadth-first walk from the outputs found."""
    __slots__ = ('funcs', 'func_set', 'uses', 'consumer', 'cut', 'grad_links')

    def __init__(self):
        self.funcs = []        # Functions in walk order (nearest the output first)
        self.func_set = set()
        self.uses = {}         # Variable -> how many inputs of walked functions it fills
        self.consumer = {}     # Variable -> a walked function that reads it
        self.cut = []          # Variables whose creator max_depth left out
        self.grad_links = []   # (Variable, its .grad) when follow_grads


def breadth_first_walk(roots, max_depth, follow_grads):
    """The walk from ``roots`` to ``max_depth`` (None: all); ``follow_grads``: ``.grad`` links too."""
    walk = _Walk()
    seen = set(roots)
    queue = collections.deque((v, 0) for v in roots)
    funcs, func_set, uses, consumer = walk.funcs, walk.func_set, walk.uses, walk.consumer
    while queue:
        v, depth = queue.popleft()
        f = v.creator
        if f is not None and f not in func_set:
            if max_depth is not None and depth >= max_depth:
                walk.cut.append(v)
            else:
                func_set.add(f)
                funcs.append(f)
                for x in f.inputs:
                    uses[x] = uses.get(x, 0) + 1
                    consumer[x] = f
                    if x not in seen:
                        seen.add(x)
                        queue.append((x, depth + 1))
                for ref in f.outputs:  # outputs the caller did not ask about still get a node
                    y = ref()
                    if y is not None and y not in seen:
                        seen.add(y)
                        queue.append((y, depth))
        if follow_grads and v.grad is not None:
            g = v.grad
            walk.grad_links.append((v, g))
            if g not in seen:
                seen.add(g)
                queue.append((g, depth + 1))
    return walk


def walk_graph(outputs):
    """The breadth-first walk from ``outputs`` (a list of Variables) that ``get_dot_graph``
    draws: ``.funcs`` (each Function once, nearest the outputs first) and ``.consumer``
    (Variable -> a walked Function that reads it).  For the package's other writers of the
    recorded graph (``dezero_kr.onnx``)."""
    return breadth_first_walk(list(outputs), None, False)


def _live_outputs(f):
    return [y for y in (ref() for ref in f.outputs) if y is not None]


def _find_runs(walk, roots, labels, writer, follow_grads, min_run):
    """Map each function of a collapsible run to ``(run, external inputs)``.

    A run is a chain f1 -> f2 -> ... -> fk of one Function class where each
    link is a Variable that f_i alone produces and f_{i+1} alone reads, and
    that nothing else makes worth showing (no name, not an output, not a
    parameter, no followed grad, no NaN/inf mark).
    """
    nxt = _run_links(walk, roots, labels, writer, follow_grads)
    has_prev = set(nxt.values())
    runs = {}
    for f in walk.funcs:
        if f in nxt and f not in has_prev:  # the first function of a chain
            run = [f]
            while run[-1] in nxt:
                run.append(nxt[run[-1]])
            if len(run) >= min_run:
                entry = (run, _external_inputs(run))
                for r in run:
                    runs[r] = entry
    return runs


def _run_links(walk, roots, labels, writer, follow_grads):
    """``{f: g}`` for each link of a run: f's one output is read by g alone, of f's class."""
    keep = set(roots)
    keep.update(g for _, g in walk.grad_links)
    nxt = {}
    prevs = collections.defaultdict(list)
    for f in walk.funcs:
        if len(f.outputs) != 1:
            continue
        y = f.outputs[0]()
        if (y is None or y in keep or y.name is not None or y in labels
                or walk.uses.get(y) != 1 or (follow_grads and y.grad is not None)):
            continue
        g = walk.consumer[y]
        if type(g) is not type(f) or writer.nonfinite(y):
            continue
        nxt[f] = g
        prevs[g].append(f)
    return {f: g for f, g in nxt.items() if len(prevs[g]) == 1}  # keep chains linear


def _external_inputs(run):
    """The inputs of ``run``'s functions that no member of the run produced, in first-use order."""
    inner = {r.outputs[0]() for r in run[:-1]}
    external = {}
    for r in run:
        for x in r.inputs:
            if x not in inner:
                external[x] = None
    return list(external)


class _DotWriter:
    """Turns a walk into DOT lines; node ids are handed out in emission order."""

    def __init__(self, verbose, labels, limit, show_grads, mark_nonfinite, mark_constants):
        self.verbose, self.labels, self.limit = verbose, labels, limit
        self.show_grads, self.mark_nonfinite, self.mark_constants = show_grads, mark_nonfinite, mark_constants
        self.plain = limit < 0 and not show_grads and not mark_nonfinite
        self._bad = {}
        self._shape_dtype = {}

    def write(self, walk, roots, runs):
        """The DOT text: the roots, then each walked function with its inputs and outputs,
        the ``...`` nodes where ``max_depth`` cut, and the dashed grad links."""
        self.ids = {}
        self._lines = ['digraph g {']
        for v in roots:
            self._node(v)
        for f in walk.funcs:
            self._write_function(f, runs.get(f))
        for v in walk.cut:
            if v.creator not in walk.func_set:
                self._write_cut(v)
        for v, g in walk.grad_links:
            self._lines.append(f'{self.ids[v]} -> {self._node(g)}{_GRAD_EDGE}')
        self._lines += ['}', '']
        return '\n'.join(self._lines)

    def _node(self, v):
        """The id of Variable ``v``, writing its node the first time it is seen."""
        n = self.ids.get(v)
        if n is None:
            n = self.ids[v] = len(self.ids) + 1
            self._lines.append(f'{n} [{self.var_attrs(v)}]')
        return n

    def _write_function(self, f, run):
        """Function ``f``'s box and edges; a collapsed ``run`` is drawn once, at its last member."""
        if run is None:
            inputs, label = f.inputs, self.func_label(f)
        elif f is run[0][-1]:  # the run's member nearest the output stands for it
            inputs, label = run[1], f'{type(f).__name__} x{len(run[0])}'
        else:
            return
        ids, out = self.ids, self._lines.append
        n = ids[f] = len(ids) + 1
        out(f'{n} [label="{_escape(label)}", {self.func_style(f)}]')
        for x in inputs:
            self._node(x)
        for x in inputs:
            out(f'{ids[x]} -> {n}')
        for y in _live_outputs(f):
            out(f'{n} -> {self._node(y)}')

    def _write_cut(self, v):
        """A ``...`` node standing for the creator of ``v`` that ``max_depth`` left out."""
        n = len(self.ids) + 1
        self.ids[('cut', v)] = n
        self._lines.append(f'{n} [{_CUT_STYLE}]')
        self._lines.append(f'{n} -> {self._node(v)}{_CUT_EDGE}')

    # --- Variable nodes ------------------------------------------------------
    def var_attrs(self, v):
        name = self.labels.get(v, v.name) if self.labels else v.name
        data = v.data
        if self.verbose and data is not None:
            text = self.shape_dtype(data)
            if name is not None:
                text = f'{name}: {text}'
        else:
            text = '' if name is None else str(name)
        style = _CONST_STYLE if self.mark_constants and not v.requires_grad else _VAR_STYLE
        if self.plain:
            return f'label="{_escape(text)}", {style}'
        lines = [text] if text else []
        if self.limit >= 0 and data is not None and data.size <= self.limit:
            lines.extend(format_values(data).split('\n'))
        if self.show_grads and v.grad is not None and v.grad.data is not None:
            lines.append(self.grad_text(v.grad.data))
        bad = self.nonfinite(v) if self.mark_nonfinite else None
        if bad:
            lines.append(f'!! {bad}')
            style = _BAD_VAR_STYLE
        return f'label="{_escape(chr(10).join(lines))}", {style}'

    def shape_dtype(self, data):
        # str(dtype) is slow Python code in NumPy; a graph has few distinct (shape, dtype).
        key = (data.shape, data.dtype)
        text = self._shape_dtype.get(key)
        if text is None:
            text = self._shape_dtype[key] = f'{data.shape} {data.dtype}'
        return text

    def grad_text(self, g):
        if self.limit >= 0 and g.size <= self.limit:
            return 'grad: ' + format_values(g).replace('\n', ' ')
        xp = cuda.get_array_module(g)
        norm = float(xp.linalg.norm(g.ravel().astype(np.float64 if g.dtype.kind != 'c'
                                                      else np.complex128)))
        return f'grad: {g.shape} norm={fmt_number(norm)}'

    def nonfinite(self, v):
        """'nan in data', 'inf in grad', ... or '' when v holds only finite numbers."""
        data_kinds, grad_kinds = self._kinds(v)
        return ', '.join([f'{k} in data' for k in data_kinds]
                         + [f'{k} in grad' for k in grad_kinds])

    def _kinds(self, v):
        # Cached: a Variable is checked once even when several nodes ask about it.
        kinds = self._bad.get(v)
        if kinds is None:
            grad = None if v.grad is None else v.grad.data
            kinds = self._bad[v] = (_nonfinite_kinds(v.data), _nonfinite_kinds(grad))
        return kinds

    # --- Function nodes ------------------------------------------------------
    def func_label(self, f):
        name = type(f).__name__
        if self.limit < 0:
            return name
        attrs = [f'{k}={s}' for k, s in _func_attrs(f, self.limit)]
        return '\n'.join([name] + attrs)

    def func_style(self, f):
        """Red outline on a function whose output has NaN/inf though its inputs have none."""
        if self.mark_nonfinite:
            if (any(self._kinds(y)[0] for y in _live_outputs(f))
                    and not any(self._kinds(x)[0] for x in f.inputs)):
                return _BAD_FUNC_STYLE
        return _FUNC_STYLE


def _nonfinite_kinds(arr):
    if arr is None or arr.dtype.kind not in 'fc':
        return ()
    xp = cuda.get_array_module(arr)
    if bool(xp.isfinite(arr).all()):
        return ()
    kinds = []
    if bool(xp.isnan(arr).any()):
        kinds.append('nan')
    if bool(xp.isinf(arr).any()):
        kinds.append('inf')
    return kinds


def fmt_number(v):
    """One value as the pictures print it: a bool or integer as itself, else 4 significant digits."""
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    return format(v, '.4g')


def format_values(arr):
    """Compact text of a small array: '6', '[1, 2.5]', '[[1, 2],\\n [3, 4]]'."""
    a = cuda.as_numpy(arr)
    if a.ndim == 0:
        return fmt_number(a.item())
    if a.ndim == 1 and a.dtype.kind in 'biuf':  # the common case, without array2string's cost
        return '[' + ', '.join([fmt_number(e) for e in a.tolist()]) + ']'
    return np.array2string(a, separator=', ', threshold=a.size + 1, max_line_width=60,
                           formatter={'float_kind': fmt_number, 'complex_kind': fmt_number})


_FUNCTION_SLOTS = frozenset(Function.__slots__) | {'__weakref__', '__dict__'}


def _func_attrs(f, limit):
    """``(name, text)`` of a Function's simple hyper-parameters (slots or __dict__)."""
    names = []
    for cls in reversed(type(f).__mro__):
        slots = cls.__dict__.get('__slots__', ())
        names.extend([slots] if isinstance(slots, str) else slots)
    names.extend(getattr(f, '__dict__', {}))
    shown = []
    for name in dict.fromkeys(names):
        if name in _FUNCTION_SLOTS or name.startswith('_'):
            continue
        text = _short_value(getattr(f, name, None), limit)
        if text is not None:
            shown.append((name, text))
    return shown


def _short_value(value, limit):
    if value is None or isinstance(value, (bool, int, float, complex, str, np.generic)):
        text = value if isinstance(value, str) else fmt_number(value) if value is not None \
            else 'None'
    elif isinstance(value, tuple) and all(isinstance(e, (int, np.integer)) for e in value):
        text = str(tuple(int(e) for e in value))
    elif isinstance(value, array_types) and value.size <= limit:
        text = format_values(value).replace('\n', ' ')
    else:
        return None
    return text if len(text) <= 40 else text[:37] + '...'


# Newlines become DOT line breaks; other control characters show their code (\x07).
_ESCAPES = {i: f'\\\\x{i:02x}' for i in [*range(32), 127]}
_ESCAPES.update({ord('\\'): '\\\\', ord('"'): '\\"', ord('\n'): '\\n'})
# A lone surrogate (e.g. a name decoded with errors='surrogateescape') cannot be
# written as UTF-8: it shows its code (\udc80) instead of breaking the file.
_ESCAPES.update({i: f'\\\\u{i:04x}' for i in range(0xD800, 0xE000)})


def _escape(text):
    """Body of a DOT double-quoted string: the text shows exactly as given."""
    if text.isascii() and text.isprintable() and '"' not in text and '\\' not in text:
        return text
    return text.translate(_ESCAPES)


_NODE_STYLES = {'var': _VAR_STYLE, 'const': _CONST_STYLE, 'func': _FUNC_STYLE}


def dot_node(node_id, label, kind):
    """One DOT node line in the look of ``get_dot_graph``: ``node_id [label="...", style]``,
    ``label`` escaped as every label here is, ``kind`` 'var' (an orange ellipse), 'const'
    (grey) or 'func' (a light-blue box); ValueError for another kind.  For the package's
    other drawings (``dezero_kr.onnx.to_dot``)."""
    style = _NODE_STYLES.get(kind)
    if style is None:
        raise ValueError(f"dot_node: kind must be 'var', 'const' or 'func', got {kind!r}")
    return f'{node_id} [label="{_escape(label)}", {style}]'


# =============================================================================
# Rendering
# =============================================================================
def find_renderer():
    """Path of the program that will draw graphs, or None when there is none.

    Order: ``$DEZERO_KR_DOT`` (a name on PATH or a path; when set but not
    executable this raises ``RendererNotFoundError``), ``dot`` on PATH,
    ``graphviz-pure`` on PATH or next to this Python's scripts.
    """
    override = os.environ.get(RENDERER_ENV)
    if override:
        found = shutil.which(override)
        if found is None:
            raise RendererNotFoundError(
                f'${RENDERER_ENV}={override!r} is not an executable file (nor a command on '
                f'PATH); unset it to use `dot` or `graphviz-pure`, or {_RENDERER_HINT}')
        return found
    return shutil.which('dot') or find_graphviz_pure()


def find_graphviz_pure():
    """Path of ``graphviz-pure`` on PATH or in this Python's scripts folder, or None."""
    found = shutil.which('graphviz-pure')
    if found is not None:
        return found
    # A venv's scripts folder may be off PATH (a notebook kernel started by path).
    folders = [sysconfig.get_path('scripts'), os.path.dirname(sys.executable)]
    for folder in dict.fromkeys(f for f in folders if f):
        found = shutil.which('graphviz-pure', path=folder)
        if found is not None:
            return found
    return None


def _is_graphviz_pure(exe):
    return os.path.basename(exe).lower().startswith('graphviz-pure')


class RenderedGraph(str):
    """The absolute path of a picture ``plot_dot_graph`` wrote.

    It is a ``str``; Jupyter/IPython also display it as the picture (png,
    jpg, svg), which replaces DeZero's ``IPython.display.Image`` return.
    """
    __slots__ = ()

    @property
    def format(self):
        """The file's extension in lower case without the dot (``'png'``); shadows ``str.format``."""
        return os.path.splitext(self)[1][1:].lower()

    def _read(self, formats, mode='rb'):
        if self.format not in formats or not os.path.isfile(self):
            return None
        with open(self, mode, **({} if 'b' in mode else {'encoding': 'utf-8'})) as f:
            return f.read()

    def _repr_png_(self):
        return self._read(('png',))

    def _repr_jpeg_(self):
        return self._read(('jpg', 'jpeg', 'jpe'))

    def _repr_svg_(self):
        return self._read(('svg',), 'r')


def plot_dot_graph(output, verbose=True, to_file='graph.png', *, renderer=None, timeout=60.0,
                   keep_dot=True, **options):
    """Draw the graph of ``output`` into ``to_file``; return its path (a ``RenderedGraph``).

    The format comes from the extension (``.png``, ``.svg``, ``.jpg``, ``.pdf``
    with system Graphviz, ``.dot``/``.gv`` for the text alone).  The DOT text
    is also written next to the picture (``graph.png`` -> ``graph.dot``;
    ``keep_dot=False`` removes it after a successful render), and nothing is
    written outside that folder.  ``renderer``: a ``dot``/``graphviz-pure``
    command or path (default: ``find_renderer()``).  ``timeout``: seconds
    before the renderer is stopped.  Other keywords go to ``get_dot_graph``.
    """
    return _render(get_dot_graph(output, verbose, **options), to_file, renderer, timeout, keep_dot)


def render_dot(text, to_file, *, renderer=None, timeout=60.0, keep_dot=True):
    """Draw DOT ``text`` into ``to_file`` as ``plot_dot_graph`` does (same formats, renderer,
    ``.dot`` file kept next to the picture, atomic write, errors); its path (a ``RenderedGraph``).

    For DOT text made elsewhere, e.g. ``dezero_kr.onnx.to_dot`` of an exported ONNX model.
    """
    return _render(text, to_file, renderer, timeout, keep_dot)


def _render(text, to_file, renderer, timeout, keep_dot):
    path, stem, fmt = _target(to_file)
    if fmt in _TEXT_FORMATS:
        _write_text(path, text)
        return RenderedGraph(path)

    dot_path = stem + '.dot'
    _write_text(dot_path, text)
    kept = f'The DOT text was written to {dot_path}.'
    exe = _renderer_for(renderer, fmt, path, text, kept)
    image = _run_renderer(exe, fmt, dot_path, path, timeout, kept)
    with atomic_write(path, 'wb') as f:
        f.write(image)
    if not keep_dot:
        os.remove(dot_path)
    return RenderedGraph(path)


def _target(to_file):
    """``(absolute path, path without extension, format)`` of ``to_file``; its folder must exist."""
    path = os.path.abspath(os.fspath(to_file))
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        raise FileNotFoundError(f'plot_dot_graph: folder {folder!r} of to_file does not exist')
    stem, ext = os.path.splitext(path)
    fmt = ext[1:].lower()
    if not fmt:
        raise ValueError(f'plot_dot_graph: to_file {os.fspath(to_file)!r} has no extension; '
                         f'use .png, .svg, .pdf or .dot')
    return path, stem, fmt


def _renderer_for(renderer, fmt, path, text, kept):
    """The renderer's executable, checked to be able to write ``fmt`` (errors name ``path``)."""
    exe = require_renderer(renderer, f'plot_dot_graph: cannot draw {path}', kept)
    if _is_graphviz_pure(exe):
        if fmt not in _PURE_FORMATS:
            raise GraphRenderError(
                f'plot_dot_graph: {exe} (graphviz-pure) cannot write .{fmt}; it writes '
                f'{", ".join(sorted(_PURE_FORMATS))}. Use .svg or .png, or install Graphviz '
                f'(`apt-get install graphviz`, `brew install graphviz`). {kept}')
        if fmt in _RASTER_FORMATS and not text.isascii():
            warnings.warn('plot_dot_graph: graphviz-pure has no fonts for non-ASCII text (Korean): '
                          f'those letters show as boxes in {path}. Use .svg, or install Graphviz '
                          'and a Korean font (`apt-get install graphviz fonts-nanum`).',
                          stacklevel=4)  # the caller of plot_dot_graph / render_dot
    return exe


def require_renderer(renderer, what, after=''):
    """The executable that draws for ``renderer`` (None: ``find_renderer()``), else an error.

    ``RendererNotFoundError`` starts with ``what`` and ends with ``after``:
    an explicit ``renderer`` that is not an executable, or none found at all
    (the message says what to install).
    """
    try:
        exe = _resolve(renderer)
    except RendererNotFoundError as e:
        raise RendererNotFoundError(f'{what}: {e} {after}'.rstrip()) from None
    if exe is None:
        raise RendererNotFoundError(f'{what}: no Graphviz renderer found (looked for ${RENDERER_ENV}, '
                                    f'`dot`, `graphviz-pure`); {_RENDERER_HINT}. {after}'.rstrip())
    return exe


def _resolve(renderer):
    if renderer is None:
        return find_renderer()
    found = shutil.which(os.fspath(renderer))
    if found is None:
        raise RendererNotFoundError(f'renderer {os.fspath(renderer)!r} is not an executable file '
                                    f'(nor a command on PATH); {_RENDERER_HINT}.')
    return found


def _run_renderer(exe, fmt, dot_path, path, timeout, kept):
    """Run ``exe -T<fmt> dot_path`` and return the picture it prints (bytes).

    Reading the picture from stdout means the renderer itself writes no file;
    the caller writes it atomically.
    """
    cmd = [exe, f'-T{fmt}', dot_path]
    try:
        # Its own process group (session): on a timeout the whole group is
        # killed, so a wrapper script's children (the real `dot`) stop too.
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    except OSError as e:
        raise GraphRenderError(f'plot_dot_graph: could not run {exe}: {e}. {kept}') from None
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise GraphRenderError(f'plot_dot_graph: {exe} took longer than {timeout} s to draw '
                               f'{path}; for a big graph pass max_depth= or collapse=True, or a '
                               f'larger timeout=. {kept}') from None
    except BaseException:  # KeyboardInterrupt: leave no renderer behind
        _kill_group(proc)
        raise
    if proc.returncode != 0 or not stdout:
        err = stderr.decode('utf-8', 'replace').strip() or '(no message)'
        raise GraphRenderError(f'plot_dot_graph: {" ".join(cmd)} failed with exit status '
                               f'{proc.returncode} while drawing {path}: {err}. {kept}')
    return stdout


def _kill_group(proc):
    """SIGKILL the renderer's process group (just the renderer where there are none) and reap it."""
    try:
        if hasattr(os, 'killpg'):
            os.killpg(proc.pid, signal.SIGKILL)  # start_new_session: pgid == pid
        else:  # pragma: no cover - Windows has no process groups here
            proc.kill()
    except ProcessLookupError:
        pass
    proc.wait()
    for pipe in (proc.stdout, proc.stderr):
        pipe.close()


def _write_text(path, text):
    with atomic_write(path, 'wb') as f:
        f.write(text.encode('utf-8'))

