"""Guards: what the step reads outside its arguments, and the signature of a call.

``layers_of`` and ``optimizers_of`` find what the step can reach;
``value_sources`` scans the bytecode (``dis``) of the step's code, of the
user's functions it calls and of its layers' ``forward`` for the globals,
closure cells, defaults and attributes it reads; ``value_guards`` fixes their
values after a trace (plain values by value, objects by identity) and
``changed_value`` says which one no longer holds.  ``call_key`` is a call's
cache key (argument shapes, dtypes, strides and types; ``Config``).
"""
import dis
import functools
import inspect
import os
import sys
import sysconfig

import numpy as np

from dezero_kr import cuda
from dezero_kr.core import Config, Parameter, Variable
from dezero_kr.frames import is_internal
from dezero_kr.layers import Layer
from dezero_kr.define_and_run.shared import MISSING, StepWrapper, Unreplayable
from dezero_kr.define_and_run.recording import slot_names


# =============================================================================
# State the step reads outside its arguments: layers reachable from fn
# =============================================================================
def _reachable(fn, args, kwargs):
    """The objects the step can reach: its arguments, what its functions name (closure cells,
    globals, defaults, ``self``, a partial's arguments: ``_names_of_functions``), and one level
    inside other objects there (a class holding model and optimizer)."""
    roots = list(args) + list(kwargs.values()) + [v for v, _ in _names_of_functions(fn, (), args, kwargs)[1]]
    for obj in list(roots):
        if not isinstance(obj, (Layer, list, tuple, dict, type)) and hasattr(obj, '__dict__') \
                and not inspect.ismodule(obj) and not inspect.isroutine(obj):
            roots += list(vars(obj).values())
    return roots


def optimizers_of(fn, args, kwargs):
    """The optimizers the step can reach (``_reachable``), each once."""
    return list({id(o): o for o in _reachable(fn, args, kwargs)
                 if not isinstance(o, type) and _has(o, 'update_one')}.values())


def layers_of(fn, args, kwargs):
    """The Layers the step can reach (``_reachable``; an optimizer's target), and their sublayers."""
    layers, seen, stack = [], set(), _reachable(fn, args, kwargs)
    while stack:
        obj = stack.pop()
        if isinstance(obj, (list, tuple)):
            stack += list(obj)
            continue
        target = getattr(obj, 'target', None) if _has(obj, 'target') else None  # an optimizer: its model
        if not isinstance(obj, Layer) and isinstance(target, Layer):
            obj = target
        if isinstance(obj, Layer) and id(obj) not in seen:
            seen.add(id(obj))
            layers.append(obj)
            stack += [v for v in obj.__dict__.values() if isinstance(v, (Layer, list, tuple))]
    return layers


def _entry_functions(fn, found, tops):
    """The Python functions that calling ``fn`` runs first: through bound methods,
    ``functools.partial``, a callable object's ``__call__``, ``__wrapped__`` (a
    ``functools.wraps`` decorator) and ``static_graph``.  The objects bound on the way
    (``self``, a partial's arguments) go to ``tops``, a partial's keywords to ``found``."""
    funcs, stack, seen = [], [fn], set()
    while stack:
        f = stack.pop()
        if id(f) not in seen:
            seen.add(id(f))
            if inspect.isfunction(f):
                funcs.append(f)
            stack += _called_by(f, found, tops)
    return funcs


def _called_by(f, found, tops):
    """What calling ``f`` calls (see ``_entry_functions``)."""
    if isinstance(f, StepWrapper):
        return [f.fn]
    if isinstance(f, functools.partial):
        tops += [(a, f'the argument {i} of a partial') for i, a in enumerate(f.args)]
        found += [(f.keywords, k, 'item', f'the partial keyword {k!r}', 'all') for k in f.keywords]
        tops += [(v, k) for k, v in f.keywords.items()]
        return [f.func]
    if inspect.ismethod(f):
        tops.append((f.__self__, 'self'))
        return [f.__func__]
    if inspect.isfunction(f):
        return [f.__wrapped__] if getattr(f, '__wrapped__', None) is not None else []
    call = getattr(type(f), '__call__', None)  # an object with __call__ (a Layer: forward)
    if isinstance(f, type) or inspect.isroutine(f) or not inspect.isfunction(call):
        return []
    tops.append((f, 'self'))
    return [] if is_internal(call.__code__.co_filename) else [call]


