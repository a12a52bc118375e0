"""The plan: the generated straight-line code of one traced signature, its guards and its run.

``Plan`` walks a ``Tracer``'s recording once: each operation becomes a call
of the plan's copy of the Function (``forward`` on the arrays; in a backward
pass its ``backward``, the engine's own rule, and the engine's accumulation
of gradients), each object the code needs a name in its namespace
(``naming.Names``).  No rule is written out again: the replay runs each
operation's own kernel, looked up on its class at every replay.
``Eager`` stands for a signature that runs eagerly.
"""
import weakref

import numpy as np

from dezero_kr import core, modes, reverse_pass
from dezero_kr import hooks as _hooks
from dezero_kr.core import Config, Parameter, Variable
from dezero_kr.define_and_run.shared import MISSING, Unreplayable
from dezero_kr.define_and_run.traced_arrays import (
    Traced, host_leaves, rebuilt, traced_base, untraced)
from dezero_kr.define_and_run.recording import arrays_in, copy_function, init_names, slot_names
from dezero_kr.define_and_run.guards import (
    arg_names, param_paths, read_value, same_items, same_value, state_slots, value_guards)
from dezero_kr.define_and_run.naming import (
    Names, attribute_source, compiled, identifier, set_attribute_source)


# =============================================================================
# The plan: generated straight-line code
# =============================================================================
class Eager:
    """A signature whose step runs eagerly (``reason`` says why)."""
    eager = True

    def __init__(self, reason):
        self.reason = reason

    def guard(self, args, kwargs):
        """Always holds: an eager signature stays eager."""
        return True


def _get_path(args, kwargs, path):
    value = args if path[0] == 'args' else kwargs
    for k in path[1:]:
        value = value[k]
    return value


