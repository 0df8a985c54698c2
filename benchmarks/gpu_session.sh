#!/usr/bin/env bash
# One batch of GPU-machine work: install carried wheels, check the machine, run the
# GPU tests, capture recordings and benchmarks. Results go to $OUT. The wheels (.whl)
# and libbpf (.gpu-libs) come from benchmarks/gpu_carry.sh, run beforehand where pip
# can download.
#   bash benchmarks/gpu_session.sh [STEP...]   (default: doctor record)
# Agent steps (issue 3): agent-tests agent-overhead agent-fidelity; each
# runs under a time limit (timeout(1)), so no step can hang the session.
# Overhead steps (issue 15): graph-trace startup-overhead startup-ablation(-a,-b) tail-trace
# startup-compile launch-time attach-paired
# Attach (issue 23): attach-soak attach-ablation attach-phases probe-attach-cost
# attach-phases-gpu attach-phases-gpu-hostoff attach-first-kernel attach-paired-eager
# attach-paired-graphs attach-paired-graphs-split; issue 26: python-lines sampler-cost;
# issue 25: what-if-recordings compile-recording nvtx-recording; last: pack (all of $OUT in one tar)
# overhead-matrix overhead-matrix-eager overhead-matrix-eager-ablation overhead-matrix-loader
# overhead-matrix-train overhead-matrix-compile
# overhead-matrix-table (the last joins the others' JSONs into $OUT/overhead_matrix.md).
# Kernel sampling (issue 15): sampling sampling-corr overhead-matrix-sampling
set -u
OUT=${OUT:-/tmp/gtop-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD:/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
export PATH="/tmp/site/bin:$PATH"   # py-spy from its wheel
# The GPU image has libelf but no libbpf: a copy travels in .gpu-libs (carry it).
[ -f .gpu-libs/libbpf.so.1 ] && export GTOP_LIBBPF="$PWD/.gpu-libs/libbpf.so.1"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
fi
steps=${*:-"doctor record"}
status=0
# run CMD... under a limit of $1 seconds; a failure or a timeout is said and counted
limit() {
  local secs=$1; shift
  timeout -k 15 "$secs" "$@"
  local rc=$?
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then echo "TIMEOUT after ${secs}s: $*"; fi
  [ $rc -eq 0 ] || status=1
}
for step in $steps; do
  echo "=== $step $(date +%T)"
  case $step in
    doctor) nvidia-smi -L; python3 -m gtop doctor ;;
    record) python3 benchmarks/capture_phases.py --out "$OUT"
            python3 benchmarks/nvml_accuracy.py --out "$OUT" --duration 20
            python3 -m gtop report "$OUT/idle_busy_idle.gtop" ;;
    probes) python3 benchmarks/capture_triton_ptx.py
            tar -cf "$OUT/triton_corpus.tar" tests/corpus/ptx/triton_*
            python3 -m pytest -m gpu -q -p no:cacheprovider tests/probes 2>&1 | tail -30
            timeout 400 python3 benchmarks/probe_overhead.py "$OUT/probe_overhead.json"
            python3 benchmarks/capture_probe_recording.py "$OUT/probes_triton.gtop" --npz "$OUT/probes.npz" ;;
    probe-tests) limit 280 python3 -m pytest -m gpu -q -p no:cacheprovider tests/probes \
                   >"$OUT/probe_tests.txt" 2>&1; tail -25 "$OUT/probe_tests.txt" ;;
    probe-overhead) limit 300 python3 benchmarks/probe_overhead.py "$OUT/probe_overhead.json" ;;
    probe-breakdown) limit 200 python3 benchmarks/probe_cost_breakdown.py "$OUT/probe_breakdown.json" ;;
    probe-recording) limit 120 python3 benchmarks/capture_probe_recording.py "$OUT/probes_triton.gtop" ;;
    host) (cd benchmarks && python3 host_gpu_check.py "$OUT/host" --seconds 20)
          tar -cf "$OUT/host.tar" -C "$OUT" host && rm -rf "$OUT/host" ;;
    slow-loader) mkdir -p /tmp/slow-loader; python3 -m gtop record --force --agent-mode full --interval 0.25 \
            -o "$OUT/slow_loader.gtop" -- python3 benchmarks/workloads/slow_loader_train.py \
            --seconds 12 --data-dir /tmp/slow-loader --gpu-ms 30 ;;
    io-case) # exit 1 (counted) when a share is off or no on-CPU I/O-syscall time was recorded
             limit 200 python3 benchmarks/constructed_shares.py --out "$OUT/io" --cases io --seconds 6
             mv "$OUT"/io/constructed-io.* "$OUT"/ ;;
    attribution) python3 benchmarks/constructed_shares.py --out "$OUT/attr" --seconds 8
                 python3 benchmarks/realistic_breakdown.py --out "$OUT/attr" --seconds 10
                 rm -f "$OUT"/attr/gtop-io-*
                 tar -cf "$OUT/attr.tar" -C "$OUT" attr && rm -rf "$OUT/attr" ;;
    final-recordings)  # the recordings committed under recordings/ (see README)
          mkdir -p "$OUT/rec" /tmp/slow-loader
          limit 200 python3 benchmarks/constructed_shares.py --out "$OUT/rec" --seconds 6
          limit 200 python3 benchmarks/realistic_breakdown.py --out "$OUT/rec" --seconds 8
          limit 60 python3 -m gtop record --force --agent-mode full --interval 0.25 \
            -o "$OUT/rec/slow_loader.gtop" -- python3 benchmarks/workloads/slow_loader_train.py \
            --seconds 10 --data-dir /tmp/slow-loader --gpu-ms 30
          limit 60 python3 -m gtop record --force --agent-mode full --interval 0.25 \
            -o "$OUT/rec/train_loop_cupti.gtop" -- python3 benchmarks/workloads/train_loop.py \
            --seconds 4 --batch 16
          limit 120 python3 benchmarks/capture_probe_recording.py "$OUT/rec/probes_triton.gtop"
          rm -f "$OUT"/rec/gtop-io-*; ls -la "$OUT/rec"
          tar -cf "$OUT/constructed.tar" -C "$OUT/rec" $(cd "$OUT/rec" && ls constructed-*)
          tar -cf "$OUT/realistic.tar" -C "$OUT/rec" $(cd "$OUT/rec" && ls decode-* loader-* realistic*)
          tar -cf "$OUT/host_recordings.tar" -C "$OUT/rec" slow_loader.gtop train_loop_cupti.gtop \
            probes_triton.gtop
          rm -rf "$OUT/rec" ;;
    # issue 13: the four fix pairs in DEFAULT agent mode (recordings + workload JSON lines
    # + diagnosis_pairs-*.json + the table); two steps, each under 4 minutes
    diagnosis-recordings) mkdir -p "$OUT/diag"
          limit 230 python3 benchmarks/diagnosis_pairs.py --out "$OUT/diag" --pairs decode,item \
            --seconds 4
          tar -cf "$OUT/diagnosis_a.tar" -C "$OUT" diag && rm -rf "$OUT/diag" ;;
    diagnosis-recordings-2) mkdir -p "$OUT/diag" /tmp/slow-loader
          limit 230 python3 benchmarks/diagnosis_pairs.py --out "$OUT/diag" \
            --pairs loader,preprocess --seconds 4
          tar -cf "$OUT/diagnosis_b.tar" -C "$OUT" diag && rm -rf "$OUT/diag" ;;
    # issue 13: the constructed cases re-recorded in DEFAULT agent mode (what users run)
    diagnosis-constructed) mkdir -p "$OUT/cdef"
          limit 230 python3 benchmarks/constructed_shares.py --out "$OUT/cdef" --seconds 6 \
            --agent-mode default
          rm -f "$OUT"/cdef/gtop-io-*; ls -la "$OUT/cdef"
          tar -cf "$OUT/constructed_default.tar" -C "$OUT" cdef && rm -rf "$OUT/cdef" ;;
    # interleaved paired slices until --budget (HOST_OVERHEAD_BUDGET, 160 s) is spent
    host-overhead) limit 190 python3 benchmarks/host_overhead.py --json "$OUT/host_overhead.json" \
                     --budget "${HOST_OVERHEAD_BUDGET:-160}" ;;
    # tests that need only CI packages (perfetto, jsonschema) fail to import here: skip them
    gputests) python3 -m pytest -m gpu -q -p no:cacheprovider --continue-on-collection-errors \
                tests 2>&1 | tail -40 ;;
    agent-tests) limit 420 python3 -m pytest -m gpu -q -p no:cacheprovider \
                   -o faulthandler_timeout=120 tests/agent >"$OUT/agent_tests.txt" 2>&1
                 tail -40 "$OUT/agent_tests.txt" ;;
    # rounds stop early to end within --budget seconds (AGENT_OVERHEAD_BUDGET, 460 s)
    agent-overhead) limit 540 python3 benchmarks/agent_overhead.py "$OUT/agent_overhead.json" \
                      --budget "${AGENT_OVERHEAD_BUDGET:-460}" ;;
    # CUDA graphs per launch by default, per node after the g key; recordings of both
    graph-trace) limit 120 python3 -m pytest -m gpu -q -p no:cacheprovider tests/agent/test_gpu_agent.py \
                   -k graphs >"$OUT/graph_trace_test.txt" 2>&1; tail -15 "$OUT/graph_trace_test.txt"
                 for mode in default graph-nodes; do
                   limit 50 python3 -m gtop record --force --agent-mode $mode -o "$OUT/decode-graphs-$mode.gtop" \
                     -- python3 benchmarks/workloads/decode_loop.py --graphs --seconds 5
                   limit 40 python3 -m gtop report "$OUT/decode-graphs-$mode.gtop" >"$OUT/decode-graphs-$mode.txt"
                   head -40 "$OUT/decode-graphs-$mode.txt"
                 done ;;
    # whole-job wall time untraced vs gtop record, phases, and a py-spy profile of gtop
    startup-overhead) limit 235 python3 benchmarks/startup_overhead.py --workload loader --rounds 3 \
                        --budget 150 --json "$OUT/startup_loader.json" --profile "$OUT/startup_loader_profile.txt" ;;
    # the same job under gtop with one part left out each: which part costs the time
    startup-ablation) limit 235 python3 benchmarks/startup_overhead.py --workload loader --rounds 1 \
                        --variants gtop,no-agent,host-off,host-proc,no-pyspy --json "$OUT/startup_ablation.json" ;;
    # split in two: five variants of the 8-worker job did not fit one step's limit
    startup-ablation-a) limit 235 python3 benchmarks/startup_overhead.py --workload loader --rounds 1 \
                        --variants gtop,no-agent,host-off --json "$OUT/startup_ablation_a.json" ;;
    startup-ablation-b) limit 235 python3 benchmarks/startup_overhead.py --workload loader --rounds 1 \
                        --variants gtop,host-proc,no-pyspy --json "$OUT/startup_ablation_b.json" ;;
    # py-spy dumps (native frames) of gtop's whole tree, each second from the target's
    # last line until gtop exits: what the tail is made of
    tail-trace) limit 110 python3 benchmarks/tail_trace.py --native --out "$OUT/tail_decode.txt" \
                  -- python3 benchmarks/workloads/decode_loop.py --seconds 3
                limit 120 python3 benchmarks/tail_trace.py --native --out "$OUT/tail_loader.txt" \
                  -- python3 benchmarks/workloads/startup_loader.py --batches 40 ;;
    # the launch phase alone: gtop's start to a trivial target's first line, 10 runs, and
    # a cProfile of one gtop record's main thread (where the time before the launch goes)
    launch-time) limit 200 python3 benchmarks/launch_time.py --runs 10 --json "$OUT/launch_time.json" \
                   --profile "$OUT/launch_profile.txt" >"$OUT/launch_time.txt"; cat "$OUT/launch_time.txt" ;;
    # the whole path as a user runs it, default mode: record, report (replay: in tmux here)
    user-path) mkdir -p "$OUT/user"
               for w in "decode-eager:benchmarks/workloads/decode_loop.py --seconds 6" \
                        "loader-8-workers:benchmarks/workloads/startup_loader.py"; do
                 name=${w%%:*}
                 limit 100 python3 -m gtop record -o "$OUT/user/$name.gtop" -- python3 ${w#*:}
                 limit 60 python3 -m gtop report "$OUT/user/$name.gtop" >"$OUT/user/$name.txt" 2>&1
                 head -30 "$OUT/user/$name.txt"
               done ;;
    startup-compile) limit 235 python3 benchmarks/startup_overhead.py --workload compile --rounds 3 \
                       --budget 150 --json "$OUT/startup_compile.json" --profile "$OUT/startup_compile_profile.txt" ;;
    # one workload each (4 modes x up to 5 interleaved rounds within --budget seconds)
    overhead-matrix) limit 235 python3 benchmarks/overhead_matrix.py --workloads graph-decode \
                       --json "$OUT/overhead_graph-decode.json" ;;
    overhead-matrix-eager) limit 235 python3 benchmarks/overhead_matrix.py --workloads eager-decode \
                             --json "$OUT/overhead_eager-decode.json" ;;
    # which part of gtop a launch-bound loss is: without host tracing, without the agent
    overhead-matrix-eager-ablation) limit 235 python3 benchmarks/overhead_matrix.py --workloads eager-decode \
                             --modes untraced,gtop,gtop-host-off,gtop-no-agent --json "$OUT/ablation_eager-decode.json" ;;
    # launch-bound: more rounds of only untraced vs gtop, the target pinned to 4 CPUs
    overhead-matrix-eager-pinned) limit 235 python3 benchmarks/overhead_matrix.py --workloads eager-decode \
                             --modes untraced,gtop --rounds 9 --pin 2-5 --json "$OUT/pinned_eager-decode.json" ;;
    # CUPTI's cost per activity kind inside one process (windows alternate; no process noise)
    # gtop attached to / detached from one launch-bound process, paired in time
    # the loader targets alone (one died with SIGSEGV in the sixth session's soak)
    attach-soak-loader) limit 200 python3 benchmarks/attach_soak.py --modes loader --attaches 60 \
                   --concurrency 4 --target-seconds 12 --per-target 4 --budget "${SOAK_BUDGET:-120}" \
                   --json "$OUT/attach_soak_loader.json" ;;
    attach-soak) limit 340 python3 benchmarks/attach_soak.py --attaches 220 --concurrency 4 \
                   --target-seconds 20 --per-target 5 --budget "${SOAK_BUDGET:-290}" --json "$OUT/attach_soak.json" ;;
    attach-ablation) limit 220 python3 benchmarks/attach_paired.py --rounds 2 --traced 8 --gap 5 \
                       --variants default,no-agent,host-off,nvml-only --json "$OUT/attach_ablation.json" ;;
    attach-paired) limit 560 python3 benchmarks/attach_paired.py --rounds 5 --traced 9 --gap 6 \
                     --variants default,every-kernel,no-agent --json "$OUT/attach_paired.json" ;;
    cupti-kind-cost) limit 200 python3 benchmarks/cupti_kind_cost.py --rounds 8 --window 1.5 \
                       --json "$OUT/cupti_kind_cost.json" ;;
    # the graph kind alone: more, shorter windows of off / nodes / default
    cupti-graph-cost) limit 200 python3 benchmarks/cupti_kind_cost.py --rounds 24 --window 0.75 \
                        --configs off,graph-nodes,default --json "$OUT/cupti_graph_cost.json" ;;
    overhead-matrix-loader) limit 235 python3 benchmarks/overhead_matrix.py --workloads resnet-loader \
                              --json "$OUT/overhead_resnet-loader.json" ;;
    overhead-matrix-train) limit 235 python3 benchmarks/overhead_matrix.py --workloads gpu-train \
                             --json "$OUT/overhead_gpu-train.json" ;;
    overhead-matrix-compile) limit 235 python3 benchmarks/overhead_matrix.py --workloads compile \
                               --json "$OUT/overhead_compile.json" ;;
    overhead-matrix-table) python3 benchmarks/overhead_matrix.py --merge "$OUT"/overhead_*.json \
                             --markdown "$OUT/overhead_matrix.md" --json "$OUT/matrix_all.json" ;;
    agent-fidelity) limit 300 python3 benchmarks/agent_fidelity.py "$OUT/agent_fidelity.json" ;;
    # issue 18: 2 ranks on one GPU (NCCL if it takes two ranks on one device, else gloo
    # with CUDA tensors), rank 1 sleeping 20 ms per step; outputs go to recordings/
    ddp-straggler) limit 230 python3 benchmarks/capture_ddp.py --out "$OUT" --device cuda \
                     --steps 150 --timeout 100 ;;
    # issue 18: the same job as two nodes, each recorded by its own gtop (for gtop merge),
    # attached with --pid once warm: the agent follows the ranks into CUDA (follow.py)
    ddp-split) limit 230 python3 benchmarks/capture_ddp.py --out "$OUT" --device cuda \
                 --steps 150 --timeout 100 --split --attach ;;
    # issue 17: --version, --once and `gtop serve --pid` (dcgm names + per-process GAR)
    # on the real NVML and agent path; what they printed and scraped lands in $OUT/eco/
    eco-headless) mkdir -p "$OUT/eco"
          GTOP_EVIDENCE="$OUT/eco" limit 200 python3 -m pytest -m gpu -q -p no:cacheprovider \
            tests/gpu/test_headless_gpu.py >"$OUT/eco/tests.txt" 2>&1
          tail -20 "$OUT/eco/tests.txt" ;;
    # issue 17: Python frames' cost and yield against a torch training loop (a large
    # process for py-spy to read): the dump loop gtop used vs. the 100 Hz stream now
    # issue 14: the hardened attach path on the GPU (root into another user's CUDA
    # process, a traced process forking loader workers, a short CUDA process's exit),
    # then the agent's exit cost, CPU-only and with CUDA (RESULTS.md "Agent exit cost")
    hardening) limit 150 python3 -m pytest -m gpu -q -p no:cacheprovider -rs tests/security \
                 >"$OUT/hardening_tests.txt" 2>&1; tail -20 "$OUT/hardening_tests.txt"
               limit 40 python3 benchmarks/agent_exit_cost.py --runs 20 >"$OUT/agent_exit_cost.txt"
               limit 100 python3 benchmarks/agent_exit_cost.py --runs 6 --cuda \
                 >>"$OUT/agent_exit_cost.txt"; cat "$OUT/agent_exit_cost.txt" ;;
    # kernel sampling (issue 15): its GPU tests with real CUPTI; a recording of the eager
    # decode sampled and one traced in full (--trace-every-kernel), each with its report
    # (the traced share); then untraced vs gtop (sampling) vs gtop --trace-every-kernel
    sampling) GTOP_EVIDENCE="$OUT/sampling" limit 100 python3 -m pytest -m gpu -q -p no:cacheprovider \
                tests/agent/test_gpu_sampling.py \
                >"$OUT/sampling_tests.txt" 2>&1; tail -20 "$OUT/sampling_tests.txt"
              for flag in "" --trace-every-kernel; do
                name=eager-decode${flag:+-every-kernel}
                limit 40 python3 -m gtop record --force $flag -o "$OUT/$name.gtop" \
                  -- python3 benchmarks/workloads/decode_loop.py --seconds 8
                limit 30 python3 -m gtop report "$OUT/$name.gtop" >"$OUT/$name.txt" 2>&1
                head -40 "$OUT/$name.txt"
              done ;;
    # kernel sampling's correlation ids: in one H200 run every record after the first off
    # phase carried one id (recordings/sampling/eager-decode.gtop), in the next they stayed
    # unique; how often, over three sampled decodes (RESULTS.md "Kernel sampling")
    sampling-corr) mkdir -p "$OUT/corr"
                   for i in 1 2 3; do
                     limit 60 python3 -m gtop record --force -o "$OUT/corr/decode-$i.gtop" \
                       -- python3 benchmarks/workloads/decode_loop.py --seconds 6 >/dev/null
                   done
                   limit 60 python3 benchmarks/correlation_ids.py "$OUT"/corr/decode-*.gtop \
                     | tee "$OUT/corr/correlation_ids.md" ;;
    overhead-matrix-sampling) limit 235 python3 benchmarks/overhead_matrix.py --workloads eager-decode \
                                --modes untraced,gtop,gtop-every-kernel --json "$OUT/sampling_eager-decode.json" ;;
    # issue 23's done-when, one step each: --duration 1's wall time (CPU targets, one and
    # four gtops at once), the probe's cost to a Triton loop, the paired decode ratios
    attach-phases) limit 150 python3 benchmarks/attach_phases.py --runs 8 --concurrency 1 --mode tick \
                     --json "$OUT/attach_phases_k1.json"
                   limit 150 python3 benchmarks/attach_phases.py --runs 12 --concurrency 4 --mode tick \
                     --json "$OUT/attach_phases_k4.json" ;;
    # the same phases against torch targets (decode: .item() in every layer), where the
    # soak's --duration 1 took 3.2 s at p50 against 1.4 s on CPU targets
    attach-phases-gpu) limit 200 python3 benchmarks/attach_phases.py --runs 6 --concurrency 1 \
                         --mode decode --settle 8 --json "$OUT/attach_phases_gpu_k1.json"
                       limit 200 python3 benchmarks/attach_phases.py --runs 8 --concurrency 4 \
                         --mode decode --settle 8 --json "$OUT/attach_phases_gpu_k4.json" ;;
    # the same with the host tier off: is the extra time the GPU-wait uprobes on libcuda?
    attach-phases-gpu-hostoff) limit 200 python3 benchmarks/attach_phases.py --runs 8 --concurrency 4 \
                                 --mode decode --settle 8 --json "$OUT/attach_phases_gpu_k4_hostoff.json" \
                                 -- --host-tier off ;;
    # issue 23 item 3: attach -> first kernel recorded (goal p50 <= 0.5 s from the command's
    # start), torch targets, one and four gtops at once; with FIRSTK_BEFORE=DIR (a checkout
    # of main before the attach was begun early, e.g. git archive 294c9a9) its runs alternate
    attach-first-kernel) limit 250 python3 benchmarks/attach_phases.py --runs "${FIRSTK_RUNS:-12}" --concurrency 1 \
                           --mode decode --settle 8 --gtop ${FIRSTK_BEFORE:+"$FIRSTK_BEFORE"} . \
                           --json "$OUT/attach_first_kernel_k1.json"
                         limit 250 python3 benchmarks/attach_phases.py --runs "${FIRSTK_RUNS:-12}" --concurrency 4 \
                           --mode decode --settle 8 --gtop ${FIRSTK_BEFORE:+"$FIRSTK_BEFORE"} . \
                           --json "$OUT/attach_first_kernel_k4.json" ;;
    probe-attach-cost) limit 150 python3 benchmarks/probe_attach_cost.py --check \
                         -o "$OUT/probe_attach_cost.json" ;;
    attach-paired-eager) limit 290 python3 benchmarks/attach_paired.py --rounds "${PAIRED_ROUNDS:-6}" --traced 8 --gap 5 \
                           --variants default --json "$OUT/attach_paired_eager.json" ;;
    attach-paired-graphs) limit 290 python3 benchmarks/attach_paired.py --rounds "${PAIRED_ROUNDS:-6}" --traced 8 --gap 5 \
                            --variants default --graphs --json "$OUT/attach_paired_graphs.json" ;;
    # the graph decode with kernel sampling's floor at 10% (default) and 20% (before)
    attach-paired-graphs-floor) limit 290 python3 benchmarks/attach_paired.py --rounds "${PAIRED_ROUNDS:-4}" --traced 8 --gap 5 \
                            --variants default,floor-0.2 --graphs --json "$OUT/attach_paired_graphs_floor.json" ;;
    # which part of an attach costs the graph decode: the agent, host-thread tracing, or neither
    attach-paired-graphs-split) limit 290 python3 benchmarks/attach_paired.py --rounds "${PAIRED_ROUNDS:-3}" --traced 8 --gap 5 \
                            --variants default,no-agent,host-off --graphs --json "$OUT/attach_paired_graphs_split.json" ;;
    # targets attached again and again, one variant each, all at once: which part harms
    attach-harm) limit 280 python3 benchmarks/attach_harm.py --json "$OUT/attach_harm.json" \
                   --cases "${HARM_CASES:-graphs:default,graphs:default,graphs:no-agent,graphs:every-kernel,graphs:graph-nodes,graphs:no-graph-kind,eager:default,eager:every-kernel}" ;;
    # issue 26: the .item() line on the GPU, and the sampler's cost on a quiet many-core host
    python-lines) limit 200 python3 -m pytest -m gpu -q -p no:cacheprovider \
                    tests/host/test_host_python_lines.py >"$OUT/python_lines.txt" 2>&1
                  tail -15 "$OUT/python_lines.txt" ;;
    sampler-cost) limit 100 python3 benchmarks/python_sampler_cost.py --rounds 16 --window 2 --rate 100
                  limit 100 python3 benchmarks/python_sampler_cost.py --rounds 16 --window 2 --rate 100 \
                    --control ;;
    # issue 25: the torch.compile job and the TF32 kernel-speedup pairs (recordings/fixes)
    what-if-recordings) mkdir -p "$OUT/whatif"
          limit 150 python3 -m gtop record -o "$OUT/whatif/compile-mlp.gtop" \
            -- python3 benchmarks/workloads/compile_mlp.py >"$OUT/whatif/compile-mlp.json"
          limit 40 python3 -m gtop report "$OUT/whatif/compile-mlp.gtop" | head -40
          for bound in gpu host; do for tf in fp32 tf32; do
            limit 60 python3 -m gtop record -o "$OUT/whatif/kernel-$bound-$tf.gtop" \
              -- python3 benchmarks/workloads/kernel_speedup.py --bound $bound \
              --tf32 $([ $tf = tf32 ] && echo on || echo off) >"$OUT/whatif/kernel-$bound-$tf.json"
          done; done
          limit 60 python3 benchmarks/workloads/kernel_speedup.py --measure-kernels \
            >"$OUT/whatif/kernel-speedup.json"
          tar -cf "$OUT/whatif.tar" -C "$OUT" whatif && rm -rf "$OUT/whatif" ;;
    # issue 25 item 3: the torch.compile job alone (default compile mode), its report,
    # and the GPU test that records it again and checks the one-time phase
    compile-recording) mkdir -p "$OUT/compile"
          limit 200 python3 -m gtop record -o "$OUT/compile/compile-mlp.gtop" \
            -- python3 benchmarks/workloads/compile_mlp.py >"$OUT/compile/compile-mlp.json"
          limit 60 python3 -m gtop report "$OUT/compile/compile-mlp.gtop" | head -45
          python3 benchmarks/kernel_gaps.py "$OUT/compile/compile-mlp.gtop"  # lost kernels?
          # the committable excerpt: from 2 s before the last one-time phase ends to the
          # steady window's end (the compile's tail, its end, the steady steps)
          limit 60 python3 -m gtop report --json "$OUT/compile/compile-mlp.gtop" >"$OUT/compile/report.json"
          python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); w = d["window"]