def _defaults(func, found):
    """``[(value, name)]`` of a function's default arguments (``def step(x, m=model)``); the
    keyword-only ones are guarded as entries of their dict (``found``)."""
    code, defaults = func.__code__, func.__defaults__ or ()
    here = list(zip(defaults, code.co_varnames[code.co_argcount - len(defaults):code.co_argcount]))
    kw = func.__kwdefaults__ or {}
    found += [(kw, k, 'item', f'the default {k!r}', 'all') for k in kw]
    return here + [(v, k) for k, v in kw.items()]


def state_slots(layers):
    """``{(layer, name): value}`` for the layers' attributes holding a non-Parameter Variable or None."""
    slots = {}
    for layer in layers:
        for name, v in list(layer.__dict__.items()):
            if name in ('inputs', 'outputs') or name.startswith('_'):
                continue
            if v is None or (isinstance(v, Variable) and not isinstance(v, Parameter)):
                slots[(layer, name)] = v
    return slots


# Python values outside the arguments (a loss weight annealed between calls, a flag, a
# temperature on a layer) enter the trace as constants: the guard compares them at each call.
_PLAIN = (bool, int, float, complex, str, bytes, type(None), np.generic)


def _plain_value(v):
    return isinstance(v, _PLAIN) or (v.__class__ is tuple and len(v) <= 8
                                     and all(isinstance(x, _PLAIN) for x in v))


def _skipped_holder(obj):
    """Objects whose attributes are not the step's inputs: functions, the modules and classes
    of libraries (NumPy's, dezero_kr's, the standard library's), and optimizers (their update
    runs again at every replay and reads its own state fresh)."""
    return inspect.isroutine(obj) or _library(obj) or _has(obj, 'update_one')


def _iterator_object(obj):
    """An iterator or generator (not a class, a layer or an optimizer): ``next()`` on it changes it."""
    return not isinstance(obj, (type, Layer)) and _has(type(obj), '__next__') and not _has(obj, 'update_one')


def _has(obj, name):
    """``hasattr``, False where the object's ``__getattr__`` raises something else than
    AttributeError (a config answering from a dict with ``KeyError``): the step may never ask."""
    try:
        return hasattr(obj, name)
    except Exception:
        return False


_LIBRARY_DIRS = tuple({os.path.abspath(p) for p in [os.path.dirname(os.__file__)] + [
    sysconfig.get_paths()[k] for k in ('stdlib', 'platstdlib', 'purelib', 'platlib')]})


def _library(obj):
    """A module or class of a library (not the user's): a built-in one, NumPy's, dezero_kr's,
    the standard library's or an installed package's; False for other objects (a notebook's
    ``__main__`` and a module made at run time are the user's)."""
    if isinstance(obj, type):
        obj = sys.modules.get(obj.__module__)
        if obj is None:
            return True
    elif not inspect.ismodule(obj):
        return False
    path = getattr(obj, '__file__', None)
    if path is None:
        return obj.__name__ in sys.builtin_module_names
    return is_internal(path) or os.path.abspath(path).startswith(_LIBRARY_DIRS)


