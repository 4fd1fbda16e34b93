#include "io/mlflow_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "io/http.h"

namespace lmforge {

namespace {

using nlohmann::json;

// Percent-encoding of a query value: all but RFC 3986's unreserved characters.
std::string escaped(const std::string& text) {
    std::string out;
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        const bool plain = std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~';
        out += plain ? std::string(1, ch) : fmt::format("%{:02X}", c);
    }
    return out;
}

// The protocol's 64-bit integers arrive as JSON numbers or, from protobuf's JSON mapping, as
// strings.
int64_t int_of(const json& j) { return j.is_string() ? std::stoll(j.get<std::string>()) : j.get<int64_t>(); }

// MLflow's own words for a refusal ({"error_code": ..., "message": ...}), or the status.
std::string reason_of(const HttpResponse& r) {
    const json j = json::parse(r.body, nullptr, false);
    if (j.is_object() && j.contains("message") && j["message"].is_string()) {
        std::string message = j["message"].get<std::string>();
        if (const size_t eol = message.find('\n'); eol != std::string::npos) message.resize(eol);
        return fmt::format("HTTP {} {}: {}", r.status, j.value("error_code", ""), message);
    }
    return fmt::format("HTTP status {}", r.status);
}

HttpRequest get_request(std::string url) {
    HttpRequest r;
    r.url = std::move(url);
    return r;
}

HttpRequest post_request(std::string url, const json& body) {
    HttpRequest r;
    r.method = "POST";
    r.url = std::move(url);
    r.body = body.dump();
    r.content_type = "application/json";
    return r;
}

HttpResponse send(const HttpRequest& request) {
    try {
        return http_send(request);
    } catch (const Error& e) {
        throw MlflowError(e.what(), true);
    }
}

// The answer of a call that succeeded, or MlflowError saying why not.
json answer_of(const HttpRequest& request, const HttpResponse& r) {
    if (r.status == 200) {
        if (r.body.empty()) return json::object();  // an upload's answer
        json j = json::parse(r.body, nullptr, false);
        if (j.is_discarded()) {
            throw MlflowError(fmt::format("{} {}: the answer is no JSON", request.method, request.url), false);
        }
        return j;
    }
    const bool retry = r.status >= 500 || r.status == 429 || r.status == 408;
    throw MlflowError(fmt::format("{} {}: {}", request.method, request.url, reason_of(r)), retry);
}

MlflowRun run_of(const json& j) {
    const json& info = j.at("run").at("info");
    MlflowRun run{info.at("run_id").get<std::string>(), info.at("experiment_id").get<std::string>(),
                  info.value("status", ""), info.value("artifact_uri", ""), {}};
    const json& data = j.at("run").value("data", json::object());
    for (const json& p : data.value("params", json::array())) {
        run.params[p.at("key").get<std::string>()] = p.value("value", "");
    }
    return run;
}

json pairs_json(const MlflowPairs& pairs) {
    json out = json::array();
    for (const auto& [k, v] : pairs) out.push_back({{"key", k}, {"value", v}});
    return out;
}

// "mlflow-artifacts:/1/abc/artifacts" or "mlflow-artifacts://host:port/1/abc/artifacts": the
// path the proxy serves, "1/abc/artifacts".
std::string proxied_path(const std::string& artifact_uri) {
    const std::string scheme = "mlflow-artifacts:";
    if (artifact_uri.rfind(scheme, 0) != 0) {
        throw MlflowError(fmt::format("the run's artifact location {} is not served by the tracking server (start "
                                      "mlflow server with --serve-artifacts)",
                                      artifact_uri),
                          false);
    }
    std::string rest = artifact_uri.substr(scheme.size());
    if (rest.rfind("//", 0) == 0) {
        const size_t slash = rest.find('/', 2);
        rest = slash == std::string::npos ? "" : rest.substr(slash);
    }
    while (!rest.empty() && rest.front() == '/') rest.erase(0, 1);
    return rest;
}

}  // namespace

MlflowClient::MlflowClient(std::string tracking_uri) : uri_(std::move(tracking_uri)) {
    while (!uri_.empty() && uri_.back() == '/') uri_.pop_back();
}

