"""The preset machines as plain tables: {field: (value, confidence, note)}.

Kept apart from `specs` so the numbers and their provenance read like a datasheet. Confidence
tags follow research/simulator.md: H = vendor document or measured, M = press or forum quoting
the vendor, L = our derivation, "assumed" = not published; the note says what was assumed.
Per-unit rates are per clock at `clock_hz`.
"""

from __future__ import annotations

_GUIDE = "CUDA Programming Guide throughput table, CC 9.0"
_MEASURED = "measured on an H200 with simulator/calibrate.py (2026-11)"
_CURVE = "python -m simulator.calibrate --fit-curve simulator/data/h200_memory_curve.json"
_ATOMIC_FIELDS = ("atomic_ops_per_clk", "atomic_line_requests_per_clk", "atomic_relaxed_ops_per_clk",
                  "atomic_relaxed_line_requests_per_clk", "atomic_line_cycles", "atomic_round_cycles")
_ATOMICS = ("benchmarks/gpu/atomic_patterns.py, 2026-12; python -m simulator.calibrate --fit-atomics "
            "simulator/data/h200_atomic_patterns.json")
_L2_REUSE = "ncu DRAM bytes, benchmarks/gpu/l2_reuse.py -> simulator/data/h200_l2_reuse.json (2026-12)"
_FITTED = "fitted by simulator/fit.py on the calibration groups of simulator/data/h200_sweep.csv (2026-12)"

# SIMT pipe widths (lanes per clock per unit) of a Hopper SM; reused, as an assumption, for MUSA.
_HOPPER_PIPES = {"fma": 128.0, "alu": 64.0, "imad": 64.0, "special": 16.0, "conversion": 16.0, "branch": 64.0,
                 "shuffle": 32.0, "memory": 32.0, "fp64": 64.0}

