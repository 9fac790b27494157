"""PyTorch under TriRace: the ctypes binding, the hostccl backend, DDP, failures.

Run through run_torch_test.sh (ctest: PyTorch.*). Needs TRIRACE_BUILD_DIR
(the build tree: bin/trirace, lib/libtrirace.so, hostccl/lib/libnccl.so.2).

Tolerance: DDP over 4 ranks sums the gradients of 4 slices where the single
process sums over the whole batch at once, so float32 rounding differs; the
weights after 5 steps must agree within 1e-6 (absolute) and the losses within
1e-6 (relative). Across TriRace's modes results must be bit-identical.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, "..", ".."))
BUILD = os.environ.get("TRIRACE_BUILD_DIR", os.path.join(SOURCE, "build"))
TRIRACE = os.path.join(BUILD, "bin", "trirace")
SHIM = os.path.join(BUILD, "lib", "libtrirace.so")
HOSTCCL = os.path.join(BUILD, "hostccl", "lib", "libnccl.so.2")
LAUNCH = os.path.join(HERE, "launch_ranks.py")
DDP_WORKER = os.path.join(HERE, "ddp_worker.py")
HYBRID = os.path.join(SOURCE, "examples", "pytorch", "hybrid_train.py")

sys.path.insert(0, os.path.join(SOURCE, "python"))
sys.path.insert(0, HERE)
import trace_ops  # noqa: E402

# Without the shim, then under `trirace run` in off, observe, and schedule with every policy.
MODES = [(None, None), ("off", None), ("observe", None), ("schedule", "fifo"), ("schedule", "priority"),
         ("schedule", "trirace"), ("schedule", "adversarial")]


def job_env(**extra):
    env = dict(os.environ, TRIRACE_HOSTCCL_LIBRARY=HOSTCCL, PYTHONPATH=os.path.join(SOURCE, "python"))
    env.pop("LD_PRELOAD", None)
    env.update(extra)
    return env


def run_job(script, nproc, args=(), mode=None, policy=None, env=None, launch=(), timeout=240):
    """Runs `script` on nproc local ranks, under `trirace run` when mode is set."""
    command = [sys.executable, LAUNCH, "--nproc", str(nproc), "--timeout", str(timeout - 20)]
    command += list(launch) + [script] + list(args)
    if mode is not None:
        command = [TRIRACE, "run", "--mode", mode] + (["--policy", policy] if policy else []) + ["--"] + command
    started = time.monotonic()
    proc = subprocess.run(command, env=env or job_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout, text=True)
    return proc, time.monotonic() - started


def result_of(proc):
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if len(lines) != 1:
        raise AssertionError("expected one RESULT line, got %d\nstdout:\n%s\nstderr (tail):\n%s"
                             % (len(lines), proc.stdout, proc.stderr[-4000:]))
    return json.loads(lines[0][len("RESULT "):])


class TestBinding(unittest.TestCase):
    """trirace's ctypes binding with and without the shim in the process."""

    def test_without_the_shim_every_call_is_a_no_op(self):
        import trirace
        self.assertFalse(trirace.loaded())
        self.assertEqual(trirace.version(), 0)
        self.assertEqual(trirace.push_tag(layer=1), 1)
        self.assertEqual(trirace.pop_tag(), 1)
        self.assertEqual(trirace.iteration_begin(3), 1)
        self.assertIsNone(trirace.set_new_comm_role("pipeline"))
        with trirace.comm_role("expert"):
            pass
        with trirace.tag(layer=2, phase="backward", traffic_class="dense"):
            pass
        self.assertFalse(trirace.scheduler_active())

    def test_bad_arguments_raise_naming_the_field(self):
        import trirace
        with self.assertRaisesRegex(ValueError, "phase='sideways'.*backward"):
            trirace.push_tag(phase="sideways")
        with self.assertRaisesRegex(ValueError, "traffic_class='bulk'"):
            with trirace.tag(traffic_class="bulk"):
                pass
        with self.assertRaisesRegex(TypeError, "layer='3'"):
            trirace.push_tag(layer="3")
        with self.assertRaisesRegex(ValueError, "layer=-2"):
            trirace.push_tag(layer=-2)
        with self.assertRaisesRegex(ValueError, "role='ring'"):
            trirace.set_comm_role(0x1000, "ring")

    def test_with_the_shim_calls_reach_it(self):
        snippet = (
            "import json, trirace\n"
            "out = {'loaded': trirace.loaded(), 'version': trirace.version(),\n"
            "       'push': trirace.push_tag(layer=1, phase='forward'), 'pop': trirace.pop_tag(),\n"
            "       'pop_empty': trirace.pop_tag(), 'role_unknown_comm': trirace.set_comm_role(0x1000, 'pipeline'),\n"
            "       'begin': trirace.iteration_begin(7), 'end': trirace.iteration_end(7),\n"
            "       'end_again': trirace.iteration_end(7), 'active': trirace.scheduler_active(),\n"
            "       'new_role': trirace.set_new_comm_role('pipeline'), 'new_role_again': trirace.set_new_comm_role('expert')}\n"
            "with trirace.comm_role('tensor'):\n"
            "    out['inside'] = trirace.set_new_comm_role('tensor')\n"
            "out['after'] = trirace.set_new_comm_role('unknown')\n"
            "print(json.dumps(out))\n")
        proc = subprocess.run([sys.executable, "-c", snippet], env=job_env(LD_PRELOAD=SHIM, TRIRACE_MODE="observe"),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        self.assertEqual(out, {"loaded": True, "version": 1, "push": 0, "pop": 0, "pop_empty": 3,
                               "role_unknown_comm": 2, "begin": 0, "end": 0, "end_again": 3, "active": False,
                               "new_role": "unknown", "new_role_again": "pipeline", "inside": "tensor",
                               "after": "expert"})


class TestDdp(unittest.TestCase):
    """DistributedDataParallel over hostccl on 4 ranks as processes."""

    def test_matches_one_process_and_is_identical_in_every_mode(self):
        results = {}
        with tempfile.TemporaryDirectory() as traces:
            for mode, policy in MODES:
                label = (mode or "plain") + ("/" + policy if policy else "")
                trace = os.path.join(traces, label.replace("/", "-") + ".%r.json")
                proc, _ = run_job(DDP_WORKER, 4, ["--hook"], mode=mode, policy=policy,
                                  env=job_env(TRIRACE_TRACE=trace))
                self.assertEqual(proc.returncode, 0, "%s: %s" % (label, proc.stderr[-4000:]))
                results[label] = result_of(proc)
            # Chunks small enough to split DDP's buckets: float sums stay whole
            # (TRIRACE_CHUNK_FLOAT_REDUCTIONS=off), so the bits do not change.
            proc, _ = run_job(DDP_WORKER, 4, ["--hook"], mode="schedule", policy="trirace",
                              env=job_env(TRIRACE_CHUNK_BYTES="65536"))
            self.assertEqual(proc.returncode, 0, proc.stderr[-4000:])
            results["schedule/trirace, 64 KiB chunks"] = result_of(proc)
            ops = trace_ops.load(os.path.join(traces, "schedule-trirace.0.json"))
        base = results["plain"]
        self.assertFalse(base["trirace_loaded"])
        self.assertLessEqual(base["max_abs_diff_vs_single"], 1e-6)
        for got, want in zip(base["losses"], base["reference_losses"]):
            self.assertAlmostEqual(got, want, delta=1e-6 * abs(want))
        for label, result in results.items():
            self.assertEqual(result["losses"], base["losses"], label)
            self.assertEqual(result["checksum"], base["checksum"], label)
            if label != "plain":
                self.assertTrue(result["trirace_loaded"], label)
        # The gradient buckets: DENSE all-reduces on the data-parallel comm,
        # tagged backward with the layers auto_tag numbered (two buckets).
        grads = [op for op in ops if op["func"] == "AllReduce" and op["bytes"] > 4096]
        self.assertGreaterEqual(len(grads), 5)
        for op in grads:
            self.assertEqual(op["class"], "DENSE")
            self.assertEqual(op["role"], "data-parallel (annotated)")
            self.assertEqual(op["tag"].get("phase"), 1)
            self.assertIn(op["tag"].get("layer"), (0, 1, 2))
        self.assertEqual({op["tag"]["layer"] for op in grads}, {0, 1})
        # The side group made inside trirace.comm_role("expert") has that role from creation.
        side = [op for op in ops if op["role"] == "expert (annotated)"]
        self.assertEqual([op["func"] for op in side], ["AllReduce"])

    def test_a_killed_rank_makes_the_others_raise(self):
        proc, elapsed = run_job(DDP_WORKER, 4, ["--timeout", "20"], launch=["--env", "KILL_RANK=2",
                                                                              "--env", "KILL_STEP=2"])
        self.assertNotEqual(proc.returncode, 0)
        self.assertNotEqual(proc.returncode, 124, "the job hung:\n" + proc.stderr[-4000:])
        self.assertLess(elapsed, 120)
        for rank in (0, 1, 3):
            self.assertRegex(proc.stderr, r"\[rank %d\] RuntimeError: .*hostccl: \w+ on rank %d of 4 failed"
                             % (rank, rank))

    def test_bad_use_raises_a_clear_error(self):
        proc, _ = run_job(DDP_WORKER, 2, ["--timeout", "20"], env=job_env(BAD_USE="1"))
        self.assertEqual(proc.returncode, 0, proc.stderr[-4000:])
        report = result_of(proc)["bad_use"]
        expect = {
            "meta tensor": r"ValueError: hostccl: allreduce needs CPU tensors, got one on meta",
            "int16 (NCCL lacks it)": r"TypeError: hostccl: allreduce does not support dtype int16",
            "bool reduction": r"TypeError: hostccl: allreduce does not support dtype bool",
            "non-contiguous": r"ValueError: hostccl: allreduce needs contiguous tensors",
            "bitwise op": r"ValueError: hostccl: allreduce does not support reduce op BAND",
            "all_gather list size": r"ValueError: hostccl: allgather needs one output tensor per rank \(2\), got 1",
            "alltoall splits": r"ValueError: hostccl: alltoall_base: input split sizes \[3, 3\]",
            "send to self's group out of range": r"ValueError: hostccl: send: dst rank 5 is not in the group",
            "mismatched sizes": r"RuntimeError: hostccl: allreduce on rank 0 of 2 failed",
        }
        self.assertEqual(sorted(report), sorted(expect))
        for name, pattern in expect.items():
            self.assertRegex(report[name], pattern, name)


class TestMetrics(unittest.TestCase):
    """TRIRACE_METRICS_FILE: Prometheus text that Prometheus's own parser reads."""

    def test_each_rank_writes_a_file_the_prometheus_parser_reads(self):
        try:
            from prometheus_client.parser import text_string_to_metric_families
        except ImportError:
            self.skipTest("python3-prometheus-client is not installed (scripts/setup-deps.sh installs it)")
        with tempfile.TemporaryDirectory() as folder:
            pattern = os.path.join(folder, "trirace.%r.prom")
            proc, _ = run_job(DDP_WORKER, 2, [], mode="schedule", policy="trirace",
                              env=job_env(TRIRACE_METRICS_FILE=pattern, TRIRACE_METRICS_PERIOD_S="0.05"))
            self.assertEqual(proc.returncode, 0, proc.stderr[-4000:])
            self.assertEqual(sorted(os.listdir(folder)), ["trirace.0.prom", "trirace.1.prom"],
                             "one file per rank, no temporary file left")
            for rank in (0, 1):
                with open(os.path.join(folder, "trirace.%d.prom" % rank)) as f:
                    families = {fam.name: fam for fam in text_string_to_metric_families(f.read())}
                samples = {}
                for fam in families.values():
                    for sample in fam.samples:
                        self.assertEqual(sample.labels["rank"], str(rank))
                        samples.setdefault(sample.name, []).append(sample)
                info = samples["trirace_info"][0].labels
                self.assertEqual((info["mode"], info["policy"]), ("schedule", "trirace"))
                dense = [s for s in samples["trirace_ops_total"] if s.labels["class"] == "DENSE"]
                self.assertTrue(dense and dense[0].value >= 3, samples["trirace_ops_total"])
                self.assertEqual(families["trirace_ops"].type, "counter")
                dense_bytes = [s for s in samples["trirace_bytes_total"] if s.labels["class"] == "DENSE"]
                self.assertGreater(dense_bytes[0].value, 0)
                self.assertGreater(samples["trirace_gated_ops_total"][0].value, 0, "schedule mode gates the all-reduces")
                releases = sum(s.value for s in samples.get("trirace_gate_releases_total", []))
                self.assertEqual(releases, samples["trirace_gated_ops_total"][0].value, "each gate opened once")
                self.assertGreaterEqual(samples["trirace_metrics_writes_total"][0].value, 1)
                self.assertNotIn("trirace_fallback", samples, "nothing fell back")
                # The job's bytes on the NIC, from the net plugin's occupancy segment.
                self.assertTrue(samples.get("trirace_link_tx_bytes_total"), sorted(samples))


class TestProfiler(unittest.TestCase):
    """torch.profiler shows each hostccl op as gloo's and NCCL's groups show theirs."""

    def test_every_op_is_one_event_from_its_call_to_its_completion(self):
        proc, _ = run_job(os.path.join(HERE, "profile_worker.py"), 2, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr[-4000:])
        result = result_of(proc)
        self.assertEqual(result["events"], {"hostccl:all_reduce": 1, "hostccl:broadcast": 1, "hostccl:all_gather": 1,
                                            "hostccl:send": 1, "hostccl:reduce_scatter": 1, "hostccl:barrier": 1})
        # Rank 1 joined the all-reduce 0.2 s late: rank 0's event lasts until the op completed.
        self.assertGreaterEqual(result["all_reduce_us"], 0.9 * result["slow_peer_us"])


class TestHybrid(unittest.TestCase):
    """examples/pytorch/hybrid_train.py: 2 stages x 2 replicas on hostccl, with the sparse embedding."""

    def run_modes(self, schedule, modes, traces, **extra_env):
        results = {}
        for mode, policy in modes:
            label = (mode or "plain") + ("/" + policy if policy else "")
            trace = os.path.join(traces, "%s-%s.%%r.json" % (schedule, label.replace("/", "-")))
            proc, _ = run_job(HYBRID, 4, ["--stages", "2", "--schedule", schedule, "--sparse-embedding",
                                         "--steps", "3"], mode=mode, policy=policy,
                              env=job_env(TRIRACE_TRACE=trace, **(extra_env if mode else {})))
            self.assertEqual(proc.returncode, 0, "%s %s: %s" % (schedule, label, proc.stderr[-4000:]))
            results[label] = result_of(proc)
        base = results[next(iter(results))]
        self.assertTrue(base["replicas_agree"])
        for label, result in results.items():
            self.assertEqual(result["losses"], base["losses"], "%s %s" % (schedule, label))
            self.assertEqual(result["weights_checksum"], base["weights_checksum"], "%s %s" % (schedule, label))
        return results

    def test_1f1b_is_identical_in_every_mode_and_the_trace_shows_each_comm(self):
        with tempfile.TemporaryDirectory() as traces:
            self.run_modes("1f1b", MODES, traces)
            stage0 = trace_ops.load(os.path.join(traces, "1f1b-schedule-trirace.0.json"))
            stage1 = trace_ops.load(os.path.join(traces, "1f1b-schedule-trirace.2.json"))
        # DDP's buckets: DENSE on the data-parallel comm, tagged by auto_tag.
        for ops, stage in ((stage0, 0), (stage1, 1)):
            buckets = [op for op in ops if op["func"] == "AllReduce" and op["role"] == "data-parallel (annotated)"
                       and op["bytes"] > 4096]
            self.assertGreater(len(buckets), 3)
            for op in buckets:
                self.assertEqual(op["class"], "DENSE")
                self.assertEqual((op["tag"].get("stage"), op["tag"].get("phase")), (stage, 1))
                self.assertIsNotNone(op["tag"].get("layer"))
            self.assertGreater(len({op["tag"]["layer"] for op in buckets}), 1)
            # The pipeline's activations and gradients: P2P on the pipeline comm.
            p2p = [op for op in ops if op["role"] == "pipeline (annotated)" and op["func"] in ("Send", "Recv")]
            self.assertEqual(len(p2p), 3 * 4 * 2)  # steps x micro-batches x (send + recv)
            self.assertEqual({op["class"] for op in p2p}, {"P2P"})
            self.assertEqual({op["tag"].get("phase") for op in p2p}, {0, 1})
        # The sparse embedding's exchanges: SPARSE on stage 0's expert comm.
        sparse = [op for op in stage0 if op["role"] == "expert (annotated)" and op["func"] != "AllReduce"]
        self.assertGreater(len(sparse), 0)
        self.assertEqual({op["class"] for op in sparse}, {"SPARSE"})
        self.assertFalse([op for op in stage1 if op["role"] == "expert (annotated)"])

    def test_2bw_is_identical_without_the_shim_and_under_the_trirace_policy(self):
        with tempfile.TemporaryDirectory() as traces:
            self.run_modes("2bw", [(None, None), ("schedule", "trirace")], traces)

    def test_float_gradients_split_on_two_replicas_and_stay_identical(self):
        # Two replicas: the data-parallel comms have two ranks, where a float
        # sum is one commutative addition per element, so the shim splits the
        # buckets (4 KiB chunks here) and the bits must not move.
        with tempfile.TemporaryDirectory() as traces:
            self.run_modes("1f1b", [(None, None), ("schedule", "trirace")], traces, TRIRACE_CHUNK_BYTES="4096")
            ops = trace_ops.load(os.path.join(traces, "1f1b-schedule-trirace.0.json"))
        # A chunk is a record of its own (bytes: the chunk's); an op issued
        # whole must have been no larger than a chunk.
        grads = [op for op in ops if op["func"] == "AllReduce" and op["role"] == "data-parallel (annotated)"]
        self.assertGreater(len([op for op in grads if op["chunks"] > 1]), 3)
        self.assertEqual([op for op in grads if op["chunks"] == 1 and op["bytes"] > 4096], [])


if __name__ == "__main__":
    unittest.main()
