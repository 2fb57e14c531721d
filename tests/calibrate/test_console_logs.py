"""Console output as users paste it (rlsim.frameworks.logs.console): verl's ``step:N - key:value`` lines and NeMo RL's
step summary read into the same records as the frameworks' JSON logs. The lines below are written in the printed
formats of verl v0.7.0 (``concat_dict_to_str``) and NeMo RL v0.5.0 (``grpo_train``); values are made up."""

from __future__ import annotations

import pytest

from rlsim.errors import LogImportError
from rlsim.frameworks.logs.console import console_rows, number
from rlsim.frameworks.logs.read import import_log

VERL = """\
(TaskRunner pid=2391) Training Progress:   0%|          | 0/20 [00:00<?, ?it/s]
(TaskRunner pid=2391) step:0 - val-core/openai/gsm8k/reward/mean@1:np.float64(0.49)
(TaskRunner pid=2391) step:1 - actor/lr:1e-06 - timing_s/gen:np.float64(41.2) - timing_s/old_log_prob:5.1 \
- timing_s/ref:4.9 - timing_s/update_actor:20.3 - timing_s/step:73.4 - response_length/mean:np.float64(612.5) \
- prompt_length/mean:100.0 - perf/total_num_tokens:364800 - critic/score/mean:0.3
step:2 - timing_s/gen:39.0 - timing_s/update_actor:20.0 - timing_s/step:np.float64(70.0) - oops
"""

NEMO_RL = """\
▶ Worker Initialization Timing:
  • vllm: 40.10s
========================= Step 1/100 =========================

📊 Validation Results:
    • Accuracy: 0.2500
  ⏱️  Validation Timing:
    • Total validation time: 10.00s

📊 Training Results:
  • Loss: 0.0123
  • Avg Reward: 0.4100
  • Mean Generation Length: 1019.0000

⏱️  Timing:
  • Total step time: 102.80s
  • generation: 44.10s (42.9%)
  • policy_training: 25.00s (24.3%)
  • policy_and_reference_logprobs: 9.00s (8.8%)
  • prepare_for_generation: 12.00s (11.7%)
  • reward_calculation: 0.30s (0.3%)
========================= Step 2/100 =========================
⏱️  Timing:
  • Total step time: 90.00s
  • generation: 43.00s (47.8%)
"""


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("12", 12),
        ("-3.5e-05", -3.5e-05),
        ("np.float64(12.3)", 12.3),
        ("np.int64(7)", 7),
        ("tensor(0.5)", 0.5),
        ("tensor(0.5, device='cuda:0')", 0.5),
        ("abc", None),
        ("inf", None),
    ],
)
def test_printed_numbers(text, value):
    assert number(text) == value


def test_verl_console_lines_are_steps_with_their_timers(tmp_path):
    rows, problems = console_rows(VERL)
    assert [r["training/global_step"] for _, r in rows] == [0, 1, 2]
    assert rows[1][1]["timing_s/gen"] == 41.2 and rows[1][1]["perf/total_num_tokens"] == 364800
    assert problems == [(4, "'oops' is not key:value")]
    path = tmp_path / "verl_console.log"
    path.write_text(VERL)
    result = import_log(path, "verl", prompts_per_step=64, group_size=8)
    first = result.records[0]
    assert result.initial_eval_metric == 0.49
    assert first["step_time_s"] == 73.4 and first["responses"] == 512
    assert first["timing_s"]["rollout"] == 41.2 and first["timing_s"]["train_actor"] == 20.3
    assert [r["step_time_s"] for r in result.records] == [73.4, 70.0]


def test_nemo_rl_step_summary_is_read_as_its_logged_keys(tmp_path):
    rows, _ = console_rows(NEMO_RL)
    step1 = rows[0][1]
    assert step1["timing/train/total_step_time"] == 102.8 and step1["timing/train/generation"] == 44.1
    assert step1["timing/validation/total_validation_time"] == 10.0 and step1["validation/accuracy"] == 0.25
    assert step1["train/mean_gen_tokens_per_sample"] == 1019.0 and "timing/train/vllm" not in step1
    path = tmp_path / "nemo.txt"
    path.write_text(NEMO_RL)
    result = import_log(path, "nemo-rl", prompts_per_step=64, group_size=8)
    rec = result.records[0]
    # validation (10 s) runs inside the step timer and is taken out of the step time
    assert rec["step_time_s"] == pytest.approx(92.8)
    assert rec["timing_s"]["old_logprob"] == 4.5 and rec["timing_s"]["weight_sync"] == 12.0
    assert result.records[1]["step_time_s"] == 90.0


def test_text_in_neither_format_is_refused_as_before(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("training went fine\nstep time about a minute\n")
    assert console_rows(path.read_text()) is None
    with pytest.raises(LogImportError, match="not valid JSON"):
        import_log(path, "verl", prompts_per_step=1, group_size=1)


def test_a_summary_pasted_without_its_header_is_the_next_step():
    text = NEMO_RL.split("===== Step 1/100", 1)[1].split("\n", 1)[1]  # from the validation block on
    rows, _ = console_rows(text.replace("========================= Step 2/100 =========================\n", ""))
    assert [r["step"] for _, r in rows] == [1, 2]
    assert rows[0][1]["timing/train/total_step_time"] == 102.8 and rows[1][1]["timing/train/total_step_time"] == 90.0
