"""verl's FSDP trainers and OpenRLHF's DeepSpeed path as they run (rlsim.trainer.training, ``_fsdp_time`` and its
helpers): analytic oracles on the toy GPU and model of tests/rlsim/test_training.py (1e15 FLOP/s, 1e11 B/s NVLink,
1e10 B/s NIC, 8 GPUs per NVLink domain; 1e9 parameters in 8 layers, 8 heads of 128; efficiencies 0.5, no latencies,
no overheads unless a test sets them). Every expected number is written out from the mechanism's formula.
"""

from __future__ import annotations

import pytest

from rlsim.errors import ScenarioError
from rlsim.frameworks.config_import import import_config
from rlsim.scenario import from_dict, parse_overrides
from rlsim.trainer import memory as training_memory
from rlsim.trainer import training
from tests.rlsim.test_import_config import ORL_HYBRID, ORL_MODEL, VERL_GRPO
from tests.rlsim.test_training import EFF_FLOPS, LAYER_BYTES, L, N, W, _scn

FSDP = {"training.backend": "fsdp", "training.activation_recompute": "none"}
NVL, NIC = 1e11, 1e10


def _ag(nbytes: float, g: int, bw: float) -> float:
    return (g - 1) / g * nbytes / bw


AG8 = _ag(LAYER_BYTES, 8, NVL)  # one layer's gather over 8 GPUs of one domain: 2.1875 ms


def _fwd_layer(tokens_gpu_mb: float) -> float:
    """One layer's forward over a micro-batch of ``tokens_gpu_mb`` tokens on one GPU: 2 (N / L) T / 5e14."""
    return 2 * (N / L) * tokens_gpu_mb / EFF_FLOPS


# ------------------------------------------------------------------------------ 1. verl's dynamic batch size


def test_dynamic_batch_forms_micro_batches_by_the_token_budget():
    """verl use_dynamic_bsz (seqlen_balancing.py rearrange_micro_batches): a rank's micro-batches are
    ceil(its tokens / ppo_max_token_len_per_gpu), at most its sequences. 8 GPUs, one optimizer step of 80,000 tokens:
    10,000 per rank; budget 3,000 -> ceil(3.33) = 4 micro-batches of 2,500 tokens; the log-prob pass's own budget
    8,000 -> ceil(1.25) = 2. Seconds: a layer's forward over 2,500 tokens is 2 x 1.25e8 x 2,500 / 5e14 = 1.25 ms <
    the 2.1875 ms gather, so each micro-batch and layer exposes (ag - fwd) + (ag + rs - 2 fwd), plus the first
    gather and the last reduce-scatter."""
    s = _scn(
        {
            **FSDP,
            "training.sequence_packing": True,
            "training.packing_tokens": 3000,
            "training.logprob_packing_tokens": 8000,
        }
    )
    tokens, seqs = 80_000, 8 * 40
    tt = training.phase_time(s, s.model, tokens, 0.0, optimizer_steps=1, num_sequences=seqs)
    assert tt.micro_batches == 4
    fwd = _fwd_layer(2500)
    assert fwd == pytest.approx(1.25e-3)
    per_mb_layer = (AG8 - fwd) + (2 * AG8 - 2 * fwd)
    assert tt.fsdp_comm_s == pytest.approx(4 * L * per_mb_layer + 2 * AG8)
    assert tt.fsdp_comm_s == pytest.approx(32 * 3 * (2.1875e-3 - 1.25e-3) + 2 * 2.1875e-3)
    assert tt.compute_s == pytest.approx(3 * 2 * N * tokens / (8 * EFF_FLOPS))  # 0.12 s: packing adds no tokens
    fo = training.phase_time(s, s.model, tokens, 0.0, forward_only=True, num_sequences=seqs)
    assert fo.micro_batches == 2
    fwd_fo = _fwd_layer(5000)  # 2.5 ms > the gather: hidden
    assert fo.fsdp_comm_s == pytest.approx(2 * L * max(0.0, AG8 - fwd_fo) + AG8)
    # the same tokens under a budget of 1,000: ceil(10) = 10 micro-batches per rank, each exposing more
    small = _scn({**FSDP, "training.sequence_packing": True, "training.packing_tokens": 1000})
    st = training.phase_time(small, small.model, tokens, 0.0, optimizer_steps=1, num_sequences=seqs)
    assert st.micro_batches == 10
    fwd_s = _fwd_layer(1000)
    assert st.fsdp_comm_s == pytest.approx(10 * L * 3 * (AG8 - fwd_s) + 2 * AG8)
    # never more micro-batches than sequences: 16 sequences over 8 ranks is 2 each, whatever the budget
    few = training.phase_time(small, small.model, tokens, 0.0, optimizer_steps=1, num_sequences=16)
    assert few.micro_batches == 2