def _inside(obj, name, names):
    """The sources one level inside ``obj`` that code naming ``names`` (attributes, string and
    int constants) can read: a dict's entries, a list's items (up to 64), an object's, a
    class's or a module's attributes, and the class attributes an instance reads."""
    if isinstance(obj, dict):
        return [(obj, k, 'item', f'{name}[{k!r}]', 'all') for k in list(obj) if k in names]
    if obj.__class__ is list:
        return [(obj, None, 'list', name, 'all')] if len(obj) <= _LIST_ITEMS else []
    if isinstance(obj, Layer) or _skipped_holder(obj):
        return []
    if not hasattr(obj, '__dict__'):  # a class with __slots__ (a dataclass(slots=True))
        slots = () if _library(type(obj)) else slot_names(type(obj))
        return [(obj, k, 'slot', f'{name}.{k}', 'all') for k in slots if k in names]
    own = vars(obj)
    found = [(obj, k, 'attr', f'{name}.{k}', 'all') for k in list(own) if k in names]
    if isinstance(obj, type) or inspect.ismodule(obj):
        return found
    shadowed = []  # self.beta of a class attribute: the class's, and the instance's own (missing)
    for klass in type(obj).__mro__:
        if not _library(klass):
            keys = [k for k in list(vars(klass)) if k in names and k not in own and _plain_value(vars(klass)[k])]
            found += [(klass, k, 'attr', f'{klass.__name__}.{k}', 'all') for k in keys]
            shadowed += [(obj, k, 'attr', f'{name}.{k}', 'all') for k in keys]
    return found + shadowed


_LIST_ITEMS = 64  # a longer list the step names is not guarded (its items: a data set)
_DEPTH = 3  # levels inside the objects the code names (hp['sched']['beta'], self.cfg.opt.lr)


def _inner_objects(source):
    """``[(object, description)]`` at a source (the items of a list) that the next level
    looks inside: not plain values, arrays, Variables, layers (walked as layers) or routines."""
    holder, key, kind, what, _ = source
    value = read_value(holder, key, kind)
    values = list(enumerate(value)) if kind == 'list' else [(None, value)]
    return [(v, what if i is None else f'{what}[{i}]') for i, v in values
            if v is not MISSING and not _plain_value(v) and not inspect.isroutine(v)
            and not isinstance(v, (np.ndarray, Variable, Layer))]


def _methods(obj, names):
    """The user's functions ``obj.<name>`` for ``names`` (a method, a module's function, a
    property's getter) and the class's ``__getattr__`` (a config that computes its attributes)."""
    if _skipped_holder(obj) or not hasattr(obj, '__dict__') and not hasattr(type(obj), '__slots__'):
        return []
    owners = [obj] if inspect.ismodule(obj) else obj.__mro__ if isinstance(obj, type) else type(obj).__mro__
    funcs = []
    for owner in owners:
        if owner is not object and not _library(owner):
            d = vars(owner)
            for n in (names | _COMPUTED) & d.keys():
                f = d[n]
                f = f.fget if isinstance(f, property) else getattr(f, '__func__', f)
                funcs.append(f)
    return [f for f in funcs if inspect.isfunction(f)]


_COMPUTED = frozenset({'__getattr__', '__getattribute__'})


