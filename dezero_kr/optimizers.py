"""Optimizers (``import dezero_kr.optimizers as O``) and their hooks.

``optimizer = SGD(lr=0.1).setup(model)``; after ``loss.backward()`` call
``optimizer.update()``, which

1. counts the step (``optimizer.t``, 1 on the first update),
2. collects the target's parameters that have a gradient, in ``params()`` order,
3. runs every hook on that list (weight decay, clipping, freezing, schedules),
4. updates each parameter whose gradient is still set, in place on ``param.data``.

Hooks run before the final filter, so ``FreezeParam`` (which sets grads to
None) works; in DeZero it crashed the update.  State arrays (momenta, Adam's
``m``/``v``) have the parameter's dtype and device.  They are keyed by
parameter path in ``state_dict()`` / ``save(path)``, so a checkpoint restores
into a freshly built model (``load_state_dict`` / ``load``), and a resumed run
matches an uninterrupted one exactly.  When ``param.data`` is replaced by an
array of another dtype or device the state follows it (another shape raises).

Fused update (``foreach``): every optimizer here writes its rule once, on
arrays (``_rule(p, g, *state)``).  ``update_one`` applies it to one parameter;
by default (``foreach=None`` or ``True``) ``update`` applies it once per group
of parameters of one dtype and array module, gathered into flat buffers
(``_FlatGroup``: values and gradients copied in, one call each, the values
copied back into each ``param.data``, which keeps its identity; the state
lives in the buffers).  The rule is elementwise, so every element goes through
the same IEEE operations as in the loop: the numbers are the same bit for
bit.  ``foreach=False`` keeps the per-parameter loop, and so does any class
that overrides ``update_one`` (DeZero-style optimizers), ``_rule`` or a method
the rule uses (``_rule_parts``).

Learning-rate schedules are hooks too (``WarmupCosine``): they set the
optimizer's learning-rate attribute from ``optimizer.t`` before each update.
For ``Adam``/``AdamW`` that attribute is ``alpha``, the base step size; Adam's
bias correction (the ``lr`` property) multiplies the scheduled value.
"""
import math

import numpy as np

from dezero_kr import cuda
from dezero_kr.core import Parameter, Variable  # noqa: F401 (names DeZero's module has)
from dezero_kr.fileio import NpzReader, check_array_for, existing_npz_path, save_npz
from dezero_kr.hooks import host_operation
from dezero_kr.grad_clip import AdaptiveClipGrad, ClipGradNorm, ClipGradValue, clip_grad_norm  # noqa: F401 (re-exported hooks)
from dezero_kr.optimizer_hooks import ClipGrad, FreezeParam, WarmupCosine, WeightDecay  # noqa: F401 (DeZero's names)


