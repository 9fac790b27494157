"""The recipes of docs/recipes.md, run as the page shows them (ctest: Recipes.*).

Every code block of the page that follows a `<!-- test: NAME -->` line is
read from the page and run by bash, unchanged, in a fresh folder that holds
train.py (a copy of ddp_worker.py: DDP over the hostccl backend on CPUs;
rank 0 prints RESULT with the losses and a checksum of the weights) and
trirace_task.sh (a link to examples/slurm/trirace_task.sh). The environment
is what the page's setup leaves: TriRace's bin/ (the build tree's) first on
PATH, the source's python/ on PYTHONPATH, and a python3 that imports torch
(this interpreter, which tests/python/torch_python.sh chose) ahead of any
other. Nothing TriRace sets (LD_PRELOAD, NCCL_NET*, TRIRACE_*) is inherited.

Each job must finish, give the losses and weights of the same job without
TriRace bit for bit, and show the shim in every rank: a trace per rank
(TRIRACE_TRACE in the recipe) whose data-parallel all-reduces are there,
DENSE, on the comm DDP's group declared, and released by the scheduler
(schedule mode) unless the recipe says the shim only observes.

Slurm is emulated by fake_slurm.py (srun, scontrol on PATH) with the
variables sbatch sets in a batch script's environment: 2 nodes x 2 tasks,
all on this machine.

torchrun: torch 1.13 on Python 3.11 cannot start workers without
--redirects/--tee (docs/pytorch.md); on such an install the jobs get
PET_REDIRECTS=1 PET_TEE=1, torchrun's variables for those flags, so the
page's commands stay as they are. torchrun's port comes from
PET_MASTER_PORT (a free one), so that tests may run side by side.
"""

import glob
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, "..", ".."))
BUILD = os.path.abspath(os.environ.get("TRIRACE_BUILD_DIR", os.path.join(SOURCE, "build")))
DOC = os.path.join(SOURCE, "docs", "recipes.md")
TASK_SCRIPT = os.path.join(SOURCE, "examples", "slurm", "trirace_task.sh")
SHIM = os.path.join(BUILD, "lib", "libtrirace.so")
PLUGIN = os.path.join(BUILD, "lib", "libnccl-net-trirace.so")
LAUNCH = os.path.join(HERE, "launch_ranks.py")
DDP_WORKER = os.path.join(HERE, "ddp_worker.py")
FAKE_SLURM = os.path.join(HERE, "fake_slurm.py")

sys.path.insert(0, HERE)
import trace_ops  # noqa: E402

# What a job must not inherit from the shell that runs the tests.
FOREIGN = ("LD_PRELOAD", "PYTHONPATH", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
           "MASTER_PORT", "CUDA_DEVICE_MAX_CONNECTIONS")
FOREIGN_PREFIXES = ("TRIRACE_", "NCCL_", "SLURM_", "PET_", "TORCHELASTIC_")

RESULT = re.compile(r"^(?:\[default\d+\]:)?RESULT (\{.*\})$")


