// `hitboxctl query SESSION --file Q.json [--check]`: a file of queries
// (overlaps, sweeps, raycasts and character moves in the case-file query form,
// shared/cases/FORMAT.md, with `at_tick`) run on a session in Query batches
// under its limits. The file is read one query at a time and each batch's
// answers are printed as soon as they arrive, so neither the queries nor the
// answers of a big file are held at once. --check judges every answer against
// the file's "expected" array by the case files' rules (hitbox_cases'
// CheckAnswer); it keeps those expected answers (ids and fractions), read in a
// first pass, and exits 1 on any mismatch.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "ctl.h"
#include "hitbox/cases/case_file.h"
#include "output.h"
#include "upload.h"

namespace hitbox::ctl {
namespace {

using nlohmann::json;

struct QueryFileArgs {
  std::string session;
  std::string file;
  bool check = false;
  size_t batch = 1000;
  size_t max_failures = 25;
};

/// One answer as a table row: what was hit, or where a move ended.
std::string AnswerText(cases::QueryKind kind, const QueryResult& r) {
  std::string text;
  switch (kind) {
    case cases::QueryKind::kOverlap: {
      if (r.overlaps.empty()) return "no hits";
      text = "hits ";
      for (size_t i = 0; i < r.overlaps.size(); ++i) {
        text += (i ? "," : "") + std::to_string(r.overlaps[i].id);
      }
      if (r.truncated) text += " (truncated)";
      return text;
    }
    case cases::QueryKind::kSweep:
    case cases::QueryKind::kRaycast: {
      if (r.hits.empty()) return "no hit";
      const CastHit& h = r.hits[0];
      return "hit " + std::to_string(h.id) + " at " + FormatDouble(h.fraction, 9) + " normal " +
             FormatVec3(h.normal) + " point " + FormatVec3(h.point) +
             (h.started_overlapping() ? " (started inside)" : "");
    }
    case cases::QueryKind::kMove: {
      if (!r.move) return "no move result";
      const MoveResult& m = *r.move;
      text = "at " + FormatVec3(m.position, 9);
      text += m.on_ground ? " ground " + std::to_string(m.ground_id) : std::string(" in the air");
      if (m.stepped) text += " stepped";
      if (m.blocked) text += " blocked";
      return text;
    }
  }
  return text;
}

/// One answer as JSON: {"id", "kind", "hits" | move fields, ...}.
json AnswerJson(const cases::CaseQuery& q, const QueryResult& r) {
  json a = {{"id", q.id}, {"kind", cases::QueryKindName(q.kind)}};
  if (q.kind == cases::QueryKind::kOverlap) {
    json hits = json::array();
    for (const OverlapHit& h : r.overlaps) hits.push_back(ToJson(h));
    a["hits"] = hits;
    a["truncated"] = r.truncated;
  } else if (q.kind != cases::QueryKind::kMove) {
    json hits = json::array();
    for (const CastHit& h : r.hits) hits.push_back(ToJson(h));
    a["hits"] = hits;
  } else if (r.move) {
    const MoveResult& m = *r.move;
    a["position"] = ToJson(m.position);
    a["displacement"] = ToJson(m.displacement);
    a["on_ground"] = m.on_ground;
    a["ground"] = m.on_ground ? json{{"id", m.ground_id},
                                     {"sub_shape", m.ground_sub_shape},
                                     {"normal", ToJson(m.ground_normal)}}
                              : json(nullptr);
    a["stepped"] = m.stepped;
    a["blocked"] = m.blocked;
  }
  return a;
}

class QueryFileRun {
 public:
  QueryFileRun(const GlobalOptions& global, const QueryFileArgs& args, Client& client,
               size_t batch, std::vector<cases::Expected> expected)
      : global_(global), args_(args), client_(client), batch_(batch),
        expected_(std::move(expected)) {}

