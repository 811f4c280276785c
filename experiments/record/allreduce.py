"""All-reduce bus bandwidth between the GPUs of one host (torch.distributed + NCCL), nccl-tests' way.

    torchrun --standalone --nproc_per_node N -m experiments.record.allreduce --out results/h200/allreduce/<run>
             [--min-mib 1] [--max-mib 1024] [--iters 20] [--warmup 5] [--label nccl-env]

For each message size (powers of two from --min-mib to --max-mib, bf16 elements) it times --iters all-reduces
(sum) after --warmup, CUDA events on rank 0, a barrier before each size. As nccl-tests' all_reduce_perf reports:
  algbw = bytes / time,   busbw = algbw x 2 (n - 1) / n
(busbw is what the links carry, comparable across GPU counts; n = the number of ranks).
Rank 0 writes OUT/allreduce.json (sizes, times, algbw, busbw, the NCCL_* variables set, NCCL's version) and
env.json (the host: GPUs, topology, NVLink links). Run it with NCCL_DEBUG=INFO and keep its output: NCCL prints
which variables it read there (experiments/allreduce_gpu.sh does both runs, with and without seed 000's variables).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from pathlib import Path

from experiments.base import runfiles
from experiments.base.runfolder import Allreduce
from experiments.base.runfolder import AllreduceSize as Size


def busbw(algbw: float, ranks: int) -> float:
    """nccl-tests' bus bandwidth of an all-reduce: algbw x 2(n-1)/n (what each link carries)."""
    return algbw * 2 * (ranks - 1) / ranks


def sizes_mib(lo: float, hi: float) -> list[float]:
    out, s = [], lo
    while s <= hi:
        out.append(s)
        s *= 2
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.record.allreduce", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--min-mib", type=float, default=1)
    ap.add_argument("--max-mib", type=float, default=1024)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--label", default="")
    a = ap.parse_args(argv)

    import torch
    import torch.distributed as dist

    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    rank, n = dist.get_rank(), dist.get_world_size()
    rows = []
    for mib in sizes_mib(a.min_mib, a.max_mib):
        nbytes = int(mib * 2**20)
        x = torch.ones(nbytes // 2, dtype=torch.bfloat16, device="cuda")
        for _ in range(a.warmup):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        dist.barrier()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(a.iters):
            dist.all_reduce(x)
        end.record()
        torch.cuda.synchronize()
        t = start.elapsed_time(end) / 1000 / a.iters
        alg = nbytes / t / 1e9
        rows.append({Size.BYTES: nbytes, Size.MIB: mib, Size.TIME_US: round(t * 1e6, 2),
                     Size.ALGBW_GBS: round(alg, 3), Size.BUSBW_GBS: round(busbw(alg, n), 3)})
        if rank == 0:
            print(f"{mib:8.0f} MiB  {t * 1e6:10.1f} us  algbw {alg:7.1f} GB/s  busbw {busbw(alg, n):7.1f} GB/s",
                  flush=True)
        del x
    if rank == 0:
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        nccl_version = ".".join(map(str, torch.cuda.nccl.version()))
        env_vars = {k: v for k, v in os.environ.items() if k.startswith("NCCL_")}
        (out / runfiles.ALLREDUCE_JSON).write_text(json.dumps({
            Allreduce.RANKS: n, Allreduce.DTYPE: "bfloat16", Allreduce.ITERS: a.iters, Allreduce.WARMUP: a.warmup,
            Allreduce.LABEL: a.label, Allreduce.NCCL_VERSION: nccl_version, Allreduce.TORCH: torch.__version__,
            Allreduce.NCCL_ENV: env_vars,
            Allreduce.FORMULA: "algbw = bytes / time; busbw = algbw * 2 (n - 1) / n (nccl-tests)",
            Allreduce.FINISHED: dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            Allreduce.SIZES: rows}, indent=2))
        from experiments.record import gpu

        (out / runfiles.ENV_JSON).write_text(json.dumps(gpu.environment(os.environ.get("HW", "h200")), indent=2,
                                                 default=str))
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
