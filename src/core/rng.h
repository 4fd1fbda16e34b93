// Seeded random numbers: xoshiro256** with splitmix64 seeding. The whole state is four
// words, so a checkpoint can save it and a resumed run draws the same numbers.
#pragma once

#include <array>
#include <cstdint>

namespace lmforge {

class Rng {
public:
    using State = std::array<uint64_t, 4>;

    explicit Rng(uint64_t seed = 0);

    uint64_t next_u64();
    // Uniform in [0, 1) with 24 random bits (exactly representable as float).
    float uniform();
    // Uniform integer in [0, n), n > 0, without modulo bias.
    uint64_t below(uint64_t n);
    // Standard normals by Box-Muller, filled in pairs so the state never holds a spare.
    void fill_normal(float* out, int64_t n, float mean, float std);

    const State& state() const { return s_; }
    void set_state(const State& s) { s_ = s; }

private:
    State s_{};
};

// 64 well-mixed bits from (seed, key): the seed of an item's own random draws (a masked-LM
// row's masks, say), so that they depend on neither the process that draws them nor the
// order of the draws.
uint64_t mix_seed(uint64_t seed, uint64_t key);

}  // namespace lmforge