H200 = {
    "name": ("h200", "H", "NVIDIA H200 SXM (GH100)"),
    "vendor": ("nvidia", "H", ""),
    "arch": ("sm_90", "H", "compute capability 9.0"),
    "units": (132, "H", "measured multiProcessorCount"),
    "clock_hz": (1.98e9, "H", "measured clocks.max.sm"),
    "warp_size": (32, "H", "CUDA"),
    "max_threads_per_program": (1024, "H", "measured maxThreadsPerBlock"),
    "max_warps_per_unit": (64, "H", "measured 2,048 threads per SM"),
    "max_programs_per_unit": (32, "H", "measured max blocks per SM"),
    "issue_schedulers": (4, "H", "4 SM sub-partitions, one scheduler each (whitepaper)"),
    "registers_per_unit": (65536, "H", "measured"),
    "registers_per_program": (65536, "H", "measured regsPerBlock"),
    "max_registers_per_thread": (255, "H", "CUDA Best Practices §11.1.1"),
    "register_alloc_unit": (256, "H", "registers allocated per warp in units of 256 (BPG §11.1.1)"),
    "shared_bytes_per_unit": (233472, "H", "measured 228 KiB"),
    "shared_bytes_per_program_max": (232448, "H", "measured 227 KiB opt-in"),
    "local_cache_bytes": (262144, "H", "256 KB combined L1 data cache / shared memory per SM (Hopper whitepaper)"),
    "shared_reserved_per_program": (1024, "H", "measured 1 KiB reserved per block"),
    "shared_banks": (32, "H", "BPG §9.2.3.1"),
    "shared_bank_bytes": (4, "H", "BPG §9.2.3.1"),
    "shared_wavefronts_per_clk": (1.0, "H", "32 banks x 4 B a clock (BPG §9.2.3.1; the forum's 128 B/clk return "
                                  "path); the modeled exchanges of paged decode hold 0.4-0.9 of the wavefronts Nsight "
                                  f"counts (h200_ncu.jsonl), and {_FITTED} agrees (1.0 of 1, 2, 4)"),
    "l1_lines_per_clk": (1.8, "H", "loads whose 32 lanes read one element each of 32 rows, the words spread over "
                         "the banks, streaming along the rows (each line read by the next loads, then left): 1.74-1.81 "
                         "lines a clock per SM for 4-byte elements, 2.35-2.43 for 2-byte ones, whose lines are left "
                         "half as often; the same lines all in the L1 go at 2.7-4.0 (benchmarks/gpu/l1_banks.py, "
                         "simulator/data/h200_l1_banks.json)"),
    "l1_wavefronts_per_clk": (1.0, "H", "the same loads with every word in one bank, a wavefront a line: 1.00 lines a "
                              "clock per SM (h200_l1_banks.json), as for 8-32 lines of 1-4 sectors whose words share "
                              "banks (benchmarks/gpu/l1_lines.py, h200_l1_lines.json: 0.97-1.00)"),
    "split_pieces_per_clk": (0.7, "H", "pieces of sectors from stores of one element an instruction past an "
                             "unaligned bound (benchmarks/gpu/streams.py -> simulator/data/h200_streams.csv, 99 "
                             "configs that split): the rate at which the model's median error over them is zero; "
                             "fp32 runs reach 0.8, bf16 ones of 8 or more elements a thread 0.45"),
    "transaction_lanes": (32, "H", "a warp instruction is one request"),
    "sector_bytes": (32, "H", "BPG §9.2.1; Nsight Compute memory model"),
    "l2_bytes": (62914560, "H", "measured 60 MiB"),
    "l2_reuse_near": (38 / 60, "H", "a buffer re-read in the same order, every SM busy: the second pass hits 98 % at "
                      "36 MiB, 93 % at 40, 37 % at 48, 2 % at 56 of the 60 MiB L2 (" + _L2_REUSE + ")"),
    "l2_reuse_far": (55 / 60, "H", "see l2_reuse_near; nothing hits beyond 56 MiB (" + _L2_REUSE + ")"),
    "l2_dirty": (21.5 / 60, "H", "a copy of F bytes writes F - 21.5 MiB to DRAM during the launch for any F >= 32 MiB; "
                 "the rest is written back after it (" + _L2_REUSE + ")"),
    "l2_line_bytes": (128, "H", "Nsight Compute: 128-B lines of four 32-B sectors"),
    "l2_ways": (16, "assumed", "associativity not published; 16-way with hashed set index"),
    "l2_bytes_per_s": (13.3e12, "H", "async copies of L2-resident dot operand tiles that 2-4 programs read at once, "
                       "as a grouped matmul's programs share theirs (10.7 TB/s when each reads its own, 15.2 when "
                       "8-16 share; plain .cg re-reads 10.0): benchmarks/gpu/l2_bandwidth.py -> simulator/data/"
                       "h200_l2_bandwidth.json (2026-12), simulator.calibrate.l2_peaks; of the three peaks "
                       "simulator/fit.py picks this one on the calibration groups"),
    "l2_partial_writes_per_s": (60e9, "H", "stores of 4-, 8- and 16-byte runs, each part of a 32-B sector: 36-71 G "
                                "runs/s (median 60), where whole sectors go at the DRAM's 85 G/s "
                                "(benchmarks/gpu/dram_runs.py, simulator/data/h200_dram_runs.json: "
                                "sub_sector_write_runs)"),
    "dram_bytes_per_s": (4.8e12, "H", "datasheet; measured bus 6,016 bit x 3,201 MHz DDR = 4.82 TB/s"),
    "dram_efficiency": (0.885, "H", "1-4 GiB copies: 4,248-4,272 GB/s of 4.8 TB/s; " + _MEASURED),
    "dram_atom_bytes": (64, "L", "strided-copy curve fits 64-B DRAM fetches (research §2)"),
    "dram_run_efficiency": (((32, 0.78, 0.68), (64, 0.94, 0.71)), "H",
                            "fp32 tiles of 128 runs 16 KB apart, runs 32-1,024 B, launched so the programs running "
                            "together read neighbouring or far-apart runs: bandwidth over that of 128-1,024-B runs "
                            "(benchmarks/gpu/dram_runs.py, simulator/data/h200_dram_runs.json)"),
    "dram_round_cycles": (990.0, "H", "fit of achieved bandwidth against bytes in flight per SM, 105 points (median "
                          "error 3.6 %; " + _CURVE + "); a pointer chase over 2 GiB takes 681 cycles per load"),
    "l2_round_cycles": (673.0, "H", "the same fit over L2-resident re-reads (error 4.5 %); a pointer chase that hits "
                        "the L2: 295 cycles"),
    "l2_load_bytes_per_s": (6.6e12, "H", "the same fit's L2 bandwidth for loads through the L1 (" + _CURVE + ")"),
    "dram_queue_exponent": (2.5, "H", "the same fit (" + _CURVE + ")"),
    "l2_queue_exponent": (2.0, "H", "the same fit (" + _CURVE + ")"),
    "tensor_flops_per_clk": ({"fp16": 4096 * 1830 / 1980, "bf16": 4096 * 1830 / 1980,
                              "tf32": 2048 * 1830 / 1980, "fp8": 8192 * 1830 / 1980,
                              "int8": 8192 * 1830 / 1980, "fp64": 256.0},
                             "H", "whitepaper dense rates; tensor peaks are quoted at 1,830 MHz, so the "
                             "per-clock rate at 1,980 MHz is scaled by 1830/1980"),
    "tensor_efficiency": (0.8, "L", f"{_FITTED}; a bf16 8192^3 torch GEMM reaches 70-80 % of the peak (693-790 "
                          "TFLOP/s), and under tensor load the SM clock falls to 1.6-1.8 GHz (ncu, "
                          "simulator/data/h200_ncu.jsonl)"),
    "tensor_subcores": (4, "H", "4 tensor cores per SM; Triton's min(num_warps, 4) rule"),
    "fp32_flops_per_clk": (256.0, "H", "128 FP32 lanes x FMA"),
    "simt_lanes_per_clk": (dict(_HOPPER_PIPES), "M", f"{_GUIDE}; branch lanes assumed 64; memory = "
                           "32 LD/ST units"),
    "atomic_ops_per_clk": (188.7, "H", "fenced (Triton's default acq_rel: a barrier before each) fp32 adds spread "
                           "over 4,096-131,072 L2-resident lines, 1-32 lines a warp instruction: least squares of "
                           "time = ops / ops rate + line requests / line rate (" + _ATOMICS + ")"),
    "atomic_line_requests_per_clk": (40.5, "H", "the same fit (" + _ATOMICS + ")"),
    "atomic_relaxed_ops_per_clk": (426.6, "H", "the same fit over relaxed adds (" + _ATOMICS + ")"),
    "atomic_relaxed_line_requests_per_clk": (54.6, "H", "the same fit over relaxed adds (" + _ATOMICS + ")"),
    "atomic_line_cycles": (9.9, "H", "histograms of 32-4,096 bins and adds over 128 lines: median time per request "
                           "to the hottest line where that bounds the launch (" + _ATOMICS + ")"),
    "atomic_round_cycles": (1467.8, "H", "fenced adds from 1-warp programs (32 resident a unit), 8 one after "
                            "another: time per add per warp (" + _ATOMICS + ")"),
    "atomic_vector_bytes": (16, "H", "sm_90 adds four fp32 a lane (PTX red/atom .v4.f32); Triton's machine code for "
                            "the H200 issues ATOMG.E.ADD.F32x4 where the pointer is 16-B aligned"),
    "atomic_serial_cycles": (3.5, "H", "4 M fp32 atomic_add to one address: 3.48 cycles each; " + _MEASURED),
    "barrier_cycles": (20.0, "H", "back-to-back barriers of 4 warps: 20.3 cycles; " + _MEASURED),
    "launch_overhead_s": (4.5e-6, "M", "empty kernel 3.3-3.8 us with do_bench (measured); copy sizes imply "
                          "4-5 us fixed cost with ramp-up (research §2)"),
    "program_start_cycles": (157.0, "H", "benchmarks/gpu/dispatch_rate.py: launches of 65,536-2,097,152 programs of "
                             "1-16 warps that do nothing start one program every 0.601 ns GPU-wide (x 132 units x "
                             "1.98 GHz = 157 cycles a unit), 32-warp ones every 0.68-0.98 ns; the sweeps' launches of "
                             "131,072+ short programs sit on that floor (simulator/data/h200_dispatch_rate.json)"),
    "mma_async_min_m": (64, "H", "wgmma is m64nNk16 per warpgroup (PTX ISA); Triton uses it for M >= 64 and "
                        "num_warps % 4 == 0"),
    "mma_async_warps": (4, "H", "a warpgroup is 4 consecutive warps (PTX ISA)"),
    "mma_sync_fraction": (0.8, "L", f"mma.sync rate relative to wgmma; {_FITTED}"),
    "mma_kmajor_types": (("tf32", "fp8", "int8"), "H", "PTX ISA wgmma: MN-major (transposed) shared-memory operands "
                         "only for 16-bit types; Triton 3.6 still issues wgmma for MN-major TF32 (TTGIR, "
                         "h200_compile_facts.jsonl) with twice the registers"),
    "mma_transpose_cycles": (1.0, "L", f"{_FITTED}: matmul_fp32 with B row-major runs at about one B element "
                             "per clock per SM whatever BLOCK_M (B stored [N, K]: 3-3.5x faster)"),
    "warp_issue_ipc": (0.7, "L", f"dependent-instruction issue of one warp; {_FITTED}"),
    "spill_traffic": (8.0, "L", f"local-memory round trips per spilled register and loop iteration; {_FITTED}"),
    "exchange_cycles": (150.0, "L", f"each result a warp passes in a cross-warp exchange, on a program's critical "
                                    f"path beyond its wavefronts; {_FITTED}"),
    "unroll_load_instructions": (2.0, "H", "Triton's machine code for the stored configs with one loop it does not "
                                 "pipeline: counting each load instruction of the body twice with its other warp "
                                 "instructions (those the model counts per element) places the unrolling threshold "
                                 "best (723 of 772 agree, 721 counting no loads; 868 of 953 with the machine code "
                                 "read since, 864 counting none; once ties): one-element loads past an unaligned "
                                 "bound (column sums over 5,000 and 7,000 columns) leave the loop rolled "
                                 "(simulator/data/h200_sass_loops.jsonl)"),
    "unroll_instructions": (44.0, "H", "the same machine code: a loop whose trip count is known only at run time is "
                            "unrolled 4 times or not at all, 4 times where its body (unroll_load_instructions) has at "
                            "most about 44 warp instructions and neither writes memory nor waits at a barrier"),
    "unroll_copies": (4.0, "H", "the same machine code: 4 copies of a small runtime loop body, never 2 or 8"),
    "unroll_full_instructions": (300.0, "H", "LLVM's default full-unroll threshold (LoopUnrollPass.cpp); Triton's "
                                 "machine code unrolls each constant-trip loop of the stored sweeps fully exactly "
                                 "where trips x body instructions stay within it (holdout6's MoE combine: 32 of 32)"),
    "serialized_load_waits": (2.0, "H", "Triton's machine code for the stored configs with a loop it does not "
                              "pipeline: where the register estimate passes the compiler's target (simulator."
                              "occupancy.register_target) the main loop's body waits a median 2 times for its loads "
                              "(722 of 929 more than once), below it once (316 of 539; simulator/data/"
                              "h200_sass_loops.jsonl). On the calibration groups (simulator/fit.py) 2 and 3 rank and "
                              "pick alike, 3 with less time error, 1 picks worse (p90 30 %)"),
    "serialized_gather_waits": ({1: 14.0, 2: 8.0, 4: 6.0}, "H", "the same machine code, for the main loops that "
                                "gather (their loads' addresses come from their own loads: the paged decodes' page "
                                "table, the MoE combines' expert rows; 194 configs past the register target): a body "
                                "waits a median 14 times in 1-warp programs (38 configs), 8 in 2-warp ones (68), 6 "
                                "from 4 warps up (88); the loops that do not gather, a median 2 (869)"),
    "alpha": (0.1, "L", f"overlap blend; {_FITTED}"),
}

