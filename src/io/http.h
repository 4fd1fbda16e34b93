// HTTP(S) over libcurl (proxies from the usual environment variables): downloads, with
// file:// too (for offline mirrors and tests), and single requests to a web API.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace lmforge {

// The whole body of `url`. Throws Error with one line naming the URL and the reason
// (unreachable host, HTTP status) when it cannot be fetched.
std::vector<std::byte> http_get(const std::string& url);

struct HttpRequest {
    std::string method = "GET";  // GET, POST, PUT
    std::string url;
    std::string body;            // sent as is (POST, PUT)
    std::string content_type;    // of the body
    long connect_seconds = 3;    // short: a caller that must not stall on a dead host
    long total_seconds = 30;
};

struct HttpResponse {
    long status = 0;
    std::string body;
};

// Sends one request and returns the server's answer, whatever its status. Throws Error with
// one line (the method, URL and libcurl's reason) only when no answer came: refused, timed
// out, unknown host.
HttpResponse http_send(const HttpRequest& request);

}  // namespace lmforge
