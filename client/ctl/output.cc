#include "output.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace hitbox::ctl {

Table::Table(std::vector<std::string> header) : header_(std::move(header)) {}

void Table::AddRow(std::vector<std::string> row) {
  row.resize(header_.size());
  rows_.push_back(std::move(row));
}

std::string Table::Render() const {
  std::vector<size_t> width(header_.size(), 0);
  for (size_t c = 0; c < header_.size(); ++c) width[c] = header_[c].size();
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  auto is_number = [](const std::string& s) {
    return !s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-' || s[0] == '+');
  };
  std::string out;
  auto line = [&](const std::vector<std::string>& cells, bool header) {
    std::string l;
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string& s = cells[c];
      const std::string pad(width[c] - s.size(), ' ');
      const bool right = !header && is_number(s) && s != "-";
      l += right ? pad + s : s + pad;
      if (c + 1 < cells.size()) l += "  ";
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line(header_, true);
  std::vector<std::string> rule;
  for (size_t c = 0; c < header_.size(); ++c) rule.push_back(std::string(width[c], '-'));
  line(rule, true);
  for (const auto& row : rows_) line(row, false);
  return out;
}

std::string FormatVec3(const Vec3& v, int digits) {
  return FormatDouble(v.x, digits) + "," + FormatDouble(v.y, digits) + "," +
         FormatDouble(v.z, digits);
}

std::string FormatBounds(const std::optional<Aabb>& bounds) {
  if (!bounds || bounds->IsEmpty()) return "-";
  std::string out = "[";
  out += FormatVec3(bounds->min, 4);
  out += "]..[";
  out += FormatVec3(bounds->max, 4);
  out += "]";
  return out;
}

std::string FormatUnixMs(int64_t unix_ms) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

nlohmann::json ToJson(const Vec3& v) { return nlohmann::json::array({v.x, v.y, v.z}); }

nlohmann::json BoundsJson(const std::optional<Aabb>& bounds) {
  if (!bounds || bounds->IsEmpty()) return nullptr;
  return {{"min", ToJson(bounds->min)}, {"max", ToJson(bounds->max)}};
}

nlohmann::json ToJson(const SessionInfo& s) {
  nlohmann::json j = {
      {"session_id", s.session_id},
      {"collider_count", s.collider_count},
      {"revision", s.revision},
      {"created_unix_ms", s.created_unix_ms},
      {"last_active_unix_ms", s.last_active_unix_ms},
      {"memory_bytes", s.memory_bytes},
      {"limits",
       {{"max_colliders", s.limits.max_colliders},
        {"max_changes_per_message", s.limits.max_changes_per_message},
        {"max_queries_per_message", s.limits.max_queries_per_message},
        {"idle_timeout_ms", s.limits.idle_timeout_ms},
        {"history_ticks", s.limits.history_ticks}}},
  };
  if (s.ticks) j["ticks"] = {{"oldest", s.ticks->oldest}, {"newest", s.ticks->newest}};
  j["bounds"] = BoundsJson(s.bounds);
  if (!s.token.empty()) j["token"] = s.token;  // only CreateSession's answer has one
  j["map_id"] = s.map_id.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.map_id);
  j["map_collider_count"] = s.map_collider_count;
  return j;
}

nlohmann::json ToJson(const OverlapHit& h) {
  nlohmann::json j = {{"id", h.id}, {"user_data", h.user_data}, {"sub_shape", h.sub_shape}};
  if (h.contact) {
    j["contact"] = {{"depth", h.contact->depth},
                    {"normal", ToJson(h.contact->normal)},
                    {"point_a", ToJson(h.contact->point_a)},
                    {"point_b", ToJson(h.contact->point_b)}};
  }
  return j;
}

nlohmann::json ToJson(const CastHit& h) {
  return {{"id", h.id},
          {"user_data", h.user_data},
          {"fraction", h.fraction},
          {"normal", ToJson(h.normal)},
          {"point", ToJson(h.point)},
          {"started_overlapping", h.started_overlapping()},
          {"depth", h.depth},
          {"sub_shape", h.sub_shape}};
}

void PrintJson(const nlohmann::json& doc) {
  const std::string text = doc.dump(2);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

namespace {
int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

Progress::Progress(bool enabled, size_t total, std::string what)
    : enabled_(enabled && total > 0 && isatty(STDERR_FILENO) == 1),
      total_(total),
      what_(std::move(what)) {}

Progress::~Progress() { Finish(); }

void Progress::Update(size_t done) {
  if (!enabled_ || finished_) return;
  const int64_t now = NowMs();
  if (done < total_ && last_draw_ms_ >= 0 && now - last_draw_ms_ < 50) return;
  last_draw_ms_ = now;
  constexpr int kWidth = 30;
  const double f = std::min(1.0, static_cast<double>(done) / static_cast<double>(total_));
  const int filled = static_cast<int>(f * kWidth);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(kWidth, ' ');
  std::fprintf(stderr, "\r[%s] %3d%%  %zu/%zu %s", bar.c_str(), static_cast<int>(f * 100.0), done,
               total_, what_.c_str());
  std::fflush(stderr);
}

void Progress::Finish() {
  if (!enabled_ || finished_) return;
  finished_ = true;
  if (last_draw_ms_ >= 0) std::fputc('\n', stderr);
}

}  // namespace hitbox::ctl
