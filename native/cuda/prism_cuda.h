/* The C interface of libprism_cuda.so, Prism's CUDA backend.
 *
 * The library is built by nvcc alone (no Node headers); the addon (prism_native.node,
 * native/cuda/host/) and the kernel-check program load it at run time with dlopen and
 * call these functions, so a machine without CUDA builds and runs everything else.
 *
 * Conventions: every function returns 0 on success, or nonzero with a message that
 * pc_last_error() returns (per calling thread, valid until the next call). Pointers are
 * host memory unless a comment says otherwise. Tensor types use GGML's numbers
 * (F32 0, F16 1, Q4_0 2, Q4_1 3, Q5_0 6, Q5_1 7, Q8_0 8, Q2_K 10, Q3_K 11, Q4_K 12, Q5_K 13,
 * Q6_K 14, IQ4_NL 20, IQ4_XS 23, BF16 30); weight bytes are the
 * file's own GGML blocks, rows innermost-last as GGUF stores them. */
#ifndef PRISM_CUDA_H
#define PRISM_CUDA_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a declaration here changes; the loader refuses another version. */
#define PC_ABI_VERSION 3

typedef struct pc_model pc_model;
typedef struct pc_context pc_context;

int pc_abi_version(void);
const char* pc_last_error(void);

/* ---- devices ---- */

typedef struct {
  char name[128];
  uint64_t total_bytes, free_bytes;
  int32_t multiprocessors, cc_major, cc_minor;
  uint64_t l2_bytes;
  double peak_bandwidth_gbs; /* from the memory clock and bus width; 0 when unknown */
  int32_t emulated;          /* 1 in the CPU emulation build used by tests */
} pc_device_info;

int pc_device_count(int32_t* count);
int pc_device_info_get(int32_t device, pc_device_info* out);
/* Device-to-device copy rate of the card in GB/s counting bytes read (the decode roofline):
 * the best of `passes` copies of `bytes`. */
int pc_measure_bandwidth(int32_t device, uint64_t bytes, int32_t passes, double* gbs);

/* ---- models ---- */

enum { PC_ARCH_LLAMA = 0, PC_ARCH_QWEN2 = 1, PC_ARCH_QWEN3 = 2 };

typedef struct {
  int32_t arch;
  int64_t vocab, hidden, intermediate, layers, heads, kv_heads, head_dim;
  double rope_theta, eps;
  int32_t rope_neox;               /* 1: pairs (i, i + d/2); 0: adjacent pairs (GGUF llama) */
  const float* rope_freq_factors;  /* [head_dim/2] divisors of the inverse frequencies, or NULL */
  int64_t sliding_window;          /* > 0: every layer's token at p sees p-W+1 .. p (Mistral); 0: all */
  int32_t kernels;                 /* PC_KERNELS_LEGACY or PC_KERNELS_FAST (decode steps) */
} pc_model_config;

/* The decode kernels: the issue-29 set (GEMV per matrix, separate norm, RoPE, SwiGLU and
 * split-combine kernels), or the fast set (a GEMV with the norm in its prologue and RoPE + KV,
 * SwiGLU or the residual in its epilogue: five kernels per layer). */
enum { PC_KERNELS_LEGACY = 0, PC_KERNELS_FAST = 1 };

/* Where a weight goes. Layer-less roles ignore `layer`. */
enum {
  PC_W_EMBED = 0,        /* [vocab × hidden], any type */
  PC_W_OUTPUT = 1,       /* [vocab × hidden]; absent = tied to the embedding */
  PC_W_QKV = 2,          /* [(heads + 2·kv_heads)·head_dim × hidden]: q, k, v rows */
  PC_W_O = 3,            /* [hidden × heads·head_dim] */
  PC_W_GATE_UP = 4,      /* [2·intermediate × hidden]: gate rows, then up rows */
  PC_W_DOWN = 5,         /* [hidden × intermediate] */
  PC_V_ATTN_NORM = 16,   /* vectors, f32: [hidden] */
  PC_V_FFN_NORM = 17,    /* [hidden] */
  PC_V_OUTPUT_NORM = 18, /* [hidden] */
  PC_V_QKV_BIAS = 19,    /* [(heads + 2·kv_heads)·head_dim] (qwen2) */
  PC_V_Q_NORM = 20,      /* [head_dim] (qwen3) */
  PC_V_K_NORM = 21       /* [head_dim] (qwen3) */
};

int pc_model_create(int32_t device, const pc_model_config* cfg, pc_model** out);
/* Rows [row_offset, row_offset + rows) of a matrix of `total_rows` rows: a matrix may come in
 * parts (q, k, v) uploaded one after another. A part of another type than the first makes
 * the matrix a list of parts, one kernel each. */
int pc_model_set_matrix(pc_model* m, int32_t role, int64_t layer, int32_t type, const void* bytes, int64_t rows,
                        int64_t cols, int64_t row_offset, int64_t total_rows);
int pc_model_set_vector(pc_model* m, int32_t role, int64_t layer, const float* values, int64_t n);
/* Checks that every weight the architecture needs is there. */
int pc_model_finish(pc_model* m);
/* Device bytes the weights take, and bytes a decode step reads. */
int pc_model_bytes(const pc_model* m, uint64_t* device_bytes, uint64_t* read_bytes);
void pc_model_destroy(pc_model* m);

/* ---- contexts ---- */

typedef struct {
  int64_t kv_blocks, block_size, max_batch_tokens, max_seqs;
} pc_context_options;

