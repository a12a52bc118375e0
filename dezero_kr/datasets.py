"""Datasets (DeZero-compatible), two of them bundled for offline use.

A dataset holds ``data`` (inputs) and ``label`` (targets, or None) as arrays
whose first axis indexes samples.  ``dataset[i]`` returns ``(x, t)`` after the
optional ``transform`` / ``target_transform``; ``len(dataset)`` is the number
of samples.  Beyond DeZero, ``dataset[2:5]`` or ``dataset[[0, 7, 3]]`` returns
a batch ``(xs, ts)`` stacked along a new first axis.

=================  =====================  ===========================================
class              source                 one sample (after the default transform)
=================  =====================  ===========================================
``Spiral``         generated (seeded)     x float32 ``(2,)``, t int (3 classes)
``SinCurve``       generated (seeded)     x float64 ``(1,)``, t float64 ``(1,)``
``Digits``         bundled, offline       x float32 ``(64,)`` in [0, 1], t int (0-9)
``Names``          bundled, offline       x int ``()`` char id, t int ``()`` next char id
``MNIST``          download (~11 MB)      x float32 ``(784,)`` in [0, 1], t uint8
``CIFAR10``        download (~170 MB)     x float32 ``(3, 32, 32)``, t int
``CIFAR100``       download (~170 MB)     x float32 ``(3, 32, 32)``, t int
``Shakespeare``    download (~1.1 MB)     x int ``()`` char id, t int ``()`` next char id
=================  =====================  ===========================================

Downloads go through ``dezero_kr.download.get_file`` into ``cache_dir()``
(``~/.dezero_kr`` or ``$DEZERO_KR_CACHE``) with SHA-256 checks where the
digest is known.  Nothing is unpickled: CIFAR is read from the *binary*
version of the archives and caches are loaded with ``allow_pickle=False``.
Importing this module loads neither matplotlib nor Pillow.
"""
import ast
import gzip
import importlib.resources
import os
import tarfile
import zipfile

import numpy as np

from dezero_kr import plot
from dezero_kr.download import cache_dir, get_file
from dezero_kr.fileio import atomic_write
from dezero_kr.transforms import Compose, Flatten, Normalize, ToFloat

__all__ = ['Dataset', 'get_spiral', 'Spiral', 'SinCurve', 'Digits', 'load_digits',
           'Names', 'load_names', 'MNIST', 'CIFAR10', 'CIFAR100', 'ImageNet',
           'Shakespeare', 'Shakespear', 'load_cache_npz', 'save_cache_npz']


def _identity(x):
    return x


def _is_scalar_index(index):
    return np.isscalar(index) or (isinstance(index, np.ndarray) and index.ndim == 0)


class Dataset:
    """Base class: subclasses fill ``self.data`` / ``self.label`` in ``prepare()``.

    Args:
        train: True for the training split, False for the test split.
        transform: callable applied to each input ``x`` (None: unchanged).
        target_transform: callable applied to each target ``t`` (None: unchanged).

    ``dataset[i]`` with an integer returns ``(transform(data[i]),
    target_transform(label[i]))``, or ``(x, None)`` when ``label`` is None,
    exactly as in DeZero.  With a slice, an integer array or a boolean mask it
    returns the batch ``(xs, ts)``: arrays with one more leading axis, built
    by transforming each sample (or by plain array indexing when there are no
    transforms, which gives the same result faster).
    """

    def __init__(self, train=True, transform=None, target_transform=None):
        self.train = train
        self.transform = transform if transform is not None else _identity
        self.target_transform = target_transform if target_transform is not None else _identity
        self.data = None
        self.label = None
        self.prepare()

    def __getitem__(self, index):
        if _is_scalar_index(index):
            x = self.transform(self.data[index])
            if self.label is None:
                return x, None
            return x, self.target_transform(self.label[index])
        indices = self._batch_indices(index)
        xs = self._take(self.data, indices, self.transform)
        if self.label is None:
            return xs, None
        return xs, self._take(self.label, indices, self.target_transform)

    def __len__(self):
        return len(self.data)

    def prepare(self):
        """Load or generate ``self.data`` and ``self.label``; the base class has none."""

    # -- batch indexing ----------------------------------------------------
    def _batch_indices(self, index):
        if isinstance(index, slice):
            return np.arange(len(self))[index]
        indices = np.asarray(index)
        if indices.dtype == bool:
            if indices.shape != (len(self),):
                raise IndexError(f'boolean mask must have shape ({len(self)},), not {indices.shape}')
            return np.flatnonzero(indices)
        if indices.size == 0:
            return indices.astype(np.intp).reshape(0)
        if not np.issubdtype(indices.dtype, np.integer) or indices.ndim != 1:
            raise IndexError('a dataset index must be an int, a slice, a 1-D integer array '
                             f'or a boolean mask, not {index!r}')
        return indices

    @staticmethod
    def _take(source, indices, transform):
        if transform is _identity and isinstance(source, np.ndarray):
            return source[indices]
        return np.array([transform(source[i]) for i in indices])


