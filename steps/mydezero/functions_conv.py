#@ file step 56
"""im2col: 커널이 놓이는 창을 펼쳐 합성곱을 행렬 곱 하나로 (56단계).

    col = im2col_array(x, kernel_size, stride, pad)  x (N, C, H, W) ->
    (N*OH*OW, C*KH*KW) (to_matrix=False이면 (N, C, KH, KW, OH, OW))

col2im_array는 그 반대로 창의 값을 제자리에 더한다. im2col, col2im은 미분할 수
있는 Function판이다(서로가 서로의 역전파). 평균 풀링(average_pooling)도 56단계에
둔다: 펼친 창의 평균이다. 합성곱은 57단계, 최대 풀링은 58단계에 더한다.
"""
from mydezero import cuda
from mydezero.core import Function
#@ step 57
from mydezero.core import as_variable
#@ end
#@ step 56-56
from mydezero.functions import broadcast_to
#@ end
#@ step 57
from mydezero.functions import broadcast_to, linear
#@ end
from mydezero.utils import get_conv_outsize, pair
#@ step 57
from mydezero.utils import get_deconv_outsize


# =============================================================================
# 합성곱 (57단계)과 최대 풀링 (58단계): 56단계의 im2col로 창을 펼쳐 행렬
# 계산으로 바꾼다.
#     y = F.conv2d(x, W, b, stride=1, pad=0)  x (N, C, H, W), W (OC, C, KH, KW)
#                                             -> (N, OC, OH, OW)
#     y = F.pooling(x, kernel_size, stride)   최대 풀링 (창의 최댓값, 58단계)
# 역전파도 Function으로 적었으므로(Deconv2d, Conv2DGradW, Pooling2DGrad ...)
# 다시 미분할 수 있다.
# =============================================================================


# 조립한 버전: im2col + linear (58단계의 pooling_simple은 im2col + max)
def conv2d_simple(x, W, b=None, stride=1, pad=0):
    x, W = as_variable(x), as_variable(W)

    Weight = W
    N, C, H, W = x.shape
    OC, C, KH, KW = Weight.shape
    SH, SW = pair(stride)
    PH, PW = pair(pad)
    OH = get_conv_outsize(H, KH, SH, PH)
    OW = get_conv_outsize(W, KW, SW, PW)

    # (N*OH*OW, C*KH*KW)
    col = im2col(x, (KH, KW), stride, pad, to_matrix=True)
    Weight = Weight.reshape(OC, -1).transpose()             # (C*KH*KW, OC)
    t = linear(col, Weight, b)
    y = t.reshape(N, OH, OW, OC).transpose(0, 3, 1, 2)
    return y


# =============================================================================
# conv2d / deconv2d
# =============================================================================
class Conv2d(Function):
    def __init__(self, stride=1, pad=0):
        super().__init__()
        self.stride = pair(stride)
        self.pad = pair(pad)

    def forward(self, x, W, b):
        xp = cuda.get_array_module(x)

        KH, KW = W.shape[2:]
        col = im2col_array(x, (KH, KW), self.stride, self.pad, to_matrix=False)

        # col (N, C, KH, KW, OH, OW)와 W (OC, C, KH, KW)를 (C, KH, KW)에 대해
        # 곱해 더한다
        y = xp.tensordot(col, W, ((1, 2, 3), (1, 2, 3)))  # (N, OH, OW, OC)
        if b is not None:
            y += b
        y = xp.rollaxis(y, 3, 1)  # (N, OC, OH, OW)
        return y

    def backward(self, gy):
        x, W, b = self.inputs
        # ==== gx: 합성곱을 거꾸로 (전치 합성곱) ====
        gx = deconv2d(gy, W, b=None, stride=self.stride, pad=self.pad,
                      outsize=(x.shape[2], x.shape[3]))
        # ==== gW ====
        gW = Conv2DGradW(self)(x, gy)
        # ==== gb ====
        gb = None
        if b.data is not None:
            gb = gy.sum(axis=(0, 2, 3))
        return gx, gW, gb


def conv2d(x, W, b=None, stride=1, pad=0):
    return Conv2d(stride, pad)(x, W, b)


