"""Graph export: DOT text (golden), node uniqueness, determinism, escaping, big graphs,
higher-order graphs, and real renders with each available renderer."""
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from _checks import png_size
from _subproc import python_env
from dezero_kr import graph
from dezero_kr.graph import dot
from dezero_kr.core import Constant, Function, Parameter, Variable
from dezero_kr.core import sum as vsum
from dezero_kr.functions_math import exp, log, sin, tanh
from dezero_kr.graph import (GraphRenderError, RenderedGraph, RendererNotFoundError,
                             get_dot_graph, plot_dot_graph)
from dezero_kr.models import MLP

DOT = shutil.which('dot')
PURE = graph.find_graphviz_pure()
NO_DOT = 'system Graphviz `dot` not installed (apt-get install graphviz)'
NO_PURE = 'graphviz-pure not installed (pip install graphviz-pure)'
RENDERERS = [pytest.param(DOT, id='dot', marks=pytest.mark.skipif(DOT is None, reason=NO_DOT)),
             pytest.param(PURE, id='graphviz-pure',
                          marks=pytest.mark.skipif(PURE is None, reason=NO_PURE))]
ANY_RENDERER = pytest.mark.skipif(DOT is None and PURE is None, reason='no Graphviz renderer')


@pytest.fixture(autouse=True)
def _no_override(monkeypatch):
    monkeypatch.delenv(graph.RENDERER_ENV, raising=False)


def seed_graph():
    """u = x*y; L = u*u + u with x=2, y=3 (the seed's worked example: L=42, dL/dx=39)."""
    x = Variable(np.array(2.0), name='x')
    y = Variable(np.array(3.0), name='y')
    u = x * y
    L = u * u + u
    L.name = 'L'
    return x, y, u, L