class Plan:
    """The replay of one traced signature: generated source, its namespace, guards and result.

    Built from a ``Tracer`` by walking its recording once (``_emit_*``): each
    event becomes lines of the generated function, each object it needs a
    name in its namespace (``Names``).
    """
    eager = False
    reason = None
    confirmed = False

    def __init__(self, tracer, result, keep_buffers=False):
        rec = tracer.rec
        self.keep_buffers = keep_buffers
        if rec.reason is not None:
            raise Unreplayable(rec.reason)
        self.names = Names()
        self.fn_name = identifier(getattr(tracer.fn, '__name__', 'step'))  # a lambda: 'lambda_'
        self.arg_names = arg_names(tracer.fn, tracer.args, tracer.kwargs)
        self.paths = param_paths(tracer.layers)
        self.data_owner = dict(tracer.traced)  # id(array) -> Parameter whose .data it is
        self.data_owner.update({id(p.data): p for p in tracer.params.values() if p.data is not None})
        self.arg_arrays = tracer.arg_arrays
        self.arg_views = {id(t): path for path, t, v in tracer.arg_arrays if t is not None}
        self.arg_vars = {id(v): path for path, t, v in tracer.arg_arrays if t is None}
        self.state_ids = {id(v): key for key, v in tracer.state_before.items() if v is not None}
        self.lines = []        # the body of the generated function
        self.arg_paths = []    # [(local name, path)]: the generated function's parameters
        self.local_of_path = {}
        self.param_guards = []
        self.state_guards = []
        self.value_guards = value_guards(tracer.value_sources, tracer.values_before)
        # The RNG moves for a lazy initialisation are not replayed, and could hide a draw by the
        # step's own code (np.random.seed in the step): the next call traces again to confirm.
        self.lazy_initialized = rec.lazy_seen
        self.inplace = []      # (function, attribute) forward changes in place: restored on error
        self.cached = []       # (function, attribute) that forward sets again at every call
        self.nodes_dot = []
        # Arrays built outside operations and kept as constants (a mask, positions, smoothed
        # labels made by NumPy): the next call traces again and compares them (see StaticGraph).
        self.frozen = []
        self.var_name = {}     # id(traced Variable) -> name of the plan's own Variable
        self.own_vars = {}     # id(traced output Variable) -> the plan's Variable
        self.state_reads = {}
        self.funcs = {}        # id(traced Function) -> the plan's copy
        self.host_values = {}  # id(a host operation's Traced result) -> its expression
        emit = {'node': self._emit_node, 'clear': self._emit_clear, 'host': self._emit_host,
                'pass': self._emit_pass}
        for event in rec.events:
            emit[event[0]](*event[1:])
        self._emit_state(tracer.state_before, state_slots(tracer.layers))
        self._emit_result(result)
        # A constant array kept on a layer (``layer.scale``) is guarded by identity too (the
        # other objects of a layer are its state, not guarded): another array there retraces.
        frozen = {id(a) for _, a in self.frozen}
        self.value_guards += [(h, key, k, v, what, False)
                              for h, key, k, what, objects in tracer.value_sources
                              if objects == 'structure'
                              for v in (read_value(h, key, k),) if id(v) in frozen]
        # what guard() reads: (a dict, key, value), the dict being an object's __dict__ or the
        # globals; closure cells apart.  ~50 ns an entry (51 entries for microgpt's step)
        self.dict_checks = [(h if k == 'item' else h.__dict__, key, v, by_value)
                            for h, key, k, v, _, by_value in self.value_guards if k in ('item', 'attr')]
        self.list_checks = [(h, v) for h, _, k, v, _, _ in self.value_guards if k == 'list']
        self.cell_checks = [(h, v, by_value) for h, _, k, v, _, by_value in self.value_guards
                            if k == 'cell']
        self.slot_checks = [(h, key, v, by_value) for h, key, k, v, _, by_value in self.value_guards
                            if k == 'slot']
        self.source = self._source()
        paths = [path for _, path in self.arg_paths]
        self.positional = len(paths) if paths == [('args', i) for i in range(len(paths))] else None
        scope = {}
        exec(compiled(self.source, self.fn_name), self.names.ns, scope)
        self._replay = scope[self.fn_name]
        self.keep = None

    # --- names of arguments, parameters and arrays ---------------------------------
    def _arg_local(self, path):
        if path not in self.local_of_path:
            hint = self.arg_names.get(path[:2], '_'.join(map(str, path[1:])))
            if len(path) > 2:
                hint += '_' + '_'.join(map(str, path[2:]))
            self.local_of_path[path] = self.names.local(hint)
            self.arg_paths.append((self.local_of_path[path], path))
        return self.local_of_path[path]

    def _param_name(self, p):
        if id(p) not in self.names.by_id:
            self.param_guards.append((p, type(untraced(p.data)), p.data.shape, p.data.dtype))
        return self.names.add(p, self.paths.get(id(p), p.name or 'param'))

    def _array_binding(self, a):
        """An argument's or a parameter's array as an expression, or None for a constant."""
        if id(a) in self.arg_views:
            return self._arg_local(self.arg_views[id(a)])
        origin = getattr(a, '_from', None)  # the user's own call (``t.reshape(-1)``): made again
        source = self._array_binding(origin[0]) if origin is not None else None
        if source is None:
            return self._memory_binding(a)
        _, op, op_args, op_kwargs = origin
        parts = [self._literal(v) for v in op_args] + [f'{k}={self._literal(v)}'
                                                       for k, v in op_kwargs.items()]
        return f'{source}.{op}({", ".join(parts)})'

    def _memory_binding(self, a):
        """``a`` as (a view of) an argument's memory or a parameter's array; else None."""
        bound = self._arg_memory(a)
        if bound is not None:
            return bound
        p = self.data_owner.get(id(a))
        return f'{self._param_name(p)}.data' if p is not None else None

    def _arg_memory(self, a):
        """``a`` if it is (a view of) an argument's memory, as an expression; else None."""
        for path, t, v in self.arg_arrays:
            if t is None or not np.shares_memory(a, t):
                continue
            if (a.shape == t.shape and a.strides == t.strides and a.dtype == t.dtype
                    and a.__array_interface__['data'][0] == t.__array_interface__['data'][0]):
                return self._arg_local(path)
            return self._arg_view(a, t, self._arg_local(path))
        return None

    def _input_name(self, x, node):
        """The name of an operation's input in the generated code (made on first use)."""
        if id(x) in self.var_name:
            return self.var_name[id(x)]
        if id(x) in self.arg_vars:
            name = self.var_name[id(x)] = self._arg_local(self.arg_vars[id(x)])
            return name
        if isinstance(x, Parameter):
            return self._param_name(x)
        if id(x) in self.state_ids:
            return self._state_input(x)
        data = traced_base(x.data)
        bound = self._array_binding(data) if isinstance(data, np.ndarray) else None
        if bound is not None:
            name = self.var_name[id(x)] = self.names.add(type(x)(None), 'const')
            self.lines.append(f'{name}.data = {bound}')
            return name
        if isinstance(data, Traced):
            where = f'{type(node.f).__name__} at {node.line}' if node else 'a backward rule'
            raise Unreplayable(f"an array computed from the step's values outside an operation "
                                f'(host NumPy code) is an input of {where}: a replay would keep '
                                f'the traced value')
        name = self.var_name[id(x)] = self.names.add(x, (x.name or 'const'))
        if isinstance(x.data, np.ndarray) and node is not None:
            self.frozen.append((f'an input of {type(node.f).__name__} at {node.line}', x.data))
        return name

    def _state_input(self, x):
        """A layer's state Variable (an RNN's h) read fresh from the layer at every call."""
        layer, attr = self.state_ids[id(x)]
        lname = self.names.add(layer, type(layer).__name__.lower())
        name = self.var_name[id(x)] = self.names.add(Variable(None), f'{lname}_{attr}_in')
        self.state_reads[(layer, attr)] = name
        self.state_guards.append((layer, attr, type(untraced(x.data)), x.data.shape, x.data.dtype))
        self.lines.append(f'{name}.data = {attribute_source(lname, attr)}.data; {name}.grad = None  # state read fresh')
        return name

    # --- one line (or a few) per recorded event ---------------------------------------
    def _emit_node(self, node):
        f = node.f
        cls = type(f).__name__
        g = self.funcs[id(f)] = copy_function(f)  # the traced graph stays the user's
        fname = self.names.add(g, cls)
        ins = [self._input_name(x, node) for x in node.inputs]
        self._bind_attrs(node, g, fname)
        outs = []
        for k, y in enumerate(node.outputs):
            own = self.own_vars[id(y)] = Variable(None)
            outs.append(self.names.add(own, cls.lower() if len(node.outputs) == 1 else f'{cls.lower()}{k}'))
            self.var_name[id(y)] = outs[-1]
        g.inputs = tuple(self.names.ns.get(n) for n in ins)
        if any(x is None for x in g.inputs):  # arguments given as Variables: set per call
            self.lines.append(f'{fname}.inputs = ({", ".join(ins)},)')
        # no outputs are recorded under no_grad: one output is then a single one
        single = len(outs) == 1 and getattr(f, 'outputs', None).__class__ in (core.OutputRef, type(None))
        if single:
            g.outputs = core.OutputRef(self.names.ns[outs[0]])
        else:
            g.outputs = tuple(weakref.ref(self.names.ns[o]) for o in outs)
        self._forward_lines(node, g, fname, ins, outs, single)
        self.nodes_dot.append((fname, cls, ins, outs))

    def _forward_lines(self, node, g, fname, ins, outs, single):
        call = f'{fname}.forward({", ".join(f"{n}.data" for n in ins)})'
        tag = '  # draws random numbers' if node.draws else ''
        if single and node.outputs[0].data.ndim:  # an array (0-d: maybe a NumPy scalar)
            self.lines.append(f'{outs[0]}.data = {call}{tag}')
        elif single:
            self.lines.append(f'{outs[0]}.data = as_array({call}){tag}')
        else:
            tmp = self.names.local('ys')
            self.lines.append(f'{tmp} = {call}{tag}')
            self.lines += [f'{o}.data = as_array({tmp}[{k}])' for k, o in enumerate(outs)]

    def _emit_clear(self, var):
        if isinstance(var, Parameter):
            name = self._param_name(var)
        else:
            name = self.var_name.get(id(var)) or self.names.add(var, var.name or 'var')
        self.lines.append(f'{name}.grad = None')

    def _emit_host(self, fn, args, kwargs, result):
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, Traced) or isinstance(a, Variable) and isinstance(a.data, Traced):
                raise Unreplayable(f'{fn.__qualname__} is called with a value computed by the step')
        fn_name = self.names.add(fn, fn.__qualname__.replace('.', '_'))
        parts = [self._host_arg(a) for a in args] + [f'{k}={self._host_arg(v)}' for k, v in kwargs.items()]
        call = f'{fn_name}({", ".join(parts)})'
        leaves = host_leaves(result[0]) if result else []
        if leaves:  # its numbers are the replay's (the step may return them)
            local = self.names.local(f'{fn_name}_result')
            call = f'{local} = {call}'
            for value, path in leaves:
                self.host_values[id(value)] = local + ''.join(f'[{i}]' for i in path)
        self.lines.append(call)

    def _emit_state(self, before_all, after_all):
        """Write back what the step left in its layers' state (an RNN's h), as the layer did."""
        for key, after in after_all.items():
            before = before_all.get(key, MISSING)
            if after is not before:
                self._state_guard(key, before)
                self.lines.append(self._state_write(key, after))

    def _state_guard(self, key, before):
        layer, attr = key
        if before is None or before is MISSING:
            self.state_guards.append((layer, attr, None, None, None))
        elif key not in self.state_reads:
            self.state_guards.append((layer, attr, type(untraced(before.data)), before.data.shape,
                                      before.data.dtype))

    def _state_write(self, key, after):
        layer, attr = key
        lname = self.names.add(layer, type(layer).__name__.lower())
        if after is None:
            return set_attribute_source(lname, attr, 'None')
        if id(after) not in self.own_vars:
            raise Unreplayable(f'the step sets {type(layer).__name__}.{attr} to a value it did '
                                f'not compute with an operation')
        if after.creator is not None:
            raise Unreplayable(f'the step keeps {type(layer).__name__}.{attr} with its graph '
                                f'(call unchain_backward() in the step, as truncated BPTT '
                                f'does): a replay cannot keep a graph')
        value = f'Variable({self.var_name[id(after)]}.data)'
        return set_attribute_source(lname, attr, value) + '  # state for the next call'

    def _emit_result(self, result):
        result_vars = {}  # key -> the expression of a returned array or host value
        self.result_template = self._template(result, result_vars)
        self.returns = returns = sorted(result_vars)
        out = self.names.local('out')
        self.lines.append(f'{out} = ({", ".join(result_vars[r] for r in returns)}{"," if returns else ""})')
        if not self.keep_buffers:
            # Nothing of this call is kept once it returns (the eager graph is freed too): the
            # arrays of the variables and what forward cached on the operations.
            ns = self.names.ns
            ns['_release'], ns['_cached'] = _release, tuple(self.cached)
            # freed last-made first, as the eager graph is torn down from its output
            ns['_own_vars'] = tuple(v for k, v in ns.items() if isinstance(v, Variable)
                                    and v.data is None and not isinstance(v, Parameter))[::-1]
            self.lines.append('_release(_own_vars, _cached)')
        self.lines.append(f'return {out}')

    # --- pieces of the build ------------------------------------------------------
    def _arg_view(self, a, t, local):
        if not t.flags.c_contiguous:
            raise Unreplayable('a view of a non-contiguous argument is used by an operation')
        offset = a.__array_interface__['data'][0] - t.__array_interface__['data'][0]
        if offset % t.itemsize or a.dtype != t.dtype:
            raise Unreplayable('an argument is viewed with another dtype by an operation')
        name = self.names.add(_view, '_view')
        return f'{name}({local}, {offset // t.itemsize}, {a.shape!r}, {a.strides!r})'

    def _bind_attrs(self, node, g, fname):
        """Attributes holding arrays: bound to an argument or parameter, recomputed, or constants."""
        f = node.f
        for attr in slot_names(type(f)):
            if attr not in ('inputs', 'outputs', 'generation', 'output_specs'):
                value = getattr(f, attr, None)
                if arrays_in(value):
                    self._bind_attr(node, g, fname, attr, value)

    def _bind_attr(self, node, g, fname, attr, value):
        f = node.f
        init = attr in init_names(type(f))
        exprs = []
        for a in arrays_in(value):
            e = self._array_binding(a)
            if e is None and isinstance(a, Traced):
                if not init and any(isinstance(x.data, Traced) for x in node.inputs):
                    self.cached.append((g, attr))
                    return  # set by forward from its inputs: recomputed at replay
                raise Unreplayable(f"an array computed from the step's values outside an "
                                    f'operation is the {attr!r} of {type(f).__name__} at '
                                    f'{node.line}: a replay would keep the traced value')
            if e is None and init:
                self.frozen.append((f'the {attr!r} of {type(f).__name__} at {node.line}', a))
            exprs.append(e)
        if any(e is not None for e in exprs):
            self.lines.append(f'{fname}.{attr} = {self._attr_expr(value, exprs)}')
            if isinstance(value, np.ndarray) and exprs[0].endswith('.data'):
                self.inplace.append((g, attr))

    def _attr_expr(self, value, exprs):
        if isinstance(value, np.ndarray):
            return exprs[0]
        parts, it = [], iter(exprs)
        for v in value:
            if isinstance(v, np.ndarray):
                e = next(it)
                parts.append(e if e is not None else self.names.add(v, 'index'))
            else:
                parts.append(repr(v))
        text = ', '.join(parts) + (',' if len(parts) == 1 else '')
        return f'({text})' if isinstance(value, tuple) else f'[{text}]'

    def _literal(self, v):
        if v is None or isinstance(v, (bool, int, float, str)) or (
                isinstance(v, tuple) and all(isinstance(u, int) for u in v)):
            return repr(v)
        if isinstance(v, type) and v.__module__ == 'numpy':
            return f'np.{v.__name__}'
        if isinstance(v, np.dtype):
            return f'np.dtype({v.str!r})'
        return self.names.add(v, 'value')

    def _host_arg(self, a):
        if a is None or isinstance(a, (bool, int, float, str)):
            return repr(a)
        if isinstance(a, list) and all(isinstance(p, Parameter) for p in a):
            return self.names.add(a, 'params')
        return self.names.add(a, type(a).__name__.lower())

    def _emit_pass(self, pass_):
        """Write one backward pass out: the engine's order, its accumulation, its leaf storing.

        Gradients are held as arrays (a rule gets its ``gy`` as a Variable around
        the same array): the additions are the engine's ``g.data + gx.data``.
        Each rule is the operation's own ``backward``, called on the plan's copy.
        """
        grads = _Grads()
        seeds = [self._seed(root, seed, grads) for root, seed in pass_.seeds]
        self.lines.insert(len(self.lines) - len(seeds) * 2,
                          f'# backward pass ({len(pass_.steps)} nodes, the order the engine ran them)')
        self.lines.append('_set_backprop(False)')
        ns = self.names.ns
        ns['_set_backprop'], ns['_tuple'], ns['_store_leaf_grads'] = _set_backprop, _tuple, _store_leaf_grads
        seen = [self._backward_step(f, gxs, grads) for f, gys, gxs in pass_.steps]
        leaves = [f'{self._leaf_name(grads.owner[xid])}: Variable({g})' for xid, g in grads.name.items()]
        # the plan's own copies of the Functions: the same set at every replay (a constant)
        seen_name = self.names.add(frozenset(ns[n] for n in seen), 'seen')
        self.lines.append(f'# the leaves get their gradients as backprop stores them ({seen_name}: '
                          f'the {len(seen)} operations above, a constant)')
        self.lines.append(f'_store_leaf_grads({{{", ".join(leaves)}}}, {seen_name}, {{{", ".join(seeds)}}})')
        self.lines.append('_set_backprop(True)')

    def _seed(self, root, seed, grads):
        """``backward()``'s seed: ones like the root (any other seed is not replayed)."""
        if id(root) not in self.var_name:
            raise Unreplayable('backward() of a Variable the step did not compute')
        sd = seed.data
        if not (isinstance(sd, np.ndarray) and sd.shape == root.data.shape and (sd == 1).all()):
            raise Unreplayable('backward() with a seed gradient other than ones')
        rname = self.var_name[id(root)]
        gname = self.names.local(f'g_{rname}', ('_seed',))
        self.lines.append(f'{gname}_seed = Variable(np.ones_like({rname}.data))')
        self.lines.append(f'{gname} = {gname}_seed.data')
        grads.arrive(root, gname)
        grads.seeds.add(gname)
        return f'{rname}: {gname}_seed'

    def _backward_step(self, f, gxs, grads):
        """One node's backward: its own rule, called, and the arrival of each gradient."""
        g = self.funcs.get(id(f))
        if g is None:
            raise Unreplayable(f'backward reached {type(f).__name__}, an operation made before '
                                f'the step (a graph kept across calls)')
        fname = self.names.by_id[id(g)]
        gy_names, gy_exprs = self._output_grads(f, grads)
        done = [e for e in gy_names if e not in grads.seeds]
        if _array_rule(f, gxs):
            self._array_step(f, fname, gy_names[0], gxs, grads, done)
            return fname
        gx = self.names.local('gx')
        self.lines.append(f'{gx} = _tuple({fname}.backward({", ".join(gy_exprs)}))')
        results = [(i, self._called_grad(f, fname, gx, i, gxi))
                   for i, gxi in enumerate(gxs) if gxi is not None]
        done.append(gx)
        for i, expr in results:
            self._arrive(f.inputs[i], expr, grads)
        if done:  # freed as the engine pops them: peak memory as eager's
            self.lines.append(f'del {", ".join(done)}')
        return fname

    def _array_step(self, f, fname, gy, gxs, grads, done):
        """A node whose rule has ``backward_arrays``: arrays in and out, no Variable made."""
        call = f'{fname}.backward_arrays({gy})'
        if len(f.inputs) == 1:
            if gxs[0] is not None:
                self._arrive(f.inputs[0], call, grads)
        else:
            gx = self.names.local('gx')
            self.lines.append(f'{gx} = {call}')
            for i, gxi in enumerate(gxs):
                if gxi is not None:
                    self._arrive(f.inputs[i], f'{gx}[{i}]', grads)
            done.append(gx)
        if done:
            self.lines.append(f'del {", ".join(done)}')

    def _output_grads(self, f, grads):
        """The gradients of ``f``'s outputs (popped: complete), as local names and as Variables."""
        outputs = f.outputs
        ys = [outputs()] if outputs.__class__ is core.OutputRef else [r() for r in outputs]
        if any(y is not None and _hooks.variable_hooks.get(y) is not None for y in ys):
            raise Unreplayable('a hook or retain_grad() on an intermediate Variable')
        if outputs.__class__ is core.OutputRef:
            if ys[0] is None or not grads.has(ys[0]):
                raise Unreplayable(f'{type(f).__name__}: a gradient the replay cannot follow')
            name = grads.pop(ys[0])
            return [name], [f'Variable({name})']
        names, exprs = [], []
        for y, (shape, dtype) in zip(ys, f.output_specs):
            if y is not None and grads.has(y):
                names.append(grads.pop(y))
                exprs.append(f'Variable({names[-1]})')
            else:  # an output nobody used: zeros, as the engine
                exprs.append(f'Variable(np.zeros({shape!r}, np.{np.dtype(dtype).name}))')
        return names, exprs

    @staticmethod
    def _called_grad(f, fname, gx, i, gxi):
        expr = f'{gx}[{i}]'
        if gxi.__class__ is not Variable or gxi.data.shape != f.inputs[i].data.shape:
            expr = f'_check_grad({expr}, {fname}.inputs[{i}], "{type(f).__name__}.backward")'
        return f'{expr}.data'

    def _arrive(self, x, expr, grads):
        """A gradient for ``x`` arrives: the first is kept, the next ones are added (as the engine)."""
        if grads.has(x):
            name = grads.name[id(x)]
            total = f'{name} + {expr}'
            if x.data.ndim == 0:  # a NumPy scalar: the engine's as_array
                total = f'as_array({total})'
            self.lines.append(f'{name} = {total}')
        else:
            xname = self.var_name.get(id(x)) or self._input_name(x, None)
            name = self.names.local(f'g_{xname}')
            self.lines.append(f'{name} = {expr}')
            grads.arrive(x, name)

    def _leaf_name(self, x):
        if id(x) in self.var_name:
            return self.var_name[id(x)]
        if isinstance(x, Parameter):
            return self._param_name(x)
        return self._input_name(x, None)

    def _template(self, value, result_vars):
        """How to rebuild the step's return value from one replay (a nested template)."""
        if isinstance(value, Variable):
            return self._variable_template(value, result_vars)
        if isinstance(value, np.ndarray):
            if id(value) in self.arg_views:
                return ('arg', self.arg_views[id(value)])
            if id(value) in self.host_values:  # a host operation's result: as it returns it
                expr = self.host_values[id(value)]
                result_vars[expr] = expr
                return ('host', expr)
            if isinstance(value, Traced):
                raise Unreplayable('the step returns an array computed from its values '
                                    '(return the Variable instead)')
            return ('copy', value)
        if isinstance(value, (tuple, list)):
            return (type(value), [self._template(v, result_vars) for v in value])
        if isinstance(value, dict):
            return (dict, {k: self._template(v, result_vars) for k, v in value.items()})
        if value is None or isinstance(value, (bool, int, float, complex, str)):
            return ('const', value)
        raise Unreplayable(f'the step returns a {type(value).__name__}')

    def _variable_template(self, value, result_vars):
        if id(value) in self.own_vars:
            name = self.var_name[id(value)]
            result_vars[name] = f'{name}.data'
            return ('var', name)
        if id(value) in self.arg_vars:
            return ('arg', self.arg_vars[id(value)])
        if isinstance(value, Parameter) or not isinstance(value.data, Traced):
            return ('const', value)
        raise Unreplayable('the step returns a Variable computed outside an operation '
                            '(a Variable made from .data)')

    def _source(self):
        params = ', '.join(n for n, _ in self.arg_paths)
        body = '\n'.join('    ' + line for line in self.lines)
        return (f'def {self.fn_name}({params}):\n'
                f'    """Generated by dezero_kr.static_graph: the replay of one traced call."""\n'
                f'{body}\n')

    # --- running -----------------------------------------------------------------
    def values_hold(self):
        """The plain Python values the step reads outside its arguments are as traced."""
        for d, key, value, by_value in self.dict_checks:
            v = d.get(key, MISSING)
            if v is not value and not (by_value and same_value(v, value)):
                return False
        for cell, value, by_value in self.cell_checks:
            v = read_value(cell, None, 'cell')
            if v is not value and not (by_value and same_value(v, value)):
                return False
        for items, value in self.list_checks:
            if not same_items(items, value):
                return False
        for holder, key, value, by_value in self.slot_checks:
            v = read_value(holder, key, 'slot')
            if v is not value and not (by_value and same_value(v, value)):
                return False
        return True

    def guard(self, args, kwargs):
        """Whether this plan may replay the call: the values outside the arguments, the
        parameters' and the layers' state's array types, shapes and dtypes are as traced."""
        if not self.values_hold():
            return False
        for p, cls, shape, dtype in self.param_guards:
            d = p.data
            if d.__class__ is not cls or d.shape != shape or d.dtype != dtype:
                return False
        for layer, attr, cls, shape, dtype in self.state_guards:
            v = getattr(layer, attr, None)
            if cls is None:
                if v is not None:
                    return False
            elif not isinstance(v, Variable) or v.data.__class__ is not cls or v.data.shape != shape \
                    or v.data.dtype != dtype:
                return False
        return True

    def run(self, args, kwargs):
        """Replay with these arguments; restore batch norm and layer state if it raises."""
        if self.positional is not None:  # the arguments in order, as they were passed
            values = args[:self.positional]
        else:
            values = [_get_path(args, kwargs, path) for _, path in self.arg_paths]
        saved_inplace = [(a, a.copy()) for a in (getattr(g, attr) for g, attr in self.inplace)
                         if isinstance(a, np.ndarray)]
        saved_state = [(layer, attr, getattr(layer, attr, None))
                       for layer, attr, *_ in self.state_guards]
        old = Config.enable_backprop
        try:
            out = self._replay(*values)
        except BaseException:  # the gradients are left as eager leaves them (not kept: memory)
            for a, copy_ in saved_inplace:
                a[...] = copy_
            for layer, attr, v in saved_state:
                setattr(layer, attr, v)
            raise
        finally:
            if Config.enable_backprop != old:
                _set_backprop(old)
        arrays = dict(zip(self.returns, out))
        return self._build(self.result_template, arrays, args, kwargs)

    def _build(self, t, arrays, args, kwargs):
        kind = t[0]
        if kind == 'var':
            return Variable(arrays[t[1]])
        if kind == 'arg':
            return _get_path(args, kwargs, t[1])
        if kind == 'host':
            return arrays[t[1]]
        if kind == 'const':
            return t[1]
        if kind == 'copy':
            return t[1].copy()
        if kind is dict:
            return {k: self._build(v, arrays, args, kwargs) for k, v in t[1].items()}
        return rebuilt(kind, [self._build(v, arrays, args, kwargs) for v in t[1]])

    def dot(self):
        """DOT text of the plan: one box per operation, ellipses for the arrays between them."""
        lines = ['digraph g {']
        seen = set()
        for fname, cls, ins, outs in self.nodes_dot:
            lines.append(f'{fname} [label="{cls}", color=lightblue, style=filled, shape=box]')
            for v in ins + outs:
                if v not in seen:
                    seen.add(v)
                    color = ', color=orange, style=filled' if v in self.names.ns and isinstance(
                        self.names.ns[v], Parameter) else ''
                    lines.append(f'{v} [label="{v}"{color}]')
            for v in ins:
                lines.append(f'{v} -> {fname}')
            for v in outs:
                lines.append(f'{fname} -> {v}')
        lines.append('}')
        return '\n'.join(lines)


