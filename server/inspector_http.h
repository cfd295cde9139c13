// The inspector on hitboxd's HTTP endpoint (--http-listen): the page and its
// scripts at / (inspector_assets.h) and the JSON API under /api/
// (inspector_api.h), added to the endpoint's httplib server.
#pragma once

namespace httplib {
class Server;
}

namespace hitbox::server {

class InspectorApi;

/// Adds GET / (the page), its assets and GET /api/... answered by `api`
/// (which must outlive the server).
void AddInspectorRoutes(httplib::Server* http, const InspectorApi* api);

}  // namespace hitbox::server
