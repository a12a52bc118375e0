#@ file step 45
"""모델: 층을 모은 Layer (45단계부터). 처음에는 MLP 하나다."""
import mydezero.functions as F
import mydezero.layers as L
from mydezero import utils


class Model(L.Layer):
    def plot(self, *inputs, to_file='model.png'):
        """self(*inputs)의 계산 그래프를 그림 파일로 (utils.plot_dot_graph)."""
        y = self.forward(*inputs)
        return utils.plot_dot_graph(y, verbose=True, to_file=to_file)


class MLP(Model):
    """Linear 층을 fc_output_sizes대로 쌓고 사이에 activation을 끼운다 (마지막
    층 뒤에는 없다)."""

    def __init__(self, fc_output_sizes, activation=F.sigmoid):
        super().__init__()
        self.activation = activation
        self.layers = []

        for i, out_size in enumerate(fc_output_sizes):
            layer = L.Linear(out_size)
            setattr(self, 'l' + str(i), layer)
            self.layers.append(layer)

    def forward(self, x):
        for l in self.layers[:-1]:
            x = self.activation(l(x))
        return self.layers[-1](x)
#@ step 58


class VGG16(Model):
    """VGG16: 3x3 합성곱(패딩 1) 블록 5개 + 완전연결층 3개. x (N, 3, H, W) ->
    (N, 1000). 층 이름은 학습된 가중치 파일의 키와 같은 conv1_1 ... fc8.
    pretrained 가중치는 쓰지 않는다 (mydezero는 내려받지 않는다)."""
    # (채널, 합성곱 개수)
    BLOCKS = ((64, 2), (128, 2), (256, 3), (512, 3), (512, 3))

    def __init__(self):
        super().__init__()
        for b, (channels, n) in enumerate(self.BLOCKS, start=1):
            for i in range(1, n + 1):  # conv1_1, conv1_2, conv2_1, ...
                conv = L.Conv2d(channels, kernel_size=3, stride=1, pad=1)
                setattr(self, f'conv{b}_{i}', conv)
        self.fc6 = L.Linear(4096)
        self.fc7 = L.Linear(4096)
        self.fc8 = L.Linear(1000)

    def forward(self, x):
        for b, (_, n) in enumerate(self.BLOCKS, start=1):
            for i in range(1, n + 1):
                x = F.relu(getattr(self, f'conv{b}_{i}')(x))
            x = F.pooling(x, 2, 2)  # 크기를 절반으로
        x = F.reshape(x, (x.shape[0], -1))
        x = F.dropout(F.relu(self.fc6(x)))
        x = F.dropout(F.relu(self.fc7(x)))
        x = self.fc8(x)
        return x
#@ end
#@ step 59


class SimpleRNN(Model):
    """RNN 층 하나와 출력용 Linear 하나."""

    def __init__(self, hidden_size, out_size):
        super().__init__()
        self.rnn = L.RNN(hidden_size)
        self.fc = L.Linear(out_size)

    def reset_state(self):
        self.rnn.reset_state()

    def forward(self, x):
        h = self.rnn(x)
        y = self.fc(h)
        return y
#@ end
