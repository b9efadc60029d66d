"""pipemorph rank side: the wire-protocol client (protocol), and a PyTorch runtime that executes
published F/B/W schedules over torch.distributed (executor, transport, runtime, launch), and the
integration API for a user's own training loop (integration: PipelineModel, PipelineTrainer).

The protocol client needs only redis-py; the runtime also needs torch. See clients/python/README.md.
"""
__version__ = "0.3.0"
