// Subprocesses for the hitboxctl tests: a hitboxd on a free loopback port and
// one-shot hitboxctl runs with captured stdout, stderr and exit code.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace hitbox::ctl_test {

/// Output of one finished process.
struct RunResult {
  /// Exit code; 128 + signal when killed; -1 when it could not start.
  int code = -1;
  std::string out;
  std::string err;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// A fresh temporary file path (the file is created empty).
inline std::string TempPath(const std::string& stem) {
  std::string tmpl = (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + std::string("/") +
                     stem + "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  const int fd = mkstemp(buf.data());
  if (fd >= 0) close(fd);
  return std::string(buf.data());
}

/// Starts `argv[0]` with `argv`, stdout/stderr into the given files, extra
/// environment `env` ("NAME=value"; "NAME=" with nothing after '=' unsets NAME).
inline pid_t Spawn(const std::vector<std::string>& argv, const std::string& out_path,
                   const std::string& err_path, const std::vector<std::string>& env = {}) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  // Child.
  const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (out < 0 || err < 0) _exit(126);
  dup2(out, STDOUT_FILENO);
  dup2(err, STDERR_FILENO);
  close(out);
  close(err);
  for (const std::string& e : env) {
    const size_t eq = e.find('=');
    const std::string name = e.substr(0, eq);
    const std::string value = e.substr(eq + 1);
    if (value.empty()) {
      unsetenv(name.c_str());
    } else {
      setenv(name.c_str(), value.c_str(), 1);
    }
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  _exit(127);
}

/// Waits for `pid` up to `timeout`, then kills it (SIGKILL). Exit code as in RunResult.
inline int WaitFor(pid_t pid, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (true) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0) return -1;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

/// Runs a program to completion (killed after `timeout`).
inline RunResult RunProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env = {},
                     std::chrono::seconds timeout = std::chrono::seconds(120)) {
  const std::string out = TempPath("hitboxctl-out");
  const std::string err = TempPath("hitboxctl-err");
  RunResult r;
  const pid_t pid = Spawn(argv, out, err, env);
  if (pid > 0) r.code = WaitFor(pid, timeout);
  r.out = ReadFile(out);
  r.err = ReadFile(err);
  std::remove(out.c_str());
  std::remove(err.c_str());
  return r;
}

/// A hitboxd on 127.0.0.1 with a port picked by the kernel (--listen
/// 127.0.0.1:0 --port-file), stopped with SIGTERM by the destructor.
class Hitboxd {
 public:
  explicit Hitboxd(const std::vector<std::string>& extra_args = {}) {
    port_file_ = TempPath("hitboxd-port");
    std::remove(port_file_.c_str());
    log_ = TempPath("hitboxd-log");
    std::vector<std::string> argv = {std::string(HITBOX_BINARY_DIR) + "/bin/hitboxd", "--listen",
                                     "127.0.0.1:0", "--port-file", port_file_};
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    pid_ = Spawn(argv, log_, log_ + ".err");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string text = ReadFile(port_file_);
      if (!text.empty() && text.back() == '\n') {
        port_ = std::atoi(text.c_str());
        break;
      }
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (port_ <= 0) {
      // The port file may lack a trailing newline: accept any number.
      const std::string text = ReadFile(port_file_);
      port_ = text.empty() ? 0 : std::atoi(text.c_str());
    }
  }
  ~Hitboxd() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      if (WaitFor(pid_, std::chrono::seconds(10)) < 0) kill(pid_, SIGKILL);
    }
    for (const std::string& p : {port_file_, log_, log_ + ".err"}) std::remove(p.c_str());
  }
  Hitboxd(const Hitboxd&) = delete;
  Hitboxd& operator=(const Hitboxd&) = delete;

  /// True when the server is listening.
  bool ok() const { return pid_ > 0 && port_ > 0; }
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  /// What the server logged (for failure messages).
  std::string log() const { return ReadFile(log_) + ReadFile(log_ + ".err"); }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string port_file_;
  std::string log_;
};

}  // namespace hitbox::ctl_test
