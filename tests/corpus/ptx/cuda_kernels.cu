// nvcc corpus for gtop's PTX engine: several .entry kernels, non-inlined .func device
// functions (with early returns), shared memory, atomics, warp shuffles and wmma (mma.sync).
// Regenerate: nvcc -arch=sm_90a -lineinfo -ptx cuda_kernels.cu -o nvcc_cuda_kernels.ptx
#include <mma.h>

__device__ __noinline__ float axpy_one(float a, float x, float y) { return a * x + y; }

__device__ __noinline__ int clamp_bin(int v, int bins) {
  if (v < 0) return 0;
  if (v >= bins) return bins - 1;
  return v;
}

extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  y[i] = axpy_one(a, x[i], y[i]);
}

extern "C" __global__ void histogram(const int* data, int n, int bins, unsigned* out) {
  extern __shared__ unsigned local[];
  for (int b = threadIdx.x; b < bins; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&local[clamp_bin(data[i], bins)], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < bins; b += blockDim.x) atomicAdd(&out[b], local[b]);
}

extern "C" __global__ void warp_sum(const int* x, int n, long long* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  long long v = i < n ? x[i] : 0;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) atomicAdd((unsigned long long*)out, (unsigned long long)v);
}

// One warp computes one 16x16 tile of C = A(row-major, MxK) * B(col-major, KxN).
extern "C" __global__ void wmma_gemm(const __half* a, const __half* b, float* c, int M, int N,
                                     int K) {
  using namespace nvcuda;
  int tm = blockIdx.y, tn = blockIdx.x;
  if (tm * 16 >= M || tn * 16 >= N) return;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.0f);
  for (int k = 0; k < K; k += 16) {
    wmma::load_matrix_sync(fa, a + tm * 16 * K + k, K);
    wmma::load_matrix_sync(fb, b + tn * 16 * K + k, K);
    wmma::mma_sync(fc, fa, fb, fc);
  }
  wmma::store_matrix_sync(c + tm * 16 * N + tn * 16, fc, N, wmma::mem_row_major);
}

// A raw mma.sync (m16n8k16, bf16) through inline PTX, as hand-written kernels do.
extern "C" __global__ void mma_bf16_tile(const unsigned* a, const unsigned* b, float* d) {
  unsigned lane = threadIdx.x & 31;
  unsigned a0 = a[lane * 4], a1 = a[lane * 4 + 1], a2 = a[lane * 4 + 2], a3 = a[lane * 4 + 3];
  unsigned b0 = b[lane * 2], b1 = b[lane * 2 + 1];
  float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  d[lane * 4] = d0;
  d[lane * 4 + 1] = d1;
  d[lane * 4 + 2] = d2;
  d[lane * 4 + 3] = d3;
}
