"""Tests of the backward-pass viewer (dezero_kr.graph.backprop_view.plot_backward).

Three layers:

* the trace in Python: order, generations, gradients, queue and the final
  gradients against closed forms and against an independent observer that
  watches the same ``backward`` call;
* the page in a real headless Chromium (selenium + /usr/bin/chromedriver): the
  file is opened from disk and clicked through step by step; what the DOM
  highlights and shows is compared with the engine; no network request, no
  console error, a non-blank screenshot.  Skipped only where chromium or
  chromedriver is missing, and never under CI (there it fails);
* a notebook executed with nbclient whose output is the viewer.
"""
import html
import importlib
import json
import os
import re
import sys
import time
import warnings

import numpy as np
import pytest

import dezero_kr.utils
from dezero_kr import Function, Variable
from dezero_kr.hooks import Observer
from dezero_kr.graph.backprop_view import (MAX_NODES, ForwardRecord, plot_backward,
                                     record_forward)
from dezero_kr.core import observing
from dezero_kr.functions_math import cos, exp, sin, tanh
from dezero_kr.graph import GraphRenderError, RendererNotFoundError
from dezero_kr.graph import plot_backward as graph_plot_backward

from _subproc import python3_kernel

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHROMIUM = '/usr/bin/chromium'
CHROMEDRIVER = '/usr/bin/chromedriver'


# =============================================================================
# Graphs
# =============================================================================
def docs_script(name):
    """A script of docs/ (make_graphs, make_backprop_view) imported as a module."""
    folder = os.path.join(ROOT, 'docs')
    sys.path.insert(0, folder)
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(folder)


def seed_graph():
    """u = x*y, L = u*u + u at x=2, y=3: L = 42, dL/du = 13, dL/dx = 39, dL/dy = 26."""
    x, y, L = docs_script('make_graphs').seed_graph()  # the graph the docs draw
    return L, (x, y)


def diamond_graph(x0=0.5):
    """y = x*x, z = sin(y)*cos(y): dz/dx = cos(2y) * 2x."""
    x = Variable(np.array(x0), name='x')
    y = x * x
    z = sin(y) * cos(y)
    z.name = 'z'
    return z, (x,)


class SinCos(Function):
    """Two outputs: (sin x, cos x).  dL/dx = gy0 cos x - gy1 sin x."""

    def forward(self, x):
        return np.sin(x), np.cos(x)

    def backward(self, gy0, gy1):
        x = self.inputs[0]
        return gy0 * cos(x) - gy1 * sin(x)


def two_output_graph(x0=0.3):
    """s, c = SinCos(x); L = s*c: dL/dx = cos(2x)."""
    x = Variable(np.array(x0), name='x')
    s, c = SinCos()(x)
    L = s * c
    L.name = 'L'
    return L, (x,)


class EngineOrder(Observer):
    """An independent observer: what the engine popped and returned, copied at once."""

    def __init__(self):
        self.funcs, self.gxs, self.gys = [], [], []

    def on_forward(self, f, inputs, outputs):
        pass

    def on_backward(self, f, gys, gxs):
        self.funcs.append(f)
        self.gys.append([np.array(g.data, copy=True) for g in gys])
        self.gxs.append([None if g is None else np.array(g.data, copy=True) for g in gxs])


def view_with_oracle(build, **kwargs):
    out, leaves = build()
    oracle = EngineOrder()
    with observing(oracle):
        view = plot_backward(out, **kwargs)
    return view, oracle, out, leaves


