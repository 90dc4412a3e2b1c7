#!/usr/bin/env python3
"""PyTorch peer for `hyperpar bench fsdp`: GPT-2 trained with PyTorch's FSDP2
(torch.distributed.fsdp.fully_shard: one unit per block plus the root) or DDP,
on CPU processes joined by gloo over 127.0.0.1 only, the same model shape,
batch and AdamW as hyperpar's rows. Prints one JSON object per configuration:
the median step time over --steps timed steps after 2 untimed ones.

Not needed by the test suite. Needs PyTorch >= 2.4 (fully_shard); run e.g.

    python3 bench/peers/torch_fsdp2.py --model small --ranks 4 --threads 2 --steps 5

The threads are shared out among the ranks (torch.set_num_threads), as
hyperpar shares --threads among its rank threads."""
import argparse
import json
import math
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

MODELS = {"small": dict(L=4, H=4, C=256, V=256, T=128, B=8), "gpt2-124m": dict(L=12, H=12, C=768, V=50257, T=256, B=4)}


class Block(nn.Module):
    def __init__(self, C, H):
        super().__init__()
        self.H = H
        self.ln1 = nn.LayerNorm(C)
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        self.ln2 = nn.LayerNorm(C)
        self.fc = nn.Linear(C, 4 * C)
        self.fcproj = nn.Linear(4 * C, C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.H, C // self.H).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, L, H, C, V, T):
        super().__init__()
        Vp = (V + 127) // 128 * 128
        self.wte = nn.Embedding(Vp, C)
        self.wpe = nn.Embedding(T, C)
        self.h = nn.ModuleList(Block(C, H) for _ in range(L))
        self.lnf = nn.LayerNorm(C)
        self.V = V
        for mod in self.modules():  # GPT-2's initialisation (N(0, 0.02), zero biases)
            if isinstance(mod, (nn.Linear, nn.Embedding)):
                nn.init.normal_(mod.weight, 0.0, 0.02)
            if isinstance(mod, nn.Linear):
                nn.init.zeros_(mod.bias)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for b in self.h:
            x = b(x)
        logits = self.lnf(x) @ self.wte.weight.t()
        return F.cross_entropy(logits[..., : self.V].reshape(-1, self.V), targets.reshape(-1))


def worker(rank, world, args, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port), GLOO_SOCKET_IFNAME="lo")
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(max(1, args.threads // world))
    torch.manual_seed(0)
    m = dict(MODELS[args.model])
    if args.layers:
        m["L"] = args.layers
    model = GPT(m["L"], m["H"], m["C"], m["V"], m["T"])
    if args.style == "fsdp2":
        from torch.distributed.fsdp import fully_shard

        for b in model.h:
            fully_shard(b)
        fully_shard(model)
    elif world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.0)
    B = m["B"] // world
    g = torch.Generator().manual_seed(5 + rank)
    idx = torch.randint(0, m["V"], (B, m["T"]), generator=g)
    tgt = torch.randint(0, m["V"], (B, m["T"]), generator=g)
    times = []
    for i in range(args.steps + 2):
        dist.barrier()
        t0 = time.perf_counter()
        loss = model(idx, tgt)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        dist.barrier()
        if i >= 2:
            times.append(time.perf_counter() - t0)
    if rank == 0:
        step = statistics.median(times)
        out.put({"config": f"torch {args.style}", "model": args.model, "layers": m["L"], "ranks": world, "threads": args.threads,
                 "torch": torch.__version__, "step_ms": step * 1e3, "tokens_per_s": m["B"] * m["T"] / step,
                 "loss": float(loss.detach()) if math.isfinite(float(loss.detach())) else None})
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="small", choices=sorted(MODELS))
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--layers", type=int, default=0, help="transformer blocks instead of the model's (0: the model's)")
    ap.add_argument("--style", default="fsdp2", choices=["fsdp2", "ddp"])
    ap.add_argument("--port", type=int, default=29517)
    args = ap.parse_args()
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    mp.spawn(worker, args=(args.ranks, args, q), nprocs=args.ranks, join=True)
    print(json.dumps(q.get()))


if __name__ == "__main__":
    main()
