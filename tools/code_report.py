"""How readable is the package?  Lines per module, docstring coverage of the
public names, functions over McCabe complexity 10, imports inside functions.

    python tools/code_report.py            # the table, module by module
    python tools/code_report.py --missing  # also list undocumented public names

"Public" is what a user can reach: a module-level function or class whose name
does not start with ``_``, defined in that module (re-exports are counted
where they are defined), and the public methods and properties of a public
class (``__init__`` and ``__call__`` included when a class defines them; an
``__init__`` is documented by its class's docstring, as ``help(Class)`` shows).
Complexity is measured with ``mccabe`` (the library behind flake8's C901).
``tests/test_code_shape.py`` holds the package to the limits this prints.
"""
import ast
import importlib
import inspect
import pathlib
import sys

import mccabe

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / 'dezero_kr'
COMPLEXITY_LIMIT = 10
_DOCUMENTED_DUNDERS = ('__init__', '__call__')


def modules():
    """The package's ``.py`` files, its sub-packages' included, sorted by path."""
    return sorted(PACKAGE.rglob('*.py'))


def module_name(path):
    """The dotted import name of the module at ``path``: ``dezero_kr.autograd.reverse``,
    ``dezero_kr.autograd`` for its ``__init__.py``."""
    parts = path.relative_to(PACKAGE.parent).with_suffix('').parts
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


def module_label(path):
    """The module's path inside the package, as the table prints it: ``autograd/reverse.py``."""
    return path.relative_to(PACKAGE).as_posix()


def public_names(tree):
    """``(qualified name, node)`` of every public function, class, method and property."""
    out = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith('_'):
            out.append((node.name, node))
            if isinstance(node, ast.ClassDef):
                out.extend(_public_methods(node))
    return out


def defined_names(tree):
    """``(name, node)`` of every name a module's top level defines: functions, classes and
    plain assignments (``X = ...``), in order."""
    out = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out.append((node.name, node))
        elif isinstance(node, ast.Assign):
            out.extend((t.id, node) for t in node.targets if isinstance(t, ast.Name))
    return out


def _public_methods(cls):
    for item in cls.body:
        if not isinstance(item, ast.FunctionDef):
            continue
        name = item.name
        if name.startswith('_') and name not in _DOCUMENTED_DUNDERS:
            continue
        if _is_setter(item):
            continue  # the property's getter carries the docstring
        out_name = f'{cls.name}.{name}'
        yield out_name, item


def _is_setter(fn):
    return any(isinstance(d, ast.Attribute) and d.attr in ('setter', 'deleter')
               for d in fn.decorator_list)


def _documented(module, qualname, node):
    """Whether ``help()`` shows a docstring: a method without one of its own
    inherits its base class's (``inspect.getdoc``), e.g. ``Function.backward``."""
    if ast.get_docstring(node) is not None:
        return True
    if '.' not in qualname:
        return False
    cls_name, attr = qualname.split('.')
    cls = getattr(module, cls_name)
    if attr == '__init__':
        return bool(cls.__doc__)  # help(Class) shows the class docstring, which states the arguments
    for base in cls.__mro__[1:]:
        if base.__module__ == 'builtins':
            return False  # object.__init__'s "Initialize self." says nothing about this class
        inherited = base.__dict__.get(attr)
        if inherited is not None and inspect.getdoc(inherited):
            return True
    return False


def complex_functions(path, limit=COMPLEXITY_LIMIT):
    """``(name, complexity)`` of every function in ``path`` above ``limit``."""
    tree = compile(path.read_text(encoding='utf-8'), str(path), 'exec', ast.PyCF_ONLY_AST)
    visitor = mccabe.PathGraphingAstVisitor()
    visitor.preorder(tree, visitor)
    return sorted((g.entity, g.complexity()) for g in visitor.graphs.values()
                  if g.complexity() > limit)


def inner_imports(tree):
    """Names of functions that contain an import statement."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(node):
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    out.append(node.name)
                    break
    return out


def report(path):
    """One row of the table for the module at ``path``."""
    text = path.read_text(encoding='utf-8')
    tree = ast.parse(text)
    names = public_names(tree)
    module = importlib.import_module(module_name(path))
    missing = [n for n, node in names if not _documented(module, n, node)]
    return {
        'module': module_label(path),
        'lines': text.count('\n'),
        'public': len(names),
        'documented': len(names) - len(missing),
        'missing': missing,
        'complex': complex_functions(path),
        'inner_imports': inner_imports(tree),
    }


def main(argv):
    rows = [report(p) for p in modules()]
    print(f'{"module":28s} {"lines":>6s} {"public":>7s} {"doc":>5s} {"cx>10":>6s} {"inner-imp":>9s}')
    for r in rows:
        print(f'{r["module"]:28s} {r["lines"]:6d} {r["public"]:7d} {r["documented"]:5d} '
              f'{len(r["complex"]):6d} {len(r["inner_imports"]):9d}')
    public = sum(r['public'] for r in rows)
    documented = sum(r['documented'] for r in rows)
    print(f'{"total":28s} {sum(r["lines"] for r in rows):6d} {public:7d} {documented:5d} '
          f'{sum(len(r["complex"]) for r in rows):6d} {sum(len(r["inner_imports"]) for r in rows):9d}')
    print(f'docstring coverage: {documented}/{public} = {100 * documented / public:.1f} %')
    for r in rows:
        for name, c in r['complex']:
            print(f'complexity {c:3d}  {r["module"]}: {name}')
    if '--missing' in argv:
        for r in rows:
            for name in r['missing']:
                print(f'undocumented  {r["module"]}: {name}')
            for name in r['inner_imports']:
                print(f'inner import  {r["module"]}: {name}')


if __name__ == '__main__':
    main(sys.argv[1:])
