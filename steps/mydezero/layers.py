#@ file step 44
"""층 (import mydezero.layers as L): 매개변수(Parameter)를 가진 상자
(44단계부터).

Layer는 속성에 Parameter나 다른 Layer를 넣으면 그 이름을 기억해 둔다(_params).
params()는 그 이름들을 따라가며 매개변수를 하나씩 내준다. DeZero는 이름을 set에
담았지만 여기서는 dict에 담는다: 넣은 순서가 유지되어 실행할 때마다 같은 순서가
나온다.
"""
import math
#@ step 53
import os
#@ end
import weakref

import numpy as np

#@ step 52
from mydezero import cuda
#@ end
import mydezero.functions as F
from mydezero.core import Parameter
#@ step 57
from mydezero.utils import pair
#@ end


class Layer:
    def __init__(self):
        self._params = {}  # 이름 -> None (넣은 순서를 기억하는 집합)

    def __setattr__(self, name, value):
#@ step 44-44
        kinds = Parameter
#@ end
#@ step 45
        kinds = (Parameter, Layer)  # 층 안의 층도 모은다
#@ end
        if isinstance(value, kinds):
            self._params[name] = None
        super().__setattr__(name, value)

    def __call__(self, *inputs):
        outputs = self.forward(*inputs)
        if not isinstance(outputs, tuple):
            outputs = (outputs,)
        self.inputs = [weakref.ref(x) for x in inputs]
        self.outputs = [weakref.ref(y) for y in outputs]
        return outputs if len(outputs) > 1 else outputs[0]

    def forward(self, inputs):
        raise NotImplementedError()

    def params(self):
        """이 층과 안쪽 층의 Parameter를 하나씩 내준다 (yield)."""
        for name in self._params:
            obj = self.__dict__[name]

            if isinstance(obj, Layer):  # 층 안의 층 (45단계)
                yield from obj.params()
            else:
                yield obj

    def cleargrads(self):
        for param in self.params():
            param.cleargrad()
#@ step 45

    def named_params(self, prefix=''):
        """('l0/W', Parameter) 쌍을 하나씩: 안쪽 층의 매개변수는 '/'로 이은
        경로로."""
        for name in self._params:
            obj = self.__dict__[name]

            if isinstance(obj, Layer):
                yield from obj.named_params(prefix + name + '/')
            else:
                yield prefix + name, obj
#@ end
#@ step 52

    def to_cpu(self):
        for param in self.params():
            param.to_cpu()

    def to_gpu(self):
        for param in self.params():
            param.to_gpu()
#@ end
#@ step 53

    def _flatten_params(self, params_dict, parent_key=''):
        """params_dict에 {'l0/W': Parameter, ...}를 채운다 (named_params의
        경로가 열쇠)."""
        prefix = parent_key + '/' if parent_key else ''
        for key, param in self.named_params(prefix):
            params_dict[key] = param

    def save_weights(self, path):
        """매개변수를 .npz 하나로 저장한다 (pickle 없이). 다 쓴 뒤에 이름을
        바꾸므로 도중에 멈춰도 반쪽 파일이 남지 않는다."""
        self.to_cpu()

        params_dict = {}
        self._flatten_params(params_dict)
        array_dict = {key: param.data for key, param in params_dict.items()
                      if param is not None}
        tmp_path = path + '.tmp'
        try:
            with open(tmp_path, 'wb') as f:
                np.savez_compressed(f, **array_dict)
            os.replace(tmp_path, path)
        except (Exception, KeyboardInterrupt):
            if os.path.exists(tmp_path):
                os.remove(tmp_path)
            raise

    def load_weights(self, path):
        """save_weights로 쓴 파일을 읽는다. 이름이나 모양이 하나라도 다르면
        아무것도 바꾸지 않고 ValueError를 낸다."""
        # 남이 준 파일이어도 코드가 실행되지 않게
        npz = np.load(path, allow_pickle=False)
        params_dict = {}
        self._flatten_params(params_dict)
        if set(npz.files) != set(params_dict):
            raise ValueError(f'load_weights: {path}의 이름 '
                             f'{sorted(npz.files)}이 모델의 이름 '
                             f'{sorted(params_dict)}과 다르다')
        for key, param in params_dict.items():
            if param.data is not None and npz[key].shape != param.data.shape:
                raise ValueError(f'load_weights: {key}의 모양이 다르다: '
                                 f'파일 {npz[key].shape}, '
                                 f'모델 {param.data.shape}')
        for key, param in params_dict.items():
            param.data = npz[key]
#@ end


class Linear(Layer):
    """y = x W + b. in_size를 주지 않으면 처음 부를 때 x의 모양에서 정한다."""

    def __init__(self, out_size, nobias=False, dtype=np.float32, in_size=None):
        super().__init__()
        self.in_size = in_size
        self.out_size = out_size
        self.dtype = dtype

        self.W = Parameter(None, name='W')
        if self.in_size is not None:  # in_size가 없으면 나중에
            self._init_W()

        if nobias:
            self.b = None
        else:
            self.b = Parameter(np.zeros(out_size, dtype=dtype), name='b')
#@ step 44-51

    def _init_W(self):
        I, O = self.in_size, self.out_size
        W_data = np.random.randn(I, O).astype(self.dtype) * math.sqrt(1 / I)
        self.W.data = W_data

    def forward(self, x):
        if self.W.data is None:  # 데이터를 흘려보낼 때 W를 만든다
            self.in_size = x.shape[1]
            self._init_W()

        y = F.linear(x, self.W, self.b)
        return y
