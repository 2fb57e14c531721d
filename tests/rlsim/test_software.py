"""Software versions as an input (issue 27): the software section selects the engine behaviour by release, an
unknown release takes the nearest known one with a warning, and what the scenario sets itself wins."""

import subprocess
import sys

import pytest

from rlsim import catalog
from rlsim.errors import ScenarioError
from rlsim.run.costs import RooflineCostModel
from rlsim.scenario import engine_behaviour, from_dict, scheduler_rules, software, with_overrides

BASE = {"model": "Qwen2.5-1.5B", "hardware": {"gpu": "H100-SXM", "num_gpus": 1}}


def scn(**sw):
    return from_dict({**BASE, "software": sw})


def test_a_framework_release_pins_its_engine_and_behaviour():
    s = scn(framework="nemo-rl", framework_version="0.6.0")
    # a TP 1 engine runs on vLLM's uni executor, where 0.17.1 schedules asynchronously
    assert engine_behaviour(s) == "vllm-v1-async" and s.engine.behaviour is None  # derived, not written in
    assert software.warnings(s) == []
    assert software.resolve(s) == ("vllm-v1-async", [])
    assert "vllm==0.17.1" in software.table()["frameworks"]["nemo-rl"]["0.6.0"]["source"]


@pytest.mark.parametrize(
    "version, release, behaviour",
    [
        ("0.5.4", "0.5.4", "vllm-0.5"),
        ("0.7.3", "0.5.4", "vllm-0.5"),
        ("0.9.2", "0.8.5", "vllm-v1-piecewise"),
        ("0.10.1", "0.10.0", "vllm-v1-piecewise"),
        ("v0.4.0", "0.5.4", "vllm-0.5"),
        ("0.20", "0.19.1", "vllm-v1-async"),  # one GPU: vLLM's uni executor schedules asynchronously
        ("0.30", "0.27.1", "vllm-v1-async"),
        ("0.11.2", "0.11.2", "vllm-v1"),
    ],
)
def test_the_nearest_known_release_at_or_below_else_the_earliest(version, release, behaviour):
    s = scn(engine_version=version)
    assert engine_behaviour(s) == behaviour
    warns = software.warnings(s)
    if software.parse_version(version, "x") == software.parse_version(release, "x"):
        assert warns == []
    elif version == "0.30":  # newer than every known release: the latest one's behaviours, and it says so
        assert len(warns) == 1 and f"using the latest known release's behaviours, {release}'s" in warns[0]
    else:
        assert len(warns) == 1 and f"using {release}'s behaviours" in warns[0]


def test_a_framework_release_newer_than_the_catalog_takes_the_latest_and_says_so():
    s = scn(framework="nemo-rl", framework_version="0.9.0")
    assert software.pinned_engine_version("nemo-rl", "0.9.0") == "0.17.1"
    (warning,) = software.warnings(s)
    assert "nemo-rl 0.9.0 is newer than rlsim's software catalog knows" in warning
    assert "latest known release's behaviours, 0.6.0's" in warning


def test_nemo_rl_0_4_pins_vllm_0_10_with_piecewise_graphs():
    s = scn(framework="nemo-rl", framework_version="0.4.0")
    assert software.resolve(s) == ("vllm-v1-piecewise", [])
    assert software.pinned_engine_version("nemo-rl", "0.4.0") == "0.10.0"
    assert software.batch_defaults("0.10.0", "llm_class", "H100-SXM") == {
        "max_num_seqs": 1024,
        "max_num_batched_tokens": 16384,
    }
    # the same engine loop and scheduler as vllm-v1 (it extends it), only the decode graphs differ
    piecewise, full = catalog.engine("vllm-v1-piecewise"), catalog.engine("vllm-v1")
    assert full["eager_attention_s_per_layer"] == 0.0 and piecewise["eager_attention_s_per_layer"] > 0
    keys = ("decode_iteration_overhead_s", "decode_per_seq_overhead_s", "cpu_overlap", "block_size", "chunked_prefill")
    assert all(piecewise[k] == full[k] for k in keys)


