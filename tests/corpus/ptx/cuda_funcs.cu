// nvcc corpus for instrumenting .func device functions: non-inlined device functions that
// load and store global memory (with parameters and return values, void, recursive,
// __noinline__ and externally visible), one issuing mma.sync from a __noinline__
// function, and several .entry kernels calling them.
// Relocatable device code (-rdc=true) keeps external linkage: .visible .func for the
// non-static functions, .weak .func for the template instance.
// Regenerate: nvcc -arch=sm_90a -rdc=true -lineinfo -ptx cuda_funcs.cu -o nvcc_cuda_funcs.ptx
#include <cuda_bf16.h>

__device__ __noinline__ float load_scaled(const float* p, int i, float s) { return p[i] * s; }

__device__ __noinline__ void store_pair(float2* out, int i, float a, float b) {
  out[i] = make_float2(a, b);
}

// recursive: a tree sum over global memory
__device__ __noinline__ float tree_sum(const float* p, int lo, int hi) {
  if (hi - lo <= 2) return hi - lo == 2 ? p[lo] + p[lo + 1] : p[lo];
  int mid = (lo + hi) / 2;
  return tree_sum(p, lo, mid) + tree_sum(p, mid, hi);
}

// externally visible (.visible .func); a pointer written through a global store
extern "C" __device__ __noinline__ int bump(int* counter, int by) {
  int v = counter[0] + by;
  counter[0] = v;
  return v;
}

// a tensor-core instruction outside any kernel: one m16n8k16 bf16 mma.sync per call
__device__ __noinline__ void mma_tile(const unsigned* a, const unsigned* b, float* c) {
  int lane = threadIdx.x & 31;
  unsigned a0 = a[lane * 4], a1 = a[lane * 4 + 1], a2 = a[lane * 4 + 2], a3 = a[lane * 4 + 3];
  unsigned b0 = b[lane * 2], b1 = b[lane * 2 + 1];
  float d0 = c[lane * 4], d1 = c[lane * 4 + 1], d2 = c[lane * 4 + 2], d3 = c[lane * 4 + 3];
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  c[lane * 4] = d0;
  c[lane * 4 + 1] = d1;
  c[lane * 4 + 2] = d2;
  c[lane * 4 + 3] = d3;
}

// a template instance: .weak .func
template <typename T>
__device__ __noinline__ T load_max(const T* p, int i, int j) { return p[i] > p[j] ? p[i] : p[j]; }

extern "C" __global__ void pair_max(const double* in, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = load_max(in, 2 * i, 2 * i + 1);
}

extern "C" __global__ void scale_pairs(const float* in, float2* out, int n, float s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) store_pair(out, i, load_scaled(in, 2 * i, s), load_scaled(in, 2 * i + 1, s));
}

extern "C" __global__ void block_sums(const float* in, float* out, int* done, int per) {
  if (threadIdx.x == 0) {
    out[blockIdx.x] = tree_sum(in, blockIdx.x * per, (blockIdx.x + 1) * per);
    bump(done, 1);
  }
}

extern "C" __global__ void mma_calls(const unsigned* a, const unsigned* b, float* c, int reps) {
  for (int r = 0; r < reps; ++r) mma_tile(a, b, c + blockIdx.x * 128);
}

// no .func call: instrumented as before
extern "C" __global__ void copy(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}