# =============================================================================
# Generated toy datasets
# =============================================================================
def get_spiral(train=True):
    """Three interleaved spirals: ``x`` float32 ``(300, 2)``, ``t`` int ``(300,)``.

    Class ``j`` has 100 points at radius ``r = i / 100`` and angle
    ``4j + 4r + 0.2 * noise``.  The points are shuffled.  The data equal
    DeZero's for the same split (seed 1984 for train, 2020 for test), but the
    random numbers come from a private ``RandomState``: NumPy's global random
    state is left alone (DeZero reseeded it).
    """
    rng = np.random.RandomState(1984 if train else 2020)
    num_data, num_class, input_dim = 100, 3, 2
    x = np.zeros((num_class * num_data, input_dim), dtype=np.float32)
    t = np.zeros(num_class * num_data, dtype=int)
    for j in range(num_class):
        for i in range(num_data):
            # One scalar draw per point in this order (class-major) keeps the
            # values identical to DeZero's loop.
            rate = i / num_data
            radius = 1.0 * rate
            theta = j * 4.0 + 4.0 * rate + rng.randn() * 0.2
            x[num_data * j + i] = (radius * np.sin(theta), radius * np.cos(theta))
            t[num_data * j + i] = j
    order = rng.permutation(num_class * num_data)
    return x[order], t[order]


class Spiral(Dataset):
    """``get_spiral`` as a dataset: 300 samples, x float32 ``(2,)``, t int."""

    def prepare(self):
        self.data, self.label = get_spiral(self.train)


class SinCurve(Dataset):
    """A sine wave for next-value prediction (999 samples).

    ``y`` = 1000 points of ``sin(x)`` plus uniform noise in [-0.05, 0.05)
    (train) or ``cos(x)`` without noise (test), x evenly spaced in
    ``[0, 2*pi]``.  ``data = y[:-1]``, ``label = y[1:]``, both float64
    ``(999, 1)``.  The noise comes from ``seed`` (default 0), so the data are
    the same on every run (DeZero's were unseeded).
    """

    def __init__(self, train=True, transform=None, target_transform=None, seed=0):
        self.seed = seed
        super().__init__(train, transform, target_transform)

    def prepare(self):
        num_data = 1000
        x = np.linspace(0, 2 * np.pi, num_data)
        noise = np.random.default_rng(self.seed).uniform(-0.05, 0.05, size=x.shape)
        y = np.sin(x) + noise if self.train else np.cos(x)
        y = y.astype(np.float64)
        self.data = y[:-1][:, np.newaxis]
        self.label = y[1:][:, np.newaxis]


# =============================================================================
# Bundled datasets (no network): 8x8 digits and first names
# =============================================================================
DIGITS_FILE = 'digits.csv.gz'
DIGITS_SHA256 = '09f66e6debdee2cd2b5ae59e0d6abbb73fc2b0e0185d2e1957e9ebb51e23aa22'
DIGITS_TRAIN_SIZE = 1500
NAMES_FILE = 'names.txt'


def _package_data(name):
    return importlib.resources.files(__package__).joinpath('data', name)