class Deconv2d(Function):
    """전치 합성곱: conv2d의 x에 대한 역전파와 같은 계산. W (C, OC, KH, KW)."""

    def __init__(self, stride=1, pad=0, outsize=None):
        super().__init__()
        self.stride = pair(stride)
        self.pad = pair(pad)
        self.outsize = outsize

    def forward(self, x, W, b):
        xp = cuda.get_array_module(x)

        Weight = W
        SH, SW = self.stride
        PH, PW = self.pad
        C, OC, KH, KW = Weight.shape
        N, C, H, W = x.shape
        if self.outsize is None:
            out_h = get_deconv_outsize(H, KH, SH, PH)
            out_w = get_deconv_outsize(W, KW, SW, PW)
        else:
            out_h, out_w = pair(self.outsize)
        img_shape = (N, OC, out_h, out_w)

        gcol = xp.tensordot(Weight, x, (0, 1))  # (OC, KH, KW, N, H, W)
        gcol = xp.rollaxis(gcol, 3)             # (N, OC, KH, KW, H, W)
        y = col2im_array(gcol, img_shape, (KH, KW), self.stride, self.pad,
                         to_matrix=False)
        if b is not None:
            y += b.reshape((1, b.size, 1, 1))
        return y

    def backward(self, gy):
        x, W, b = self.inputs

        gx = conv2d(gy, W, b=None, stride=self.stride, pad=self.pad)
        gW = Conv2DGradW(self)(gy, x)
        gb = None
        if b.data is not None:
            gb = gy.sum(axis=(0, 2, 3))
        return gx, gW, gb


def deconv2d(x, W, b=None, stride=1, pad=0, outsize=None):
    return Deconv2d(stride, pad, outsize)(x, W, b)


class Conv2DGradW(Function):
    """conv2d의 W에 대한 기울기: gW = sum over (N, OH, OW) of gy * im2col(x).
    """

    def __init__(self, conv2d):
        W = conv2d.inputs[1]
        kh, kw = W.shape[2:]
        self.kernel_size = (kh, kw)
        self.stride = conv2d.stride
        self.pad = conv2d.pad

    def forward(self, x, gy):
        xp = cuda.get_array_module(x)

        col = im2col_array(x, self.kernel_size, self.stride, self.pad,
                           to_matrix=False)
        gW = xp.tensordot(gy, col, ((0, 2, 3), (0, 4, 5)))
        return gW

    def backward(self, ggW):
        # gW는 x와 gy에 대해 선형이다: 들어온 기울기 ggW를 W 자리에 넣은
        # 합성곱이 답
        x, gy = self.inputs
        xh, xw = x.shape[2:]
        gx = deconv2d(gy, ggW, stride=self.stride, pad=self.pad,
                      outsize=(xh, xw))
        ggy = conv2d(x, ggW, stride=self.stride, pad=self.pad)
        return gx, ggy
#@ end
#@ step 58


# =============================================================================
# 최대 풀링 (58단계: VGG16이 쓴다)
# =============================================================================
def pooling_simple(x, kernel_size, stride=1, pad=0):
    x = as_variable(x)

    N, C, H, W = x.shape
    KH, KW = pair(kernel_size)
    PH, PW = pair(pad)
    SH, SW = pair(stride)
    OH = get_conv_outsize(H, KH, SH, PH)
    OW = get_conv_outsize(W, KW, SW, PW)

    col = im2col(x, kernel_size, stride, pad, to_matrix=True)
    col = col.reshape(-1, KH * KW)
    y = col.max(axis=1)
    y = y.reshape(N, OH, OW, C).transpose(0, 3, 1, 2)
    return y


class Pooling(Function):
    """최대 풀링. 순전파에서 창마다 최댓값의 자리(indexes)를 기억해 둔다."""

    def __init__(self, kernel_size, stride=1, pad=0):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.pad = pad

    def forward(self, x):
        col = im2col_array(x, self.kernel_size, self.stride, self.pad,
                           to_matrix=False)

        N, C, KH, KW, OH, OW = col.shape
        col = col.reshape(N, C, KH * KW, OH, OW)
        self.indexes = col.argmax(axis=2)  # 같은 값이 여럿이면 처음 것
        y = col.max(axis=2)
        return y

    def backward(self, gy):
        return Pooling2DGrad(self)(gy)


