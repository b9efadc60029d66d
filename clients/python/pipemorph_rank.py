"""Compatibility module: the protocol client now lives in the `pipemorph` package (pipemorph.protocol)."""
from pipemorph.protocol import *  # noqa: F401,F403
from pipemorph.protocol import PipemorphRank, PROTOCOL, REGISTRATIONS_STREAM  # noqa: F401
