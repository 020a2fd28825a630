// A mutex-guarded LRU map from string keys to shared values, bounded in entries and in bytes
// (each entry's cost is given by the caller); the newest entry is always kept. Used by the
// oneDNN fast paths to cache primitives and packed weights.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace trtutils::cpu {

template <typename V>
class LruCache {
 public:
  LruCache(size_t max_entries, size_t max_bytes)
      : max_entries_(max_entries), max_bytes_(max_bytes) {}
  // Callers hold mutex() around find/put/clear.
  std::shared_ptr<V> find(const std::string& key) {
    auto it = map_.find(key);
    if (it == map_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second.pos);
    return it->second.value;
  }
  // Values with a stale() test (their weights buffer freed: never used again) are dropped on
  // every insertion.
  void put(const std::string& key, std::shared_ptr<V> v, size_t cost) {
    if constexpr (requires(const V& x) { x.stale(); }) erase_stale();
    erase(key);
    lru_.push_front(key);
    map_.emplace(key, Slot{std::move(v), lru_.begin(), cost});
    bytes_ += cost;
    while (map_.size() > 1 && (map_.size() > max_entries_ || bytes_ > max_bytes_))
      erase(lru_.back());
  }
  // Removes the entries whose value is stale(); returns how many.
  size_t erase_stale() {
    size_t n = 0;
    for (auto it = map_.begin(); it != map_.end();) {
      if (!it->second.value->stale()) {
        ++it;
        continue;
      }
      bytes_ -= it->second.cost;
      lru_.erase(it->second.pos);
      it = map_.erase(it);
      ++n;
    }
    return n;
  }
  void clear() {
    map_.clear();
    lru_.clear();
    bytes_ = 0;
  }
  size_t size() const { return map_.size(); }
  std::mutex& mutex() { return mu_; }

 private:
  struct Slot {
    std::shared_ptr<V> value;
    std::list<std::string>::iterator pos;
    size_t cost;
  };
  void erase(const std::string& key) {
    auto it = map_.find(key);
    if (it == map_.end()) return;
    bytes_ -= it->second.cost;
    lru_.erase(it->second.pos);
    map_.erase(it);
  }
  size_t max_entries_, max_bytes_, bytes_ = 0;
  std::mutex mu_;
  std::list<std::string> lru_;
  std::unordered_map<std::string, Slot> map_;
};

}  // namespace trtutils::cpu
