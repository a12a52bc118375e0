"""Every public name of the flat package (recorded before issue 33's move) still imports.

``tests/public_names.json`` was written by ``tests/make_public_names.py`` on the
flat tree.  Each module's entry names its ``home``: the module itself for
DeZero's module names and the front doors, the documented new home for a
module that moved into a package (``homes`` overrides it name by name where a
module was split).  A module that moved leaves no re-exporting shim behind.
"""
import importlib
import importlib.util
import json
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
TABLE = json.loads((ROOT / 'tests' / 'public_names.json').read_text(encoding='utf-8'))
CASES = [(module, name, entry.get('homes', {}).get(name, entry['home']))
         for module, entry in sorted(TABLE.items()) for name in entry['names']]


@pytest.mark.parametrize('module,name,home', CASES, ids=[f'{m}.{n}' for m, n, _ in CASES])
def test_the_name_imports_from_its_home(module, name, home):
    found = importlib.import_module(home)
    # An editable install elsewhere can still serve a module this tree no longer has.
    assert pathlib.Path(found.__file__).resolve().is_relative_to(ROOT / 'dezero_kr'), found.__file__
    assert hasattr(found, name), f'{module}.{name} is not in {home}'


MOVED = sorted(m for m, e in TABLE.items() if e['home'] != f'dezero_kr.{m}' and m != 'dezero_kr')


@pytest.mark.parametrize('module', MOVED)
def test_a_moved_module_leaves_no_shim(module):
    path = ROOT / 'dezero_kr' / f'{module}.py'
    assert not path.exists(), f'{path.name} moved to {TABLE[module]["home"]}'


def test_dezero_kr_static_graph_is_the_function_not_a_module():
    import dezero_kr
    from dezero_kr.define_and_run import static_graph
    assert dezero_kr.static_graph is static_graph and not hasattr(static_graph, '__path__')
    assert not (ROOT / 'dezero_kr' / 'static_graph.py').exists()


REMOVED = [(m, n, why) for m, e in sorted(TABLE.items()) for n, why in e.get('removed', {}).items()]


@pytest.mark.parametrize('module,name,why', REMOVED, ids=[f'{m}.{n}' for m, n, _ in REMOVED])
def test_a_removed_name_is_gone_and_says_why(module, name, why):
    assert why and not hasattr(importlib.import_module(TABLE[module]['home']), name)