class Pooling2DGrad(Function):
    """풀링의 역전파: gy를 최댓값이던 자리에만 놓고 col2im으로 되돌린다."""

    def __init__(self, mpool2d):
        self.mpool2d = mpool2d
        self.kernel_size = mpool2d.kernel_size
        self.stride = mpool2d.stride
        self.pad = mpool2d.pad
        self.input_shape = mpool2d.inputs[0].shape
        self.dtype = mpool2d.inputs[0].dtype
        self.indexes = mpool2d.indexes

    def forward(self, gy):
        xp = cuda.get_array_module(gy)

        N, C, OH, OW = gy.shape
        N, C, H, W = self.input_shape
        KH, KW = pair(self.kernel_size)

        gcol = xp.zeros((N * C * OH * OW * KH * KW), dtype=self.dtype)
        indexes = (self.indexes.ravel()
                   + xp.arange(0, self.indexes.size * KH * KW, KH * KW))
        gcol[indexes] = gy.ravel()
        gcol = gcol.reshape(N, C, OH, OW, KH, KW)
        gcol = xp.swapaxes(gcol, 2, 4)
        gcol = xp.swapaxes(gcol, 3, 5)  # (N, C, KH, KW, OH, OW)

        gx = col2im_array(gcol, (N, C, H, W), self.kernel_size, self.stride,
                          self.pad, to_matrix=False)
        return gx

    def backward(self, ggx):
        f = Pooling2DWithIndexes(self.mpool2d)
        return f(ggx)


class Pooling2DWithIndexes(Function):
    """순전파 때 기억한 자리의 값을 꺼낸다 (Pooling2DGrad의 역전파)."""

    def __init__(self, mpool2d):
        self.kernel_size = mpool2d.kernel_size
        self.stride = mpool2d.stride
        self.pad = mpool2d.pad
        self.input_shape = mpool2d.inputs[0].shape
        self.dtype = mpool2d.inputs[0].dtype
        self.indexes = mpool2d.indexes

    def forward(self, x):
        xp = cuda.get_array_module(x)
        col = im2col_array(x, self.kernel_size, self.stride, self.pad,
                           to_matrix=False)
        N, C, KH, KW, OH, OW = col.shape
        col = col.reshape(N, C, KH * KW, OH, OW)
        col = col.transpose(0, 1, 3, 4, 2).reshape(-1, KH * KW)
        indexes = self.indexes.ravel()
        col = col[xp.arange(len(indexes)), indexes]
        return col.reshape(N, C, OH, OW)

    def backward(self, gy):
        return Pooling2DGrad(self)(gy)


def pooling(x, kernel_size, stride=1, pad=0):
    return Pooling(kernel_size, stride, pad)(x)
#@ end


# =============================================================================
# im2col / col2im: 미분할 수 있는 함수와 배열 버전
# =============================================================================
class Im2col(Function):
    def __init__(self, kernel_size, stride, pad, to_matrix):
        super().__init__()
        self.input_shape = None
        self.kernel_size = kernel_size
        self.stride = stride
        self.pad = pad
        self.to_matrix = to_matrix

    def forward(self, x):
        self.input_shape = x.shape
        y = im2col_array(x, self.kernel_size, self.stride, self.pad,
                         self.to_matrix)
        return y

    def backward(self, gy):
        gx = col2im(gy, self.input_shape, self.kernel_size, self.stride,
                    self.pad, self.to_matrix)
        return gx


def im2col(x, kernel_size, stride=1, pad=0, to_matrix=True):
    """x (N, C, H, W)의 창들을 펼친다: to_matrix이면 (N*OH*OW, C*KH*KW),
    아니면 (N, C, KH, KW, OH, OW)."""
    y = Im2col(kernel_size, stride, pad, to_matrix)(x)
    return y


class Col2im(Function):
    def __init__(self, input_shape, kernel_size, stride, pad, to_matrix):
        super().__init__()
        self.input_shape = input_shape
        self.kernel_size = kernel_size
        self.stride = stride
        self.pad = pad
        self.to_matrix = to_matrix

    def forward(self, x):
        y = col2im_array(x, self.input_shape, self.kernel_size, self.stride,
                         self.pad, self.to_matrix)
        return y

    def backward(self, gy):
        gx = im2col(gy, self.kernel_size, self.stride, self.pad,
                    self.to_matrix)
        return gx


