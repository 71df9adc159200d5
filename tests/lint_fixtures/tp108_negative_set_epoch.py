"""TP108 negative: set_epoch called at the start of each epoch."""

from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def main(dataset, epochs, train_step):
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, sampler=sampler)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for batch in loader:
            train_step(batch)
