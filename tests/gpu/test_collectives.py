"""Compressed collectives on the GPU (loopback transport, and NCCL with one rank)
against the numpy collective model (taco.reference) bit for bit.

Run on a GPU machine:  TACO_LIBRARY=build/libtaco.so pytest -m gpu tests/gpu/test_collectives.py
"""
import numpy as np
import pytest

from loopback_world import (BF16, DTYPES, assert_same, block_of, capture_allreduce, close_all,  # noqa: F401
                            parts_for, replay_and_compare, run_group, taco, to_dev, to_host, torch, world)
from codec_sets import ALL as CODECS

pytestmark = pytest.mark.gpu



def loop(taco, P, codec, **cfg):
    cfg.setdefault("chunk_bytes", 1 << 20)  # small workspace; large counts run many chunks
    # the staged two-shot (plain for codec none): test_peer_allreduce.py covers the peer algorithms
    cfg.setdefault("algo", "plain" if codec == "none" else "staged")
    return world(taco, P, codec, **cfg)


# ---------------------------------------------------------------- AllReduce vs the model
@pytest.mark.parametrize("inplace", [False, True], ids=["out", "in"])
@pytest.mark.parametrize("count_kind", ["one", "PB-1"])
@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("P", [2, 3, 4, 8])
def test_allreduce_matches_model(taco, torch, P, dtype, codec, count_kind, inplace):
    from taco import reference as ref

    count = 1 if count_kind == "one" else P * block_of(codec) - 1
    parts = parts_for(P, count, dtype, seed=P * 7 + count)
    comms = loop(taco, P, codec)
    try:
        xs = [to_dev(torch, p) for p in parts]
        outs = run_group(taco, torch, comms, "allreduce", xs, inplace)
        want = ref.allreduce(parts, codec)
        for r in range(P):
            assert_same(to_host(torch, outs[r]), want, f"rank {r}")
    finally:
        close_all(comms)


