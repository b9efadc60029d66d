"""pipemorph in your own training loop (docs/integration.md).

You hand over what a pipeline-parallel step needs: a torch.nn.Module per stage, the loss function,
an optimizer factory and a microbatch source; pipemorph runs, per iteration, the schedule in force
(its F, B and W ops, B and W split with torch.autograd.grad), with its delegation toggle, and does
the rest of the rank side of the protocol: reading control, the handshake (acks), the version
agreement (an all-reduce over the job), re-maps (a moving rank builds its new stage during the lead
iterations, the stage state is sent to it point to point at the switch), the data-parallel gradient mean, the optimizer step and the report of measured op and
send times.

    model = PipelineModel(stages=4, stage=build_stage, loss_fn=loss, optimizer=lambda ps: SGD(ps, lr=0.1),
                          microbatch=batch, microbatches=8, activation_shape=(4, 16, 32))
    trainer = PipelineTrainer(model, connect(redis_url, job, dist.get_rank(), stages=4, dp=2), dp=2)
    for iteration in range(iterations):
        record = trainer.step(iteration)     # replaces forward_backward_func(...) + optimizer.step()
    trainer.close()

`pipemorph.launch` / `pipemorph.worker` train their MLP and GPT models through this same class.
"""
import os
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import torch
import torch.distributed as dist

from .control import ScriptedControl
from .delays import DelayFile
from .executor import StageExecutor, StageTimes
from .layers import LayerMover, bounds
from .layout import Layout
from .noise import Noise
from .runtime import RankRuntime

Microbatch = Tuple[Any, Any]


@dataclass
class PipelineModel:
    """What the user hands over.

    stage: the module of each stage, as a list (every rank builds the same list, e.g. seeded) or a
        function pp -> module (called for this rank's stage, and again for a new stage at a re-map).
        Stages may differ (embeddings on the first, the head on the last).
    loss_fn(output_of_last_stage, target) -> scalar tensor; pipemorph divides it by `microbatches`
        (an iteration's loss is the mean over its microbatches).
    optimizer(parameters) -> torch.optim.Optimizer for one stage's parameters.
    microbatch(iteration, index) -> (inputs, target): a pure function. Replica d trains on indices
        d * microbatches .. d * microbatches + microbatches - 1 of every iteration; stage 0 uses the
        inputs, the last stage the target.
    microbatches: per replica and iteration (the schedule's microbatch count).
    activation_shape: the float tensor every stage sends downstream (its gradient goes upstream).
    layers: for a model whose stages are contiguous runs of movable layers (re-balancing, protocol
        sec. 5.7): how many layers each stage holds at the start (the registration's
        `layers.perStage`). `stage` is then a function (pp, first, last) -> module building stage pp
        from layers [first, last) of the model (what never moves, e.g. embeddings and head, by pp),
        and a schedule's new split moves layers, weights and optimizer state, between the ranks.
        Without it a schedule's `layers` is ignored.
    layer_prefix(j) -> the state-dict prefix of a stage's j-th layer (default "blocks.<j>."):
        every parameter and buffer of that layer, and nothing else, is named with it.
    """
    stages: int
    stage: Union[Sequence[torch.nn.Module], Callable[[int], torch.nn.Module]]
    loss_fn: Callable[[torch.Tensor, Any], torch.Tensor]
    optimizer: Callable[[Iterable[torch.nn.Parameter]], torch.optim.Optimizer]
    microbatch: Callable[[int, int], Microbatch]
    microbatches: int
    activation_shape: Tuple[int, ...]
    layers: Optional[Sequence[int]] = None
    layer_prefix: Callable[[int], str] = lambda j: "blocks.%d." % j

    def build(self, pp: int, split: Optional[Sequence[int]] = None) -> Tuple[torch.nn.Module, torch.optim.Optimizer]:
        """Stage pp's module and optimizer; a layered model builds it over its layers under `split`
        (default: the initial `layers`)."""
        if self.layers is not None:
            first, last = bounds(split if split is not None else self.layers)[pp]
            return self.build_range(pp, first, last)
        # A list, or an nn.ModuleList / nn.Sequential of the stages (modules are callable too: index them).
        indexed = isinstance(self.stage, (list, tuple, torch.nn.Module))
        module = self.stage[pp] if indexed else self.stage(pp)
        return module, self.optimizer(module.parameters())

    def build_range(self, pp: int, first: int, last: int) -> Tuple[torch.nn.Module, torch.optim.Optimizer]:
        """A layered model's stage pp over layers [first, last), with a fresh optimizer."""
        module = self.stage(pp, first, last)  # type: ignore[call-arg]
        return module, self.optimizer(module.parameters())


