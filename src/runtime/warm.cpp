#include "runtime/warm.h"

namespace kiln::runtime {

std::shared_ptr<const WarmImage> WarmImages::find(const std::string& name,
                                                  const std::string& target,
                                                  const storage::DataStamp& now) {
  std::lock_guard lock(mu_);
  if (!(stamp_ == now)) {
    entries_.clear();
    bytes_ = 0;
    stamp_ = now;
    return nullptr;
  }
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (it->name == name && it->target == target) {
      entries_.splice(entries_.begin(), entries_, it);
      return it->image;
    }
  return nullptr;
}

void WarmImages::keep(const std::string& name, const std::string& target,
                      const storage::DataStamp& read_at, std::shared_ptr<const WarmImage> image) {
  size_t size = image->file->size();
  std::lock_guard lock(mu_);
  if (!(stamp_ == read_at) || size > kMaxBytes || !image->file->sealed())
    return;
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (it->name == name && it->target == target) {
      bytes_ -= it->image->file->size();
      entries_.erase(it);
      break;
    }
  entries_.push_front({name, target, std::move(image)});
  bytes_ += size;
  while (entries_.size() > kMaxImages || bytes_ > kMaxBytes) {
    bytes_ -= entries_.back().image->file->size();
    entries_.pop_back();
  }
}

void WarmImages::served() {
  std::lock_guard lock(mu_);
  ++hits_;
}

size_t WarmImages::hits() const {
  std::lock_guard lock(mu_);
  return hits_;
}

size_t WarmImages::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

} // namespace kiln::runtime