def test_dynamic_batch_packs_ulysses_groups_by_their_budgets():
    """verl multiplies the budget by the Ulysses size (dp_actor.py: ppo_max_token_len_per_gpu x sp): over 4 groups
    of 2 GPUs a group holds 20,000 tokens and packs 2 x 3,000 -> ceil(3.33) = 4, as without sequence parallel."""
    s = _scn({**FSDP, "training.sequence_packing": True, "training.packing_tokens": 3000})
    sp = _scn(
        {
            **FSDP,
            "training.sequence_packing": True,
            "training.packing_tokens": 3000,
            "training.ulysses_sequence_parallel_size": 2,
        }
    )
    assert training.phase_time(sp, sp.model, 80_000, 0.0, num_sequences=320).micro_batches == 4
    assert training.phase_time(s, s.model, 80_000, 0.0, num_sequences=320).micro_batches == 4


def test_verl_import_reads_the_token_budgets(tmp_path):
    sets = {
        "actor_rollout_ref.actor.use_dynamic_bsz": True,
        "actor_rollout_ref.actor.ppo_max_token_len_per_gpu": 12000,
        "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu": 30000,
    }
    tr = from_dict(import_config(VERL_GRPO, "verl", sets).scenario).training
    assert tr.sequence_packing and tr.micro_batch_size == 1
    assert (tr.packing_tokens, tr.logprob_packing_tokens) == (12000, 30000)


# -------------------------------------------------------------------- 2. padding and the log-prob micro-batches


def test_padding_to_the_caps_prices_the_linear_layers_on_the_padding():
    """verl without use_remove_padding pads every prompt and response to its cap (512 + 512 here): 128 sequences of
    300 real tokens cost 3 x 2 N x 128 x 1,024 FLOPs in training, not 128 x 300; attention stays on the real
    lengths (sq_tokens passed through). Without padding (remove_padding) the real tokens."""
    over = {**FSDP, "training.sequence_packing": False, "training.micro_batch_size": 4}
    seqs, real = 128, 300
    padded = _scn({**over, "training.pad_to_cap": True})
    plain = _scn({**over, "training.remove_padding": True})
    tp = training.phase_time(padded, padded.model, seqs * real, 0.0, num_sequences=seqs)
    tr = training.phase_time(plain, plain.model, seqs * real, 0.0, num_sequences=seqs)
    assert tp.compute_s == pytest.approx(3 * 2 * N * seqs * 1024 / (8 * EFF_FLOPS))
    assert tr.compute_s == pytest.approx(3 * 2 * N * seqs * real / (8 * EFF_FLOPS))
    # attention: 0.5 x 4 L heads x head_dim x sum of squares, 3 passes, on the real lengths in both
    sq = seqs * real * real
    attn = 3 * 0.5 * 4 * L * 8 * 128 * sq / (8 * EFF_FLOPS)
    tpa = training.phase_time(padded, padded.model, seqs * real, sq, num_sequences=seqs)
    assert tpa.compute_s - tp.compute_s == pytest.approx(attn)


