// libtaco from C++: a compressed AllReduce on a loopback world of 2 ranks
// (both living in this process on one GPU), checked against the exact sum.
// Without a GPU it says so, exercises the codec on the host, and exits 0.
//
//   ./taco_allreduce [count]        (default 1 << 20 fp32 elements per rank)
#include <taco.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#define TACO_OK(call)                                                                 \
  do {                                                                                \
    tacoResult_t rc_ = (call);                                                        \
    if (rc_ != tacoSuccess) {                                                         \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n  %s\n", __FILE__, __LINE__, #call, \
                   tacoGetErrorString(rc_), tacoGetLastError(nullptr));               \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

#define CUDA_OK(call)                                                                   \
  do {                                                                                  \
    cudaError_t e_ = (call);                                                            \
    if (e_ != cudaSuccess) {                                                            \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,         \
                   cudaGetErrorString(e_));                                             \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

namespace {

std::vector<float> laplace(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  std::vector<float> x(n);
  for (auto& v : x) {
    float s = u(gen);
    float a = std::fmin(std::fabs(s), 0.5f - 0x1p-25f);  // u can return -0.5: keep the log finite
    v = (s < 0 ? 1.0f : -1.0f) * std::log1p(-2.0f * a);
  }
  return x;
}

// relative RMS error sqrt(sum (y-e)^2 / sum e^2), in double
double rmsError(const std::vector<float>& y, const std::vector<double>& e) {
  double num = 0, den = 0;
  for (size_t i = 0; i < e.size(); ++i) {
    double d = y[i] - e[i];
    num += d * d;
    den += e[i] * e[i];
  }
  return den > 0 ? std::sqrt(num / den) : 0.0;
}

// No GPU: compress and decompress on the CPU (bit-identical to the GPU kernels).
int hostOnly(size_t n) {
  tacoCodec_t codec;
  TACO_OK(tacoCodecFind("taco", &codec));
  tacoCodecInfo_t info;
  TACO_OK(tacoCodecGetInfo(codec, &info));
  size_t bytes = 0;
  TACO_OK(tacoCompressedSize(codec, n, tacoFloat32, &bytes));
  std::vector<float> x = laplace(n, 1), y(n);
  std::vector<unsigned char> wire(bytes);
  TACO_OK(tacoHostCompress(codec, x.data(), n, tacoFloat32, wire.data(), bytes));
  TACO_OK(tacoHostDecompress(codec, wire.data(), bytes, y.data(), n, tacoFloat32));
  std::vector<double> e(x.begin(), x.end());
  double err = rmsError(y, e);
  std::printf("host codec %s (%s): %zu fp32 -> %zu bytes (%.2fx), rms error %.3e\n", info.name,
              info.description, n, bytes, 4.0 * n / bytes, err);
  return err < 0.1 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 0) : (size_t(1) << 20);
  std::printf("libtaco %d (header %d)\n", tacoGetVersion(), TACO_VERSION_CODE);

  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::printf("no CUDA GPU present: running the codec on the host only\n");
    return hostOnly(n);
  }

  const int P = 2;
  tacoConfig_t config = TACO_CONFIG_INITIALIZER;
  config.codec = "taco";
  config.fallbackBytes = 0;  // compress at every size (the default falls back to plain below 1 MiB)
  tacoComm_t comms[P];
  TACO_OK(tacoCommInitLoopback(comms, P, &config));
  size_t ws = 0;
  TACO_OK(tacoCommWorkspaceBytes(comms[0], &ws));

  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<std::vector<float>> host(P);
  std::vector<double> exact(n, 0.0);
  float* buf[P];
  for (int r = 0; r < P; ++r) {
    host[r] = laplace(n, 100 + r);
    for (size_t i = 0; i < n; ++i) exact[i] += host[r][i];
    CUDA_OK(cudaMalloc(&buf[r], n * sizeof(float)));
    CUDA_OK(cudaMemcpy(buf[r], host[r].data(), n * sizeof(float), cudaMemcpyHostToDevice));
  }

  // One thread drives both ranks: their calls go inside one group.
  TACO_OK(tacoGroupStart());
  for (int r = 0; r < P; ++r) TACO_OK(tacoAllReduce(buf[r], buf[r], n, tacoFloat32, tacoSum, comms[r], stream));
  TACO_OK(tacoGroupEnd());
  CUDA_OK(cudaStreamSynchronize(stream));

  std::vector<std::vector<float>> out(P, std::vector<float>(n));
  for (int r = 0; r < P; ++r)
    CUDA_OK(cudaMemcpy(out[r].data(), buf[r], n * sizeof(float), cudaMemcpyDeviceToHost));
  bool same = true;
  for (size_t i = 0; i < n && same; ++i) same = out[0][i] == out[1][i] || (std::isnan(out[0][i]) && std::isnan(out[1][i]));
  double err = rmsError(out[0], exact);
  std::printf("loopback AllReduce of %zu fp32 on %d ranks, codec taco (workspace %zu bytes per rank): "
              "rms error %.3e vs exact, ranks %s\n",
              n, P, ws, err, same ? "bit-identical" : "DIFFER");

  for (int r = 0; r < P; ++r) {
    CUDA_OK(cudaFree(buf[r]));
    TACO_OK(tacoCommDestroy(comms[r]));
  }
  CUDA_OK(cudaStreamDestroy(stream));
  return (same && err < 0.1) ? 0 : 1;
}
