"""TP103 negative: an MXNet/Gluon training loop, in a file that never imports torch.

Gluon's ``trainer.step(batch_size)`` writes the gradients afresh on each ``backward()`` (the
default ``grad_req="write"``): nothing to clear, and TP103 only checks files that import torch.
"""

from mxnet import autograd, gluon


def train(net, train_iter, loss, batch_size, num_epochs):
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    for _epoch in range(num_epochs):
        for X, y in train_iter:
            with autograd.record():
                l = loss(net(X), y)  # noqa: E741
            l.backward()
            trainer.step(batch_size)


def train_without_argument(net, data, loss, trainer):
    for X, y in data:
        with autograd.record():
            l = loss(net(X), y)  # noqa: E741
        l.backward()
        trainer.step()
