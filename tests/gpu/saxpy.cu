// SAXPY with a result check that also says which libcuda.so it mapped, for
// tests/gpu/run.sh. Prints key=value lines.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

__global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// The libcuda the process really mapped, from /proc/self/maps.
static void print_mapped_libcuda() {
  FILE* maps = std::fopen("/proc/self/maps", "r");
  char line[4096];
  bool found = false;
  while (maps && std::fgets(line, sizeof line, maps)) {
    const char* path = std::strchr(line, '/');
    if (path && std::strstr(path, "/libcuda.so")) {
      std::printf("libcuda=%s", path);
      found = true;
      break;
    }
  }
  if (!found) std::printf("libcuda=none\n");
  if (maps) std::fclose(maps);
}

int main() {
  cudaError_t status = cudaFree(nullptr);  // initializes the runtime, which dlopens libcuda.so.1
  print_mapped_libcuda();
  int driver = 0;
  cudaDriverGetVersion(&driver);
  std::printf("driver_api_version=%d\n", driver);
  std::printf("cuda_status=%d %s\n", int(status), cudaGetErrorName(status));
  if (status != cudaSuccess) {
    std::printf("cuda_error=%s\nsaxpy=not run\n", cudaGetErrorString(status));
    return 2;
  }
  const int n = 1 << 20;
  std::vector<float> x(n, 1.0f), y(n, 2.0f);
  float *dx = nullptr, *dy = nullptr;
  cudaMalloc(&dx, n * sizeof(float));
  cudaMalloc(&dy, n * sizeof(float));
  cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  saxpy<<<(n + 255) / 256, 256>>>(n, 2.0f, dx, dy);
  status = cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost);
  float max_error = 0;
  for (float v : y) max_error = std::fmax(max_error, std::fabs(v - 4.0f));
  std::printf("saxpy=%s max_error=%g status=%s\n", status == cudaSuccess && max_error == 0 ? "ok" : "wrong", max_error,
              cudaGetErrorName(status));
  return status == cudaSuccess && max_error == 0 ? 0 : 1;
}