def test_piecewise_graphs_add_the_eager_attention_per_layer_to_each_decode_iteration():
    # oracle: vLLM 0.10.0 vs 0.11.2 differ in one mechanism, the decode graph; the difference per iteration is
    # 1.2e-5 s (PR #20059: 0.33 ms over Qwen2.5-1.5B's 28 layers) x the model's layers, at every batch
    old, new = scn(engine_version="0.10.0"), scn(engine_version="0.11.2")
    d_old = RooflineCostModel.from_scenario(old).decode_coefficients()
    d_new = RooflineCostModel.from_scenario(new).decode_coefficients()
    layers = old.model.num_layers
    assert layers == 28
    for b in (1, 8, 64):
        assert d_old.overhead_s[b] - d_new.overhead_s[b] == pytest.approx(0.33e-3 / 28 * layers, rel=0.02)
    assert (d_old.mem_intercept_s == d_new.mem_intercept_s).all()


def test_the_version_changes_what_an_iteration_costs():
    old, new = scn(engine_version="0.5.4"), scn(engine_version="0.11.2")
    d_old = RooflineCostModel.from_scenario(old).decode_coefficients()
    d_new = RooflineCostModel.from_scenario(new).decode_coefficients()
    v05, v1 = catalog.engine("vllm-0.5"), catalog.engine("vllm-v1")
    # batch 8, TP 1, both serial: overhead = o_iter + o_seq x 8
    assert d_old.overhead_s[8] == pytest.approx(
        v05["decode_iteration_overhead_s"] + 8 * v05["decode_per_seq_overhead_s"]
    )
    assert d_new.overhead_s[8] == pytest.approx(v1["decode_iteration_overhead_s"] + 8 * v1["decode_per_seq_overhead_s"])
    assert not scheduler_rules(old).chunked_prefill and scheduler_rules(new).chunked_prefill


def test_an_explicit_behaviour_wins_and_overrides_take_effect():
    s = from_dict({**BASE, "engine": {"behaviour": "vllm-0.5"}, "software": {"engine_version": "0.11.2"}})
    assert engine_behaviour(s) == "vllm-0.5"
    swept = with_overrides(scn(engine_version="0.5.4"), {"software.engine_version": "0.11.2"})
    assert engine_behaviour(swept) == "vllm-v1"


@pytest.mark.parametrize(
    "sw, words",
    [
        ({"engine_version": "latest"}, "is not a version"),
        ({"framework": "nemo-rl"}, "framework_version: None is required"),
        ({"framework": "slime", "framework_version": "0.9.0"}, "has no versions in the software catalog"),
    ],
)
def test_bad_software_is_refused_naming_the_field(sw, words):
    with pytest.raises(ScenarioError, match=words):
        scn(**sw)


def test_every_release_has_a_source_and_a_known_behaviour():
    tab = software.table()
    for release, entry in tab["engines"]["vllm"].items():
        assert entry["source"] and entry["behaviour"] in catalog.engine_names(), release
    for name, releases in tab["frameworks"].items():
        for release, entry in releases.items():
            assert entry["source"] and entry["engine_version"] in tab["engines"][entry["engine"]], (name, release)


