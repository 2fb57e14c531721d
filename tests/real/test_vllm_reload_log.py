"""The vLLM engine's log filter for weight syncs, without vLLM: it drops "<layer>: Failed to load weights" only for
layers that hold nothing but non-persistent buffers (the rotary cos_sin_cache), never for a layer with weights
and never another message (the engine itself: tests/real/test_vllm.py)."""

import logging

import pytest

from real.engines.vllm_engine import _FAILED_TO_LOAD, _BufferOnlyLayerFilter, buffer_only_layer_classes


def record(msg: str, *args: object, level: int = logging.WARNING) -> logging.LogRecord:
    return logging.LogRecord(
        "vllm.model_executor.model_loader.reload.layerwise", level, "layerwise.py", 266, msg, args, None
    )


def test_filter_drops_only_failed_to_load_of_buffer_only_layers():
    f = _BufferOnlyLayerFilter(["RotaryEmbedding"])
    assert not f.filter(record(_FAILED_TO_LOAD, "RotaryEmbedding"))
    assert f.filter(record(_FAILED_TO_LOAD, "QKVParallelLinear"))  # a layer with weights: a real dropped update
    assert f.filter(record("%s: Excessive loading", "RotaryEmbedding"))
    assert f.filter(record("Following weights were not loaded from checkpoint: %s", {"x"}))
    assert f.filter(record("RotaryEmbedding: Failed to load weights"))  # not vLLM's record: left alone


def test_buffer_only_layer_classes_finds_rotary_like_layers_only():
    torch = pytest.importorskip("torch")

    class RotaryEmbedding(torch.nn.Module):  # like vLLM's: a cache computed from the config, not in a checkpoint
        def __init__(self):
            super().__init__()
            self.register_buffer("cos_sin_cache", torch.ones(4, 2), persistent=False)

    class Stats(torch.nn.Module):  # a persistent buffer is checkpoint state: its warning must show
        def __init__(self):
            super().__init__()
            self.register_buffer("running_mean", torch.zeros(2))

    class Scaled(torch.nn.Module):  # also used with a parameter elsewhere: keep its warnings
        def __init__(self, weight: bool):
            super().__init__()
            self.register_buffer("scale", torch.ones(1), persistent=False)
            self.weight = torch.nn.Parameter(torch.ones(2)) if weight else None

    model = torch.nn.Sequential(torch.nn.Linear(2, 2), RotaryEmbedding(), Stats(), Scaled(False), Scaled(True))
    assert buffer_only_layer_classes(model) == ["RotaryEmbedding"]