# =============================================================================
# Optimizer
# =============================================================================
class Optimizer:
    """Base class: subclasses implement ``_rule(p, g, *state)`` or, as in DeZero, ``update_one(param)``.

    Class attributes: ``lr_name`` (the attribute a schedule sets, None if
    there is none), ``hyperparams`` (saved in ``state_dict``), ``slots``
    (names of the per-parameter state arrays, in the order ``_rule`` takes them).

    ``foreach`` (keyword only, as PyTorch's): None (the default) updates the
    small parameters (``_flat_max_size`` elements or fewer, where that is
    faster) in flat groups, True every parameter a group can take, False
    keeps the per-parameter loop; the numbers are the same either way (see
    ``fused``).  Anything else raises ``TypeError``.
    """
    lr_name = 'lr'
    hyperparams = ()
    slots = ()
    # the methods the rule is made of besides _rule: one a subclass overrides outside this module
    # (not elementwise, or other first values of the state) makes the class use the loop
    _rule_parts = ('_slot',)
    # foreach=None groups only parameters of at most this many elements, where the copies
    # in and out cost less than the calls they save (measured per class: bench/README.md, tinyadam)
    _flat_max_size = 4096

    def __init__(self, *, foreach=None):
        if foreach is not None and not isinstance(foreach, bool):
            raise TypeError(f'{type(self).__name__}: foreach must be None, True or False, got {foreach!r}')
        self.target = None
        self.hooks = []
        self.t = 0  # number of update() calls
        self._state = {}  # Parameter -> {slot name: array}
        self._state_version = 0  # counts the arrays _slot made: the fused update then checks its views
        self.foreach = foreach
        self._flat = None  # the _FlatPlan of the fused update, built on its first use

    def __getstate__(self):
        """Copies and pickles leave the flat plan behind: its views would not be the copy's arrays."""
        state = dict(self.__dict__)
        state['_flat'] = None
        return state

    def setup(self, target):
        """Optimise ``target``'s parameters (a Layer/Model, or anything with ``params()``); returns self.

        Raises ``TypeError`` naming ``target`` when it has no ``params()`` method.
        """
        if not callable(getattr(target, 'params', None)):
            raise TypeError(f'{type(self).__name__}.setup: target must be a Layer/Model (anything with '
                            f'a params() method), got {target!r} of type {type(target).__name__}')
        self.target = target
        return self

    @property
    def fused(self):
        """Whether ``update`` uses the flat groups: ``foreach`` is not False and the class
        keeps this module's ``update_one``, its own ``_rule`` and the methods that rule uses
        (``_rule_parts``: ``_slot``, AdaGrad's ``_accumulate``, AdamW's ``_adamw_rule``); a
        subclass that overrides one of them, e.g. a DeZero-style ``update_one``, is updated
        parameter by parameter."""
        foreach = getattr(self, 'foreach', None)
        cls = type(self)
        if foreach is False or foreach is None and not cls._flat_max_size or cls._rule is Optimizer._rule \
                or cls.update_one is not Optimizer.update_one or cls._rule.__module__ != __name__:
            return False
        for name in cls._rule_parts:
            if getattr(getattr(cls, name), '__module__', None) != __name__:
                return False
        return True

    @host_operation  # static_graph re-runs the whole update (see dezero_kr.hooks)
    def update(self):
        """One optimisation step: count it (``t += 1``), run the hooks on the parameters that
        have a gradient, then update each parameter whose gradient is still set: one by one
        with ``update_one``, or group by group when ``fused``.

        Raises ``RuntimeError`` if ``setup`` was not called, ``ValueError`` naming the
        parameter if one to update holds a read-only array (before anything changes).
        """
        if self.target is None:
            raise RuntimeError(f'{type(self).__name__}.update: call setup(model) first')
        params = [p for p in self.target.params() if p.grad is not None]
        for p in params:
            if not getattr(p.data.flags, 'writeable', True):
                self._refuse_read_only(p)
        self.t += 1
        for hook in self.hooks:
            hook(params)
        if self.fused:
            self._update_fused(params)
            return
        for param in params:
            if param.grad is not None:  # a hook (FreezeParam) may have removed it
                self.update_one(param)

    def _update_fused(self, params):
        """The fused update of ``params`` (taken before the hooks ran, so the plan stays the
        same when a hook drops a gradient): the groups, then the parameters no group holds."""
        plan, limit = getattr(self, '_flat', None), math.inf if self.foreach else self._flat_max_size
        if plan is None or plan.limit != limit or not plan.knows(params):
            plan = self._flat = _FlatPlan(params, limit, plan)
        params = [p for p in params if p.grad is not None]
        for param in plan.update(self, params) if plan.groups else params:
            self.update_one(param)

    def _path(self, param):
        return next((k for k, q in self._params_by_key().items() if q is param), param.name)

    def _refuse_read_only(self, param):
        raise ValueError(f'{type(self).__name__}.update: parameter {self._path(param)!r} '
                         f'(shape {param.data.shape}) '
                         f'holds a read-only array, which the update cannot change in place; give it '
                         f'a writable copy (param.data = param.data.copy())')

    def update_one(self, param):
        """Update ``param.data`` in place from ``param.grad.data`` (same shape and dtype) by the
        class's ``_rule``, with the parameter's state arrays (zeros on first use)."""
        param.data = self._rule(param.data, param.grad.data, *[self._slot(param, n) for n in self.slots])

    def _rule(self, p, g, *state):
        """The update rule on arrays: change ``p`` and the ``state`` arrays (``slots`` order) in
        place from the gradient ``g``, element by element, and return ``p``.

        Called once per parameter by ``update_one`` and once per flat group by the fused
        update, so it must treat every element alike (no reductions, no shapes).  The base
        class raises ``NotImplementedError``.
        """
        raise NotImplementedError(f'{type(self).__name__}.update_one is not implemented')

    def add_hook(self, f):
        """Run ``f(params)`` before every update; a hook with ``attach(optimizer)`` is told its
        optimizer."""
        attach = getattr(f, 'attach', None)
        if callable(attach):
            attach(self)
        self.hooks.append(f)

    def _slot(self, param, name):
        """The state array ``name`` of ``param``: zeros like ``param.data`` on first use, else
        the array kept, in the parameter's dtype and array module (``_conformed``)."""
        state = self._state.get(param)
        if state is None:
            state = self._state[param] = {}
        a = state.get(name)
        if a is None:
            a = state[name] = cuda.get_array_module(param.data).zeros_like(param.data)
            self._state_version += 1
            return a
        data = param.data
        if a.dtype is not data.dtype or a.shape != data.shape or a.__class__ is not data.__class__:
            # (``is not`` on the dtypes: NumPy's are singletons, an equal other one is kept below)
            b = self._conformed(param, name, a)
            if b is not a:
                a = state[name] = b
                self._state_version += 1
        return a

    def _conformed(self, param, name, a):
        """State array ``a`` of ``param`` converted to its dtype and array module, which change
        when ``param.data`` is replaced (``astype``, a device move), as the fused groups do.
        Another shape raises ``ValueError`` naming the parameter: the state cannot follow it."""
        data = param.data
        if a.shape != data.shape:
            raise ValueError(f'{type(self).__name__}.update: parameter {self._path(param)!r} has shape '
                             f'{data.shape} but its state {name!r} has shape {a.shape} (its array was '
                             f'replaced by one of another shape); use a new optimizer for it')
        xp = cuda.get_array_module(data)
        if cuda.get_array_module(a) is not xp:
            a = cuda.as_numpy(a) if xp is np else xp.asarray(a)
        return a if a.dtype == data.dtype else a.astype(data.dtype)

    # --- saving and restoring state -----------------------------------------------
    def _params_by_key(self):
        """``{path: Parameter}`` of the target (``named_params``), or ``{'0': p, ...}`` by position.

        Two parameters on one path (``Layer._params_by_path``) raise ``ValueError`` naming both:
        one key could hold the state of only one of them.
        """
        if hasattr(self.target, '_params_by_path'):
            return self.target._params_by_path(f'{type(self).__name__} state')
        if hasattr(self.target, 'named_params'):
            return dict(self.target.named_params())
        return {str(i): p for i, p in enumerate(self.target.params())}

    def state_dict(self):
        """``{'t', 'hyperparams': {name: value}, 'state': {param path: {slot: ndarray}}}`` (host copies)."""
        if self.target is None:
            raise RuntimeError(f'{type(self).__name__}.state_dict: call setup(model) first')
        state = {}
        for key, param in self._params_by_key().items():
            slots = self._state.get(param)
            if slots:
                state[key] = {name: np.array(cuda.as_numpy(a)) for name, a in slots.items()}
        return {'t': self.t, 'hyperparams': {n: getattr(self, n) for n in self.hyperparams},
                'state': state}

    def load_state_dict(self, d):
        """Restore what ``state_dict`` returned, into this optimizer's (possibly new) target.

        All or nothing: everything is checked first (unknown parameter paths,
        slot names or hyper-parameters, shapes, and each array's conversion to
        its parameter's dtype, see ``fileio.check_array_for``: no strings,
        objects, complex into real or overflow) and raises ``ValueError``
        naming the key; only then are ``t``, the hyper-parameters and the
        state replaced.
        """
        what = f'{type(self).__name__}.load_state_dict'
        if self.target is None:
            raise RuntimeError(f'{what}: call setup(model) first')
        new_state = self._checked_state(d['state'], what)
        hyper = self._checked_hyperparams(d.get('hyperparams', {}), what)
        t = _real_scalar(d['t'], what, 't')
        if t != int(t) or t < 0:
            raise ValueError(f'{what}: t must be a whole number >= 0, got {d["t"]!r}')
        self.t = int(t)
        for name, value in hyper.items():
            setattr(self, name, value)
        self._state = new_state

    def _checked_state(self, state, what):
        """``{Parameter: {slot: array}}`` from ``{param path: {slot: array}}``, every entry checked."""
        params = self._params_by_key()
        new_state = {}
        for key, slots in state.items():
            param = params.get(key)
            if param is None:
                raise ValueError(f'{what}: the state has parameter {key!r}, which the target does not '
                                 f'have (its parameters: {list(params)})')
            if param.data is None:
                raise ValueError(f'{what}: parameter {key!r} is not initialised yet; run the model once')
            new_state[param] = {}
            xp = cuda.get_array_module(param.data)
            for name, a in slots.items():
                if name not in self.slots:
                    raise ValueError(f'{what}: unknown state {name!r} for parameter {key!r} '
                                     f'({type(self).__name__} keeps {list(self.slots)})')
                a = check_array_for(a, param.data.dtype, param.data.shape, what, f'{key}/{name}', 'the state')
                new_state[param][name] = xp.asarray(a)
        return new_state

    def _checked_hyperparams(self, hyperparams, what):
        """``{name: float}`` from the saved hyper-parameters; unknown names or non-real values raise."""
        hyper = {}
        for name, value in hyperparams.items():
            if name not in self.hyperparams:
                raise ValueError(f'{what}: unknown hyperparameter {name!r} for {type(self).__name__} '
                                 f'(it has {list(self.hyperparams)})')
            hyper[name] = _real_scalar(value, what, f'hyperparams/{name}')
        return hyper

    def save(self, path):
        """Write ``state_dict()`` to an ``.npz`` file atomically (plain arrays: no pickle).

        As ``Layer.save_weights`` (``fileio.atomic_write``): an existing file
        keeps its mode and owner, a symbolic link is written through, and a
        FIFO, device or directory at ``path`` is refused (``FileExistsError``,
        ``IsADirectoryError``).
        """
        d = self.state_dict()
        arrays = {'optimizer': np.array(type(self).__name__), 't': np.array(d['t'])}
        for name, value in d['hyperparams'].items():
            arrays[f'hyperparams/{name}'] = np.array(value)
        for key, slots in d['state'].items():
            for name, a in slots.items():
                arrays[f'state/{key}/{name}'] = a
        save_npz(path, arrays, what=f'{type(self).__name__}.save')

    def load(self, path):
        """Restore a file written by ``save`` (never unpickles); all or nothing, as ``load_state_dict``.

        ``path`` is taken as ``save`` was given it (``.npz`` appended when only
        that file exists, ``FileExistsError`` when both do; see
        ``fileio.existing_npz_path``).  Every entry name and shape is checked
        from the file's headers before any data is read (``fileio.NpzReader``):
        an unknown entry, parameter or slot, a ``state/`` entry that is not
        ``state/<parameter path>/<slot>``, or a shape that differs from the
        parameter's (``()`` for ``t`` and hyper-parameters) raise
        ``ValueError`` naming the file and the entry, so a small hostile file
        cannot take gigabytes.
        """
        what = f'{type(self).__name__}.load'
        if self.target is None:
            raise RuntimeError(f'{what}: call setup(model) first')
        path = existing_npz_path(path, what)
        with NpzReader(path, what) as npz:
            kind = _stored_kind(npz)
            if kind != type(self).__name__:
                raise ValueError(f'{what}: {path} holds the state of {kind}, not {type(self).__name__}')
            shapes = self._expected_shapes(npz.keys(), path, what)
            for name, shape in shapes.items():
                stored_shape, dtype = npz.header(name)
                if stored_shape != shape:
                    label = name[len('state/'):] if name.startswith('state/') else name
                    raise ValueError(f'{what}: {label!r} has shape {stored_shape} and dtype {dtype} in {path} '
                                     f'but {"the parameter has" if label != name else "it should have"} '
                                     f'shape {shape}: the shapes differ')
            if 't' not in shapes:
                raise ValueError(f'{what}: {path} has no step count t')
            d = {'t': npz.read('t'), 'hyperparams': {}, 'state': {}}
            for name in shapes:
                if name.startswith('hyperparams/'):
                    d['hyperparams'][name.split('/', 1)[1]] = npz.read(name)
                elif name.startswith('state/'):
                    key, slot = name[len('state/'):].rsplit('/', 1)
                    d['state'].setdefault(key, {})[slot] = npz.read(name)
        self.load_state_dict(d)

    def _expected_shapes(self, names, path, what):
        """``{entry: shape}`` for the entries of a saved file; a name ``save`` never writes raises."""
        params = self._params_by_key()
        shapes = {}
        for name in names:
            if name in ('optimizer', 't') or name.startswith('hyperparams/') and \
                    name.split('/', 1)[1] in self.hyperparams:
                shapes[name] = ()
                continue
            key, _, slot = name[len('state/'):].rpartition('/')
            if not name.startswith('state/') or not key or slot not in self.slots or key not in params:
                raise ValueError(f'{what}: {path} has an unexpected entry {name!r} ({type(self).__name__} '
                                 f'saves optimizer, t, hyperparams/<{"|".join(self.hyperparams)}> and '
                                 f'state/<parameter path>/<{"|".join(self.slots)}> for the parameters '
                                 f'{list(params)})')
            if params[key].data is None:
                raise ValueError(f'{what}: parameter {key!r} is not initialised yet; run the model once')
            shapes[name] = params[key].data.shape
        return shapes