def load_digits():
    """All 1,797 bundled digit images: ``x`` uint8 ``(1797, 64)`` in 0..16, ``t`` int ``(1797,)``.

    Each row is an 8x8 image read row by row.  Source and license:
    ``dezero_kr/data/NOTICE``.
    """
    with _package_data(DIGITS_FILE).open('rb') as raw, gzip.open(raw, 'rt') as f:
        table = np.loadtxt(f, delimiter=',', dtype=np.int64)
    return table[:, :64].astype(np.uint8), table[:, 64].astype(int)


class Digits(Dataset):
    """8x8 handwritten digits, bundled with the package (works offline).

    1,797 images (the UCI "optical recognition of handwritten digits" test
    set, as shipped by scikit-learn).  Split: the **first 1,500** images are
    the training set, the **last 297** the test set (each digit appears about
    150 / 30 times).

    * ``data``: float32, pixel values 0..16 divided by 16 (so in [0, 1]),
      shape ``(N, 64)``, or ``(N, 1, 8, 8)`` with ``flatten=False``.
    * ``label``: int, 0..9.
    """

    def __init__(self, train=True, transform=None, target_transform=None, flatten=True):
        self.flatten = flatten
        super().__init__(train, transform, target_transform)

    def prepare(self):
        x, t = load_digits()
        part = slice(None, DIGITS_TRAIN_SIZE) if self.train else slice(DIGITS_TRAIN_SIZE, None)
        x = x[part].astype(np.float32) / np.float32(16)
        self.data = x if self.flatten else x.reshape(-1, 1, 8, 8)
        self.label = t[part]

    def show(self, row=10, col=10, to_file=None):
        """Draw ``row x col`` random images (needs matplotlib); see ``MNIST.show``."""
        return _show_samples(self.data, row, col, to_file)

    @staticmethod
    def labels():
        """``{0: '0', ..., 9: '9'}``: class id -> digit name."""
        return {i: str(i) for i in range(10)}


def load_names():
    """All 5,163 bundled first names: lower-case a-z, unique, in alphabetical order."""
    text = _package_data(NAMES_FILE).read_text(encoding='ascii')
    return text.split()


class Names(Dataset):
    """First names as one character stream, for character-level language models.

    5,163 US first names (1990 census lists, lower-case a-z).  Split: every
    10th name in alphabetical order (positions 9, 19, 29, ...) is in the test
    set (516 names), the rest in the training set (4,647 names).

    The vocabulary has 27 symbols: ``'.'`` (id 0) marks the end of a name
    (and the start of the first one), then ``'a'``..``'z'`` (ids 1..26).  The
    split's names are joined into ``'.aaron.abbey.' ...`` and encoded, so
    ``data[k]`` is a char id and ``label[k]`` the id of the next char (both
    int), like ``Shakespeare``.  Use it with ``SeqDataLoader``.

    Attributes:
        names: the split's names (list of str).
        chars: ``['.', 'a', ..., 'z']``; ``char_to_id`` / ``id_to_char``: dicts.
        eos / eos_id: ``'.'`` / 0.  vocab_size: 27.
    """

    eos = '.'
    eos_id = 0
    chars = [eos] + [chr(c) for c in range(ord('a'), ord('z') + 1)]
    vocab_size = len(chars)

    def prepare(self):
        self.char_to_id = {c: i for i, c in enumerate(self.chars)}
        self.id_to_char = {i: c for i, c in enumerate(self.chars)}
        everything = load_names()
        self.names = [name for k, name in enumerate(everything) if (k % 10 == 9) != self.train]
        stream = self.encode(self.eos + self.eos.join(self.names) + self.eos, add_eos=False)
        self.data = stream[:-1]
        self.label = stream[1:]

    def encode(self, name, add_eos=True):
        """``'emma'`` -> ``array([5, 13, 13, 1, 0])`` (int; the final 0 is the end mark)."""
        text = name + self.eos if add_eos else name
        return np.array([self.char_to_id[c] for c in text], dtype=int)

    def decode(self, ids):
        """Char ids -> text, e.g. ``[5, 13, 13, 1, 0]`` -> ``'emma.'``."""
        return ''.join(self.id_to_char[int(i)] for i in np.asarray(ids).ravel())


