"""Train a character-level GPT on the bundled first-names list, then sample new names.

    python examples/gpt/train.py                      # the default config (~1 min on 2 idle CPU cores)
    python examples/gpt/train.py --fast               # a tiny model, a few steps (tests)
    python examples/gpt/train.py --static             # the step traced once, then replayed (same numbers)
    python examples/gpt/train.py --steps 500 --ckpt out/gpt   # saves model + optimizer state
    python examples/gpt/train.py --steps 1000 --ckpt out/gpt --resume   # continues from step 500

Recipe: AdamW (beta2 0.95, weight decay 0.1 on matrices only), linear warm-up
then cosine decay of the learning rate to a tenth, global gradient-norm
clipping at 1.0 (the pre-clip norm is logged).  Each training example is a
window of ``block_size`` characters ``.name.name....`` made of randomly drawn
training names, so position 0 is always the start of a name, as when sampling.  The validation loss is the mean of ``-log p`` over every character
(and end mark) of every validation name, each name read from its start; the
unigram baseline is the cross entropy of the training-set character
frequencies on those same validation targets.

Checkpoint folder (``--ckpt``): one checkpoint is ``checkpoint.json`` (the
manifest: step, model config, run settings, both RNG states, and the file name
and SHA-256 of its two parts) plus the parts ``model.<step>.<tag>.npz``
(weights) and ``optimizer.<step>.<tag>.npz`` (AdamW state and step).  The
manifest is written last, atomically, so a run killed at any moment leaves
the previous checkpoint or the new one, never a mix.  ``--resume`` checks the
digests and steps and continues exactly where the saved run stopped (the
result equals an uninterrupted run of the same ``--steps``), or refuses with
the reason.
"""
import argparse
import json
import math
import os
import re
import sys
import time
import uuid

import numpy as np

import dezero_kr
from dezero_kr import cuda
from dezero_kr.blas import small_model_policy
from dezero_kr.datasets import Names
from dezero_kr.download import sha256sum
from dezero_kr.fileio import atomic_write
from dezero_kr.grad_clip import ClipGradNorm
from dezero_kr.optimizers import AdamW, WarmupCosine
from dezero_kr.paths import display_path
from dezero_kr.transformer import GPT

DEFAULTS = dict(block_size=16, n_embd=64, n_head=4, n_layer=2, mlp='gelu', norm='layer', dropout=0.1,
                batch_size=32, steps=3000, lr=3e-3, warmup=100, weight_decay=0.1, clip=1.0, seed=0)
# A tiny run for tests: a few seconds including the evaluation.
FAST = dict(n_embd=16, n_head=2, n_layer=1, batch_size=8, steps=30, warmup=5)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--fast', action='store_true', help='tiny model, few steps (for tests)')
    p.add_argument('--steps', type=int, help='total training steps (the schedule length)')
    p.add_argument('--batch-size', type=int)
    p.add_argument('--block-size', type=int)
    p.add_argument('--n-embd', type=int)
    p.add_argument('--n-head', type=int)
    p.add_argument('--n-layer', type=int)
    p.add_argument('--mlp', choices=('relu', 'gelu'))
    p.add_argument('--norm', choices=('rms', 'layer'))
    p.add_argument('--dropout', type=float)
    p.add_argument('--lr', type=float, help='peak learning rate')
    p.add_argument('--warmup', type=int, help='warm-up steps')
    p.add_argument('--weight-decay', type=float)
    p.add_argument('--clip', type=float, help='max global gradient norm')
    p.add_argument('--seed', type=int)
    p.add_argument('--log-every', type=int, default=250)
    p.add_argument('--eval-every', type=int, default=1000)
    p.add_argument('--ckpt', help='checkpoint folder (saved at the end and every --save-every steps)')
    p.add_argument('--save-every', type=int, default=0)
    p.add_argument('--resume', action='store_true', help='continue from the checkpoint in --ckpt')
    p.add_argument('--stop-after', type=int,
                   help='stop (and save) after this step, as if interrupted; --resume goes on')
    p.add_argument('--gpu', action='store_true', help='train on a CUDA GPU with CuPy (docs/gpu.md)')
    p.add_argument('--static', action='store_true',
                   help='train with dezero_kr.static_graph (Define-and-Run; the same numbers)')
    p.add_argument('--samples', type=int, default=10)
    p.add_argument('--temperature', type=float, default=1.0)
    p.add_argument('--top-k', type=int)
    p.add_argument('--sample-seed', type=int, default=0)
    args = p.parse_args(argv)
    settings = dict(DEFAULTS, **(FAST if args.fast else {}))
    for key in settings:
        value = getattr(args, key)
        if value is not None:
            settings[key] = value
    return args, settings


