"""A tiny GPT-style language model cut into pipeline stages, and seeded synthetic tokens to train it on.

Stage 0 holds the token and positional embeddings, every stage holds `layers` pre-LN transformer
blocks (causal self-attention, then an MLP, each with a residual), the last stage the final LayerNorm
and the LM head. Between stages flows the residual stream, a float tensor (rows, seq, d_model).
The same (config, stage, seed) builds the same weights in any process, so the single-process
reference (`reference_train`) and the pipeline ranks start from identical parameters.
"""
import math
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class GPTConfig:
    vocab: int = 64
    seq: int = 16
    d_model: int = 32
    heads: int = 2
    layers: int = 2  # per stage
    rows: int = 4  # sequences per microbatch


class CausalSelfAttention(torch.nn.Module):
    def __init__(self, c: GPTConfig) -> None:
        super().__init__()
        self.heads = c.heads
        self.qkv = torch.nn.Linear(c.d_model, 3 * c.d_model)
        self.proj = torch.nn.Linear(c.d_model, c.d_model)
        self.register_buffer("mask", torch.tril(torch.ones(c.seq, c.seq, dtype=torch.bool)), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        att = att.masked_fill(~self.mask[:t, :t], float("-inf")).softmax(dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(b, t, d))


class Block(torch.nn.Module):
    def __init__(self, c: GPTConfig) -> None:
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(c.d_model), torch.nn.LayerNorm(c.d_model)
        self.attn = CausalSelfAttention(c)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(c.d_model, 4 * c.d_model), torch.nn.GELU(),
                                       torch.nn.Linear(4 * c.d_model, c.d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPTStage(torch.nn.Module):
    """One pipeline stage: [embeddings] + blocks + [final LN, LM head]. `blocks`: how many (default
    `c.layers`); block j's parameters are named `blocks.<j>.*`."""

    def __init__(self, c: GPTConfig, stage: int, stages: int, blocks: Optional[int] = None) -> None:
        super().__init__()
        self.first, self.last = stage == 0, stage == stages - 1
        if self.first:
            self.tok = torch.nn.Embedding(c.vocab, c.d_model)
            self.pos = torch.nn.Embedding(c.seq, c.d_model)
        self.blocks = torch.nn.ModuleList(Block(c) for _ in range(c.layers if blocks is None else blocks))
        if self.last:
            self.ln_f = torch.nn.LayerNorm(c.d_model)
            self.head = torch.nn.Linear(c.d_model, c.vocab, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.first:  # x: token ids (rows, seq)
            x = self.tok(x) + self.pos(torch.arange(x.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x)) if self.last else x  # logits (rows, seq, vocab) or the residual stream


def _fill(params: Iterable[Tuple[str, torch.nn.Parameter]], generator: torch.Generator) -> None:
    with torch.no_grad():
        for name, p in params:
            if name.endswith("bias"):
                p.zero_()
            elif ".ln" in name or name.startswith(("ln_f", "ln")):
                p.fill_(1.0)
            else:
                scale = 1.0 if name.startswith(("tok", "pos")) else 0.1
                p.copy_(torch.randn(p.shape, generator=generator) * scale)


def stage_module(c: GPTConfig, stage: int, stages: int, seed: int) -> torch.nn.Module:
    """Stage `stage` with seeded weights: N(0, 1) embeddings (nn.Embedding's default), N(0, 0.1)
    matrices, zero biases, unit LayerNorms (with these, plain SGD with momentum learns the rule in a
    few iterations; the reference check needs SGD: Adam's normalisation turns float rounding in a
    near-zero gradient into a visible step)."""
    module = GPTStage(c, stage, stages)
    generator = torch.Generator().manual_seed(seed * 7919 + stage)
    _fill(module.named_parameters(), generator)
    return module


# ---------------------------------------------------------------- movable layers (re-balancing)
def layered_stage(c: GPTConfig, stage: int, stages: int, first: int, last: int, seed: int) -> torch.nn.Module:
    """Stage `stage` built from blocks [first, last) of the whole model (the movable layers; the
    embeddings stay on stage 0, the final LN and head on the last stage). Every block is seeded by
    its global index, the embeddings and the head by their own seeds, so any split of the same
    model starts from the same weights: the split is where layers live, not what they are. Block
    `first + j` is `blocks.<j>` of the stage (layer_prefix)."""
    module = GPTStage(c, stage, stages, blocks=last - first)
    own = [(n, p) for n, p in module.named_parameters() if not n.startswith("blocks.")]
    _fill(own, torch.Generator().manual_seed(seed * 7919 + 100003 * (1 + stage)))
    for j, block in enumerate(module.blocks):
        _fill(block.named_parameters(), torch.Generator().manual_seed(seed * 7919 + 1009 + first + j))
    return module


def layer_prefix(j: int) -> str:
    """State-dict prefix of a stage's j-th block (PipelineModel.layer_prefix)."""
    return "blocks.%d." % j


def global_state(module: torch.nn.Module, first: int) -> Dict[str, torch.Tensor]:
    """A stage's parameters under model-wide names (`blocks.<global index>.*`, others as they are),
    so stages of different splits compare with the reference by name."""
    out = {}
    for name, p in module.named_parameters():
        if name.startswith("blocks."):
            _, j, rest = name.split(".", 2)
            name = "blocks.%d.%s" % (first + int(j), rest)
        out[name] = p.detach().clone()
    return out


def activation_shape(c: GPTConfig) -> Tuple[int, int, int]:
    return (c.rows, c.seq, c.d_model)


def microbatch(c: GPTConfig, iteration: int, j: int, seed: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """Tokens and next-token targets of microbatch j: seeded sequences of a fixed affine rule
    (next = 5 * token + 3 mod vocab) from a random first token, 1 in 8 tokens replaced by noise.
    A pure function of its arguments."""
    g = torch.Generator().manual_seed((seed * 1000003 + iteration * 4099 + j) % (2 ** 62))
    tokens = torch.empty(c.rows, c.seq + 1, dtype=torch.long)
    tokens[:, 0] = torch.randint(0, c.vocab, (c.rows,), generator=g)
    for t in range(c.seq):
        tokens[:, t + 1] = (5 * tokens[:, t] + 3) % c.vocab
    noise = torch.rand(c.rows, c.seq + 1, generator=g) < 0.125
    tokens = torch.where(noise, torch.randint(0, c.vocab, tokens.shape, generator=g), tokens)
    return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()


def loss_fn(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def _train_in_one_process(c: GPTConfig, modules: List[torch.nn.Module], microbatches: int, iterations: int, seed: int,
                          lr: float, momentum: float) -> List[float]:
    """The yardstick's loop: `modules` chained, trained on the job's microbatches (loss of an iteration =
    mean over its microbatches, one SGD step per iteration); the loss per iteration."""
    model = torch.nn.Sequential(*modules)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    losses = []
    for i in range(iterations):
        optimizer.zero_grad()
        total = 0.0
        for j in range(microbatches):
            x, y = microbatch(c, i, j, seed)
            loss = loss_fn(model(x), y) / microbatches
            loss.backward()
            total += float(loss)
        optimizer.step()
        losses.append(total)
    return losses


def reference_train(c: GPTConfig, stages: int, microbatches: int, iterations: int, seed: int, lr: float,
                    momentum: float = 0.0) -> Tuple[List[torch.nn.Module], List[float]]:
    """Single-process training of the same stages on the same microbatches (loss of an iteration =
    mean over its microbatches, one SGD step per iteration): the yardstick. Returns the stages and
    the loss per iteration."""
    modules = [stage_module(c, s, stages, seed) for s in range(stages)]
    losses = _train_in_one_process(c, modules, microbatches, iterations, seed, lr, momentum)
    return modules, losses


def reference_train_layered(c: GPTConfig, split: Sequence[int], microbatches: int, iterations: int, seed: int, lr: float,
                            momentum: float = 0.0) -> Tuple[Dict[str, torch.Tensor], List[float]]:
    """reference_train for layered_stage models: the whole model (any split builds the same one)
    trained in one process. Returns its parameters by model-wide name (global_state) and the loss
    per iteration."""
    stages, bounds = len(split), [sum(split[:s]) for s in range(len(split) + 1)]
    modules = [layered_stage(c, s, stages, bounds[s], bounds[s + 1], seed) for s in range(stages)]
    losses = _train_in_one_process(c, modules, microbatches, iterations, seed, lr, momentum)
    params: Dict[str, torch.Tensor] = {}
    for s, m in enumerate(modules):
        params.update(global_state(m, bounds[s]))
    return params, losses
