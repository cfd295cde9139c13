// Child processes for tests that run the built programs as a user would:
//  - RunProcess: a command (hitboxctl, openssl, ...) run to completion with
//    its stdout, stderr and exit code captured;
//  - HitboxdProcess: the real hitboxd binary on a loopback port picked by the
//    kernel (--listen HOST:0 --port-file), stopped with SIGTERM (exit status
//    collected) or SIGKILL, paused and resumed, restarted on its port; its
//    stdout and stderr go to a log file, printed when the test has failed.
// Everything a child needs is prepared before fork(): the child only redirects
// its descriptors and calls execve (test processes run gRPC threads).
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "temp_dir.h"

extern char** environ;

namespace hitbox::testing {

/// A finished process.
struct RunResult {
  /// Exit code; 128 + signal when killed by a signal; -1 when it never ran.
  int code = -1;
  std::string out;  ///< what it wrote to stdout
  std::string err;  ///< what it wrote to stderr
};

/// A wait status as a shell would report it: the exit code, or 128 + signal.
inline int ExitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

/// A file descriptor closed by the destructor (-1: none).
class OwnedFd {
 public:
  explicit OwnedFd(int fd = -1) : fd_(fd) {}
  ~OwnedFd() {
    if (fd_ >= 0) close(fd_);
  }
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

/// Blocks until one of `fds` (negative ones are skipped) is readable or
/// `deadline` passes; true when one is readable.
inline bool WaitReadable(std::initializer_list<int> fds,
                         std::chrono::steady_clock::time_point deadline) {
  std::vector<pollfd> p;
  for (int fd : fds) p.push_back({fd, POLLIN, 0});
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() < 0) return false;
    const int r = poll(p.data(), p.size(), static_cast<int>(left.count()) + 1);
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) return false;
  }
}

/// One child process, SIGKILLed and reaped by the destructor if still there.
/// The child gets SIGKILL when the thread that started it ends (PDEATHSIG), so
/// a killed test never leaves servers behind.
class Subprocess {
 public:
  Subprocess() = default;
  ~Subprocess() { Kill(); }
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  /// Starts argv[0] (a path) with `argv`; stdin from /dev/null, stdout and
  /// stderr appended to the files (the same path for both is fine). `env`:
  /// "NAME=value" sets NAME, "NAME=" unsets it; the rest is inherited. False
  /// when fork failed or a file could not be opened; a failed exec shows as
  /// exit code 127.
  bool Start(const std::vector<std::string>& argv, const std::string& out_path,
             const std::string& err_path, const std::vector<std::string>& env = {}) {
    if (pid_ > 0 || argv.empty()) return false;
    std::vector<std::string> args = argv;
    std::vector<char*> c_argv;
    for (std::string& a : args) c_argv.push_back(a.data());
    c_argv.push_back(nullptr);
    std::vector<std::string> vars = Environment(env);
    std::vector<char*> c_env;
    for (std::string& v : vars) c_env.push_back(v.data());
    c_env.push_back(nullptr);

    const int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    const int err = err_path == out_path
                        ? out
                        : open(err_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    const pid_t parent = getpid();
    pid_t pid = -1;
    if (in >= 0 && out >= 0 && err >= 0) pid = fork();
    if (pid == 0) {  // the child: async-signal-safe calls only, up to execve
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(126);  // the parent is already gone
      dup2(in, STDIN_FILENO);
      dup2(out, STDOUT_FILENO);
      dup2(err, STDERR_FILENO);
      execve(c_argv[0], c_argv.data(), c_env.data());
      _exit(127);
    }
    if (in >= 0) close(in);
    if (out >= 0) close(out);
    if (err >= 0 && err != out) close(err);
    pid_ = pid > 0 ? pid : -1;
    return pid_ > 0;
  }

  pid_t pid() const { return pid_; }
  /// True between Start() and the moment it is reaped.
  bool alive() const { return pid_ > 0; }

  /// The exit code (see ExitCode) once the process has ended (it is reaped
  /// then); nullopt while it runs or when there is none.
  std::optional<int> Poll() {
    if (pid_ <= 0) return std::nullopt;
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == 0) return std::nullopt;
    pid_ = -1;
    return r == -1 ? -1 : ExitCode(status);
  }
  /// A descriptor that becomes readable when the process ends (pidfd_open;
  /// -1 when there is no process or the kernel has no pidfds).
  OwnedFd ExitFd() const {
    return OwnedFd(pid_ > 0 ? static_cast<int>(syscall(SYS_pidfd_open, pid_, 0)) : -1);
  }
  /// Waits for the end (up to `timeout`, a hang guard), then SIGKILLs it.
  /// The exit code; -1 when there was no process.
  int Wait(std::chrono::milliseconds timeout) {
    if (pid_ <= 0) return -1;
    const OwnedFd exited = ExitFd();
    if (exited.get() < 0) {  // no pidfd: a blocking wait
      int status = 0;
      const pid_t r = waitpid(pid_, &status, 0);
      pid_ = -1;
      return r == -1 ? -1 : ExitCode(status);
    }
    WaitReadable({exited.get()}, std::chrono::steady_clock::now() + timeout);
    if (const std::optional<int> code = Poll()) return *code;
    return Kill();
  }
  /// Sends `signal` (nothing when there is no process).
  void Signal(int signal) const {
    if (pid_ > 0) kill(pid_, signal);
  }
  /// SIGKILL and reap. The exit code (137 normally; -1 when there was no process).
  int Kill() {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGKILL);
    int status = 0;
    const pid_t r = waitpid(pid_, &status, 0);
    pid_ = -1;
    return r == -1 ? -1 : ExitCode(status);
  }

 private:
  // This process' environment with `changes` applied.
  static std::vector<std::string> Environment(const std::vector<std::string>& changes) {
    auto name_of = [](const std::string& var) { return var.substr(0, var.find('=')); };
    std::vector<std::string> vars;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      const std::string var = *e;
      bool replaced = false;
      for (const std::string& c : changes) replaced = replaced || name_of(c) == name_of(var);
      if (!replaced) vars.push_back(var);
    }
    for (size_t i = 0; i < changes.size(); ++i) {  // the last change of a name wins
      const std::string& c = changes[i];
      bool later = false;
      for (size_t j = i + 1; j < changes.size(); ++j) later = later || name_of(changes[j]) == name_of(c);
      if (!later && c.find('=') != std::string::npos && c.back() != '=') vars.push_back(c);
    }
    return vars;
  }

  pid_t pid_ = -1;
};

