#include "late_masks.h"

#include <chrono>
#include <stdexcept>

namespace prism {

void LateMasks::expect(int64_t rows, int64_t words) {
  std::lock_guard<std::mutex> lock(mu_);
  state_ = State::Expecting;
  rows_ = rows;
  words_ = words;
}

bool LateMasks::supply(const int32_t* data, size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ != State::Expecting) return false;
  if (data == nullptr) {
    state_ = State::Abandoned;
  } else {
    if (static_cast<int64_t>(n) != rows_ * words_)
      throw std::length_error("masks: length " + std::to_string(n) + " must be lateMaskRows × ceil(vocabSize/32) = " +
                              std::to_string(rows_ * words_));
    masks_.assign(data, data + n);
    state_ = State::Supplied;
  }
  cv_.notify_all();
  return true;
}

double LateMasks::wait(std::vector<int32_t>& out) {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return state_ == State::Supplied || state_ == State::Abandoned; });
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const bool ok = state_ == State::Supplied;
  state_ = State::Idle;
  if (!ok) throw std::runtime_error("the allowed-token masks of this step were not supplied");
  out.swap(masks_);
  return ms;
}

void LateMasks::abandon() {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ == State::Expecting) state_ = State::Abandoned;
  cv_.notify_all();
}

}  // namespace prism