def require(module):
    """Import an optional test tool: skip where it is missing, fail under CI (it installs it)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        msg = f'needs {module} (pip install -e ".[test]")'
        if os.environ.get('CI'):
            pytest.fail(msg)
        pytest.skip(msg)


def label(view, key):
    return view.data['names'][key]['label']


# =============================================================================
# The trace (Python side)
# =============================================================================
def test_reexported_from_graph_and_utils():
    assert graph_plot_backward is plot_backward
    assert dezero_kr.utils.plot_backward is plot_backward


def test_seed_trace_matches_closed_form_and_engine():
    view, oracle, L, (x, y) = view_with_oracle(seed_graph)
    steps = view.data['backward']
    assert [label(view, s['func']).split(' ')[0] for s in steps] == ['Add', 'Mul', 'Mul']
    assert [s['generation'] for s in steps] == [2, 1, 0]
    # the functions in the trace are, in order, the ones the engine popped
    assert [view.data['names'][s['func']]['node'] for s in steps] == \
        [view.node_id(f) for f in oracle.funcs]
    assert [[r['grad']['values'] for r in s['gxs']] for s in steps] == \
        [['1', '1'], ['6', '6'], ['39', '26']]
    assert [[r['kind'] for r in s['gxs']] for s in steps] == \
        [['first', 'first'], ['acc', 'acc'], ['first', 'first']]
    # u is reached three times (1 from Add, 6 and 6 from u*u); the last Mul gets the sum, 13
    assert [r['count'] for r in steps[1]['gxs']] == [2, 3]
    assert steps[2]['gys'][0]['grad']['values'] == '13' and steps[2]['gys'][0]['count'] == 3
    assert view.data['seed']['grad']['values'] == '1'
    # the queue: Add alone; then the two Muls by generation; the popped one heads it
    assert [[q['generation'] for q in s['before']] for s in steps] == [[2], [1, 0], [0]]
    assert [[q['generation'] for q in s['after']] for s in steps] == [[1, 0], [0], []]
    for s in steps:
        assert s['before'][0]['func'] == s['func']
    final = {label(view, r['var']): r['grad']['values'] for r in view.data['final']}
    assert final == {'x': '39', 'y': '26'}
    assert float(x.grad.data) == 39.0 and float(y.grad.data) == 26.0


def test_gradients_equal_a_plain_backward():
    view, oracle, z, (x,) = view_with_oracle(diamond_graph)
    ref, (xr,) = diamond_graph()
    ref.backward()
    assert float(x.grad.data) == float(xr.grad.data)
    assert np.isclose(float(x.grad.data), np.cos(2 * 0.25) * 2 * 0.5, rtol=1e-12)
    steps = view.data['backward']
    assert [label(view, s['func']).split(' ')[0] for s in steps] == ['Mul', 'Sin', 'Cos', 'Mul']
    assert [s['generation'] for s in steps] == [2, 1, 1, 0]
    # y gets a gradient from Sin first, then Cos adds to it; x is used twice by Mul
    assert [r['kind'] for r in steps[1]['gxs']] == ['first']
    assert [r['kind'] for r in steps[2]['gxs']] == ['acc']
    assert [r['kind'] for r in steps[3]['gxs']] == ['first', 'acc']
    for s, gxs in zip(steps, oracle.gxs):
        for row, g in zip(s['gxs'], gxs):
            assert np.isclose(float(row['grad']['values']), float(g), rtol=1e-3)


def test_two_output_function_and_unused_output():
    view, oracle, L, (x,) = view_with_oracle(two_output_graph)
    steps = view.data['backward']
    assert [label(view, s['func']).split(' ')[0] for s in steps] == ['Mul', 'SinCos']
    assert [r['unused'] for r in steps[1]['gys']] == [False, False]
    assert np.isclose(float(x.grad.data), np.cos(0.6), rtol=1e-12)

    x = Variable(np.array(0.3), name='x')
    s, _ = SinCos()(x)
    L = s * 3.0
    view = plot_backward(L)
    gys = view.data['backward'][1]['gys']
    assert [r['unused'] for r in gys] == [False, True]
    assert gys[1]['grad']['values'] == '0'
    assert np.isclose(float(x.grad.data), 3 * np.cos(0.3), rtol=1e-12)


class ScaleBy(Function):
    """y = x * s with no gradient for s: dL/dx = gy * s, s gets None."""

    def forward(self, x, s):
        return x * s

    def backward(self, gy):
        return gy * self.inputs[1], None


def test_none_gradient_and_retain_grad():
    x = Variable(np.array(1.5), name='x')
    s = Variable(np.array(4.0), name='s')
    y = ScaleBy()(x, s)
    y.name = 'y'
    L = y * y
    view = plot_backward(L, retain_grad=True)
    rows = view.data['backward'][1]['gxs']
    assert [(label(view, r['var']), r['kind'], r['grad']) for r in rows][1] == ('s', 'none', None)
    assert rows[0]['grad']['values'] == '48'  # dL/dx = 2 y s = 2 * 6 * 4
    assert [label(view, r['var']) for r in view.data['final']] == ['x']
    assert s.grad is None and float(x.grad.data) == 48.0
    assert float(y.grad.data) == 12.0  # retain_grad reached the engine


def test_svg_without_graphviz_node_titles_is_an_error(monkeypatch):
    import dezero_kr.graph.backprop_view as bv
    monkeypatch.setattr(bv, '_SVG_NODE', re.compile(r'(?!)(\s*)(\d+)'))  # matches nothing
    L, _ = seed_graph()
    with pytest.raises(RuntimeError, match=r'no element for DOT node\(s\) \[1, 2, 3'):
        plot_backward(L)


def test_large_gradient_shows_norm_min_max():
    x = Variable(np.arange(20.0).reshape(4, 5), name='x')
    L = (x * x).sum()
    view = plot_backward(L)
    final = view.data['final'][0]['grad']
    g = 2 * np.arange(20.0)
    assert final['shape'] == [4, 5] and final['dtype'] == 'float64'
    assert 'values' not in final
    assert np.isclose(float(final['norm']), np.linalg.norm(g), rtol=1e-3)
    assert float(final['min']) == 0.0 and float(final['max']) == 38.0


def test_forward_recorded_and_graph_order():
    x = Variable(np.array(0.5), name='x')
    with record_forward() as rec:
        b = cos(x)   # computed first, but drawn as the second input of Mul
        a = sin(x)
        z = a * b
    assert isinstance(rec, ForwardRecord) and len(rec) == 3
    x.data[...] = 7.0  # recorded values are those of the call
    view = plot_backward(z, forward=rec)
    assert view.data['forward_source'] == 'recorded'
    fwd = view.data['forward']
    assert [label(view, s['func']).split(' ')[0] for s in fwd] == ['Cos', 'Sin', 'Mul']
    assert fwd[0]['inputs'][0]['value']['values'] == '0.5'
    assert fwd[0]['outputs'][0]['value']['values'] == format(np.cos(0.5), '.4g')

    implied = plot_backward(z).data
    assert implied['forward_source'] == 'graph'
    assert [s['generation'] for s in implied['forward']] == [0, 0, 1]


def test_forward_record_of_another_graph_is_an_error():
    x = Variable(np.array(1.0))
    with record_forward() as rec:
        sin(x)
    with pytest.raises(ValueError, match='holds none of the functions'):
        plot_backward(exp(x), forward=rec)


def test_create_graph_and_graph_of_a_gradient():
    x = Variable(np.array(2.0), name='x')
    y = x ** 4
    y.name = 'y'
    # x -> x.grad -> its graph -> x is a cycle that gc frees: no warning (reverse_pass._warn_grad_cycle)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        view = plot_backward(y, create_graph=True)
    gx = x.grad
    assert float(gx.data) == 32.0 and gx.creator is not None
    assert view.data['grads_drawn']
    assert any(s['created'] for s in view.data['backward'])
    assert 'style=dashed' not in view.html and 'data-edge' in view.html
    gx.name = 'gx'
    x.cleargrad()
    view2 = plot_backward(gx)  # the backward pass through the gradient's own graph
    assert float(x.grad.data) == 48.0  # d2/dx2 x^4 = 12 x^2
    final = {label(view2, r['var']): r['grad']['values'] for r in view2.data['final']}
    # the first pass's seed (ones) is a leaf of gx = 4 x^3 * seed too: d gx/d seed = 32
    assert final.pop('x') == '48' and list(final.values()) == ['32']


def test_leaf_grad_accumulates_and_is_marked():
    L, (x, y) = seed_graph()
    x.grad = Variable(np.array(1.0))
    view = plot_backward(L)
    rows = {label(view, r['var']): r for r in view.data['final']}
    assert rows['x']['grad']['values'] == '40' and rows['x']['had_grad']
    assert not rows['y']['had_grad']


def test_errors():
    L, (x, y) = seed_graph()
    with pytest.raises(TypeError, match='plot_backward: output must be a Variable'):
        plot_backward(np.array(1.0))
    with pytest.raises(ValueError, match='is a leaf'):
        plot_backward(x)
    with pytest.raises(TypeError, match='forward must be a ForwardRecord'):
        plot_backward(L, forward=[1])
    with pytest.raises(ValueError, match='max_nodes must be an int >= 1'):
        plot_backward(L, max_nodes=0)
    with pytest.raises(ValueError, match=r'\.html or \.htm'):
        plot_backward(L, to_file='out.png')
    with pytest.raises(FileNotFoundError, match='does not exist'):
        plot_backward(L, to_file='/nonexistent-folder/x.html')
    assert x.grad is None  # every check runs before the backward pass


def test_size_limits_and_collapse():
    x = Variable(np.array(0.1), name='x')
    y = x
    for _ in range(30):
        y = sin(y)
    assert MAX_NODES >= 1000
    with pytest.raises(ValueError, match=r'61 nodes, more than max_nodes=40; pass collapse=True'):
        plot_backward(y, max_nodes=40)
    with pytest.raises(ValueError, match=r'30 functions, more than max_steps=20'):
        plot_backward(y, max_steps=20)
    assert x.grad is None
    view = plot_backward(y, max_nodes=40, collapse=True)
    steps = view.data['backward']
    assert len(steps) == 30  # every step is still there; they share the collapsed box
    assert len({view.data['names'][s['func']]['node'] for s in steps}) == 1
    view = plot_backward(y, max_depth=3)
    nodes = [view.data['names'][s['func']]['node'] for s in view.data['backward']]
    assert nodes[:3] == [n for n in nodes[:3] if n] and nodes[3:] == [None] * 27


def test_page_is_self_contained_and_escaped(tmp_path):
    L, (x, y) = seed_graph()
    x.name = '</script><b>x'
    view = plot_backward(L, to_file=tmp_path / 'p.html', title='a </script> & b')
    text = (tmp_path / 'p.html').read_text(encoding='utf-8')
    assert text == view.html and view.path == str(tmp_path / 'p.html')
    assert text.count('</script>') == 2  # the data block and the code block only
    urls = set(re.findall(r'(?:https?:)?//[^\s"\'<>)]+', text))
    assert urls <= {'http://www.w3.org/2000/svg', 'http://www.w3.org/1999/xlink',
                    'http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd'}
    assert not re.search(r'<(script|img|link|iframe)[^>]*\s(src|href)="(?!data:)', text)
    data = json.loads(re.search(r'id="dz-data">(.*?)</script>', text, re.S).group(1))
    assert data['names'][data['final'][0]['var']]['label'] == '</script><b>x'
    frame = view._repr_html_()
    assert frame.startswith('<iframe') and 'sandbox="allow-scripts"' in frame
    assert html.unescape(re.search(r'srcdoc="(.*)"', frame, re.S).group(1)) == view.html


def _failing_renderer(tmp_path):
    """An executable that is found but fails: the error comes after the backward pass."""
    exe = tmp_path / 'broken-dot'
    exe.write_text('#!/bin/sh\necho "broken renderer" >&2\nexit 3\n')
    exe.chmod(0o755)
    return str(exe)


@pytest.mark.parametrize('create_graph', [False, True])
@pytest.mark.filterwarnings('ignore:backward\\(create_graph=True\\) stored a gradient:UserWarning')
def test_a_failed_call_leaves_every_gradient_as_it_was(tmp_path, create_graph):
    """Issue 23: a renderer problem must not leave .grad accumulated (a retry would double-count)."""
    L, (x, y) = seed_graph()
    x.grad = Variable(np.array(1.0))     # an earlier gradient, accumulated onto by backward
    x_grad = x.grad
    with pytest.raises(GraphRenderError, match='broken renderer'):
        plot_backward(L, renderer=_failing_renderer(tmp_path), retain_grad=True, create_graph=create_graph)
    assert x.grad is x_grad and float(x.grad.data) == 1.0
    assert y.grad is None and L.grad is None and L.creator.inputs[1].grad is None
    with pytest.raises(RendererNotFoundError, match='plot_backward: .*no-such-renderer'):
        plot_backward(L, renderer=str(tmp_path / 'no-such-renderer'))
    assert x.grad is x_grad and float(x.grad.data) == 1.0 and y.grad is None
    plot_backward(L)                      # the retry counts once: 1 + 39
    assert float(x.grad.data) == 40.0 and float(y.grad.data) == 26.0


def test_a_failed_save_leaves_the_gradients(tmp_path, monkeypatch):
    L, (x, y) = seed_graph()
    import dezero_kr.graph.backprop_view as bv

    def full_disk(self, path):
        raise OSError('disk full')
    monkeypatch.setattr(bv.BackwardView, 'save', full_disk)
    with pytest.raises(OSError, match='disk full'):
        plot_backward(L, to_file=tmp_path / 'p.html')
    assert x.grad is None and y.grad is None


def test_lone_surrogate_in_a_name_and_title_shows_its_code(tmp_path):
    """Issue 23: as plot_dot_graph, a lone surrogate shows as \\udc80 instead of UnicodeEncodeError."""
    L, (x, y) = seed_graph()
    x.name = 'x\udc80'
    view = plot_backward(L, to_file=tmp_path / 'p.html', title='t\ud800')
    text = (tmp_path / 'p.html').read_text(encoding='utf-8')
    data = json.loads(re.search(r'id="dz-data">(.*?)</script>', text, re.S).group(1))
    assert data['names'][data['final'][0]['var']]['label'] == 'x\\udc80'
    assert data['title'] == 't\\ud800' and '<title>t\\ud800 ' in text
    assert float(x.grad.data) == 39.0 and view.path == str(tmp_path / 'p.html')


def test_labels_use_only_numbers_the_picture_shows():
    """Issue 24: "Mul #5" names node 5, which the page draws as "#5" on that node (numberNodes)."""
    L, (x, y) = seed_graph()
    L.creator.inputs[0].name = None
    view = plot_backward(L)
    for entry in view.data['names']:
        numbers = re.findall(r'#(\d+)', entry['label'])
        assert numbers == ([] if entry['node'] is None or entry['label'] in ('x', 'y', 'u', 'L')
                           else [entry['node'][len('dz-n'):]]), entry
    assert 'numberNodes();' in view.html and '"#" + g.getAttribute("data-node")' in view.html


# =============================================================================
# The page in a real browser
# =============================================================================
@pytest.fixture(scope='module')
def browser():
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.path.exists(p)]
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        missing.append('selenium')
    if missing:
        msg = f'needs {" and ".join(missing)} (apt-get install chromium chromium-driver; ' \
              f'pip install -e ".[test]")'
        if os.environ.get('CI'):  # CI installs all of them: a missing one is a failure there
            pytest.fail(msg)
        pytest.skip(msg)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ('--headless=new', '--no-sandbox', '--disable-gpu', '--window-size=1280,800',
                '--disable-dev-shm-usage'):
        options.add_argument(arg)
    options.set_capability('goog:loggingPrefs', {'browser': 'ALL', 'performance': 'ALL'})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.implicitly_wait(0)
    try:
        yield driver
    finally:
        driver.quit()


def open_page(driver, path):
    driver.get_log('performance')  # drop what earlier pages logged
    driver.get_log('browser')
    driver.get('file://' + str(path))
    assert driver.find_element('id', 'dz-pos').text.startswith('0 / ')


def click(driver, element_id):
    driver.find_element('id', element_id).click()


def dom_state(driver):
    return driver.execute_script("""
        var cur = document.querySelectorAll('#dz-graph g.dz-current');
        var rows = Array.prototype.map.call(document.querySelectorAll('#dz-step tr.dz-gx-row'),
            function (r) { return [r.getAttribute('data-node'), r.getAttribute('data-kind'),
                                   r.querySelector('.dz-val').textContent]; });
        var queue = Array.prototype.map.call(document.querySelectorAll('#dz-queue li.dz-q'),
            function (li) { return li.getAttribute('data-func'); });
        return {current: Array.prototype.map.call(cur, function (g) { return g.id; }),
                step: document.getElementById('dz-step').getAttribute('data-func'),
                rows: rows, queue: queue,
                pos: document.getElementById('dz-pos').textContent};""")


def final_panel(driver):
    return driver.execute_script("""
        return Array.prototype.map.call(document.querySelectorAll('#dz-final tr.dz-final-row'),
            function (r) {
                return [r.getAttribute('data-var'), r.querySelector('.dz-val').textContent]; });""")


def final_pending(driver):
    """True when the final-gradient panel says the values come at the end (and shows none)."""
    return bool(driver.find_elements('css selector', '#dz-final .dz-final-pending'))


def check_node_numbers_are_drawn(driver):
    """Every "#N" in a label on the page is drawn on node N of the picture, inside the view."""
    drawn = driver.execute_script("""
        var out = {};
        Array.prototype.forEach.call(document.querySelectorAll('#dz-graph g.node text.dz-num'),
            function (t) { var b = t.getBoundingClientRect();
                           out[t.parentNode.id] = [t.textContent, b.width > 0 && b.height > 0]; });
        return out;""")
    labels = driver.execute_script("""
        return Array.prototype.map.call(document.querySelectorAll('.dz-name'),
            function (s) { return [s.textContent, s.getAttribute('data-node')]; });""")
    assert labels
    for text, node in labels:
        for number in re.findall(r'#(\d+)', text):
            assert node == f'dz-n{number}' and drawn[node] == [f'#{number}', True], (text, node, drawn)


def check_no_network_no_errors(driver, path):
    entries = driver.execute_script("return performance.getEntriesByType('resource').length")
    assert entries == 0
    urls = []
    for entry in driver.get_log('performance'):
        message = json.loads(entry['message'])['message']
        if message['method'] == 'Network.requestWillBeSent':
            urls.append(message['params']['request']['url'])
    assert urls and all(u == 'file://' + str(path) or u.startswith('data:') for u in urls), urls
    errors = [e for e in driver.get_log('browser') if e['level'] == 'SEVERE']
    assert errors == []


def none_grad_graph():
    """L = ScaleBy(x, s)^2: s gets no gradient (None) from ScaleBy.backward."""
    x = Variable(np.array(1.5), name='x')
    s = Variable(np.array(4.0), name='s')
    L = ScaleBy()(x, s) ** 2
    L.name = 'L'
    return L, (x,)


@pytest.mark.parametrize('build', [seed_graph, diamond_graph, two_output_graph, none_grad_graph],
                         ids=['seed', 'diamond', 'two_output', 'none_grad'])
def test_browser_steps_follow_the_engine(browser, tmp_path, build):
    view, oracle, out, leaves = view_with_oracle(build, to_file=tmp_path / 'view.html')
    open_page(browser, view.path)
    n = len(oracle.funcs)
    check_node_numbers_are_drawn(browser)
    for k, f in enumerate(oracle.funcs, start=1):
        # the final gradients appear only once backward has produced them (issue 24)
        assert final_panel(browser) == [] and final_pending(browser)
        click(browser, 'dz-next')
        state = dom_state(browser)
        assert state['pos'] == f'{k} / {n}'
        assert state['current'] == [view.node_id(f)] and state['step'] == view.node_id(f)
        assert state['queue'][0] == view.node_id(f)  # the popped function heads the queue
        inputs = [view.node_id(x) for x, g in zip(f.inputs, oracle.gxs[k - 1])]
        assert [r[0] for r in state['rows']] == inputs
        for row, g in zip(state['rows'], oracle.gxs[k - 1]):
            if g is None:
                assert row[1:] == ['none', 'None']
            else:
                assert np.isclose(float(row[2]), float(g), rtol=1e-3), (row, g)
    click(browser, 'dz-next')  # past the end stays at the end
    assert dom_state(browser)['pos'] == f'{n} / {n}'
    assert not final_pending(browser)
    shown = dict(final_panel(browser))
    assert set(shown) == {x.name for x in leaves}
    for x in leaves:
        assert np.isclose(float(shown[x.name]), float(x.grad.data), rtol=1e-3)
    check_no_network_no_errors(browser, view.path)


def residual_tanh_graph(layers):
    """h <- tanh(h @ W_i) + h, L = sum(h*h): 7 drawn nodes per layer (142 layers: 999)."""
    rng = np.random.default_rng(0)
    x = Variable(rng.standard_normal((4, 3)), name='x')
    h = x
    for i in range(layers):
        h = tanh(h @ Variable(rng.standard_normal((3, 3)), name=f'W{i}')) + h
    L = (h * h).sum()
    L.name = 'L'
    return L, x


def test_browser_graph_at_the_size_limit(browser, tmp_path):
    with pytest.raises(ValueError, match=r'1006 nodes, more than max_nodes=1000'):
        plot_backward(residual_tanh_graph(143)[0])
    L, x = residual_tanh_graph(142)
    oracle = EngineOrder()
    with observing(oracle):
        view = plot_backward(L, to_file=tmp_path / 'big.html')
    assert len(set(view._node_ids.values())) == MAX_NODES - 1
    reference, xr = residual_tanh_graph(142)
    reference.backward()
    assert np.array_equal(x.grad.data, xr.grad.data)
    open_page(browser, view.path)
    n = len(oracle.funcs)
    click(browser, 'dz-last')
    assert dom_state(browser)['current'] == [view.node_id(oracle.funcs[-1])]
    shown = dict(final_panel(browser))
    click(browser, 'dz-prev')
    assert dom_state(browser)['pos'] == f'{n - 1} / {n}'
    assert dom_state(browser)['current'] == [view.node_id(oracle.funcs[-2])]
    assert final_panel(browser) == [] and final_pending(browser)
    assert len(shown) == 143  # x and W0..W141
    # x's gradient has 12 elements (> 10): the page shows its norm, min and max
    norm, low, high = re.fullmatch(r'‖g‖=(\S+)  min=(\S+)  max=(\S+)', shown['x']).groups()
    g = x.grad.data
    assert np.allclose([float(norm), float(low), float(high)],
                       [np.linalg.norm(g), g.min(), g.max()], rtol=1e-3)
    check_no_network_no_errors(browser, view.path)


def test_browser_two_inline_viewers_do_not_clash(browser, tmp_path):
    """Two _repr_html_ outputs on one page (as in a notebook): each runs on its own."""
    first = plot_backward(seed_graph()[0])
    z, _ = diamond_graph()
    second = plot_backward(z)
    host = tmp_path / 'notebook.html'
    host.write_text('<!DOCTYPE html><html><head><meta charset="utf-8"><link rel="icon" '
                    'href="data:,"></head><body>' + first._repr_html_() + second._repr_html_()
                    + '</body></html>', encoding='utf-8')
    browser.get_log('browser')
    browser.get('file://' + str(host))
    assert len(browser.find_elements('tag name', 'iframe')) == 2
    browser.switch_to.frame(browser.find_elements('tag name', 'iframe')[0])
    try:
        click(browser, 'dz-next')
        click(browser, 'dz-next')
        assert dom_state(browser)['pos'] == '2 / 3'
    finally:
        browser.switch_to.default_content()
    browser.switch_to.frame(browser.find_elements('tag name', 'iframe')[1])
    try:
        assert dom_state(browser)['pos'] == '0 / 4'  # untouched by the clicks in the first
        click(browser, 'dz-next')
        assert dom_state(browser)['current'] == [second.node_id(z.creator)]
    finally:
        browser.switch_to.default_content()
    assert [e for e in browser.get_log('browser') if e['level'] == 'SEVERE'] == []


def test_browser_seed_exact_text_keys_play_forward_and_screenshot(browser, tmp_path):
    L, (x, y) = seed_graph()
    x.cleargrad()
    with record_forward() as rec:
        u = x * y
        u.name = 'u'
        L = u * u + u
        L.name = 'L'
    view = plot_backward(L, to_file=tmp_path / 'seed.html', forward=rec)
    open_page(browser, view.path)
    from selenium.webdriver.common.keys import Keys
    body = browser.find_element('tag name', 'body')
    texts = []
    for _ in range(3):
        body.send_keys(Keys.ARROW_RIGHT)
        texts.append([(r[1], r[2]) for r in dom_state(browser)['rows']])
    assert texts == [[('first', '1'), ('first', '1')], [('acc', '6'), ('acc', '6')],
                     [('first', '39'), ('first', '26')]]
    assert sorted(final_panel(browser)) == [['x', '39'], ['y', '26']]
    assert 'done' in browser.find_element('id', 'dz-final').get_attribute('class')
    body.send_keys(Keys.HOME)
    assert dom_state(browser)['pos'] == '0 / 3'
    # play at 4x runs to the end by itself
    browser.execute_script("var s = document.getElementById('dz-speed'); s.value = '250';")
    click(browser, 'dz-play')
    deadline = time.time() + 5
    while dom_state(browser)['pos'] != '3 / 3' and time.time() < deadline:
        time.sleep(0.1)
    assert dom_state(browser)['pos'] == '3 / 3'
    # jump with the slider, then the forward tab in recorded order
    browser.execute_script("var s = document.getElementById('dz-slider'); s.value = '1';"
                           "s.dispatchEvent(new Event('input'));")
    assert dom_state(browser)['current'] == [view.node_id(L.creator)]
    click(browser, 'dz-tab-forward')
    order = []
    for _ in range(3):
        click(browser, 'dz-next')
        order.append(dom_state(browser)['current'][0])
    assert order == [view.node_id(c[0]) for c in rec.calls]
    assert 'record_forward()' in browser.find_element('id', 'dz-note').text
    click(browser, 'dz-tab-backward')
    click(browser, 'dz-prev')
    shot = tmp_path / 'seed.png'
    assert browser.save_screenshot(str(shot))
    from PIL import Image, ImageStat
    with Image.open(shot) as im:
        rgb = im.convert('RGB')
        assert rgb.size[0] >= 800
        assert max(ImageStat.Stat(rgb).stddev) > 20  # not blank
        colors = rgb.getcolors(maxcolors=1 << 20)
        assert any(r > 180 and g < 80 and b < 80 for _, (r, g, b) in colors)  # the red highlight
    check_no_network_no_errors(browser, view.path)


def test_browser_docs_say_where_the_panel_is(browser, tmp_path):
    """Issue 24: the docs said the names are in the left panel; the page puts the panel on the right."""
    view = plot_backward(seed_graph()[0], to_file=tmp_path / 'seed.html')
    open_page(browser, view.path)
    graph_x, panel_x = browser.execute_script(
        "return [document.getElementById('dz-graph').getBoundingClientRect().left,"
        " document.querySelector('aside').getBoundingClientRect().left];")
    assert panel_x > graph_x + 200  # beside the picture, on its right
    with open(os.path.join(ROOT, 'docs', 'backprop_view.md'), encoding='utf-8') as f:
        docs = f.read()
    assert '왼쪽 패널' not in docs and '오른쪽 패널' in docs


# =============================================================================
# Jupyter
# =============================================================================
def test_notebook_displays_the_viewer(tmp_path, monkeypatch):
    nbformat = require('nbformat')
    nbclient = require('nbclient')
    require('jupyter_client.kernelspec')
    python3_kernel(tmp_path, monkeypatch)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        f'import sys; sys.path.insert(0, {ROOT!r})\n'
        'import numpy as np\n'
        'from dezero_kr import Variable\n'
        'from dezero_kr.graph import plot_backward\n'
        "x, y = Variable(np.array(2.0), name='x'), Variable(np.array(3.0), name='y')\n"
        "u = x * y; L = u * u + u; L.name = 'L'\n"
        'plot_backward(L)')]
    client = nbclient.NotebookClient(nb, kernel_name='python3', timeout=60,
                                     resources={'metadata': {'path': str(tmp_path)}})
    client.execute()
    outputs = nb.cells[0].outputs
    assert [o['output_type'] for o in outputs] == ['execute_result']
    frame = outputs[0]['data']['text/html']
    assert frame.startswith('<iframe class="dezero-kr-backprop-view"')
    page = html.unescape(re.search(r'srcdoc="(.*)"', frame, re.S).group(1))
    assert page.startswith('<!DOCTYPE html>') and 'id="dz-graph"' in page
    data = json.loads(re.search(r'id="dz-data">(.*?)</script>', page, re.S).group(1))
    assert sorted(data['names'][r['var']]['label'] + '=' + r['grad']['values']
                  for r in data['final']) == ['x=39', 'y=26']



def test_docs_pages_are_generated_for_every_embedded_viewer(tmp_path):
    written = docs_script('make_backprop_view').write(str(tmp_path))
    with open(os.path.join(ROOT, 'docs', 'backprop_view.md'), encoding='utf-8') as f:
        embedded = set(re.findall(r'src="viewer/(\w+)\.html"', f.read()))
    assert embedded and embedded <= set(written)
    finals = {}
    for stem in written:
        page = (tmp_path / f'{stem}.html').read_text(encoding='utf-8')
        data = json.loads(re.search(r'id="dz-data">(.*?)</script>', page, re.S).group(1))
        assert data['backward']
        finals[stem] = {r['grad']['values'] for r in data['final']}
    assert finals == {'seed': {'39', '26'}, 'create_graph': {'32'}, 'grad_of_grad': {'48', '32'}}
