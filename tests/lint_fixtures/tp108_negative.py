"""TP108 negative: no shuffling, evaluation samplers, or a sampler handed to another function."""

from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def main(dataset, val_dataset, epochs, train_step, train, evaluate, kwargs):
    ordered = DistributedSampler(dataset, shuffle=False)
    val_sampler = DistributedSampler(val_dataset)  # evaluation: the order does not matter
    test_loader = DataLoader(val_dataset, sampler=DistributedSampler(val_dataset))
    unknown = DistributedSampler(dataset, **kwargs)  # may say shuffle=False
    positional = DistributedSampler(dataset, None, None, False)  # shuffle=False, positionally
    handed = DistributedSampler(dataset)
    loader = DataLoader(dataset, sampler=handed)
    for epoch in range(epochs):
        train(loader, handed, epoch)  # another function may call set_epoch
        evaluate(test_loader)
    return ordered, val_sampler, unknown, positional
