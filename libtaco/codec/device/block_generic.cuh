// The generic block path: every block codec at any block size B (a runtime
// parameter, uniform across the grid), compress, decompress(-accumulate) and
// decompress-reduce-compress.
//
// Thread mapping: a block of B elements is held by B/32 consecutive lanes ("a
// group"), 32 elements per thread, in 16-byte chunks interleaved across the group so
// that loads coalesce: thread t holds chunks t, t + tpb, t + 2*tpb, ... of its block.
// A warp's tile is its 32 / tpb blocks. The math (block_math.h) is independent of this
// mapping, which is what keeps GPU, CPU and numpy equal.
//
// Compress and plain decompress are software-pipelined: each thread copies its
// chunks of the tiles ahead into shared memory with cp.async while it computes the
// current tile, so DRAM reads stay in flight during the (issue-bound) block math.
// The staging slots assume kThreads threads per CTA.
//
// The parts, in the order they build on each other (one concept per file):
// block_stage.cuh (pipeline depths and slots), block_chunk_codes.cuh (a chunk's codes),
// block_decode.cuh (a block of inputs decoded and summed), block_compress.cuh,
// block_decompress.cuh (the staged plain decompress), block_sum_out.cuh (the end of a sum
// tile, and the overflowed blocks written wide) and block_sum.cuh (the sum's tile loops).
#pragma once
#include "codec/device/block_stage.cuh"
#include "codec/device/block_chunk_codes.cuh"
#include "codec/device/block_decode.cuh"
#include "codec/device/block_compress.cuh"
#include "codec/device/block_decompress.cuh"
#include "codec/device/block_sum_out.cuh"
#include "codec/device/block_sum.cuh"
