#include "io/safetensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/bf16.h"
#include "core/error.h"
#include "core/fp16.h"

namespace lmforge {

namespace {

using json = nlohmann::json;

struct DtypeName {
    Dtype dtype;
    const char* name;
    size_t size;
};
constexpr DtypeName kDtypes[] = {
    {Dtype::F32, "F32", 4}, {Dtype::F64, "F64", 8}, {Dtype::BF16, "BF16", 2},
    {Dtype::F16, "F16", 2}, {Dtype::I32, "I32", 4}, {Dtype::I64, "I64", 8},
    {Dtype::U16, "U16", 2}, {Dtype::U8, "U8", 1}, {Dtype::I8, "I8", 1},
    {Dtype::I16, "I16", 2}, {Dtype::U32, "U32", 4}, {Dtype::U64, "U64", 8},
    {Dtype::BOOL, "BOOL", 1}, {Dtype::F8_E4M3, "F8_E4M3", 1}, {Dtype::F8_E5M2, "F8_E5M2", 1},
};

// The bytes of `shape` elements of `size` bytes, or nothing if that overflows 64 bits (a
// header may claim any shape).
std::optional<uint64_t> checked_bytes(const std::vector<int64_t>& shape, size_t size) {
    uint64_t n = size;
    for (const int64_t s : shape) {
        if (s < 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(s), &n)) return std::nullopt;
    }
    return n;
}

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the format's own limit

InputError invalid_file(const std::string& path, const std::string& why) {
    return InputError(fmt::format("{}: not a valid safetensors file: {}", path, why),
                      "the file is truncated or of another format");
}

// The JSON header of a file of these bytes, and where its data section starts.
json read_header(std::span<const std::byte> bytes, const std::string& path, size_t& data_start) {
    if (bytes.size() < 8) throw invalid_file(path, "shorter than its 8-byte header length");
    uint64_t header_len = 0;
    std::memcpy(&header_len, bytes.data(), 8);
    if (header_len > kMaxHeaderBytes || 8 + header_len > bytes.size()) {
        throw invalid_file(path, fmt::format("header length {} exceeds the file size {}", header_len, bytes.size()));
    }
    data_start = 8 + header_len;
    json header;
    try {
        header = json::parse(reinterpret_cast<const char*>(bytes.data()) + 8,
                             reinterpret_cast<const char*>(bytes.data()) + data_start);
    } catch (const json::exception& e) {
        throw invalid_file(path, fmt::format("header is not JSON ({})", e.what()));
    }
    if (!header.is_object()) throw invalid_file(path, "header is not a JSON object");
    return header;
}

// The header's entry for tensor `name`, checked against a data section of data_size bytes.
TensorInfo parse_tensor(const std::string& name, const json& entry, size_t data_size, const std::string& path) {
    TensorInfo t;
    const std::string dt = entry.at("dtype").get<std::string>();
    const auto* d =
        std::find_if(std::begin(kDtypes), std::end(kDtypes), [&](const DtypeName& e) { return dt == e.name; });
    if (d == std::end(kDtypes)) throw invalid_file(path, fmt::format("tensor '{}': unsupported dtype {}", name, dt));
    t.dtype = d->dtype;
    // Whole numbers only: nlohmann would cut 32.5 to 32 (the format's own reader refuses it).
    const auto integers = [&](const char* key) {
        const json& list = entry.at(key);
        const auto integer = [](const json& v) { return v.is_number_integer(); };
        if (!list.is_array() || !std::all_of(list.begin(), list.end(), integer)) {
            throw invalid_file(path, fmt::format("tensor '{}': {} is not a list of integers", name, key));
        }
        return list;
    };
    t.shape = integers("shape").get<std::vector<int64_t>>();
    const auto offsets = integers("data_offsets").get<std::vector<uint64_t>>();
    if (offsets.size() != 2 || offsets[0] > offsets[1] || offsets[1] > data_size) {
        throw invalid_file(path, fmt::format("tensor '{}': data_offsets outside the data section", name));
    }
    if (std::any_of(t.shape.begin(), t.shape.end(), [](int64_t s) { return s < 0; })) {
        throw invalid_file(path, fmt::format("tensor '{}': negative dimension", name));
    }
    t.begin = offsets[0];
    t.end = offsets[1];
    const auto want = checked_bytes(t.shape, d->size);
    if (!want || *want != t.end - t.begin) {
        throw invalid_file(path, fmt::format("tensor '{}': {} bytes for shape [{}] of {}", name, t.end - t.begin,
                                        fmt::join(t.shape, ", "), dt));
    }
    return t;
}

// The tensors must tile the data section exactly, as the format requires: no overlap, no hole
// between them and no bytes after the last (which would make the file something else too).
void check_tiling(const std::map<std::string, TensorInfo>& tensors, size_t data_size, const std::string& path) {
    std::vector<std::pair<size_t, size_t>> spans;
    for (const auto& [name, t] : tensors) spans.emplace_back(t.begin, t.end);
    std::sort(spans.begin(), spans.end());
    const auto hole = [&](size_t from, size_t to) {
        return invalid_file(path, fmt::format("bytes {}..{} of the data section belong to no tensor", from, to));
    };
    size_t covered = 0;
    for (const auto& [begin, end] : spans) {
        if (begin < covered) throw invalid_file(path, "tensors overlap");
        if (begin > covered) throw hole(covered, begin);
        covered = end;
    }
    if (covered != data_size) throw hole(covered, data_size);
}

}  // namespace

