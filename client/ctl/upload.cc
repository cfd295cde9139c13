#include "upload.h"

#include <algorithm>
#include <regex>
#include <span>

#include "output.h"

namespace hitbox::ctl {
namespace {

// The index K of "changes[K]" / "colliders[K]" in a server error, if any.
std::optional<size_t> ErrorEntryIndex(const std::string& message) {
  static const std::regex kIndex(R"((?:changes|colliders)\[(\d+)\])");
  std::smatch m;
  if (!std::regex_search(message, m, kIndex)) return std::nullopt;
  try {
    return static_cast<size_t>(std::stoull(m[1].str()));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

size_t BatchSize(size_t wanted, uint32_t limit) {
  size_t batch = std::max<size_t>(1, wanted);
  if (limit > 0) batch = std::min<size_t>(batch, limit);
  return batch;
}

UploadResult Upload(Client& client, const std::string& session,
                    const std::vector<Collider>& colliders, size_t batch, bool progress,
                    std::optional<uint64_t> tick) {
  UploadResult out;
  batch = std::max<size_t>(1, batch);
  Progress bar(progress && colliders.size() > batch, colliders.size(), "colliders");
  for (size_t start = 0; start < colliders.size(); start += batch) {
    const size_t n = std::min(batch, colliders.size() - start);
    const auto send = [&]() -> RpcResult<ApplyResult> {
      if (!tick) return client.AddColliders(session, std::span(colliders).subspan(start, n));
      std::vector<ColliderChange> adds;
      adds.reserve(n);
      for (size_t i = start; i < start + n; ++i) adds.push_back(ColliderChange::Add(colliders[i]));
      return client.ApplyTick(session, *tick, adds);
    };
    auto r = send();
    if (!r.ok()) {
      out.status = r.status();
      out.batch_begin = start;
      out.batch_end = start + n;
      const auto k = ErrorEntryIndex(out.status.message());
      if (k && *k < n) out.bad_index = start + *k;
      return out;
    }
    out.last = *r;
    out.loaded = start + n;
    ++out.batches;
    bar.Update(start + n);
  }
  return out;
}

RpcStatus RemoveUploaded(Client& client, const std::string& session,
                         const std::vector<Collider>& colliders, size_t count, size_t batch) {
  std::vector<uint64_t> ids;
  batch = std::max<size_t>(1, batch);
  for (size_t start = 0; start < count; start += batch) {
    ids.clear();
    for (size_t i = start; i < std::min(count, start + batch); ++i) ids.push_back(colliders[i].id);
    auto r = client.RemoveColliders(session, ids);
    if (!r.ok()) return r.status();
  }
  return {};
}

}  // namespace hitbox::ctl
