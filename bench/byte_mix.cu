// taco_byte_mix: what trivial kernels reach on fp32 decompress's byte mix (read 1 byte,
// write 4) and on pure reads and writes, as ratios to cudaMemcpy D2D in the same run, for
// several grid sizes (CTAs per SM; 0 = one thread per 16-byte unit, no loop). The ceiling
// the codec kernels are measured against in docs/results.md ("Codec kernels", "Grid size"). No arguments.
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

// each thread: 16 bytes in -> 64 bytes out (4 x float4), grid-stride over 16-byte units
template <int CS>
__global__ void expand(const uint4* __restrict__ in, float4* __restrict__ out, size_t n16) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n16; i += (size_t)gridDim.x * blockDim.x) {
    uint4 w = in[i];
    // out layout: unit i covers output floats [16 i, 16 i + 16); coalesce stores across the warp:
    // store k of the warp writes 32 consecutive float4s
    size_t base = (i & ~(size_t)31) * 4 + (threadIdx.x & 31);
    float4 f[4] = {make_float4(w.x & 255, w.y, w.z, w.w), make_float4(w.x, w.y & 255, w.z, w.w),
                   make_float4(w.x, w.y, w.z & 255, w.w), make_float4(w.x, w.y, w.z, w.w & 255)};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      if (CS) __stcs(out + base + 32 * k, f[k]);
      else out[base + 32 * k] = f[k];
    }
  }
}

// write-only: 64 bytes per thread iteration
template <int CS>
__global__ void fill(float4* __restrict__ out, size_t n16) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n16; i += (size_t)gridDim.x * blockDim.x) {
    size_t base = (i & ~(size_t)31) * 4 + (threadIdx.x & 31);
    float4 f = make_float4(i, 1, 2, 3);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      if (CS) __stcs(out + base + 32 * k, f);
      else out[base + 32 * k] = f;
    }
  }
}

// TMA bulk store: each warp stages its 2 KB (32 lanes x 64 B) in shared memory and lane 0
// stores it with one cp.async.bulk; double-buffered
__global__ void expandBulk(const uint4* __restrict__ in, float4* __restrict__ out, size_t n16) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  __shared__ float4 sbuf[8][2][128];
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
  int s = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n16; i += (size_t)gridDim.x * blockDim.x) {
    uint4 v = in[i];
    size_t base = (i & ~(size_t)31) * 4;
    if (lane == 0) asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
    __syncwarp();
    float4 f[4] = {make_float4(v.x & 255, v.y, v.z, v.w), make_float4(v.x, v.y & 255, v.z, v.w),
                   make_float4(v.x, v.y, v.z & 255, v.w), make_float4(v.x, v.y, v.z, v.w & 255)};
#pragma unroll
    for (int k = 0; k < 4; ++k) sbuf[w][s][lane + 32 * k] = f[k];
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncwarp();
    if (lane == 0) {
      uint32_t sa = (uint32_t)__cvta_generic_to_shared(&sbuf[w][s][0]);
      asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(out + base), "r"(sa), "r"(2048)
                   : "memory");
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    }
    s ^= 1;
  }
  if (lane == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#endif
}

__global__ void readSum(const uint4* __restrict__ in, size_t n16, unsigned* sink) {
  unsigned acc = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n16; i += (size_t)gridDim.x * blockDim.x) {
    uint4 w = in[i];
    acc ^= w.x ^ w.y ^ w.z ^ w.w;
  }
  if (acc == 0x12345678u) *sink = acc;
}

int main() {
  const size_t nOut = (size_t)1 << 30;  // bytes written (2^28 fp32)
  const size_t nIn = nOut / 4;
  void *a, *b, *c;
  CK(cudaMalloc(&a, nOut));
  CK(cudaMalloc(&b, nOut));
  CK(cudaMalloc(&c, 64));
  CK(cudaMemset(a, 1, nOut));
  int sms, major;
  CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  auto timeIt = [&](auto fn) {
    for (int i = 0; i < 3; ++i) fn();
    cudaEventRecord(e0);
    const int it = 20;
    for (int i = 0; i < it; ++i) fn();
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    return ms / it;
  };
  float tm = timeIt([&] { cudaMemcpyAsync(b, a, nOut, cudaMemcpyDeviceToDevice); });
  double mem = 2.0 * nOut / tm / 1e9;
  printf("memcpy D2D 1 GiB: %.3f ms, %.3f TB/s\n", tm, mem);
  size_t n16 = nIn / 16;
  auto report = [&](const char* name, float ms, double bytes) {
    double bw = bytes / ms / 1e9;
    printf("%-44s %.3f ms %.3f TB/s  x memcpy %.3f\n", name, ms, bw, bw / mem);
  };
  for (int per : {2, 4, 8, 16, 0}) {
    int grid = per ? sms * per : (int)((n16 + 255) / 256);
    char nm[64];
    snprintf(nm, 64, "expand 1->4 plain, %d CTA/SM", per);
    report(nm, timeIt([&] { expand<0><<<grid, 256>>>((const uint4*)a, (float4*)b, n16); }), 5.0 * nIn);
    snprintf(nm, 64, "expand 1->4 .cs, %d CTA/SM", per);
    report(nm, timeIt([&] { expand<1><<<grid, 256>>>((const uint4*)a, (float4*)b, n16); }), 5.0 * nIn);
    snprintf(nm, 64, "expand 1->4 TMA bulk store, %d CTA/SM", per);
    if (major >= 9) report(nm, timeIt([&] { expandBulk<<<grid, 256>>>((const uint4*)a, (float4*)b, n16); }), 5.0 * nIn);
  }
  for (int per : {4, 8, 0}) {
    int grid = per ? sms * per : (int)((n16 + 255) / 256);
    char nm[64];
    snprintf(nm, 64, "write-only plain, %d CTA/SM", per);
    report(nm, timeIt([&] { fill<0><<<grid, 256>>>((float4*)b, n16); }), 4.0 * nIn);
    snprintf(nm, 64, "write-only .cs, %d CTA/SM", per);
    report(nm, timeIt([&] { fill<1><<<grid, 256>>>((float4*)b, n16); }), 4.0 * nIn);
    snprintf(nm, 64, "read-only 1 GiB, %d CTA/SM", per);
    report(nm, timeIt([&] { readSum<<<grid, 256>>>((const uint4*)a, n16 * 4, (unsigned*)c); }), 4.0 * nIn);
  }
  report("cudaMemset 1 GiB (write-only)", timeIt([&] { cudaMemsetAsync(b, 0, nOut); }), (double)nOut);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  return 0;
}