size_t dtype_size(Dtype d) {
    for (const auto& e : kDtypes) {
        if (e.dtype == d) return e.size;
    }
    return 0;
}

const char* dtype_name(Dtype d) {
    for (const auto& e : kDtypes) {
        if (e.dtype == d) return e.name;
    }
    return "?";
}

int64_t TensorInfo::numel() const {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return n;
}

SafetensorsReader::SafetensorsReader(const std::string& path) : file_(path) {
    const auto bytes = file_.bytes();
    const json header = read_header(bytes, path, data_start_);
    const size_t data_size = bytes.size() - data_start_;
    for (const auto& [name, entry] : header.items()) {
        if (name == "__metadata__") {
            if (!entry.is_object()) throw invalid_file(path, "__metadata__ is not an object");
            for (const auto& [k, v] : entry.items()) {
                if (!v.is_string()) throw invalid_file(path, fmt::format("metadata '{}' is not a string", k));
                metadata_[k] = v.get<std::string>();
            }
            continue;
        }
        try {
            tensors_.emplace(name, parse_tensor(name, entry, data_size, path));
        } catch (const json::exception& e) {
            throw invalid_file(path, fmt::format("tensor '{}': {}", name, e.what()));
        }
    }
    check_tiling(tensors_, data_size, path);
}

std::vector<std::string> SafetensorsReader::names() const {
    std::vector<std::string> out;
    for (const auto& [name, t] : tensors_) out.push_back(name);
    return out;
}

const TensorInfo& SafetensorsReader::info(const std::string& name) const {
    const auto it = tensors_.find(name);
    if (it == tensors_.end()) {
        throw InputError(fmt::format("{}: no tensor named '{}'", path(), name),
                         "the file holds a different model");
    }
    return it->second;
}

std::span<const std::byte> SafetensorsReader::raw(const std::string& name) const {
    const TensorInfo& t = info(name);
    return file_.bytes().subspan(data_start_ + t.begin, t.end - t.begin);
}

void SafetensorsReader::read_checked(const std::string& name, Dtype want, void* out,
                                     int64_t n) const {
    const TensorInfo& t = info(name);
    if (t.dtype != want || t.numel() != n) {
        throw InputError(fmt::format("{}: tensor '{}' is {} with {} elements, expected {} with {}",
                                     path(), name, dtype_name(t.dtype), t.numel(),
                                     dtype_name(want), n),
                         "the file holds a model of another shape");
    }
    if (n > 0) std::memcpy(out, raw(name).data(), t.end - t.begin);  // an empty tensor may have no storage
}