def test_the_log_prob_pass_has_its_own_micro_batches():
    """log_prob_micro_batch_size_per_gpu 16 against ppo_micro_batch_size_per_gpu 2: 128 sequences of 1,024 tokens
    over 8 GPUs is 16 a rank, one log-prob micro-batch of 16,384 tokens (forward 8.192 ms a layer: the gather
    hides) against 8 training micro-batches of 2,048 (forward 1.024 ms: each exposes 3 (ag - fwd) a layer)."""
    s = _scn(
        {
            **FSDP,
            "training.sequence_packing": False,
            "training.micro_batch_size": 2,
            "training.logprob_micro_batch_size": 16,
        }
    )
    tokens = 128 * 1024
    fo = training.phase_time(s, s.model, tokens, 0.0, forward_only=True, num_sequences=128)
    tt = training.phase_time(s, s.model, tokens, 0.0, num_sequences=128)
    assert (fo.micro_batches, tt.micro_batches) == (1, 8)
    assert fo.fsdp_comm_s == pytest.approx(AG8)
    fwd = _fwd_layer(2048)
    assert tt.fsdp_comm_s == pytest.approx(8 * L * 3 * (AG8 - fwd) + 2 * AG8)


def test_verl_import_maps_padding(tmp_path):
    off = from_dict(
        import_config(VERL_GRPO, "verl", {"actor_rollout_ref.model.use_remove_padding": False}).scenario
    ).training
    on = from_dict(import_config(VERL_GRPO, "verl").scenario).training
    assert off.pad_to_cap and not off.remove_padding
    assert on.remove_padding and not on.pad_to_cap


def test_pad_to_cap_contradicts_remove_padding():
    over = {**FSDP, "training.sequence_packing": False, "training.pad_to_cap": True, "training.remove_padding": True}
    with pytest.raises(ScenarioError, match="remove one of training.remove_padding and training.pad_to_cap"):
        _scn(over)


# ---------------------------------------------------------------------------------- 3. Ulysses sequence parallel


def test_ulysses_all_to_alls_by_hand():
    """Ulysses over 2 GPUs, 8 micro-batches of 2,048 tokens a rank group (1,024 a GPU): per layer and pass four
    all-to-alls, q and the output (8 heads x 128 x 2 bytes a token) and k and v (8 KV heads), each sending half of
    1,024 x 2,048 bytes over NVLink: 4 x 0.5 x 2,097,152 / 1e11 = 41.94 us; forward and backward: 2 x 8 x 8 x that."""
    s = _scn(
        {
            **FSDP,
            "training.sequence_packing": False,
            "training.micro_batch_size": 2,
            "training.ulysses_sequence_parallel_size": 2,
        }
    )
    tokens = 128 * 1024  # 128 sequences over 4 groups: 32 a group, 16 micro-batches of 2 sequences
    tt = training.phase_time(s, s.model, tokens, 0.0, num_sequences=128)
    assert tt.micro_batches == 16
    per_gpu_mb = tokens / 8 / 16  # 1,024 tokens on each GPU of a group
    one = 0.5 * per_gpu_mb * 8 * 128 * 2 / NVL
    assert tt.cp_comm_s == pytest.approx(2 * 16 * L * 4 * one)
    assert 4 * one == pytest.approx(4 * 0.5 * 2_097_152 / 1e11)
    assert tt.compute_s == pytest.approx(3 * 2 * N * tokens / (8 * EFF_FLOPS))  # the same compute, split by sequence
    fo = training.phase_time(s, s.model, tokens, 0.0, forward_only=True, num_sequences=128)
    assert fo.cp_comm_s == pytest.approx(16 * L * 4 * one)


def test_ulysses_must_divide_the_heads_and_is_fsdp_only():
    with pytest.raises(ScenarioError, match="must divide the training GPUs"):
        _scn({**FSDP, "training.ulysses_sequence_parallel_size": 3})
    with pytest.raises(ScenarioError, match="is an fsdp option"):
        _scn({"training.backend": "megatron", "training.ulysses_sequence_parallel_size": 2})


def test_verl_import_reads_ulysses():
    from rlsim.frameworks.adapter import ImportConfigError

    sp = {"actor_rollout_ref.actor.ulysses_sequence_parallel_size": 2}
    tr = from_dict(import_config(VERL_GRPO, "verl", sp).scenario).training
    assert tr.ulysses_sequence_parallel_size == 2
    with pytest.raises(ImportConfigError, match="needs actor_rollout_ref.model.use_remove_padding true"):
        import_config(VERL_GRPO, "verl", {**sp, "actor_rollout_ref.model.use_remove_padding": False})


