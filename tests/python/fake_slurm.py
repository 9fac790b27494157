"""Stands in for Slurm's srun and scontrol on one machine, for test_recipes.py.

    fake_slurm.py srun [--kill-on-bad-exit[=1]] [--label] [--export=ALL,K=V,...]
                       [--OPTION=VALUE]... CMD [ARGS...]
    fake_slurm.py scontrol show hostnames NODELIST

The job's shape comes from the variables sbatch would have set in the batch
script's environment: SLURM_JOB_ID, SLURM_NNODES and SLURM_NTASKS_PER_NODE
(SLURM_NTASKS, when set, must equal their product). srun starts
SLURM_NNODES x SLURM_NTASKS_PER_NODE tasks of CMD, block-distributed (tasks
0..k-1 on node 0, ...), each with the variables srun gives a task:
SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID, SLURM_NTASKS, SLURM_NPROCS,
SLURM_NNODES, SLURM_STEP_ID, SLURM_STEP_NUM_TASKS, SLURM_STEP_NUM_NODES,
SLURM_TASKS_PER_NODE and SLURM_STEP_TASKS_PER_NODE ("k(xN)"),
SLURM_STEP_NODELIST and SLURMD_NODENAME. --export=ALL,K=V,... adds K=V to
each task's environment (values cannot hold commas, as with srun); other
--OPTION=VALUE options are accepted and ignored. CMD is executed directly, as
srun does (no shell). Every task's output goes to srun's stdout / stderr
(prefixed "N: " with --label). srun exits with the largest task status; with
--kill-on-bad-exit, a task that fails kills the others.

Every emulated node is this machine: scontrol show hostnames prints
"localhost" once per node of the job (SLURM_NNODES).
"""

import os
import signal
import subprocess
import sys
import threading
import time


def usage(message):
    print("fake_slurm.py: %s" % message, file=sys.stderr)
    return 2


def need_int(name):
    value = os.environ.get(name, "")
    if not value.isdigit() or int(value) < 1:
        raise SystemExit(usage("%s must be a positive integer in the batch environment, got %r" % (name, value)))
    return int(value)


def pump(stream, sink, prefix):
    for line in iter(stream.readline, b""):
        sink.buffer.write(prefix + line)
        sink.flush()


def srun(args):
    kill_on_bad_exit, label, exports = False, False, {}
    while args and args[0].startswith("-"):
        option = args.pop(0)
        if option == "--":
            break
        name, _, value = option.partition("=")
        if name == "--kill-on-bad-exit":
            kill_on_bad_exit = value in ("", "1")
        elif option in ("-l", "--label"):
            label = True
        elif name == "--export":
            items = value.split(",")
            if items[0] != "ALL":
                return usage("only --export=ALL,... is emulated, got %r" % option)
            for item in items[1:]:
                key, sep, val = item.partition("=")
                if not sep:
                    return usage("--export item %r is not K=V" % item)
                exports[key] = val
        elif not name.startswith("--") or not value:
            return usage("unknown srun option %r (only --NAME=VALUE options are accepted)" % option)
    if not args:
        return usage("srun: no command")
    nodes = need_int("SLURM_NNODES")
    per_node = need_int("SLURM_NTASKS_PER_NODE")
    ntasks = nodes * per_node
    if os.environ.get("SLURM_NTASKS", str(ntasks)) != str(ntasks):
        return usage("SLURM_NTASKS=%s is not SLURM_NNODES x SLURM_NTASKS_PER_NODE" % os.environ["SLURM_NTASKS"])
    layout = "%d(x%d)" % (per_node, nodes) if nodes > 1 else str(per_node)
    base = dict(os.environ, SLURM_NTASKS=str(ntasks), SLURM_NPROCS=str(ntasks), SLURM_NNODES=str(nodes),
                SLURM_STEP_ID="0", SLURM_STEP_NUM_TASKS=str(ntasks), SLURM_STEP_NUM_NODES=str(nodes),
                SLURM_TASKS_PER_NODE=layout, SLURM_STEP_TASKS_PER_NODE=layout,
                SLURM_STEP_NODELIST=os.environ.get("SLURM_JOB_NODELIST", "localhost"))
    base.update(exports)
    procs, pumps = [], []
    for task in range(ntasks):
        env = dict(base, SLURM_PROCID=str(task), SLURM_LOCALID=str(task % per_node),
                   SLURM_NODEID=str(task // per_node), SLURMD_NODENAME="node%d" % (task // per_node))
        try:
            proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as error:
            print("srun: error: %s: %s" % (args[0], error), file=sys.stderr)
            for p in procs:
                p.kill()
            return 2
        procs.append(proc)
        prefix = b"%d: " % task if label else b""
        for stream, sink in ((proc.stdout, sys.stdout), (proc.stderr, sys.stderr)):
            t = threading.Thread(target=pump, args=(stream, sink, prefix), daemon=True)
            t.start()
            pumps.append(t)

    def stop(signum, frame):
        for p in procs:
            if p.poll() is None:
                p.kill()
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while any(p.poll() is None for p in procs):
        if kill_on_bad_exit and any(p.returncode not in (None, 0) for p in procs):
            print("srun: error: a task failed; killing the others (--kill-on-bad-exit)", file=sys.stderr)
            for p in procs:
                if p.poll() is None:
                    p.kill()
            break
        time.sleep(0.05)
    status = 0
    for p in procs:
        p.wait()
        code = p.returncode if p.returncode >= 0 else 128 - p.returncode
        status = max(status, code)
    for t in pumps:
        t.join(timeout=5)
    return status


def scontrol(args):
    if len(args) != 3 or args[:2] != ["show", "hostnames"]:
        return usage("only `scontrol show hostnames NODELIST` is emulated, got %r" % args)
    for _ in range(need_int("SLURM_NNODES")):
        print("localhost")
    return 0


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("srun", "scontrol"):
        return usage("first argument: srun or scontrol")
    return (srun if sys.argv[1] == "srun" else scontrol)(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
