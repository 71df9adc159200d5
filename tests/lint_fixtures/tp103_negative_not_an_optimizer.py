"""TP103 negative: a backward() next to a step() that is not an optimizer's, in torch code.

``optimizer.step()`` takes nothing but a closure; a step with another argument is not an
optimizer's (an RL environment, Gluon's trainer, the distributed optimizer with its context).
"""

import torch
import torch.distributed.autograd as dist_autograd
from torch.distributed import autograd as dist_ag


def distributed_autograd(model, opt, batches):
    # gradients live in each context: not necessary to zero them
    for x, y in batches:
        with dist_autograd.context() as context_id:
            loss = torch.nn.functional.mse_loss(model(x), y)
            dist_autograd.backward(context_id, [loss])
            opt.step(context_id)


def distributed_autograd_other_alias(model, opt, batches):
    for x, y in batches:
        with dist_ag.context() as cid:
            dist_ag.backward(cid, [model(x).sub(y).pow(2).sum()])
            opt.step(cid)


def rl_loop(env, policy, optimizer_fn, episodes):
    state = env.reset()
    for _ in range(episodes):
        action = policy(torch.as_tensor(state)).argmax()
        state, reward, done, _info = env.step(action)
        policy.value_loss(reward).backward()  # an auxiliary loss, its optimizer elsewhere
        if done:
            state = env.reset()


def rl_loop_keyword(env, policy, episodes):
    for _ in range(episodes):
        loss = policy.loss()
        loss.backward()
        env.step(action=policy.act())


def simulator(world, tensors):
    for dt in (0.1, 0.2):
        tensors.sum().backward()
        world.step(dt)