# =============================================================================
# Data
# =============================================================================
class NameData:
    """One split of ``Names``: encoded names, random packed windows, per-name evaluation arrays."""

    def __init__(self, train, block_size):
        ds = Names(train=train)
        self.names = ds.names
        self.decode = ds.decode
        self.block_size = block_size
        self.encoded = [ds.encode(name) for name in self.names]  # 'emma' -> [5 13 13 1 0]
        self.fill = -(-block_size // min(len(e) for e in self.encoded)) + 1  # names that fill a window
        # Evaluation: each name once, read from its start: x = '.' + name, y = name + '.'.
        n, T = len(self.names), block_size
        self.eval_x = np.zeros((n, T), dtype=np.int64)
        self.eval_y = np.zeros((n, T), dtype=np.int64)
        self.eval_mask = np.zeros((n, T), dtype=bool)
        for i, e in enumerate(self.encoded):
            m = min(len(e), T)  # a name longer than the block is cut, as microgpt does
            self.eval_x[i, 1:m] = e[:m - 1]
            self.eval_y[i, :m] = e[:m]
            self.eval_mask[i, :m] = True

    def batch(self, rng, batch_size):
        """x, y (B, T): windows '.name.name...' of randomly drawn names (packing, as in GPT pre-training).

        Random neighbours, not the alphabetical stream: there, the previous name
        would give the next one away (``.abbie.abby.``), which validation names cannot use.
        """
        picks = rng.integers(0, len(self.encoded), size=(batch_size, self.fill))
        start = np.zeros(1, dtype=np.int64)
        w = np.stack([np.concatenate([start] + [self.encoded[j] for j in row])[:self.block_size + 1]
                      for row in picks])
        return w[:, :-1], w[:, 1:]


def unigram_baseline(train, val, vocab_size):
    """Cross entropy (nats) of the training-target character frequencies on the validation targets."""
    counts = np.bincount(train.eval_y[train.eval_mask], minlength=vocab_size).astype(np.float64)
    logp = np.log(counts / counts.sum())
    return float(-logp[val.eval_y[val.eval_mask]].mean())


def bigram_baseline(train, val, vocab_size):
    """The same for next-char frequencies given the previous char (add-one smoothing): context 1."""
    counts = np.ones((vocab_size, vocab_size))
    np.add.at(counts, (train.eval_x[train.eval_mask], train.eval_y[train.eval_mask]), 1)
    logp = np.log(counts / counts.sum(axis=1, keepdims=True))
    return float(-logp[val.eval_x[val.eval_mask], val.eval_y[val.eval_mask]].mean())


def _on_device_of(model, a):
    """The host batch ``a`` where the model's weights are (NumPy: ``a`` itself; GPU: a copy)."""
    return cuda.get_array_module(model.wte.W.data).asarray(a)


def evaluate(model, data, batch_size=512):
    """Mean -log p over the masked validation targets (no graph, test mode)."""
    total, count = 0.0, 0
    with dezero_kr.no_grad(), dezero_kr.test_mode():
        for i in range(0, len(data.eval_x), batch_size):
            x, y, m = (a[i:i + batch_size] for a in (data.eval_x, data.eval_y, data.eval_mask))
            z = cuda.as_numpy(model(_on_device_of(model, x)).data).astype(np.float64)
            z -= z.max(axis=-1, keepdims=True)
            logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
            picked = np.take_along_axis(logp, y[..., None], axis=-1)[..., 0]
            total -= float(picked[m].sum())
            count += int(m.sum())
    return total / count


# =============================================================================
# Model, optimizer, checkpoints
# =============================================================================
class DecayMatricesAdamW(AdamW):
    """AdamW whose decoupled weight decay applies to matrices only (not to biases or norm gains)."""

    def update_one(self, param):
        self._adamw_step(param, self.weight_decay if param.data.ndim >= 2 else 0.0)


def model_config(s, vocab_size):
    return dict(vocab_size=vocab_size, block_size=s['block_size'], n_embd=s['n_embd'],
                n_head=s['n_head'], n_layer=s['n_layer'], mlp=s['mlp'], norm=s['norm'],
                dropout=s['dropout'])


def build(s, vocab_size):
    """Model (weights from ``np.random.seed(seed)``), optimizer with the schedule and the clip hook."""
    np.random.seed(s['seed'])
    model = GPT(**model_config(s, vocab_size))
    opt = DecayMatricesAdamW(alpha=s['lr'], beta1=0.9, beta2=0.95, weight_decay=s['weight_decay'])
    opt.setup(model)
    opt.add_hook(WarmupCosine(s['lr'], min(s['warmup'], s['steps']), s['steps'], min_lr=s['lr'] / 10))
    clip = ClipGradNorm(s['clip'])
    opt.add_hook(clip)
    return model, opt, clip


CHECKPOINT = 'checkpoint.json'  # the manifest: written last, it is what makes a checkpoint exist
_PART = re.compile(r'^(model|optimizer)\.\d+\.[0-9a-f]{8}\.npz$')


class CheckpointError(SystemExit):
    """``--resume`` found no usable checkpoint; the message says what is wrong and what to do."""


def save_checkpoint(folder, model, opt, settings, rng):
    """Write one checkpoint: two new part files, then the manifest ``checkpoint.json`` (atomically).

    Parts are named after the step plus a random tag (``model.500.1a2b3c4d.npz``,
    ``optimizer.500.5e6f7a8b.npz``), so they never overwrite the parts the
    current manifest names.  The manifest holds the step, each part's file
    name and SHA-256, the model config, the run settings and both RNG states;
    replacing it is the single atomic step that moves the checkpoint forward.
    A process killed at any point leaves either the old checkpoint or the new
    one, never a mix.  Parts no manifest names (the previous checkpoint's,
    or those of a killed save) are removed afterwards.
    """
    os.makedirs(folder, exist_ok=True)
    step = opt.t
    parts = {'model': f'model.{step}.{uuid.uuid4().hex[:8]}.npz',
             'optimizer': f'optimizer.{step}.{uuid.uuid4().hex[:8]}.npz'}
    model.save_weights(os.path.join(folder, parts['model']))
    opt.save(os.path.join(folder, parts['optimizer']))
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    manifest = dict(format=2, step=step,
                    parts={k: dict(file=f, sha256=sha256sum(os.path.join(folder, f))) for k, f in parts.items()},
                    model=model.config, settings=settings, rng=rng.bit_generator.state,
                    np_random=[kind, keys.tolist(), pos, has_gauss, cached])
    with atomic_write(os.path.join(folder, CHECKPOINT), 'w') as f:
        json.dump(manifest, f)
    for name in os.listdir(folder):
        if _PART.match(name) and name not in parts.values():
            os.remove(os.path.join(folder, name))


def read_manifest(folder):
    """The manifest of ``folder``, with every part checked against its SHA-256; ``CheckpointError`` if anything is off."""
    path = os.path.join(folder, CHECKPOINT)

    def refuse(why):
        raise CheckpointError(f'--resume: cannot use the checkpoint in {folder}: {why}. Nothing was '
                              f'loaded; fix or remove the folder, or train again without --resume.')

    if not os.path.exists(path):
        if os.path.exists(os.path.join(folder, 'state.json')):
            refuse(f'it has no {CHECKPOINT}, only the state.json of an older train.py whose three files '
                   f'were saved separately and may come from different steps')
        raise CheckpointError(f'--resume needs --ckpt pointing to a saved checkpoint (a folder with '
                              f'{CHECKPOINT}), got {folder!r}')
    try:
        with open(path, encoding='utf-8') as f:
            manifest = json.load(f)
    except (OSError, ValueError) as e:
        refuse(f'{CHECKPOINT} cannot be read ({e})')
    expected = {'format', 'step', 'parts', 'model', 'settings', 'rng', 'np_random'}
    if not isinstance(manifest, dict) or manifest.get('format') != 2 or set(manifest) != expected:
        refuse(f'{CHECKPOINT} is not a format-2 manifest with the entries {sorted(expected)}')
    if not isinstance(manifest['step'], int) or manifest['step'] < 0:
        refuse(f'its step {manifest["step"]!r} is not a whole number')
    parts = manifest['parts']
    if not isinstance(parts, dict) or set(parts) != {'model', 'optimizer'}:
        refuse(f'{CHECKPOINT} must name a model and an optimizer part, got {parts!r}')
    for kind, part in parts.items():
        name = part.get('file') if isinstance(part, dict) else None
        if not isinstance(name, str) or not _PART.match(name) or not name.startswith(kind + '.'):
            refuse(f'the {kind} part {name!r} is not a part file name')
        part_path = os.path.join(folder, name)
        if not os.path.isfile(part_path):
            refuse(f'the {kind} part {name} of step {manifest["step"]} is missing')
        got = sha256sum(part_path)
        if got != part.get('sha256'):
            refuse(f'the {kind} part {name} does not match its SHA-256 in {CHECKPOINT} '
                   f'(got {got}, expected {part.get("sha256")}): it was changed after the save')
    return manifest


def load_checkpoint(folder, vocab_size):
    """Rebuild model, optimizer and data RNG from a folder written by ``save_checkpoint``.

    Refuses (``CheckpointError``, a ``SystemExit`` with the reason) a folder
    without a manifest, a part that is missing or differs from its digest, an
    optimizer whose step is not the manifest's, or weights that do not fit the
    saved config.
    """
    manifest = read_manifest(folder)
    settings = manifest['settings']
    model, opt, clip = build(settings, vocab_size)
    try:
        model.load_weights(os.path.join(folder, manifest['parts']['model']['file']))
        opt.load(os.path.join(folder, manifest['parts']['optimizer']['file']))
    except (ValueError, OSError) as e:
        raise CheckpointError(f'--resume: cannot use the checkpoint in {folder}: {e}') from None
    if opt.t != manifest['step']:
        raise CheckpointError(f'--resume: cannot use the checkpoint in {folder}: the optimizer part is at '
                              f'step {opt.t} but {CHECKPOINT} says step {manifest["step"]}')
    rng = np.random.default_rng()
    rng.bit_generator.state = manifest['rng']
    kind, keys, pos, has_gauss, cached = manifest['np_random']
    np.random.set_state((kind, np.array(keys, dtype=np.uint32), pos, has_gauss, cached))
    return model, opt, clip, rng, settings


def sample_names(model, n, temperature, top_k, seed, decode):
    """``n`` names sampled from '.' until the next '.' (or the block is full)."""
    start = np.zeros((n, 1), dtype=np.int64)
    ids = model.generate(start, model.block_size - 1, temperature=temperature, top_k=top_k, rng=seed)
    names = []
    for row in ids[:, 1:]:
        end = np.flatnonzero(row == Names.eos_id)
        names.append(decode(row[:end[0]] if len(end) else row))
    return names


# =============================================================================
# Training
# =============================================================================
def train(model, opt, clip, rng, data, settings, args, log=print, val=None):
    """Run updates until ``opt.t == settings['steps']`` (or ``--stop-after``); returns the last logged loss."""
    losses, t0 = [], time.perf_counter()
    recent = math.nan
    last = settings['steps'] if args.stop_after is None else min(args.stop_after, settings['steps'])
    def train_step(x, y):
        loss = model.loss(x, y)
        model.cleargrads()
        loss.backward()
        opt.update()
        return loss
    if getattr(args, 'static', False):  # traced on the first call, replayed after (the same numbers)
        train_step = dezero_kr.static_graph(train_step)
    while opt.t < last:
        x, y = data.batch(rng, settings['batch_size'])
        loss = train_step(_on_device_of(model, x), _on_device_of(model, y))
        losses.append(float(loss.data))
        step = opt.t
        if step % args.log_every == 0 or step == last:
            recent = float(np.mean(losses))
            log(f'step {step:5d}/{settings["steps"]} | loss {recent:.4f} | grad norm {clip.last_norm:7.4f} '
                f'(clipped to {settings["clip"]}) | lr {opt.alpha:.2e} | {time.perf_counter() - t0:6.1f}s')
            losses = []
        if val is not None and args.eval_every and step % args.eval_every == 0 and step < settings['steps']:
            log(f'           val loss {evaluate(model, val):.4f}')
        if args.ckpt and args.save_every and step % args.save_every == 0:
            save_checkpoint(args.ckpt, model, opt, settings, rng)
    return recent


def main(argv=None, log=print):
    args, settings = parse_args(argv)
    t_start = time.perf_counter()
    vocab = Names.vocab_size
    if args.resume:
        if not args.ckpt:
            raise CheckpointError('--resume needs --ckpt pointing to a saved checkpoint, got no --ckpt')
        model, opt, clip, rng, saved = load_checkpoint(args.ckpt, vocab)
        if args.steps is not None and args.steps != saved['steps']:
            # Continue the run on a longer schedule: the schedule hook reads this.
            saved['steps'] = args.steps
            opt.hooks[0].total_steps = args.steps
        settings = saved
        log(f'resumed from {args.ckpt} at step {opt.t}')
    else:
        model, opt, clip = build(settings, vocab)
        rng = np.random.default_rng(settings['seed'])
    if args.gpu:
        cuda.require_gpu('examples/gpt/train.py --gpu')
        model.to_gpu()
        opt.load_state_dict(opt.state_dict())  # a resumed optimizer state follows the weights
    train_data = NameData(True, settings['block_size'])
    val_data = NameData(False, settings['block_size'])
    log(f'GPT {model.config["n_layer"]} layers, n_embd {model.config["n_embd"]}, '
        f'{model.config["n_head"]} heads, block {model.config["block_size"]}: {model.num_params():,} parameters; '
        f'{len(train_data.names)} training / {len(val_data.names)} validation names; '
        f'batch {settings["batch_size"]}, {settings["steps"]} steps, peak lr {settings["lr"]}')
    train(model, opt, clip, rng, train_data, settings, args, log, val_data)
    train_time = time.perf_counter() - t_start
    if args.ckpt:
        save_checkpoint(args.ckpt, model, opt, settings, rng)
        log(f'checkpoint saved to {display_path(args.ckpt)} (step {opt.t})')
    val_loss = evaluate(model, val_data)
    baseline = unigram_baseline(train_data, val_data, vocab)
    bigram = bigram_baseline(train_data, val_data, vocab)
    log(f'validation loss {val_loss:.4f} nats/char  |  unigram baseline {baseline:.4f}  |  '
        f'bigram {bigram:.4f}  |  {train_time:.1f}s since start')
    names = sample_names(model, args.samples, args.temperature, args.top_k, args.sample_seed,
                         train_data.decode)
    log(f'samples (temperature {args.temperature}, seed {args.sample_seed}):')
    for name in names:
        log(f'  {name}')
    log(f'total time {time.perf_counter() - t_start:.1f}s')
    return dict(val_loss=val_loss, baseline=baseline, bigram=bigram, seconds=train_time, samples=names,
                model=model, optimizer=opt)


if __name__ == '__main__':
    # One BLAS thread for these small matrices (dezero_kr.blas); here, not in main(),
    # so that tests calling main() leave their own process's BLAS alone.
    small_model_policy()
    main(sys.argv[1:])