ends = [p["to_s"] for p in d["phases"] if p.get("one_time") and p["to_s"] <= w["from_s"] + 0.01]
ends = ends or [w["from_s"]]  # (a compile worker may wake after the steps: not before them)
t0, t1 = max(ends) - 2.0, w["to_s"] + 0.2
print(f"{t0:.3f} {t1:.3f}", file=open(sys.argv[2], "w"))' \
            "$OUT/compile/report.json" /tmp/compile-cut
          read -r cut0 cut1 </tmp/compile-cut
          limit 60 python3 tools/excerpt_recording.py "$OUT/compile/compile-mlp.gtop" \
            "$OUT/compile/compile-mlp-excerpt.gtop" --from "$cut0" --to "$cut1"
          limit 60 python3 -m gtop report "$OUT/compile/compile-mlp-excerpt.gtop" | head -30
          ls -la "$OUT/compile"
          GTOP_EVIDENCE="$OUT/compile-test" limit 300 python3 -m pytest -m gpu -q -p no:cacheprovider \
            tests/gpu/test_compile_phase_gpu.py 2>&1 | tail -15 ;;
    # issue 25 item 2: a training loop that marks its steps with NVTX, recorded in the
    # default mode, its report (steps from NVTX range 'train_step'), an excerpt to commit
    # (recordings/nvtx-steps.gtop is nvtx-steps-excerpt.gtop, recordings/nvtx-steps.json
    # is nvtx-steps.json), and the GPU test that records it again
    nvtx-recording) mkdir -p "$OUT/nvtx"
          limit 150 python3 -m gtop record -o "$OUT/nvtx/nvtx-steps.gtop" \
            -- python3 benchmarks/workloads/nvtx_steps.py >"$OUT/nvtx/nvtx-steps.json"
          cat "$OUT/nvtx/nvtx-steps.json"
          limit 60 python3 -c 'import sys; from gtop.recordings.reader import Recording
