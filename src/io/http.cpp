#include "io/http.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include "core/error.h"

namespace lmforge {

namespace {

size_t append(char* data, size_t size, size_t count, void* user) {
    auto* out = static_cast<std::vector<std::byte>*>(user);
    const auto* p = reinterpret_cast<const std::byte*>(data);
    out->insert(out->end(), p, p + size * count);
    return size * count;
}

}  // namespace

std::vector<std::byte> http_get(const std::string& url) {
    static const bool initialised = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
    CURL* curl = initialised ? curl_easy_init() : nullptr;
    if (curl == nullptr) throw Error("cannot start libcurl");
    std::vector<std::byte> body;
    char error[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 20L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1024L);  // give up below 1 kB/s ...
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, 60L);     // ... sustained for a minute
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "lmforge/0.1");
    const CURLcode rc = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(curl);
    if (rc != CURLE_OK) {
        throw Error(fmt::format("cannot download {}: {}", url, error[0] ? error : curl_easy_strerror(rc)),
                    "check the network or proxy (https_proxy); once fetched, data works offline");
    }
    if (url.rfind("http", 0) == 0 && status != 200) {
        throw Error(fmt::format("cannot download {}: HTTP status {}", url, status),
                    status == 404 ? "the package or version is not in this registry"
                                  : "the registry refused the request; try again later");
    }
    return body;
}

}  // namespace lmforge