int pc_context_create(pc_model* m, const pc_context_options* opts, pc_context** out);
int pc_context_kv_bytes(const pc_context* c, uint64_t* bytes);
void pc_context_destroy(pc_context* c);

/* One step, as native/src/step_plan.h (already validated by the caller). */
typedef struct {
  int32_t T, S;
  const int32_t *tokens, *positions, *seq_token_offsets, *block_table_offsets, *block_tables;
  int64_t n_block_tables;
  const int32_t* block_copies; /* [src, dst] pairs */
  int64_t n_block_copies;      /* values (2 × pairs) */
  const uint8_t* sample;
  const float *temperature, *top_p, *repetition_penalty, *presence_penalty, *frequency_penalty;
  const int32_t *top_k, *penalty_token_offsets, *penalty_tokens;
  int64_t n_penalty_tokens;
  const double* uniform; /* [S]: each sequence's draw in [0, 1) (the CPU sampler's RNG) */
  const int32_t *allowed_mask_rows, *top_logprobs;
  int32_t return_logits; /* 0 none, 1 last token of each sequence, 2 every token */
} pc_step_plan;

typedef struct {
  /* Filled by pc_step_sample: tokens[S], logprobs[S], errors[S] (0 ok, 1 NaN logits,
   * 2 the mask allows nothing), top_ids/top_values[S × top_stride]. */
  int32_t* tokens;
  float* logprobs;
  int32_t* errors;
  int32_t top_stride;
  int32_t* top_ids;
  float* top_values;
  /* Raw logits when the plan asks: [S or T rows × vocab]. */
  float* logits;
} pc_step_result;

/* Starts the step's forward pass (asynchronous: returns once it is enqueued). */
int pc_step_forward(pc_context* c, const pc_step_plan* plan);
/* Applies the allowed-token masks (`mask_rows` rows of ceil(vocab/32) words, may be 0),
 * samples, and waits for the results. Call once after each pc_step_forward. */
int pc_step_sample(pc_context* c, const pc_step_plan* plan, const int32_t* masks, int64_t mask_rows,
                   pc_step_result* result);
/* Milliseconds the device spent in the last step (forward + sampling), or a negative value
 * when unknown. */
double pc_step_device_ms(const pc_context* c);
/* Kernels the last step's forward pass launched (sampling not counted): the kernel nodes of
 * the CUDA graph it replayed, or the launches counted as it ran. */
int pc_step_launches(const pc_context* c, int64_t* launches);

/* ---- kernel checks (native/cuda/check, tests): each runs one kernel on the device ---- */

/* y[n × rows] = x[n × cols] · Wᵀ, W in the file's bytes of `type`; path 0: what the engine
 * would choose for n, 1: the GEMV kernels (n ≤ 8), 2: the GEMM path (bf16 operands), 3: the
 * fast GEMV (n ≤ 8, its own split-K choice), 4: the fast GEMV split three ways along K. */
int pc_check_matmul(int32_t device, int32_t type, const void* weights, int64_t rows, int64_t cols, const float* x,
                    int64_t n, float* y, int32_t path);
/* out[rows × cols] = the device's f32 decoding of the weights. */
int pc_check_dequantize(int32_t device, int32_t type, const void* weights, int64_t rows, int64_t cols, float* out);
int pc_check_rms_norm(int32_t device, const float* x, int64_t rows, int64_t d, const float* w, float eps, float* out);
int pc_check_swiglu(int32_t device, const float* gate_up, int64_t rows, int64_t inter, float* out);

/* Bias, q/k norm, RoPE and the q scale on T rows of [q | k | v] (each token its own
 * sequence at `positions[t]`); q_out [T × heads·hd] f32, k_out and v_out [T × kv_heads·hd]
 * as the cache stores them (f16). */
typedef struct {
  int64_t T;
  int32_t heads, kv_heads, head_dim, neox;
  const float* qkv;
  const int32_t* positions;
  const float* inv_freq; /* [head_dim/2] */
  float q_scale, eps;
  const float *bias, *q_norm, *k_norm; /* or NULL */
} pc_rope_check;
int pc_check_rope_kv(int32_t device, const pc_rope_check* r, float* q_out, uint16_t* k_out, uint16_t* v_out);

/* Attention of the plan's tokens over a given paged cache. */
typedef struct {
  int32_t heads, kv_heads, head_dim, block_size, kv_blocks;
  const uint16_t *k_cache, *v_cache; /* [kv_blocks × kv_heads × block_size × head_dim] f16 */
  const float* q;                    /* [T × heads·head_dim], rotated and scaled */
  int32_t T, S;
  const int32_t *seq_token_offsets, *positions, *block_table_offsets, *block_tables;
  int64_t n_block_tables;
  int32_t splits; /* 0: as a step would choose */
  int32_t window; /* > 0: a token at p sees p-window+1 .. p only; 0: the whole context */
} pc_attention_check;
int pc_check_attention(int32_t device, const pc_attention_check* a, float* out);

/* Sampling of S rows of logits [S × vocab] by the plan's sampling fields (S, sample,
 * temperature, top_k, top_p, penalties, uniform, allowed_mask_rows, top_logprobs). */
int pc_check_sample(int32_t device, const float* logits, int64_t vocab, const pc_step_plan* plan, const int32_t* masks,
                    int64_t mask_rows, pc_step_result* result);

#ifdef __cplusplus
}
#endif

#endif /* PRISM_CUDA_H */