  /// Prints the start of the output (the JSON document's head, the table header).
  void Begin() {
    if (global_.json) {
      std::printf("{\"session_id\": %s, \"file\": %s, \"answers\": [",
                  json(args_.session).dump().c_str(), json(args_.file).dump().c_str());
    } else {
      std::printf("%10s  %-8s  %s%s\n", "ID", "KIND", args_.check ? "CHECK  " : "", "ANSWER");
    }
  }

  /// Queues one query; a full batch is sent and its answers printed.
  Status Add(cases::CaseQuery query) {
    pending_.push_back(std::move(query));
    return pending_.size() >= batch_ ? Flush() : Status::Ok();
  }

  /// Sends the queued queries as one Query call and prints their answers.
  Status Flush() {
    if (pending_.empty()) return Status::Ok();
    std::vector<Query> batch;
    batch.reserve(pending_.size());
    for (const cases::CaseQuery& q : pending_) batch.push_back(q.query);
    auto r = client_.Query(args_.session, batch);
    if (!r.ok()) {
      return Error{ErrorCode::kInvalidArgument,
                   "query " + args_.file + ": queries[" + std::to_string(done_) + ".." +
                       std::to_string(done_ + pending_.size() - 1) + "] on session " +
                       args_.session + ": " + RpcCodeName(r.status().code()) + ": " +
                       r.status().message()};
    }
    if (r->results.size() != pending_.size()) {
      return Error{ErrorCode::kInternal, "query: the server answered " +
                                             std::to_string(r->results.size()) + " results to " +
                                             std::to_string(pending_.size()) + " queries"};
    }
    for (size_t i = 0; i < pending_.size(); ++i) Print(done_ + i, pending_[i], r->results[i]);
    done_ += pending_.size();
    pending_.clear();
    std::fflush(stdout);
    return Status::Ok();
  }

  /// Prints the summary (counts per kind, failures) and returns the exit code.
  int End(double seconds) {
    if (args_.check && expected_.size() > done_) {
      ++failed_;
      Failure("the file has " + std::to_string(expected_.size()) + " expected answers for " +
              std::to_string(done_) + " queries");
    }
    if (global_.json) {
      json kinds = json::object();
      for (int k = 0; k < cases::kQueryKindCount; ++k) {
        if (total_[k] == 0) continue;
        json entry = {{"total", total_[k]}};
        if (args_.check) entry["passed"] = passed_[k];
        kinds[cases::QueryKindName(static_cast<cases::QueryKind>(k))] = entry;
      }
      json tail = {{"queries", done_}, {"kinds", kinds}, {"seconds", seconds}};
      if (args_.check) {
        tail["failed"] = failed_;
        tail["failures"] = failures_;
        tail["passed"] = failed_ == 0;
      }
      const std::string t = tail.dump();
      // The answers array closes, then the summary's members follow it.
      std::printf("%s], %s\n", done_ ? "\n" : "", t.substr(1).c_str());
    } else {
      std::printf("%zu queries", done_);
      for (int k = 0; k < cases::kQueryKindCount; ++k) {
        if (total_[k] == 0) continue;
        const char* name = cases::QueryKindName(static_cast<cases::QueryKind>(k));
        if (args_.check) {
          std::printf(", %s %d / %d passed", name, passed_[k], total_[k]);
        } else {
          std::printf(", %s %d", name, total_[k]);
        }
      }
      std::printf(" (%.2f s)\n", seconds);
      if (args_.check) {
        for (const std::string& f : failures_) std::printf("FAIL %s\n", f.c_str());
        if (failed_ > failures_.size()) {
          std::printf("... and %zu more failures\n", failed_ - failures_.size());
        }
        std::printf("%s\n", failed_ == 0 ? "PASS" : "FAIL");
      }
    }
    return args_.check && failed_ != 0 ? kExitFailure : kExitOk;
  }

 private:
  void Failure(std::string what) {
    if (failures_.size() < args_.max_failures) failures_.push_back(std::move(what));
  }

