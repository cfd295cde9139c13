// hitbox_wire: hitbox.v1 messages <-> core types, and ErrorCode <->
// grpc::StatusCode. FromProto checks all a message can get wrong on its own
// and fails with kInvalidArgument naming the field path, e.g.
// "changes[3].add.shape.box.half_extents.y must be finite and > 0, got -1".
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/repeated_field.h>
#include <grpcpp/support/status.h>

#include "hitbox/world/collider_set.h"
#include "hitbox/status.h"
#include "hitbox/v1/collision.pb.h"
#include "hitbox/v1/geometry.pb.h"
#include "hitbox/v1/hitbox.pb.h"

namespace hitbox::wire {

/// Most ids in one QueryFilter.ignore_ids (checked linearly per candidate).
inline constexpr int kMaxIgnoreIds = 256;
/// Most triangles in one mesh shape on the wire (TriangleMesh.indices / 3).
inline constexpr uint64_t kMaxWireMeshTriangles = 1ull << 20;
/// Most samples (rows * cols) in one heightfield shape on the wire.
inline constexpr uint64_t kMaxWireHeightfieldSamples = 1ull << 22;
/// Longest session id, characters.
inline constexpr size_t kMaxSessionIdLength = 128;

template <typename T>
using Repeated = google::protobuf::RepeatedPtrField<T>;

// ---------------------------------------------------------------------------
// Status mapping.

/// The gRPC code of the same name as `code` (kInternal -> INTERNAL).
grpc::StatusCode ToGrpcCode(ErrorCode code);
/// The ErrorCode of the same name; codes without one (UNAVAILABLE, CANCELLED,
/// DEADLINE_EXCEEDED, ...) map to kInternal. Never called with OK.
ErrorCode FromGrpcCode(grpc::StatusCode code);
/// OK for an ok Status, else the mapped code with the same message.
grpc::Status ToGrpcStatus(const Status& status);
/// Ok for an OK grpc::Status, else the mapped code; for codes without an
/// ErrorCode the message is prefixed with the gRPC code name.
Status FromGrpcStatus(const grpc::Status& status);
/// "INVALID_ARGUMENT", "NOT_FOUND", ... for any gRPC code.
const char* GrpcCodeName(grpc::StatusCode code);

// ---------------------------------------------------------------------------
// Session ids.

/// Checks 1..128 characters of [A-Za-z0-9._:-], not "." or ".."; the error names `field`.
Status ValidateSessionId(std::string_view id, std::string_view field = "session_id");

// ---------------------------------------------------------------------------
// proto -> core (validating). `field` is the path of the message itself and
// prefixes every error message.

/// Every component finite.
Result<Vec3> FromProto(const v1::Vec3& v, std::string_view field);
/// Finite components and | |q| - 1 | <= 1e-6; the result is normalized.
Result<Quat> FromProto(const v1::Quat& q, std::string_view field);
/// Absent position: origin; absent rotation: identity.
Result<Pose> FromProto(const v1::Pose& p, std::string_view field);
/// Exactly one kind set, sizes finite and in range.
Result<Shape> FromProto(const v1::Shape& s, std::string_view field);
/// Shape required, pose optional, layer <= 31.
Result<Collider> FromProto(const v1::Collider& c, std::string_view field);
/// A watch: a query shape (not a mesh, heightfield or compound), pose
/// optional, at most kMaxIgnoreIds ignore ids.
Result<Watch> FromProto(const v1::Watch& w, std::string_view field);
/// One change; the change oneof must be set.
Result<ColliderChange> FromProto(const v1::ColliderChange& c, std::string_view field);
/// Mask absent: all layers; at most kMaxIgnoreIds ignore ids. max_hits is
/// copied as is (the server clamps it).
Result<QueryFilter> FromProto(const v1::QueryFilter& f, std::string_view field);
/// A query of any kind; the kind oneof must be set. Query.tag goes to the
/// core query's tag; a cast's contact_offset must be finite and in
/// [0, kMaxContactOffset] metres. With shape_from_collider set, the shape
/// and pose must be absent (and the query is not a raycast); the result then
/// has an empty shape and the identity pose, for the server to fill in from
/// the collider (a check that needs the set).
Result<Query> FromProto(const v1::Query& q, std::string_view field);

/// A whole change list; errors are named "<field>[i]...." (field "changes").
/// `before_build` (may be empty): called with the entry's index before each
/// entry whose shape needs a build (NeedsBuild); an error from it stops the
/// conversion and is returned (the server's deadline and cancellation).
Status FromProto(const Repeated<v1::ColliderChange>& changes, std::vector<ColliderChange>* out,
                 std::string_view field = "changes",
                 const std::function<Status(int)>& before_build = {});

/// Heightfield samples per unit of build work (ChangeCost::build_work): a
/// sample costs about a sixteenth of a mesh triangle to build.
inline constexpr uint64_t kSamplesPerWorkUnit = 16;

/// What building one change's shape will cost, from its counts alone.
struct ChangeCost {
  /// Bytes its shape's data will hold once built: Shape::DataBytes() as
  /// Shape::Predict*Bytes computes it (0 for primitives, moves and removes).
  uint64_t shape_bytes = 0;
  /// Build work: mesh triangles + hull points (a compound's children's too)
  /// + compound children + heightfield samples / kSamplesPerWorkUnit.
  uint64_t build_work = 0;
  /// Input triangles of its mesh, samples of its heightfield, most points of
  /// one of its hulls (0: none), for the session's geometry limits.
  uint64_t mesh_triangles = 0;
  uint64_t heightfield_samples = 0;
  uint64_t hull_points = 0;
};

/// True when the change adds or replaces a shape that needs a build (convex
/// hull, mesh, heightfield, compound); the list form: any of them.
bool NeedsBuild(const v1::ColliderChange& change);
bool NeedsBuild(const Repeated<v1::ColliderChange>& changes);

/// Checks a change list as FromProto does (the same errors and messages),
/// without building any shape: everything but what only a build can find (a
/// degenerate hull's volume). A mesh whose triangles all have zero area is
/// found here too. `skeletons` gets one change per entry (kind, id, pose,
/// layer; shapes needing a build are a placeholder unit sphere), `costs` one
/// ChangeCost per entry. O(input), no copy of a mesh's triangles.
Status CheckChanges(const Repeated<v1::ColliderChange>& changes,
                    std::vector<ColliderChange>* skeletons, std::vector<ChangeCost>* costs,
                    std::string_view field = "changes");
/// A whole query list; errors are named "<field>[i]...." (field "queries").
Status FromProto(const Repeated<v1::Query>& queries, std::vector<Query>* out,
                 std::string_view field = "queries");

/// Answers, for clients. Not validated beyond structure: they come from the
/// server. Unset vectors read as zero.
Vec3 ResultFromProto(const v1::Vec3& v);
Aabb ResultFromProto(const v1::Aabb& b);
OverlapHit ResultFromProto(const v1::OverlapHit& h);
CastHit ResultFromProto(const v1::CastHit& h);
MoveResult ResultFromProto(const v1::MoveResult& r);
QueryResult ResultFromProto(const v1::QueryResult& r);
WatchEvent ResultFromProto(const v1::WatchEvent& e);
/// The same into `*out`, every field set, reusing its buffers: vectors are
/// cleared, not freed, and a move result already there is overwritten, so a
/// result decoded into tick after tick allocates nothing in steady state.
void ResultFromProto(const v1::MoveResult& r, MoveResult* out);
void ResultFromProto(const v1::QueryResult& r, QueryResult* out);

// ---------------------------------------------------------------------------
// core -> proto.

void ToProto(const Vec3& v, v1::Vec3* out);
void ToProto(const Quat& q, v1::Quat* out);
void ToProto(const Pose& p, v1::Pose* out);
void ToProto(const Aabb& b, v1::Aabb* out);
void ToProto(const Shape& s, v1::Shape* out);
void ToProto(const Collider& c, v1::Collider* out);
void ToProto(const ColliderChange& c, v1::ColliderChange* out);
/// Mask always written.
void ToProto(const Watch& w, v1::Watch* out);
void ToProto(const WatchEvent& e, v1::WatchEvent* out);
/// Mask is always written (so an all-ones mask round-trips exactly).
void ToProto(const QueryFilter& f, v1::QueryFilter* out);
/// Writes the core query's tag too. `shape_and_pose` false: the query's shape
/// and pose are left out (for a query with Query.shape_from_collider).
void ToProto(const Query& q, v1::Query* out, bool shape_and_pose = true);
/// Every setting is written (so defaults round-trip exactly).
void ToProto(const MoveSettings& s, v1::MoveSettings* out);
void ToProto(const MoveResult& r, v1::MoveResult* out);
void ToProto(const Contact& c, v1::Contact* out);
void ToProto(const OverlapHit& h, v1::OverlapHit* out);
void ToProto(const CastHit& h, v1::CastHit* out);
/// Fills overlaps, hits, move and truncated; sets out->tag = tag.
void ToProto(const QueryResult& r, uint64_t tag, v1::QueryResult* out);

}  // namespace hitbox::wire