# =============================================================================
# Downloaded datasets: MNIST, CIFAR-10/100, ImageNet labels, Shakespeare
# =============================================================================
def _show_samples(images, row, col, to_file):
    """Draw ``row * col`` random images in a grid (``plot.plot_digits_grid``; needs matplotlib)."""
    picks = np.random.default_rng().integers(0, len(images), size=row * col)
    return plot.plot_digits_grid(images[picks], ncols=col, to_file=to_file)


def _read_idx(path, magic, ndim):
    """Read a gzip'ed IDX file (the MNIST format): returns a writable uint8 array."""
    with gzip.open(path, 'rb') as f:
        raw = bytearray(f.read())  # bytearray -> np.frombuffer gives a writable array
    header_size = 4 + 4 * ndim
    if len(raw) < header_size or int.from_bytes(raw[:4], 'big') != magic:
        raise ValueError(f'{path} is not an IDX file with magic number {magic:#010x}')
    dims = [int.from_bytes(raw[4 + 4 * k: 8 + 4 * k], 'big') for k in range(ndim)]
    array = np.frombuffer(raw, dtype=np.uint8, offset=header_size)
    if array.size != int(np.prod(dims)):
        raise ValueError(f'{path}: header says {dims} but holds {array.size} values')
    return array.reshape(dims)


class MNIST(Dataset):
    """MNIST handwritten digits, 28x28 gray (downloaded once, ~11 MB).

    60,000 training / 10,000 test images.  ``data`` uint8 ``(N, 1, 28, 28)``,
    ``label`` uint8 ``(N,)`` (DeZero's dtypes).  The default transform turns
    one image into float32 ``(784,)`` in [0, 1].

    Files (in ``cache_dir()``; place them there by hand to work offline):
    ``train-images-idx3-ubyte.gz``, ``train-labels-idx1-ubyte.gz``,
    ``t10k-images-idx3-ubyte.gz``, ``t10k-labels-idx1-ubyte.gz``.  They are
    fetched from the ``mirrors`` in order (the original MNIST site answers 403)
    and checked against ``sha256``.
    """

    mirrors = ('https://ossci-datasets.s3.amazonaws.com/mnist/',
               'https://storage.googleapis.com/cvdf-datasets/mnist/')
    files = {'train': ('train-images-idx3-ubyte.gz', 'train-labels-idx1-ubyte.gz'),
             'test': ('t10k-images-idx3-ubyte.gz', 't10k-labels-idx1-ubyte.gz')}
    # Published SHA-256 digests of the four gzip files (sizes 9,912,422 /
    # 28,881 / 1,648,877 / 4,542 bytes).  They could not be recomputed here
    # (no internet); they were taken from public checksum lists that agree
    # with each other (e.g. the TensorFlow Datasets and MLDatasets.jl ones).
    sha256 = {
        'train-images-idx3-ubyte.gz': '440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609',
        'train-labels-idx1-ubyte.gz': '3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c',
        't10k-images-idx3-ubyte.gz': '8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6',
        't10k-labels-idx1-ubyte.gz': 'f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6',
    }

    def __init__(self, train=True,
                 transform=Compose([Flatten(), ToFloat(), Normalize(0., 255.)]),
                 target_transform=None):
        super().__init__(train, transform, target_transform)

    def _fetch(self, name):
        urls = [base + name for base in self.mirrors]
        return get_file(urls[0], name, sha256=self.sha256.get(name), mirrors=urls[1:])

    def prepare(self):
        images, labels = self.files['train' if self.train else 'test']
        x = _read_idx(self._fetch(images), magic=0x00000803, ndim=3)
        t = _read_idx(self._fetch(labels), magic=0x00000801, ndim=1)
        if len(x) != len(t):
            raise ValueError(f'MNIST files disagree: {len(x)} images, {len(t)} labels')
        self.data = x.reshape(-1, 1, x.shape[1], x.shape[2])
        self.label = t

    def show(self, row=10, col=10, to_file=None):
        """Draw ``row x col`` random images in a grid (needs matplotlib).

        With ``to_file`` the grid is saved there (no window); without it a
        window opens through ``matplotlib.pyplot``.
        """
        return _show_samples(self.data, row, col, to_file)

    @staticmethod
    def labels():
        """``{0: '0', ..., 9: '9'}``: class id -> digit name."""
        return {i: str(i) for i in range(10)}