def doc_blocks():
    """{name: code} for each code block of the page after `<!-- test: name -->`."""
    with open(DOC) as f:
        lines = f.read().splitlines()
    blocks = {}
    for i, line in enumerate(lines):
        marker = re.fullmatch(r"<!-- test: ([\w-]+) -->", line.strip())
        if not marker:
            continue
        start = i + 1
        while start < len(lines) and not lines[start].strip():
            start += 1
        if start == len(lines) or not lines[start].startswith("```"):
            raise AssertionError("%s:%d: `%s` marks no code block" % (DOC, i + 1, line.strip()))
        end = start + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        if end == len(lines):
            raise AssertionError("%s:%d: the code block is not closed" % (DOC, start + 1))
        blocks[marker.group(1)] = "\n".join(lines[start + 1:end]) + "\n"
    return blocks


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def slurm_job_id():
    """A job id whose port (20000 + id % 10000, trirace_task.sh's) is free now."""
    for _ in range(100):
        job = random.randrange(10000, 10000000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", 20000 + job % 10000))
                return job
            except OSError:
                continue
    raise AssertionError("no free port in 20000..29999")


def torchrun_needs_tee():
    """True where torchrun cannot start a worker with its default --redirects 0 --tee 0."""
    from torch.distributed.elastic.multiprocessing.api import Std
    try:
        return Std.from_str("0") is None
    except Exception:  # another torch: the variables are harmless anyway
        return False


def write_script(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)


class Folder:
    """A job's folder: train.py, trirace_task.sh, bin/ (python3, torchrun, srun, scontrol)."""

    def __init__(self, root, name):
        self.path = os.path.join(root, name)
        self.bin = os.path.join(self.path, ".bin")
        os.makedirs(self.bin)
        shutil.copy(DDP_WORKER, os.path.join(self.path, "train.py"))
        os.symlink(TASK_SCRIPT, os.path.join(self.path, "trirace_task.sh"))
        os.symlink(sys.executable, os.path.join(self.bin, "python3"))
        torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
        if os.path.isfile(torchrun):
            os.symlink(torchrun, os.path.join(self.bin, "torchrun"))
        else:  # the same program
            write_script(os.path.join(self.bin, "torchrun"),
                         "#!/bin/sh\nexec '%s' -m torch.distributed.run \"$@\"\n" % sys.executable)
        for tool in ("srun", "scontrol"):
            write_script(os.path.join(self.bin, tool),
                         "#!/bin/sh\nexec '%s' '%s' %s \"$@\"\n" % (sys.executable, FAKE_SLURM, tool))

    def env(self, **extra):
        env = {k: v for k, v in os.environ.items() if k not in FOREIGN and not k.startswith(FOREIGN_PREFIXES)}
        env["PATH"] = os.pathsep.join([self.bin, os.path.join(BUILD, "bin"), os.environ.get("PATH", "/usr/bin:/bin")])
        env["PYTHONPATH"] = os.path.join(SOURCE, "python")
        # hostccl's libnccl.so.2 of the build under test (docs/pytorch.md: the
        # backend's first choice; a build tree elsewhere than <source>/build needs it).
        env["TRIRACE_HOSTCCL_LIBRARY"] = os.path.join(BUILD, "hostccl", "lib", "libnccl.so.2")
        env["PET_MASTER_PORT"] = str(free_port())
        if TORCHRUN_NEEDS_TEE:
            env.update(PET_REDIRECTS="1", PET_TEE="1", PET_LOG_DIR=os.path.join(self.path, ".torchrun-logs"))
        env.update(extra)
        return env

    def run(self, code, env, timeout=150):
        """Runs `code` with bash in this folder; returns (CompletedProcess, seconds)."""
        script = os.path.join(self.path, ".recipe.sh")
        write_script(script, code)
        started = time.monotonic()
        proc = subprocess.Popen(["bash", script], cwd=self.path, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            raise AssertionError("the recipe ran past %d s:\n%s\nstderr (tail):\n%s" % (timeout, code, err[-4000:]))
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), time.monotonic() - started

    def traces(self):
        """{rank: path} of the traces the ranks wrote (trirace.<host>.<rank>.json)."""
        found = {}
        for path in glob.glob(os.path.join(self.path, "trirace.*.json")):
            rank = re.search(r"\.(\d+)\.json$", path)
            if rank:
                found[int(rank.group(1))] = path
        return found


TORCHRUN_NEEDS_TEE = torchrun_needs_tee()


class RecipeCase(unittest.TestCase):
    """Runs the page's blocks and checks their jobs."""

    @classmethod
    def setUpClass(cls):
        cls.blocks = doc_blocks()
        cls.root = tempfile.mkdtemp(prefix="trirace-recipes.")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, ignore_errors=True)

    def block(self, name):
        self.assertIn(name, self.blocks, "docs/recipes.md has no block marked `<!-- test: %s -->`" % name)
        return self.blocks[name]

    def result_of(self, proc, label):
        lines = [m.group(1) for m in map(RESULT.match, proc.stdout.splitlines()) if m]
        self.assertEqual(len(lines), 1, "%s: expected one RESULT line\nstdout:\n%s\nstderr (tail):\n%s"
                         % (label, proc.stdout[-4000:], proc.stderr[-4000:]))
        return json.loads(lines[0])

    def run_job(self, folder, code, label, **extra_env):
        proc, seconds = folder.run(code, folder.env(**extra_env))
        print("%s: %.1f s" % (label, seconds), file=sys.stderr)
        self.assertEqual(proc.returncode, 0, "%s failed (%d):\n%s\nstderr (tail):\n%s"
                         % (label, proc.returncode, code, proc.stderr[-6000:]))
        return proc, self.result_of(proc, label)

    def check_reference(self, result):
        """The job without TriRace: the shim absent, DDP agrees with one process."""
        self.assertFalse(result["trirace_loaded"])
        self.assertLessEqual(result["max_abs_diff_vs_single"], 1e-6)
        for got, want in zip(result["losses"], result["reference_losses"]):
            self.assertAlmostEqual(got, want, delta=1e-6 * abs(want))

    def check_under_trirace(self, folder, result, reference, ranks, gated, label):
        """Bit-identical to the reference, and the shim in each rank, as its trace shows."""
        self.assertTrue(result["trirace_loaded"], label)
        self.assertEqual(result["losses"], reference["losses"], label)
        self.assertEqual(result["checksum"], reference["checksum"], label)
        traces = folder.traces()
        self.assertEqual(sorted(traces), list(range(ranks)), "%s: traces %s" % (label, sorted(traces)))
        for rank, path in sorted(traces.items()):
            with open(path) as f:
                raw = json.load(f)
            self.assertEqual(raw["otherData"].get("mode"), "schedule", "%s rank %d" % (label, rank))
            grads = [op for op in trace_ops.load(path) if op["func"] == "AllReduce" and op["bytes"] > 4096]
            self.assertGreaterEqual(len(grads), 5, "%s rank %d: %s" % (label, rank, grads))
            for op in grads:
                self.assertEqual((op["class"], op["role"]), ("DENSE", "data-parallel (annotated)"),
                                 "%s rank %d" % (label, rank))
            released = [e for e in raw["traceEvents"] if e.get("cat") == "op" and "release" in e.get("args", {})]
            if gated:
                self.assertTrue(released, "%s rank %d: schedule mode released no op" % (label, rank))
            else:
                self.assertEqual(released, [], "%s rank %d: ops were gated" % (label, rank))


