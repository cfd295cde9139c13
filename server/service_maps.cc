// The map rpcs of hitbox.v1.Hitbox (ListMaps, GetMap) and the map lookup of
// CreateSession: read-only views of the MapLibrary loaded at start.
#include <spdlog/spdlog.h>

#include "hitbox/wire/convert.h"
#include "service.h"

namespace hitbox::server {
namespace {

void MapToProto(const Map& map, uint64_t sessions, v1::MapInfo* out) {
  out->set_map_id(map.id);
  out->set_source(map.source);
  out->set_sha256(map.sha256);
  out->set_file_bytes(map.file_bytes);
  out->set_collider_count(map.set->size());
  for (size_t k = 0; k < map.counts.size(); ++k) {
    if (map.counts[k] == 0) continue;
    (*out->mutable_colliders_by_kind())[ShapeKindName(static_cast<ShapeKind>(k))] = map.counts[k];
  }
  out->set_triangles(map.triangles);
  if (map.set->size() > 0) wire::ToProto(map.bounds, out->mutable_bounds());
  out->set_memory_bytes(map.memory_bytes());
  out->set_session_count(sessions);
}

}  // namespace

grpc::Status HitboxService::ResolveMap(const std::string& id,
                                       std::shared_ptr<const Map>* out) const {
  *out = options_.maps != nullptr ? options_.maps->Find(id) : nullptr;
  if (*out != nullptr) return grpc::Status::OK;
  const bool none = options_.maps == nullptr || options_.maps->maps().empty();
  return grpc::Status(grpc::StatusCode::NOT_FOUND,
                      "map_id: map '" + id + "' not found" +
                          (none ? " (hitboxd has no maps: start it with --maps DIR)"
                                : " (ListMaps lists the server's maps)"));
}

grpc::Status HitboxService::DoListMaps(v1::ListMapsResponse* resp) const {
  if (options_.maps == nullptr) return grpc::Status::OK;
  const std::vector<std::shared_ptr<Session>> sessions = sessions_.List();
  for (const std::shared_ptr<const Map>& m : options_.maps->maps()) {
    uint64_t n = 0;
    for (const auto& s : sessions) n += s->set().base() == m->set.get();
    MapToProto(*m, n, resp->add_maps());
  }
  return grpc::Status::OK;
}

grpc::Status HitboxService::DoGetMap(const v1::GetMapRequest& req, v1::MapInfo* resp) const {
  std::shared_ptr<const Map> map;
  if (grpc::Status st = ResolveMap(req.map_id(), &map); !st.ok()) return st;
  uint64_t n = 0;
  for (const auto& s : sessions_.List()) n += s->set().base() == map->set.get();
  MapToProto(*map, n, resp);
  return grpc::Status::OK;
}

grpc::ServerUnaryReactor* HitboxService::ListMaps(grpc::CallbackServerContext* ctx,
                                                  const v1::ListMapsRequest* /*req*/,
                                                  v1::ListMapsResponse* resp) {
  auto* reactor = ctx->DefaultReactor();
  const InFlightSlot slot(in_flight_);
  grpc::Status st = Admit(*ctx, slot.status(), Access::kRead, "", "ListMaps");
  if (st.ok()) st = DoListMaps(resp);
  reactor->Finish(st);
  return reactor;
}

grpc::ServerUnaryReactor* HitboxService::GetMap(grpc::CallbackServerContext* ctx,
                                                const v1::GetMapRequest* req, v1::MapInfo* resp) {
  auto* reactor = ctx->DefaultReactor();
  const InFlightSlot slot(in_flight_);
  grpc::Status st = Admit(*ctx, slot.status(), Access::kRead, "", "GetMap");
  if (st.ok()) st = Rejected("GetMap", "", DoGetMap(*req, resp));
  reactor->Finish(st);
  return reactor;
}

}  // namespace hitbox::server