std::string MlflowClient::experiment_id(const std::string& name) {
    const HttpRequest get =
        get_request(uri_ + "/api/2.0/mlflow/experiments/get-by-name?experiment_name=" + escaped(name));
    const HttpResponse found = send(get);
    if (found.status == 200) {
        const json e = answer_of(get, found).at("experiment");
        if (e.value("lifecycle_stage", "active") != "active") {
            throw MlflowError(fmt::format("the MLflow experiment \"{}\" is deleted (restore it, or choose another "
                                          "log.mlflow_experiment)",
                                          name),
                              false);
        }
        return e.at("experiment_id").get<std::string>();
    }
    if (found.status != 404) answer_of(get, found);  // throws
    const HttpRequest create = post_request(uri_ + "/api/2.0/mlflow/experiments/create", {{"name", name}});
    const HttpResponse made = send(create);
    // Another client may have made it in between: then it is there to get.
    if (made.status == 400 && made.body.find("RESOURCE_ALREADY_EXISTS") != std::string::npos) {
        return experiment_id(name);
    }
    return answer_of(create, made).at("experiment_id").get<std::string>();
}

MlflowRun MlflowClient::create_run(const std::string& experiment_id, const std::string& run_name, int64_t start_ms,
                                   const MlflowPairs& tags) {
    const json body = {{"experiment_id", experiment_id}, {"run_name", run_name}, {"start_time", start_ms},
                       {"tags", pairs_json(tags)}};
    const HttpRequest request = post_request(uri_ + "/api/2.0/mlflow/runs/create", body);
    return run_of(answer_of(request, send(request)));
}

MlflowRun MlflowClient::get_run(const std::string& run_id) {
    const HttpRequest request = get_request(uri_ + "/api/2.0/mlflow/runs/get?run_id=" + escaped(run_id));
    return run_of(answer_of(request, send(request)));
}

void MlflowClient::log_batch(const std::string& run_id, const std::vector<MlflowMetric>& metrics,
                             const MlflowPairs& params, const MlflowPairs& tags) {
    json m = json::array();
    for (const MlflowMetric& x : metrics) {
        m.push_back({{"key", x.key}, {"value", x.value}, {"timestamp", x.timestamp_ms}, {"step", x.step}});
    }
    const json body = {{"run_id", run_id}, {"metrics", m}, {"params", pairs_json(params)}, {"tags", pairs_json(tags)}};
    const HttpRequest request = post_request(uri_ + "/api/2.0/mlflow/runs/log-batch", body);
    answer_of(request, send(request));
}

std::vector<int64_t> MlflowClient::metric_steps(const std::string& run_id, const std::string& key) {
    std::vector<int64_t> steps;
    std::string page;
    do {
        const HttpRequest request = get_request(fmt::format(
            "{}/api/2.0/mlflow/metrics/get-history?run_id={}&metric_key={}&max_results=25000{}{}", uri_,
            escaped(run_id), escaped(key), page.empty() ? "" : "&page_token=", escaped(page)));
        const json j = answer_of(request, send(request));
        for (const json& m : j.value("metrics", json::array())) steps.push_back(int_of(m.value("step", json(0))));
        page = j.value("next_page_token", "");
    } while (!page.empty());
    return steps;
}

void MlflowClient::set_status(const std::string& run_id, const std::string& status, int64_t end_ms) {
    json body = {{"run_id", run_id}, {"status", status}};
    if (end_ms > 0) body["end_time"] = end_ms;
    const HttpRequest request = post_request(uri_ + "/api/2.0/mlflow/runs/update", body);
    answer_of(request, send(request));
}

void MlflowClient::upload_artifact(const std::string& artifact_uri, const std::string& path, const std::string& bytes) {
    HttpRequest request;
    request.method = "PUT";
    request.url = uri_ + "/api/2.0/mlflow-artifacts/artifacts/" + proxied_path(artifact_uri);
    for (size_t at = 0; at < path.size();) {  // each segment escaped, the slashes kept
        const size_t slash = std::min(path.find('/', at), path.size());
        request.url += '/';
        request.url += escaped(path.substr(at, slash - at));
        at = slash + 1;
    }
    request.body = bytes;
    request.content_type = "application/octet-stream";
    request.total_seconds = 120;  // a file, not a call
    answer_of(request, send(request));
}

}  // namespace lmforge
