"""What one attention call costs the host when the packed row's length changes every step.

    python -m experiments.probes.sdpa_shapes [--configs default,no-cudnn,cudnn-avoid-recompile] [--new 16] [--repeat 8]
                                      [--out FILE]

The best recipe packs a step's 16 samples into one row (padding-free) whose length changes every step (1,062-3,007
tokens over the 94 steps of the epoch, 1,410-2,528 between the 10th and 90th percentile), and SDPA gets a block-diagonal
causal mask. On the H200 hosts torch picks cuDNN's attention for it
(`cudnn_generated_fort_native_sdpa_sm90_flash_*` in every profile of the recipe), and cuDNN builds an execution
graph per new shape: tens of milliseconds of host time (pytorch#155958 added TORCH_CUDNN_SDPA_AVOID_RECOMPILE for
it; flashinfer measured 55-70 ms per plan build). The host-stack samples of fast-best put 15-16 % of its step inside
`sdpa_attention_forward`, about 3 ms per call of 28 per step where a dispatch is tens of microseconds.

Each config runs in its own process (the environment variable must be set before torch is imported, the backend
flags are process-wide): a Qwen2.5-7B attention shape (28 query heads, 128 wide, bf16; GQA's 4 key/value heads
repeated as transformers' repeat_kv does), forward and backward at NEW distinct lengths, then REPEAT times at one
length already seen. Per config: the host milliseconds of the forward call and of the backward call (until each
returns, before any sync), for new and for repeated lengths (medians), the synced total, and the attention kernels
that ran. Needs CUDA for the real question; on a CPU it runs the math backend (the tests use that).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

CONFIGS = {
    "default": {"env": {}, "disable": []},
    "no-cudnn": {"env": {}, "disable": ["cudnn"]},
    "cudnn-avoid-recompile": {"env": {"TORCH_CUDNN_SDPA_AVOID_RECOMPILE": "1"}, "disable": []},
}
ATTENTION_KERNEL_MARKS = ("sdpa", "fmha", "flash", "attention", "attn", "cudnn")


def doc_lengths(total: int, docs: int, rng: random.Random) -> list[int]:
    """TOTAL tokens cut into DOCS samples of at least one token each (a packed row)."""
    cuts = sorted(rng.sample(range(1, total), docs - 1))
    return [b - a for a, b in zip([0, *cuts], [*cuts, total])]


def packed_causal_mask(lengths: list[int], device=None):
    """The boolean (1, 1, L, L) mask of a packed row: True where query i may attend key j, i.e. j <= i inside the
    same sample (what transformers builds from the row's position_ids)."""
    import torch

    doc = torch.repeat_interleave(torch.arange(len(lengths), device=device),
                                  torch.tensor(lengths, device=device))
    n = int(sum(lengths))
    pos = torch.arange(n, device=device)
    return ((doc[:, None] == doc[None, :]) & (pos[None, :] <= pos[:, None]))[None, None]


# torch.backends.cuda's switch for each SDPA backend
SDP_SWITCHES = {"cudnn": "enable_cudnn_sdp", "flash": "enable_flash_sdp", "efficient": "enable_mem_efficient_sdp",
                "math": "enable_math_sdp"}


def run_child(config: str, new: int, repeat: int, heads: int, kv_heads: int, head_dim: int, lo: int, hi: int,
              docs: int, seed: int) -> dict:
    import torch
    import torch.nn.functional as F

    cuda = torch.cuda.is_available()
    dev = torch.device("cuda" if cuda else "cpu")
    dtype = torch.bfloat16 if cuda else torch.float32
    for name in CONFIGS[config]["disable"]:  # as the plugin's sdpa_no_cudnn switches cuDNN off
        getattr(torch.backends.cuda, SDP_SWITCHES[name])(False)
    rng = random.Random(seed)
    lengths = rng.sample(range(lo, hi), new) + [None] * repeat

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def one(total: int) -> dict:
        mask = packed_causal_mask(doc_lengths(total, docs, rng), dev)
        q = torch.randn(1, heads, total, head_dim, device=dev, dtype=dtype, requires_grad=True)
        kv = [torch.randn(1, kv_heads, total, head_dim, device=dev, dtype=dtype, requires_grad=True) for _ in "kv"]
        k, v = (t.repeat_interleave(heads // kv_heads, dim=1) for t in kv)  # transformers' repeat_kv
        grad = torch.randn(1, heads, total, head_dim, device=dev, dtype=dtype)
        sync()
        t0 = time.perf_counter()
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        t1 = time.perf_counter()
        out.backward(grad)
        t2 = time.perf_counter()
        sync()
        t3 = time.perf_counter()
        return {"tokens": total, "fwd_host_ms": (t1 - t0) * 1e3, "bwd_host_ms": (t2 - t1) * 1e3,
                "total_ms": (t3 - t0) * 1e3}

    # a first call at a length not timed below pays the process's one-time costs (and, on CUDA, names the attention
    # kernels that ran)
    kernels: list[str] = []
    if cuda:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            one(hi + 7)
        names = {e.name for e in prof.events() if e.device_type.name == "CUDA"}
        kernels = sorted(n for n in names if any(m in n.lower() for m in ATTENTION_KERNEL_MARKS))[:6]
    else:
        one(hi + 7)
    calls = []
    seen = lengths[0]
    for n in lengths:
        calls.append({**one(seen if n is None else n), "repeat": n is None})

    def med(key: str, repeated: bool) -> float | None:
        xs = [c[key] for c in calls if c["repeat"] == repeated]
        return round(statistics.median(xs), 3) if xs else None

    return {"config": config, "env": CONFIGS[config]["env"], "disabled_backends": CONFIGS[config]["disable"],
            "device": torch.cuda.get_device_name() if cuda else "cpu", "torch": torch.__version__,
            "cudnn": torch.backends.cudnn.version() if cuda else None,
            "shape": {"heads": heads, "kv_heads": kv_heads, "head_dim": head_dim, "docs": docs, "dtype": str(dtype)},
            "attention_kernels": kernels,
            "new_lengths": {k: med(k, False) for k in ("fwd_host_ms", "bwd_host_ms", "total_ms")},
            "repeated_length": {k: med(k, True) for k in ("fwd_host_ms", "bwd_host_ms", "total_ms")},
            "calls": [{k: (round(v, 3) if isinstance(v, float) else v) for k, v in c.items()} for c in calls]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--configs", default=",".join(CONFIGS))
    p.add_argument("--new", type=int, default=16, help="distinct lengths, each seen once")
    p.add_argument("--repeat", type=int, default=8, help="calls at a length already seen")
    p.add_argument("--heads", type=int, default=28)
    p.add_argument("--kv-heads", type=int, default=4)
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--min-tokens", type=int, default=1300)
    p.add_argument("--max-tokens", type=int, default=2300)
    p.add_argument("--docs", type=int, default=16, help="samples packed into each row")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="write the results as JSON here too")
    p.add_argument("--timeout", type=float, default=300, help="seconds per config (default 300)")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    small = [f"--{k.replace('_', '-')}" for k in ("new", "heads", "kv_heads", "head_dim", "docs") if getattr(a, k) < 1]
    if small or a.repeat < 0 or a.timeout <= 0:
        p.error(f"{', '.join(small) or '--repeat or --timeout'} must be >= 1 (--repeat >= 0, --timeout > 0)")
    if a.heads % a.kv_heads:
        p.error("--heads must be a multiple of --kv-heads")
    if a.max_tokens - a.min_tokens < a.new + 1 or a.min_tokens <= a.docs:
        p.error("--min-tokens .. --max-tokens must hold --new distinct lengths, each above --docs")
    shape = (a.new, a.repeat, a.heads, a.kv_heads, a.head_dim, a.min_tokens, a.max_tokens, a.docs, a.seed)
    if a.child:
        print(json.dumps(run_child(a.child, *shape)))
        return 0
    configs = [c for c in a.configs.split(",") if c]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        p.error(f"unknown config(s) {', '.join(unknown)}; known: {', '.join(CONFIGS)}")
    results = []
    for config in configs:
        # every config's variables, and only its own: a caller's TORCH_CUDNN_SDPA_AVOID_RECOMPILE must not change
        # what "default" measures
        env = {k: v for k, v in os.environ.items() if k not in {n for c in CONFIGS.values() for n in c["env"]}}
        env.update(CONFIGS[config]["env"])
        args = [sys.executable, "-m", "experiments.probes.sdpa_shapes", "--child", config, "--new", str(a.new),
                "--repeat", str(a.repeat), "--heads", str(a.heads), "--kv-heads", str(a.kv_heads),
                "--head-dim", str(a.head_dim), "--min-tokens", str(a.min_tokens), "--max-tokens", str(a.max_tokens),
                "--docs", str(a.docs), "--seed", str(a.seed)]
        try:
            proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=a.timeout)
        except subprocess.TimeoutExpired:
            results.append({"config": config, "error": [f"no result within {a.timeout:g} s"]})
        else:
            try:
                if proc.returncode != 0:
                    raise ValueError(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed")
                results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
            except (ValueError, IndexError) as exc:  # a failed child, or one that printed no JSON line
                results.append({"config": config, "error": [f"exit {proc.returncode}: {exc}"]})
        r = results[-1]
        if "error" in r:
            print(f"{config}: failed: {r['error'][0]}", file=sys.stderr)
        else:
            print(f"{config}: new lengths fwd {r['new_lengths']['fwd_host_ms']} ms + bwd "
                  f"{r['new_lengths']['bwd_host_ms']} ms host (total {r['new_lengths']['total_ms']} ms); repeated "
                  f"{r['repeated_length']['fwd_host_ms']} + {r['repeated_length']['bwd_host_ms']} ms "
                  f"(total {r['repeated_length']['total_ms']} ms); kernels {r['attention_kernels'][:2]}", flush=True)
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(results, fh, indent=2)
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
