"""Record today's public names of every public ``dezero_kr`` module into ``tests/public_names.json``.

Issue 33 moves the tools beyond DeZero into packages.  Before the move this
script recorded, for each public module (a ``.py`` file whose name does not
start with ``_``), its public names: ``__all__`` when the module has one, else
``dir()`` minus ``_`` names, minus modules and minus what the module only
imported from outside ``dezero_kr`` (``np``, ``weakref``, ``contextmanager``).
``tests/test_public_names.py`` checks that every recorded name still imports,
from the module's ``home`` in the JSON: the same module for DeZero's module
names and the front doors, the documented new home for a module that moved.

    python tests/make_public_names.py           # writes tests/public_names.json (before a move)
    python tests/make_public_names.py --check   # prints what the JSON holds, changes nothing

The homes are edited by hand in the JSON as modules move (``homes`` holds a
per-name home where one module was split over several).
"""
import importlib
import json
import pathlib
import sys
import types

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / 'tests' / 'public_names.json'


# DeZero's module names: everything they hold is public, re-exports included
# (``dezero.core.Add``, ``dezero.layers.Variable``).
DEZERO_MODULES = ('core', 'core_simple', 'functions', 'functions_conv', 'layers', 'models',
                  'optimizers', 'datasets', 'dataloaders', 'transforms', 'utils', 'cuda')


def public_names(module, stem):
    """The names a user can import from ``module`` (sorted).

    In a module that is not one of DeZero's, a function or class imported from
    another ``dezero_kr`` module is that module's name, not this one's.
    """
    if hasattr(module, '__all__'):
        return sorted(module.__all__)
    own = stem in DEZERO_MODULES or stem == 'dezero_kr'
    core = importlib.import_module('dezero_kr.core')
    names = []
    for name in dir(module):
        if name.startswith('_'):
            continue
        value = getattr(module, name)
        if isinstance(value, types.ModuleType):
            continue
        origin = getattr(value, '__module__', None)
        if isinstance(origin, str) and (isinstance(value, type) or callable(value)) and not (
                origin == module.__name__ or (own and origin.startswith('dezero_kr'))):
            continue
        if not own and value is getattr(core, name, None) and origin != module.__name__:
            continue  # the engine's Config seen through another module
        names.append(name)
    return sorted(names)


def main(argv):
    sys.path.insert(0, str(ROOT))
    stems = sorted(p.stem for p in (ROOT / 'dezero_kr').glob('*.py') if not p.stem.startswith('_'))
    table = {}
    for stem in stems:
        module = importlib.import_module(f'dezero_kr.{stem}')
        table[stem] = {'home': f'dezero_kr.{stem}', 'names': public_names(module, stem)}
    if '--check' in argv:
        print(json.dumps(table, indent=1)[:2000])
        return 0
    OUT.write_text(json.dumps({'dezero_kr': {'home': 'dezero_kr', 'names': public_names(
        importlib.import_module('dezero_kr'), 'dezero_kr')}, **table}, indent=1, sort_keys=True) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
