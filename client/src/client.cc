// Placeholder implementation: every call answers UNIMPLEMENTED until the
// transport lands (the public API in client.h is final).
#include "hitbox/client.h"

#include <grpcpp/grpcpp.h>

namespace hitbox {
namespace {

RpcStatus Unimplemented(const char* what) {
  return {RpcCode::kUnimplemented, std::string("hitbox::Client::") + what + " is not implemented yet"};
}

class UnimplementedTickStream final : public TickStream {
 public:
  std::future<RpcResult<TickResult>> Tick(std::span<const ColliderChange>,
                                          std::span<const hitbox::Query>) override {
    std::promise<RpcResult<TickResult>> p;
    p.set_value(Unimplemented("Tick"));
    return p.get_future();
  }
  void Tick(std::span<const ColliderChange>, std::span<const hitbox::Query>,
            TickCallback done) override {
    if (done) done(Unimplemented("Tick"));
  }
  size_t pending() const override { return 0; }
  bool done() const override { return true; }
  RpcStatus status() const override { return Unimplemented("Tick"); }
  RpcStatus Finish() override { return Unimplemented("Tick"); }
  void Cancel() override {}
};

}  // namespace

struct Client::Impl {
  ClientOptions options;
  std::string address;
  std::shared_ptr<grpc::Channel> channel;
};

Client::Client(const std::string& address, ClientOptions options) : impl_(new Impl) {
  impl_->options = std::move(options);
  impl_->address = address;
  impl_->channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
}
Client::Client(std::shared_ptr<grpc::Channel> channel, ClientOptions options) : impl_(new Impl) {
  impl_->options = std::move(options);
  impl_->channel = std::move(channel);
}
Client::~Client() = default;

const ClientOptions& Client::options() const { return impl_->options; }
const std::string& Client::address() const { return impl_->address; }

RpcResult<SessionInfo> Client::CreateSession(const SessionSpec&, const CallOptions&) {
  return Unimplemented("CreateSession");
}
RpcResult<SessionInfo> Client::CreateSession(std::string session_id, const CallOptions& call) {
  return CreateSession(SessionSpec{std::move(session_id), {}}, call);
}
RpcResult<SessionInfo> Client::GetSession(std::string_view, const CallOptions&) {
  return Unimplemented("GetSession");
}
RpcResult<std::vector<SessionInfo>> Client::ListSessions(const CallOptions&) {
  return Unimplemented("ListSessions");
}
RpcStatus Client::DeleteSession(std::string_view, const CallOptions&) {
  return Unimplemented("DeleteSession");
}
RpcResult<ApplyResult> Client::ApplyChanges(std::string_view, std::span<const ColliderChange>,
                                            std::optional<uint64_t>, const CallOptions&) {
  return Unimplemented("ApplyChanges");
}
RpcResult<ApplyResult> Client::AddColliders(std::string_view, std::span<const Collider>,
                                            const CallOptions&) {
  return Unimplemented("AddColliders");
}
RpcResult<ApplyResult> Client::MoveCollider(std::string_view, uint64_t, const Pose&,
                                            const CallOptions&) {
  return Unimplemented("MoveCollider");
}
RpcResult<ApplyResult> Client::RemoveColliders(std::string_view, std::span<const uint64_t>,
                                               const CallOptions&) {
  return Unimplemented("RemoveColliders");
}
RpcResult<ColliderSnapshot> Client::GetColliders(std::string_view, std::span<const uint64_t>,
                                                 const CallOptions&) {
  return Unimplemented("GetColliders");
}
RpcResult<ColliderSnapshot> Client::ListColliders(std::string_view, uint32_t, const CallOptions&) {
  return Unimplemented("ListColliders");
}
RpcStatus Client::ListColliders(std::string_view, const ColliderPageCallback&, uint32_t,
                                const CallOptions&) {
  return Unimplemented("ListColliders");
}
RpcResult<QueryBatchResult> Client::Query(std::string_view, std::span<const hitbox::Query>,
                                          const CallOptions&) {
  return Unimplemented("Query");
}
RpcResult<std::vector<OverlapHit>> Client::Overlap(std::string_view, const Shape&, const Pose&,
                                                   const QueryFilter&, bool, const CallOptions&) {
  return Unimplemented("Overlap");
}
RpcResult<std::optional<CastHit>> Client::Sweep(std::string_view, const Shape&, const Pose&,
                                                const Vec3&, const QueryFilter&,
                                                const CallOptions&) {
  return Unimplemented("Sweep");
}
RpcResult<std::vector<CastHit>> Client::SweepAll(std::string_view, const Shape&, const Pose&,
                                                 const Vec3&, const QueryFilter&,
                                                 const CallOptions&) {
  return Unimplemented("SweepAll");
}
RpcResult<std::optional<CastHit>> Client::Raycast(std::string_view, const Vec3&, const Vec3&,
                                                  const QueryFilter&, const CallOptions&) {
  return Unimplemented("Raycast");
}
std::unique_ptr<TickStream> Client::OpenTickStream(std::string, const TickStreamOptions&) {
  return std::make_unique<UnimplementedTickStream>();
}

}  // namespace hitbox