#@ end
#@ step 52

    def _init_W(self, xp=np):
        I, O = self.in_size, self.out_size
        W_data = np.random.randn(I, O).astype(self.dtype) * math.sqrt(1 / I)
        # CPU에서 뽑아 옮긴다: 같은 시드면 CPU와 GPU에서 같은 W
        if xp is not np:
            W_data = cuda.as_cupy(W_data)
        self.W.data = W_data

    def forward(self, x):
        if self.W.data is None:
            self.in_size = x.shape[1]
            xp = cuda.get_array_module(x)
            self._init_W(xp)

        y = F.linear(x, self.W, self.b)
        return y
#@ end
#@ step 57


class Conv2d(Layer):
    """합성곱 층. W: (OC, C, KH, KW). in_channels를 주지 않으면 처음 부를 때
    정한다."""

    def __init__(self, out_channels, kernel_size, stride=1, pad=0,
                 nobias=False, dtype=np.float32, in_channels=None):
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.pad = pad
        self.dtype = dtype

        self.W = Parameter(None, name='W')
        if in_channels is not None:
            self._init_W()

        if nobias:
            self.b = None
        else:
            self.b = Parameter(np.zeros(out_channels, dtype=dtype), name='b')

    def _w_shape(self, C, OC, KH, KW):
        return OC, C, KH, KW  # 출력 채널이 먼저

    def _init_W(self, xp=np):
        C, OC = self.in_channels, self.out_channels
        KH, KW = pair(self.kernel_size)
        scale = math.sqrt(1 / (C * KH * KW))
        shape = self._w_shape(C, OC, KH, KW)
        W_data = np.random.randn(*shape).astype(self.dtype) * scale
        if xp is not np:
            W_data = cuda.as_cupy(W_data)
        self.W.data = W_data

    def forward(self, x):
        if self.W.data is None:
            self.in_channels = x.shape[1]
            xp = cuda.get_array_module(x)
            self._init_W(xp)

        y = F.conv2d(x, self.W, self.b, self.stride, self.pad)
        return y


class Deconv2d(Conv2d):
    """전치 합성곱 층. W의 모양만 (C, OC, KH, KW)로 다르고(입력 채널이 먼저)
    forward는 F.deconv2d를 부른다. 나머지는 Conv2d와 같다."""

    def _w_shape(self, C, OC, KH, KW):
        return C, OC, KH, KW  # 입력 채널이 먼저

    def forward(self, x):
        if self.W.data is None:
            self.in_channels = x.shape[1]
            self._init_W(cuda.get_array_module(x))
        return F.deconv2d(x, self.W, self.b, self.stride, self.pad)
#@ end
#@ step 59


class RNN(Layer):
    """h = tanh(x2h(x) + h2h(h_prev)). 상태 h는 reset_state()까지 이어진다."""

    def __init__(self, hidden_size, in_size=None):
        super().__init__()
        self.x2h = Linear(hidden_size, in_size=in_size)
        # h2h의 입력은 h (hidden_size). DeZero는 여기에 in_size를 넘겨서
        # in_size가 hidden_size와 다르면 두 번째 시점에서 멈췄다.
        h2h_in = None if in_size is None else hidden_size
        self.h2h = Linear(hidden_size, in_size=h2h_in, nobias=True)
        self.h = None

    def reset_state(self):
        self.h = None

    def forward(self, x):
        if self.h is None:  # 첫 시점에는 이전 상태가 없다
            h_new = F.tanh(self.x2h(x))
        else:
            h_new = F.tanh(self.x2h(x) + self.h2h(self.h))
        self.h = h_new
        return h_new
#@ end
#@ step 60


class LSTM(Layer):
    """f, i, o = sigmoid(...), u = tanh(...); c = f c_prev + i u; h = o
    tanh(c)."""

    def __init__(self, hidden_size, in_size=None):
        super().__init__()

        H, I = hidden_size, in_size
        self.x2f = Linear(H, in_size=I)
        self.x2i = Linear(H, in_size=I)
        self.x2o = Linear(H, in_size=I)
        self.x2u = Linear(H, in_size=I)
        self.h2f = Linear(H, in_size=H, nobias=True)
        self.h2i = Linear(H, in_size=H, nobias=True)
        self.h2o = Linear(H, in_size=H, nobias=True)
        self.h2u = Linear(H, in_size=H, nobias=True)
        self.reset_state()

    def reset_state(self):
        self.h = None
        self.c = None

    def forward(self, x):
        if self.h is None:
            f = F.sigmoid(self.x2f(x))
            i = F.sigmoid(self.x2i(x))
            o = F.sigmoid(self.x2o(x))
            u = F.tanh(self.x2u(x))
        else:
            f = F.sigmoid(self.x2f(x) + self.h2f(self.h))
            i = F.sigmoid(self.x2i(x) + self.h2i(self.h))
            o = F.sigmoid(self.x2o(x) + self.h2o(self.h))
            u = F.tanh(self.x2u(x) + self.h2u(self.h))

        if self.c is None:
            c_new = (i * u)
        else:
            c_new = (f * self.c) + (i * u)

        h_new = o * F.tanh(c_new)

        self.h, self.c = h_new, c_new
        return h_new
#@ end
