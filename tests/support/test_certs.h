// Test-only TLS material, generated at test time with the openssl command
// line tool (Debian package `openssl`) into a fresh temporary directory: two
// independent CAs and, under each, a server certificate for localhost /
// 127.0.0.1 and a client certificate. Nothing here is ever committed; the
// keys live only as long as the TestCerts object.
#pragma once

#include <cstdlib>
#include <fstream>
#include <string>

#include "temp_dir.h"

namespace hitbox::testing {

/// PEM files of one CA and the certificates it signed.
struct CertSet {
  std::string ca;           ///< the CA's certificate
  std::string server_cert;  ///< server certificate (SAN localhost, 127.0.0.1)
  std::string server_key;
  std::string client_cert;  ///< client certificate (extendedKeyUsage clientAuth)
  std::string client_key;
};

/// Generates two unrelated CertSets ("a" and "b") in a temporary directory,
/// removed by the destructor. ok() is false when openssl is missing or failed.
class TestCerts {
 public:
  TestCerts() { ok_ = !dir_.path().empty() && Make("a", &a_) && Make("b", &b_); }
  TestCerts(const TestCerts&) = delete;
  TestCerts& operator=(const TestCerts&) = delete;

  bool ok() const { return ok_; }
  const CertSet& a() const { return a_; }
  const CertSet& b() const { return b_; }
  const std::string& dir() const { return dir_.path(); }

 private:
  // Runs one shell command quietly; true on exit status 0.
  static bool Sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

  bool Make(const std::string& name, CertSet* out) {
    const std::string p = dir_.file(name + "-");
    out->ca = p + "ca.pem";
    out->server_cert = p + "server.pem";
    out->server_key = p + "server.key";
    out->client_cert = p + "client.pem";
    out->client_key = p + "client.key";
    const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    std::ofstream(p + "server.ext") << "subjectAltName=DNS:localhost,IP:127.0.0.1\n"
                                       "basicConstraints=CA:FALSE\n"
                                       "extendedKeyUsage=serverAuth\n";
    std::ofstream(p + "client.ext") << "basicConstraints=CA:FALSE\n"
                                       "extendedKeyUsage=clientAuth\n";
    return Sh("openssl req -x509 " + ec + " -days 2 -subj /CN=hitbox-test-ca-" + name +
              " -keyout " + p + "ca.key -out " + out->ca) &&
           Sh("openssl req " + ec + " -subj /CN=localhost -keyout " + out->server_key + " -out " +
              p + "server.csr") &&
           Sh("openssl x509 -req -days 2 -in " + p + "server.csr -CA " + out->ca + " -CAkey " + p +
              "ca.key -CAcreateserial -extfile " + p + "server.ext -out " + out->server_cert) &&
           Sh("openssl req " + ec + " -subj /CN=hitbox-test-client-" + name + " -keyout " +
              out->client_key + " -out " + p + "client.csr") &&
           Sh("openssl x509 -req -days 2 -in " + p + "client.csr -CA " + out->ca + " -CAkey " + p +
              "ca.key -CAcreateserial -extfile " + p + "client.ext -out " + out->client_cert);
  }

  TempDir dir_{"certs"};
  bool ok_ = false;
  CertSet a_, b_;
};

}  // namespace hitbox::testing
