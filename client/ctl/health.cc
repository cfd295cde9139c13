// `hitboxctl health`: the standard gRPC health check (grpc.health.v1.Health/Check).
//
// The client library has no health call, so this file makes it directly with
// gRPC's generic stub. The two messages are tiny and hand-encoded in the
// protobuf wire format (https://protobuf.dev/programming-guides/encoding/):
//   HealthCheckRequest  { string service = 1; }        -> tag 0x0A, length, bytes
//   HealthCheckResponse { ServingStatus status = 1; }  -> tag 0x08, varint
// ServingStatus: 0 UNKNOWN, 1 SERVING, 2 NOT_SERVING, 3 SERVICE_UNKNOWN.
#include <chrono>
#include <cstdio>
#include <future>
#include <string>

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/byte_buffer.h>

#include "ctl.h"
#include "output.h"

namespace hitbox::ctl {
namespace {

constexpr const char* kHealthCheckMethod = "/grpc.health.v1.Health/Check";

const char* ServingStatusName(uint64_t status) {
  switch (status) {
    case 0: return "UNKNOWN";
    case 1: return "SERVING";
    case 2: return "NOT_SERVING";
    case 3: return "SERVICE_UNKNOWN";
    default: return "UNRECOGNIZED";
  }
}

void AppendVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// Reads a varint at *pos; false when truncated or longer than 10 bytes.
bool ReadVarint(const std::string& in, size_t* pos, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 70 && *pos < in.size(); shift += 7) {
    const auto byte = static_cast<uint8_t>(in[(*pos)++]);
    *v |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

// The status field of a HealthCheckResponse (0 when absent, as proto3 says);
// unknown fields are skipped. False when the bytes are malformed.
bool DecodeStatus(const std::string& bytes, uint64_t* status) {
  *status = 0;
  size_t pos = 0;
  while (pos < bytes.size()) {
    uint64_t key = 0;
    if (!ReadVarint(bytes, &pos, &key)) return false;
    const uint64_t field = key >> 3;
    const uint64_t wire = key & 7;
    uint64_t v = 0;
    if (wire == 0) {
      if (!ReadVarint(bytes, &pos, &v)) return false;
      if (field == 1) *status = v;
    } else if (wire == 2) {
      if (!ReadVarint(bytes, &pos, &v) || v > bytes.size() - pos) return false;
      pos += v;
    } else if (wire == 1 || wire == 5) {
      const size_t n = wire == 1 ? 8 : 4;
      if (n > bytes.size() - pos) return false;
      pos += n;
    } else {
      return false;
    }
  }
  return true;
}

struct HealthAnswer {
  RpcStatus rpc;
  uint64_t serving_status = 0;
};

HealthAnswer CheckHealth(const GlobalOptions& global, const std::string& service) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  auto channel = grpc::CreateCustomChannel(global.address, grpc::InsecureChannelCredentials(), args);
  grpc::GenericStub stub(channel);

  std::string request;
  if (!service.empty()) {
    request.push_back(0x0A);
    AppendVarint(&request, service.size());
    request += service;
  }
  grpc::Slice slice(request);
  grpc::ByteBuffer request_buffer(&slice, 1);
  grpc::ByteBuffer response_buffer;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + global.timeout());

  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, kHealthCheckMethod, grpc::StubOptions(), &request_buffer,
                 &response_buffer, [&done](grpc::Status s) { done.set_value(std::move(s)); });
  const grpc::Status status = done.get_future().get();

  HealthAnswer answer;
  if (!status.ok()) {
    answer.rpc = RpcStatus(static_cast<RpcCode>(status.error_code()), status.error_message());
    return answer;
  }
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (response_buffer.Dump(&slices).ok()) {
    for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  if (!DecodeStatus(bytes, &answer.serving_status)) {
    answer.rpc = RpcStatus(RpcCode::kInternal, "malformed HealthCheckResponse from the server");
  }
  return answer;
}

}  // namespace

void AddHealthCommand(CLI::App& app, const GlobalOptions& global, Action& action) {
  auto* cmd = app.add_subcommand(
      "health", "gRPC health check; exit 0 only when the server answers SERVING");
  auto service = std::make_shared<std::string>();
  cmd->add_option("--service", *service, "service name to check (default: the whole server)");
  cmd->callback([&global, &action, service] {
    action = [&global, service]() -> int {
      const HealthAnswer answer = CheckHealth(global, *service);
      if (!answer.rpc.ok()) {
        if (global.json) {
          PrintJson({{"address", global.address},
                     {"status", "UNREACHABLE"},
                     {"error", std::string(RpcCodeName(answer.rpc.code())) + ": " +
                                   answer.rpc.message()}});
        }
        return Fail(answer.rpc, "health check of " + global.address);
      }
      const char* name = ServingStatusName(answer.serving_status);
      if (global.json) {
        PrintJson({{"address", global.address}, {"service", *service}, {"status", name}});
      } else {
        std::printf("%s: %s\n", global.address.c_str(), name);
      }
      return answer.serving_status == 1 ? kExitOk : kExitFailure;
    };
  });
}

}  // namespace hitbox::ctl