def _stored_kind(npz):
    """The optimizer class name a saved file holds (its ``optimizer`` entry), or None.

    Read only when the header says it is one short string: a hostile entry is never decompressed.
    """
    if 'optimizer' not in npz.keys():
        return None
    shape, dtype = npz.header('optimizer')
    if shape != () or dtype.kind != 'U' or dtype.itemsize > 400:
        return None
    return str(npz.read('optimizer'))


def _real_scalar(value, what, key):
    """``value`` as a Python float if it is one real number (not a string, bool array, complex)."""
    a = np.asarray(value)
    if a.ndim != 0 or a.dtype.kind not in 'iuf' and not isinstance(value, (int, float)):
        raise ValueError(f'{what}: {key} must be one real number, got {value!r} '
                         f'({a.dtype} {a.shape})')
    v = float(a)
    if not np.isfinite(v):
        raise ValueError(f'{what}: {key} must be finite, got {v}')
    return v


# =============================================================================
# The fused update: values and gradients gathered into flat buffers, the state kept there
# =============================================================================
# A few NumPy calls per group instead of a few per parameter: Adam over a 32-32-10 MLP's six
# float32 parameters takes 43 us per update in the loop, 22.5 us fused (python -m bench tinyadam).
_FLAT_GROUP_SIZE = 1 << 15  # elements: larger groups split, so that their buffers stay in cache


