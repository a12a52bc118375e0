"""Transforms applied to one sample at a time (DeZero-compatible).

Array transforms work on NumPy arrays and need nothing else:
``Normalize``, ``Flatten``, ``AsType`` (= ``ToFloat``), ``ToInt``,
``RandomHorizontalFlip`` (also accepts PIL images) and ``Compose``.

Image transforms take a ``PIL.Image``: ``Convert``, ``Resize``,
``CenterCrop``, ``ToArray`` (PIL -> CHW array) and ``ToPIL`` (CHW array ->
PIL).  Pillow is imported only when one of them runs, so ``import
dezero_kr.transforms`` works without it; a missing Pillow gives an error that
says ``pip install pillow``.

Shapes: an image array is ``(C, H, W)`` (channels first, like DeZero's MNIST
``(1, 28, 28)`` and CIFAR ``(3, 32, 32)``); a gray image may also be ``(H, W)``.
"""
import numpy as np

__all__ = ['Compose', 'Convert', 'Resize', 'CenterCrop', 'ToArray', 'ToPIL',
           'RandomHorizontalFlip', 'Normalize', 'Flatten', 'AsType', 'ToFloat', 'ToInt',
           'BILINEAR', 'NEAREST']

# PIL's resampling codes (Image.Resampling.NEAREST == 0, BILINEAR == 2),
# written as plain ints so that the default of Resize needs no PIL import.
NEAREST = 0
BILINEAR = 2


def _pil_image():
    """Pillow's ``Image`` module; ``ImportError`` saying how to install Pillow when it is missing."""
    try:
        from PIL import Image  # optional extra: Pillow is loaded only by the PIL transforms
    except ImportError as e:
        raise ImportError('This transform works on PIL images and needs Pillow: '
                          'pip install pillow') from e
    return Image


def _is_pil_image(obj):
    # Checks the type without importing Pillow for plain arrays.
    return any(cls.__module__.startswith('PIL.') and cls.__name__ == 'Image'
               for cls in type(obj).__mro__)


def _pair(size):
    if isinstance(size, (int, np.integer)):
        return int(size), int(size)
    if isinstance(size, (tuple, list)) and len(size) == 2:
        return int(size[0]), int(size[1])
    raise ValueError(f'size must be an int or a pair of ints, not {size!r}')


class Compose:
    """Apply ``transforms`` one after another: ``Compose([Flatten(), ToFloat()])``."""

    def __init__(self, transforms=None):
        # None instead of DeZero's mutable [] default; the behaviour is the same.
        self.transforms = list(transforms) if transforms is not None else []

    def __call__(self, img):
        """``img`` passed through every transform in order; the last one's result."""
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self):
        inner = ', '.join(repr(t) for t in self.transforms)
        return f'Compose([{inner}])'


# =============================================================================
# Transforms for PIL images
# =============================================================================
class Convert:
    """Convert a PIL image's mode: ``'RGB'``, ``'L'`` (gray), ... or ``'BGR'``.

    ``'BGR'`` returns an RGB-mode image whose red and blue bands are swapped
    (what Caffe-trained models such as VGG16 expect).
    """

    def __init__(self, mode='RGB'):
        self.mode = mode

    def __call__(self, img):
        """The image in ``mode`` (a new PIL image); ``ImportError`` without Pillow."""
        Image = _pil_image()
        if self.mode == 'BGR':
            r, g, b = img.convert('RGB').split()
            return Image.merge('RGB', (b, g, r))
        return img.convert(self.mode)


class Resize:
    """Resize a PIL image to ``size`` = ``(width, height)`` (or an int for a square).

    ``mode`` is a PIL resampling filter; the default ``BILINEAR`` (2) matches
    ``PIL.Image.BILINEAR``.
    """

    def __init__(self, size, mode=BILINEAR):
        self.size = _pair(size)
        self.mode = mode

    def __call__(self, img):
        """The image resized to ``size`` with the ``mode`` filter (a new PIL image)."""
        _pil_image()
        return img.resize(self.size, self.mode)


class CenterCrop:
    """Cut the central ``size`` = ``(width, height)`` region out of a PIL image.

    When the margin is odd the extra pixel is dropped on the right/bottom side.
    """

    def __init__(self, size):
        self.size = _pair(size)

    def __call__(self, img):
        """The central ``size`` region of the image (a new PIL image)."""
        _pil_image()
        width, height = img.size
        out_w, out_h = self.size
        left = (width - out_w) // 2
        top = (height - out_h) // 2
        return img.crop((left, top, left + out_w, top + out_h))


