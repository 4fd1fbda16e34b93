#include "tokenizer/batch_encode.h"

#include <exception>
#include <mutex>

namespace lmforge {

std::vector<std::vector<TokenId>> encode_batch(const Tokenizer& tokenizer,
                                               const std::vector<std::string_view>& docs,
                                               const std::function<void(size_t)>& progress,
                                               size_t part_bytes) {
    struct Part {
        size_t doc, begin, end;
    };
    std::vector<Part> parts;
    for (size_t d = 0; d < docs.size(); d++) {
        size_t begin = 0;
        if (docs[d].size() > part_bytes) {
            for (const size_t cut : tokenizer.safe_cuts(docs[d], part_bytes)) {
                parts.push_back({d, begin, cut});
                begin = cut;
            }
        }
        parts.push_back({d, begin, docs[d].size()});
    }
    std::vector<std::vector<TokenId>> part_ids(parts.size());
    std::mutex mutex;
    std::exception_ptr error;  // the first failure, rethrown once every thread has stopped
#pragma omp parallel for schedule(dynamic, 1)
    for (size_t i = 0; i < parts.size(); i++) {
        try {
            const Part& p = parts[i];
            part_ids[i] = tokenizer.encode_ordinary(docs[p.doc].substr(p.begin, p.end - p.begin));
            if (progress) {
                std::lock_guard lock(mutex);
                progress(p.end - p.begin);
            }
        } catch (...) {
            std::lock_guard lock(mutex);
            if (!error) error = std::current_exception();
        }
    }
    if (error) std::rethrow_exception(error);
    std::vector<std::vector<TokenId>> ids(docs.size());
    for (size_t i = 0; i < parts.size(); i++) {
        auto& out = ids[parts[i].doc];
        if (out.empty()) {
            out = std::move(part_ids[i]);
        } else {
            out.insert(out.end(), part_ids[i].begin(), part_ids[i].end());
        }
    }
    return ids;
}

}  // namespace lmforge
