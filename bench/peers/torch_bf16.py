#!/usr/bin/env python3
"""PyTorch peer for hyperpar's bf16 training rows: GPT-2 trained on the CPU in
one process on a given number of threads, once in fp32 and once under
torch.autocast("cpu", dtype=torch.bfloat16) (fp32 master weights, AdamW state
and gradients; the forward's matmuls in bf16 by PyTorch's own autocast
policy). Prints one JSON line per dtype: the median step time over --steps
timed steps after --warmup untimed ones, and tokens/s from it.

The model, batch and optimizer are torch_fsdp2.py's (imported from beside this
file): the same shape as `hyperpar bench`'s rows (small: L4 NH4 C256 V256 B8
T128; gpt2-124m: L12 NH12 C768 V50257 B4 T256, Vp padded to 128, tied LM
head), GPT-2's initialisation, AdamW lr 1e-4 without weight decay, gradients
clipped at norm 1, a fixed random batch.

Not needed by the test suite. Needs PyTorch >= 2.4 (CPU autocast to bf16 and
scaled_dot_product_attention in bf16); installed from PyPI into a venv, e.g.

    python3 -m venv /tmp/tv && /tmp/tv/bin/pip install torch
    /tmp/tv/bin/python bench/peers/torch_bf16.py --model gpt2-124m --threads 2 --steps 4

Each dtype starts from the same seed; --dtype fp32 or bf16 runs one only."""
import argparse
import json
import math
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_fsdp2 import GPT, MODELS  # noqa: E402  (the same model as the FSDP peer)


def run(model_name, dtype, threads, steps, warmup):
    torch.manual_seed(0)
    m = MODELS[model_name]
    model = GPT(m["L"], m["H"], m["C"], m["V"], m["T"])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.0)
    g = torch.Generator().manual_seed(5)
    idx = torch.randint(0, m["V"], (m["B"], m["T"]), generator=g)
    tgt = torch.randint(0, m["V"], (m["B"], m["T"]), generator=g)
    bf16 = dtype == "bf16"
    times, losses = [], []
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = model(idx, tgt)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if i >= warmup:
            times.append(time.perf_counter() - t0)
        losses.append(float(loss.detach()))
    step = statistics.median(times)
    return {"config": "torch bf16 autocast" if bf16 else "torch fp32", "model": model_name, "dtype": dtype,
            "threads": threads, "batch": m["B"], "seq": m["T"], "steps": steps, "torch": torch.__version__,
            "cpu_capability": torch.backends.cpu.get_cpu_capability(), "step_ms": step * 1e3,
            "step_ms_min": min(times) * 1e3, "step_ms_max": max(times) * 1e3,
            "tokens_per_s": m["B"] * m["T"] / step,
            "first_loss": losses[0] if math.isfinite(losses[0]) else None,
            "last_loss": losses[-1] if math.isfinite(losses[-1]) else None}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="small", choices=sorted(MODELS))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5, help="timed steps per dtype")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps before them")
    ap.add_argument("--dtype", default="both", choices=["fp32", "bf16", "both"])
    args = ap.parse_args()
    if args.threads < 1 or args.steps < 1 or args.warmup < 0:
        ap.error("--threads and --steps must be >= 1, --warmup >= 0")
    torch.set_num_threads(args.threads)
    for dtype in ["fp32", "bf16"] if args.dtype == "both" else [args.dtype]:
        print(json.dumps(run(args.model, dtype, args.threads, args.steps, args.warmup)), flush=True)


if __name__ == "__main__":
    main()
