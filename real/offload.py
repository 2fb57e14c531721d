"""An offloaded optimizer (``rlsim-real train --offload-optimizer``): the fp32 master weights and Adam's two moments
live in flat host-side buffers of their own, outside the module, and every optimizer step

1. copies the module's gradients out into the host gradient buffer (``copy_out``),
2. runs Adam there, on the flat master weights (``host_adam``),
3. copies the updated master weights back into the module's parameters (``copy_back``).

That is DeepSpeed's ZeRO-Offload with its CPU Adam (deepspeedai/DeepSpeed@v0.19.5:
deepspeed/runtime/zero/stage_1_and_2.py:1563 ``async_inplace_copy_grad_to_fp32_buffer_from_gpu`` copies each
gradient into the fp32 partition's host ``.grad``; :2297-2315 steps the optimizer on that partition and copies the
fp32 partition back into the 16-bit parameters; deepspeed/ops/adam/cpu_adam.py:107 ``DeepSpeedCPUAdam.step`` runs
Adam on the host buffers). verl's FSDP ``optimizer_offload`` differs: it moves the optimizer state to host memory
between updates and back to the GPU for the step (volcengine/verl@v0.7.0: verl/utils/fsdp_utils.py:204
``offload_fsdp_optimizer``, :216 ``load_fsdp_optimizer``), so its Adam runs on the device.

On a CPU "device" the host buffers are in the same memory as the module, so the copies are memory-to-memory; they
are still made, as on a GPU, and the three parts are timed per step (``offload_s``: copy_out, host_adam,
copy_back) so that a run log shows where the optimizer's time went. Adam is torch's (``torch.optim.Adam`` with
the same betas, eps and learning rate) applied to the flat master tensor, so a run with and without offload
follows the same arithmetic up to the order of floating-point sums. The gradient clipping of real.update runs on
the module's gradients before the step, as DeepSpeed's does before its CPU step (:2300 unscale_and_clip_grads).
"""

from __future__ import annotations

import time
from typing import Any

from real.models import load_policy
from rlsim.host.machine_load import LoadMeter

TILE = 1 << 16  # elements of the flat buffers Adam steps at a time (256 KiB of fp32)


