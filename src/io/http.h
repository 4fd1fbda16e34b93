// Downloads over HTTP(S) (libcurl; proxies from the usual environment variables) and
// file:// (for offline mirrors and tests).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace lmforge {

// The whole body of `url`. Throws Error with one line naming the URL and the reason
// (unreachable host, HTTP status) when it cannot be fetched.
std::vector<std::byte> http_get(const std::string& url);

}  // namespace lmforge
