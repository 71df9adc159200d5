"""TP106 negative: the scheduler stepped after the optimizer, or a step the rule cannot judge."""

import torch
from my_project.schedules import WarmupScheduler, build_scheduler
from torch.optim.lr_scheduler import ReduceLROnPlateau, StepLR


def fit(model, optimizer, loader, epochs, train, evaluate):
    scheduler = StepLR(optimizer, step_size=10)
    plateau = ReduceLROnPlateau(optimizer)
    for _epoch in range(epochs):
        train(model, optimizer, loader)
        scheduler.step()  # after the epoch: right
        plateau.step(evaluate(model))  # on a metric
    for epoch in range(epochs):
        scheduler.step(epoch)  # an explicit epoch sets the position
        train(model, optimizer, loader)
    for epoch in range(epochs):
        if epoch > 0:
            scheduler.step()  # under an if: a deliberate choice, not judged
        train(model, optimizer, loader)


def per_batch(model, loader, optimizer, scheduler):
    for x, y in loader:
        optimizer.zero_grad()
        model(x).sub(y).pow(2).mean().backward()
        optimizer.step()
        scheduler.step()


def own_schedulers(model, loader, optimizer, config):
    warmup = WarmupScheduler(optimizer)  # another library's scheduler may expect to go first
    lr_scheduler = build_scheduler(config, optimizer)
    for x, y in loader:
        warmup.step()
        lr_scheduler.step()
        optimizer.zero_grad()
        model(x).sub(y).pow(2).mean().backward()
        optimizer.step()


def no_optimizer_step(model, loader, scheduler, log):
    for _epoch in range(3):
        scheduler.step()
        model.train()  # the method train() of a module trains nothing
        log(scheduler.get_last_lr())


def environment(env, policy, agent_sched, torch_opt):
    for _episode in range(10):
        env.step(policy())  # not a scheduler, not an optimizer
        torch_opt.zero_grad()
    agent_sched.step()  # before the loop
    for _episode in range(10):
        torch_opt.step()


_ = torch
