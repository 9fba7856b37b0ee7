#!/usr/bin/env python3
"""The small workload `cargo xtask e2e` runs: a few matmul, conv and attention
steps with an optimizer (so iteration-based capture has steps to count).

  workload.py --steps N [--profile-dir DIR]   # torch.profiler, rank-labelled traces
  workload.py --steps 10 --profile-dir DIR --cycles 2   # a trace per rank per profiling cycle
  workload.py --steps N --inference           # forward passes only: no optimizer step
  torchrun --nproc-per-node 2 workload.py --distributed ...   # NCCL/RCCL with 2+ GPUs, gloo otherwise
"""
import argparse
import os
import sys
import time

import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--profile-dir")
    p.add_argument("--cycles", type=int, default=1,
                   help="torch.profiler's schedule repeats this often (5 steps each: wait 1, warmup 1, active 3)")
    p.add_argument("--distributed", action="store_true")
    p.add_argument("--sleep", type=float, default=0.0, help="seconds between steps (for on-demand capture)")
    p.add_argument("--inference", action="store_true", help="forward passes only, under torch.no_grad()")
    a = p.parse_args()

    cuda = torch.cuda.is_available()
    rank, world = 0, 1
    if a.distributed:
        import torch.distributed as dist
        backend = "nccl" if cuda and torch.cuda.device_count() >= int(os.environ.get("WORLD_SIZE", "1")) else "gloo"
        dist.init_process_group(backend)
        rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", rank % max(torch.cuda.device_count(), 1)) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)

    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(16 * 32 * 32, 256)
    ).to(device)
    attn = torch.nn.MultiheadAttention(256, 8, batch_first=True).to(device)
    opt = torch.optim.SGD(list(model.parameters()) + list(attn.parameters()), lr=0.01)

    def infer():
        with torch.no_grad():
            h = model(torch.randn(8, 3, 32, 32, device=device)).unsqueeze(1)
            attn(h, h, h)
        if cuda:
            torch.cuda.synchronize()

    def step():
        if a.inference:
            return infer()
        x = torch.randn(8, 3, 32, 32, device=device)
        h = model(x).unsqueeze(1).repeat(1, 16, 1)
        out, _ = attn(h, h, h)
        loss = (out @ out.transpose(1, 2)).mean()
        loss.backward()
        if a.distributed:
            for prm in model.parameters():
                torch.distributed.all_reduce(prm.grad)
        opt.step()
        opt.zero_grad()
        if cuda:
            torch.cuda.synchronize()

    if a.profile_dir:
        from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
        handler = tensorboard_trace_handler(a.profile_dir, worker_name="rank%d" % rank)
        # --cycles cycles only: with the default repeat=0, a run longer than
        # its cycles writes one more, partial trace per rank.
        with profile(activities=acts, schedule=schedule(wait=1, warmup=1, active=3, repeat=a.cycles),
                     on_trace_ready=handler, record_shapes=True) as prof:
            for _ in range(a.steps):
                step()
                prof.step()
    else:
        for _ in range(a.steps):
            step()
            if a.sleep:
                time.sleep(a.sleep)
    if a.distributed:
        # Every rank done before any closes its connections: gloo aborts a
        # rank whose peer hangs up while it still reads ("Connection closed
        # by peer").
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()
        # PyTorch (2.15, gloo and torch.profiler on the CPU) now and then
        # aborts a rank while the interpreter tears down, after its work and
        # its trace are done ("terminate called without an active exception",
        # SIGABRT: about 1 run in 200 here, and torchrun then fails the job).
        # Nothing is left to do: end as a clean exit would, without the
        # teardown.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


if __name__ == "__main__":
    main()