/// Waits until `done()` holds, woken by each write to the file `path`
/// (inotify) or the end of `process` (pidfd) instead of sleeping; false when
/// the process ended first or `timeout` (a hang guard) passed.
template <typename Done>
bool WaitForWrite(const std::string& path, Subprocess& process, std::chrono::milliseconds timeout,
                  Done&& done) {
  const OwnedFd changed(inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
  const bool watched = changed.get() >= 0 &&
                       inotify_add_watch(changed.get(), path.c_str(), IN_MODIFY) >= 0;
  const OwnedFd exited = process.ExitFd();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (done()) return true;
    if (process.Poll().has_value()) return done();
    // Without a watch or a pidfd, nothing wakes us: look again in 10 ms.
    const auto until = watched && exited.get() >= 0
                           ? deadline
                           : std::min(deadline, std::chrono::steady_clock::now() +
                                                    std::chrono::milliseconds(10));
    WaitReadable({changed.get(), exited.get()}, until);
    if (std::chrono::steady_clock::now() > deadline) return done();
    char events[4096];
    while (watched && read(changed.get(), events, sizeof events) > 0) {
    }
  }
}

/// Runs `argv` (argv[0] a path) to completion, SIGKILLed after `timeout`;
/// `env` as in Subprocess::Start. Output goes through a temporary directory
/// removed before returning.
inline RunResult RunProcess(const std::vector<std::string>& argv,
                            const std::vector<std::string>& env = {},
                            std::chrono::seconds timeout = std::chrono::seconds(120)) {
  const TempDir dir("run");
  const std::string out = dir.file("stdout");
  const std::string err = dir.file("stderr");
  RunResult r;
  Subprocess p;
  if (p.Start(argv, out, err, env)) r.code = p.Wait(timeout);
  r.out = ReadFile(out);
  r.err = ReadFile(err);
  return r;
}

/// How HitboxdProcess starts hitboxd (besides the per-test flags).
struct HitboxdOptions {
  /// --listen host; "[::1]" style for IPv6.
  std::string host = "127.0.0.1";
  /// --listen port; 0: one picked by the kernel, read from --port-file.
  int port = 0;
  /// --log-level; empty: not passed (the binary's default, info).
  std::string log_level = "warn";
  /// --threads; 0: not passed.
  int threads = 1;
  /// How long to wait for the port file before giving up.
  std::chrono::seconds start_timeout{60};
};

/// The hitboxd binary (HITBOX_BINARY_DIR/bin/hitboxd) as a child process. Its
/// stdout and stderr are appended to log_path(); when the running test has
/// failed, the destructor prints that log's tail.
class HitboxdProcess {
 public:
  /// Starts hitboxd with `extra_args` after --listen, --port-file, --log-level
  /// and --threads; running() says whether it is listening.
  explicit HitboxdProcess(std::vector<std::string> extra_args = {}, HitboxdOptions options = {})
      : extra_args_(std::move(extra_args)), options_(std::move(options)), dir_("hitboxd") {
    Start(options_.port);
  }
  ~HitboxdProcess() {
    process_.Kill();
    if (::testing::Test::HasFailure()) {
      std::string text = log();
      constexpr size_t kTail = 8192;
      if (text.size() > kTail) text = "...\n" + text.substr(text.size() - kTail);
      std::cerr << "--- hitboxd " << address() << " log (" << log_path() << ") ---\n"
                << text << "--- end of hitboxd log ---\n";
    }
  }
  HitboxdProcess(const HitboxdProcess&) = delete;
  HitboxdProcess& operator=(const HitboxdProcess&) = delete;

