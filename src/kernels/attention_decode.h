// Attention for one new position against cached keys and values: the last row of causal
// attention, for generation with a KV cache (cost O(n) per token instead of a full pass).
#pragma once

#include <cstdint>

namespace lmforge::kernels {

// out (C), q (C): head h in channels [h·HS, (h+1)·HS). kcache, vcache: n rows (positions
// 0..n-1, the new one included) of NKV·HS channels (grouped-query attention, attention.h: query
// head h reads key/value head h / (NH / NKV)), rows `stride` floats apart.
// scratch: NH·n floats (the scores).
void attention_decode(float* out, const float* q, const float* kcache, const float* vcache, int64_t n,
                      int64_t stride, int64_t C, int64_t NH, int64_t NKV, float* scratch);

}  // namespace lmforge::kernels
