// Dynamically sized shared memory: extern __shared__ arrays whose size the
// launch gives, one per kernel and one carved into two typed regions.

extern __shared__ float sdata[];

// Block sum in the dynamic buffer (blockDim.x floats).
__global__ void block_sum(const float* in, float* out, int n) {
  unsigned t = threadIdx.x;
  unsigned i = blockIdx.x * blockDim.x + t;
  sdata[t] = i < unsigned(n) ? in[i] : 0.0f;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s)
      sdata[t] += sdata[t + s];
    __syncthreads();
  }
  if (t == 0)
    out[blockIdx.x] = sdata[0];
}

// One dynamic buffer split into blockDim.x ints and blockDim.x doubles.
__global__ void split_buffer(const int* keys, const double* vals, double* out, int n) {
  extern __shared__ __align__(8) unsigned char smem[];
  double* svals = reinterpret_cast<double*>(smem);
  int* skeys = reinterpret_cast<int*>(svals + blockDim.x);
  unsigned t = threadIdx.x;
  unsigned i = blockIdx.x * blockDim.x + t;
  skeys[t] = i < unsigned(n) ? keys[i] : 0;
  svals[t] = i < unsigned(n) ? vals[i] : 0.0;
  __syncthreads();
  if (i < unsigned(n))
    out[i] = svals[(t + skeys[t]) % blockDim.x];
}
