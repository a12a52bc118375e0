"""The package keeps the shape issue 13 gave it: documented, simple, no cycles.

The numbers come from ``tools/code_report.py`` (run it to see the table).
"""
import ast
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'tools'))
import code_report  # noqa: E402

MODULES = code_report.modules()

# No function over complexity 10 (the reverse pass chooses its loop once per pass).
COMPLEXITY_ALLOWED = set()

# What the last lines of core.py import: modules that need Variable and Function first.
LATE_IMPORTS_OF_CORE = ('dezero_kr.operators', 'dezero_kr.operators_shape', 'dezero_kr.reverse_pass')

# Imports inside functions, each with its reason: an optional extra, or a module
# that only a rarely used path needs.  Anything else goes at the top of the module.
INNER_IMPORTS_ALLOWED = {
    ('blas.py', '_threadpoolctl'): 'threadpoolctl (a dependency, loaded when a limit is asked for)',
    ('distributed/communicator.py', '_mpi'): 'mpi4py (optional extra [mpi])',
    ('download.py', '_download_once'): 'urllib/http/ssl only when a download starts',
    ('download.py', '_download_with_retry'): 'urllib only when a download starts',
    ('onnx/registry.py', 'require_onnx'): 'onnx (optional extra [onnx])',
    ('operators_shape.py', 'scatter_add'): 'cupyx (GPU only)',
    ('plot.py', '_new_figure'): 'matplotlib (optional extra [plot])',
    ('plot.py', '_finish'): 'matplotlib (optional extra [plot])',
    ('progress.py', '_tqdm_class'): 'tqdm (optional extra [progress])',
    ('transforms.py', '_pil_image'): 'PIL (optional extra [image])',
}


@pytest.fixture(scope='module')
def reports():
    return [code_report.report(p) for p in MODULES]


def test_every_public_module_level_function_has_a_docstring(reports):
    missing = [f'{r["module"]}: {name}' for r in reports for name in r['missing'] if '.' not in name]
    assert missing == []


def test_at_least_95_percent_of_public_names_are_documented(reports):
    public = sum(r['public'] for r in reports)
    documented = sum(r['documented'] for r in reports)
    assert documented / public >= 0.95, [f'{r["module"]}: {n}' for r in reports for n in r['missing']]


def test_no_function_over_complexity_10(reports):
    over = [(r['module'], name, c) for r in reports for name, c in r['complex']
            if (r['module'], name) not in COMPLEXITY_ALLOWED]
    assert over == []


def test_imports_inside_functions_only_where_a_reason_is_listed(reports):
    unexpected = [f'{r["module"]}: {fn}' for r in reports for fn in r['inner_imports']
                  if (r['module'], fn) not in INNER_IMPORTS_ALLOWED]
    assert unexpected == []


def _module_imports(path):
    """dezero_kr modules imported anywhere in ``path`` (dotted name -> line).

    ``from dezero_kr.graph import dot`` names the module ``dezero_kr.graph.dot``
    when that is a module, else (a name from the package) ``dezero_kr.graph``.

    Imports inside functions count too: a cycle hidden in a function (or a
    module ``__getattr__``) is still a cycle, only a later one.
    """
    tree = ast.parse(path.read_text(encoding='utf-8'))
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith('dezero_kr'):
            for alias in node.names:
                sub = f'{node.module}.{alias.name}'
                out[sub if sub in MODULE_NAMES else node.module] = node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith('dezero_kr.'):
                    out[alias.name] = node.lineno
    for name, line in list(out.items()):  # importing a.b.c runs a.b's front door first
        parent = name.rpartition('.')[0]
        if parent != 'dezero_kr' and parent not in out and not _inside(path, parent):
            out[parent] = line
    return out


def _inside(path, package):
    """Whether ``path`` is a module of ``package`` (its own front door needs no edge)."""
    return code_report.module_name(path).startswith(package + '.') or (
        code_report.module_name(path) == package)