def coordinates(rank: int, stages: int, dp: int = 1) -> Tuple[int, int]:
    """(dp, pp) of a rank at the start of a job: rank dp * stages + pp, as a registration numbers them."""
    return Layout.initial(stages, dp).coords[rank]


def scripted(schedules: List[Dict[str, Any]], rank: int, stages: int, dp: int = 1) -> ScriptedControl:
    """Control without a daemon: committed schedule.v1 objects given up front (switches at their
    effectiveIteration). For tests and dry runs."""
    d, pp = coordinates(rank, stages, dp)
    return ScriptedControl(schedules, rank, d, pp)


def one_f_one_b(stages: int, microbatches: int, dp: int = 1, job: str = "local") -> Dict[str, Any]:
    """A committed schedule.v1 of plain 1F1B (W right after its B, no delegation) for `scripted`:
    a dry run of your loop without a daemon."""
    def ops(stage: int) -> List[str]:
        warm = min(microbatches, stages - stage)
        order = ["F%d" % j for j in range(warm)]
        for j in range(microbatches):
            order += ["B%d" % j, "W%d" % j] + (["F%d" % (j + warm)] if j + warm < microbatches else [])
        return order
    return {"protocol": 1, "jobId": job, "version": 1, "epoch": 1, "state": "committed", "effectiveIteration": 0,
            "pipelines": [{"dpReplicas": list(range(dp)), "warmup": [min(microbatches, stages - s) for s in range(stages)],
                           "stages": [ops(s) for s in range(stages)]}], "delegation": []}


def connect(redis_url: str, job: str, rank: int, stages: int, dp: int = 1, registration: Optional[Dict[str, Any]] = None,
            timeout_s: float = 300.0) -> Any:
    """The daemon's control for this rank (pipemorph.protocol.PipemorphRank): registers the job
    first when given a registration (do it on one rank only), waits for its first schedule."""
    import redis  # redis-py: the daemon-driven mode only
    from .protocol import PipemorphRank
    client = redis.Redis.from_url(redis_url, socket_timeout=2, socket_connect_timeout=2)
    if registration is not None:
        PipemorphRank.register(client, registration)
    d, pp = coordinates(rank, stages, dp)
    control = PipemorphRank(client, job, rank, d, pp)
    control.wait_for_schedule(timeout_s=timeout_s)
    return control


def parse_faults(spec: Optional[str]) -> Dict[str, Any]:
    """Faults injected on purpose, to show that the reference check catches them (tests only):
    `skip-w=PP` (stage PP skips W0 of every iteration: a lost weight gradient), `stale-remap` (a
    rank moved by a re-map does not load its new stage's state: stale weights), `layer-optim-lost`
    (layers moved at a split change go without their optimizer state), `layer-stale` (the rank
    that gains a layer keeps its own initial copy instead of the weights it received)."""
    faults: Dict[str, Any] = {}
    for item in filter(None, (spec or "").split(",")):
        key, _, value = item.strip().partition("=")
        if key == "skip-w" and value.isdigit():
            faults["skip_w"] = int(value)
        elif key == "stale-remap" and not value:
            faults["stale_remap"] = True
        elif key in ("layer-optim-lost", "layer-stale") and not value:
            faults["layers"] = key
        elif key != "none":
            raise ValueError("unknown fault %r (skip-w=PP, stale-remap, layer-optim-lost, layer-stale)" % item)
    return faults


