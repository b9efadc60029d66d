"""The integration API's pieces that need no processes: what PipelineModel builds per stage, the
daemon-free 1F1B schedule, the fault flags. Run from clients/python: /usr/bin/python3 -m pytest"""
import os
import sys

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pipemorph import gpt  # noqa: E402
from pipemorph.integration import PipelineModel, coordinates, one_f_one_b, parse_faults  # noqa: E402
from pipemorph.ops import parse_ops  # noqa: E402


def model(stage):
    return PipelineModel(2, stage, gpt.loss_fn, lambda ps: torch.optim.SGD(ps, lr=0.1), lambda i, j: (None, None), 2, (1, 2, 3))


def test_a_stage_comes_from_a_factory_a_list_or_a_module_container():
    c = gpt.GPTConfig()
    stages = [gpt.stage_module(c, pp, 2, 0) for pp in range(2)]
    built = model(lambda pp: stages[pp]).build(1)[0]
    assert built is stages[1]
    assert model(stages).build(0)[0] is stages[0]
    assert model(torch.nn.Sequential(*stages)).build(1)[0] is stages[1]  # indexed, not called
    module, optimizer = model(stages).build(1)
    assert {id(p) for g in optimizer.param_groups for p in g["params"]} == {id(p) for p in module.parameters()}


def test_the_gpt_stages_differ_and_chain():
    c = gpt.GPTConfig(rows=2)
    stages = [gpt.stage_module(c, pp, 3, 5) for pp in range(3)]
    assert hasattr(stages[0], "tok") and not hasattr(stages[1], "tok") and hasattr(stages[2], "head")
    x, y = gpt.microbatch(c, 0, 0, 5)
    h = stages[1](stages[0](x))
    assert h.shape == gpt.activation_shape(c) and h.dtype == torch.float32
    assert stages[2](h).shape == (c.rows, c.seq, c.vocab) and y.shape == (c.rows, c.seq)
    same = gpt.stage_module(c, 1, 3, 5)
    assert all(torch.equal(a, b) for a, b in zip(same.parameters(), stages[1].parameters()))  # seeded


def test_one_f_one_b_is_a_valid_schedule_for_every_stage():
    s = one_f_one_b(4, 6, dp=2)
    assert s["pipelines"][0]["dpReplicas"] == [0, 1]
    for ops in s["pipelines"][0]["stages"]:
        assert len(parse_ops(ops, 6)) == 18
    assert s["pipelines"][0]["stages"][0][:4] == ["F0", "F1", "F2", "F3"]
    assert coordinates(5, 4, 2) == (1, 1)


def test_fault_flags():
    assert parse_faults("none") == {} and parse_faults(None) == {}
    assert parse_faults("skip-w=2,stale-remap") == {"skip_w": 2, "stale_remap": True}
    with pytest.raises(ValueError, match="unknown fault"):
        parse_faults("skip-b=1")


def test_a_one_process_trainer_trains_like_plain_pytorch_and_runs_the_step_hook(tmp_path):
    """PipelineTrainer in this process (world size 1, a single stage): the schedule's F/B/W with
    the loss divided by the microbatches and one step per iteration equal plain PyTorch training;
    before_step sees the summed gradients before the step (here: clips them)."""
    import datetime
    import torch.distributed as dist
    from pipemorph.integration import PipelineTrainer, scripted
    c = gpt.GPTConfig(rows=2, layers=1)
    M, ITERATIONS = 3, 2

    def build(pp):
        return gpt.stage_module(c, 0, 1, 11)  # embeddings, a block and the head in one stage
    norms = []

    def clip(trainer):
        norms.append(float(torch.nn.utils.clip_grad_norm_(trainer.module.parameters(), 0.5)))
    dist.init_process_group("gloo", init_method="file://%s" % (tmp_path / "store"), rank=0, world_size=1,
                            timeout=datetime.timedelta(seconds=30))
    try:
        model = PipelineModel(1, build, gpt.loss_fn, lambda ps: torch.optim.SGD(ps, lr=0.3, momentum=0.9),
                              lambda i, j: gpt.microbatch(c, i, j, 11), M, gpt.activation_shape(c))
        trainer = PipelineTrainer(model, scripted([one_f_one_b(1, M)], 0, 1), checkpoint_dir=str(tmp_path), before_step=clip)
        losses = [trainer.step(i)["loss"] for i in range(ITERATIONS)]
        trainer.close()
    finally:
        dist.destroy_process_group()
    reference = build(0)
    optimizer = torch.optim.SGD(reference.parameters(), lr=0.3, momentum=0.9)
    expected = []
    for i in range(ITERATIONS):
        optimizer.zero_grad()
        total = 0.0
        for j in range(M):
            x, y = gpt.microbatch(c, i, j, 11)
            loss = gpt.loss_fn(reference(x), y) / M
            loss.backward()
            total += float(loss)
        assert float(torch.nn.utils.clip_grad_norm_(reference.parameters(), 0.5)) == pytest.approx(norms[i], rel=1e-5)
        optimizer.step()
        expected.append(total)
    assert losses == pytest.approx(expected, abs=1e-5)
    assert all(torch.allclose(a, b, rtol=1e-4, atol=1e-6) for a, b in zip(trainer.module.parameters(), reference.parameters()))
    assert len(norms) == ITERATIONS and norms[0] > 0.5  # the clip did something
