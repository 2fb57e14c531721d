"""Reading a large verl launch script (rlsim.frameworks.launch: parsed with tree-sitter-bash, evaluated): at most
0.2 s for a script of about 780 lines, median of the rounds (about 0.04 s here).

    python -m pytest tests/benchmarks/test_bench_launch.py --benchmark-only --benchmark-enable

The script is verl's own run_qwen2-7b_math_megatron.sh (fixtures, verl b178a3c) with 40 blocks of what launch scripts
hold before the command put in front: variables with nested defaults, a ``case`` on the device, a function, arrays
and arithmetic.
"""

from __future__ import annotations

import pytest

from rlsim.frameworks.launch import framework_command
from tests.conftest import ROOT

SCRIPT = ROOT / "tests/rlsim/fixtures/configs/verl_scripts/grpo_trainer__run_qwen2-7b_math_megatron.sh"
LIMIT_S = 0.2
BLOCK = """
NNODES_{k}=${{NNODES:-${{SLURM_NNODES:-1}}}}
DEVICE_{k}=cuda
case "$DEVICE_{k}" in
  npu) NGPUS_{k}=16 ;;
  *) NGPUS_{k}=8 ;;
esac
total_{k}() {{
  local n=$1
  TOTAL_{k}=$(( n * NGPUS_{k} ))
}}
total_{k} "$NNODES_{k}"
ARGS_{k}=(--a "b c" "${{HOME:-/root}}/x")
ARGS_{k}+=(--n "${{#ARGS_{k}[@]}}")
if [[ "$TOTAL_{k}" -ge 8 && -n "${{ARGS_{k}[0]}}" ]]; then
  TP_{k}=2
else
  TP_{k}=1
fi
"""


def _text() -> str:
    return "".join(BLOCK.format(k=k) for k in range(40)) + SCRIPT.read_text()


@pytest.mark.benchmark(group="launch")
def test_reading_a_large_verl_launch_script(benchmark):
    text = _text()
    assert len(text.splitlines()) > 700
    words, _ = benchmark(framework_command, text, "big.sh", ("verl.trainer.main_ppo",))
    assert "data.train_batch_size=1024" in words
    assert benchmark.stats.stats.median <= LIMIT_S
