"""TP108 negative: a module that builds a loader and has no epoch loop (its caller may call
set_epoch)."""

from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def build_loader(dataset, batch_size):
    return DataLoader(dataset, batch_size=batch_size, sampler=DistributedSampler(dataset))