def value_sources(fn, layers, args=(), kwargs=None):
    """``[(holder, key, kind, description, objects)]``: where the step reads values outside its
    arguments: closure cells and the globals loaded by its code, by the user's functions found
    there (three calls deep) and by its user-defined layers' ``forward``; ``self``; the
    attributes and dict entries inside what is found there that the code names (``_DEPTH``
    levels: ``hp['sched']['beta']``); the layers' attributes (and inside those the code names:
    ``self.cfg.beta``), their lists of sublayers.  ``kind``: 'item' (a dict entry), 'attr',
    'cell', 'list', 'slot'.  ``objects``: 'all'
    (an object there is guarded by identity: a model or optimizer bound to the name again) or
    'structure' (only sublayers and parameters: a layer's other objects are its state)."""
    found, tops, attrs, consts = _names_of_functions(fn, layers, args, kwargs)
    names = attrs | consts
    paths = param_paths(layers)
    inner = []
    for layer in layers:
        own = [paths[id(v)] for v in vars(layer).values() if isinstance(v, Parameter) and id(v) in paths]
        name = own[0].rpartition('/')[0] if own and '/' in own[0] else type(layer).__name__
        here = [(layer, k, 'attr', f'{name}.{k}', 'structure') for k in list(vars(layer))
                if k not in ('inputs', 'outputs')]
        found += here
        inner += [src for src in here if src[1] in names]  # what the code reads: looked inside
        # a list of sublayers its forward walks (MLP's and Sequential's ``layers``): its items
        # (``model.layers.append(...)``, ``model.layers[0] = ...`` between calls retrace)
        found += [(v, None, 'list', f'{name}.{k}', 'all') for k, v in list(vars(layer).items())
                  if v.__class__ is list and len(v) <= _LIST_ITEMS and any(isinstance(i, Layer) for i in v)]
    level, seen = [(obj, name, None) for obj, name in tops], set()
    for _ in range(_DEPTH):  # the entries and attributes that code names, levels in (cfg.opt.lr)
        for obj, name, source in level:
            if _iterator_object(obj) and id(obj) not in seen:  # next(it) in the step: not replayed
                found.append((obj, None, 'iterator', name, 'all'))
            here = _inside(obj, name, names) if id(obj) not in seen else []
            seen.add(id(obj))
            if here and source is not None and source[4] == 'structure':  # a layer's config
                found.append(source[:4] + ('all',))                     # object: by identity
            found += here
            inner += here
        level = [(v, what, src) for src in inner for v, what in _inner_objects(src)]
        inner = []
    return found


def _names_of_functions(fn, layers, args=(), kwargs=None):
    """The globals (as loaded by name) and closure cells of ``fn``, of the user's functions found
    there (three calls deep), of the user's layers' ``forward`` and of the methods of the
    objects found there and of the arguments that this code names (``trainer.loss``): (sources,
    [(value, name)], the attribute names and the string and int constants their code uses)."""
    found, tops, attrs, consts, seen = [], [], set(), set(), set()
    funcs = [(f, 0) for f in _entry_functions(fn, found, tops)]
    funcs += [(type(layer).forward, 1) for layer in layers]
    names = arg_names(fn, args, kwargs or {})
    tops += [(v, names.get(path, f'the argument {path[1]!r}')) for path, v in _argument_objects(args, kwargs)]
    for _ in range(3):  # then the methods of what was found, named by any of that code
        _walk_functions(funcs, found, tops, attrs, consts, seen)
        objects = {id(obj): obj for obj, _ in tops}.values()
        funcs = [(f, 1) for obj in objects for f in _methods(obj, attrs) if id(f) not in seen]
        if not funcs:
            break
    return found, tops, attrs, consts


def _walk_functions(funcs, found, tops, attrs, consts, seen):
    """``_names_of_functions``' walk from ``funcs`` ([(function, depth)]), into its lists."""
    while funcs:
        func, depth = funcs.pop()
        code = getattr(func, '__code__', None)
        if code is None or id(func) in seen or (depth and is_internal(code.co_filename)):
            continue
        seen.add(id(func))
        names, more_attrs, more_consts = _code_facts(code)
        attrs |= more_attrs
        consts |= more_consts
        glb = getattr(func, '__globals__', {})
        here = [(glb[n], n) for n in sorted(names) if n in glb]
        found += [(glb, n, 'item', f'the global {n!r}', 'all') for _, n in here]
        for name, cell in zip(code.co_freevars, getattr(func, '__closure__', None) or ()):
            found.append((cell, name, 'cell', f'the closure variable {name!r}', 'all'))
            value = read_value(cell, name, 'cell')
            if value is not MISSING:
                here.append((value, name))
        here += _defaults(func, found)
        tops += here
        if depth < 3:  # the user's functions found there, what they call first, their methods
            funcs += [(f, depth + 1) for obj, _ in here if callable(obj) and not isinstance(obj, (type, Layer))
                      for f in _entry_functions(obj, found, tops)]
            funcs += [(f, depth + 1) for obj, _ in here for f in _methods(obj, more_attrs)]


