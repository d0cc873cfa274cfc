"""ExactTP: the TP group that the CPU tests of taco.torch (test_torch_ops.py,
test_torch_tp_autograd.py) put in place of a Communicator: P ranks in this process whose
AllReduce is the exact (float64) sum of its local ranks' tensors, no libtaco. Needs PyTorch:
import it after pytest.importorskip("torch")."""
import taco.torch as tt


class ExactTP(tt.TPGroup):
    """P TP ranks, of which `local` (default: all) are driven here; the all-reduce is the exact sum."""

    def __init__(self, P, local=None):
        self.comms = [None] * (P if local is None else len(local))
        self.size = P
        self.local_ranks = list(range(P)) if local is None else list(local)
        self.calls = 0
        tt.register_communicator(self)  # the TP layers' torch ops find the group by name

    def all_reduce_(self, tensors, outs=None):
        self.calls += 1
        s = sum(t.double() for t in tensors).to(tensors[0].dtype)
        outs = list(tensors) if outs is None else list(outs)
        for o in outs:
            o.copy_(s)
        return outs
