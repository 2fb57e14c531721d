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
        self.adam = torch.optim.Adam([self.master], lr=lr, betas=betas, eps=eps)
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
