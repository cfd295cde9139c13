#include "hitbox/client_pool.h"

#include <algorithm>

namespace hitbox {

size_t RendezvousPick(const std::vector<std::string>& addresses, std::string_view session_id) {
  size_t best = addresses.size();
  uint64_t best_score = 0;
  for (size_t i = 0; i < addresses.size(); ++i) {
    const uint64_t score = RendezvousScore(addresses[i], session_id);
    if (best == addresses.size() || score > best_score ||
        (score == best_score && addresses[i] < addresses[best])) {
      best = i;
      best_score = score;
    }
  }
  return best;
}

ClientPool::ClientPool(const std::vector<std::string>& addresses, ClientOptions options)
    : ClientPool(addresses, [options](const std::string& address) {
        return std::make_shared<Client>(address, options);
      }) {}

ClientPool::ClientPool(const std::vector<std::string>& addresses, ClientFactory factory)
    : factory_(std::move(factory)) {
  for (const std::string& a : addresses) AddAddress(a);
}

namespace {

// RendezvousPick over the entries' addresses, without copying them.
template <typename Entries>
size_t PickEntry(const Entries& entries, std::string_view session_id) {
  size_t best = entries.size();
  uint64_t best_score = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const uint64_t score = RendezvousScore(entries[i].address, session_id);
    if (best == entries.size() || score > best_score ||
        (score == best_score && entries[i].address < entries[best].address)) {
      best = i;
      best_score = score;
    }
  }
  return best;
}

}  // namespace

std::shared_ptr<Client> ClientPool::ForSession(std::string_view session_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t i = PickEntry(entries_, session_id);
  return i < entries_.size() ? entries_[i].client : nullptr;
}

std::string ClientPool::AddressFor(std::string_view session_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t i = PickEntry(entries_, session_id);
  return i < entries_.size() ? entries_[i].address : std::string();
}

std::shared_ptr<Client> ClientPool::ForAddress(std::string_view address) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Entry& e : entries_) {
    if (e.address == address) return e.client;
  }
  return nullptr;
}

bool ClientPool::AddAddress(const std::string& address) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Entry& e : entries_) {
      if (e.address == address) return false;
    }
  }
  // Build the client outside the lock (channel creation may take a moment).
  std::shared_ptr<Client> client = factory_(address);
  std::lock_guard<std::mutex> lock(mu_);
  for (const Entry& e : entries_) {
    if (e.address == address) return false;
  }
  auto pos = std::lower_bound(entries_.begin(), entries_.end(), address,
                              [](const Entry& e, const std::string& a) { return e.address < a; });
  entries_.insert(pos, Entry{address, std::move(client)});
  return true;
}

bool ClientPool::RemoveAddress(std::string_view address) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const Entry& e) { return e.address == address; });
  if (it == entries_.end()) return false;
  entries_.erase(it);
  return true;
}

std::vector<std::string> ClientPool::addresses() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const Entry& e : entries_) out.push_back(e.address);
  return out;
}

size_t ClientPool::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

RpcResult<SessionInfo> ClientPool::CreateSession(const SessionSpec& spec,
                                                 const CallOptions& call) {
  if (spec.session_id.empty()) {
    return RpcStatus(RpcCode::kInvalidArgument,
                     "ClientPool::CreateSession needs a session_id: the route depends on it");
  }
  std::shared_ptr<Client> client = ForSession(spec.session_id);
  if (!client) return RpcStatus(RpcCode::kUnavailable, "the ClientPool has no address");
  return client->CreateSession(spec, call);
}

}  // namespace hitbox
