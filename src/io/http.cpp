#include "io/http.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include "core/error.h"

namespace lmforge {

namespace {

size_t append_bytes(char* data, size_t size, size_t count, void* user) {
    auto* out = static_cast<std::vector<std::byte>*>(user);
    const auto* p = reinterpret_cast<const std::byte*>(data);
    out->insert(out->end(), p, p + size * count);
    return size * count;
}

size_t append_text(char* data, size_t size, size_t count, void* user) {
    static_cast<std::string*>(user)->append(data, size * count);
    return size * count;
}

// A handle of its own for each request; libcurl is set up once per process (thread-safe
// through the static's initialisation).
CURL* new_handle() {
    static const bool initialised = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
    CURL* curl = initialised ? curl_easy_init() : nullptr;
    if (curl == nullptr) throw Error("cannot start libcurl");
    // No signals: a request on a thread other than the main one must not raise SIGALRM for a
    // resolver's time-out.
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "lmforge/0.1");
    return curl;
}

}  // namespace

std::vector<std::byte> http_get(const std::string& url) {
    CURL* curl = new_handle();
    std::vector<std::byte> body;
    char error[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 20L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1024L);  // give up below 1 kB/s ...
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, 60L);     // ... sustained for a minute
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append_bytes);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
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

HttpResponse http_send(const HttpRequest& request) {
    CURL* curl = new_handle();
    HttpResponse response;
    char error[CURL_ERROR_SIZE] = "";
    curl_slist* headers = nullptr;
    if (!request.content_type.empty()) {
        headers = curl_slist_append(headers, ("Content-Type: " + request.content_type).c_str());
    }
    headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip before a body
    curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    if (request.method != "GET") {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    }
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, request.connect_seconds);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, request.total_seconds);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append_text);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response.body);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
    const CURLcode rc = curl_easy_perform(curl);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
    curl_easy_cleanup(curl);
    curl_slist_free_all(headers);
    if (rc != CURLE_OK) {
        throw Error(fmt::format("{} {}: {}", request.method, request.url, error[0] ? error : curl_easy_strerror(rc)));
    }
    return response;
}

}  // namespace lmforge