def col2im(x, input_shape, kernel_size, stride=1, pad=0, to_matrix=True):
    """col (im2col의 출력 모양) -> (input_shape). 역전파는 im2col."""
    return Col2im(input_shape, kernel_size, stride, pad, to_matrix)(x)


def im2col_array(img, kernel_size, stride, pad, to_matrix=True):
    """img (N, C, H, W) -> col (N*OH*OW, C*KH*KW) (to_matrix=False이면
    (N, C, KH, KW, OH, OW)). 커널의 칸 (j, i)마다 그 칸이 모든 출력 위치에서
    보는 픽셀을 슬라이스 하나로 자른다:
    img[:, :, j:j+SH*OH:SH, i:i+SW*OW:SW]."""
    xp = cuda.get_array_module(img)

    N, C, H, W = img.shape
    KH, KW = pair(kernel_size)
    SH, SW = pair(stride)
    PH, PW = pair(pad)
    OH = get_conv_outsize(H, KH, SH, PH)
    OW = get_conv_outsize(W, KW, SW, PW)

    # 오른쪽/아래는 스트라이드만큼 더 덧대 둔다: 아래 슬라이스가 끝을 넘지 않게
    img = xp.pad(img, ((0, 0), (0, 0), (PH, PH + SH - 1), (PW, PW + SW - 1)),
                 mode='constant', constant_values=(0,))
    col = xp.empty((N, C, KH, KW, OH, OW), dtype=img.dtype)

    for j in range(KH):
        j_lim = j + SH * OH
        for i in range(KW):
            i_lim = i + SW * OW
            col[:, :, j, i, :, :] = img[:, :, j:j_lim:SH, i:i_lim:SW]

    if to_matrix:
        col = col.transpose((0, 4, 5, 1, 2, 3)).reshape((N * OH * OW, -1))

    return col


def col2im_array(col, img_shape, kernel_size, stride, pad, to_matrix=True):
    """im2col_array의 반대(전치): col -> img (img_shape). 창의 값을 제자리에
    더한다 (겹친 픽셀에는 여러 창의 값이 쌓인다)."""
    xp = cuda.get_array_module(col)

    N, C, H, W = img_shape
    KH, KW = pair(kernel_size)
    SH, SW = pair(stride)
    PH, PW = pair(pad)
    OH = get_conv_outsize(H, KH, SH, PH)
    OW = get_conv_outsize(W, KW, SW, PW)

    if to_matrix:
        col = col.reshape(N, OH, OW, C, KH, KW).transpose(0, 3, 4, 5, 1, 2)

    img = xp.zeros((N, C, H + 2 * PH + SH - 1, W + 2 * PW + SW - 1),
                   dtype=col.dtype)
    for j in range(KH):
        j_lim = j + SH * OH
        for i in range(KW):
            i_lim = i + SW * OW
            img[:, :, j:j_lim:SH, i:i_lim:SW] += col[:, :, j, i, :, :]
    return img[:, :, PH:H + PH, PW:W + PW]


# =============================================================================
# 평균 풀링 (56단계): im2col로 펼친 창마다 평균, 역전파는 col2im으로 되돌린다
# =============================================================================
class AveragePooling(Function):
    """평균 풀링. 역전파: 창 전체에 gy / (KH * KW)."""

    def __init__(self, kernel_size, stride=1, pad=0):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.pad = pad
        self.input_shape = None

    def forward(self, x):
        self.input_shape = x.shape
        col = im2col_array(x, self.kernel_size, self.stride, self.pad,
                           to_matrix=False)
        y = col.mean(axis=(2, 3))
        return y

    def backward(self, gy):
        N, C, OH, OW = gy.shape
        KH, KW = pair(self.kernel_size)
        gy = gy / (KW * KH)
        gcol = broadcast_to(gy.reshape(-1), (KH, KW, N * C * OH * OW))
        gcol = gcol.reshape(KH, KW, N, C, OH, OW).transpose(2, 3, 0, 1, 4, 5)
        gx = col2im(gcol, self.input_shape, self.kernel_size, self.stride,
                    self.pad, to_matrix=False)
        return gx


def average_pooling(x, kernel_size, stride=1, pad=0):
    return AveragePooling(kernel_size, stride, pad)(x)