# ------------------------------------------------------------------------- 4. the update against the log-prob pass


def test_recomputed_forward_runs_at_the_forward_efficiency():
    """Train efficiency 0.4, forward 0.5, full recompute: the update is 3 passes at 0.4 and the recomputed forward
    at 0.5, (3 / 0.4 + 1 / 0.5) / (1 / 0.5) = 4.75 times the log-prob pass of the same tokens (it was 4 / 0.4 over
    1 / 0.5 = 5 with the recompute at the training efficiency); without recompute 3 / 0.4 / 2 = 3.75."""
    over = {**FSDP, "costs.train_compute_efficiency": 0.4, "training.activation_recompute": "full"}
    s = _scn(over)
    tokens = 1e6
    tt = training.phase_time(s, s.model, tokens, 0.0)
    fo = training.phase_time(s, s.model, tokens, 0.0, forward_only=True)
    assert tt.compute_s == pytest.approx(3 * 2 * N * tokens / (8 * 1e15 * 0.4) + 2 * N * tokens / (8 * 1e15 * 0.5))
    assert tt.compute_s / fo.compute_s == pytest.approx(4.75)
    none = _scn({**over, "training.activation_recompute": "none"})
    assert training.phase_time(none, none.model, tokens, 0.0).compute_s / fo.compute_s == pytest.approx(3.75)


# ------------------------------------------------------------------------ 5. what halving the trainer's GPUs costs


def test_halving_the_fsdp_trainer_costs_less_than_twice():
    """One optimizer step of 16 x 8,192 = 131,072 tokens, 0.5 s of fixed work a step (costs.train_step_overhead_s).
    On 16 GPUs (two domains: the gathers ride the 1e10 NIC, 15/16 x 2.5e8 / 1e10 = 23.4375 ms a layer) a GPU
    forwards 8,192 tokens (4.096 ms a layer): all 3 x (ag - fwd) exposed per layer of its one micro-batch, plus the
    first gather and last reduce-scatter. On 8 GPUs (one domain, 2.1875 ms) it forwards 16,384 (8.192 ms): hidden.
    Compute doubles, the communication shrinks, the fixed work stays."""
    over = {
        **FSDP,
        "training.sequence_packing": True,
        "training.packing_tokens": 16384,
        "costs.train_step_overhead_s": 0.5,
        "costs.internode_latency_s": 0,
    }
    tokens = 16 * 8192
    big, small = _scn({**over, "hardware.num_gpus": 16}), _scn({**over, "hardware.num_gpus": 8})
    t16 = training.phase_time(big, big.model, tokens, 0.0, num_sequences=128)
    t8 = training.phase_time(small, small.model, tokens, 0.0, num_sequences=128)
    ag16 = _ag(LAYER_BYTES, 16, NIC)
    assert ag16 == pytest.approx(23.4375e-3)
    c16, c8 = 3 * 2 * N * tokens / (16 * EFF_FLOPS), 3 * 2 * N * tokens / (8 * EFF_FLOPS)
    comm16 = L * 3 * (ag16 - _fwd_layer(8192)) + 2 * ag16
    comm8 = 2 * AG8  # gathers hidden behind 8.192 ms forwards
    opt16, opt8 = 28 * N / 16 / 1e12, 28 * N / 8 / 1e12
    assert t16.total_s == pytest.approx(c16 + comm16 + opt16 + 0.5)
    assert t8.total_s == pytest.approx(c8 + comm8 + opt8 + 0.5)
    ratio = (c8 + comm8 + opt8 + 0.5) / (c16 + comm16 + opt16 + 0.5)
    assert t8.total_s / t16.total_s == pytest.approx(ratio)
    assert ratio < 1.5  # far from the 2x of compute alone