class _FlatPlan:
    """Which parameters the fused update holds in flat groups (``_FlatGroup``) and which it
    leaves to ``update_one``.

    ``known`` maps each parameter the plan was made for to its ``.data`` then; ``knows``
    checks those identities, so a parameter added to the model or one whose array was
    replaced (``load_weights``, ``p.data = ...``, a device move) makes the optimizer build
    a new plan (groups, memory-sharing check) before the update.
    """
    __slots__ = ('known', 'groups', 'where', 'limit')

    def __init__(self, params, limit, old=None):
        params = list(dict.fromkeys([*old.known, *params] if old is not None else params))
        by_key = {}
        for p in _flat_candidates(params, limit):
            chunks = by_key.setdefault((p.data.dtype, cuda.get_array_module(p.data)), [[]])
            if chunks[-1] and sum(q.data.size for q in chunks[-1]) + p.data.size > _FLAT_GROUP_SIZE:
                chunks.append([])
            chunks[-1].append(p)
        self.groups = [_FlatGroup(ps, xp) for (_, xp), chunks in by_key.items() for ps in chunks]
        self.limit = limit
        self.where = {p: (g, i) for g in self.groups for i, p in enumerate(g.params)}
        self.known = {p: p.data for p in params}

    def knows(self, params):
        """Whether every parameter of ``params`` still holds the array the plan saw."""
        known = self.known
        for p in params:
            if known.get(p, _UNSEEN) is not p.data:
                return False
        return True

    def update(self, opt, params):
        """Apply ``opt._rule`` to the grouped ``params`` whose gradient fits their group;
        return the others (in order) for ``update_one``."""
        if len(set(params)) < len(params):
            return params  # a parameter listed twice is updated twice, as the loop does
        loose, chosen, where = [], {}, self.where
        for p in params:
            place = where.get(p)
            if place is not None and place[0].takes(place[1], p.grad.data):
                chosen.setdefault(place[0], []).append(place[1])
            else:
                loose.append(p)
        for group, indices in chosen.items():
            group.update(opt, indices)
        return loose