MODULE_NAMES = {code_report.module_name(p) for p in MODULES}


def test_no_import_cycle_but_the_late_imports_at_the_end_of_core():
    graph = {code_report.module_name(p): _module_imports(p) for p in MODULES}
    # core.py's last statements import operators.py, operators_shape.py and reverse_pass.py, which need core's
    # classes: the documented late imports.  Drop those edges and the rest must be acyclic.
    core_lines = (ROOT / 'dezero_kr' / 'core.py').read_text(encoding='utf-8').count('\n')
    core = graph['dezero_kr.core']
    for late in LATE_IMPORTS_OF_CORE:
        assert late in core and core[late] > core_lines - 15, late
        del core[late]
    state = {}

    def visit(name, path):
        state[name] = 'open'
        for dep in graph.get(name, {}):
            if dep not in graph:
                continue
            assert state.get(dep) != 'open', ' -> '.join(path + [dep])
            if dep not in state:
                visit(dep, path + [dep])
        state[name] = 'done'

    for name in graph:
        if name not in state:
            visit(name, [name])


# What the repository root holds: setup and the front page.  Pictures and graphs that a
# run writes into the folder it runs in (plot_dot_graph's default graph.png, as DeZero
# does) are ignored by .gitignore, so they can never be committed by accident again.
ROOT_FILES = {'.gitignore', 'README.md', 'pyproject.toml', 'setup.cfg', 'setup.py'}


def _git(*args):
    return subprocess.run(['git', *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def test_the_repository_root_tracks_only_setup_and_the_front_page():
    tracked = {line for line in _git('ls-files').splitlines() if '/' not in line}
    assert tracked == ROOT_FILES


@pytest.mark.parametrize('name', ['graph.dot', 'graph.png', 'graph.svg'])
def test_plot_dot_graph_defaults_written_at_the_root_are_ignored(name):
    assert _git('check-ignore', name).strip() == name


def _private_reaches(path):
    """``module: name`` for each private name of another dezero_kr module that ``path`` uses:
    ``from dezero_kr.x import _name``, or ``x._name`` on an imported dezero_kr module."""
    tree = ast.parse(path.read_text(encoding='utf-8'))
    modules, out = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or '').startswith('dezero_kr'):
            for alias in node.names:
                if alias.name.startswith('_'):
                    out.append(f'{node.module}: {alias.name}')
                elif f'{node.module}.{alias.name}' in MODULE_NAMES:
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith('dezero_kr.') and alias.asname:
                    modules.add(alias.asname)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in modules and node.attr.startswith('_')
                and not node.attr.startswith('__')):
            out.append(f'{node.value.id}: {node.attr}')
    return out


def test_no_module_reaches_into_another_modules_private_names():
    reaches = {code_report.module_label(p): _private_reaches(p) for p in MODULES}
    assert {m: r for m, r in reaches.items() if r} == {}


ENGINE = ('core.py', 'modes.py', 'reverse_pass.py', 'hooks.py', 'errors.py')
TOOLS = ('autograd', 'anomaly', 'static_graph', 'define_and_run', 'onnx', 'distributed',
         'backprop_view', 'grad_clip', 'optimizers')


@pytest.mark.parametrize('module', ENGINE[:3])
def test_the_engine_names_no_tool(module):
    """core, modes and reverse_pass know the tools only as Observers: no tool's name in code,
    comments or docstrings (hooks.py, the extension point, lists its users as examples)."""
    text = (ROOT / 'dezero_kr' / module).read_text(encoding='utf-8')
    assert [t for t in TOOLS if t in text] == []


@pytest.mark.parametrize('module', ENGINE)
def test_the_engine_imports_no_tool(module):
    imported = _module_imports(ROOT / 'dezero_kr' / module)
    assert [m for m in imported if any(t in m for t in TOOLS)] == []


