// The training configuration (train/config.h): an input is a TOML file, then `--set`
// overrides, one per fuzz::kPartSeparator-separated part. Whatever parse_config() accepts must
// be written out by config_to_toml() as TOML that parses back to the same configuration: that
// text is the config.toml a run directory keeps and a resume reads.
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "train/config.h"

using namespace lmforge;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto parts = fuzz::split_parts(fuzz::as_text(data, size), 8);
    const std::vector<std::string> overrides(parts.begin() + 1, parts.end());
    TrainConfig config;
    if (!fuzz::accepts([&] { config = parse_config(std::string(parts[0]), "fuzz.toml", overrides); })) return 0;
    const std::string written = config_to_toml(config);
    TrainConfig again;
    fuzz::check(fuzz::accepts([&] { again = parse_config(written, "config.toml"); }),
                "config_to_toml() wrote a file parse_config() refuses");
    fuzz::check(config_to_toml(again) == written, "config.toml does not read back as the configuration it holds");
    return 0;
}
