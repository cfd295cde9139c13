#include "ctl.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace hitbox::ctl {

std::chrono::milliseconds GlobalOptions::timeout() const {
  return std::chrono::milliseconds(static_cast<int64_t>(std::ceil(timeout_s * 1000.0)));
}

std::unique_ptr<Client> GlobalOptions::MakeClient() const {
  ClientOptions options;
  options.default_timeout = timeout();
  // A command-line tool fails fast rather than retrying for the whole deadline.
  options.retry.max_attempts = 2;
  options.token = token;
  options.tls = tls;
  return std::make_unique<Client>(address, options);
}

std::shared_ptr<grpc::Channel> GlobalOptions::MakeChannel(grpc::ChannelArguments args) const {
  if (!tls.active()) {
    return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  }
  auto read = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buf;
    buf << in.rdbuf();
    return buf.str();
  };
  grpc::SslCredentialsOptions ssl;
  if (!tls.ca_file.empty()) ssl.pem_root_certs = read(tls.ca_file);
  if (!tls.cert_file.empty()) ssl.pem_cert_chain = read(tls.cert_file);
  if (!tls.key_file.empty()) ssl.pem_private_key = read(tls.key_file);
  if (!tls.server_name.empty()) args.SetSslTargetNameOverride(tls.server_name);
  return grpc::CreateCustomChannel(address, grpc::SslCredentials(ssl), args);
}

int Fail(const RpcStatus& status, const std::string& context) {
  std::fprintf(stderr, "hitboxctl: %s%s%s: %s\n", context.c_str(), context.empty() ? "" : ": ",
               RpcCodeName(status.code()), status.message().c_str());
  return kExitFailure;
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "hitboxctl: %s\n", message.c_str());
  return kExitFailure;
}

}  // namespace hitbox::ctl