class TestTorchrun(RecipeCase):
    """torchrun --nproc_per_node=2: without TriRace, under `trirace run`, with LD_PRELOAD."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.reference = None

    def reference_result(self):
        if type(self).reference is None:
            folder = Folder(self.root, "reference")
            _, result = self.run_job(folder, self.block("torchrun-reference"), "torchrun without TriRace")
            self.check_reference(result)
            self.assertEqual(folder.traces(), {})
            type(self).reference = result
        return type(self).reference

    def test_trirace_run(self):
        reference = self.reference_result()
        folder = Folder(self.root, "trirace-run")
        proc, result = self.run_job(folder, self.block("torchrun"), "trirace run -- torchrun")
        self.assertRegex(proc.stderr, r"(?m)^trirace run: net: (tcp|native|wrap) \(")
        self.check_under_trirace(folder, result, reference, 2, True, "trirace run -- torchrun")

    def test_ld_preload(self):
        reference = self.reference_result()
        folder = Folder(self.root, "ld-preload")
        proc, result = self.run_job(folder, self.block("torchrun-preload"), "LD_PRELOAD torchrun")
        self.assertNotIn("trirace run:", proc.stderr)
        self.check_under_trirace(folder, result, reference, 2, True, "LD_PRELOAD torchrun")


class TestSlurm(RecipeCase):
    """The batch scripts of the Slurm recipe under emulated srun: 2 nodes x 2 tasks."""

    NODES, PER_NODE = 2, 2

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.reference = None

    def batch_env(self, folder, job, **extra):
        """What sbatch puts in the batch script's environment (the submitting shell's, plus SLURM_*)."""
        return folder.env(SLURM_JOB_ID=str(job), SLURM_JOBID=str(job), SLURM_NNODES=str(self.NODES),
                          SLURM_JOB_NUM_NODES=str(self.NODES), SLURM_NTASKS_PER_NODE=str(self.PER_NODE),
                          SLURM_NTASKS=str(self.NODES * self.PER_NODE), SLURM_NPROCS=str(self.NODES * self.PER_NODE),
                          SLURM_JOB_NODELIST="node[0-%d]" % (self.NODES - 1), SLURM_SUBMIT_DIR=folder.path,
                          SLURM_CPUS_ON_NODE="2", **extra)

    def reference_result(self):
        """The same 4 ranks without TriRace (started as launch_ranks.py does, no Slurm)."""
        if type(self).reference is None:
            folder = Folder(self.root, "reference")
            env = folder.env()
            proc = subprocess.run([sys.executable, LAUNCH, "--nproc", str(self.NODES * self.PER_NODE), "--timeout",
                                   "120", "train.py"], cwd=folder.path, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, timeout=150)
            self.assertEqual(proc.returncode, 0, proc.stderr[-4000:])
            result = self.result_of(proc, "4 ranks without TriRace")
            self.check_reference(result)
            type(self).reference = result
        return type(self).reference

    def run_batch(self, name, label):
        reference = self.reference_result()
        folder = Folder(self.root, name)
        job = slurm_job_id()
        env = self.batch_env(folder, job)
        proc, seconds = folder.run(self.block(name), env)
        print("%s: %.1f s" % (label, seconds), file=sys.stderr)
        self.assertEqual(proc.returncode, 0, "%s failed (%d)\nstderr (tail):\n%s"
                         % (label, proc.returncode, proc.stderr[-6000:]))
        result = self.result_of(proc, label)
        self.check_under_trirace(folder, result, reference, self.NODES * self.PER_NODE, True, label)
        return proc

    def test_task_environment(self):
        """trirace_task.sh gives each task torchrun's variables and what `trirace run` sets."""
        folder = Folder(self.root, "task-env")
        job = slurm_job_id()
        no_rdma = os.path.join(folder.path, ".sysfs")  # no RDMA port: `trirace run` must choose tcp
        os.makedirs(no_rdma)
        env = self.batch_env(folder, job, TRIRACE_SYSFS_ROOT=no_rdma)
        proc, _ = folder.run("srun --label ./trirace_task.sh --mode schedule --policy trirace -- env\n", env, 60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        tasks = {}
        for line in proc.stdout.splitlines():
            task, _, rest = line.partition(": ")
            key, sep, value = rest.partition("=")
            if sep:
                tasks.setdefault(int(task), {})[key] = value
        self.assertEqual(sorted(tasks), list(range(self.NODES * self.PER_NODE)))
        for task, env in tasks.items():
            want = {"RANK": str(task), "WORLD_SIZE": str(self.NODES * self.PER_NODE),
                    "LOCAL_RANK": str(task % self.PER_NODE), "LOCAL_WORLD_SIZE": str(self.PER_NODE),
                    "MASTER_ADDR": "localhost", "MASTER_PORT": str(20000 + job % 10000),
                    "TRIRACE_MODE": "schedule", "TRIRACE_POLICY": "trirace"}
            self.assertEqual({k: env.get(k) for k in want}, want, "task %d" % task)
            preload = env.get("LD_PRELOAD", "").split(":")
            self.assertEqual(os.path.realpath(preload[0]), os.path.realpath(SHIM), "task %d" % task)
            self.assertEqual(os.path.realpath(env.get("NCCL_NET_PLUGIN", "")), os.path.realpath(PLUGIN),
                             "task %d" % task)
        self.assertEqual(len(re.findall(r"(?m)^\d+: trirace run: net: tcp \(", proc.stderr)), len(tasks), proc.stderr)
        # A user's MASTER_ADDR / MASTER_PORT stay; outside srun the script refuses.
        env = self.batch_env(folder, job, TRIRACE_SYSFS_ROOT=no_rdma, MASTER_ADDR="10.1.2.3", MASTER_PORT="1234")
        proc, _ = folder.run("srun --label ./trirace_task.sh -- env\n", env, 60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(len(re.findall(r"(?m)^\d+: MASTER_ADDR=10\.1\.2\.3$", proc.stdout)), len(tasks))
        self.assertEqual(len(re.findall(r"(?m)^\d+: MASTER_PORT=1234$", proc.stdout)), len(tasks))
        proc, _ = folder.run("./trirace_task.sh -- env\n", folder.env(), 60)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("SLURM_PROCID is unset", proc.stderr)

    def test_batch_script_with_trirace_task(self):
        proc = self.run_batch("slurm", "Slurm, trirace_task.sh")
        self.assertEqual(len(re.findall(r"(?m)^trirace run: net: ", proc.stderr)), self.NODES * self.PER_NODE)

    def test_batch_script_with_srun_export(self):
        proc = self.run_batch("slurm-export", "Slurm, srun --export")
        self.assertNotIn("trirace run:", proc.stderr)


class TestMegatronSettings(RecipeCase):
    """The Megatron-LM recipe's variables on the torchrun recipe: observe only, trafficClass per role."""

    def test_observes_and_sets_the_traffic_class_of_roles_declared_at_creation(self):
        reference_folder = Folder(self.root, "reference")
        _, reference = self.run_job(reference_folder, self.block("torchrun-reference"), "torchrun without TriRace")
        self.check_reference(reference)
        folder = Folder(self.root, "megatron")
        code = self.block("megatron-env") + self.block("torchrun")
        proc, result = self.run_job(folder, code, "Megatron's variables", TRIRACE_DEBUG="INFO")
        self.check_under_trirace(folder, result, reference, 2, False, "Megatron's variables")
        # The warning the page quotes, once per rank.
        warning = (r"TRIRACE_MODE=schedule: CUDA_DEVICE_MAX_CONNECTIONS=1 gives the GPU one hardware queue, "
                   r"[^\n]*; running in observe mode \(no op is gated\)")
        self.assertEqual(len(re.findall(warning, proc.stderr)), 2, proc.stderr[-6000:])
        # ddp_worker.py: the default group's comm has no role at creation (it
        # is declared later), the side group is made inside comm_role("expert").
        comms = re.findall(r"comm \d+ id \w+: rank (\d) of 2, [^\n]*", proc.stderr)
        self.assertEqual(len(comms), 4, proc.stderr[-6000:])
        for rank in ("0", "1"):
            lines = [m.group(0) for m in re.finditer(r"comm \d+ id \w+: rank %s of 2, [^\n]*" % rank, proc.stderr)]
            self.assertEqual(len(lines), 2, lines)
            self.assertNotIn("trafficClass", lines[0])
            self.assertRegex(lines[1], r"; role expert, trafficClass 0$")


if __name__ == "__main__":
    unittest.main()
