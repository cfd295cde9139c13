// Runs the real hitboxd binary (HITBOX_BINARY_DIR/bin/hitboxd) on a loopback
// port for client tests: start, pause (SIGSTOP: a server that does not
// answer), resume, kill (SIGKILL: a crash), restart on the same port.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace hitbox::testing {

class HitboxdProcess {
 public:
  /// Starts hitboxd on `host`:`port` (0: a free port, read from --port-file).
  explicit HitboxdProcess(int port = 0, std::vector<std::string> extra_args = {},
                          std::string host = "127.0.0.1")
      : extra_args_(std::move(extra_args)), host_(std::move(host)) {
    Start(port);
  }
  ~HitboxdProcess() { Kill(); }
  HitboxdProcess(const HitboxdProcess&) = delete;
  HitboxdProcess& operator=(const HitboxdProcess&) = delete;

  static std::string BinaryPath() { return std::string(HITBOX_BINARY_DIR) + "/bin/hitboxd"; }

  /// True when the process runs and wrote its port.
  bool running() const { return pid_ > 0 && port_ > 0; }
  int port() const { return port_; }
  std::string address() const { return host_ + ":" + std::to_string(port_); }

  /// Starts (again) on `port`; the previous process must be gone.
  void Start(int port) {
    static int counter = 0;
    const std::filesystem::path dir = std::filesystem::temp_directory_path();
    port_file_ = (dir / ("hitboxd_client_test_" + std::to_string(getpid()) + "_" +
                         std::to_string(++counter) + ".port"))
                     .string();
    std::filesystem::remove(port_file_);
    const std::string listen = host_ + ":" + std::to_string(port);
    const std::string binary = BinaryPath();
    // Everything the child needs is built before fork (no allocation after it).
    std::vector<std::string> args = {binary,       "--listen",    listen,
                                     "--port-file", port_file_, "--log-level",
                                     "warn",        "--threads",   "1"};
    args.insert(args.end(), extra_args_.begin(), extra_args_.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      execv(binary.c_str(), argv.data());
      std::perror("execv hitboxd");
      _exit(127);
    }
    // Wait (at most 20 s) for the port file, written atomically once listening.
    port_ = 0;
    for (int i = 0; i < 2000 && port_ == 0; ++i) {
      std::ifstream in(port_file_);
      int p = 0;
      if (in >> p && p > 0) {
        port_ = p;
        break;
      }
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {  // exited early
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  /// SIGSTOP: the process keeps its socket but answers nothing.
  void Pause() {
    if (pid_ <= 0) return;
    kill(pid_, SIGSTOP);
    int status = 0;
    waitpid(pid_, &status, WUNTRACED);  // returns once the process is stopped
  }
  /// SIGCONT after Pause().
  void Resume() {
    if (pid_ <= 0) return;
    kill(pid_, SIGCONT);
    int status = 0;
    waitpid(pid_, &status, WCONTINUED);
  }
  /// SIGKILL and reap: a crash; the port is free afterwards.
  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    std::filesystem::remove(port_file_);
  }
  /// SIGTERM and reap: a graceful stop. Returns the exit code (-1 if killed by a signal).
  int Terminate() {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    std::filesystem::remove(port_file_);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  /// Kill() then Start() on the same port.
  void Restart() {
    const int port = port_;
    Kill();
    Start(port);
  }

 private:
  std::vector<std::string> extra_args_;
  std::string host_;
  pid_t pid_ = -1;
  int port_ = 0;
  std::string port_file_;
};

}  // namespace hitbox::testing
