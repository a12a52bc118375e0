"""Models: ``Model`` (a Layer that can draw its graph) and ready-made networks.

``Sequential``, ``MLP``, ``VGG16``, ``ResNet`` (50/101/152) with its blocks
``BuildingBlock``, ``BottleneckA``, ``BottleneckB``, and ``GPT`` (defined in
``dezero_kr.transformer``, re-exported here).  DeZero's
``SqueezeNet`` was an empty stub and is not provided.

Pretrained weights (``pretrained=True``) are DeZero's ``.npz`` files,
downloaded once into ``dezero_kr.download.cache_dir()``.  Their SHA-256 could
not be verified when this module was written, so ``WEIGHTS_SHA256`` is None and
loading warns; pin a digest you trust with ``VGG16.WEIGHTS_SHA256 = '<hex>'``
(the download is then checked, and a mismatch is an error).  Without a network
the error says where to put the file by hand.
"""
import warnings

import numpy as np

from dezero_kr import download
from dezero_kr.core import reshape
from dezero_kr.functions_conv import pooling
from dezero_kr.functions_math import mean
from dezero_kr.functions_nn import dropout, relu, sigmoid
from dezero_kr.graph import plot_dot_graph
from dezero_kr.layers import BatchNorm, Conv2d, Layer, Linear
from dezero_kr.transformer import GPT  # noqa: F401 (re-exported: DeZero users look for models here)


class Model(Layer):
    """A Layer with ``plot``: draws the graph of ``self(*inputs)`` with parameter paths as labels."""

    def plot(self, *inputs, to_file='model.png'):
        """Run ``self(*inputs)`` and draw its graph to ``to_file`` (see ``graph.plot_dot_graph``).

        Parameters are labelled with their paths (``'l0/W'``); the return
        value is ``plot_dot_graph``'s (an IPython image in a notebook, else None).
        Rendering errors (no Graphviz ``dot``) are ``plot_dot_graph``'s.
        """
        return plot_dot_graph(self(*inputs), verbose=True, to_file=to_file, param_names=self)


class Sequential(Model):
    """Apply ``layers`` in order: y = f_n(... f_1(f_0(x))).

    Layers are registered as ``l0, l1, ...`` (plain functions such as
    ``F.relu`` are allowed and own no parameters).
    """

    def __init__(self, *layers):
        super().__init__()
        self.layers = []
        for i, layer in enumerate(layers):
            setattr(self, f'l{i}', layer)
            self.layers.append(layer)

    def forward(self, x):
        """Each layer applied to the previous one's output; shapes are the layers'."""
        for layer in self.layers:
            x = layer(x)
        return x


class MLP(Model):
    """Fully connected network: ``Linear`` layers of ``fc_output_sizes``, ``activation`` between them.

    y = l_n(act(... act(l_0(x)))): x (N, I) -> (N, fc_output_sizes[-1]); no
    activation after the last layer.  Input sizes are taken from the first
    call (lazy Linear layers); ``activation`` defaults to ``F.sigmoid`` as in DeZero.
    """

    def __init__(self, fc_output_sizes, activation=sigmoid):
        super().__init__()
        self.activation = activation
        self.layers = []
        for i, out_size in enumerate(fc_output_sizes):
            layer = Linear(out_size)
            setattr(self, f'l{i}', layer)
            self.layers.append(layer)

    def forward(self, x):
        """x (N, I) -> (N, fc_output_sizes[-1])."""
        for layer in self.layers[:-1]:
            x = self.activation(layer(x))
        return self.layers[-1](x)


def _load_pretrained(model, url, sha256):
    """Download (once) and load ``model``'s weights; OSError says that pretrained=False avoids it."""
    what = type(model).__name__
    if sha256 is None:
        warnings.warn(f'{what}(pretrained=True): no SHA-256 is pinned for {url}, so the file is used '
                      f'unverified; set {what}.WEIGHTS_SHA256 = "<hex digest>" to check it', stacklevel=3)
    try:
        path = download.get_file(url, sha256=sha256)  # looked up on the module: tests replace it
    except OSError as e:
        raise type(e)(f'{what}(pretrained=True) needs its weights file; pretrained=False builds the '
                      f'network without it.\n{e}') from e
    model.load_weights(path)


