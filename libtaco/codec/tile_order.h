// Where a tile of a block per lane (B = 32: a lane's 32 elements, `nch` 16-byte chunks of them:
// 4 in 16-bit types, 8 in fp32) sits in shared memory when a warp stores it in order
// (storeTileInOrder, codec/device/io.cuh): lane o's chunk c in row c, at column tileColumn(o, c),
// and the tile's 16-byte unit u (lane u / nch's chunk u % nch) read back from there by lane u % 32
// for the store u / 32. The columns of a row are a permutation of the lanes, and the 8 lanes of a
// quarter warp reach 8 different 16-byte columns (mod 8) on both sides, so neither the writes nor
// the reads have bank conflicts (tests/host/test_tile_order.cc). Host and device.
#pragma once

namespace taco {

constexpr int tileSwizzle(int c, int nch) { return c * 8 / nch; }
constexpr int tileColumn(int lane, int c, int nch) { return lane ^ tileSwizzle(c, nch); }

}  // namespace taco