_UNSEEN = object()  # not a parameter the plan was made for


def _flat_candidates(params, limit):
    """The parameters a flat group may take over: ``.data`` exactly an ndarray of its array
    module (not a subclass such as a memmap), floating point, writeable, at most ``limit``
    elements, and sharing no memory with another parameter's array (tied arrays must be
    updated one after the other, as the loop does)."""
    arrays = [p.data for p in params]
    ok = [_flattenable(a, limit) for a in arrays]
    for i, a in enumerate(arrays):
        for j in range(i + 1, len(arrays)):
            if (ok[i] or ok[j]) and _may_overlap(a, arrays[j]):
                ok[i] = ok[j] = False
    return [p for p, good in zip(params, ok) if good]


def _flattenable(a, limit):
    xp = cuda.get_array_module(a)
    return type(a) is xp.ndarray and a.dtype.kind == 'f' and a.size <= limit \
        and getattr(a.flags, 'writeable', True)  # CuPy's flags have no writeable


def _may_overlap(a, b):
    xp = cuda.get_array_module(a)
    if not isinstance(a, xp.ndarray) or not isinstance(b, xp.ndarray):
        return False  # not both arrays of one module: a None, or a host and a device array
    return bool(xp.may_share_memory(a, b))


def _runs(indices):
    """``[(start, stop), ...]``: the runs of consecutive numbers in sorted ``indices``."""
    runs, start = [], indices[0]
    for prev, i in zip(indices, indices[1:]):
        if i != prev + 1:
            runs.append((start, prev + 1))
            start = i
    runs.append((start, indices[-1] + 1))
    return runs


