"""When an imported scenario does not validate on the GPU that stands in for the one the file does not name: the
catalog GPUs on which it does (a launch file written for 96 GB GPUs, refused on the assumed 80 GB H100, fits the
H20), for the import to take the smallest of them and say so."""

from __future__ import annotations

from typing import Any

from rlsim import catalog
from rlsim.errors import ScenarioError
from rlsim.scenario import from_dict


def fitting_hardware(raw: dict[str, Any], tried: str, most: int = 2) -> list[dict[str, Any]]:
    """Up to ``most`` hardware sections, smallest GPU memory first, with which ``raw`` (a scenario's plain data)
    validates: hardware.gpu replaced by each catalog GPU, skipping ``tried`` and entries without device memory (CPU
    entries). A GPU whose catalog entry does not know its node's host memory is tried with ``tried``'s (the
    scenario's own, if it sets one): without any, its host-memory check is not made, and an offloaded 671B trainer
    refused for a DGX H100's 2 TB would "fit" an A100."""
    host = catalog.gpu(tried).get("host_memory_bytes") if tried in catalog.gpu_names() else None
    found = []
    for name in sorted((g for g in catalog.gpu_names() if g != tried and memory(g) > 0), key=memory):
        hardware = {**raw.get("hardware", {}), "gpu": name}
        if host and not catalog.gpu(name).get("host_memory_bytes"):
            hardware.setdefault("host_memory_bytes", host)
        try:
            from_dict({**raw, "hardware": hardware})
        except ScenarioError:
            continue
        found.append(hardware)
        if len(found) == most:
            break
    return found


def memory(name: str) -> float:
    """A catalog GPU's device memory in bytes (0 for an entry without it)."""
    return float(catalog.gpu(name).get("memory_bytes") or 0.0)


def label(hardware: dict[str, Any]) -> str:
    """``NAME (N GB)`` for a hardware section's catalog GPU."""
    return f"{hardware['gpu']} ({memory(hardware['gpu']) / 1e9:.0f} GB)"
