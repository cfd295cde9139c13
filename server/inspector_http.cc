#include "inspector_http.h"

#include <httplib.h>

#include "inspector_api.h"
#include "inspector_assets.h"

namespace hitbox::server {
namespace {

// The page loads only its own files: no CDN, no inline script.
constexpr const char* kContentSecurityPolicy =
    "default-src 'self'; img-src 'self' data:; style-src 'self'; frame-ancestors 'none'";

void SecurityHeaders(httplib::Response& res) {
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Content-Security-Policy", kContentSecurityPolicy);
  res.set_header("Referrer-Policy", "no-referrer");
}

}  // namespace

void AddInspectorRoutes(httplib::Server* http, const InspectorApi* api) {
  http->Get(R"(/api/.*)", [api](const httplib::Request& req, httplib::Response& res) {
    InspectorRequest r;
    r.path = req.path;
    for (const auto& [key, value] : req.params) r.params[key] = value;
    r.peer = HttpPeer(req.remote_addr, req.remote_port);
    if (req.has_header("Authorization")) r.authorization = req.get_header_value("Authorization");
    InspectorAnswer a = api->Handle(r);
    SecurityHeaders(res);
    res.set_header("Cache-Control", "no-store");
    if (a.stream != nullptr) {
      // Server-sent events on this worker until the stream ends, the client
      // goes or the endpoint stops (it checks between two events).
      res.set_header("X-Accel-Buffering", "no");
      std::shared_ptr<InspectorStream> stream = std::move(a.stream);
      auto buffer = std::make_shared<std::string>();
      res.set_chunked_content_provider(
          "text/event-stream", [stream, buffer](size_t, httplib::DataSink& sink) {
            buffer->clear();
            const bool more = stream->Next(buffer.get());
            if (!buffer->empty() && !sink.write(buffer->data(), buffer->size())) return false;
            if (!more) sink.done();
            return true;
          });
      return;
    }
    if (a.status == 401) res.set_header("WWW-Authenticate", "Bearer");
    res.status = a.status;
    // With a charset, httplib does not compress it: brotli of a big map's
    // JSON took minutes of the server's CPU, and pages are read over
    // loopback or a tunnel.
    const std::string type = a.content_type + "; charset=utf-8";
    res.set_content(std::move(a.body), type.c_str());
  });
  // The page and its scripts: public files (they hold no data), cached briefly.
  http->Get(R"(/|/[A-Za-z0-9_./-]+\.(js|css|html))",
            [](const httplib::Request& req, httplib::Response& res) {
              const InspectorAsset* asset = FindInspectorAsset(req.path);
              SecurityHeaders(res);
              if (asset == nullptr) {
                res.status = 404;
                res.set_content("not found\n", "text/plain; charset=utf-8");
                return;
              }
              res.set_header("Cache-Control", "max-age=60");
              res.set_content(asset->data.data(), asset->data.size(),
                              (std::string(asset->content_type) + "; charset=utf-8").c_str());
            });
}

}  // namespace hitbox::server