def _read_tar_members(path, names):
    """Return ``{name: bytes}`` for the named members of a .tar.gz, reading it once.

    Members are only read into memory, never extracted to disk, so odd paths
    inside the archive cannot write anywhere.
    """
    wanted = set(names)
    found = {}
    with tarfile.open(path, 'r:gz') as archive:
        for member in archive:
            if member.name in wanted and member.isfile():
                found[member.name] = archive.extractfile(member).read()
    missing = wanted - set(found)
    if missing:
        raise ValueError(f'{path} lacks {sorted(missing)}; is it the binary version of the archive?')
    return found


def _read_cifar_records(path, names, label_bytes):
    """Parse CIFAR binary batches: each record is ``label_bytes`` labels + 3072 pixels.

    Returns ``data`` uint8 ``(N, 3, 32, 32)`` (red, green, blue planes, rows
    top to bottom) and the labels as int ``(N, label_bytes)``.
    """
    blobs = _read_tar_members(path, names)
    record = label_bytes + 3 * 32 * 32
    rows = []
    for name in names:  # file order = sample order
        blob = blobs[name]
        if len(blob) % record:
            raise ValueError(f'{name} in {path} is {len(blob)} bytes, not a multiple of {record}')
        rows.append(np.frombuffer(blob, dtype=np.uint8).reshape(-1, record))
    records = np.concatenate(rows)
    data = records[:, label_bytes:].reshape(-1, 3, 32, 32).copy()
    return data, records[:, :label_bytes].astype(int)


class CIFAR10(Dataset):
    """CIFAR-10: 32x32 color images in 10 classes (downloaded once, ~170 MB).

    50,000 training / 10,000 test images.  ``data`` uint8 ``(N, 3, 32, 32)``,
    ``label`` int ``(N,)``.  The default transform (DeZero's) is
    ``Compose([ToFloat(), Normalize(mean=0.5, std=0.5)])``; note that it
    works on 0..255 values, so the result lies in about [-1, 509].

    Read from the binary archive ``cifar-10-binary.tar.gz`` (no pickle); the
    parsed arrays are cached as ``cifar-10-binary.tar.gz.train.npz`` /
    ``.test.npz`` next to it.  To work offline, place the archive in
    ``cache_dir()`` by hand.
    """

    url = 'https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz'
    mirrors = ()
    # Published digest (170,052,171 bytes), from public checksum lists that
    # agree with each other; not recomputed here (no internet).
    sha256 = 'c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd'
    folder = 'cifar-10-batches-bin'

    def __init__(self, train=True,
                 transform=Compose([ToFloat(), Normalize(mean=0.5, std=0.5)]),
                 target_transform=None):
        super().__init__(train, transform, target_transform)

    def _cache_key(self):
        return self.url

    def _members(self):
        if self.train:
            return [f'{self.folder}/data_batch_{i}.bin' for i in range(1, 6)]
        return [f'{self.folder}/test_batch.bin']

    def _parse(self, path):
        data, labels = _read_cifar_records(path, self._members(), label_bytes=1)
        return data, labels[:, 0]

    def prepare(self):
        self.data, self.label = load_cache_npz(self._cache_key(), self.train)
        if self.data is not None:
            return
        path = get_file(self.url, sha256=self.sha256, mirrors=self.mirrors)
        self.data, self.label = self._parse(path)
        save_cache_npz(self.data, self.label, self._cache_key(), self.train)

    def show(self, row=10, col=10, to_file=None):
        """Draw ``row x col`` random images in a grid (needs matplotlib)."""
        return _show_samples(self.data, row, col, to_file)

    @staticmethod
    def labels():
        """``{0: 'airplane', 1: 'automobile', ..., 9: 'truck'}``: class id -> CIFAR-10 class name."""
        names = ['airplane', 'automobile', 'bird', 'cat', 'deer',
                 'dog', 'frog', 'horse', 'ship', 'truck']
        return dict(enumerate(names))