class _FlatGroup:
    """Parameters of one dtype and array module, updated together in flat buffers: one for
    their values, one for their gradients, one per state slot.

    Each update copies the members' ``.data`` in and the results back (in place: ``.data``
    keeps its identity, as in the loop).  The state views replace the optimizer's state
    arrays of a parameter on its first fused update (copied from them, or zeros where there
    are none, as ``_slot`` gives).
    """
    __slots__ = ('params', 'shapes', 'offsets', 'flat', 'grad', 'state', 'views', 'values', 'grads', 'xp',
                 'synced')

    def __init__(self, params, xp):
        self.params, self.xp = params, xp
        self.shapes = [p.data.shape for p in params]
        self.offsets = [0]
        for p in params:
            self.offsets.append(self.offsets[-1] + p.data.size)
        dtype, total = params[0].data.dtype, self.offsets[-1]
        self.flat, self.grad = xp.empty(total, dtype), xp.empty(total, dtype)
        self.state, self.views = {}, [{} for _ in params]
        self.synced = (None, None)  # (the optimizer's state dict, (_state_version, its length)) the views match
        self.values = [self._view(self.flat, i) for i in range(len(params))]
        self.grads = [self._view(self.grad, i) for i in range(len(params))]

    def _view(self, flat, i):
        return flat[self.offsets[i]:self.offsets[i + 1]].reshape(self.shapes[i])

    def takes(self, i, g):
        """Whether gradient ``g`` can be copied into member ``i``'s place unchanged
        (the loop would otherwise promote, broadcast or refuse it)."""
        return type(g) is self.flat.__class__ and g.dtype == self.flat.dtype and g.shape == self.shapes[i]

    def update(self, opt, indices):
        """Apply ``opt._rule`` to the members ``indices`` (ascending), one call per run of
        neighbours: copy their values and gradients into their views of the buffers, update
        the slices, copy the values back."""
        runs = [(0, len(self.params))] if len(indices) == len(self.params) else _runs(sorted(indices))
        for a, b in runs:
            lo, hi = self.offsets[a], self.offsets[b]
            whole = (lo, hi) == (0, self.offsets[-1])  # the buffers themselves: no slices to make
            flat, grad = (self.flat, self.grad) if whole else (self.flat[lo:hi], self.grad[lo:hi])
            self._sync_state(opt, a, b)
            members = list(zip(self.params[a:b], self.values[a:b], self.grads[a:b]))
            # one copy per array into its view: half the time of np.concatenate(axis=None, out=)
            # over the same arrays (2.8 against 1.5 us for tinyadam's six, measured)
            for p, value, g in members:
                value[...] = p.data
                g[...] = p.grad.data
            opt._rule(flat, grad, *[self.state[n] if whole else self.state[n][lo:hi] for n in opt.slots])
            for p, value, _ in members:
                p.data[...] = value

    def _sync_state(self, opt, a, b):
        """Make members a..b-1's state arrays in ``opt._state`` views of the flat state buffers:
        values copied from the arrays there (loaded, or made by ``update_one``), zeros where
        there are none (as ``_slot`` gives).  Skipped while the optimizer's state is the one
        the views were made for (the same dict, as long, no array made by ``_slot`` since)."""
        state, version = opt._state, (opt._state_version, len(opt._state))
        if self.synced[0] is state and self.synced[1] == version and (a, b) == (0, len(self.params)):
            return
        for i in range(a, b):
            slots, views = state.get(self.params[i]), self.views[i]
            if slots is None:
                slots = state[self.params[i]] = {}
            for name in opt.slots:
                if slots.get(name) is None or slots[name] is not views.get(name):
                    self._install(opt, name, i, slots)
        if (a, b) == (0, len(self.params)):
            self.synced = (state, version)

    def _install(self, opt, name, i, slots):
        buf = self.state.get(name)
        if buf is None:
            buf = self.state[name] = self.xp.zeros_like(self.flat)
        view = self.views[i][name] = self._view(buf, i)
        current = slots.get(name)
        view[...] = 0 if current is None else opt._conformed(self.params[i], name, current)
        slots[name] = view