def _argument_objects(args, kwargs):
    """``[(path, object)]``: the arguments the signature keys by identity (a dict or a config
    object: what the step reads inside them is guarded as the values outside the arguments)."""
    items = [(('args', i), a) for i, a in enumerate(args)] + [(('kwargs', k), v) for k, v in (kwargs or {}).items()]
    return [(path, v) for path, v in items if not isinstance(v, (np.ndarray, Variable, tuple, list) + _PLAIN)]


_facts = {}  # code object -> _code_facts (read once: dis is ~100 us a function)


def _code_facts(code):
    """(global names it loads, attribute names, string constants) of ``code`` and the code of
    the functions defined in it."""
    facts = _facts.get(code)
    if facts is None:
        names, attrs, consts, stack = set(), set(), set(), [code]
        while stack:
            c = stack.pop()
            for ins in dis.get_instructions(c):
                if ins.opname in ('LOAD_GLOBAL', 'LOAD_NAME'):
                    names.add(ins.argval)
                elif ins.opname in ('LOAD_ATTR', 'LOAD_METHOD'):
                    attrs.add(ins.argval)
            consts.update(k for k in c.co_consts if isinstance(k, (str, int)) and not isinstance(k, bool))
            stack += [k for k in c.co_consts if inspect.iscode(k)]
        facts = _facts[code] = (names, attrs, consts)
    return facts


def read_value(holder, key, kind):
    """The value at ``key`` of ``holder`` now (``kind``: 'item' of a dict, 'attr' of an
    object's own ``__dict__``, 'cell' a closure cell, 'list' the items as a tuple), or
    ``MISSING`` where there is none (an empty cell or slot, a deleted key).  'slot': an
    attribute of a class with ``__slots__``."""
    try:
        if kind == 'item':
            return holder.get(key, MISSING)
        if kind == 'cell':
            return holder.cell_contents
        if kind == 'list':
            return tuple(holder)
        if kind == 'slot':
            return getattr(type(holder), key).__get__(holder)
        if kind == 'iterator':
            return holder
        return holder.__dict__.get(key, MISSING)
    except ValueError:  # an empty cell
        return MISSING
    except AttributeError:  # an empty slot
        return MISSING


def same_value(a, b):
    """Equal plain values: of one class, and bit for bit for floats (``-0.0`` is not ``0.0``:
    ``x * -0.0`` has other signs; NaN is NaN)."""
    return a is b or (a.__class__ is b.__class__ and _exact(a) == _exact(b))


def _exact(v):
    """A float's bits (``float.hex``: the sign of zero, NaN equal to NaN), a complex's, a
    tuple's items so; anything else as it is."""
    if isinstance(v, float):
        return v.hex()
    if isinstance(v, complex):
        return (v.real.hex(), v.imag.hex())
    if isinstance(v, (np.floating, np.complexfloating)):
        return v.tobytes()
    if v.__class__ is tuple:
        return tuple(_exact(x) for x in v)
    return v


def same_items(items, traced):
    """A list's items are those of the trace: the same objects, or equal plain values."""
    return len(items) == len(traced) and all(
        a is b or (a.__class__ is b.__class__ and _plain_value(a) and a == b) for a, b in zip(items, traced))


