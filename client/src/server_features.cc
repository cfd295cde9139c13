// What the server behind a channel takes (GetServerInfo), asked once and
// kept, so a tick stream sends the packed form only to a server that knows it.
#include <grpcpp/grpcpp.h>

#include "client_internal.h"

namespace hitbox::internal {

ServerFeatures::ServerFeatures(std::shared_ptr<grpc::Channel> channel)
    : stub_(v1::Hitbox::NewStub(std::move(channel))) {}

bool ServerFeatures::PackedTicks(const std::string& token, std::chrono::nanoseconds timeout,
                                 bool wait_for_ready) {
  // Held while asking: streams that start together ask once.
  std::lock_guard<std::mutex> lock(mu_);
  if (packed_ticks_) return *packed_ticks_;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::duration_cast<std::chrono::system_clock::duration>(timeout));
  if (wait_for_ready) ctx.set_wait_for_ready(true);
  if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
  v1::ServerInfo info;
  const grpc::Status status = stub_->GetServerInfo(&ctx, v1::GetServerInfoRequest(), &info);
  if (status.ok()) {
    packed_ticks_ = info.packed_ticks();
  } else if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
    packed_ticks_ = false;  // a server older than the rpc: older than the packed form too
  } else {
    return false;  // unreachable, denied, too slow: the message form, and ask again next time
  }
  return *packed_ticks_;
}

}  // namespace hitbox::internal
