// hitbox::ClientPool: routes each session to one of several Hitbox servers by
// rendezvous (highest-random-weight) hashing, so that every process of a game
// backend sends a session's calls to the same server without coordination.
//
// Rendezvous hashing (Thaler & Ravishankar, "Using name-based mappings to
// increase hit rates", IEEE/ACM ToN 1998): the owner of session s is the
// address a maximising Score(a, s). Removing an address moves only the
// sessions it owned (each to its second-best address); adding one moves only
// the sessions it now wins. Score is 64-bit FNV-1a of both strings, mixed by
// SplitMix64: a pure function of the bytes, identical across processes,
// platforms and releases.
//
// Thread safety: every member may be called from any thread at once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hitbox/client.h"

namespace hitbox {

/// 64-bit FNV-1a of `bytes` (offset basis 0xcbf29ce484222325, prime 0x100000001b3).
constexpr uint64_t Fnv1a64(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : bytes) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

/// SplitMix64's finalizer (Steele, Lea & Flood, "Fast splittable pseudorandom
/// number generators", OOPSLA 2014): a bijective 64-bit mix.
constexpr uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// Rendezvous weight of `address` for `session_id`; the highest weight owns the session.
constexpr uint64_t RendezvousScore(std::string_view address, std::string_view session_id) {
  return SplitMix64(Fnv1a64(address) ^ SplitMix64(Fnv1a64(session_id)));
}

/// Index in `addresses` of the owner of `session_id` (ties: the smaller
/// address string); addresses.size() when the list is empty.
size_t RendezvousPick(const std::vector<std::string>& addresses, std::string_view session_id);

/// A set of Clients, one per server address, with rendezvous routing by session id.
class ClientPool {
 public:
  /// Makes the Client of one address (tests inject in-process channels with it).
  using ClientFactory = std::function<std::shared_ptr<Client>(const std::string& address)>;

  /// One Client per distinct address, each built with `options`.
  explicit ClientPool(const std::vector<std::string>& addresses, ClientOptions options = {});
  /// One Client per distinct address, built by `factory`.
  ClientPool(const std::vector<std::string>& addresses, ClientFactory factory);

  /// The Client owning `session_id`; nullptr when the pool has no address.
  /// The pointer stays valid after the address is removed from the pool.
  std::shared_ptr<Client> ForSession(std::string_view session_id) const;
  /// The address owning `session_id`; empty when the pool has no address.
  std::string AddressFor(std::string_view session_id) const;
  /// The Client of `address`; nullptr when it is not in the pool.
  std::shared_ptr<Client> ForAddress(std::string_view address) const;

  /// Adds an address (false if already present). Only sessions it now wins move to it.
  bool AddAddress(const std::string& address);
  /// Removes an address (false if absent). Only the sessions it owned move.
  bool RemoveAddress(std::string_view address);
  /// The addresses, sorted.
  std::vector<std::string> addresses() const;
  /// Number of addresses.
  size_t size() const;

  /// Creates a session on its owner. The id is required (the route depends on
  /// it): an empty spec.session_id is INVALID_ARGUMENT. UNAVAILABLE when the pool is empty.
  RpcResult<SessionInfo> CreateSession(const SessionSpec& spec, const CallOptions& call = {});

 private:
  struct Entry {
    std::string address;
    std::shared_ptr<Client> client;
  };
  ClientFactory factory_;
  mutable std::mutex mu_;
  std::vector<Entry> entries_;  // sorted by address
};

}  // namespace hitbox