_CIFAR100_COARSE = [
    'aquatic mammals', 'fish', 'flowers', 'food containers', 'fruit and vegetables',
    'household electrical device', 'household furniture', 'insects', 'large carnivores',
    'large man-made outdoor things', 'large natural outdoor scenes',
    'large omnivores and herbivores', 'medium-sized mammals', 'non-insect invertebrates',
    'people', 'reptiles', 'small mammals', 'trees', 'vehicles 1', 'vehicles 2']

# The 100 fine classes in label order (alphabetical, as in the archive's
# fine_label_names.txt, with '_' written as a space).
_CIFAR100_FINE = [
    'apple', 'aquarium fish', 'baby', 'bear', 'beaver', 'bed', 'bee', 'beetle', 'bicycle',
    'bottle', 'bowl', 'boy', 'bridge', 'bus', 'butterfly', 'camel', 'can', 'castle',
    'caterpillar', 'cattle', 'chair', 'chimpanzee', 'clock', 'cloud', 'cockroach', 'couch',
    'crab', 'crocodile', 'cup', 'dinosaur', 'dolphin', 'elephant', 'flatfish', 'forest', 'fox',
    'girl', 'hamster', 'house', 'kangaroo', 'keyboard', 'lamp', 'lawn mower', 'leopard', 'lion',
    'lizard', 'lobster', 'man', 'maple tree', 'motorcycle', 'mountain', 'mouse', 'mushroom',
    'oak tree', 'orange', 'orchid', 'otter', 'palm tree', 'pear', 'pickup truck', 'pine tree',
    'plain', 'plate', 'poppy', 'porcupine', 'possum', 'rabbit', 'raccoon', 'ray', 'road',
    'rocket', 'rose', 'sea', 'seal', 'shark', 'shrew', 'skunk', 'skyscraper', 'snail', 'snake',
    'spider', 'squirrel', 'streetcar', 'sunflower', 'sweet pepper', 'table', 'tank',
    'telephone', 'television', 'tiger', 'tractor', 'train', 'trout', 'tulip', 'turtle',
    'wardrobe', 'whale', 'willow tree', 'wolf', 'woman', 'worm']


class CIFAR100(CIFAR10):
    """CIFAR-100: 100 fine classes grouped into 20 coarse ones (~170 MB download).

    Same images and shapes as ``CIFAR10``; ``label_type`` picks the
    ``'fine'`` (0..99) or ``'coarse'`` (0..19) labels.  Read from
    ``cifar-100-binary.tar.gz`` (no pickle); cached per label type.
    """

    url = 'https://www.cs.toronto.edu/~kriz/cifar-100-binary.tar.gz'  # mirrors: CIFAR10's (none)
    sha256 = '58a81ae192c23a4be8b1804d68e518ed807d710a4eb253b1f2a199162a40d8ec'  # published, as CIFAR10's
    folder = 'cifar-100-binary'

    def __init__(self, train=True,
                 transform=Compose([ToFloat(), Normalize(mean=0.5, std=0.5)]),
                 target_transform=None, label_type='fine'):
        if label_type not in ('fine', 'coarse'):
            raise ValueError(f"label_type must be 'fine' or 'coarse', not {label_type!r}")
        self.label_type = label_type
        super().__init__(train, transform, target_transform)

    def _cache_key(self):
        # One cache per label type (DeZero shared one, so the second type
        # silently got the first one's labels).
        return f'{self.url}.{self.label_type}'

    def _members(self):
        return [f'{self.folder}/{"train" if self.train else "test"}.bin']

    def _parse(self, path):
        data, labels = _read_cifar_records(path, self._members(), label_bytes=2)
        return data, labels[:, 0 if self.label_type == 'coarse' else 1]

    @staticmethod
    def labels(label_type='fine'):
        """``{id: name}`` for the 100 fine classes or, with ``'coarse'``, the 20 groups."""
        if label_type not in ('fine', 'coarse'):
            raise ValueError(f"label_type must be 'fine' or 'coarse', not {label_type!r}")
        return dict(enumerate(_CIFAR100_FINE if label_type == 'fine' else _CIFAR100_COARSE))


