// data/: shards and the DataLoader, on synthetic shards whose tokens are their own global
// positions, so every window says where it came from (as llm.c's dataloader test does).
#include "data/dataloader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "core/error.h"
#include "data/shard.h"
#include "temp_dir.h"

namespace lmforge {
namespace {

namespace fs = std::filesystem;

class DataLoaderTest : public test::TempDirTest {
protected:
    void SetUp() override {
        TempDirTest::SetUp();
        // Three shards of uneven sizes; token value = global position.
        uint16_t next = 0;
        for (const int n : {1000, 1501, 777}) {
            std::vector<uint16_t> t(n);
            for (auto& x : t) x = next++;
            write_shard((dir_ / fmt_name("train", shards_++)).string(), t);
            sizes_.push_back(n);
        }
    }
    static std::string fmt_name(const std::string& split, int i) {
        char buf[64];
        std::snprintf(buf, sizeof(buf), "%s_%06d.bin", split.c_str(), i);
        return buf;
    }
    DataLoaderOptions options(int64_t B, int64_t T, int rank = 0, int world = 1, bool shuffle = true) {
        return {dir_.string(), "train", B, T, rank, world, shuffle, 42, 0};
    }
    // The first input token of each row of the next batch: identifies the window.
    std::vector<int32_t> next_starts(DataLoader& dl, int64_t B, int64_t T) {
        std::vector<int32_t> x(B * T), y(B * T);
        dl.next_batch(x.data(), y.data());
        std::vector<int32_t> starts;
        for (int64_t b = 0; b < B; b++) {
            for (int64_t t = 0; t < T; t++) {
                EXPECT_EQ(y[b * T + t], x[b * T + t] + 1) << "targets are the next tokens";
                if (t > 0) {
                    EXPECT_EQ(x[b * T + t], x[b * T + t - 1] + 1) << "a window is contiguous";
                }
            }
            starts.push_back(x[b * T]);
        }
        return starts;
    }
    int shards_ = 0;
    std::vector<int> sizes_;
};

TEST_F(DataLoaderTest, RankSlicesAreDisjointAndCoverAnEpoch) {
    const int64_t B = 3, T = 16;
    const int world = 3;
    std::vector<std::unique_ptr<DataLoader>> ranks;
    for (int r = 0; r < world; r++) ranks.push_back(std::make_unique<DataLoader>(options(B, T, r, world)));
    const int64_t windows = ranks[0]->windows_per_epoch();
    EXPECT_EQ(windows, (1000 - 1) / 16 + (1501 - 1) / 16 + (777 - 1) / 16);
    std::multiset<int32_t> seen;
    for (int64_t step = 0; step < windows / (B * world); step++) {
        for (auto& dl : ranks) {
            for (int32_t s : next_starts(*dl, B, T)) seen.insert(s);
        }
    }
    // Every window at most once; all but the last partial global batch seen.
    EXPECT_EQ(std::set<int32_t>(seen.begin(), seen.end()).size(), seen.size());
    EXPECT_EQ(static_cast<int64_t>(seen.size()), windows / (B * world) * B * world);
    for (int32_t s : seen) {  // every start is a window start of its shard
        const int32_t in_shard = s < 1000 ? s : s < 2501 ? s - 1000 : s - 2501;
        EXPECT_EQ(in_shard % T, 0) << s;
    }
}

TEST_F(DataLoaderTest, EpochWrapsIntoANewOrder) {
    const int64_t B = 1, T = 50;
    DataLoader dl(options(B, T));
    const int64_t W = dl.windows_per_epoch();
    std::vector<int32_t> first, second;
    for (int64_t i = 0; i < W; i++) first.push_back(next_starts(dl, B, T)[0]);
    EXPECT_EQ(dl.state().epoch, 1);
    EXPECT_EQ(dl.state().cursor, 0);
    for (int64_t i = 0; i < W; i++) second.push_back(next_starts(dl, B, T)[0]);
    EXPECT_EQ(std::set<int32_t>(first.begin(), first.end()).size(), static_cast<size_t>(W));
    EXPECT_EQ(std::set<int32_t>(first.begin(), first.end()), std::set<int32_t>(second.begin(), second.end()));
    EXPECT_NE(first, second) << "each epoch is shuffled afresh";
}

TEST_F(DataLoaderTest, RestoredStateYieldsTheSameBatches) {
    const int64_t B = 4, T = 8;
    DataLoader a(options(B, T, 1, 2));
    for (int i = 0; i < 150; i++) next_starts(a, B, T);  // past an epoch boundary
    const DataLoaderState saved = a.state();
    std::vector<std::vector<int32_t>> want;
    for (int i = 0; i < 100; i++) want.push_back(next_starts(a, B, T));
    DataLoader b(options(B, T, 1, 2));
    b.restore(saved);
    for (int i = 0; i < 100; i++) ASSERT_EQ(next_starts(b, B, T), want[i]) << "batch " << i;
    DataLoaderState other = saved;
    other.windows++;
    EXPECT_THROW(b.restore(other), InputError);
}

TEST_F(DataLoaderTest, SequentialModeReadsInFileOrder) {
    const int64_t B = 2, T = 100;
    DataLoader dl(options(B, T, 0, 1, false));
    EXPECT_EQ(next_starts(dl, B, T), (std::vector<int32_t>{0, 100}));
    for (int i = 0; i < 3; i++) next_starts(dl, B, T);  // windows 2..7
    // Shard 0 has 9 windows (0..8): the next batch takes its last and shard 1's first (at 1000).
    EXPECT_EQ(next_starts(dl, B, T), (std::vector<int32_t>{800, 1000}));
}

TEST_F(DataLoaderTest, LlmcNanogptAndNumpyShardsReadAlike) {
    std::vector<uint16_t> t(300);
    for (size_t i = 0; i < t.size(); i++) t[i] = static_cast<uint16_t>(7 * i % 1000);
    const fs::path d = dir_ / "formats";
    for (const char* sub : {"llmc", "raw", "npy"}) fs::create_directories(d / sub);
    write_shard((d / "llmc" / "val_000000.bin").string(), t);
    std::ofstream((d / "raw" / "val.bin"), std::ios::binary).write(reinterpret_cast<const char*>(t.data()), 600);
    {
        std::string header = "{'descr': '<u2', 'fortran_order': False, 'shape': (300,), }";
        header.append(64 - (10 + header.size() + 1) % 64, ' ');
        header += '\n';
        std::ofstream out(d / "npy" / "val.npy", std::ios::binary);
        const uint16_t len = static_cast<uint16_t>(header.size());
        out.write("\x93NUMPY\x01\x00", 8);
        out.write(reinterpret_cast<const char*>(&len), 2);
        out << header;
        out.write(reinterpret_cast<const char*>(t.data()), 600);
    }
    std::vector<std::vector<int32_t>> batches;
    for (const char* sub : {"llmc", "raw", "npy"}) {
        DataLoader dl({(d / sub).string(), "val", 2, 10, 0, 1, true, 3, 1000});
        std::vector<int32_t> x(20), y(20);
        dl.next_batch(x.data(), y.data());
        batches.push_back(x);
        EXPECT_EQ(dl.windows_per_epoch(), 29) << sub;
    }
    EXPECT_EQ(batches[0], batches[1]);
    EXPECT_EQ(batches[0], batches[2]);
}

// llm.c's own file names: the split between underscores, and a headed shard without the
// _<digits> ending (its tiny_shakespeare_val.bin); a file of another split stays out.
TEST_F(DataLoaderTest, LlmcFileNamesAreFoundAndRead) {
    std::vector<uint16_t> t(300);
    for (size_t i = 0; i < t.size(); i++) t[i] = static_cast<uint16_t>(3 * i % 500);
    const fs::path d = dir_ / "llmc_names";
    fs::create_directories(d);
    write_shard((d / "fineweb_val_000000.bin").string(), t);
    write_shard((d / "tiny_shakespeare_val.bin").string(), t);
    write_shard((d / "fineweb_train_000001.bin").string(), t);
    write_shard((d / "interval_000000.bin").string(), t);        // "val" inside a word: not the split
    write_shard((d / "fineweb_valid_000000.bin").string(), t);  // nor "_val" starting a longer word
    EXPECT_EQ(find_shards(d.string(), "val"),
              (std::vector<std::string>{(d / "fineweb_val_000000.bin").string(), (d / "tiny_shakespeare_val.bin").string()}));
    EXPECT_EQ(find_shards(d.string(), "train"), (std::vector<std::string>{(d / "fineweb_train_000001.bin").string()}));
    const Shard headed((d / "tiny_shakespeare_val.bin").string());
    EXPECT_EQ(headed.format(), ShardFormat::Llmc);
    EXPECT_EQ(std::vector<uint16_t>(headed.tokens().begin(), headed.tokens().end()), t);
    // Raw tokens that merely begin like the magic are still raw: the count does not fit.
    const std::vector<uint16_t> raw = {55432, 308, 1, 0, 7, 7};
    std::ofstream(d / "raw.bin", std::ios::binary).write(reinterpret_cast<const char*>(raw.data()), 12);
    EXPECT_EQ(Shard((d / "raw.bin").string()).format(), ShardFormat::Raw);
}

std::string shard_error(const std::string& path) {
    try {
        Shard s(path);
        s.check_vocab(100);
    } catch (const InputError& e) {
        return e.what();
    }
    return "no error";
}

TEST_F(DataLoaderTest, DamagedShardsAreNamedWithWhatIsWrong) {
    const fs::path p = dir_ / "bad_000000.bin";
    std::vector<uint16_t> ok = {1, 2, 3, 4};
    write_shard(p.string(), ok);
    std::string bytes;
    {
        std::ifstream in(p, std::ios::binary);
        bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    const auto put = [&](const std::string& b) { std::ofstream(p, std::ios::binary) << b; };
    std::string b = bytes;
    b[0] = 1;
    put(b);
    EXPECT_NE(shard_error(p.string()).find("bad magic"), std::string::npos);
    b = bytes;
    b[4] = 7;
    put(b);
    EXPECT_NE(shard_error(p.string()).find("version 7"), std::string::npos);
    put(bytes.substr(0, bytes.size() - 3));
    EXPECT_NE(shard_error(p.string()).find("truncated"), std::string::npos);
    put(bytes.substr(0, 100));
    EXPECT_NE(shard_error(p.string()).find("shorter than the 1024-byte header"), std::string::npos);
    std::vector<uint16_t> big = {1, 2, 300, 4};
    write_shard(p.string(), big);
    const std::string e = shard_error(p.string());
    EXPECT_NE(e.find(p.string()), std::string::npos);
    EXPECT_NE(e.find("token 300 at position 2"), std::string::npos) << e;
    std::ofstream(dir_ / "odd.bin", std::ios::binary) << "abc";
    EXPECT_NE(shard_error((dir_ / "odd.bin").string()).find("odd size"), std::string::npos);
    EXPECT_THROW(DataLoader({(dir_ / "nowhere").string(), "train", 1, 1}), InputError);
    EXPECT_THROW(DataLoader({dir_.string(), "train", 1, 5000}), InputError);  // no window fits
}

}  // namespace
}  // namespace lmforge
