"""The ``hf`` engine: batched sampling with a KV cache in torch (transformers ``generate``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


class HFEngine:
    name = "hf"
    max_num_seqs = None  # transformers' generate takes the whole batch at once

    def __init__(self, model_dir: Path, dtype: str = "float32", device: str | None = None, **_: Any) -> None:
        # here, not at the top: it loads torch, transformers (start-up time)
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=getattr(torch, dtype)).to(self.device)
        self.model.eval()
        tok = AutoTokenizer.from_pretrained(model_dir)
        self.pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        self.eos_id = tok.eos_token_id

    def load_weights(self, model: Any) -> None:
        """Copy the trainer's weights into the engine's own copy."""
        # here, not at the top: it loads torch (start-up time)
        import torch

        with torch.no_grad():
            self.model.load_state_dict(model.state_dict())

    def generate(
        self,
        prompts: list[list[int]],
        n: int,
        max_new_tokens: int,
        temperature: float,
        seed: int,
        greedy: bool = False,
        ignore_eos: bool = False,
        logprobs: bool = False,
    ) -> list[list[list[int]]] | tuple[list[list[list[int]]], list[list[list[float]]]]:
        """The completions; with ``logprobs``, also each completion token's log-probability under the sampling
        distribution (log-softmax of the scores generate sampled from: the behaviour policy's, as vLLM returns them
        with ``logprobs``), shaped like the completions."""
        # here, not at the top: it loads torch (start-up time)
        import torch

        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), self.pad_id, dtype=torch.long)
        attn = torch.zeros((len(prompts), width), dtype=torch.long)
        for i, p in enumerate(prompts):  # left padding: every prompt ends where generation starts
            ids[i, width - len(p) :] = torch.tensor(p)
            attn[i, width - len(p) :] = 1
        torch.manual_seed(seed)
        with torch.no_grad():
            out = self.model.generate(
                input_ids=ids.to(self.device),
                attention_mask=attn.to(self.device),
                do_sample=not greedy,
                temperature=None if greedy else temperature,
                top_k=None if greedy else 0,
                top_p=None if greedy else 1.0,
                num_return_sequences=1 if greedy else n,
                max_new_tokens=max_new_tokens,
                min_new_tokens=max_new_tokens if ignore_eos else None,
                eos_token_id=self.eos_id,
                pad_token_id=self.pad_id,
                output_scores=logprobs,
                return_dict_in_generate=logprobs,
            )
        token_lp = None
        if logprobs:
            seqs = out.sequences[:, width:]
            scores = torch.stack([torch.log_softmax(s.float(), -1) for s in out.scores], 1)
            token_lp = scores.gather(2, seqs.unsqueeze(-1)).squeeze(-1).tolist()
            out = out.sequences
        gen = out[:, width:].tolist()
        per_prompt = 1 if greedy else n
        result = []
        for i in range(len(prompts)):
            group = []
            for row in gen[i * per_prompt : (i + 1) * per_prompt]:
                seq = []
                for tok in row:
                    seq.append(tok)
                    if tok == self.eos_id and not ignore_eos:
                        break
                group.append(seq)
            result.append(group * n if greedy else group)
        if token_lp is None:
            return result
        per = [
            [token_lp[i * per_prompt + j % per_prompt][: len(seq)] for j, seq in enumerate(g)]
            for i, g in enumerate(result)
        ]
        return result, per

    def close(self) -> None:
        self.model = None

    def sleep(self) -> None:
        """Nothing to free: the hf engine keeps its copy in memory."""

    def wake(self) -> None:
        """See sleep."""