# =============================================================================
# Optimizers
# =============================================================================
class SGD(Optimizer):
    """Plain gradient descent: param <- param - lr * grad (in place, in the parameter's dtype).

    ``lr`` (default 0.01) is the step size; no state.
    """
    hyperparams = ('lr',)
    _flat_max_size = 0  # two calls per parameter: the copies in and out cost more (foreach=True still groups)

    def __init__(self, lr=0.01, *, foreach=None):
        super().__init__(foreach=foreach)
        self.lr = lr

    def _rule(self, p, g):
        p -= self.lr * g
        return p


class MomentumSGD(Optimizer):
    """Momentum: v <- momentum v - lr grad;  param <- param + v.

    Defaults ``lr=0.01``, ``momentum=0.9``; state ``v`` (zeros like the
    parameter on its first update).
    """
    hyperparams = ('lr', 'momentum')
    slots = ('v',)
    _flat_max_size = 1024

    def __init__(self, lr=0.01, momentum=0.9, *, foreach=None):
        super().__init__(foreach=foreach)
        self.lr = lr
        self.momentum = momentum

    def _rule(self, p, g, v):
        v *= self.momentum
        v -= self.lr * g
        p += v
        return p


class AdaGrad(Optimizer):
    """AdaGrad: h <- h + grad^2;  param <- param - lr grad / (sqrt(h) + eps).

    Defaults ``lr=0.001``, ``eps=1e-8``; state ``h`` (zeros like the parameter).
    """
    hyperparams = ('lr', 'eps')
    slots = ('h',)
    _rule_parts = Optimizer._rule_parts + ('_accumulate',)

    def __init__(self, lr=0.001, eps=1e-8, *, foreach=None):
        super().__init__(foreach=foreach)
        self.lr = lr
        self.eps = eps

    def _accumulate(self, h, g):
        h += g * g

    def _rule(self, p, g, acc):
        xp = cuda.get_array_module(p)
        self._accumulate(acc, g)
        p -= self.lr * g / (xp.sqrt(acc) + self.eps)
        return p


class AdaDelta(Optimizer):
    """AdaDelta (Zeiler): msg <- rho msg + (1-rho) g^2;  dx = sqrt((msdx+eps)/(msg+eps)) g;
    msdx <- rho msdx + (1-rho) dx^2;  param <- param - dx.

    Defaults ``rho=0.95``, ``eps=1e-6``; state ``msg``, ``msdx``.  There is
    no learning rate (``lr_name`` is None), so a schedule cannot attach.
    """
    lr_name = None
    hyperparams = ('rho', 'eps')
    slots = ('msg', 'msdx')

    def __init__(self, rho=0.95, eps=1e-6, *, foreach=None):
        super().__init__(foreach=foreach)
        self.rho = rho
        self.eps = eps

    def _rule(self, p, g, msg, msdx):
        xp = cuda.get_array_module(p)
        msg *= self.rho
        msg += (1 - self.rho) * g * g
        dx = xp.sqrt((msdx + self.eps) / (msg + self.eps)) * g
        msdx *= self.rho
        msdx += (1 - self.rho) * dx * dx
        p -= dx
        return p


class RMSprop(AdaGrad):
    """AdaGrad with a leaky average: v <- alpha v + (1-alpha) g^2;
    param <- param - lr g / (sqrt(v) + eps).

    Defaults ``lr=0.01``, ``alpha=0.99``, ``eps=1e-8`` (PyTorch's); state ``v``.
    """
    hyperparams = ('lr', 'alpha', 'eps')
    slots = ('v',)

    def __init__(self, lr=0.01, alpha=0.99, eps=1e-8, *, foreach=None):
        super().__init__(lr, eps, foreach=foreach)
        self.alpha = alpha

    def _accumulate(self, v, g):
        v *= self.alpha
        v += (1 - self.alpha) * g * g