# what simulator/fit.py fitted on the H200, and how its compiler unrolls loops, taken as an assumption by machines
# nobody has measured
_H200_FITTED = {name: (H200[name][0], "assumed", "H200's fitted value")
                for name in ("mma_sync_fraction", "mma_transpose_cycles", "warp_issue_ipc", "spill_traffic",
                             "exchange_cycles", "alpha")}
_H200_FITTED.update({name: (H200[name][0], "assumed", "the H200 backend's unrolling, taken for MUSA's LLVM-based "
                            "compiler")
                     for name in ("unroll_load_instructions", "unroll_instructions", "unroll_copies",
                                  "unroll_full_instructions", "serialized_load_waits", "serialized_gather_waits")})



def _round_trips(clock_hz: float) -> dict:
    """The H200's measured round trips, as times, and its queueing exponents, assumed for a machine at clock_hz."""
    table = {name: (H200[name][0] * clock_hz / H200["clock_hz"][0], "assumed", "the H200's round trip in ns")
             for name in ("dram_round_cycles", "l2_round_cycles")}
    table.update({name: (H200[name][0], "assumed", "the H200's value")
                  for name in ("dram_queue_exponent", "l2_queue_exponent")})
    return table


_L2_POLICY = {name: (H200[name][0], "assumed", "the H200's share of its L2")
              for name in ("l2_reuse_near", "l2_reuse_far", "l2_dirty")}