void SafetensorsReader::read(const std::string& name, std::span<float> out) const {
    read_checked(name, Dtype::F32, out.data(), static_cast<int64_t>(out.size()));
}

void SafetensorsReader::read(const std::string& name, std::span<int32_t> out) const {
    read_checked(name, Dtype::I32, out.data(), static_cast<int64_t>(out.size()));
}

void SafetensorsReader::read_float(const std::string& name, std::span<float> out) const {
    const TensorInfo& t = info(name);
    if (t.dtype == Dtype::F32) return read(name, out);
    if (t.dtype != Dtype::F16 && t.dtype != Dtype::BF16) {
        throw InputError(fmt::format("{}: tensor '{}' is {}; lmforge reads F32, F16 and BF16", path(), name,
                                     dtype_name(t.dtype)));
    }
    if (t.numel() != static_cast<int64_t>(out.size())) {
        throw InputError(fmt::format("{}: tensor '{}' has {} elements, not {}", path(), name, t.numel(), out.size()));
    }
    const std::span<const std::byte> bytes = raw(name);
    for (size_t i = 0; i < out.size(); i++) {
        uint16_t h;
        std::memcpy(&h, bytes.data() + 2 * i, 2);  // the file's bytes may be unaligned
        out[i] = t.dtype == Dtype::F16 ? from_f16(h) : from_bf16(h);
    }
}

std::vector<float> SafetensorsReader::read_f32(const std::string& name) const {
    std::vector<float> out(static_cast<size_t>(info(name).numel()));
    read(name, out);
    return out;
}

std::vector<int32_t> SafetensorsReader::read_i32(const std::string& name) const {
    std::vector<int32_t> out(static_cast<size_t>(info(name).numel()));
    read(name, out);
    return out;
}

std::vector<int64_t> SafetensorsReader::read_i64(const std::string& name) const {
    std::vector<int64_t> out(static_cast<size_t>(info(name).numel()));
    read_checked(name, Dtype::I64, out.data(), static_cast<int64_t>(out.size()));
    return out;
}

namespace {

size_t tensor_bytes(const std::vector<int64_t>& shape, Dtype dtype) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return static_cast<size_t>(n) * dtype_size(dtype);
}

}  // namespace

void SafetensorsWriter::add(const std::string& name, Dtype dtype, std::vector<int64_t> shape,
                            const void* data) {
    Entry e{dtype, std::move(shape), {}, {}};
    e.owned.resize(tensor_bytes(e.shape, dtype));
    if (!e.owned.empty()) std::memcpy(e.owned.data(), data, e.owned.size());
    tensors_[name] = std::move(e);
}

void SafetensorsWriter::add_view(const std::string& name, Dtype dtype, std::vector<int64_t> shape,
                                 const void* data) {
    const size_t bytes = tensor_bytes(shape, dtype);
    tensors_[name] = Entry{dtype, std::move(shape), {}, {static_cast<const std::byte*>(data), bytes}};
}

void SafetensorsWriter::add_metadata(const std::string& key, const std::string& value) {
    metadata_[key] = value;
}

void SafetensorsWriter::write(const std::string& path) const {
    json header = json::object();
    if (!metadata_.empty()) header["__metadata__"] = metadata_;
    size_t offset = 0;
    for (const auto& [name, e] : tensors_) {
        header[name] = {{"dtype", dtype_name(e.dtype)},
                        {"shape", e.shape},
                        {"data_offsets", {offset, offset + e.bytes().size()}}};
        offset += e.bytes().size();
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');  // keep the data section 8-byte aligned
    const uint64_t len = text.size();
    std::vector<std::span<const std::byte>> parts;
    parts.emplace_back(reinterpret_cast<const std::byte*>(&len), 8);
    parts.emplace_back(reinterpret_cast<const std::byte*>(text.data()), text.size());
    for (const auto& [name, e] : tensors_) parts.emplace_back(e.bytes());
    write_file_atomic(path, parts);
}

}  // namespace lmforge
