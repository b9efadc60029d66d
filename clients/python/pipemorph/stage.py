"""The small model the tests, benchmarks and demo train: an MLP cut into one block per stage."""
from typing import List, Tuple

import torch


def stage_module(stage: int, hidden: int, seed: int) -> torch.nn.Module:
    """Stage `stage` of the model; the same (stage, hidden, seed) gives the same weights anywhere."""
    generator = torch.Generator().manual_seed(seed * 1009 + stage)
    block = torch.nn.Sequential(torch.nn.Linear(hidden, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, hidden))
    with torch.no_grad():
        for p in block.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) * (1.0 / hidden ** 0.5))
    return block


def microbatch(iteration: int, j: int, rows: int, hidden: int, seed: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """Input and target of microbatch j of an iteration: a pure function of its arguments."""
    generator = torch.Generator().manual_seed((seed * 1000003 + iteration * 4099 + j) % (2 ** 62))
    x = torch.randn(rows, hidden, generator=generator)
    return x, torch.tanh(x.flip(1))


def loss_fn(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.mse_loss(output, target)


def reference_train(stages: int, microbatches: int, iterations: int, rows: int, hidden: int, seed: int, lr: float,
                    momentum: float = 0.0) -> List[torch.nn.Module]:
    """Single-process training of the same model on the same microbatches: the correctness yardstick.
    Loss of an iteration = mean over microbatches; SGD step at the end of each iteration. With dp
    replicas of m microbatches each, the yardstick is microbatches = dp * m (their union)."""
    modules = [stage_module(s, hidden, seed) for s in range(stages)]
    model = torch.nn.Sequential(*modules)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    for i in range(iterations):
        optimizer.zero_grad()
        for j in range(microbatches):
            x, target = microbatch(i, j, rows, hidden, seed)
            (loss_fn(model(x), target) / microbatches).backward()
        optimizer.step()
    return modules
