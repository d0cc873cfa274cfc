// The shared-memory layout of a tile stored in order (codec/tile_order.h, used by
// storeTileInOrder in codec/device/io.cuh): every lane's chunk has an entry of its own, the
// unit that store j of lane i reads is lane u / nch's chunk u % nch (u = 32 j + i), and the 8
// lanes of a quarter warp reach 8 different 16-byte columns (mod 8, so 8 different groups of 4
// banks) when they write and when they read, in both layouts (bf16: 4 chunks a lane; fp32: 8)
// and both row widths the kernels use (32 entries: a warp's region of the sums' slot; 256).
#include <set>
#include <utility>

#include "check.h"
#include "codec/tile_order.h"

using namespace taco;

int main() {
  for (int nch : {4, 8}) {
    for (int row : {32, 256}) {
      // Writes: lane o puts chunk c at row c, column tileColumn(o, c). A row's columns are a
      // permutation of the 32 lanes, so no two chunks share an entry.
      std::set<int> entries;
      for (int c = 0; c < nch; ++c) {
        std::set<int> columns;
        for (int o = 0; o < 32; ++o) {
          const int col = tileColumn(o, c, nch);
          TEST_ASSERT_MSG(col >= 0 && col < 32, "nch %d: lane %d chunk %d at column %d", nch, o, c, col);
          columns.insert(col);
          entries.insert(c * row + col);
        }
        TEST_ASSERT_EQ_INT((int)columns.size(), 32);
        for (int q = 0; q < 4; ++q) {  // the quarter warps of the write of chunk c
          std::set<int> groups;
          for (int o = 8 * q; o < 8 * q + 8; ++o) groups.insert((c * row + tileColumn(o, c, nch)) % 8);
          TEST_ASSERT_MSG(groups.size() == 8, "nch %d row %d: write of chunk %d, quarter %d: bank conflict", nch,
                          row, c, q);
        }
      }
      TEST_ASSERT_EQ_INT((int)entries.size(), 32 * nch);
      // Reads: store j of lane i takes unit u = 32 j + i, from where its lane wrote it; every
      // entry is read once, and no quarter warp has a bank conflict.
      std::set<std::pair<int, int>> units;  // (lane, chunk) read
      for (int j = 0; j < nch; ++j) {
        for (int q = 0; q < 4; ++q) {
          std::set<int> groups;
          for (int i = 8 * q; i < 8 * q + 8; ++i) {
            const int u = 32 * j + i, o = u / nch, c = u % nch;
            const int entry = c * row + tileColumn(o, c, nch);
            TEST_ASSERT_MSG(entries.count(entry) == 1, "nch %d: unit %d reads entry %d, which no lane wrote", nch, u,
                            entry);
            groups.insert(entry % 8);
            units.insert({o, c});
          }
          TEST_ASSERT_MSG(groups.size() == 8, "nch %d row %d: read of store %d, quarter %d: bank conflict", nch, row,
                          j, q);
        }
      }
      TEST_ASSERT_EQ_INT((int)units.size(), 32 * nch);  // every lane's every chunk is stored once
    }
  }
  // A swizzle that conflicts is caught: without it, a quarter warp's reads share groups (bf16).
  {
    std::set<int> groups;
    for (int i = 0; i < 8; ++i) groups.insert(((i % 4) * 32 + i / 4) % 8);
    TEST_ASSERT(groups.size() < 8);
  }
  return TEST_REPORT();
}