def load_make_graphs():
    """docs/make_graphs.py, the script that draws the pictures of docs/graph.md."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        'docs', 'make_graphs.py')
    spec = importlib.util.spec_from_file_location('make_graphs', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAKE_GRAPHS = load_make_graphs()
tanh_derivative = MAKE_GRAPHS.tanh_grad  # x.grad after `order` backward(create_graph=True) passes


def nodes_and_edges(text):
    """({id: attribute text}, [(src, dst, attrs)]) parsed from our DOT output."""
    nodes, edges = {}, []
    for line in text.splitlines()[1:-1]:
        m = re.fullmatch(r'(\d+) -> (\d+)( \[.*\])?', line)
        if m:
            edges.append((int(m[1]), int(m[2]), m[3] or ''))
            continue
        m = re.fullmatch(r'(\d+) \[(.*)\]', line)
        assert m, f'unexpected DOT line {line!r}'
        assert int(m[1]) not in nodes, f'node {m[1]} declared twice'
        nodes[int(m[1])] = m[2]
    return nodes, edges


def reachable(output):
    """(distinct Variables + Functions, input and output uses) by a plain set-based walk."""
    seen, funcs, todo, n_edges = {output}, set(), [output], 0
    while todo:
        f = todo.pop().creator
        if f is None or f in funcs:
            continue
        funcs.add(f)
        outs = [r() for r in f.outputs if r() is not None]
        n_edges += len(f.inputs) + len(outs)
        for v in list(f.inputs) + outs:
            if v not in seen:
                seen.add(v)
                todo.append(v)
    return len(seen) + len(funcs), n_edges


def label_of(attrs):
    return re.match(r'label="((?:[^"\\]|\\.)*)"', attrs)[1]


# =============================================================================
# DOT text
# =============================================================================
SEED_VERBOSE = '''\
digraph g {
1 [label="L: () float64", color=orange, style=filled]
2 [label="Add", color=lightblue, style=filled, shape=box]
3 [label="() float64", color=orange, style=filled]
4 [label="() float64", color=orange, style=filled]
3 -> 2
4 -> 2
2 -> 1
5 [label="Mul", color=lightblue, style=filled, shape=box]
4 -> 5
4 -> 5
5 -> 3
6 [label="Mul", color=lightblue, style=filled, shape=box]
7 [label="x: () float64", color=orange, style=filled]
8 [label="y: () float64", color=orange, style=filled]
7 -> 6
8 -> 6
6 -> 4
}
'''


def test_seed_graph_golden_verbose():
    *_, L = seed_graph()
    assert get_dot_graph(L) == SEED_VERBOSE
    assert get_dot_graph(L, verbose=True) == SEED_VERBOSE


def test_seed_graph_golden_plain():
    *_, L = seed_graph()
    assert get_dot_graph(L, verbose=False) == textwrap.dedent('''\
        digraph g {
        1 [label="L", color=orange, style=filled]
        2 [label="Add", color=lightblue, style=filled, shape=box]
        3 [label="", color=orange, style=filled]
        4 [label="", color=orange, style=filled]
        3 -> 2
        4 -> 2
        2 -> 1
        5 [label="Mul", color=lightblue, style=filled, shape=box]
        4 -> 5
        4 -> 5
        5 -> 3
        6 [label="Mul", color=lightblue, style=filled, shape=box]
        7 [label="x", color=orange, style=filled]
        8 [label="y", color=orange, style=filled]
        7 -> 6
        8 -> 6
        6 -> 4
        }
        ''')


def test_each_node_once_and_every_use_is_an_edge():
    # u feeds Mul twice and Add once: one node, three edges (DeZero issue #49 repeats it).
    x, y, u, L = seed_graph()
    nodes, edges = nodes_and_edges(get_dot_graph(L))
    assert len(nodes) == 8  # 5 variables + 3 functions
    u_id = 4
    assert sorted(dst for src, dst, _ in edges if src == u_id) == [2, 5, 5]
    labels = [label_of(a) for a in nodes.values()]
    assert labels.count('x: () float64') == 1 and labels.count('y: () float64') == 1
    # a shared input several levels down is still declared once
    a = Variable(np.ones(3), name='a')
    b = a
    for _ in range(5):
        b = b * a + a
    nodes, edges = nodes_and_edges(get_dot_graph(b))
    assert [label_of(v) for v in nodes.values()].count('a: (3,) float64') == 1
    a_id = next(k for k, v in nodes.items() if label_of(v) == 'a: (3,) float64')
    assert sum(1 for s, _, _ in edges if s == a_id) == 11


def test_text_is_the_same_for_the_same_graph_in_one_process():
    texts = []
    junk = []
    for i in range(3):
        junk.append([Variable(np.zeros(1)) for _ in range(i * 7)])  # shift object ids
        texts.append(get_dot_graph(seed_graph()[-1]))
    assert texts[0] == texts[1] == texts[2] == SEED_VERBOSE


def test_text_is_byte_identical_across_processes():
    code = textwrap.dedent('''
        import sys, numpy as np
        from dezero_kr import Variable
        from dezero_kr.functions_math import tanh
        from dezero_kr.graph import get_dot_graph
        pad = [object() for _ in range(int(sys.argv[1]))]
        x = Variable(np.array(1.0), name='x')
        y = tanh(x)
        y.backward(create_graph=True)
        gx = x.grad
        x.cleargrad()
        gx.backward(create_graph=True)
        sys.stdout.buffer.write(get_dot_graph([x.grad, gx], show_values=True,
                                              follow_grads=True).encode())
        ''')
    outs = []
    for pad, seed in ((0, '1'), (1000, '12345')):
        env = python_env(PYTHONHASHSEED=seed)
        outs.append(subprocess.run([sys.executable, '-c', code, str(pad)], env=env, check=True,
                                   capture_output=True, timeout=60).stdout)
    assert outs[0] == outs[1]
    assert outs[0].startswith(b'digraph g {\n') and b'Tanh' in outs[0]


@pytest.mark.parametrize('name, escaped', [
    ('say "hi"', 'say \\"hi\\"'),
    ('back\\slash', 'back\\\\slash'),
    ('a<b>&c', 'a<b>&c'),
    ('가중치 W', '가중치 W'),
    ('two\nlines', 'two\\nlines'),
    ('bell\x07', 'bell\\\\x07'),
    ('end\\', 'end\\\\'),
    ('\\N', '\\\\N'),  # not Graphviz's node-name escape
])
def test_labels_are_escaped(name, escaped):
    v = Variable(np.zeros(2), name=name)
    text = get_dot_graph(v, verbose=False)
    assert text == f'digraph g {{\n1 [label="{escaped}", color=orange, style=filled]\n}}\n'


def test_verbose_label_of_a_matrix_and_of_an_uninitialised_parameter():
    x = Variable(np.zeros((2, 3)), name='x')
    assert 'label="x: (2, 3) float64"' in get_dot_graph(x)
    assert 'label="(2, 3) float32"' in get_dot_graph(Variable(np.zeros((2, 3), np.float32)))
    assert 'label="W"' in get_dot_graph(Parameter(None, name='W'))


def test_param_names_dict_and_named_params():
    x = Constant(np.ones((4, 2)))
    W = Parameter(np.full((2, 3), 0.5))
    b = Parameter(np.zeros(3))
    y = x @ W + b

    class FakeLayer:  # stands in for Layer/Model until they exist
        def named_params(self):
            yield 'l0/W', W
            yield 'l0/b', b

    for names in ({W: 'l0/W', b: 'l0/b'}, FakeLayer()):
        nodes, _ = nodes_and_edges(get_dot_graph(y, param_names=names))
        labels = sorted(label_of(a) for a in nodes.values())
        assert 'l0/W: (2, 3) float64' in labels and 'l0/b: (3,) float64' in labels
    nodes, _ = nodes_and_edges(get_dot_graph(y, verbose=False, param_names=FakeLayer()))
    assert {'l0/W', 'l0/b'} <= {label_of(a) for a in nodes.values()}


def test_param_names_errors():
    y = Variable(np.ones(1)) * 2
    with pytest.raises(TypeError, match='named_params'):
        get_dot_graph(y, param_names=['l0/W'])
    with pytest.raises(TypeError, match='keys must be Variables'):
        get_dot_graph(y, param_names={'l0/W': y})


def test_constants_are_grey_unless_asked_otherwise():
    x = Variable(np.ones(2), name='x')
    y = x * np.array([2.0, 3.0])  # the operator keeps the array as MulConstant's c
    z = x * Constant(np.array([2.0, 3.0]), name='c')
    assert 'color=lightgray' not in get_dot_graph(y)
    text = get_dot_graph(z)
    assert '[label="c: (2,) float64", color=lightgray, style=filled]' in text
    assert 'lightgray' not in get_dot_graph(z, mark_constants=False)


def test_show_values_for_small_tensors_and_function_constants():
    *_, L = seed_graph()
    text = get_dot_graph(L, show_values=True)
    assert '1 [label="L: () float64\\n42"' in text
    assert 'label="x: () float64\\n2"' in text and 'label="() float64\\n36"' in text
    v = Variable(np.arange(6.0).reshape(2, 3) / 3, name='v')
    assert 'label="v: (2, 3) float64\\n[[0, 0.3333, 0.6667],\\n [1, 1.333, 1.667]]"' in \
        get_dot_graph(v, show_values=True)
    big = Variable(np.zeros(11), name='big')
    assert 'label="big: (11,) float64"' in get_dot_graph(big, show_values=True)
    assert 'label="big\\n[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]"' in \
        get_dot_graph(big, verbose=False, show_values=11)
    y = (Variable(np.ones(3), name='a') * 2.5) ** 3
    text = get_dot_graph(y, verbose=False, show_values=True)
    assert 'label="MulConstant\\nc=2.5"' in text and 'label="Pow\\nc=3"' in text


def test_show_grads_norm_and_values():
    x, y, u, L = seed_graph()
    L.backward()
    text = get_dot_graph(L, show_values=True, show_grads=True)
    assert 'label="x: () float64\\n2\\ngrad: 39"' in text
    assert 'label="y: () float64\\n3\\ngrad: 26"' in text
    W = Variable(np.full((3, 4), 2.0), name='W')
    (W * 3.0).backward()  # grad = 3 everywhere: norm sqrt(12 * 9)
    text = get_dot_graph(W, show_grads=True)
    assert f'label="W: (3, 4) float64\\ngrad: (3, 4) norm={np.sqrt(108):.4g}"' in text


def test_nonfinite_marks_variables_and_the_function_that_made_them():
    x = Variable(np.array([0.0, 1.0]), name='x')
    with np.errstate(divide='ignore', invalid='ignore'):
        z = exp(log(x) * 2.0)
        z.name = 'z'
        loss = vsum(z)
        loss.backward()
    assert 'red' not in get_dot_graph(loss)  # off by default: DeZero's look
    nodes, edges = nodes_and_edges(get_dot_graph(loss, mark_nonfinite=True))
    red = {label_of(a).split('\\n')[0] for a in nodes.values() if 'color=red' in a}
    # log(0) = -inf is the first bad value: Log is marked, Mul/Exp downstream are not
    assert red == {'Log', '(2,) float64', 'x: (2,) float64'}
    x_attrs = next(a for a in nodes.values() if label_of(a).startswith('x:'))
    assert '!! nan in grad' in label_of(x_attrs)
    bad_var = next(a for a in nodes.values() if label_of(a).startswith('(2,) float64'))
    assert label_of(bad_var).endswith('!! inf in data')


def test_output_errors():
    with pytest.raises(TypeError, match='must be a Variable'):
        get_dot_graph(np.ones(2))
    with pytest.raises(ValueError, match='no output'):
        get_dot_graph([])
    v = Variable(np.ones(1))
    with pytest.raises(ValueError, match='show_values'):
        get_dot_graph(v, show_values=-1)
    with pytest.raises(ValueError, match='max_depth'):
        get_dot_graph(v, max_depth=-2)
    with pytest.raises(ValueError, match='collapse'):
        get_dot_graph(v, collapse=1)


class Split2(Function):
    """Two outputs: the halves of a vector."""
    __slots__ = ()

    def forward(self, x):
        n = len(x) // 2
        return x[:n], x[n:]

    def backward(self, ga, gb):
        raise NotImplementedError


def test_several_outputs_each_drawn_once():
    x = Variable(np.arange(4.0), name='x')
    a, b = Split2()(x)
    a.name, b.name = 'a', 'b'
    c = a * b
    nodes, edges = nodes_and_edges(get_dot_graph(c, verbose=False))
    labels = {k: label_of(v) for k, v in nodes.items()}
    assert sorted(labels.values()) == ['', 'Mul', 'Split2', 'a', 'b', 'x']
    split = next(k for k, v in labels.items() if v == 'Split2')
    assert sorted(labels[d] for s, d, _ in edges if s == split) == ['a', 'b']
    # an output nobody else uses is still drawn (DeZero drew an edge to an undeclared id)
    a2, b2 = Split2()(x)
    nodes, edges = nodes_and_edges(get_dot_graph(a2 * 2))
    assert len(nodes) == 6 and all(d in nodes and s in nodes for s, d, _ in edges)
    # two outputs in one call
    assert get_dot_graph([a, b]) == get_dot_graph((a, b, a))


# =============================================================================
# Higher-order graphs, grad links, depth cut, collapse
# =============================================================================
def test_tanh_third_derivative_graph():
    gx3 = tanh_derivative(3)
    t = np.tanh(1.0)
    assert np.isclose(gx3.data, (1 - t * t) * (6 * t * t - 2))  # d3/dx3 tanh
    text = get_dot_graph(gx3, verbose=False, show_values=True)
    nodes, edges = nodes_and_edges(text)
    funcs = sorted(label_of(a).split('\\n')[0] for a in nodes.values() if 'shape=box' in a)
    # the graph backward(create_graph=True) recorded, each function once
    assert funcs == ['Add'] * 4 + ['Mul'] * 12 + ['Neg'] * 2 + ['RSubConstant'] * 2 + ['Tanh']
    assert (len(nodes), len(edges)) == reachable(gx3) == (46, 58)
    assert f'label="gx3\\n{(1 - t * t) * (6 * t * t - 2):.4g}"' in text
    # lower orders are smaller graphs of the same kind
    sizes = [len(nodes_and_edges(get_dot_graph(tanh_derivative(k)))[0]) for k in (1, 2)]
    assert sizes[0] < sizes[1] < 46


def test_follow_grads_draws_the_grad_graphs():
    x = Variable(np.array(1.0), name='x')
    y = tanh(x)
    y.name = 'y'
    y.backward(create_graph=True)
    plain = get_dot_graph(y)
    assert 'grad' not in plain and 'RSubConstant' not in plain
    text = get_dot_graph(y, follow_grads=True)
    nodes, edges = nodes_and_edges(text)
    labels = {k: label_of(v) for k, v in nodes.items()}
    grad_edges = [(labels[s], labels[d]) for s, d, a in edges if 'label="grad"' in a]
    assert grad_edges == [('x: () float64', 'x.grad: () float64')]
    assert 'RSubConstant' in labels.values()  # gx = gy * (1 - y*y) came along
    assert text == get_dot_graph(y, follow_grads=True)


def test_max_depth_cuts_with_an_ellipsis_node():
    x = Variable(np.array(0.5), name='x')
    y = x
    for _ in range(10):
        y = sin(y)
    for depth in (0, 1, 4):
        nodes, edges = nodes_and_edges(get_dot_graph(y, max_depth=depth))
        labels = [label_of(a) for a in nodes.values()]
        assert labels.count('Sin') == depth and labels.count('...') == 1
        assert len(nodes) == 2 * depth + 2
        cut = next(k for k, a in nodes.items() if label_of(a) == '...')
        assert [(s, a) for s, _, a in edges if s == cut] == [(cut, ' [style=dashed]')]
    assert '...' not in get_dot_graph(y, max_depth=10)
    assert get_dot_graph(y, max_depth=100) == get_dot_graph(y)


def test_collapse_runs_of_one_function():
    x = Variable(np.array(0.5), name='x')
    y = x
    for _ in range(1000):
        y = sin(y)
    y.name = 'y'
    assert get_dot_graph(y, verbose=False, collapse=True) == textwrap.dedent('''\
        digraph g {
        1 [label="y", color=orange, style=filled]
        2 [label="Sin x1000", color=lightblue, style=filled, shape=box]
        3 [label="x", color=orange, style=filled]
        3 -> 2
        2 -> 1
        }
        ''')
    # a named Variable in the middle stays visible and splits the run; side inputs are kept
    h = Variable(np.array(0.0), name='h')
    s = Variable(np.array(1.0), name='s')
    for i in range(6):
        h = h + s
        if i == 2:
            h.name = 'mid'
    nodes, edges = nodes_and_edges(get_dot_graph(h, verbose=False, collapse=True))
    labels = {k: label_of(v) for k, v in nodes.items()}
    assert sorted(labels.values()) == ['', 'Add x3', 'Add x3', 'h', 'mid', 's']
    s_id = next(k for k, v in labels.items() if v == 's')
    assert sorted(labels[d] for s_, d, _ in edges if s_ == s_id) == ['Add x3', 'Add x3']
    assert get_dot_graph(h, collapse=4).count('Add x') == 0  # runs shorter than 4 stay
    # the backward chain gx = gy*cos*cos*... collapses; the Sin chain does not (each
    # intermediate also feeds a Cos), and x.grad, reached through a grad link, stays visible
    x = Variable(np.array(1.0), name='x')
    y = x
    for _ in range(5):
        y = sin(y)
    y.backward(create_graph=True)
    nodes, edges = nodes_and_edges(get_dot_graph(y, verbose=False, follow_grads=True,
                                                 collapse=True))
    labels = {k: label_of(v) for k, v in nodes.items()}
    funcs = sorted(v for k, v in labels.items() if 'shape=box' in nodes[k])
    assert funcs == ['Cos'] * 5 + ['Mul x5'] + ['Sin'] * 5
    gx = next(k for k, v in labels.items() if v == 'x.grad')
    assert [labels[s] for s, d, a in edges if d == gx] == ['Mul x5', 'x']


# =============================================================================
# Big graphs
# =============================================================================
def test_export_of_a_100k_node_chain_is_fast():
    x = Variable(np.array(0.1), name='x')
    y = x
    for _ in range(50_000):
        y = sin(y)
    start = time.perf_counter()
    text = get_dot_graph(y)
    took = time.perf_counter() - start
    assert text.count(' [label=') == 100_001  # 50,001 variables + 50,000 functions
    assert text.count(' -> ') == 100_000
    assert took < 5, f'exporting 100k nodes took {took:.1f} s'
    assert get_dot_graph(y, collapse=True).count('\n') == 7


# =============================================================================
# Rendering
# =============================================================================
def svg_nodes(path):
    root = ET.parse(path).getroot()
    ns = {'s': 'http://www.w3.org/2000/svg'}
    groups = root.findall('.//s:g[@class="node"]', ns)
    return {g.find('s:title', ns).text: ''.join(t.text or '' for t in g.findall('s:text', ns))
            for g in groups}, len(groups)


@pytest.mark.parametrize('renderer', RENDERERS)
def test_render_png_and_svg(tmp_path, renderer, monkeypatch):
    monkeypatch.setenv(graph.RENDERER_ENV, renderer)
    *_, L = seed_graph()
    png = plot_dot_graph(L, to_file=tmp_path / 'seed.png')
    assert isinstance(png, RenderedGraph) and png == str(tmp_path / 'seed.png')
    w, h = png_size(png)
    assert 100 < w < 1000 and 200 < h < 2000
    assert (tmp_path / 'seed.dot').read_text(encoding='utf-8') == SEED_VERBOSE
    svg = plot_dot_graph(L, to_file=str(tmp_path / 'seed.svg'), verbose=False)
    labels, count = svg_nodes(svg)
    assert count == 8 and len(labels) == 8
    assert sorted(labels.values()) == ['', '', 'Add', 'L', 'Mul', 'Mul', 'x', 'y']
    assert sorted(os.listdir(tmp_path)) == ['seed.dot', 'seed.png', 'seed.svg']


@pytest.mark.parametrize('renderer', RENDERERS)
def test_render_keeps_tricky_labels(tmp_path, renderer):
    names = ['say "hi"', 'back\\slash', 'a<b>&c', '가중치 W', 'end\\', '\\N']
    vs = [Variable(np.zeros(1), name=n) for n in names]
    svg = plot_dot_graph(vs, verbose=False, to_file=tmp_path / 'names.svg', renderer=renderer)
    labels, count = svg_nodes(svg)
    assert count == len(names) and sorted(labels.values()) == sorted(names)


@pytest.mark.parametrize('renderer', RENDERERS)
def test_render_higher_order_graph(tmp_path, renderer):
    gx3 = tanh_derivative(3)
    labels, count = svg_nodes(plot_dot_graph(gx3, verbose=False, renderer=renderer,
                                             to_file=tmp_path / 'tanh3.svg'))
    assert count == 46 and list(labels.values()).count('Mul') == 12


def test_renderer_order_and_override(monkeypatch, tmp_path):
    fake = tmp_path / 'mydot'
    fake.write_text('#!/bin/sh\nexit 0\n')
    fake.chmod(0o755)
    monkeypatch.setenv(graph.RENDERER_ENV, str(fake))
    assert graph.find_renderer() == str(fake)
    monkeypatch.setenv(graph.RENDERER_ENV, str(tmp_path / 'nothing-here'))
    with pytest.raises(RendererNotFoundError, match='DEZERO_KR_DOT'):
        graph.find_renderer()
    monkeypatch.delenv(graph.RENDERER_ENV)
    if DOT is not None:
        assert graph.find_renderer() == DOT
    elif PURE is not None:
        assert graph.find_renderer() == PURE


def test_missing_renderer_is_a_clear_error_and_keeps_the_dot_file(tmp_path, monkeypatch):
    *_, L = seed_graph()
    monkeypatch.setenv(graph.RENDERER_ENV, str(tmp_path / 'no-such-dot'))
    with pytest.raises(RendererNotFoundError) as info:
        plot_dot_graph(L, to_file=tmp_path / 'g.png')
    msg = str(info.value)
    assert 'pip install graphviz-pure' in msg and 'no-such-dot' in msg
    assert str(tmp_path / 'g.dot') in msg
    assert (tmp_path / 'g.dot').read_text(encoding='utf-8') == SEED_VERBOSE
    assert not (tmp_path / 'g.png').exists()
    # nothing anywhere: no override, nothing on PATH or next to Python
    monkeypatch.delenv(graph.RENDERER_ENV)
    monkeypatch.setattr(dot.shutil, 'which', lambda *a, **k: None)
    assert graph.find_renderer() is None
    with pytest.raises(RendererNotFoundError, match='no Graphviz renderer found.*apt-get install'):
        plot_dot_graph(L, to_file=tmp_path / 'h.svg')
    assert (tmp_path / 'h.dot').exists() and not (tmp_path / 'h.svg').exists()


def fake_renderer(tmp_path, body):
    path = tmp_path / 'fake-dot'
    path.write_text(f'#!{sys.executable}\nimport sys, time\n{body}\n')
    path.chmod(0o755)
    return str(path)


def test_renderer_failure_reports_stderr_and_keeps_the_old_picture(tmp_path):
    bad = fake_renderer(tmp_path, 'sys.stderr.write("Error: layout exploded\\n"); sys.exit(3)')
    out = tmp_path / 'g.png'
    out.write_bytes(b'old picture')
    with pytest.raises(GraphRenderError, match='exit status 3.*layout exploded') as info:
        plot_dot_graph(Variable(np.ones(1)), to_file=out, renderer=bad)
    assert str(tmp_path / 'g.dot') in str(info.value)
    assert out.read_bytes() == b'old picture'  # written atomically or not at all
    assert sorted(os.listdir(tmp_path)) == ['fake-dot', 'g.dot', 'g.png']


def test_renderer_gets_format_and_file_and_its_stdout_is_the_picture(tmp_path):
    echo = fake_renderer(tmp_path, 'sys.stdout.write(repr(sys.argv[1:]))')
    out = plot_dot_graph(Variable(np.ones(1)), to_file=tmp_path / 'g.svg', renderer=echo)
    assert (tmp_path / 'g.svg').read_text() == repr(['-Tsvg', str(tmp_path / 'g.dot')])
    assert out.format == 'svg'


def test_renderer_timeout(tmp_path):
    slow = fake_renderer(tmp_path, 'time.sleep(30)')
    start = time.perf_counter()
    with pytest.raises(GraphRenderError, match='longer than 0.5 s.*max_depth'):
        plot_dot_graph(Variable(np.ones(1)), to_file=tmp_path / 'g.png', renderer=slow,
                       timeout=0.5)
    assert time.perf_counter() - start < 10


@pytest.mark.skipif(PURE is None, reason=NO_PURE)
def test_graphviz_pure_limits_are_explained(tmp_path):
    with pytest.raises(GraphRenderError, match='cannot write .pdf.*apt-get install graphviz'):
        plot_dot_graph(Variable(np.ones(1)), to_file=tmp_path / 'g.pdf', renderer=PURE)
    with pytest.warns(UserWarning, match='boxes'):
        plot_dot_graph(Variable(np.ones(1), name='가중치'), to_file=tmp_path / 'k.png',
                       renderer=PURE)
    png_size(tmp_path / 'k.png')


@pytest.mark.skipif(DOT is None, reason=NO_DOT)
def test_pdf_with_system_graphviz(tmp_path):
    pdf = plot_dot_graph(seed_graph()[-1], to_file=tmp_path / 'g.pdf', renderer=DOT)
    with open(pdf, 'rb') as f:
        assert f.read(5) == b'%PDF-'


@pytest.mark.parametrize('renderer', RENDERERS)
def test_writes_only_into_the_target_folder(tmp_path, monkeypatch, renderer):
    monkeypatch.setenv(graph.RENDERER_ENV, renderer)
    home, cwd, tmp, target = (tmp_path / n for n in ('home', 'cwd', 'tmp', 'target'))
    for d in (home, cwd, tmp, target):
        d.mkdir()
    monkeypatch.setenv('HOME', str(home))
    monkeypatch.setenv('TMPDIR', str(tmp))
    monkeypatch.chdir(cwd)
    *_, L = seed_graph()
    plot_dot_graph(L, to_file=target / 'graph.png')
    plot_dot_graph(L, to_file=target / 'graph.svg', keep_dot=False)
    assert sorted(os.listdir(target)) == ['graph.png', 'graph.svg']
    assert os.listdir(home) == os.listdir(cwd) == os.listdir(tmp) == []
    # the default to_file is graph.png in the current folder
    plot_dot_graph(L)
    assert sorted(os.listdir(cwd)) == ['graph.dot', 'graph.png']


def test_dot_extension_writes_text_only(tmp_path, monkeypatch):
    monkeypatch.setattr(dot.shutil, 'which', lambda *a, **k: None)  # no renderer needed
    *_, L = seed_graph()
    for name in ('g.dot', 'g.gv'):
        out = plot_dot_graph(L, to_file=tmp_path / name)
        assert (tmp_path / name).read_text(encoding='utf-8') == SEED_VERBOSE == get_dot_graph(L)
        assert out.format == name[2:] and out._repr_png_() is None
    assert sorted(os.listdir(tmp_path)) == ['g.dot', 'g.gv']


def test_bad_targets(tmp_path):
    v = Variable(np.ones(1))
    with pytest.raises(FileNotFoundError, match='does not exist'):
        plot_dot_graph(v, to_file=tmp_path / 'missing' / 'g.png')
    with pytest.raises(ValueError, match='no extension'):
        plot_dot_graph(v, to_file=tmp_path / 'graph')
    with pytest.raises(RendererNotFoundError, match='not an executable'):
        plot_dot_graph(v, to_file=tmp_path / 'g.png', renderer=tmp_path / 'nope')
    assert sorted(os.listdir(tmp_path)) == ['g.dot']


@ANY_RENDERER
def test_notebooks_display_the_returned_path(tmp_path):
    formatters = pytest.importorskip('IPython.core.formatters',
                                     reason='IPython is not installed (pip install -e ".[test]")')
    *_, L = seed_graph()
    png = plot_dot_graph(L, to_file=tmp_path / 'g.png')
    data, _ = formatters.DisplayFormatter().format(png)
    assert data['image/png'][:4] == b'\x89PNG'
    svg = plot_dot_graph(L, to_file=tmp_path / 'g.svg')
    data, _ = formatters.DisplayFormatter().format(svg)
    assert '<svg' in data['image/svg+xml'] and 'image/png' not in data


def test_param_names_from_a_real_model():
    model = MLP((4, 1))
    y = model(np.ones((2, 3)))
    nodes, _ = nodes_and_edges(get_dot_graph(y, param_names=model))
    labels = {label_of(a): a for a in nodes.values()}
    for path, p in model.named_params():
        assert labels[f'{path}: {p.shape} {p.dtype}'].endswith('color=orange, style=filled')
    assert labels['(2, 3) float64'].endswith('color=lightgray, style=filled')  # the data batch


# =============================================================================
# The pictures in docs/graph.md
# =============================================================================
def test_docs_pictures_match_the_code():
    make_graphs = MAKE_GRAPHS
    assert make_graphs.check(make_graphs.DEFAULT_OUT) == [], \
        'docs/_static/graphs is stale: run `python docs/make_graphs.py`'


@ANY_RENDERER
def test_make_graphs_writes_every_picture(tmp_path):
    make_graphs = MAKE_GRAPHS
    out = tmp_path / 'graphs'
    assert make_graphs.main(['--out', str(out)]) == 0
    stems = [stem for stem, _, _ in make_graphs.examples()]
    expected = [f'{s}.{ext}' for s in stems for ext in ('dot', 'svg')]
    assert sorted(os.listdir(out)) == sorted(expected)
    assert make_graphs.check(str(out)) == []
    for stem in stems:
        nodes, _ = nodes_and_edges((out / f'{stem}.dot').read_text(encoding='utf-8'))
        assert svg_nodes(out / f'{stem}.svg')[1] == len(nodes)
    assert os.listdir(tmp_path) == ['graphs']  # its temporary folder is gone


def test_renderer_timeout_kills_the_wrappers_children(tmp_path, monkeypatch):
    # A `dot` wrapper (as some installations have) that starts the real renderer
    # as its child; the child records its pid and would run for a minute.
    pid_file = tmp_path / 'child.pid'
    wrapper = fake_renderer(tmp_path, (
        'import subprocess\n'
        f'child = subprocess.Popen([sys.executable, "-c", "import os, time; '
        f'open({str(pid_file)!r}, \\"w\\").write(str(os.getpid())); time.sleep(60)"])\n'
        'child.wait()'))
    monkeypatch.setenv('DEZERO_KR_DOT', wrapper)
    start = time.perf_counter()
    with pytest.raises(GraphRenderError, match='longer than 4 s'):
        plot_dot_graph(Variable(np.ones(1)), to_file=tmp_path / 'g.png', timeout=4)
    assert time.perf_counter() - start < 10
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(child):
        time.sleep(0.05)
    assert not _alive(child), 'the wrapper\'s child renderer is still running'


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A killed child of the (also killed) wrapper is re-parented and reaped by
    # init; until then it is a zombie, which counts as dead.
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().split(')')[-1].split()[0] != 'Z'
    except FileNotFoundError:
        return False


def test_lone_surrogate_in_a_name_is_shown_by_its_code(tmp_path):
    v = Variable(np.zeros(2), name='bad\udc80name')
    text = get_dot_graph(v, verbose=False)
    assert 'label="bad\\\\udc80name"' in text
    out = plot_dot_graph(v, to_file=tmp_path / 'g.dot')
    assert 'bad\\\\udc80name' in open(out, encoding='utf-8').read()


def test_higher_order_tanh_pictures_label_their_seeds_and_constant():
    """Every leaf of the tanh derivative graphs is labelled (x and one named seed per
    backward), and the constant 1 of 1 - y*y is written in its RSubConstant box."""
    for stem, order in (('tanh_gx2', 2), ('tanh_gx3', 3), ('tanh_follow_grads', 1)):
        with open(os.path.join(MAKE_GRAPHS.DEFAULT_OUT, f'{stem}.dot'), encoding='utf-8') as f:
            text = f.read()
        nodes, edges = nodes_and_edges(text)
        has_input = {dst for _, dst, _ in edges}
        leaves = sorted(label_of(a) for i, a in nodes.items()
                        if i not in has_input and 'shape=box' not in a)
        assert leaves == sorted(['x'] + [f'seed{k}' for k in range(1, order + 1)]), (stem, leaves)
        assert any(label_of(a) == 'RSubConstant\\nc=1' for a in nodes.values()), stem
    gx = MAKE_GRAPHS.tanh_grad(3)
    t = np.tanh(1.0)
    np.testing.assert_allclose(gx.data, (1 - t ** 2) * (6 * t ** 2 - 2), rtol=1e-14)


def test_dot_node_is_a_node_line_of_get_dot_graph():
    x = Variable(np.ones((2, 3), np.float32), name='x "1"')
    lines = dot.get_dot_graph(exp(x)).splitlines()
    assert dot.dot_node(3, 'x "1": (2, 3) float32', 'var') in lines
    assert dot.dot_node(2, 'Exp', 'func') in lines
    assert dot.dot_node(5, 'c', 'const') == '5 [label="c", color=lightgray, style=filled]'
    with pytest.raises(ValueError, match="kind must be 'var', 'const' or 'func', got 'box'"):
        dot.dot_node(1, 'Exp', 'box')