def value_guards(sources, before):
    """The guard entries ``(holder, key, kind, value, description, by_value)``, read after the
    trace: plain values compared by value, objects by identity (see ``value_sources``).
    Raises Unreplayable if the step itself changed one (a replay would not: a counter kept on
    a layer, a global the step assigns).  ``before``: the values read before the trace (one set
    from None during it is a lazy initialisation)."""
    guards = []
    for (holder, key, kind, what, objects), old in zip(sources, before):
        if kind == 'iterator':
            raise Unreplayable(f'the step reads the iterator {what!r} ({type(holder).__name__}: '
                                f'next() on it gives another value at each call, a replay would '
                                f'not call it); pass what it yields as an argument')
        new = read_value(holder, key, kind)
        by_value = _plain_value(new) or new is MISSING
        if not by_value and (objects == 'structure' and not isinstance(new, (Layer, Parameter))):
            continue
        changed = not _holds(kind, old, new, by_value and _plain_value(old))
        if old is not MISSING and old is not None and changed:
            change = 'its items' if kind == 'list' else f'{old!r} -> {new!r}' if by_value else 'another object'
            raise Unreplayable(f'the step changes {what} ({change}), outside its arguments: a '
                                f'replay would not')
        guards.append((holder, key, kind, new, what, by_value))
    return guards


def changed_value(plan):
    """The description of a value guard of ``plan`` that no longer holds, or None."""
    for holder, key, kind, value, what, by_value in getattr(plan, 'value_guards', ()):
        if not _holds(kind, read_value(holder, key, kind), value, by_value):
            return f'{what} ({value!r} when traced)' if by_value or kind == 'list' else f'{what} (another object)'
    return None


def _holds(kind, v, value, by_value):
    """A value read now (``v``) is the traced one: the same object, an equal plain value, a
    list of the same items."""
    if kind == 'list':
        return same_items(v, value)
    return v is value or (by_value and same_value(v, value))


def param_paths(layers):
    """``{id(Parameter): 'path'}`` for naming parameters in the generated code."""
    paths = {}
    for i, layer in enumerate(layers):
        for path, p in layer.named_params():
            paths.setdefault(id(p), path)
    return paths


# =============================================================================
# The signature of a call
# =============================================================================
def _describe(value, keep):
    """A hashable description of one argument; objects described by identity go to ``keep``."""
    if isinstance(value, np.ndarray):
        return ('array', type(value), value.shape, value.dtype.str, value.strides)
    if isinstance(value, Variable):
        d = value.data
        if d is None:
            return ('variable', type(value), None)
        return ('variable', type(value), type(d), d.shape, d.dtype.str, d.strides)
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return ('value', type(value), _exact(value))  # -0.0 and 0.0: two signatures
    if cuda.cp is not None and isinstance(value, cuda.cp.ndarray):  # a GPU array (runs eagerly)
        return ('array', type(value), value.shape, value.dtype.str, value.strides)
    if isinstance(value, (tuple, list)):
        return (type(value).__name__,) + tuple(_describe(v, keep) for v in value)
    keep.append(value)
    return ('object', id(value))


def call_key(args, kwargs, keep):
    """The cache key of a call: its signature (``_describe``) and the Config modes."""
    if not kwargs and all(a.__class__ is np.ndarray for a in args):  # the usual step(x, t)
        return ('arrays',) + tuple((a.shape, a.dtype.str, a.strides) for a in args) + (
            Config.enable_backprop, Config.train)
    return (_describe(args, keep), _describe(tuple(sorted(kwargs.items())), keep),
            Config.enable_backprop, Config.train)


def arg_names(fn, args, kwargs):
    """Readable names for the argument paths: the parameter names of ``fn`` where it has them."""
    try:
        sig = inspect.signature(fn)
        bound = sig.bind(*args, **kwargs)
        names = {}
        pos = 0
        for pname, value in bound.arguments.items():
            kind = sig.parameters[pname].kind
            if kind == inspect.Parameter.VAR_POSITIONAL:
                for j in range(len(value)):
                    names[('args', pos)] = f'{pname}_{j}'
                    pos += 1
            elif kind == inspect.Parameter.VAR_KEYWORD:
                for k in value:
                    names[('kwargs', k)] = k
            elif pname in kwargs:
                names[('kwargs', pname)] = pname
            else:
                names[('args', pos)] = pname
                pos += 1
        return names
    except (TypeError, ValueError):
        return {}