  void Print(size_t index, const cases::CaseQuery& q, const QueryResult& r) {
    const int k = static_cast<int>(q.kind);
    ++total_[k];
    cases::Verdict verdict;
    if (args_.check) {
      if (index >= expected_.size()) {
        verdict = {false, "no expected answer (expected[" + std::to_string(index) + "])"};
      } else if (expected_[index].id != q.id) {
        verdict = {false, "expected[" + std::to_string(index) + "] has id " +
                              std::to_string(expected_[index].id) + ", not the query's"};
      } else {
        verdict = cases::CheckAnswer(q, expected_[index], r);
      }
      if (verdict.ok) {
        ++passed_[k];
      } else {
        ++failed_;
        Failure("query " + std::to_string(q.id) + " (" + cases::QueryKindName(q.kind) + "): " +
                verdict.reason);
      }
    }
    if (global_.json) {
      json a = AnswerJson(q, r);
      if (args_.check) {
        a["ok"] = verdict.ok;
        if (!verdict.ok) a["reason"] = verdict.reason;
      }
      std::printf("%s\n  %s", index ? "," : "", a.dump().c_str());
    } else {
      std::printf("%10llu  %-8s  %s%s\n", static_cast<unsigned long long>(q.id),
                  cases::QueryKindName(q.kind),
                  args_.check ? (verdict.ok ? "ok     " : "FAIL   ") : "",
                  AnswerText(q.kind, r).c_str());
    }
  }

  const GlobalOptions& global_;
  const QueryFileArgs& args_;
  Client& client_;
  size_t batch_;
  std::vector<cases::Expected> expected_;
  std::vector<cases::CaseQuery> pending_;
  size_t done_ = 0;
  int total_[cases::kQueryKindCount] = {};
  int passed_[cases::kQueryKindCount] = {};
  size_t failed_ = 0;
  std::vector<std::string> failures_;
};

int RunQueryFile(const GlobalOptions& global, const QueryFileArgs& args) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<cases::Expected> expected;
  if (args.check) {
    cases::QueryFileVisitor collect;
    collect.on_expected = [&expected](size_t, cases::Expected e) {
      expected.push_back(std::move(e));
      return Status::Ok();
    };
    if (Status s = cases::StreamQueryFile(args.file, collect); !s.ok()) {
      return Fail("query: " + s.message());
    }
    if (expected.empty()) {
      return Fail("query --check: " + args.file +
                  " has no \"expected\" answers (the case-file form: one per query, same order)");
    }
  }
  auto client = global.MakeClient();
  auto info = client->GetSession(args.session);
  if (!info.ok()) return Fail(info.status(), "query: session " + args.session);
  QueryFileRun run(global, args, *client,
                   BatchSize(args.batch, info->limits.max_queries_per_message),
                   std::move(expected));
  run.Begin();
  cases::QueryFileVisitor visitor;
  visitor.on_query = [&run](size_t, cases::CaseQuery q) { return run.Add(std::move(q)); };
  Status s = cases::StreamQueryFile(args.file, visitor);
  if (s.ok()) s = run.Flush();
  if (!s.ok()) {
    std::fflush(stdout);
    std::fputc('\n', stdout);
    return Fail("query: " + s.message());
  }
  return run.End(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace

void AddQueryFileCommand(CLI::App& app, const GlobalOptions& global, Action& action) {
  auto args = std::make_shared<QueryFileArgs>();
  auto* cmd = app.add_subcommand(
      "query", "run a file of queries (overlaps, sweeps, raycasts, moves) on a session; "
               "--check judges the answers against the file's expected ones");
  cmd->add_option("session", args->session, "session id")->required();
  cmd->add_option("-f,--file", args->file,
                  "query file (.json or .json.gz): {\"queries\": [...]} in the case-file query "
                  "form plus moves; a case file works too")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_flag("--check", args->check,
                "check every answer against the file's \"expected\" array; exit 1 on a mismatch");
  cmd->add_option("--batch", args->batch,
                  "queries per Query call (capped by the session's max_queries_per_message)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--max-failures", args->max_failures, "failures listed in the summary")
      ->capture_default_str();
  cmd->callback([&global, &action, args] {
    action = [&global, args] { return RunQueryFile(global, *args); };
  });
}

}  // namespace hitbox::ctl
