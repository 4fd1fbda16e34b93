// The safetensors format (https://huggingface.co/docs/safetensors): an 8-byte little-endian
// header length, a JSON header {name: {dtype, shape, data_offsets}, "__metadata__": {...}},
// then the raw tensor bytes. Used for model weights (Hugging Face names) and test fixtures.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/file_io.h"

namespace lmforge {

// Every dtype of the format. Files may hold any of them (a BOOL mask beside the weights, say);
// lmforge reads only the float and integer ones it names, and refuses the others when read.
enum class Dtype { F32, F64, BF16, F16, I32, I64, U16, U8, I8, I16, U32, U64, BOOL, F8_E4M3, F8_E5M2 };

size_t dtype_size(Dtype d);
const char* dtype_name(Dtype d);  // "F32", ...

struct TensorInfo {
    Dtype dtype;
    std::vector<int64_t> shape;
    size_t begin = 0, end = 0;  // byte offsets into the data section
    int64_t numel() const;
};

// A safetensors file, memory-mapped. Every header field is checked on open: offsets inside
// the file, sizes matching shapes, no overlaps. Errors are InputError naming the file.
class SafetensorsReader {
public:
    explicit SafetensorsReader(const std::string& path);

    std::vector<std::string> names() const;  // sorted
    bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
    const TensorInfo& info(const std::string& name) const;  // InputError if absent
    const std::map<std::string, std::string>& metadata() const { return metadata_; }

    // The tensor's bytes, unconverted.
    std::span<const std::byte> raw(const std::string& name) const;
    // Copies a tensor of dtype F32 (or I32, I64 for the int versions) with exactly `out.size()`
    // elements; InputError naming the tensor on a dtype or size mismatch.
    void read(const std::string& name, std::span<float> out) const;
    void read(const std::string& name, std::span<int32_t> out) const;
    std::vector<float> read_f32(const std::string& name) const;
    // A floating tensor of F32, F16 or BF16 widened to float (exactly); InputError naming the
    // file and tensor for another dtype or a size other than out's.
    void read_float(const std::string& name, std::span<float> out) const;
    std::vector<int32_t> read_i32(const std::string& name) const;
    std::vector<int64_t> read_i64(const std::string& name) const;

    const std::string& path() const { return file_.path(); }

private:
    void read_checked(const std::string& name, Dtype want, void* out, int64_t n) const;

    MappedFile file_;
    size_t data_start_ = 0;
    std::map<std::string, TensorInfo> tensors_;
    std::map<std::string, std::string> metadata_;
};

// Collects tensors and writes them as one safetensors file, atomically.
class SafetensorsWriter {
public:
    // Copies the bytes: the caller may reuse its buffer at once.
    void add(const std::string& name, Dtype dtype, std::vector<int64_t> shape, const void* data);
    // Keeps only a pointer: data must stay alive and unchanged until write(). For checkpoints
    // of weights and moments, which a copy would double in memory while it is written.
    void add_view(const std::string& name, Dtype dtype, std::vector<int64_t> shape, const void* data);
    void add_metadata(const std::string& key, const std::string& value);
    void write(const std::string& path) const;

private:
    struct Entry {
        Dtype dtype;
        std::vector<int64_t> shape;
        std::vector<std::byte> owned;      // add(): a copy
        std::span<const std::byte> view;   // add_view(): the caller's bytes
        std::span<const std::byte> bytes() const { return owned.empty() ? view : std::span<const std::byte>(owned); }
    };
    std::map<std::string, Entry> tensors_;
    std::map<std::string, std::string> metadata_;
};

}  // namespace lmforge