def test_zero2_communication_does_not_shrink_with_more_gpus():
    """ZeRO-2 (the parameters whole on each GPU): every micro-batch reduce-scatters the whole bf16 gradient and the
    step ends with an all-gather of the updated parameters, (g-1)/g of 2e9 bytes each. Not overlapped (OpenRLHF's
    default overlap_comm false): 8 GPUs, 2 micro-batches: 3 x 7/8 x 2e9 / 1e11 = 52.5 ms; on 4 GPUs with 4
    micro-batches 5 x 3/4 x 2e9 / 1e11 = 75 ms: halving the GPUs does not halve it."""
    over = {
        **FSDP,
        "training.zero_stage": 2,
        "training.overlap_communication": False,
        "training.sequence_packing": False,
        "training.micro_batch_size": 4,
    }
    tokens = 64 * 1024
    t8 = training.phase_time(_scn(over), _scn(over).model, tokens, 0.0, num_sequences=64)
    four = _scn({**over, "hardware.num_gpus": 4})
    t4 = training.phase_time(four, four.model, tokens, 0.0, num_sequences=64)
    assert (t8.micro_batches, t4.micro_batches) == (2, 4)
    assert t8.fsdp_comm_s == pytest.approx(3 * _ag(W, 8, NVL)) and t8.fsdp_comm_s == pytest.approx(52.5e-3)
    assert t4.fsdp_comm_s == pytest.approx(5 * _ag(W, 4, NVL)) and t4.fsdp_comm_s == pytest.approx(75e-3)
    # ZeRO-1 reduces once per step: 2 x 7/8 x 2e9 / 1e11 = 35 ms on 8 GPUs
    z1 = _scn({**over, "training.zero_stage": 1})
    assert training.phase_time(z1, z1.model, tokens, 0.0, num_sequences=64).fsdp_comm_s == pytest.approx(35e-3)
    # overlapped, each reduction hides behind its micro-batch's backward (2 forwards of 8 x 4,096 tokens: 65.5 ms
    # > 17.5 ms): only the all-gather shows
    ov = _scn({**over, "training.overlap_communication": True})
    assert training.phase_time(ov, ov.model, tokens, 0.0, num_sequences=64).fsdp_comm_s == pytest.approx(17.5e-3)
    # a log-prob pass gathers nothing: the parameters are whole
    assert training.phase_time(ov, ov.model, tokens, 0.0, forward_only=True).fsdp_comm_s == 0.0


# ----------------------------------------------------------------------------------------- 6. ZeRO stage memory


def test_zero_stage_memory_by_hand():
    """Bytes per GPU on 8 GPUs: ZeRO-3 16 / 8 per parameter (2e9) plus two gathered layers (5e8); ZeRO-2 adds the
    whole bf16 parameters (2e9) and drops the gathered layers; ZeRO-1 also keeps whole bf16 gradients (2e9)."""
    base = {**FSDP, "training.sequence_packing": False, "training.micro_batch_size": 1}
    m3 = training_memory.memory(_scn(base))
    m2 = training_memory.memory(_scn({**base, "training.zero_stage": 2}))
    m1 = training_memory.memory(_scn({**base, "training.zero_stage": 1}))
    assert m3.weights_grads_bytes + m3.optimizer_bytes == pytest.approx(16 * N / 8)
    assert m2.weights_grads_bytes - m3.weights_grads_bytes == pytest.approx(2 * N)
    assert m1.weights_grads_bytes - m3.weights_grads_bytes == pytest.approx(4 * N)
    assert m3.activation_bytes - m2.activation_bytes == pytest.approx(2 * LAYER_BYTES)