class ToArray:
    """PIL image -> array ``(C, H, W)`` of ``dtype``; arrays pass through unchanged.

    A gray (``'L'``) image becomes ``(1, H, W)``.
    """

    def __init__(self, dtype=np.float32):
        self.dtype = dtype

    def __call__(self, img):
        """A ``(C, H, W)`` array of ``dtype``; an array is returned as it is, anything else is a ``TypeError``."""
        if isinstance(img, np.ndarray):
            return img
        if _is_pil_image(img):
            array = np.asarray(img)
            if array.ndim == 2:
                array = array[np.newaxis]
            else:
                array = array.transpose(2, 0, 1)
            return array.astype(self.dtype)
        raise TypeError(f'ToArray expects a PIL image or a numpy array, not {type(img).__name__}')


class ToPIL:
    """Array ``(C, H, W)`` (C = 1, 3 or 4) or ``(H, W)`` -> PIL image.

    Pillow needs ``uint8`` for RGB images; convert first (``AsType(np.uint8)``).
    """

    def __call__(self, array):
        """A PIL image of ``array`` (channels moved last; one channel becomes a gray image)."""
        Image = _pil_image()
        array = np.asarray(array)
        if array.ndim == 3:
            array = array.transpose(1, 2, 0)
            if array.shape[2] == 1:
                array = array[:, :, 0]
        return Image.fromarray(array)


# =============================================================================
# Transforms for arrays (and flips for both)
# =============================================================================
class RandomHorizontalFlip:
    """Mirror an image left-right with probability ``p``.

    Works on PIL images and on arrays whose last axis is the width
    (``(C, H, W)`` or ``(H, W)``).  ``rng`` is a seed or a
    ``numpy.random.Generator``; pass one for reproducible augmentation.  DeZero
    shipped this class as an empty stub; here it really flips.  ``p`` outside
    [0, 1] raises ``ValueError``.
    """

    def __init__(self, p=0.5, rng=None):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f'p must be in [0, 1], not {p}')
        self.p = p
        self.rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)

    def __call__(self, img):
        """The image mirrored (probability ``p``) or unchanged; a flipped array is a new contiguous copy."""
        if self.rng.random() >= self.p:
            return img
        if _is_pil_image(img):
            Image = _pil_image()
            # Image.Transpose exists since Pillow 9.1; older versions keep the
            # constant on Image itself.
            return img.transpose(getattr(Image, 'Transpose', Image).FLIP_LEFT_RIGHT)
        # A copy, so later in-place edits never write through to the dataset.
        return np.ascontiguousarray(np.asarray(img)[..., ::-1])


class Normalize:
    """``(x - mean) / std``; ``mean``/``std`` are scalars or one value per channel.

    Per-channel values are laid along the first axis (the channel of a
    ``(C, H, W)`` image) and converted to the array's dtype, so a float32 image
    stays float32.
    """

    def __init__(self, mean=0, std=1):
        self.mean = mean
        self.std = std

    @staticmethod
    def _per_channel(value, array):
        if np.isscalar(value):
            return value
        value = np.asarray(value, dtype=array.dtype)
        return value.reshape((-1,) + (1,) * (array.ndim - 1))

    def __call__(self, array):
        """``(array - mean) / std``, per-channel values laid along axis 0 (a new array)."""
        mean = self._per_channel(self.mean, array)
        std = self._per_channel(self.std, array)
        return (array - mean) / std

    def __repr__(self):
        return f'Normalize(mean={self.mean!r}, std={self.std!r})'


class Flatten:
    """Any shape -> 1-D copy, e.g. ``(1, 28, 28)`` -> ``(784,)``."""

    def __call__(self, array):
        """``array.flatten()``: a 1-D copy."""
        return array.flatten()

    def __repr__(self):
        return 'Flatten()'


class AsType:
    """Cast to ``dtype`` (default float32)."""

    def __init__(self, dtype=np.float32):
        self.dtype = dtype

    def __call__(self, array):
        """``array.astype(dtype)``: a converted copy."""
        return array.astype(self.dtype)

    def __repr__(self):
        return f'{type(self).__name__}({np.dtype(self.dtype).name})'


ToFloat = AsType


class ToInt(AsType):
    """Cast to ``dtype`` (default Python ``int``, i.e. int64 on most systems)."""

    def __init__(self, dtype=int):
        super().__init__(dtype)
