// More nvcc corpus: printf (extern vprintf prototype), static and dynamic shared memory,
// local-memory arrays, a recursive device function, atomicCAS loops, warp votes and a
// kernel with several early exits.
// Regenerate: nvcc -arch=sm_90a -lineinfo -ptx cuda_misc.cu -o nvcc_cuda_misc.ptx
//             nvcc -arch=sm_90a -G -ptx cuda_misc.cu -o nvcc_cuda_misc_debug.ptx
#include <cstdio>

__device__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

__device__ float atomic_max_float(float* addr, float v) {
  int* a = (int*)addr;
  int old = *a, assumed;
  do {
    assumed = old;
    if (__int_as_float(assumed) >= v) break;
    old = atomicCAS(a, assumed, __float_as_int(v));
  } while (assumed != old);
  return __int_as_float(old);
}

extern "C" __global__ void tile_transpose(const float* in, float* out, int n) {
  __shared__ float tile[32][33];
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
  if (x < n && y < n) tile[threadIdx.y][threadIdx.x] = in[y * n + x];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x;
  y = blockIdx.x * 32 + threadIdx.y;
  if (x < n && y < n) out[y * n + x] = tile[threadIdx.x][threadIdx.y];
}

extern "C" __global__ void local_sort(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i * 8 >= n) return;
  int v[8];
  for (int k = 0; k < 8; k++) v[k] = in[i * 8 + ((k * 5 + i) & 7)];
  for (int a = 0; a < 8; a++)
    for (int b = a + 1; b < 8; b++)
      if (v[b] < v[a]) { int t = v[a]; v[a] = v[b]; v[b] = t; }
  for (int k = 0; k < 8; k++) out[i * 8 + k] = v[k];
}

extern "C" __global__ void max_and_fib(const float* x, int n, float* best, int* fibs) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (__all_sync(0xffffffffu, x[i] < 0.0f)) return;
  atomic_max_float(best, x[i]);
  if (i < 16) fibs[i] = fib(i);
  if (i == 0) printf("block %d saw %f\n", blockIdx.x, x[i]);
}