def test_openrlhf_import_reads_the_zero_stage_and_overlap():
    """The hybrid-engine script's --ds.zero_stage 3; the smaller stages on one 8B actor without a critic (a PPO
    critic, reward model and reference beside ZeRO-2's whole parameters do not fit 8 H100s)."""
    grpo = [
        "algo.advantage.estimator=group_norm",
        "reward.remote_url=http://x",
        "algo.kl.init_coef=0",
        "rollout.n_samples_per_prompt=8",
    ]

    def training_of(sets):
        return from_dict(
            import_config(ORL_HYBRID, "openrlhf", parse_overrides([*ORL_MODEL, *grpo, *sets])).scenario
        ).training

    assert training_of([]).zero_stage == 3
    z2 = training_of(["ds.zero_stage=2"])
    assert z2.zero_stage == 2 and not z2.overlap_communication
    assert training_of(["ds.zero_stage=1", "ds.overlap_comm=true"]).overlap_communication
    assert training_of(["ds.zero_stage=0"]).zero_stage == 1


def test_zero_below_three_keeps_parameters_on_the_gpu():
    with pytest.raises(ScenarioError, match="set training.zero_stage: 3"):
        _scn({**FSDP, "training.zero_stage": 2, "training.offload_params": True})


# ------------------------------------------------------------------------------- 7. FSDP's reshard_after_forward


def test_without_reshard_after_forward_the_backward_gathers_nothing():
    """verl fsdp_config.reshard_after_forward false (FSDP1 SHARD_GRAD_OP, FSDP2 reshard_after_forward=False): the
    backward keeps the forward's layer, so per micro-batch and layer (ag - fwd) + (rs - 2 fwd) is exposed, not
    (ag - fwd) + (ag + rs - 2 fwd); the memory holds the whole bf16 parameters (2e9 bytes) in place of two layers.
    1,024 tokens a micro-batch: fwd 0.512 ms, 16 micro-batches of 8 layers."""
    over = {**FSDP, "training.sequence_packing": False, "training.micro_batch_size": 1}
    kept = _scn({**over, "training.reshard_after_forward": False})
    tokens = 8 * 1024 * 16
    tt = training.phase_time(kept, kept.model, tokens, 0.0, num_sequences=128)
    fwd = _fwd_layer(1024)
    assert tt.fsdp_comm_s == pytest.approx(16 * L * ((AG8 - fwd) + (AG8 - 2 * fwd)) + 2 * AG8)
    resharded = training_memory.memory(_scn(over)).activation_bytes
    assert training_memory.memory(kept).activation_bytes - resharded == pytest.approx(W - 2 * LAYER_BYTES)
    tr = from_dict(
        import_config(VERL_GRPO, "verl", {"actor_rollout_ref.actor.fsdp_config.reshard_after_forward": False}).scenario
    ).training
    assert tr.reshard_after_forward is False


def test_hybrid_sharding_gathers_inside_a_node_and_all_reduces_across():
    """16 GPUs in two domains, verl fsdp_size 8: a layer's gather runs over the 8 GPUs of a node on NVLink (2.1875 ms
    against 23.4375 ms over the NIC), and its gradient shard (2.5e8 / 8 bytes) is all-reduced across the 2 replicas
    over the NIC, 2 x 1/2 x 3.125e7 / 1e10 = 3.125 ms. 16 micro-batches of 1,024 tokens (fwd 0.512 ms): per layer
    (ag - fwd) + (ag + rs + allreduce - 2 fwd); the state is 16 bytes per parameter over 8, not 16."""
    over = {
        **FSDP,
        "hardware.num_gpus": 16,
        "training.sequence_packing": False,
        "training.micro_batch_size": 1,
        "costs.internode_latency_s": 0,
    }
    hybrid = _scn({**over, "training.fsdp_shard_size": 8})
    tokens = 16 * 1024 * 16
    tt = training.phase_time(hybrid, hybrid.model, tokens, 0.0, num_sequences=256)
    fwd = _fwd_layer(1024)
    ar = 2 * _ag(LAYER_BYTES / 8, 2, NIC)
    assert ar == pytest.approx(3.125e-3)
    rs = AG8 + ar
    assert tt.fsdp_comm_s == pytest.approx(16 * L * ((AG8 - fwd) + (AG8 + rs - 2 * fwd)) + AG8 + rs)
    assert tt.optimizer_s == pytest.approx(28 * N / 8 / 1e12)
    mem = training_memory.memory(hybrid)
    assert mem.weights_grads_bytes + mem.optimizer_bytes == pytest.approx(16 * N / 8)
    with pytest.raises(ScenarioError, match="fsdp_shard_size"):
        _scn({**over, "training.fsdp_shard_size": 5})
    tr = from_dict(
        import_config(
            VERL_GRPO,
            "verl",
            {
                "trainer.nnodes": 2,
                "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": 16,
                "actor_rollout_ref.actor.fsdp_config.fsdp_size": 8,
            },
        ).scenario
    ).training
    assert tr.fsdp_shard_size == 8


