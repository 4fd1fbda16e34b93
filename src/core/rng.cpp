#include "core/rng.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

namespace lmforge {

namespace {

uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

Rng::Rng(uint64_t seed) {
    for (auto& w : s_) w = splitmix64(seed);
}

uint64_t Rng::next_u64() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
}

float Rng::uniform() { return static_cast<float>(next_u64() >> 40) * 0x1.0p-24f; }

uint64_t Rng::below(uint64_t n) {
    // Lemire's method: multiply-high, reject the short sliver that would bias small values.
    __uint128_t m = static_cast<__uint128_t>(next_u64()) * n;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < n) {
        const uint64_t threshold = -n % n;
        while (low < threshold) {
            m = static_cast<__uint128_t>(next_u64()) * n;
            low = static_cast<uint64_t>(m);
        }
    }
    return static_cast<uint64_t>(m >> 64);
}

void Rng::fill_normal(float* out, int64_t n, float mean, float std) {
    // The stream is sequential, so the uniforms are drawn in order, a block at a time; the
    // logarithms and sines, nearly all of the time (14 of a 26 s `bench --model llama-1b
    // --lora 16` drew its base), run over them on every thread: the same numbers as one.
    constexpr int64_t kPairs = int64_t{1} << 14;
    const int64_t pairs = (n + 1) / 2;
    std::vector<uint64_t> bits(static_cast<size_t>(2 * std::min(kPairs, pairs)));
    for (int64_t p0 = 0; p0 < pairs; p0 += kPairs) {
        const int64_t np = std::min(kPairs, pairs - p0);
        for (int64_t j = 0; j < 2 * np; j++) bits[j] = next_u64();
#pragma omp parallel for schedule(static) if (np >= 1024)
        for (int64_t j = 0; j < np; j++) {
            // u1 in (0, 1] so log(u1) is finite.
            const double u1 = 1.0 - static_cast<double>(bits[2 * j] >> 11) * 0x1.0p-53;
            const double u2 = static_cast<double>(bits[2 * j + 1] >> 11) * 0x1.0p-53;
            const double r = std::sqrt(-2.0 * std::log(u1));
            const double theta = 2.0 * std::numbers::pi * u2;
            const int64_t i = 2 * (p0 + j);
            out[i] = static_cast<float>(mean + std * r * std::cos(theta));
            if (i + 1 < n) out[i + 1] = static_cast<float>(mean + std * r * std::sin(theta));
        }
    }
}

uint64_t mix_seed(uint64_t seed, uint64_t key) {
    // splitmix64's finaliser over both: every input bit reaches every output bit.
    uint64_t z = seed * 0x9E3779B97F4A7C15ull ^ (key + 0x632BE59BD9B4E019ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

}  // namespace lmforge