_S5000_ASSUMED_PIPES = "not published; Hopper SM pipe widths assumed"

MTT_S5000 = {
    "name": ("mtt-s5000", "H", "Moore Threads MTT S5000 (Pinghu, MUSA arch 3.1)"),
    "vendor": ("moore-threads", "H", ""),
    "arch": ("mp_31", "H", "musaInfo compute capability 3.1"),
    "units": (56, "H", "musaInfo multiProcessorCount"),
    "clock_hz": (1.5e9, "H", "musaInfo clockRate"),
    "warp_size": (32, "H", "musaInfo warpSize"),
    "max_threads_per_program": (1024, "H", "musaInfo maxThreadsPerBlock"),
    "max_warps_per_unit": (96, "H", "musaInfo 3,072 threads per MP"),
    "max_programs_per_unit": (32, "assumed", "not published; NVIDIA's 32 blocks per SM"),
    "issue_schedulers": (4, "L", "4-warp 'warp squads' for MMA suggest 4 sub-cores"),
    "registers_per_unit": (131072, "assumed", "musaInfo regsPerBlock (H); per MP assumed equal"),
    "registers_per_program": (131072, "H", "musaInfo regsPerBlock"),
    "max_registers_per_thread": (255, "assumed", "not published; NVIDIA's limit"),
    "register_alloc_unit": (256, "assumed", "not published; NVIDIA's 256 per warp"),
    "shared_bytes_per_unit": (196608, "H", "musaInfo sharedMemPerMultiprocessor"),
    "shared_bytes_per_program_max": (196608, "H", "musaInfo sharedMemPerBlock; FlagTree static limit"),
    "local_cache_bytes": (262144, "assumed", "not published; the H200's 256 KB L1 + shared per SM"),
    "shared_reserved_per_program": (0, "L", "per-block limit equals the per-MP size, so none reserved"),
    "shared_banks": (32, "assumed", "bank geometry not published; 32 x 4 B default (research §3.2)"),
    "shared_bank_bytes": (4, "assumed", "bank geometry not published; 32 x 4 B default"),
    "shared_wavefronts_per_clk": (1.0, "assumed", "one 128-B wavefront per clock, as on NVIDIA"),
    "l1_lines_per_clk": (1.8, "assumed", "the H200's measured rate"),
    "l1_wavefronts_per_clk": (1.0, "assumed", "the H200's measured rate"),
    "split_pieces_per_clk": (0.7, "assumed", "the H200's measured rate"),
    "transaction_lanes": (32, "assumed", "one request per 32-lane warp instruction, as on NVIDIA"),
    "sector_bytes": (32, "assumed", "not published; NVIDIA's 32-B sectors"),
    "l2_bytes": (62914560, "H", "musaInfo l2CacheSize 60 MiB"),
    **_L2_POLICY,
    "l2_line_bytes": (128, "assumed", "not published; NVIDIA's 128-B lines"),
    "l2_ways": (16, "assumed", "not published; 16-way with hashed set index"),
    "l2_bytes_per_s": (6.4e12, "assumed", "4 x DRAM bandwidth (Triton perf model's ratio)"),
    "l2_partial_writes_per_s": (6.4e12 * 60e9 / 9.9e12, "assumed", "the H200's ratio of partial-sector writes "
                                "(60 G/s) to plain re-reads (9.9 TB/s)"),
    "l2_load_bytes_per_s": (6.4e12 * 6.6 / 9.9, "assumed", "the H200's ratio of loads through the L1 "
                            "(6.6 TB/s) to plain re-reads (9.9)"),
    "dram_bytes_per_s": (1.6e12, "H", "musaInfo 20,000 MHz x 640 bit"),
    "dram_efficiency": (0.885, "assumed", "H200's measured copy efficiency"),
    "dram_atom_bytes": (32, "assumed", "not measured; sector-sized DRAM fetches (research §3.1)"),
    "dram_run_efficiency": (H200["dram_run_efficiency"][0], "assumed", "H200's measured table"),
    **_round_trips(1.5e9),
    "tensor_flops_per_clk": ({"fp8": 1.024e15 / (56 * 1.5e9), "int8": 1.024e15 / (56 * 1.5e9),
                              "fp16": 0.512e15 / (56 * 1.5e9), "bf16": 0.512e15 / (56 * 1.5e9),
                              "tf32": 0.256e15 / (56 * 1.5e9)},
                             "L", "press: FP8 1,024 TFLOPS (M) / (56 MP x 1.5 GHz); fp16/bf16 half, tf32 a "
                             "quarter and int8 equal to fp8 are assumed"),
    "tensor_efficiency": (0.72, "assumed", "H200's measured GEMM fraction"),
    "tensor_subcores": (4, "L", "128-thread warp squads = 4 warps feed the tensor core engine"),
    "fp32_flops_per_clk": (256.0, "assumed", "FP32 rate not published; 128 lanes per MP assumed"),
    "simt_lanes_per_clk": (dict(_HOPPER_PIPES), "assumed", _S5000_ASSUMED_PIPES),
    **{name: (H200[name][0], "assumed", "H200's measured value") for name in _ATOMIC_FIELDS},
    "atomic_vector_bytes": (4, "assumed", "vector atomics not published: one 32-bit element a lane"),
    "atomic_serial_cycles": (3.5, "assumed", "H200's measured value"),
    "barrier_cycles": (20.0, "assumed", "H200's measured value"),
    "launch_overhead_s": (5.0e-6, "assumed", "H200's measured ~4-5 us"),
    "program_start_cycles": (157.0, "assumed", "H200's measured cycles a unit per program started"),
    "mma_async_min_m": (64, "assumed", "MUSA's 4-warp 'warp squad' MMA assumed to need 64-row tiles like wgmma"),
    "mma_async_warps": (4, "L", "128-thread warp squads feed the tensor core engine"),
    "mma_kmajor_types": (("tf32", "fp8", "int8"), "assumed", "not published; the H200's (PTX) rule"),
    **_H200_FITTED,
}