  static std::string BinaryPath() { return std::string(HITBOX_BINARY_DIR) + "/bin/hitboxd"; }

  /// True when the process runs and has written its port.
  bool running() const { return process_.alive() && port_ > 0; }
  /// The port it listens on (0 when it did not start).
  int port() const { return port_; }
  /// host:port for a channel.
  std::string address() const { return options_.host + ":" + std::to_string(port_); }
  pid_t pid() const { return process_.pid(); }
  /// Everything it wrote to stdout and stderr so far (all starts).
  std::string log() const { return ReadFile(log_path()); }
  std::string log_path() const { return dir_.file("hitboxd.log"); }

  /// Starts it (again, after Kill or Terminate) on `port` (0: any) and waits
  /// for the port file. False, with running() false, when it exited or did
  /// not listen within the start timeout (then it is killed).
  bool Start(int port) {
    process_.Kill();
    port_ = 0;
    exit_code_ = -1;
    const std::string port_file = dir_.file("port");
    std::remove(port_file.c_str());
    std::vector<std::string> argv = {BinaryPath(), "--listen",
                                     options_.host + ":" + std::to_string(port), "--port-file",
                                     port_file};
    if (!options_.log_level.empty()) argv.insert(argv.end(), {"--log-level", options_.log_level});
    if (options_.threads > 0) argv.insert(argv.end(), {"--threads", std::to_string(options_.threads)});
    argv.insert(argv.end(), extra_args_.begin(), extra_args_.end());
    // The port file is written (renamed into place) once the server listens:
    // woken by its directory's change (inotify) or the process' end (pidfd).
    const OwnedFd changed(inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
    const bool watched = changed.get() >= 0 &&
                         inotify_add_watch(changed.get(), dir_.path().c_str(),
                                           IN_MOVED_TO | IN_CLOSE_WRITE | IN_CREATE) >= 0;
    if (!process_.Start(argv, log_path(), log_path())) return false;
    const OwnedFd exited = process_.ExitFd();
    const auto deadline = std::chrono::steady_clock::now() + options_.start_timeout;
    for (;;) {
      const int p = std::atoi(ReadFile(port_file).c_str());
      if (p > 0) {
        port_ = p;
        return true;
      }
      if (const std::optional<int> code = process_.Poll()) {  // a bad flag, a taken port, ...
        exit_code_ = *code;
        return false;
      }
      // Without a watch or a pidfd, nothing wakes us: look again in 10 ms.
      const auto until = watched && exited.get() >= 0
                             ? deadline
                             : std::min(deadline, std::chrono::steady_clock::now() +
                                                      std::chrono::milliseconds(10));
      WaitReadable({changed.get(), exited.get()}, until);
      if (std::chrono::steady_clock::now() > deadline) break;
      char events[4096];
      while (watched && read(changed.get(), events, sizeof events) > 0) {
      }
    }
    exit_code_ = process_.Kill();
    return false;
  }
  /// SIGKILL (a crash), then Start() on the same port.
  bool Restart() {
    const int port = port_;
    Kill();
    return Start(port);
  }

  /// SIGSTOP: the process keeps its socket but answers nothing.
  void Pause() {
    if (!process_.alive()) return;
    process_.Signal(SIGSTOP);
    int status = 0;
    waitpid(process_.pid(), &status, WUNTRACED);  // returns once it is stopped
  }
  /// SIGCONT after Pause().
  void Resume() {
    if (!process_.alive()) return;
    process_.Signal(SIGCONT);
    int status = 0;
    waitpid(process_.pid(), &status, WCONTINUED);
  }
  /// SIGKILL and reap: a crash; the port is free afterwards.
  void Kill() {
    if (process_.alive()) exit_code_ = process_.Kill();
  }
  /// SIGTERM, a graceful stop: its exit code (0 for a clean stop; 128 + signal
  /// when a signal ended it, 137 when it was still running after `timeout` and
  /// was killed; -1 when it was not running).
  int Terminate(std::chrono::seconds timeout = std::chrono::seconds(30)) {
    if (!process_.alive()) return -1;
    process_.Signal(SIGTERM);
    exit_code_ = process_.Wait(timeout);
    return exit_code_;
  }
  /// How the last run ended (see ExitCode); -1 while it runs or before it ran.
  int exit_code() const { return exit_code_; }

 private:
  std::vector<std::string> extra_args_;
  HitboxdOptions options_;
  TempDir dir_;  // port file and log
  Subprocess process_;
  int port_ = 0;
  int exit_code_ = -1;
};

}  // namespace hitbox::testing
