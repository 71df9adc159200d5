"""TP102 positive: functional dropout without training=, through every kind of alias."""

import torch
import torch as T
import torch.nn
import torch.nn.functional as F
from torch import nn
from torch.nn import functional as Fn
from torch.nn.functional import dropout
from torch.nn.functional import dropout2d as drop2d


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        h = F.dropout(self.fc(x))  # expect: TP102
        h = F.dropout(h, 0.2)  # expect: TP102
        h = F.dropout(h, p=0.2, inplace=False)  # expect: TP102
        h = Fn.dropout1d(h, 0.1)  # expect: TP102
        h = drop2d(h.unsqueeze(0))  # expect: TP102
        h = F.dropout3d(h)  # expect: TP102
        h = dropout(h)  # expect: TP102
        h = torch.nn.functional.dropout(h)  # expect: TP102
        h = T.nn.functional.dropout(h)  # expect: TP102
        h = nn.functional.dropout(h)  # expect: TP102
        return F.dropout(  # expect: TP102
            h,
            p=0.5,
        )


def functional_model(x, w):
    return F.dropout(x @ w, 0.5)  # noqa: TP101  # expect: TP102


class LightningLike(nn.Module):
    def forward(self, x):
        return F.dropout(x, 0.1)  # expect: TP102

    def validation_step(self, batch, batch_idx):
        return F.dropout(batch[0], 0.1)  # expect: TP102