def _release(variables, cached):
    """Drop the arrays one replay made: the variables' data and what forward kept on the operations."""
    for f, attr in cached:
        setattr(f, attr, None)
    for v in variables:
        v.data = None


class _Grads:
    """The running gradients of one generated backward pass: local names in arrival order."""

    def __init__(self):
        self.name = {}    # id(traced Variable) -> local name of its gradient array
        self.owner = {}   # id(traced Variable) -> the Variable
        self.seeds = set()

    def has(self, x):
        return id(x) in self.name

    def arrive(self, x, name):
        self.name[id(x)] = name
        self.owner[id(x)] = x

    def pop(self, y):
        self.owner.pop(id(y))
        return self.name.pop(id(y))


def has_array_rule(cls):
    """Whether the Function class ``cls`` defines ``backward_arrays`` (``core.Function`` says
    what it is) in the class that defines its ``backward``: a subclass that rewrites
    ``backward`` alone does not inherit the array entry of its base."""
    mro = cls.__mro__
    owner = next((k for k in mro if 'backward_arrays' in k.__dict__), None)
    return owner is not None and owner is next(k for k in mro if 'backward' in k.__dict__)


def _array_rule(f, gxs):
    """Whether the replay may call ``f.backward_arrays``: a single-output ``f`` of a class
    that ``has_array_rule``, whose traced gradients were Variables of their inputs' shapes
    (nothing to check)."""
    if f.outputs.__class__ is not core.OutputRef or not has_array_rule(type(f)):
        return False
    return all(g is None or g.__class__ is Variable and g.data.shape == x.data.shape
               for g, x in zip(gxs, f.inputs))


def _set_backprop(value):
    modes.set_enable_backprop(Config, value)


def _tuple(gxs):
    return gxs if gxs.__class__ is tuple else (gxs,)


def _store_leaf_grads(grads, seen, seeds):
    """The engine's own leaf storing (``reverse_pass.store_leaf_grads``), as ``backprop`` calls it."""
    run = reverse_pass.ReversePass(seeds, False, None, False)
    reverse_pass.store_leaf_grads(grads, seen, run)


def _view(arg, offset, shape, strides):
    """The view of a C-contiguous argument that the traced call used (same offset and strides)."""
    return np.lib.stride_tricks.as_strided(arg.reshape(-1)[offset:], shape, strides)
