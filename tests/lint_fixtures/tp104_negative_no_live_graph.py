"""TP104 negative (opt-in): the edits of real code that no graph can see (model zoos, textbooks).

Copying into a module built a line earlier (fuse, reparameterize), initialisation functions of
any name, functions passed to model.apply, and updates after the backward.
"""

import torch
from torch import nn


class ConvBN(nn.Sequential):
    @torch.no_grad()
    def fuse(self):
        c, bn = self._modules.values()
        w = c.weight * (bn.weight / (bn.running_var + bn.eps) ** 0.5)[:, None, None, None]
        b = bn.bias - bn.running_mean * bn.weight / (bn.running_var + bn.eps) ** 0.5
        m = nn.Conv2d(w.size(1), w.size(0), w.shape[2:], bias=True)
        m.weight.data.copy_(w)
        m.bias.data.copy_(b)
        return m


class RepBlock(nn.Module):
    def reparameterize(self):
        kernel, bias = self._fuse()
        self.reparam_conv = nn.Conv2d(3, 3, 3)
        self.reparam_conv.weight.data = kernel
        self.reparam_conv.bias.data = bias


class Attention(nn.Module):
    def local_init(self):
        self.v.weight.data.copy_(torch.eye(self.dim))
        self.pos_proj.weight.data[0, 2] = -1
        self.pos_proj.weight.data *= self.locality_strength


def my_init(module):
    if isinstance(module, nn.Linear):
        module.weight.data.uniform_(-10, 10)
        module.weight.data *= module.weight.data.abs() >= 5


def weights_init(m):
    m.weight.data.normal_(0.0, 0.02)


def get_inits(x, device, lr, styles):
    gen_img = nn.Linear(3, 3).to(device)
    gen_img.weight.data.copy_(x.data)
    return gen_img, styles


def build(net, embeds):
    net.apply(weights_init)
    net.apply(my_init)
    net[0].weight.data[:] += 1
    net.embedding.weight.data.copy_(embeds)
    net.embedding.weight.requires_grad = False


def freeze_batch_norm(module):
    res = nn.BatchNorm2d(module.num_features)
    res.weight.data = module.weight.data.clone().detach()
    res.running_mean.data = module.running_mean.data
    return res
