#pragma once
/// \file A FIFO queue on a ring buffer that grows: the queues a stream pushes to and pops from
/// on every message (send and receive queues, CQs, the socket's queues).
///
/// std::deque allocates a node each time its tail enters a new block and frees one each time
/// its head leaves one: a queue that flows without growing costs an allocation every few
/// elements (every second post for the HCA's 200-byte send WQEs). Fifo keeps its storage
/// (boost::circular_buffer) and doubles it when full, so that once a stream has reached its
/// depth, pushes and pops allocate nothing.
#include <algorithm>
#include <cstddef>

#include <boost/circular_buffer.hpp>

namespace hcasim::sdp {

template <class T>
class Fifo {
 public:
  void push_back(const T& v) {
    if (buf_.full()) buf_.set_capacity(std::max<std::size_t>(8, 2 * buf_.capacity()));
    buf_.push_back(v);
  }
  /// Puts `v` in front of the oldest element (it becomes the oldest).
  void push_front(const T& v) {
    if (buf_.full()) buf_.set_capacity(std::max<std::size_t>(8, 2 * buf_.capacity()));
    buf_.push_front(v);
  }
  /// Removes the oldest element (the queue must not be empty).
  void pop_front() { buf_.pop_front(); }
  T& front() { return buf_.front(); }
  const T& front() const { return buf_.front(); }
  T& back() { return buf_.back(); }
  const T& back() const { return buf_.back(); }
  /// The i-th oldest element (i < size()).
  T& operator[](std::size_t i) { return buf_[i]; }
  const T& operator[](std::size_t i) const { return buf_[i]; }
  /// Removes the elements for which `pred` holds, keeping the others in order.
  template <class Pred>
  void remove_if(Pred pred) {
    std::size_t kept = 0;
    const std::size_t n = buf_.size();
    for (std::size_t i = 0; i < n; ++i)
      if (!pred(buf_[i])) {
        if (kept != i) buf_[kept] = buf_[i];
        ++kept;
      }
    while (buf_.size() > kept) buf_.pop_back();
  }
  bool empty() const { return buf_.empty(); }
  std::size_t size() const { return buf_.size(); }
  /// Removes every element (the storage stays).
  void clear() { buf_.clear(); }
  /// Oldest first.
  auto begin() const { return buf_.begin(); }
  auto end() const { return buf_.end(); }

 private:
  boost::circular_buffer<T> buf_;
};

}  // namespace hcasim::sdp