class Adam(Optimizer):
    """Adam (Kingma & Ba): m <- m + (1-b1)(g-m), v <- v + (1-b2)(g^2-v), param -= lr m / (sqrt(v) + eps).

    ``lr`` is the bias-corrected step size ``alpha sqrt(1 - b2^t) / (1 - b1^t)`` at step ``t``,
    so ``eps`` is added outside the bias correction, as in DeZero (``AdamW``
    adds it inside, as PyTorch does).  Defaults ``alpha=0.001``,
    ``beta1=0.9``, ``beta2=0.999``, ``eps=1e-8``; state ``m``, ``v``.
    """
    lr_name = 'alpha'
    hyperparams = ('alpha', 'beta1', 'beta2', 'eps')
    slots = ('m', 'v')

    def __init__(self, alpha=0.001, beta1=0.9, beta2=0.999, eps=1e-8, *, foreach=None):
        super().__init__(foreach=foreach)
        self.alpha = alpha
        self.beta1 = beta1
        self.beta2 = beta2
        self.eps = eps

    @property
    def lr(self):
        """``alpha sqrt(1 - beta2^t) / (1 - beta1^t)`` (a float); before the first update, for t = 1."""
        t = max(self.t, 1)  # before the first update: the value the first step will use
        return self.alpha * math.sqrt(1 - self.beta2 ** t) / (1 - self.beta1 ** t)

    def _rule(self, p, g, m, v):
        xp = cuda.get_array_module(p)
        m += (1 - self.beta1) * (g - m)
        v += (1 - self.beta2) * (g * g - v)
        step = xp.sqrt(v)
        step += self.eps
        p -= self.lr * (m / step)
        return p


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter), step for step ``torch.optim.AdamW``.

    At update ``t`` with ``lr = alpha`` and ``wd = weight_decay``::

        param <- param (1 - lr wd)    # decay first, not through the gradient
        m <- m + (1 - b1)(g - m)      # torch: exp_avg.lerp_(g, 1 - b1)
        v <- b2 v + (1 - b2) g^2
        param <- param - (lr / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) + eps)

    ``eps`` is added *after* the bias correction of ``v`` (PyTorch's
    placement), unlike ``Adam``, which keeps DeZero's ``lr_t m / (sqrt(v) +
    eps)``; the two differ when ``sqrt(v_hat)`` is not much larger than
    ``eps``.  With ``weight_decay=0`` this is ``torch.optim.Adam``.  ``lr``
    (the property) is still Adam's combined factor and is not what AdamW
    uses; schedules set ``alpha``.  State ``m``, ``v`` has the parameter's
    dtype.  ``t`` is the optimizer's update count, as for every optimizer
    here; PyTorch counts steps per parameter, so the two differ only for a
    parameter that had no gradient on some updates (it was skipped there).
    """
    hyperparams = Adam.hyperparams + ('weight_decay',)
    _rule_parts = Adam._rule_parts + ('_adamw_rule',)

    def __init__(self, alpha=0.001, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01, *, foreach=None):
        super().__init__(alpha, beta1, beta2, eps, foreach=foreach)
        self.weight_decay = weight_decay

    def _rule(self, p, g, m, v):
        return self._adamw_rule(p, g, m, v, self.weight_decay)

    def _adamw_step(self, param, weight_decay):
        """One torch-AdamW update of ``param`` with this ``weight_decay`` (0: no decay, e.g. for biases)."""
        param.data = self._adamw_rule(param.data, param.grad.data, self._slot(param, 'm'),
                                      self._slot(param, 'v'), weight_decay)

    def _adamw_rule(self, p, g, m, v, weight_decay):
        xp = cuda.get_array_module(p)
        if weight_decay:
            p *= 1 - self.alpha * weight_decay
        m += (1 - self.beta1) * (g - m)
        v *= self.beta2
        v += (1 - self.beta2) * (g * g)
        t = max(self.t, 1)
        denom = xp.sqrt(v)
        denom /= math.sqrt(1 - self.beta2 ** t)
        denom += self.eps
        p -= (self.alpha / (1 - self.beta1 ** t)) * (m / denom)
        return p
