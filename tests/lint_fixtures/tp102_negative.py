"""TP102 negative: functional dropout told whether it is training, or not dropout at all."""

import torch.nn.functional as F
from torch import nn
from torch.nn.functional import dropout


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.drop = nn.Dropout(0.5)

    def forward(self, x, *args, **kwargs):
        h = F.dropout(self.fc(x), p=0.5, training=self.training)
        h = F.dropout(h, 0.5, self.training)  # training is the third positional parameter
        h = F.dropout(h, 0.5, self.training, False)
        h = F.dropout2d(h, training=False)
        h = dropout(h, *args)  # *args may carry training
        h = F.dropout(h, **kwargs)  # so may **kwargs
        h = self.drop(h)  # the module follows model.eval()
        h = F.alpha_dropout(h, 0.1)  # alpha dropouts default to training=False: not this rule
        h = F.feature_alpha_dropout(h, 0.1)
        return h


def suppressed(x):
    a = F.dropout(x)  # noqa: TP102
    b = F.dropout(x)  # noqa
    # fmt: off
    c = F.dropout(x) + \
        0  # noqa: TP102 (flake8 reads a backslash-continued line as one)
    # fmt: on
    return a + b + c


def not_torch(layer, x):
    return layer.dropout(x)  # a method of something else