# =============================================================================
# VGG16
# =============================================================================
class VGG16(Model):
    """VGG-16 (Simonyan & Zisserman): 13 3x3 convolutions in 5 blocks, 3 fully connected layers.

    Input (N, 3, H, W) with H, W multiples of 32 (224 for the pretrained
    weights, whose fc6 expects 7 x 7 x 512 features); output (N, 1000) scores.
    ``pretrained=True`` loads DeZero's weights (see the module docstring: a
    warning while no SHA-256 is pinned; ``OSError``/``download.DownloadError``
    when the file cannot be had).
    """
    WEIGHTS_PATH = 'https://github.com/koki0702/dezero-models/releases/download/v0.1/vgg16.npz'
    WEIGHTS_SHA256 = None
    _BLOCKS = ((64, 2), (128, 2), (256, 3), (512, 3), (512, 3))

    def __init__(self, pretrained=False):
        super().__init__()
        for b, (channels, n) in enumerate(self._BLOCKS, start=1):
            for i in range(1, n + 1):
                setattr(self, f'conv{b}_{i}', Conv2d(channels, kernel_size=3, stride=1, pad=1))
        self.fc6 = Linear(4096)
        self.fc7 = Linear(4096)
        self.fc8 = Linear(1000)
        if pretrained:
            _load_pretrained(self, self.WEIGHTS_PATH, self.WEIGHTS_SHA256)

    def forward(self, x):
        """x (N, 3, H, W) -> (N, 1000): ReLU after every layer but fc8, 2x2 max pooling after each
        block, dropout (ratio 0.5, training only) after fc6 and fc7."""
        for b, (_, n) in enumerate(self._BLOCKS, start=1):
            for i in range(1, n + 1):
                x = relu(getattr(self, f'conv{b}_{i}')(x))
            x = pooling(x, 2, 2)
        x = reshape(x, (x.shape[0], -1))
        x = dropout(relu(self.fc6(x)))
        x = dropout(relu(self.fc7(x)))
        return self.fc8(x)

    @staticmethod
    def preprocess(image, size=(224, 224), dtype=np.float32):
        """PIL image -> (3, H, W) BGR array minus the ImageNet channel means (the weights' convention)."""
        image = image.convert('RGB')
        if size:
            image = image.resize(size)
        x = np.asarray(image, dtype=dtype)[:, :, ::-1]
        x = x - np.array([103.939, 116.779, 123.68], dtype=dtype)
        return np.ascontiguousarray(x.transpose((2, 0, 1)))


# =============================================================================
# ResNet
# =============================================================================
class BottleneckA(Layer):
    """Bottleneck block that changes shape: 1x1 -> 3x3 -> 1x1 convolutions plus a 1x1 projection shortcut.

    ``downsample_fb=True`` strides the 3x3 convolution (fb.resnet.torch style),
    otherwise the first 1x1 (the original paper).
    """

    def __init__(self, in_channels, mid_channels, out_channels, stride=2, downsample_fb=False):
        super().__init__()
        stride_1x1, stride_3x3 = (1, stride) if downsample_fb else (stride, 1)
        self.conv1 = Conv2d(mid_channels, 1, stride_1x1, 0, nobias=True)
        self.bn1 = BatchNorm()
        self.conv2 = Conv2d(mid_channels, 3, stride_3x3, 1, nobias=True)
        self.bn2 = BatchNorm()
        self.conv3 = Conv2d(out_channels, 1, 1, 0, nobias=True)
        self.bn3 = BatchNorm()
        self.conv4 = Conv2d(out_channels, 1, stride, 0, nobias=True)
        self.bn4 = BatchNorm()

    def forward(self, x):
        """relu(bn3(conv3(relu(bn2(conv2(relu(bn1(conv1(x)))))))) + bn4(conv4(x))):
        (N, in_channels, H, W) -> (N, out_channels, H / stride, W / stride)."""
        h1 = relu(self.bn1(self.conv1(x)))
        h1 = relu(self.bn2(self.conv2(h1)))
        h1 = self.bn3(self.conv3(h1))
        h2 = self.bn4(self.conv4(x))
        return relu(h1 + h2)