def test_verl_refuses_a_token_budget_below_one_padded_sequence(tmp_path):
    """verl asserts max_token_len (the budget x the Ulysses size) >= the padded width, max prompt + max response:
    the fixture's 1,024 + 8,192 = 9,216 tokens do not fit a budget of 4,096, but do over a Ulysses group of 4."""
    from rlsim.frameworks.adapter import ImportConfigError

    sets = {
        "data.max_prompt_length": 1024,
        "data.max_response_length": 8192,
        "actor_rollout_ref.actor.use_dynamic_bsz": True,
        "actor_rollout_ref.actor.ppo_max_token_len_per_gpu": 4096,
    }
    with pytest.raises(ImportConfigError, match="ppo_max_token_len_per_gpu: 4096 x Ulysses size 1 is below"):
        import_config(VERL_GRPO, "verl", sets)
    ok = import_config(VERL_GRPO, "verl", {**sets, "actor_rollout_ref.actor.ulysses_sequence_parallel_size": 4})
    assert ok.scenario["training"]["packing_tokens"] == 4096


def test_micro_batches_padded_to_their_longest():
    """OpenRLHF without packing_samples right-pads a micro-batch to its longest sample. Prompts of 512, responses
    uniform on 100..500: the longest of 2 responses averages 100 + 2/3 x 400 = 366.7, so 2 sequences cost
    2 x 878.7 tokens in the linear layers against 2 x 812 real: x 1.0821. The log-prob pass's micro-batch of 1
    has no padding. Packed micro-batches contradict it."""
    over = {
        **FSDP,
        "training.sequence_packing": False,
        "training.micro_batch_size": 2,
        "training.logprob_micro_batch_size": 1,
        "workload.response_length": {"dist": "uniform", "low": 100, "high": 500},
    }
    padded, plain = _scn({**over, "training.pad_micro_batches": True}), _scn(over)
    tokens, seqs = 128 * 812, 128
    ratio = (512 + 100 + 2 / 3 * 400) / 812
    assert ratio == pytest.approx(1.0821, abs=1e-4)
    tp = training.phase_time(padded, padded.model, tokens, 0.0, num_sequences=seqs)
    tr = training.phase_time(plain, plain.model, tokens, 0.0, num_sequences=seqs)
    assert tr.compute_s == pytest.approx(3 * 2 * N * tokens / (8 * EFF_FLOPS))
    assert tp.compute_s / tr.compute_s == pytest.approx(ratio, rel=5e-3)
    fo = training.phase_time(padded, padded.model, tokens, 0.0, forward_only=True, num_sequences=seqs)
    assert fo.compute_s == pytest.approx(2 * N * tokens / (8 * EFF_FLOPS))
    with pytest.raises(ScenarioError, match="sequence packing leaves no padding"):
        _scn({**FSDP, "training.pad_micro_batches": True})


def test_openrlhf_without_packing_pads_micro_batches():
    def training_of(sets):
        return from_dict(import_config(ORL_HYBRID, "openrlhf", parse_overrides([*ORL_MODEL, *sets])).scenario).training

    off = training_of(["train.dynamic_batch_enable=false", "ds.packing_samples=false"])
    on = training_of(["train.dynamic_batch_enable=false"])
    assert off.pad_micro_batches and not off.remove_padding
    assert on.remove_padding and not on.pad_micro_batches