class OffloadedAdam:
    """Adam whose master weights, gradients and moments are flat host buffers (module docstring). The optimizer
    interface real.update and real.checkpoint use: ``zero_grad``, ``step``, ``state_dict``, ``load_state_dict``,
    ``param_groups``."""

    def __init__(self, params, lr: float, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> None:
        # here, not at the top: it loads torch (start-up time)
        import torch

        self.params = [p for p in params if p.requires_grad]
        total = sum(p.numel() for p in self.params)
        # the host-side buffers: fp32 master weights (a copy, not a view of the module) and their gradient; Adam's
        # moments are the state of a torch Adam over the one flat master tensor
        self.master = torch.empty(total, dtype=torch.float32)
        self.master.grad = torch.zeros(total, dtype=torch.float32)
        offset = 0
        self._slices = []
        for p in self.params:
            self._slices.append((offset, p.numel()))
            self.master[offset : offset + p.numel()].copy_(p.detach().reshape(-1))
            offset += p.numel()
        # Adam runs tile by tile over the flat buffers (views of them, so the tiles are the buffer): a tile's
        # master, gradient and moments stay in cache through Adam's element-wise passes, as DeepSpeed's CPU Adam
        # walks its buffers in tiles (deepspeedai/DeepSpeed@v0.19.5: csrc/includes/cpu_adam.h:159, one fused pass per
        # TILE-sized span); one flat tensor made each of torch Adam's element-wise passes a trip to
        # memory (measured here: 14 ns per parameter flat, 5 tiled, on a 8.9 M-parameter model)
        tiles = [self.master[i : i + TILE] for i in range(0, total, TILE)]
        for t, i in zip(tiles, range(0, total, TILE)):
            t.grad = self.master.grad[i : i + TILE]
        self.adam = torch.optim.Adam(tiles, lr=lr, betas=betas, eps=eps)
        self.param_groups = self.adam.param_groups
        self.last_s: dict[str, float] = {}  # the last step's copy_out, host_adam, copy_back seconds
        self.total_s: dict[str, float] = {"copy_out": 0.0, "host_adam": 0.0, "copy_back": 0.0}

    @property
    def num_params(self) -> int:
        return int(self.master.numel())

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.zero_()

    def step(self) -> None:
        # here, not at the top: it loads torch (start-up time)
        import torch

        t0 = time.perf_counter()
        g = self.master.grad
        with torch.no_grad():
            for p, (off, n) in zip(self.params, self._slices):
                if p.grad is None:
                    g[off : off + n].zero_()
                else:
                    g[off : off + n].copy_(p.grad.reshape(-1))
        t1 = time.perf_counter()
        self.adam.step()
        t2 = time.perf_counter()
        with torch.no_grad():
            for p, (off, n) in zip(self.params, self._slices):
                p.copy_(self.master[off : off + n].view_as(p))
        t3 = time.perf_counter()
        self.last_s = {"copy_out": t1 - t0, "host_adam": t2 - t1, "copy_back": t3 - t2}
        for k, v in self.last_s.items():
            self.total_s[k] += v

    def take_times(self) -> dict[str, float]:
        """The seconds of each part summed since the last call (a run step's ``offload_s``), then reset."""
        out, self.total_s = self.total_s, {k: 0.0 for k in self.total_s}
        return out

    def state_dict(self) -> dict[str, Any]:
        return {"master": self.master.detach().clone(), "adam": self.adam.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        # here, not at the top: it loads torch (start-up time)
        import torch

        with torch.no_grad():
            self.master.copy_(state["master"])
        self.adam.load_state_dict(state["adam"])
        self.param_groups = self.adam.param_groups


def make_optimizer(params, lr: float, betas: tuple[float, float], offload: bool):
    """torch's Adam over ``params``, or the offloaded one (``--offload-optimizer``)."""
    # here, not at the top: it loads torch (start-up time)
    import torch

    params = list(params)
    return OffloadedAdam(params, lr=lr, betas=betas) if offload else torch.optim.Adam(params, lr=lr, betas=betas)


# the bench phases of ``rlsim-real bench optimizer`` (rlsim.io.records.BENCH_PHASE_COLUMNS): one optimizer step of
# torch's Adam on the module's own parameters, the offloaded step's two copies, and its Adam on the host buffers
BENCH_PHASES = ("optimizer", "offload_copy", "host_adam")


def bench_optimizer(models: list[str | None], repeats: int = 7, warmup: int = 2):
    """Bench rows of the optimizer step, per model (size) and phase (BENCH_PHASES), repeats interleaved; ``bytes``
    is the trained parameters' bytes in their dtype (fp32 here: 4 per parameter), what calibrate fits
    against. The gradients are random, fixed per model."""
    # here, not at the top: it loads torch, pandas (start-up time)
    import torch

    from real.bench import _frame, _model, _row, provenance

    fns, configs, names = [], [], []
    for spec in models:
        path, name = _model(spec)
        policy, _ = load_policy(path)
        params = [p for p in policy.parameters() if p.requires_grad]
        nbytes = sum(p.numel() * p.element_size() for p in params)
        gen = torch.Generator().manual_seed(0)
        grads = [torch.randn(p.shape, generator=gen) * 1e-3 for p in params]
        adam = torch.optim.Adam(params, lr=1e-6)
        host = OffloadedAdam(params, lr=1e-6)

        for p, g in zip(params, grads):
            p.grad = g

        def torch_step(adam=adam) -> None:
            adam.step()

        def host_step(host=host) -> None:
            host.step()

        fns += [torch_step, host_step]
        configs += [("optimizer", name, nbytes, host), ("offload", name, nbytes, host)]
        names.append(name)
    prov = provenance("torch", ",".join(names))
    for fn in fns:  # warm-ups, then repeats interleaved: round i times every model's step and offloaded step
        for _ in range(warmup):
            fn()
    rows = []
    for i in range(repeats):
        for (phase, name, nbytes, host), fn in zip(configs, fns):
            meter = LoadMeter().start()
            t0 = time.perf_counter()
            fn()
            t = time.perf_counter() - t0
            load = meter.stop()
            if phase == "optimizer":
                rows.append(_row("optimizer", "torch", name, prov, i, t, bytes=nbytes, **load))
                continue
            copy_s = host.last_s["copy_out"] + host.last_s["copy_back"]
            rows.append(_row("offload_copy", "torch", name, prov, i, copy_s, bytes=nbytes, **load))
            rows.append(_row("host_adam", "torch", name, prov, i, host.last_s["host_adam"], bytes=nbytes, **load))
    return _frame(rows, prov)
