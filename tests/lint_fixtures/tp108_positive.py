"""TP108 positive: a shuffling DistributedSampler and an epoch loop, and no set_epoch at all."""

import torch.utils.data as data
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def main(dataset, epochs, train_step):
    sampler = DistributedSampler(dataset)  # expect: TP108
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    for _epoch in range(epochs):
        for batch in loader:
            train_step(batch)


def inline(train_set, args, train_step):
    loader = DataLoader(
        train_set,
        sampler=data.DistributedSampler(train_set, shuffle=True),  # expect: TP108
    )
    for _ in range(args.num_epochs):
        for batch in loader:
            train_step(batch)


def fixed(dataset, epochs, train_step):  # set_epoch here does not excuse the functions above
    sampler = DistributedSampler(dataset)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for batch in DataLoader(dataset, sampler=sampler):
            train_step(batch)
