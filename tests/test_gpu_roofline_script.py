"""scripts/gpu_roofline.py: the torch decode stack computes what a model's decode step computes (checked against
``scaled_dot_product_attention`` on the CPU), streams the parameters rlsim counts for the model, and the comparison
puts beside each measurement the GPU term rlsim's engine kernel uses."""

import json

import pytest

from tests.conftest import load_script

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def gr():
    return load_script("gpu_roofline")


def _reference_decode(stack, x, caches):
    """The same layers with attention through torch's SDPA (keys and values repeated per query group)."""
    f = torch.nn.functional
    s = stack.s
    q_heads, kv, d = s["num_attention_heads"], s["num_key_value_heads"], s["head_dim"]
    b = x.shape[0]
    for i, p in enumerate(stack.layers):
        q = (stack._rms(x, p["n1"]) @ p["qkv"])[:, : q_heads * d].reshape(b, q_heads, 1, d)
        k, v = (c.repeat_interleave(q_heads // kv, dim=1) for c in caches[i])
        o = f.scaled_dot_product_attention(q, k, v).reshape(b, q_heads * d)
        x = x + o @ p["o"]
        gate, up = (stack._rms(x, p["n2"]) @ p["gu"]).chunk(2, dim=-1)
        x = x + (f.silu(gate) * up) @ p["down"]
    return stack._rms(x, stack.norm) @ stack.head


def _caches(s: dict, b: int, ctx: int, gen) -> list:
    """A random (K, V) pair per layer of (b, kv heads, ctx, head dim), in float64."""
    shape = (b, s["num_key_value_heads"], ctx, s["head_dim"])
    return [tuple(torch.randn(shape, generator=gen, dtype=torch.float64) for _ in range(2))
            for _ in range(s["num_hidden_layers"])]  # fmt: skip


def test_decode_attention_is_grouped_query_attention(gr):
    s = gr.shape("tiny")
    stack = gr.Stack(torch, s, "cpu", torch.float64)
    gen = torch.Generator().manual_seed(1)
    b, ctx = 3, 11
    x = torch.randn(b, s["hidden_size"], generator=gen, dtype=torch.float64)
    caches = _caches(s, b, ctx, gen)
    got, ref = stack.decode(x, caches), _reference_decode(stack, x, caches)
    assert torch.linalg.norm(got - ref) / torch.linalg.norm(ref) < 1e-12
    # without caches the step skips attention: a different function (the weights' share alone)
    assert torch.linalg.norm(stack.decode(x, None) - ref) / torch.linalg.norm(ref) > 1e-3


def test_a_mixed_step_is_its_decode_and_its_prefill(gr):
    """The decode rows of a mixed step are the decode step's, its prefill rows the prefill's: the projections run
    over all rows at once and each part attends on its own."""
    s = gr.shape("tiny")
    stack = gr.Stack(torch, s, "cpu", torch.float64)
    gen = torch.Generator().manual_seed(3)
    b, ctx, chunk = 2, 5, 6
    dec = torch.randn(b, s["hidden_size"], generator=gen, dtype=torch.float64)
    pre = torch.randn(chunk, s["hidden_size"], generator=gen, dtype=torch.float64)
    caches = _caches(s, b, ctx, gen)
    mixed = stack.step(torch.cat([dec, pre]), caches, prefill=chunk)
    assert torch.allclose(mixed[:b], stack.decode(dec, caches), rtol=1e-12, atol=1e-12)
    assert torch.allclose(mixed[b:], stack.forward(pre), rtol=1e-12, atol=1e-12)


def test_prefill_is_causal(gr):
    """The forward pass's last-token row does not depend on later tokens: changing token 5 of 8 changes rows 5-7
    and leaves rows 0-4."""
    s = gr.shape("tiny")
    stack = gr.Stack(torch, s, "cpu", torch.float64)
    x = torch.randn(8, s["hidden_size"], dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    y = x.clone()
    y[5] += 1.0
    a, b = stack.forward(x), stack.forward(y)
    assert torch.equal(a[:5], b[:5])
    assert not torch.allclose(a[5:], b[5:])


def test_the_stack_holds_the_models_parameters(gr):
    """The projections, norms and LM head built here plus the embedding table are rlsim's parameter count for the
    model (Qwen3's per-head q/k norms, 256 parameters a layer, are the difference)."""
    import rlsim

    for name in gr.MODELS:
        c = gr.counts(gr.shape(name))
        built = c["layers_params"] + c["head_params"] + c["embedding_params"]
        spec = rlsim.load_scenario(gr.ROOT / "scenarios" / "dense8b_h100_colocated.yaml", {"model": name}).model
        assert built == pytest.approx(spec.num_params, rel=2e-3), name


def data_seconds(rows: list[dict], key: tuple) -> float:
    return next(r["seconds"] for r in rows if (r["phase"], r.get("batch"), r.get("context")) == key)


def test_compare_prices_each_row_as_the_roofline_does(gr, tmp_path, capsys):
    s = gr.shape("Qwen3-8B")
    rows = [
        {"phase": "decode", "batch": b, "context": ctx, "attention": ctx > 0, "seconds": 0.01, "spread": 1.1,
         "repeats": 9}
        for b in (1, 512) for ctx in (0, 1024)
    ] + [
        {"phase": "prefill", "tokens": 2048, "seconds": 0.05, "spread": 1.0, "repeats": 9},
        {"phase": "mixed", "batch": 32, "context": 1024, "tokens": 2048, "seconds": 0.05, "spread": 1.0,
         "repeats": 9},
        {"phase": "train", "tokens": 8192, "sequence": 4096, "seconds": 0.5, "spread": 1.0, "repeats": 3},
    ]  # fmt: skip
    data = {"device": "test", "torch": "x", "date": "x", "ceilings": {}, "errors": [],
            "models": {"Qwen3-8B": {"shape": s, "counts": gr.counts(s), "rows": rows}}}  # fmt: skip
    out = {(r["phase"], r.get("batch"), r.get("context")): r for r in gr.predictions(data, "H200")}
    # the roofline written out from the catalog's H200 and rlsim's default efficiencies (docs/reference.md; no engine
    # behaviour named, so no CPU overhead enters a GPU term): bytes over 0.7 x 0.87 x 4.8 TB/s, decode FLOPs over
    # 0.5 x 989.4 TFLOP/s, prefill FLOPs over 0.6 x 989.4
    import rlsim

    model = rlsim.load_scenario(gr.ROOT / "scenarios" / "dense8b_h100_colocated.yaml", {"model": "Qwen3-8B"}).model
    n, weights, kv = model.num_params, 2.0 * model.num_params, 2 * 36 * 8 * 128 * 2
    attn = 4.0 * 36 * 32 * 128  # FLOPs of one query token against one cached token
    bw, f_dec, f_pre = 0.7 * 0.87 * 4.8e12, 0.5 * 989.4e12, 0.6 * 989.4e12
    expected = {
        ("decode", 1, 0): weights / bw,
        ("decode", 1, 1024): (weights + 1024 * kv) / bw,
        ("decode", 512, 0): 2 * n * 512 / f_dec,
        ("decode", 512, 1024): (weights + 512 * 1024 * kv) / bw,
        ("prefill", None, None): (2 * n * 2048 + 0.5 * attn * 2048**2) / f_pre,
        ("mixed", 32, 1024): (2 * n * 32 + attn * 32 * 1024) / f_dec + (2 * n * 2048 + 0.5 * attn * 2048**2) / f_pre,
    }
    for key, want in expected.items():
        assert out[key]["rlsim_s"] == pytest.approx(want, rel=1e-9), key
        assert out[key]["ratio"] == pytest.approx(want / data_seconds(rows, key))
    assert [out[("decode", 1, 0)]["rlsim_bound"], out[("decode", 512, 0)]["rlsim_bound"]] == ["memory", "compute"]
    assert out[("mixed", 32, 1024)]["rlsim_bound"] == "compute"
    # the efficiency a measurement implies: the one that would have made rlsim's memory line equal it
    assert out[("decode", 1, 0)]["implied_memory_efficiency"] == pytest.approx(weights / 0.01 / 4.8e12, rel=1e-9)
    assert out[("train", None, None)]["implied_compute_efficiency"] == pytest.approx(
        3 * (2 * n * 8192 + 0.5 * attn * 4096 * 8192) / 0.5 / 989.4e12, rel=1e-9
    )
    path = tmp_path / "gpu_roofline.json"
    path.write_text(json.dumps(data))
    assert gr.main(["compare", str(path), "--markdown"]) == 0
    table = capsys.readouterr().out
    assert table.count("| Qwen3-8B | decode |") == 4


def test_a_misspelt_model_fails_before_any_device_work(gr, tmp_path):
    with pytest.raises(SystemExit, match="no config for model 'Qwen3-8b'.*known: .*Qwen3-8B"):
        gr.main(["measure", "--device", "cpu", "--model", "Qwen3-8b", "-o", str(tmp_path)])
    with pytest.raises(SystemExit, match="no config for model 'Qwen2.5-3b'"):
        gr.main(["measure", "--device", "cpu", "--model", "none", "--step-model", "Qwen2.5-3b", "-o", str(tmp_path)])
    assert not (tmp_path / "gpu_roofline.json").exists()


def test_the_step_is_compared_with_rlsims_training_phase(gr):
    """A whole step against rlsim.trainer.training's FSDP phase on one GPU (no recompute, the optimizer on the GPU):
    the total is compute + optimizer + the step's fixed overhead; the optimizer row against its optimizer part."""
    from rlsim.trainer import training

    s = gr.shape("Qwen2.5-3B")
    rows = [
        {"phase": "train_step", "tokens": 16384, "sequence": 4096, "params": 1, "seconds": 1.0, "spread": 1.0,
         "repeats": 3},
        {"phase": "optimizer", "params": 1, "seconds": 0.02, "spread": 1.0, "repeats": 3},
    ]  # fmt: skip
    data = {"device": "t", "torch": "x", "date": "x", "ceilings": {}, "errors": [],
            "models": {"Qwen2.5-3B": {"shape": s, "counts": gr.counts(s), "rows": rows}}}  # fmt: skip
    step, opt = gr.predictions(data, "H200")
    assert step["rlsim_optimizer_s"] == pytest.approx(opt["rlsim_s"])
    assert step["rlsim_compute_s"] + step["rlsim_optimizer_s"] < step["rlsim_s"]
    # Adam's bytes per parameter over the H200's bandwidth: ~3.1B parameters
    assert opt["rlsim_s"] == pytest.approx(training.ADAM_BYTES_PER_PARAM * 3.09e9 / 4.8e12, rel=0.02)


def test_measure_on_the_cpu_writes_every_part(gr, tmp_path):
    assert gr.main(["measure", "--device", "cpu", "--tiny", "--repeats", "2", "-o", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "gpu_roofline.json").read_text())
    assert data["errors"] == [] and set(data["ceilings"]) == {"copy", "read", "matmul"}
    rows = data["models"]["tiny"]["rows"]
    assert {r["phase"] for r in rows} == {"decode", "mixed", "prefill", "train", "train_step", "optimizer"}
    # the whole step trains every projection and the head (the norms, held at one, not)
    c, s = gr.counts(gr.shape("tiny")), gr.shape("tiny")
    trained = c["layers_params"] - 2 * s["hidden_size"] * s["num_hidden_layers"] + c["head_params"] - s["hidden_size"]
    assert {r["params"] for r in rows if r["phase"] in ("train_step", "optimizer")} == {trained}
    assert all(r["seconds"] > 0 and r["repeats"] >= 2 for r in rows)
    # the tiny grid caps the cache at 32 tokens: batch 4 at context 16 (64) is left out
    assert {(r["batch"], r["context"]) for r in rows if r["phase"] == "decode"} == {
        (1, 0), (1, 8), (1, 16), (4, 0), (4, 8)
    }  # fmt: skip
    assert {(r["batch"], r["context"], r["tokens"]) for r in rows if r["phase"] == "mixed"} == {(2, 8, 4), (4, 8, 8)}


RESEARCH = load_script("gpu_roofline").ROOT / "research" / "gpu_roofline"
RECORDED = sorted(RESEARCH.glob("h200_run?.json"))  # the decode runs (h200_run5_step.json: the training step only)
assert RECORDED, f"no recorded H200 runs in {RESEARCH}"  # an empty parametrization would test nothing


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.stem)
def test_rlsims_h200_roofline_against_the_recorded_h200(gr, path):
    """The recorded H200 runs (docs/results/gpu_roofline.md): rlsim's default roofline for the H200 stays where it
    was measured against a CUDA-graph torch engine (attention as batched products): decode median ratio 0.92-0.93,
    every case 0.69-1.26, prefill of >= 2,048 tokens 0.90-0.97. A change to the H200's catalog
    figures or the default efficiencies that moves these shows here."""
    data = json.loads(path.read_text())
    assert data["device"] == "NVIDIA H200" and not data["errors"]
    rows = gr.predictions(data, "H200")
    decode = sorted(r["ratio"] for r in rows if r["phase"] == "decode" and r.get("attention_impl", "bmm") == "bmm")
    assert len(decode) >= 38
    assert 0.85 <= decode[len(decode) // 2] <= 1.0
    assert 0.6 <= decode[0] and decode[-1] <= 1.35
    long_prefill = [r["ratio"] for r in rows if r["phase"] == "prefill" and r["tokens"] >= 2048]
    assert long_prefill and all(0.85 <= x <= 1.05 for x in long_prefill)


def test_the_results_page_has_a_section_per_recorded_file(gr):
    """compare --write's page (docs/results/gpu_roofline.md): the header names the command, then per file its
    device and date, its ceilings, the ratios by phase and one row per case."""
    cmd = "python scripts/gpu_roofline.py compare h200_run2.json --write"
    lines = gr.page([str(RECORDED[1])], "H200", cmd, "2026-01-02", "A CPU, 2 cores")
    data = json.loads(RECORDED[1].read_text())
    assert lines[0] == "# rlsim's roofline against measured GPU steps (H200)"
    assert lines[2].startswith(f"Written by `{cmd}` on 2026-01-02 (A CPU, 2 cores")
    assert f"## h200_run2.json: NVIDIA H200, torch 2.11.0+cu130, measured {data['date']}" in lines
    assert any(line.startswith("| matmul |  | 7") for line in lines)
    cases = sum(len(m["rows"]) for m in data["models"].values())
    assert sum(1 for line in lines if line.startswith(("| Qwen", "| Llama"))) == cases
    assert any(line.startswith("| decode |  | 60 | 0.9") for line in lines)


def test_the_catalogs_h200_memory_is_the_measured_one(gr):
    """rlsim/catalog/gpus.yaml's H200 device_memory_bytes (what vLLM's gpu_memory_utilization multiplies) is
    the total CUDA reported on the recorded machines."""
    from rlsim import catalog

    measured = {json.loads(p.read_text())["memory_bytes"] for p in RESEARCH.glob("h200_run*.json")}
    assert len(measured) == 1
    assert float(catalog.gpu("H200")["device_memory_bytes"]) == pytest.approx(measured.pop(), rel=1e-3)


def _reference_varlen(q, k, v, cu_q, cu_k, max_q, max_k, *, window_size, enable_gqa=False, seqused_k=None,
                      block_table=None):  # fmt: skip
    """What flash varlen attention computes (bottom-right causal, or no mask), from paged or packed keys, on the
    CPU."""
    f = torch.nn.functional
    assert window_size in ((-1, 0), (-1, -1))
    assert enable_gqa or q.shape[1] == k.shape[-2], "grouped-query attention without enable_gqa"
    out = torch.empty_like(q)
    for i in range(len(cu_q) - 1):
        qs = q[cu_q[i] : cu_q[i + 1]]
        if block_table is not None:
            n = int(seqused_k[i])
            ks = k[block_table[i]].flatten(0, 1)[:n]
            vs = v[block_table[i]].flatten(0, 1)[:n]
        else:
            ks, vs = k[cu_k[i] : cu_k[i + 1]], v[cu_k[i] : cu_k[i + 1]]
        group = qs.shape[1] // ks.shape[1]
        ks, vs = (x.repeat_interleave(group, dim=1).transpose(0, 1) for x in (ks, vs))
        lq, lk = qs.shape[0], ks.shape[1]
        mask = torch.ones(lq, lk, dtype=torch.bool)
        if window_size == (-1, 0):
            mask = mask.tril(lk - lq)  # bottom-right aligned
        out[cu_q[i] : cu_q[i + 1]] = f.scaled_dot_product_attention(
            qs.transpose(0, 1), ks, vs, attn_mask=mask
        ).transpose(0, 1)
    return out


@pytest.mark.parametrize(
    "paged, params",
    [
        (True, {"enable_gqa", "window_size", "seqused_k", "block_table"}),
        (False, {"enable_gqa", "window_size"}),
        (False, {"window_size"}),  # torch 2.11's: no grouped-query attention, the query heads folded into rows
    ],
)
def test_the_flash_step_reads_each_sequences_cache(gr, paged, params):
    """The flash step's plumbing (query offsets, block table or packed key offsets, the views of the flat buffers),
    with a CPU reference standing in for the CUDA kernel: a decode step over caches written where the block table
    (or the packing) says computes what the batched-product step computes from the same caches."""
    s = gr.shape("tiny")
    stack = gr.Stack(torch, s, "cpu", torch.float64)
    b, ctx, kv, d = 3, 20, s["num_key_value_heads"], s["head_dim"]
    pages = 16
    group = 1 if "enable_gqa" in params else s["num_attention_heads"] // s["num_key_value_heads"]
    meta = gr.flash_meta(torch, b, ctx, 0, pages, "cpu", paged, group=group)
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(b, s["hidden_size"], generator=gen, dtype=torch.float64)
    caches, pools = [], []
    for _ in range(s["num_hidden_layers"]):
        k, v = (torch.randn(b, kv, ctx, d, generator=gen, dtype=torch.float64) for _ in range(2))
        caches.append((k, v))
        if paged:
            pool_k, pool_v = (torch.zeros(pages, gr.PAGE, kv, d, dtype=torch.float64) for _ in range(2))
            for i in range(b):
                flat_k = pool_k[meta["table"][i].long()].flatten(0, 1)
                flat_v = pool_v[meta["table"][i].long()].flatten(0, 1)
                flat_k[:ctx], flat_v[:ctx] = k[i].transpose(0, 1), v[i].transpose(0, 1)
                pool_k[meta["table"][i].long()] = flat_k.view(-1, gr.PAGE, kv, d)
                pool_v[meta["table"][i].long()] = flat_v.view(-1, gr.PAGE, kv, d)
            pools.append((pool_k, pool_v))
        else:
            pools.append((k.transpose(1, 2).reshape(b * ctx, kv, d), v.transpose(1, 2).reshape(b * ctx, kv, d)))
    api = (_reference_varlen, params)
    got, ref = stack.step_flash(x, pools, meta, api), stack.decode(x, caches)
    assert torch.linalg.norm(got - ref) / torch.linalg.norm(ref) < 1e-12


def test_flash_meta_deals_disjoint_pages(gr):
    meta = gr.flash_meta(torch, 5, 40, 24, 64, "cpu", paged=True)
    table, used = meta["table"], meta["used"].tolist()
    assert used == [40] * 5 + [24] and meta["cu_q"].tolist() == [0, 1, 2, 3, 4, 5, 29]
    assert (meta["max_q"], meta["max_k"]) == (24, 40)
    pages = [table[i, : -(-n // gr.PAGE)].tolist() for i, n in enumerate(used)]
    flat = [p for row in pages for p in row]
    assert len(flat) == len(set(flat)) == 5 * 3 + 2 and all(0 <= p < 64 for p in flat)
    with pytest.raises(ValueError, match="17 pages needed, 16 in the pool"):
        gr.flash_meta(torch, 5, 40, 24, 16, "cpu", paged=True)
    packed = gr.flash_meta(torch, 2, 40, 24, 0, "cpu", paged=False)
    assert packed["cu_k"].tolist() == [0, 40, 80, 104] and "table" not in packed
    assert gr.flash_api(torch, "cpu") is None


def test_a_refused_paged_kernel_falls_back_to_packed_keys(gr, monkeypatch):
    """The paged flash kernel refusing (a page size it does not take, say) is recorded and the packed kernel
    measures the flash cases instead; the batched-product cases are all there."""

    def kernel(*args, block_table=None, **kw):
        if block_table is not None:
            raise RuntimeError("paged KV needs a page size divisible by 256")
        return _reference_varlen(*args, block_table=None, **kw)

    monkeypatch.setattr(gr, "flash_api", lambda torch, device: (kernel, {"enable_gqa", "window_size", "block_table"}))

    stack = gr.Stack(torch, gr.shape("tiny"), "cpu", torch.float32)
    grid = {"batches": (1, 2), "contexts": (16,), "max_cached": 32, "mixed": ((2, 16, 8),)}
    rows = gr._decode_cases(torch, stack, "cpu", gr._timer(torch, "cpu"), grid, 2)
    failed = [r for r in rows if "error" in r]
    assert [(r["attention_impl"], r["batch"]) for r in failed] == [("flash-paged", 1)]
    assert "divisible by 256" in failed[0]["error"]
    impls = [(r["phase"], r["batch"], r.get("attention_impl")) for r in rows if "error" not in r]
    assert impls == [
        ("decode", 1, None), ("decode", 1, "bmm"), ("decode", 2, None), ("decode", 2, "bmm"), ("mixed", 2, "bmm"),
        ("decode", 1, "flash-packed"), ("decode", 2, "flash-packed"), ("mixed", 2, "flash-packed"),
    ]  # fmt: skip


def test_without_grouped_query_attention_the_mixed_flash_steps_are_refused(gr, monkeypatch):
    """torch 2.11's kernel (no enable_gqa, no block table): the decode cases run folded on packed keys; a mixed
    step, which would need the prompt's causal rows beside the folded ones, is recorded as refused."""
    monkeypatch.setattr(gr, "flash_api", lambda torch, device: (_reference_varlen, {"window_size"}))
    stack = gr.Stack(torch, gr.shape("tiny"), "cpu", torch.float32)
    grid = {"batches": (2,), "contexts": (16,), "max_cached": 32, "mixed": ((2, 16, 8),)}
    rows = gr._decode_cases(torch, stack, "cpu", gr._timer(torch, "cpu"), grid, 2)
    flash = [(r["phase"], r.get("error", "")[:40]) for r in rows if r.get("attention_impl") == "flash-packed"]
    assert flash == [("decode", ""), ("mixed", "ValueError: a mixed step needs a kernel ")]