MTT_S4000 = {
    "name": ("mtt-s4000", "H", "Moore Threads MTT S4000 (Quyuan, MUSA arch 2.2)"),
    "vendor": ("moore-threads", "H", ""),
    "arch": ("mp_22", "H", "torch_musa / llama.cpp QY2"),
    "units": (64, "assumed", "MP count not published; 64 MPs x 128 FP32 lanes x 2 x 1.5 GHz = 24.6 TFLOPS "
              "matches the quoted 25 TFLOPS FP32"),
    "clock_hz": (1.5e9, "assumed", "clock not published"),
    "warp_size": (128, "H", "tilelang_musa NumThreadsPerWarpBeforeMP31 = 128"),
    "max_threads_per_program": (1024, "M", "sglang PR #10023 log: <= 8 warps of 128"),
    "max_warps_per_unit": (16, "assumed", "not published; 2,048 threads per MP"),
    "max_programs_per_unit": (16, "assumed", "not published"),
    "issue_schedulers": (4, "assumed", "not published"),
    "registers_per_unit": (65536, "assumed", "not published; NVIDIA's 64 K"),
    "registers_per_program": (65536, "assumed", "not published"),
    "max_registers_per_thread": (255, "assumed", "not published"),
    "register_alloc_unit": (256, "assumed", "not published"),
    "shared_bytes_per_unit": (131072, "assumed", "not published; 128 KiB, above the per-block limit"),
    "shared_bytes_per_program_max": (73728, "H", "FlagTree static shared limit for mp_22 (72 KiB)"),
    "local_cache_bytes": (131072, "assumed", "not published; taken equal to shared_bytes_per_unit"),
    "shared_reserved_per_program": (0, "assumed", "not published"),
    "shared_banks": (32, "assumed", "bank geometry not published; 32 x 4 B default"),
    "shared_bank_bytes": (4, "assumed", "bank geometry not published"),
    "shared_wavefronts_per_clk": (1.0, "assumed", "one 128-B wavefront per clock, so a 128-lane 4-B "
                                  "access takes at least 4"),
    "l1_lines_per_clk": (1.8, "assumed", "the H200's measured rate"),
    "l1_wavefronts_per_clk": (1.0, "assumed", "the H200's measured rate"),
    "split_pieces_per_clk": (0.7, "assumed", "the H200's measured rate"),
    "transaction_lanes": (32, "L", "how a 128-lane instruction splits into transactions is not published; "
                          "assumed 32-lane groups (research §3.4)"),
    "sector_bytes": (32, "assumed", "not published"),
    "l2_bytes": (8 * 1024 * 1024, "assumed", "L2 size not published; 8 MiB assumed"),
    **_L2_POLICY,
    "l2_line_bytes": (128, "assumed", "not published"),
    "l2_ways": (16, "assumed", "not published"),
    "l2_bytes_per_s": (3.072e12, "assumed", "4 x DRAM bandwidth (Triton perf model's ratio)"),
    "l2_partial_writes_per_s": (3.072e12 * 60e9 / 9.9e12, "assumed", "the H200's ratio of partial-sector writes "
                                "(60 G/s) to plain re-reads (9.9 TB/s)"),
    "l2_load_bytes_per_s": (3.072e12 * 6.6 / 9.9, "assumed", "the H200's ratio of loads through the L1 "
                            "(6.6 TB/s) to plain re-reads (9.9)"),
    "dram_bytes_per_s": (768e9, "M", "press: 48 GB GDDR6, 384-bit, 768 GB/s"),
    "dram_efficiency": (0.885, "assumed", "H200's measured copy efficiency"),
    "dram_atom_bytes": (32, "assumed", "not measured"),
    "dram_run_efficiency": (H200["dram_run_efficiency"][0], "assumed", "H200's measured table"),
    **_round_trips(1.5e9),
    "tensor_flops_per_clk": ({"fp16": 1024.0, "bf16": 1024.0, "tf32": 512.0, "int8": 2048.0},
                             "L", "press 98 / 49 / 196 T(FL)OPS (M) over the assumed 64 MPs x 1.5 GHz; "
                             "no fp8 (H: unsupported on mp_22)"),
    "tensor_efficiency": (0.72, "assumed", "H200's measured GEMM fraction"),
    "tensor_subcores": (4, "assumed", "not published"),
    "fp32_flops_per_clk": (256.0, "L", "25 TFLOPS (M) over the assumed 64 MPs x 1.5 GHz"),
    "simt_lanes_per_clk": (dict(_HOPPER_PIPES), "assumed", "not published; Hopper SM pipe widths"),
    **{name: (H200[name][0], "assumed", "H200's measured value") for name in _ATOMIC_FIELDS},
    "atomic_vector_bytes": (4, "assumed", "vector atomics not published: one 32-bit element a lane"),
    "atomic_serial_cycles": (3.5, "assumed", "H200's measured value"),
    "barrier_cycles": (20.0, "assumed", "H200's measured value"),
    "launch_overhead_s": (5.0e-6, "assumed", "H200's measured ~4-5 us"),
    "program_start_cycles": (157.0, "assumed", "H200's measured cycles a unit per program started"),
    "mma_async_min_m": (0, "assumed", "no asynchronous MMA path known on mp_22"),
    "mma_async_warps": (4, "L", "128-thread warp squads feed the tensor core engine"),
    "mma_kmajor_types": (("tf32", "fp8", "int8"), "assumed", "not published; the H200's (PTX) rule"),
    **_H200_FITTED,
}

PRESETS = (MTT_S5000, MTT_S4000, H200)