class BottleneckB(Layer):
    """Bottleneck block that keeps the shape: 1x1 -> 3x3 -> 1x1 convolutions plus the identity."""

    def __init__(self, in_channels, mid_channels):
        super().__init__()
        self.conv1 = Conv2d(mid_channels, 1, 1, 0, nobias=True)
        self.bn1 = BatchNorm()
        self.conv2 = Conv2d(mid_channels, 3, 1, 1, nobias=True)
        self.bn2 = BatchNorm()
        self.conv3 = Conv2d(in_channels, 1, 1, 0, nobias=True)
        self.bn3 = BatchNorm()

    def forward(self, x):
        """relu(bn3(conv3(relu(bn2(conv2(relu(bn1(conv1(x)))))))) + x), same shape as x."""
        h = relu(self.bn1(self.conv1(x)))
        h = relu(self.bn2(self.conv2(h)))
        h = self.bn3(self.conv3(h))
        return relu(h + x)


class BuildingBlock(Layer):
    """One ResNet stage: a ``BottleneckA`` (``a``), then ``n_layers - 1`` ``BottleneckB``
    (``b1``, ``b2``, ...)."""

    def __init__(self, n_layers=None, in_channels=None, mid_channels=None, out_channels=None, stride=None,
                 downsample_fb=None):
        super().__init__()
        self.a = BottleneckA(in_channels, mid_channels, out_channels, stride, downsample_fb)
        self._forward = ['a']
        for i in range(1, n_layers):
            setattr(self, f'b{i}', BottleneckB(out_channels, mid_channels))
            self._forward.append(f'b{i}')

    def forward(self, x):
        """``a`` then ``b1``, ``b2``, ...: (N, in_channels, H, W) -> (N, out_channels, H / stride, W / stride)."""
        for name in self._forward:
            x = getattr(self, name)(x)
        return x


def _global_average_pooling_2d(x):
    """(N, C, H, W) -> (N, C): the mean over each feature map."""
    return mean(x, axis=(2, 3))


class ResNet(Model):
    """ResNet-50/101/152 (He et al.): 7x7 convolution, max pooling, four bottleneck stages, 1000-way fc.

    Input (N, 3, H, W) (224 x 224 for the pretrained weights); output (N, 1000).
    ``n_layers`` other than 50, 101, 152 raises ``ValueError``; ``pretrained``
    as in ``VGG16``.
    """
    WEIGHTS_PATH = 'https://github.com/koki0702/dezero-models/releases/download/v0.1/resnet{}.npz'
    WEIGHTS_SHA256 = {50: None, 101: None, 152: None}
    _STAGES = {50: (3, 4, 6, 3), 101: (3, 4, 23, 3), 152: (3, 8, 36, 3)}

    def __init__(self, n_layers=152, pretrained=False):
        super().__init__()
        if n_layers not in self._STAGES:
            raise ValueError(f'ResNet: n_layers must be 50, 101 or 152, got {n_layers!r}')
        block = self._STAGES[n_layers]
        self.conv1 = Conv2d(64, 7, 2, 3)
        self.bn1 = BatchNorm()
        self.res2 = BuildingBlock(block[0], 64, 64, 256, 1)
        self.res3 = BuildingBlock(block[1], 256, 128, 512, 2)
        self.res4 = BuildingBlock(block[2], 512, 256, 1024, 2)
        self.res5 = BuildingBlock(block[3], 1024, 512, 2048, 2)
        self.fc6 = Linear(1000)
        if pretrained:
            _load_pretrained(self, self.WEIGHTS_PATH.format(n_layers), self.WEIGHTS_SHA256.get(n_layers))

    def forward(self, x):
        """x (N, 3, H, W) -> (N, 1000): stem, four stages, global average pooling, fc6."""
        x = relu(self.bn1(self.conv1(x)))
        x = pooling(x, kernel_size=3, stride=2)
        x = self.res2(x)
        x = self.res3(x)
        x = self.res4(x)
        x = self.res5(x)
        x = _global_average_pooling_2d(x)
        return self.fc6(x)


class ResNet152(ResNet):
    """``ResNet(152, pretrained)``: stages of 3, 8, 36, 3 bottleneck blocks."""

    def __init__(self, pretrained=False):
        super().__init__(152, pretrained)


class ResNet101(ResNet):
    """``ResNet(101, pretrained)``: stages of 3, 4, 23, 3 bottleneck blocks."""

    def __init__(self, pretrained=False):
        super().__init__(101, pretrained)


class ResNet50(ResNet):
    """``ResNet(50, pretrained)``: stages of 3, 4, 6, 3 bottleneck blocks."""

    def __init__(self, pretrained=False):
        super().__init__(50, pretrained)

