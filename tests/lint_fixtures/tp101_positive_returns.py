"""TP101 positive: a softmax returned by a function, method or module of the same file."""

import torch.nn.functional as F
from torch import nn


def predict(model, x):
    return F.softmax(model(x), dim=1)


def evaluate(model, x, y):
    return F.cross_entropy(predict(model, x), y)  # expect: TP101


def predict_twice(model, x):
    return predict(model, x)  # what predict returns


def evaluate_twice(model, x, y):
    return F.nll_loss(predict_twice(model, x), y)  # expect: TP101


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(784, 10)

    def forward(self, x):
        out = self.fc(x.flatten(1))
        out = F.softmax(out, dim=1)
        return out

    def probabilities(self, x):
        return self.fc(x).softmax(-1)

    def loss(self, x, y):
        return F.cross_entropy(self.probabilities(x), y)  # expect: TP101


def train(loader):
    model = Net()
    criterion = nn.CrossEntropyLoss()
    for x, y in loader:
        output = model(x)
        loss = criterion(output, y)  # expect: TP101
        loss.backward()


class Discriminator(nn.Module):
    def __init__(self, n_classes):
        super().__init__()
        self.adv_layer = nn.Sequential(nn.Linear(128, 1), nn.Sigmoid())
        self.aux_layer = nn.Sequential(nn.Linear(128, n_classes), nn.Softmax())

    def forward(self, features):
        validity = self.adv_layer(features)
        label = self.aux_layer(features)
        return validity, label


discriminator = Discriminator(10)
auxiliary_loss = nn.CrossEntropyLoss()


def gan_step(features, labels):
    real_pred, real_aux = discriminator(features)
    loss = auxiliary_loss(real_aux, labels)  # expect: TP101
    return loss + auxiliary_loss(discriminator(features)[1], labels)  # expect: TP101


class Wrapper(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = Net()

    def forward(self, x, y):
        return F.cross_entropy(self.net(x), y)  # expect: TP101
