"""Train a small tensor-parallel (Megatron-style) MLP with compressed AllReduce.

    torchrun --nproc-per-node 4 examples/torch_tp_train.py [--codec taco] [--steps 200]
    python examples/torch_tp_train.py --loopback 4 [--codec taco]      # 4 TP ranks on one GPU

The model is a residual stack of `--layers` blocks x + W2 gelu(W1 LN(x)), W1 a
ColumnParallelLinear, W2 a RowParallelLinear (taco.torch): the forward output of
every block and the input gradient of every block go through libtaco's compressed
AllReduce. The task is a fixed random teacher network; every rank sees the same
batches. Printed: the training loss every --print-every steps; `--codec none` gives the
uncompressed run to compare with (same seed, same data).
"""
import argparse
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

import taco.torch as tt


class Block(nn.Module):
    def __init__(self, d: int, hidden: int, tp):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        # Megatron-style: draw the full layers (same seed on every rank), keep this rank's shards
        self.fc1 = tt.ColumnParallelLinear.from_linear(nn.Linear(d, hidden), tp)
        self.fc2 = tt.RowParallelLinear.from_linear(nn.Linear(hidden, d), tp)

    def forward(self, x):
        h = self.fc1(self.norm(x))                 # one shard per local TP rank
        return x + self.fc2([F.gelu(t) for t in h])


class Model(nn.Module):
    def __init__(self, d: int, hidden: int, layers: int, tp):
        super().__init__()
        self.blocks = nn.ModuleList([Block(d, hidden, tp) for _ in range(layers)])
        self.head = nn.Linear(d, d)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.head(x)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--loopback", type=int, default=0, metavar="N", help="N TP ranks emulated on this GPU")
    p.add_argument("--codec", default="taco")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--dim", type=int, default=512)
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--print-every", type=int, default=20, help="print the loss every N steps")
    p.add_argument("--fallback-bytes", type=int, default=0,
                   help="compress messages of at least this many bytes (default 0: all)")
    args = p.parse_args()

    dist = None
    if args.loopback:
        tp = tt.TPGroup.loopback(args.loopback, codec=args.codec, fallback_bytes=args.fallback_bytes)
        rank = 0
    else:
        import os

        import torch.distributed as dist

        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group("nccl", device_id=torch.device("cuda", torch.cuda.current_device()))
        tp = tt.TPGroup.from_process_group(codec=args.codec, fallback_bytes=args.fallback_bytes)
        rank = dist.get_rank()
        if rank == 0:
            print(f"communicator: {tp.comms[0].torch_path}")

    # Same seed on every rank: identical replicated parameters and batches; each rank keeps
    # its shards of the same full weights, so any TP size starts from the same model.
    torch.manual_seed(args.seed)
    dev = torch.device("cuda", torch.cuda.current_device())
    with torch.device(dev):
        model = Model(args.dim, args.hidden, args.layers, tp)
    gen = torch.Generator(device=dev).manual_seed(args.seed)
    teacher = [torch.randn(args.dim, args.dim, device=dev, generator=gen) / args.dim ** 0.5 for _ in range(2)]
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    if rank == 0:
        n = sum(p.numel() for p in model.parameters())
        print(f"TP size {tp.size} ({'loopback' if args.loopback else 'torchrun'}), codec {args.codec}, "
              f"{n} parameters in this process, {args.steps} steps")
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
    if dist is not None:
        dist.barrier()  # every rank's last call has ended before any rank frees its peer scratch
        tt.destroy_communicators()
        dist.destroy_process_group()
    else:
        tp.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
