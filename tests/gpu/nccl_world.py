"""A one-rank NCCL process group (NCCL allows one rank per GPU here) for the GPU tests of
taco.torch (test_torch_tp.py, test_torch_ops_gpu.py): the fixture world1, which gives
torch.distributed with the group initialised and, after the test, destroys the communicators
taco.torch made and the group. It uses the test module's `torch` fixture; imported by name
(`# noqa: F401 (fixture)`)."""
import socket

import pytest


def free_port():
    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        return sk.getsockname()[1]


@pytest.fixture
def world1(torch):
    import torch.distributed as dist

    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1,
                            device_id=torch.device("cuda", torch.cuda.current_device()))
    yield dist
    import taco.torch as tt

    tt.destroy_communicators()
    dist.destroy_process_group()