class PipelineTrainer(RankRuntime):
    """One rank of a pipeline-parallel job (dp replicas of `model.stages` stages) training the
    user's model under pipemorph's schedules. Call after torch.distributed.init_process_group (the
    world is the job: dp * stages ranks). Constructing it is collective (it creates process groups).

    control: `connect(...)` (the daemon) or `scripted(...)`. checkpoint_dir: a folder every rank
    reads and writes, where re-maps hand stage state over. compute="sleep" with times_for(pp) ->
    StageTimes holds each op for a profiled time instead (benchmarks). delays: a DelayFile of
    injected link latency (emulation). handoff: how a re-map hands stage state to moving ranks
    ("stream": built during the lead iterations, state sent point to point at k; "load": the
    checkpoint folder and a barrier at k; "skip" / "early" break it on purpose, tests only);
    dp_reduce / faults break things on purpose (tests).
    before_step(trainer): called every iteration on every rank after the data-parallel gradient mean
    and before optimizer.step(), e.g. to clip gradients (a collective inside is fine: every rank
    calls it once per iteration at the same point). compute_slow {rank: (factor, from_iteration)}:
    emulation, that rank's ops are held factor x their compute time from that iteration on.
    """

    def __init__(self, model: PipelineModel, control: Any, dp: int = 1, rank: Optional[int] = None,
                 checkpoint_dir: Optional[str] = None, report: bool = True, agreement: str = "min",
                 control_group: Optional[Any] = None, compute: str = "torch",
                 times_for: Optional[Callable[[int], Optional[StageTimes]]] = None, delays: Optional[DelayFile] = None,
                 noise: Optional[Noise] = None, handoff: str = "stream", dp_reduce: str = "ring",
                 faults: Optional[str] = None, start_time: float = 0.0,
                 before_step: Optional[Callable[["PipelineTrainer"], None]] = None,
                 compute_slow: Optional[Dict[int, Tuple[float, int]]] = None) -> None:
        rank = dist.get_rank() if rank is None else rank
        fault = parse_faults(faults)
        if fault.get("stale_remap"):
            handoff = "skip"
        if model.layers is not None and (len(model.layers) != model.stages or min(model.layers) < 1):
            raise ValueError("PipelineModel.layers %s: one count >= 1 per stage (%d stages)" % (list(model.layers), model.stages))
        layout = Layout.initial(model.stages, dp)
        _, pp = layout.coords[rank]
        self.model = model
        module, optimizer = model.build(pp)
        executor = StageExecutor(pp, model.stages, model.microbatches, module, optimizer, model.loss_fn,
                                 model.microbatch, tuple(model.activation_shape), compute,
                                 times_for(pp) if times_for is not None else None)
        executor.skip_w = fault.get("skip_w")
        if control_group is None:
            control_group = dist.new_group(backend="gloo")  # the agreement's collective, apart from the p2p traffic
        super().__init__(rank, model.stages, executor, control, delays or DelayFile(None, model.stages - 1), agreement,
                         control_group, start_time, report, layout,
                         checkpoint_dir or os.path.join(os.getcwd(), "pipemorph-checkpoints"), handoff, dp_reduce,
                         times_for, noise, build_stage=lambda stage: model.build(stage, self.split),
                         split=list(model.layers) if model.layers is not None else None,
                         build_range=model.build_range if model.layers is not None else None,
                         mover=LayerMover(model.layer_prefix, fault.get("layers")) if model.layers is not None else None,
                         compute_slow=compute_slow)
        if before_step is not None:
            def step_hook() -> None:
                self._all_reduce()
                before_step(self)
            self.executor.before_step = step_hook

    @property
    def module(self) -> torch.nn.Module:
        """The module of the stage this rank holds now (a re-map may change it)."""
        return self.executor.module

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        return self.executor.optimizer


def parse_compute_slow(spec: Optional[str]) -> Dict[int, Tuple[float, int]]:
    """`RANK=FACTOR@FROM,...` (e.g. `1=3@20`: rank 1's ops take 3x their time from iteration 20)."""
    out: Dict[int, Tuple[float, int]] = {}
    for item in filter(None, (spec or "").split(",")):
        rank, _, rest = item.strip().partition("=")
        factor, _, since = rest.partition("@")
        try:
            out[int(rank)] = (float(factor), int(since or 0))
        except ValueError:
            raise ValueError("compute-slow %r: expected RANK=FACTOR@FROM" % item) from None
        if out[int(rank)][0] < 1.0:
            raise ValueError("compute-slow %r: FACTOR must be >= 1" % item)
    return out
