"""The compiled engine kernel (rlsim/engine/kernel.py): numba's just-in-time build has one version per entry point
whatever the callers pass, the ahead-of-time build (rlsim/engine/kernel_build.py) gives the same bits, and
RLSIM_KERNEL picks
one.

The golden outputs (tests/rlsim/test_golden.py) run under both kernels too.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import sys

import numpy as np
import pytest

from rlsim.engine import kernel_build
from rlsim.engine import replica as engine
from rlsim.engine.iteration import DecodeCoefficients
from rlsim.engine.replica import SchedulerRules, simulate_replica
from rlsim.errors import RlsimError
from tests.rlsim.test_engine_reference import numpy_case

RULES = (
    SchedulerRules(),
    SchedulerRules(block_size=16, chunked_prefill=True, max_num_batched_tokens=64, prefix_caching=True),
    SchedulerRules(block_size=4, chunked_prefill=True, max_num_batched_tokens=16),
    SchedulerRules(block_size=8, max_num_batched_tokens=40, prefix_caching=True),
)


def aot_kernel():
    """The ahead-of-time kernel built from this rlsim/engine/kernel.py, or None when it is not built (or loads) here."""
    return engine.aot_kernel()


def jit_kernel():
    return importlib.import_module("rlsim.engine.kernel")


def run_cases(seed: int, count: int) -> list:
    """``count`` seeded replica cases (tests/rlsim/test_engine_reference.py's generator, with prompt groups) under
    every rule set; tight caches, so most preempt. Results as plain tuples, compared bit for bit."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        prompt, response, m, cap, decode, prefill, _ = numpy_case(rng)
        rules = RULES[i % len(RULES)]
        if rules.chunked_prefill:
            m = min(m, rules.max_num_batched_tokens)
        groups = np.arange(prompt.size) // 3
        prompt = prompt[groups * 3]  # a group's requests share one prompt
        cap = max(cap, int((prompt + response).max()) + 2 * rules.block_size)
        res = simulate_replica(prompt, response, m, cap, decode, prefill, rules, groups)
        out.append(tuple(np.asarray(v).tobytes() for v in dataclasses.astuple(res)))
    return out


def test_the_jit_kernel_is_compiled_once_per_entry_point_whatever_the_inputs(monkeypatch):
    """Read-only, strided, int32 and float inputs all reach the kernel as writable C-contiguous int64 / float64:
    one signature each (numba would compile a second version of the kernel for a read-only array)."""
    jit = jit_kernel()
    monkeypatch.setattr(engine, "_KERNEL", jit)
    rng = np.random.default_rng(3)
    prompt, response, m, cap, decode, prefill, _ = numpy_case(rng)
    expected = simulate_replica(prompt, response, m, cap, decode, prefill, RULES[1], np.arange(prompt.size))
    frozen = [np.array(a) for a in (prompt, response, decode.mem_intercept_s, decode.overhead_s)]
    for a in frozen:
        a.flags.writeable = False
    ro_decode = dataclasses.replace(decode, mem_intercept_s=frozen[2], overhead_s=frozen[3])
    strided = np.repeat(np.asarray(prompt, dtype=np.int32), 2)[::2]
    variants = [
        (frozen[0], frozen[1], ro_decode, np.arange(prompt.size)),
        (strided, response.astype(np.float64), decode, np.arange(prompt.size, dtype=np.int32)),
    ]
    for p, r, d, g in variants:
        got = simulate_replica(p, r, m, cap, d, prefill, RULES[1], g)
        assert got.makespan_s == expected.makespan_s and np.array_equal(got.finish_s, expected.finish_s)
    assert [len(jit.run_replicas.signatures), len(jit.renumber_consecutive.signatures)] == [1, 1]


def test_the_jit_kernel_refuses_other_types_instead_of_compiling_them():
    jit = jit_kernel()
    prompt = np.ones(3, dtype=np.int64)
    prompt.flags.writeable = False
    out = np.zeros(3, dtype=np.int64)
    with pytest.raises(TypeError, match="No matching definition"):
        jit.renumber_consecutive(prompt, prompt, out)
    assert len(jit.renumber_consecutive.signatures) == 1


@pytest.mark.skipif(
    aot_kernel() is None, reason="no ahead-of-time kernel built here (python -m rlsim.engine.kernel_build)"
)
def test_the_ahead_of_time_kernel_gives_the_bits_of_the_jit_one(monkeypatch):
    monkeypatch.setattr(engine, "_KERNEL", aot_kernel())
    aot = run_cases(11, 240)
    monkeypatch.setattr(engine, "_KERNEL", jit_kernel())
    assert run_cases(11, 240) == aot


def test_rlsim_kernel_picks_the_kernel(monkeypatch):
    assert engine._load_kernel("jit") is jit_kernel()
    with pytest.raises(RlsimError, match="RLSIM_KERNEL='fast': must be auto, aot or jit"):
        engine._load_kernel("fast")
    if aot_kernel() is None:
        with pytest.raises(RlsimError, match="python -m rlsim.engine.kernel_build"):
            engine._load_kernel("aot")
        assert engine._load_kernel("auto") is jit_kernel()
    else:
        assert engine._load_kernel("aot") is aot_kernel() is engine._load_kernel("auto")
    monkeypatch.setattr(engine, "_KERNEL", None)
    monkeypatch.setenv("RLSIM_KERNEL", "jit")
    assert engine.kernel() is jit_kernel() and engine.kernel_kind() == "jit"


def test_a_kernel_built_from_other_source_is_not_the_one_loaded(tmp_path):
    edited = tmp_path / "kernel.py"
    edited.write_bytes(kernel_build.SOURCE.read_bytes() + b"\n# edited\n")
    assert kernel_build.module_name(edited) != kernel_build.module_name() == engine.aot_module_name()


@pytest.mark.slow
def test_kernel_build_writes_a_module_that_loads_without_numba(tmp_path):
    """``python -m rlsim.engine.kernel_build``'s build, into a scratch file: it loads in a process that never imports
    numba, and agrees with the just-in-time kernel."""
    import subprocess

    out = tmp_path / f"{kernel_build.module_name()}.so"
    assert kernel_build.main(["--output", str(out)]) == 0
    code = (
        "import importlib.util, sys, numpy as np\n"
        f"spec = importlib.util.spec_from_file_location({kernel_build.module_name()!r}, {str(out)!r})\n"
        "k = importlib.util.module_from_spec(spec); spec.loader.exec_module(k)\n"
        "g = np.array([0, 0, 1, 1, 2], dtype=np.int64); p = np.array([5, 5, 7, 7, 2], dtype=np.int64)\n"
        "o = np.empty(5, dtype=np.int64)\n"
        "print(k.renumber_consecutive(g, p, o), o.tolist(), 'numba' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["3", "[0,", "0,", "1,", "1,", "2]", "False"]
    spec = importlib.util.spec_from_file_location(kernel_build.module_name(), out)
    built = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(built)
    decode = DecodeCoefficients(np.zeros(3), 1e-6, np.zeros(3), 1e-7, np.full(3, 1e-3))
    offsets, n_groups = np.array([0, 2], dtype=np.int64), np.array([1], dtype=np.int64)  # one replica, one group
    args = (np.array([3, 3], dtype=np.int64), np.array([4, 9], dtype=np.int64), np.zeros(2, dtype=np.int64), offsets)
    args = (*args, n_groups, 2)
    stats = [np.zeros(11), np.zeros(11)]
    finish = [np.zeros(2), np.zeros(2)]
    for k, s, f in zip((built, jit_kernel()), stats, finish):
        rest = (
            100, 1, False, 1 << 62, 0, False, False, decode.mem_intercept_s, 1e-6, decode.compute_intercept_s, 1e-7,
            decode.overhead_s, decode.floor, 1e-3, 1e-5, 1e-9, f, s,
        )  # fmt: skip
        assert k.run_replicas(*args, *rest) == 0
    assert stats[0].tobytes() == stats[1].tobytes() and finish[0].tobytes() == finish[1].tobytes()


def test_indices_compile_as_they_are_only_within_unwrapped_indices():
    """Within the block a negative index is not wrapped (numba's bounds check, on here, then catches it); outside it
    numba's usual wraparound is back."""
    import numba
    from numba.np import arrayobj

    from rlsim.engine.kernel import unwrapped_indices

    def at(a, i):
        return a[i]

    wrapping = arrayobj.fix_integer_index
    with unwrapped_indices():
        assert arrayobj.fix_integer_index is not wrapping
        as_is = numba.njit(boundscheck=True)(at)
        assert as_is(np.arange(3), 1) == 1  # compiled here, within the block
    assert arrayobj.fix_integer_index is wrapping
    with pytest.raises(IndexError):
        as_is(np.arange(3), -1)
    assert numba.njit(boundscheck=True)(at)(np.arange(3), -1) == 2


@pytest.mark.slow
def test_the_kernel_never_indexes_out_of_its_arrays(tmp_path):
    """The kernel is compiled without the wraparound of negative indices (rlsim.engine.kernel.unwrapped_indices), so a
    negative index would read outside an array: here the just-in-time kernel, compiled with numba's bounds checks
    in a fresh process, runs the seeded cases of every rule set (most preempt; prompt groups) without an
    IndexError, and gives the same bits as the kernel without the checks."""
    import os
    import pickle
    import subprocess

    out = tmp_path / "cases.pkl"
    code = (
        "import pickle, sys\n"
        "from rlsim.engine import replica as engine\n"
        "from tests.rlsim.test_kernel import run_cases\n"
        "assert engine.kernel_kind() == 'jit'\n"
        f"pickle.dump(run_cases(5, 300), open({str(out)!r}, 'wb'))\n"
    )
    env = {**os.environ, "NUMBA_BOUNDSCHECK": "1", "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "RLSIM_KERNEL": "jit"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=engine_root())
    assert run.returncode == 0, run.stderr[-2000:]
    with out.open("rb") as f:
        assert pickle.load(f) == run_cases(5, 300)


def engine_root():
    from pathlib import Path

    return Path(engine.__file__).resolve().parents[2]


def _segment_by_crossing(a1, s1, a2, s2, n):
    """rlsim.engine.kernel._segment_s as it was before its shortcuts: always through the crossing."""
    from rlsim.engine.kernel import _linear_sum

    ls = _linear_sum.py_func
    if s1 == s2:
        return ls(max(a1, a2), s1, 0, n)
    cross = min(max((a2 - a1) / (s1 - s2), -1.0), float(n))
    if s1 > s2:
        i0 = min(int(np.ceil(cross)) if cross > 0 else 0, n)
        return ls(a2, s2, 0, i0) + ls(a1, s1, i0, n)
    i0 = min(int(np.floor(cross)) + 1 if cross >= 0 else 0, n)
    return ls(a1, s1, 0, i0) + ls(a2, s2, i0, n)


def test_the_segment_sums_shortcuts_give_the_bits_of_the_crossing():
    """_segment_s skips its division where one line is above the other from i = 0 with the steeper slope: the same
    bits as through the crossing, on lines that cross before, inside and after the segment, equal intercepts,
    nearly parallel slopes and quotients that would round to -0.0."""
    from rlsim.engine.kernel import _segment_s

    rng = np.random.default_rng(17)
    seg = _segment_s.py_func
    cases = [(1e-3, 2e-8, 1e-3, 1e-9, 40), (1e-3, 1e-9, 1e-3, 2e-8, 40), (5e-300, 1e-300, 1e-300, 1e300, 3)]
    cases += [(1e-300, 1e300, 5e-300, 1e-300, 3), (2.0, 1.0, 1.0, 1.0 + 2**-52, 7), (1.0, 0.0, 1.0 + 2**-52, 1e308, 1)]
    for _ in range(20000):
        a1, a2 = rng.uniform(0, 1e-2, 2) * rng.choice([1.0, 1e-6, 1e6])
        s1, s2 = rng.uniform(0, 1e-6, 2) * rng.choice([1.0, 1e-9, 1e3])
        if rng.random() < 0.2:
            a2 = a1
        if rng.random() < 0.1:
            s2 = np.nextafter(s1, 1.0)
        cases.append((float(a1), float(s1), float(a2), float(s2), int(rng.integers(0, 5000))))
    shortcut = 0
    for a1, s1, a2, s2, n in cases:
        got, want = seg(a1, s1, a2, s2, n), _segment_by_crossing(a1, s1, a2, s2, n)
        assert np.float64(got).tobytes() == np.float64(want).tobytes(), (a1, s1, a2, s2, n, got, want)
        shortcut += (s1 > s2 and a1 > a2) or (s1 < s2 and a2 - a1 >= s2 - s1)
    assert shortcut > 5000


def test_the_finish_calendar_keeps_every_decoder_under_its_iteration():
    """The calendar of finish iterations (rlsim/engine/kernel.py _cal_add, _cal_remove, _first_finish) against a dict:
    the next finish after each change and each iteration's finishers, over 20,000 random filings, preemptions and
    finishes with keys up to the longest response ahead, so that buckets wrap around R many times; and the
    de Bruijn lowest-bit lookup against numpy on every single-bit and random word."""
    import numba

    from rlsim.engine import kernel

    words = [np.int64(-(2**63))] + [np.int64(1 << i) for i in range(63)]
    words += [np.int64(w) for w in np.random.default_rng(3).integers(-(2**63), 2**63 - 1, 2000) if w != 0]
    lowest = numba.njit(lambda w: kernel._lowest_bit(w))
    for w in words:
        want = (int(w) & -int(w)).bit_length() - 1
        assert lowest(w) == want, (w, want)

    @numba.njit
    def drive(ops, head, bits, nxt, prv, out):
        # ops rows (kind, a, b): 0 file a under b; 1 remove a filed under b; 2 next finish from b with a decoders;
        # 3 take iteration b's bucket (its decoders into out, after a count)
        k = 0
        for r in range(ops.shape[0]):
            kind, a, b = ops[r, 0], ops[r, 1], ops[r, 2]
            if kind == 0:
                kernel._cal_add(head, bits, nxt, prv, a, b)
            elif kind == 1:
                kernel._cal_remove(head, bits, nxt, prv, a, b)
            elif kind == 2:
                out[k] = kernel._first_finish(head, bits, a, b)
                k += 1
            else:
                i = b & (head.shape[0] - 1)
                j = head[i]
                head[i] = -1
                bits[i >> 6] &= ~(1 << (i & 63))
                start = k
                k += 1
                while j >= 0:
                    out[k] = j
                    k += 1
                    j = nxt[j]
                out[start] = k - start - 1
        return k

    rng = np.random.default_rng(11)
    longest, n = 300, 64
    r = 512  # the calendar's R for responses of up to 300 tokens
    live: dict[int, int] = {}
    ops, want = [], []
    it = 0
    for _ in range(20000):
        free = [j for j in range(n) if j not in live]
        roll = rng.random()
        if free and (roll < 0.45 or not live):
            j = int(rng.choice(free))
            live[j] = it + int(rng.integers(1, longest + 1))
            ops.append((0, j, live[j]))
        elif roll < 0.7:
            j = int(rng.choice(list(live)))
            ops.append((1, j, live.pop(j)))
        else:
            it = min(live.values())
            done = sorted(j for j, key in live.items() if key == it)
            for j in done:
                del live[j]
            ops.append((3, 0, it))
            want.append(("due", done))
        ops.append((2, len(live), it))
        want.append(("first", min(live.values()) if live else kernel.NONE))
    head, bits = np.full(r, -1, dtype=np.int32), np.zeros(r // 64, dtype=np.int64)  # as kernel._workspace makes them
    nxt, prv = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    out = np.empty(len(ops) * (n + 1), dtype=np.int64)
    size = drive(np.array(ops, dtype=np.int64), head, bits, nxt, prv, out)
    got, k = [], 0
    for kind, _ in want:
        if kind == "first":
            got.append(("first", int(out[k])))
            k += 1
        else:
            m = int(out[k])
            got.append(("due", sorted(out[k + 1 : k + 1 + m].tolist())))
            k += 1 + m
    assert k == size and got == want
    assert sum(1 for kind, v in want if kind == "due" and v) > 3000 and it > 20 * r  # many finishes, many wraps
    assert not live or bits.any()


def test_the_kernel_says_which_numba_compiled_it(monkeypatch):
    """kernel.numba_version(): the running numba for the JIT kernel; for the built one the build environment's
    (pyproject.toml asks for numba >= 0.60 there); engine.kernel_description() spells it out."""
    import re

    import numba

    from rlsim.engine import kernel

    assert kernel._version_number("0.68.1") == 6801 and kernel._version_number("1.2.0rc1+local") == 10200
    assert jit_kernel().numba_version() == kernel._version_number(numba.__version__)
    monkeypatch.setattr(engine, "_KERNEL", jit_kernel())
    v = numba.__version__.split("+")[0].split(".")
    assert engine.kernel_description() == f"jit, numba {int(v[0])}.{int(v[1])}.{int(v[2]) if v[2].isdigit() else 0}"
    if aot_kernel() is not None:
        monkeypatch.setattr(engine, "_KERNEL", aot_kernel())
        assert aot_kernel().numba_version() >= 6000
        assert re.fullmatch(r"aot, numba \d+\.\d+\.\d+", engine.kernel_description())


def test_the_kernels_stats_slots_are_replica_results_fields_in_order():
    """rlsim.engine.kernel names each slot of a replica's row of stats (STAT_*, N_STATS; it imports numba and numpy
    only, so it cannot import rlsim.engine.replica); rlsim.engine.replica reads the row by ReplicaResult's fields.
    The two orders must be one."""
    from rlsim.engine import kernel as source

    slots = {name: getattr(source, name) for name in dir(source) if name.startswith("STAT_")}
    assert sorted(slots.values()) == list(range(source.N_STATS)) and source.N_STATS == engine.N_STATS
    for name, i in slots.items():
        field = engine.STATS[i]
        assert name.removeprefix("STAT_").lower() in (field.upper().lower(), field.removeprefix("num_")), (name, field)
