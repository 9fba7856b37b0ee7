#!/usr/bin/env python3
"""Capture the raw traces that `cargo xtask fixtures --gpu` turns into fixtures.

  capture_fixtures.py OUTDIR [--dry-run]

Runs workload.py (beside this file) under torch.profiler in one process and in
two (torchrun; NCCL/RCCL with 2+ GPUs, gloo otherwise) and, on AMD with
rocprofv3, under rocprofv3 --output-format json. Writes the untrimmed traces
flat into OUTDIR with their fixture names, and OUTDIR/node.json: the GPU,
driver, CUDA/ROCm, PyTorch and Python versions, each capture's command and
files, and why a capture was skipped. Needs nothing but Python and PyTorch,
so it also runs on a node without cargo; then
`cargo xtask fixtures --gpu --from OUTDIR` trims, checks and commits them.
Exit status: 0 when every runnable capture succeeded (or --dry-run), 1 when a
capture failed, 2 when none can run here.
"""
import datetime
import glob
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "workload.py")


def first_line(argv):
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    return next((l.strip() for l in out.splitlines() if l.strip()), "")


def node():
    info = {"vendor": "unknown", "gpu": "", "gpu_count": 0, "driver": "", "runtime": "",
            "torch": "", "torch_gpu": False, "python": platform.python_version(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
            "rocprofv3": shutil.which("rocprofv3") is not None}
    try:
        import torch
        info["torch"] = torch.__version__
        info["torch_gpu"] = torch.cuda.is_available()
        info["gpu_count"] = torch.cuda.device_count()
        if torch.version.hip:
            info["vendor"], info["runtime"] = "amd", "ROCm/HIP " + torch.version.hip
        elif torch.version.cuda:
            info["vendor"], info["runtime"] = "nvidia", "CUDA " + torch.version.cuda
        if info["torch_gpu"]:
            info["gpu"] = torch.cuda.get_device_name(0)
    except Exception as e:  # no torch, or a broken one: say so in the plan
        info["torch_error"] = "%s: %s" % (type(e).__name__, e)
    if info["vendor"] == "nvidia" and shutil.which("nvidia-smi"):
        q = first_line(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
        if "," in q:
            name, driver = (s.strip() for s in q.split(",", 1))
            info["gpu"], info["driver"] = name or info["gpu"], driver
    elif info["vendor"] == "amd":
        try:
            with open("/opt/rocm/.info/version") as f:
                info["driver"] = "ROCm " + f.read().strip()
        except OSError:
            pass
    return info


def plan(info):
    need = []
    if not info["torch_gpu"]:
        need.append("PyTorch seeing a GPU")
    single_ddp = "needs " + ", ".join(need) if need else None
    rp = list(need)
    if info["vendor"] != "amd":
        rp.append("an AMD GPU")
    if not info["rocprofv3"]:
        rp.append("rocprofv3")
    py = sys.executable
    return [
        {"name": "single", "skip": single_ddp,
         "argv": [py, WORKLOAD, "--steps", "6", "--profile-dir", "{dir}"],
         "files": {"rank0.": "single.pt.trace.json"}},  # no rank in its name: beside the ddp ranks it is no rank 0
        {"name": "ddp", "skip": single_ddp,
         "argv": [py, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", WORKLOAD,
                  "--distributed", "--steps", "6", "--profile-dir", "{dir}"],
         "files": {"rank0.": "ddp_rank0.pt.trace.json", "rank1.": "ddp_rank1.pt.trace.json"}},
        {"name": "rocprofv3", "skip": "needs " + ", ".join(rp) if rp else None,
         "argv": ["rocprofv3", "--kernel-trace", "--hip-trace", "--output-format", "json", "-d", "{dir}",
                  "-o", "fixture", "--", py, WORKLOAD, "--steps", "3"],
         "files": {"fixture": "rocprofv3_results.json"}},
    ]


def newest(dir, prefix):
    found = sorted(p for p in glob.glob(os.path.join(dir, "**", "*.json"), recursive=True)
                   if os.path.basename(p).startswith(prefix))
    return found[-1] if found else None


def shown(argv):
    """The command as provenance shows it: the workload by its repo path."""
    return " ".join("xtask/e2e/workload.py" if a == WORKLOAD else
                    "python3" if a == sys.executable else a.replace("{dir}", "$DIR") for a in argv)


def main():
    args = [a for a in sys.argv[1:] if a != "--dry-run"]
    dry = "--dry-run" in sys.argv[1:]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    out = os.path.abspath(args[0])
    info = node()
    captures = plan(info)
    print("node: " + json.dumps(info), file=sys.stderr)
    for c in captures:
        print("  %-8s %-10s %s" % ("skip" if c["skip"] else "capture", c["name"], c["skip"] or shown(c["argv"])),
              file=sys.stderr)
    info["captures"], info["skipped"] = [], []
    for c in captures:
        if c["skip"]:
            info["skipped"].append({"name": c["name"], "why": c["skip"]})
    if dry:
        print(json.dumps({"node": info, "plan": [{"name": c["name"], "skip": c["skip"], "command": shown(c["argv"])}
                                                 for c in captures]}, indent=1))
        return 0
    runnable = [c for c in captures if not c["skip"]]
    if not runnable:
        print("error: no capture can run here: " + "; ".join(s["why"] for s in info["skipped"]), file=sys.stderr)
        return 2
    os.makedirs(out, exist_ok=True)
    failed = False
    for c in runnable:
        work = tempfile.mkdtemp(prefix="capture-%s." % c["name"])
        argv = [a.replace("{dir}", work) for a in c["argv"]]
        print("$ " + " ".join(argv), file=sys.stderr, flush=True)
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        r = subprocess.run(argv, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            print("error: capture %s failed (exit %d):\n%s" % (c["name"], r.returncode,
                  "\n".join(r.stdout.splitlines()[-40:])), file=sys.stderr)
            failed = True
            continue
        files = {}
        for prefix, name in c["files"].items():
            src = newest(work, prefix)
            if src is None:
                print("error: capture %s wrote no %s*.json" % (c["name"], prefix), file=sys.stderr)
                failed = True
                continue
            shutil.copyfile(src, os.path.join(out, name))
            files[name] = os.path.getsize(src)
        info["captures"].append({"name": c["name"], "command": shown(c["argv"]),
                                 "files": files})
        shutil.rmtree(work, ignore_errors=True)
    with open(os.path.join(out, "node.json"), "w") as f:
        json.dump(info, f, indent=1)
        f.write("\n")
    print("wrote %s" % os.path.join(out, "node.json"), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
