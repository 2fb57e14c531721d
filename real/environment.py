"""What a measurement ran on: Python, platform, torch and its threads, the device, transformers and vLLM versions.

Real runs write it to ``environment.json`` (with the model folder and the engine's limit on running sequences);
bench rows carry it in their provenance. The load average is the one at the start; each step and each bench
repeat records its own load (rlsim.machine_load).
"""

from __future__ import annotations

import os
import platform
from typing import Any

from real.engines import route_vllm_logs_to_stderr


def environment() -> dict[str, Any]:
    """The versions and device of this process; ``vllm`` is None when vLLM is not installed."""
    import torch

    env = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else f"cpu ({os.cpu_count()} cores)",
        "torch_threads": torch.get_num_threads(),
        "load_avg_1m": os.getloadavg()[0],  # at the start; each step logs its own load (rlsim.machine_load)
    }
    try:
        import transformers

        env["transformers"] = transformers.__version__
    except ImportError:
        pass
    try:
        route_vllm_logs_to_stderr()  # importing vllm configures its logger
        import vllm

        env["vllm"] = vllm.__version__
    except ImportError:
        env["vllm"] = None
    return env