def test_rlsim_run_prints_the_warning_once(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "model: Qwen2.5-1.5B\nhardware: {gpu: H100-SXM, num_gpus: 1}\nworkload: {prompts_per_step: 4, group_size: 2}\n"
        "software: {engine_version: '0.7.3'}\nrun: {steps: 2}\n"
    )
    proc = subprocess.run([sys.executable, "-m", "rlsim.cli", "run", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("vllm 0.7.3 is not in rlsim's software catalog") == 1


def test_batch_limits_by_release_usage_context_and_gpu():
    # vllm/engine/arg_utils.py get_batch_defaults: >= 70 GiB GPUs other than the A100 get the big limits
    assert software.batch_defaults("0.11.2", "openai_api_server", "H100-SXM") == {
        "max_num_seqs": 1024,
        "max_num_batched_tokens": 8192,
    }
    assert software.batch_defaults("0.17.1", "llm_class", "H200")["max_num_batched_tokens"] == 16384
    # the A100 is excluded by name whatever its memory; a 48 GB GPU by size
    assert software.batch_defaults("0.12.0", "openai_api_server", "A100-80GB") == {
        "max_num_seqs": 256,
        "max_num_batched_tokens": 2048,
    }
    assert software.batch_defaults("0.11.2", "llm_class", "L40S")["max_num_batched_tokens"] == 8192
    assert software.batch_defaults("0.5.4", "openai_api_server", "H100-SXM") == {"max_num_seqs": 256}
    # the scheduler's default budget for a scenario that names no release: vllm.LLM's at the reference release
    h100 = from_dict({**BASE, "engine": {"behaviour": "vllm-v1"}})
    assert scheduler_rules(h100).max_num_batched_tokens == 16384


def test_a_served_v1_benchmark_row_takes_the_servers_limits():
    from calibrate.published import generation as gen

    row = {"model": "Meta-Llama-3.1-8B-Instruct", "tp": 1, "engine_version": "0.11.2", "concurrency": "64"}
    h100 = from_dict(gen.scenario_for_row({**row, "gpu": "H100-80GB-SXM"}))
    a100 = from_dict(gen.scenario_for_row({**row, "gpu": "A100-80GB-SXM"}))
    assert (h100.engine.max_num_seqs, scheduler_rules(h100).max_num_batched_tokens) == (1024, 8192)
    assert (a100.engine.max_num_seqs, scheduler_rules(a100).max_num_batched_tokens) == (256, 2048)
    old = from_dict(gen.scenario_for_row({**row, "gpu": "H100-80GB-SXM", "engine_version": "v0.5.4"}))
    assert old.engine.max_num_seqs == 256 and not scheduler_rules(old).chunked_prefill


def test_nemo_rl_rows_take_the_llm_class_limit_of_their_gpu():
    from rlsim.frameworks.nemo_rl.recipe import llm_class_max_num_seqs

    # vllm.LLM at the pinned release: 1024 sequences on an H100 or GB200, 256 on an A100 (get_batch_defaults)
    assert llm_class_max_num_seqs("0.5.0", "H100-SXM") == 1024
    assert llm_class_max_num_seqs("0.6.0", "GB200") == 1024
    assert llm_class_max_num_seqs("0.5.0", "A100-80GB") == 256
    assert llm_class_max_num_seqs(None, "custom", memory_bytes=48e9) == 256


def _engine_scn(tp, **sw):
    return from_dict(
        {**BASE, "hardware": {"gpu": "H100-SXM", "num_gpus": 8}, "engine": {"tensor_parallel_size": tp}, "software": sw}
    )


@pytest.mark.parametrize(
    "tp, sw, behaviour",
    [
        (1, {"framework": "nemo-rl", "framework_version": "0.6.0"}, "vllm-v1-async"),  # uni executor
        (2, {"framework": "nemo-rl", "framework_version": "0.6.0"}, "vllm-v1"),  # NeMo RL's Ray executor
        (1, {"framework": "nemo-rl", "framework_version": "0.5.0"}, "vllm-v1"),  # 0.11.2: off by default
        (2, {"engine_version": "0.17.1"}, "vllm-v1-async"),  # vllm serve: mp within a node
        (1, {"engine_version": "0.11.2"}, "vllm-v1"),
    ],
)
def test_async_scheduling_only_where_the_executor_allows_it(tp, sw, behaviour):
    s = _engine_scn(tp, **sw)
    assert engine_behaviour(s) == behaviour
    assert scheduler_rules(s) == scheduler_rules(_engine_scn(tp, engine_version="0.11.2"))  # the same scheduler


def test_async_scheduling_overlaps_the_engine_cpu_work_with_the_gpu_step():
    from rlsim.engine.iteration import decode_iteration_s

    serial = RooflineCostModel.from_scenario(_engine_scn(1, framework="nemo-rl", framework_version="0.5.0"))
    overlap = RooflineCostModel.from_scenario(_engine_scn(1, framework="nemo-rl", framework_version="0.6.0"))
    d_serial, d_overlap = serial.decode_coefficients(), overlap.decode_coefficients()
    v1 = catalog.engine("vllm-v1")
    for b, context in ((8, 8 * 500.0), (256, 256 * 2000.0)):
        cpu = v1["decode_iteration_overhead_s"] + v1["decode_per_seq_overhead_s"] * b
        gpu = max(
            d_serial.mem_intercept_s[b] + d_serial.mem_slope_s_per_token * context,
            d_serial.compute_intercept_s[b] + d_serial.compute_slope_s_per_token * context,
        )
        assert decode_iteration_s(d_serial, b, context) == pytest.approx(gpu + cpu)
        assert decode_iteration_s(d_overlap, b, context) == pytest.approx(max(gpu, cpu))
