// The device heap: malloc/free and operator new/delete, which the HIP
// headers implement with the ROCm device library's allocator
// (__ockl_dm_alloc / __ockl_dm_dealloc).
#include <hip/hip_runtime.h>

struct Node {
  int value;
  Node* next;
};

// Each thread builds a linked list of its first n multiples with new, sums
// it, and frees it with delete.
__global__ void list_sum(int* out, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  Node* head = nullptr;
  for (int i = 1; i <= n; ++i)
    head = new Node{t * i, head};
  int sum = 0;
  while (head) {
    Node* next = head->next;
    sum += head->value;
    delete head;
    head = next;
  }
  out[t] = sum;
}

// A per-thread scratch buffer from malloc: prefix sums of a row.
__global__ void row_prefix(const float* in, float* out, int width) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  float* tmp = static_cast<float*>(malloc(width * sizeof(float)));
  if (!tmp) {
    out[row * width] = -1.0f;
    return;
  }
  float acc = 0.0f;
  for (int i = 0; i < width; ++i)
    tmp[i] = acc += in[row * width + i];
  for (int i = 0; i < width; ++i)
    out[row * width + i] = tmp[i];
  free(tmp);
}

// Arrays through new[] / delete[].
__global__ void reversed_copy(const int* in, int* out, int n) {
  if (threadIdx.x != 0 || blockIdx.x != 0)
    return;
  int* buf = new int[n];
  for (int i = 0; i < n; ++i)
    buf[n - 1 - i] = in[i];
  for (int i = 0; i < n; ++i)
    out[i] = buf[i];
  delete[] buf;
}