def test_verl_megatron_budget_counts_the_context_parallel_group():
    """verl's Megatron actor packs ppo_max_token_len_per_gpu x CP tokens per data-parallel rank
    (megatron_actor.py:763): 12,000 x CP 2 = 24,000 a bin, the log-prob budget 30,000 x 2 = 60,000."""
    sets = {
        "actor_rollout_ref.actor.strategy": "megatron",
        "actor_rollout_ref.actor.megatron.context_parallel_size": 2,
        "actor_rollout_ref.actor.megatron.tensor_model_parallel_size": 2,
        "actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity": "full",
        "actor_rollout_ref.actor.use_dynamic_bsz": True,
        "actor_rollout_ref.actor.ppo_max_token_len_per_gpu": 12000,
        "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu": 30000,
    }
    tr = import_config(VERL_GRPO, "verl", sets).scenario["training"]
    assert (tr["packing_tokens"], tr["logprob_packing_tokens"]) == (24000, 60000)


# ---------------------------------------------------------------------- verl's critic: its own micro-batching


def test_the_critic_is_priced_with_its_own_padding():
    """verl's dp critic pads to the caps by default (critic.model.use_remove_padding false) while the actor packs:
    128 sequences of 300 real tokens, caps 512 + 512. The critic's values pass costs 2 N x 128 x 1,024 FLOPs over the
    8 GPUs (its linear layers on the padding), the actor's log-prob pass 2 N x 128 x 300 (no attention: sq 0)."""
    s = _scn({**FSDP, "training.sequence_packing": False, "training.micro_batch_size": 4, "algorithm.name": "ppo"})
    padded = _scn(
        {
            **FSDP,
            "training.sequence_packing": False,
            "training.micro_batch_size": 4,
            "algorithm.name": "ppo",
            "algorithm.critic_pad_to_cap": True,
        }
    )
    assert s.critic_view() is s  # no critic setting of its own: the training section as it is
    view = padded.critic_view()
    assert view.training.pad_to_cap and not view.training.remove_padding and not padded.training.pad_to_cap
    seqs, real = 128, 300
    critic = training.phase_time(view, view.model, seqs * real, 0.0, forward_only=True, num_sequences=seqs)
    actor = training.phase_time(padded, padded.model, seqs * real, 0.0, forward_only=True, num_sequences=seqs)
    assert critic.compute_s == pytest.approx(2 * N * seqs * 1024 / (8 * EFF_FLOPS))
    assert actor.compute_s == pytest.approx(2 * N * seqs * real / (8 * EFF_FLOPS))


def test_the_critic_packs_in_its_own_budget():
    """critic.ppo_max_token_len_per_gpu 8,000 against the actor's 3,000: 10,000 tokens a rank are ceil(1.25) = 2
    critic micro-batches, ceil(3.33) = 4 of the actor's."""
    over = {**FSDP, "training.sequence_packing": True, "training.packing_tokens": 3000, "algorithm.name": "ppo"}
    s = _scn({**over, "algorithm.critic_packing_tokens": 8000})
    tokens, seqs = 80_000, 8 * 40
    view = s.critic_view()
    assert training.phase_time(view, view.model, tokens, 0.0, num_sequences=seqs).micro_batches == 2
    assert training.phase_time(s, s.model, tokens, 0.0, num_sequences=seqs).micro_batches == 4


def test_verl_critic_keys_map_with_verls_defaults():
    """verl@v0.7.0 dp_critic.yaml: model.use_remove_padding false (:44), use_dynamic_bsz the actor's (critic.yaml:62),
    ppo_max_token_len_per_gpu 32768 (:65)."""
    from tests.rlsim.test_import_config import VERL_PPO

    alg = from_dict(import_config(VERL_PPO, "verl").scenario).algorithm
    assert alg.critic_pad_to_cap is True
    packed = from_dict(
        import_config(VERL_PPO, "verl", {"actor_rollout_ref.actor.use_dynamic_bsz": True}).scenario
    ).algorithm
    assert packed.critic_sequence_packing and packed.critic_packing_tokens == 32768
    unpadded = from_dict(import_config(VERL_PPO, "verl", {"critic.model.use_remove_padding": True}).scenario)
    assert unpadded.algorithm.critic_pad_to_cap is False and not unpadded.critic_view().training.pad_to_cap
