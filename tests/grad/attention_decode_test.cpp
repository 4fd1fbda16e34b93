// kernels/attention_decode: one row against a KV cache equals the last row of the causal
// attention twin over the whole sequence. (Forward only: generation has no backward.)
#include "kernels/attention_decode.h"

#include "gradcheck.h"
#include "kernels/ref/attention.h"

namespace lmforge::test {
namespace {

TEST(AttentionDecode, MatchesTheLastRowOfFullAttention) {
    struct Shape { int64_t T, NH, C; };
    for (const Shape s : {Shape{1, 1, 4}, Shape{7, 3, 60}, Shape{65, 2, 128}}) {
        const int64_t T = s.T, NH = s.NH, C = s.C;
        const auto qkv = random_vector(T * 3 * C, 11, 2.0f);
        std::vector<double> out_r(T * C), lse_r(NH * T);
        kernels::ref::attention_forward(out_r.data(), lse_r.data(), convert<double>(qkv).data(), 1, T, C, NH, NH);
        std::vector<float> out(C), scratch(NH * T);
        // The cache rows are the k and v parts of qkv's rows: stride 3C.
        kernels::attention_decode(out.data(), qkv.data() + (T - 1) * 3 * C, qkv.data() + C, qkv.data() + 2 * C, T,
                                  3 * C, C, NH, NH, scratch.data());
        const std::vector<double> last(out_r.end() - C, out_r.end());
        EXPECT_TRUE(close(out, last, kTwinRtol, kTwinAtol)) << "T=" << T;
    }
}

TEST(AttentionDecode, GroupedQueryMatchesTheLastRowOfFullAttention) {
    const int64_t T = 9, NH = 6, NKV = 2, HS = 4, C = NH * HS, W = C + 2 * NKV * HS;
    const auto qkv = random_vector(T * W, 17, 2.0f);
    std::vector<double> out_r(T * C), lse_r(NH * T);
    kernels::ref::attention_forward(out_r.data(), lse_r.data(), convert<double>(qkv).data(), 1, T, C, NH, NKV);
    std::vector<float> out(C), scratch(NH * T);
    kernels::attention_decode(out.data(), qkv.data() + (T - 1) * W, qkv.data() + C, qkv.data() + C + NKV * HS, T, W,
                              C, NH, NKV, scratch.data());
    const std::vector<double> last(out_r.end() - C, out_r.end());
    EXPECT_TRUE(close(out, last, kTwinRtol, kTwinAtol));
}

}  // namespace
}  // namespace lmforge::test
