// The safetensors reader (io/safetensors.h) on any bytes: it must refuse a bad header with an
// InputError, and every tensor it accepts must lie inside the file and read back whole.
#include <cstdint>
#include <numeric>

#include "fuzz_util.h"
#include "io/safetensors.h"

using namespace lmforge;

namespace {

// Reads every byte of every tensor, so a span reaching past the mapped file faults here, and
// each dtype the typed reads accept through them.
void read_all(const SafetensorsReader& file) {
    for (const std::string& name : file.names()) {
        const TensorInfo& t = file.info(name);
        const std::span<const std::byte> raw = file.raw(name);
        fuzz::check(raw.size() == t.end - t.begin, "raw() size differs from the tensor's offsets");
        volatile unsigned sum = std::accumulate(raw.begin(), raw.end(), 0u,
                                                [](unsigned s, std::byte b) { return s + static_cast<unsigned>(b); });
        (void)sum;
        fuzz::check(static_cast<uint64_t>(t.numel()) * dtype_size(t.dtype) == raw.size(),
                    "numel() x dtype size differs from the tensor's bytes");
        if (t.dtype == Dtype::F32) fuzz::check(file.read_f32(name).size() * 4 == raw.size(), "read_f32 size");
        if (t.dtype == Dtype::I32) fuzz::check(file.read_i32(name).size() * 4 == raw.size(), "read_i32 size");
        if (t.dtype == Dtype::I64) fuzz::check(file.read_i64(name).size() * 8 == raw.size(), "read_i64 size");
        fuzz::accepts([&] { file.read_f32(name); });  // InputError for the other dtypes
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = fuzz::write_scratch("model.safetensors", fuzz::as_text(data, size));
    fuzz::accepts([&] { read_all(SafetensorsReader(path)); });
    return 0;
}