class ImageNet(Dataset):
    """Only the 1,000 ImageNet class names (for pretrained models such as VGG16).

    As in DeZero, there are no images: ``ImageNet()`` makes an empty dataset.
    """

    labels_url = ('https://gist.githubusercontent.com/yrevar/942d3a0ac09ec9e5eb3a/raw/'
                  '238f720ff059c1f82f368259d1ca4ffa5dd8f9f5/imagenet1000_clsidx_to_labels.txt')
    labels_sha256 = None  # no published digest known; the file is parsed safely instead

    def __init__(self):
        self.train = True
        self.transform = self.target_transform = _identity
        self.data = self.label = None

    def __len__(self):
        return 0

    @classmethod
    def labels(cls):
        """``{0: 'tench, Tinca tinca', ..., 999: 'toilet tissue, ...'}`` (downloaded once).

        The file is a Python dict literal; it is read with
        ``ast.literal_eval``, which accepts only literals (DeZero ran ``eval``
        on it, i.e. would execute whatever the download contained).
        """
        path = get_file(cls.labels_url, sha256=cls.labels_sha256)
        with open(path, encoding='utf-8') as f:
            text = f.read()
        try:
            labels = ast.literal_eval(text)
        except (ValueError, SyntaxError) as e:
            raise ValueError(f'{path} is not a dict literal of ImageNet labels: {e}') from None
        if not (isinstance(labels, dict)
                and all(isinstance(k, int) and isinstance(v, str) for k, v in labels.items())):
            raise ValueError(f'{path} is not a dict of int -> str')
        return labels


class Shakespeare(Dataset):
    """Tiny Shakespeare (~1.1 MB of text) as one character stream (downloaded once).

    ``data[k]`` is a character id and ``label[k]`` the id of the next
    character (int).  Ids follow each character's first appearance in the
    text (DeZero's numbering).  As in DeZero, ``train`` does not split the
    text: both splits hold the whole stream.

    Attributes:
        char_to_id, id_to_char: the vocabulary (dicts).
    """

    url = 'https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt'
    file_name = 'shakespear.txt'  # DeZero's cache name, so a copied ~/.dezero file works
    sha256 = None  # no published digest known; could not be computed offline

    def prepare(self):
        path = get_file(self.url, self.file_name, sha256=self.sha256)
        with open(path, encoding='utf-8') as f:
            text = f.read()
        char_to_id = {}
        for c in text:
            if c not in char_to_id:
                char_to_id[c] = len(char_to_id)
        ids = np.fromiter((char_to_id[c] for c in text), dtype=int, count=len(text))
        self.char_to_id = char_to_id
        self.id_to_char = {i: c for c, i in char_to_id.items()}
        self.data = ids[:-1]
        self.label = ids[1:]


Shakespear = Shakespeare  # DeZero's spelling


# =============================================================================
# npz caches of parsed arrays
# =============================================================================
def _cache_npz_path(filename, train):
    base = filename[filename.rfind('/') + 1:]
    return os.path.join(cache_dir(), base + ('.train.npz' if train else '.test.npz'))


def load_cache_npz(filename, train=False):
    """Return ``(data, label)`` cached for ``filename`` (a URL or name), or ``(None, None)``.

    The cache file is ``<cache_dir>/<last part of filename>.train.npz`` (or
    ``.test.npz``).  It is read with ``allow_pickle=False``.
    """
    path = _cache_npz_path(filename, train)
    if not os.path.exists(path):
        return None, None
    try:
        with np.load(path, allow_pickle=False) as cached:
            return cached['data'], cached['label']
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as e:
        raise ValueError(f'cannot read the cache file {path} ({e}); delete it and it will be '
                         'rebuilt from the downloaded archive') from None


def save_cache_npz(data, label, filename, train=False):
    """Save ``data`` and ``label`` for ``load_cache_npz`` (atomically); return the path.

    An existing cache file is kept as it is.
    """
    path = _cache_npz_path(filename, train)
    if os.path.exists(path):
        return path
    with atomic_write(path) as f:
        np.savez_compressed(f, data=data, label=label)
    return path