@pytest.mark.parametrize("inplace", [False, True], ids=["out", "in"])
@pytest.mark.parametrize("codec", ["taco", "int8-block", "bf16", "none"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("P", [2, 3, 4, 8])
def test_reduce_scatter_allgather_alltoall_match_model(taco, torch, P, dtype, codec, inplace):
    from taco import reference as ref

    n = block_of(codec) + 5  # per-rank block: a whole codec block plus a short one
    comms = loop(taco, P, codec)
    try:
        # ReduceScatter: in place means recvbuff = sendbuff + r*n
        parts = parts_for(P, P * n, dtype, seed=1)
        xs = [to_dev(torch, p) for p in parts]
        outs = []
        with taco.comm.group():
            for r, (c, x) in enumerate(zip(comms, xs)):
                outs.append(c.reduce_scatter(x, out=x[r * n:(r + 1) * n] if inplace else None))
        torch.cuda.synchronize()
        want = ref.reduce_scatter(parts, codec)
        for r in range(P):
            assert_same(to_host(torch, outs[r]), want[r], f"reduce_scatter rank {r}")

        # AllGather: in place means sendbuff = recvbuff + r*n
        parts = parts_for(P, n, dtype, seed=2)
        want = ref.allgather(parts, codec)
        outs = []
        if inplace:
            bufs = [torch.zeros(P * n, dtype=to_dev(torch, parts[0]).dtype, device="cuda") for _ in range(P)]
            for r in range(P):
                bufs[r][r * n:(r + 1) * n] = to_dev(torch, parts[r])
            with taco.comm.group():
                for r, c in enumerate(comms):
                    c.allgather(bufs[r][r * n:(r + 1) * n], out=bufs[r])
            outs = bufs
        else:
            xs = [to_dev(torch, p) for p in parts]
            with taco.comm.group():
                outs = [c.allgather(x) for c, x in zip(comms, xs)]
        torch.cuda.synchronize()
        for r in range(P):
            assert_same(to_host(torch, outs[r]), want, f"allgather rank {r}")

        # AlltoAll
        parts = parts_for(P, P * n, dtype, seed=3)
        xs = [to_dev(torch, p) for p in parts]
        outs = run_group(taco, torch, comms, "alltoall", xs, inplace)
        want = ref.alltoall(parts, codec)
        for r in range(P):
            assert_same(to_host(torch, outs[r]), want[r], f"alltoall rank {r}")
    finally:
        close_all(comms)


# ---------------------------------------------------------------- large: 2^27 + 5 elements
def _window_expect(ref, parts, codec, owner, a, b, dtype):
    wires = [ref.compress(parts[j][a:b], codec) for j in range(len(parts)) if j != owner]
    _, y = ref.decompress_reduce_compress(wires, codec, b - a, dtype, exact=parts[owner][a:b])
    return y


@pytest.mark.parametrize("P,dtype,inplace", [(4, BF16, False), (2, np.dtype(np.float32), True)],
                         ids=["P4-bf16-out", "P2-fp32-in"])
def test_allreduce_large(taco, torch, P, dtype, inplace):
    """2^27+5 elements over several chunks: every rank identical, identical run to
    run, and sampled windows (first, middle, the short tail) equal to the model."""
    from taco import reference as ref

    count = (1 << 27) + 5
    rng = np.random.default_rng(5)
    parts = [rng.laplace(size=count).astype(np.float32).astype(dtype) for _ in range(P)]
    comms = loop(taco, P, "taco", chunk_bytes=64 << 20)
    try:
        results = []
        for _ in range(2):
            xs = [to_dev(torch, p) for p in parts]
            outs = run_group(taco, torch, comms, "allreduce", xs, inplace)
            results.append([to_host(torch, o) for o in outs])
            del xs, outs
        for r in range(P):
            assert_same(results[0][r], results[0][0], f"rank {r} vs rank 0")
            assert_same(results[1][r], results[0][r], f"rank {r} run 2 vs run 1")
        shards = ref.shard_plan(count, P, 256)
        last = max(i for i, (_, n) in enumerate(shards) if n)
        o_mid = P // 2
        windows = [(0, shards[0][0], shards[0][0] + 4096),
                   (o_mid, shards[o_mid][0] + 1000 * 256, shards[o_mid][0] + 1016 * 256),
                   (last, shards[last][0] + shards[last][1] - 517, shards[last][0] + shards[last][1])]
        for owner, a, b in windows:
            a0 = a - (a - shards[owner][0]) % 256  # start on a block boundary of the owner's shard
            want = _window_expect(ref, parts, "taco", owner, a0, b, dtype)
            assert_same(results[0][0][a0:b], want, f"window [{a0},{b}) owner {owner}")
    finally:
        close_all(comms)


def test_chunking_does_not_change_bits(taco, torch):
    P, count = 4, 3 * 4 * 256 * 100 + 77
    parts = parts_for(P, count, BF16, seed=9)
    res = []
    for chunk in [None, 4 * 256 * 2 * 7, 1 << 16]:
        cfg = {} if chunk is None else {"chunk_bytes": chunk}
        comms = loop(taco, P, "taco", **cfg)
        try:
            xs = [to_dev(torch, p) for p in parts]
            res.append(to_host(torch, run_group(taco, torch, comms, "allreduce", xs, False)[0]))
        finally:
            close_all(comms)
    for r in res[1:]:
        assert_same(r, res[0], "chunked vs unchunked")


def test_pipeline_depths_agree(taco, torch):
    P, count = 3, 1 << 20
    parts = parts_for(P, count, np.float32, seed=4)
    res = []
    for depth in [1, 2, 4]:
        comms = loop(taco, P, "taco", chunk_bytes=1 << 20, pipeline_depth=depth)
        try:
            xs = [to_dev(torch, p) for p in parts]
            res.append(to_host(torch, run_group(taco, torch, comms, "allreduce", xs, False)[1]))
        finally:
            close_all(comms)
    for r in res[1:]:
        assert_same(r, res[0], "pipeline depth")


# ---------------------------------------------------------------- CuPy and default config
def test_cupy_arrays_and_default_fallback(taco):
    import cupy as cp
    from taco import reference as ref

    P, n = 2, 1000
    parts = parts_for(P, n, np.float32)
    comms = taco.comm.loopback(P, codec="taco")  # default fallback: small messages are exact
    try:
        xs = [cp.asarray(p) for p in parts]
        with taco.comm.group():
            outs = [c.allreduce(x) for c, x in zip(comms, xs)]
        cp.cuda.runtime.deviceSynchronize()
        want = ref.allreduce(parts, "none")
        for o in outs:
            assert_same(cp.asnumpy(o), want, "fallback")
        assert comms[0].config["fallback_bytes"] > n * 4
    finally:
        close_all(comms)


# ---------------------------------------------------------------- NCCL, one rank
@pytest.fixture(scope="module")
def nccl_comm(taco):
    c = taco.comm.Communicator.from_unique_id(taco.comm.get_unique_id(), 1, 0, codec="taco", fallback_bytes=0)
    yield c
    c.close()


def test_nccl_one_rank(taco, torch, nccl_comm):
    from taco import reference as ref

    assert nccl_comm.size == 1 and nccl_comm.rank == 0
    for dtype in DTYPES:
        x = parts_for(1, 5000, dtype, seed=11)
        t = to_dev(torch, x[0])
        assert_same(to_host(torch, nccl_comm.allreduce(t)), ref.allreduce(x, "taco"), f"allreduce {dtype}")
        assert_same(to_host(torch, nccl_comm.reduce_scatter(t)), ref.reduce_scatter(x, "taco")[0], "rs")
        assert_same(to_host(torch, nccl_comm.allgather(t)), ref.allgather(x, "taco"), "ag")
        assert_same(to_host(torch, nccl_comm.alltoall(t)), ref.alltoall(x, "taco")[0], "a2a")
    with taco.comm.Communicator.from_unique_id(taco.comm.get_unique_id(), 1, 0, codec="none") as plain:
        t = to_dev(torch, parts_for(1, 777, BF16)[0])
        assert_same(to_host(torch, plain.allreduce(t)), to_host(torch, t), "plain nccl")
        assert plain.workspace_bytes == 0


# ---------------------------------------------------------------- CUDA graphs
def test_graph_capture_loopback_group(taco, torch):
    P, count = 4, 4 * 256 * 64 + 3
    parts = parts_for(P, count, BF16, seed=12)
    comms = loop(taco, P, "taco", chunk_bytes=1 << 16)
    try:
        xs = [to_dev(torch, p) for p in parts]
        eager = [to_host(torch, o) for o in run_group(taco, torch, comms, "allreduce", xs, False)]
        g, outs = capture_allreduce(taco, torch, comms, xs, torch.cuda.Stream())
        replay_and_compare(torch, g, outs, eager, 100, (0, 99))
    finally:
        close_all(comms)


def test_graph_capture_nccl_one_rank(taco, torch, nccl_comm):
    x = to_dev(torch, parts_for(1, 1 << 18, np.float32, seed=13)[0])
    eager = to_host(torch, nccl_comm.allreduce(x))
    out = torch.empty_like(x)
    s = torch.cuda.Stream()
    g = torch.cuda.CUDAGraph()
    torch.cuda.synchronize()
    with torch.cuda.graph(g, stream=s):
        nccl_comm.allreduce(x, out=out, stream=s)
    for i in range(100):
        out.zero_()
        g.replay()
    torch.cuda.synchronize()
    assert_same(to_host(torch, out), eager, "nccl graph replay")
    # the plain path: ncclAllReduce itself inside the graph
    with taco.comm.Communicator.from_unique_id(taco.comm.get_unique_id(), 1, 0, codec="none") as plain:
        eager = to_host(torch, plain.allreduce(x))
        g2 = torch.cuda.CUDAGraph()
        torch.cuda.synchronize()
        with torch.cuda.graph(g2, stream=s):
            plain.allreduce(x, out=out, stream=s)
        for i in range(100):
            out.zero_()
            g2.replay()
        torch.cuda.synchronize()
        assert_same(to_host(torch, out), eager, "plain nccl graph replay")


# ---------------------------------------------------------------- lifecycle and errors
def test_config_workspace_and_queries(taco):
    comms = loop(taco, 4, "taco:block=128", chunk_bytes=1 << 20, pipeline_depth=3)
    try:
        cfg = comms[2].config
        assert cfg["codec"] == "taco:block=128" and cfg["chunk_bytes"] == 1 << 20
        assert cfg["pipeline_depth"] == 3 and comms[2].rank == 2 and comms[2].size == 4
        ws = comms[0].workspace_bytes
        # staged: depth x 2 regions x P pieces of (1 MiB / 4 ranks of bf16 = 128 Ki elements) compressed;
        # plus the peer scratch of the loopback world
        staged = 3 * 2 * 4 * (128 * 1024 + 128 * 1024 // 128 * 8 + 512)
        scratch = peer_scratch(1 << 20, 4, "taco:block=128", 128)
        assert scratch < ws <= staged + scratch
    finally:
        close_all(comms)
    none = loop(taco, 2, "none")  # no staged workspace: only the peer scratch (the raw one-shot)
    assert none[0].workspace_bytes == peer_scratch(1 << 20, 2)
    close_all(none)


def peer_scratch(chunk, P, codec=None, block=256):
    """coll/peer_plan.h: control lines (16, then the fused two-shot's tile counters: 2 parities x
    3 phases x 16 pieces), flag lines, two halves, a tail. A half holds max(chunk / 2,
    P x 64 KiB) and, for a blocked codec, P slots of the wire (256-byte aligned) of the staged
    plan's piece of 16-bit data: max(1, chunk / P / (2 B)) blocks of B."""
    from taco import codec as tcodec
    half = max(chunk // 2, P * 65536)
    if codec is not None:
        piece = max(1, chunk // P // (2 * block)) * block
        half = max(half, P * (-(-tcodec.compressed_size(codec, piece, "bfloat16") // 256) * 256))
    half = -(-half // 256) * 256
    return (16 + 2 * 3 * 16) * 128 + 2 * 16 * 128 + 2 * half + 256


def test_algo_config_selection_and_async_error(taco, torch):
    """Every algorithm name round-trips through the library's config; allreduce_algo names what
    a call runs (never auto; a forced one, or an InvalidUsageError saying why it cannot run)."""
    from taco import reference as ref
    from taco.errors import InvalidUsageError

    for algo in taco.comm.ALGOS:
        comms = loop(taco, 2, "taco", algo=algo)
        try:
            assert [c.config["algo"] for c in comms] == [algo, algo]
            assert [c.async_error() for c in comms] == [None, None]
            try:
                ran = comms[0].allreduce_algo(1 << 20, "float32")
            except InvalidUsageError as e:  # forced, but this loopback world has no peer memory
                assert algo in ("fused", "oneshot", "oneshot-raw") and "peer memory" in str(e), (algo, e)
                continue
            assert ran in taco.comm.ALGOS and ran != "auto" and (algo == "auto" or ran == algo)
        finally:
            close_all(comms)
    none = loop(taco, 2, "none", algo="staged")
    try:
        with pytest.raises(InvalidUsageError, match="compressing codec"):
            none[0].allreduce_algo(4096, "bfloat16")
    finally:
        close_all(none)
    # forced plain on a compressing codec: the transport's sum, as codec none computes it
    parts = parts_for(2, 4099, np.dtype(np.float32), seed=5)
    comms = loop(taco, 2, "taco", algo="plain")
    try:
        assert comms[1].allreduce_algo(4099, "float32") == "plain"
        outs = run_group(taco, torch, comms, "allreduce", [to_dev(torch, p) for p in parts], False)
        for r in range(2):
            assert_same(to_host(torch, outs[r]), ref.allreduce(parts, "none"), f"rank {r}")
    finally:
        close_all(comms)


def test_bad_arguments(taco, torch):
    from taco.errors import InvalidArgumentError, InvalidUsageError

    with pytest.raises(InvalidArgumentError, match="unknown codec"):
        taco.comm.loopback(2, codec="no-such-codec")
    comms = loop(taco, 2, "taco")
    try:
        x = torch.ones(1000, device="cuda")
        with pytest.raises(InvalidUsageError, match="tacoGroupStart"):
            comms[0].allreduce(x)  # loopback of 2 ranks outside a group
        with pytest.raises((InvalidUsageError, InvalidArgumentError)):
            with taco.comm.group():  # the ranks disagree on the count
                comms[0].allreduce(torch.ones(1000, device="cuda"))
                comms[1].allreduce(torch.ones(3000, device="cuda"))
        with pytest.raises(InvalidUsageError, match="rank 1"):
            with taco.comm.group():  # rank 1 never calls
                comms[0].allreduce(x)
        # NULL and host buffers, by the C API
        from taco import _lib

        f, lib = _lib.ffi(), _lib.lib()
        h = f.cast("tacoComm_t", comms[0].handle)
        rc = lib.tacoAllReduce(f.NULL, f.NULL, 10, lib.tacoFloat32, lib.tacoSum, h, f.NULL)
        assert rc == lib.tacoInvalidArgument
        assert "sendbuff argument is NULL" in f.string(lib.tacoGetLastError(h)).decode()
        host = np.zeros(10, np.float32)
        hp = f.cast("void*", host.ctypes.data)
        assert lib.tacoAllReduce(hp, hp, 10, lib.tacoFloat32, lib.tacoSum, h, f.NULL) == lib.tacoInvalidArgument
        assert "not device memory" in f.string(lib.tacoGetLastError(h)).decode()
        # count 0 is a no-op success, even with NULL buffers (as in NCCL)
        assert lib.tacoAllReduce(f.NULL, f.NULL, 0, lib.tacoFloat32, lib.tacoSum, h, f.NULL) == lib.tacoSuccess
        # a bad op and a bad dtype
        dx = torch.ones(10, device="cuda")
        dp = f.cast("void*", dx.data_ptr())
        assert lib.tacoAllReduce(dp, dp, 10, lib.tacoFloat32, 7, h, f.NULL) == lib.tacoInvalidArgument
        assert "op 7" in f.string(lib.tacoGetLastError(h)).decode()
        assert lib.tacoAllReduce(dp, dp, 10, 9, lib.tacoSum, h, f.NULL) == lib.tacoInvalidArgument
        assert "datatype" in f.string(lib.tacoGetLastError(h)).decode()
    finally:
        close_all(comms)


def test_destroy_and_abort(taco, torch):
    from taco.errors import InvalidUsageError
    from taco import _lib

    lib = _lib.lib()
    comms = loop(taco, 2, "taco")
    x = [torch.ones(4096, device="cuda") for _ in comms]
    # destroy with work queued in an open group is refused; abort drops it
    assert lib.tacoGroupStart() == lib.tacoSuccess
    comms[0].allreduce(x[0])
    with pytest.raises(InvalidUsageError, match="queued"):
        comms[0].close()
    comms[0].abort()
    comms[1].abort()
    assert lib.tacoGroupEnd() == lib.tacoSuccess  # nothing left to run
    assert comms[0].closed and comms[0].aborted
    comms[0].close()  # idempotent
    with pytest.raises(InvalidUsageError, match="communicator was aborted"):
        comms[0].allreduce(x[0])
    # a communicator used and then destroyed waits for its work
    comms = loop(taco, 3, "fp8-block")
    xs = [torch.randn(1 << 20, device="cuda") for _ in comms]
    with taco.comm.group():
        outs = [c.allreduce(x) for c, x in zip(comms, xs)]
    close_all(comms)
    torch.cuda.synchronize()
    assert torch.equal(outs[0], outs[2])
    # a loopback world of one rank runs outside a group
    with taco.comm.loopback(1, codec="taco", fallback_bytes=0)[0] as c:
        y = c.allreduce(torch.ones(300, device="cuda"))
        torch.cuda.synchronize()
        assert y.shape == (300,)
