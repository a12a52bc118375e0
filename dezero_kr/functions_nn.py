"""Neural-network functions: activations, losses, normalisation, dropout,
embedding and attention.

Each operation is a ``Function`` subclass with ``forward`` (raw arrays),
``backward`` (reverse mode) and ``jvp`` (forward mode), written once as the
rule idiom of ``dezero_kr.operators`` says, plus a lowercase wrapper. A few
names are documented *compositions* of other operations instead (the
``_simple`` teaching variants, ``binary_cross_entropy``, ``cross_entropy``,
``embed_id``, ``scaled_dot_product_attention``); their derivatives come from
their parts.

Every derivative is written once (see "how a rule is written" in
``dezero_kr.operators``): the elementwise ops give ``forward`` and ``_slope``
(``Elementwise`` / ``Masking`` derive backward and jvp from it); the others
keep ``backward`` and ``jvp`` side by side around a shared helper.  The rules
run on ``operands``: arrays on a first-order backward, Variables while a graph
is recorded; values ``forward`` computed anyway (the attention
probabilities, the normalised x, the softmax of the loss) come back through
``cached_or_rebuilt``.  Two measured in-place fast paths restate a formula
on arrays, each in one helper: ``_gelu_slope_in_place`` and
``_attention_vjp_packed``.

Losses check integer labels up front (dtype, shape, range) and name the
function and the shapes in the error.

This module is the documented home of these names (``import
dezero_kr.functions_nn``); each lives in the module of its concern, imported
here: ``functions_activation`` (activations, softmax, masked_fill,
dropout), ``functions_loss`` (losses, accuracy, the label checks),
``functions_norm`` (layer, RMS and batch norm) and ``functions_attention``
(attention, embedding).
"""
from dezero_kr.functions_activation import (  # noqa: F401
    Dropout, dropout, GELU, gelu, leaky_relu, LeakyReLU, log_softmax, LogSoftmax, masked_fill,
    MaskedFill, ReLU, relu, Sigmoid, sigmoid, sigmoid_simple, Softmax, softmax, softmax_simple)
from dezero_kr.functions_loss import (  # noqa: F401
    accuracy, binary_cross_entropy, cross_entropy, mean_squared_error, mean_squared_error_simple,
    MeanSquaredError, sigmoid_cross_entropy, SigmoidCrossEntropy, softmax_cross_entropy,
    softmax_cross_entropy_simple, SoftmaxCrossEntropy)
from dezero_kr.functions_norm import (  # noqa: F401
    batch_norm, batch_nrom, BatchNorm, layer_norm, LayerNorm, rms_norm, RMSNorm)
from dezero_kr.functions_attention import (  # noqa: F401
    causal_mask, embed_id, multi_head_attention, MultiHeadAttention, scaled_dot_product_attention,
    ScaledDotProductAttention)