def test_import_dezero_kr_loads_no_tool_beyond_dezero():
    """The tools load on first use (``dezero_kr.static_graph``, ``dezero_kr.onnx``), not at
    ``import dezero_kr``; then the name gives the tool itself, and ``dir`` lists it."""
    code = ('import sys, dezero_kr\n'
            'tools = ("dezero_kr.define_and_run", "dezero_kr.onnx", "dezero_kr.distributed")\n'
            'print(sorted(m for m in sys.modules if m.startswith(tools)))\n'
            'print("static_graph" in dir(dezero_kr), "onnx" in dir(dezero_kr))\n'
            'import dezero_kr.define_and_run as dar, dezero_kr.onnx as onnx\n'
            'print(dezero_kr.static_graph is dar.static_graph, dezero_kr.onnx is onnx)\n')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True,
                         cwd=ROOT, env={**os.environ, 'PYTHONPATH': str(ROOT)}).stdout.split('\n')
    assert out[:3] == ['[]', 'True True', 'True True']


def test_a_star_import_still_gives_the_tools():
    namespace = {}
    exec('from dezero_kr import *', namespace)
    import dezero_kr.define_and_run as dar
    assert namespace['static_graph'] is dar.static_graph and namespace['onnx'].export
    assert {'Variable', 'functions', 'optimizers', 'no_grad'} <= set(namespace)


def test_an_unknown_attribute_of_the_package_is_an_attribute_error():
    import dezero_kr
    with pytest.raises(AttributeError, match="no attribute 'static_grap'"):
        dezero_kr.static_grap


@pytest.mark.parametrize('tool', ['onnx', 'graph', 'define_and_run', 'autograd'])
def test_a_tool_imports_no_model_module(tool):
    """Tools sit above the ops and layers, beside the models: the exporter's converters take
    the ops from the ops layer (TokenPositionEmbedding lives in functions_attention)."""
    for path in (ROOT / 'dezero_kr' / tool).rglob('*.py'):
        imported = _module_imports(path)
        assert [m for m in imported if m.endswith(('transformer', 'models'))] == [], path


def test_define_and_run_is_split_by_mechanism_in_its_documented_one_way_order():
    """Issue 32: each module of ``define_and_run`` at most 800 lines; the front door's table
    lists them all in import order, and a module imports only those listed before it."""
    package = ROOT / 'dezero_kr' / 'define_and_run'
    doc = ast.get_docstring(ast.parse((package / '__init__.py').read_text(encoding='utf-8')))
    files = {p.stem for p in package.glob('*.py')} - {'__init__'}
    order = [m for m in re.findall(r'^``(\w+)``\s', doc, re.M) if m in files]
    assert sorted(order) == sorted(files) and len(order) == len(set(order)), (order, files)
    for i, name in enumerate(order):
        path = package / f'{name}.py'
        assert path.read_text(encoding='utf-8').count('\n') <= 800, name
        inside = {m.rpartition('.')[2] for m in _module_imports(path)
                  if m.startswith('dezero_kr.define_and_run.')}
        assert inside <= set(order[:i]), (name, sorted(inside - set(order[:i])))


def test_no_private_name_is_defined_in_two_modules():
    """Issue 33: a private module-level name means one thing in the package (two ``_Pass``
    classes or two ``_describe`` helpers read as one and are not)."""
    where = {}
    for path in MODULES:
        for name, _ in code_report.defined_names(ast.parse(path.read_text(encoding='utf-8'))):
            if name.startswith('_') and not name.startswith('__'):
                where.setdefault(name, set()).add(code_report.module_label(path))
    assert {n: sorted(m) for n, m in where.items() if len(m) > 1} == {}


def test_no_module_of_the_package_is_over_800_lines():
    """Issues 32 and 33: a module a reader can hold; a longer one is split by what it does."""
    long = {code_report.module_label(p): n for p in MODULES
            if (n := p.read_text(encoding='utf-8').count('\n')) > 800}
    assert long == {}
