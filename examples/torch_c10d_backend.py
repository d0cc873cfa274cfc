"""Compressed tensor parallelism for code that only knows torch.distributed: the c10d backend "taco".

    torchrun --nproc-per-node 4 examples/torch_c10d_backend.py [--codec fp8-block] [--steps 200]
    torchrun --nproc-per-node 4 examples/torch_c10d_backend.py --backend nccl    # the same, uncompressed

The model is written the way Megatron writes its TP layers, against torch.distributed and
nothing else: a column-parallel linear whose input gradient is dist.all_reduce'd, a
row-parallel linear whose partial outputs are dist.all_reduce'd. The only libtaco line is the
group: dist.new_group(..., backend="taco", pg_options=taco.c10d.Options(codec=...)). Its
all_reduce runs through libtaco, compressed; the broadcast that syncs the replicated weights,
like everything else, runs on NCCL. Printed: the loss every --print-every steps (compare with
--backend nccl), and at the end how many calls went through libtaco.
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn


class _CopyToTP(torch.autograd.Function):
    """Identity forward, all-reduce of the gradient backward (Megatron's f)."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        g = g.contiguous()
        dist.all_reduce(g, group=ctx.group)
        return g, None


class _ReduceFromTP(torch.autograd.Function):
    """All-reduce forward, identity backward (Megatron's g)."""

    @staticmethod
    def forward(ctx, x, group):
        x = x.contiguous()
        dist.all_reduce(x, group=group)
        return x

    @staticmethod
    def backward(ctx, g):
        return g, None


class TPBlock(nn.Module):
    """x + W2 gelu(W1 LN(x)) with W1 split by rows and W2 by columns over the group's ranks."""

    def __init__(self, d: int, hidden: int, group):
        super().__init__()
        size, rank = dist.get_world_size(group), dist.get_rank(group)
        k = hidden // size
        self.group = group
        self.norm = nn.LayerNorm(d)
        full1, full2 = nn.Linear(d, hidden), nn.Linear(hidden, d)
        self.w1 = nn.Parameter(full1.weight.detach()[rank * k:(rank + 1) * k].clone())
        self.b1 = nn.Parameter(full1.bias.detach()[rank * k:(rank + 1) * k].clone())
        self.w2 = nn.Parameter(full2.weight.detach()[:, rank * k:(rank + 1) * k].clone())
        self.b2 = nn.Parameter(full2.bias.detach().clone())

    def forward(self, x):
        h = F.gelu(F.linear(_CopyToTP.apply(self.norm(x), self.group), self.w1, self.b1))
        return x + _ReduceFromTP.apply(F.linear(h, self.w2), self.group) + self.b2


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", default="taco", choices=["taco", "nccl"], help="the TP group's backend")
    p.add_argument("--codec", default="fp8-block", help="the taco group's codec")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--dim", type=int, default=512)
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--print-every", type=int, default=20, help="print the loss every N steps")
    args = p.parse_args()

    import taco.c10d
    import taco.torch as tt  # registers the backend "taco"

    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dev = torch.device("cuda", torch.cuda.current_device())
    dist.init_process_group("nccl", device_id=dev)
    ranks = list(range(dist.get_world_size()))
    if args.backend == "taco":
        # fallback_bytes=0: compress every message, however small (the library's default sends
        # messages below 1 MiB uncompressed)
        group = dist.new_group(ranks, backend="taco", pg_options=taco.c10d.Options(codec=args.codec, fallback_bytes=0))
    else:
        group = dist.new_group(ranks, backend="nccl")
    rank = dist.get_rank()

    torch.manual_seed(args.seed)  # the same full weights on every rank; each keeps its shards
    with torch.device(dev):
        blocks = nn.Sequential(*[TPBlock(args.dim, args.hidden, group) for _ in range(args.layers)])
        head = nn.Linear(args.dim, args.dim)
    for prm in head.parameters():  # replicated parameters: one broadcast each (NCCL, through the group)
        dist.broadcast(prm.data, src=0, group=group)
    model = nn.Sequential(blocks, head)
    gen = torch.Generator(device=dev).manual_seed(args.seed)
    teacher = [torch.randn(args.dim, args.dim, device=dev, generator=gen) / args.dim ** 0.5 for _ in range(2)]
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    if rank == 0:
        what = f"taco, codec {args.codec}" if args.backend == "taco" else "nccl"
        print(f"TP size {len(ranks)}, group backend {what}, {args.steps} steps")
    t0 = time.perf_counter()
    loss = None
    for step in range(1, args.steps + 1):
        x = torch.randn(args.batch, args.dim, device=dev, generator=gen)
        target = torch.tanh(x @ teacher[0]) @ teacher[1]
        loss = F.mse_loss(model(x), target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if rank == 0 and (step % args.print_every == 0 or step == 1 or step == args.steps):
            print(f"step {step:5d}  loss {loss.item():.6f}")
    torch.cuda.synchronize()
    if rank == 0:
        print(f"final loss {loss.item():.6f}  ({time.perf_counter() - t0:.1f} s)")
        if args.backend == "taco":
            print(f"collectives through libtaco: {dict(group.routed)}")
    dist.barrier()  # every rank's last call has ended before any rank frees its peer scratch
    tt.destroy_communicators()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