r = Recording(sys.argv[1]); print("marker rows:", len(r.read("marker")) if "marker" in r.streams else 0,
  "agent:", [e.value.get("kinds") for e in r.entities() if e.kind == "agent"][-1:])' "$OUT/nvtx/nvtx-steps.gtop"
          limit 60 python3 -m gtop report "$OUT/nvtx/nvtx-steps.gtop" | head -45
          limit 60 python3 -m gtop report --json "$OUT/nvtx/nvtx-steps.gtop" >"$OUT/nvtx/report.json"
          python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); w = d["window"]
print("what_if.steps:", (d.get("what_if") or {}).get("steps")); m = (w["from_s"] + w["to_s"]) / 2
print(f"{m - 0.6:.3f} {m + 0.6:.3f}", file=open(sys.argv[2], "w"))' "$OUT/nvtx/report.json" /tmp/nvtx-cut
          # the committable excerpt: the middle 1.2 s of the steady window (its steps/s: .json)
          read -r cut0 cut1 </tmp/nvtx-cut
          limit 60 python3 tools/excerpt_recording.py "$OUT/nvtx/nvtx-steps.gtop" \
            "$OUT/nvtx/nvtx-steps-excerpt.gtop" --from "$cut0" --to "$cut1"
          limit 60 python3 -m gtop report --json "$OUT/nvtx/nvtx-steps-excerpt.gtop" \
            | python3 -c 'import json, sys; print("excerpt steps:", json.load(sys.stdin)["what_if"]["steps"])'
          ls -la "$OUT/nvtx"
          limit 300 python3 -m pytest -m gpu -q -p no:cacheprovider \
            tests/gpu/test_nvtx_steps_gpu.py 2>&1 | tail -15 ;;
    # everything under $OUT in one tar (the device tool returns at most 8 files)
    pack) (cd "$OUT" && tar -cf /tmp/results.tar --exclude results.tar . && rm -rf ./* \
             && mv /tmp/results.tar results.tar) ;;
    *) echo "unknown step $step"; status=1 ;;
  esac
done
exit $status
