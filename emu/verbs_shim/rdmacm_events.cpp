// The librdmacm event channels of the verbs shim (emu/verbs_shim/rdmacm.h): a channel is a
// pipe whose read end polls readable while events wait, one byte per queued event
// (rdma_create_event_channel(3), rdma_get_cm_event(3), rdma_ack_cm_event(3)).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "emu/verbs_shim/rdmacm.h"

namespace hcasim::emu::shim {

std::mutex g_channels;

void post_event(rdma_cm_id* id, rdma_cm_event_type type, int status, std::span<const uint8_t> data,
                rdma_cm_id* listen_id, uint8_t initiator_depth, uint8_t responder_resources,
                const rdma_ud_param* ud) {
  auto* e = new Event;
  e->data.assign(data.begin(), data.end());
  e->ev.id = id;
  e->ev.listen_id = listen_id;
  e->ev.event = type;
  e->ev.status = status;
  e->ev.param.conn.private_data = e->data.empty() ? nullptr : e->data.data();
  e->ev.param.conn.private_data_len = static_cast<uint8_t>(std::min<size_t>(e->data.size(), 255));
  e->ev.param.conn.initiator_depth = initiator_depth;
  e->ev.param.conn.responder_resources = responder_resources;
  if (ud != nullptr) {
    e->ev.param.ud = *ud;  // a MULTICAST_JOIN's private_data: the join's context (librdmacm)
    if (!e->data.empty()) {
      e->ev.param.ud.private_data = e->data.data();
      e->ev.param.ud.private_data_len = static_cast<uint8_t>(std::min<size_t>(e->data.size(), 255));
    }
  }
  std::lock_guard g(g_channels);
  auto* ch = reinterpret_cast<EventChannel*>(listen_id != nullptr ? listen_id->channel : id->channel);
  std::lock_guard g2(ch->m);
  ch->events.push_back(e);
  const char one = 1;
  if (::write(ch->write_fd, &one, 1) < 0) {
    // Full pipe: thousands of unread events; the reader has plenty to read already.
  }
}

int fail(int e) {
  errno = e;
  return -1;
}

rdma_event_channel* new_channel() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return nullptr;
  ::fcntl(fds[1], F_SETFL, O_NONBLOCK);
  auto* c = new EventChannel;
  c->ch.fd = fds[0];
  c->write_fd = fds[1];
  return &c->ch;
}

/// `keep_readers_blocked` (a program's channel): its events are dropped but the pipe and the
/// object stay (two fds of the process), so that a thread of the program in, or about to enter,
/// rdma_get_cm_event on it blocks for ever instead of failing, as a thread blocked on
/// librdmacm's device file does (rping's and others' CM thread is never joined: an error there
/// would fail the program while it exits). Otherwise (a synchronous id's own) all is freed.
void delete_channel(rdma_event_channel* channel, bool keep_readers_blocked) {
  auto* c = reinterpret_cast<EventChannel*>(channel);
  {
    std::lock_guard g(c->m);
    for (auto* e : c->events) delete e;
    c->events.clear();
    c->dead = keep_readers_blocked;
  }
  if (keep_readers_blocked) {
    // Kept, with its fds, until the process exits: a thread still in rdma_get_cm_event on it
    // (rping's CM thread) blocks rather than read a closed or reused fd.
    // Never destroyed, not even at exit (the thread may still be blocked then).
    static std::mutex kept_lock;
    static auto* kept = new std::vector<EventChannel*>;
    std::lock_guard g(kept_lock);
    kept->push_back(c);
    return;
  }
  ::close(c->ch.fd);
  ::close(c->write_fd);
  delete c;
}

/// Drops the events still queued for `id` (being destroyed) on its channel.
void drop_events(rdma_cm_id* id) {
  std::lock_guard g(g_channels);
  auto* c = reinterpret_cast<EventChannel*>(id->channel);
  if (c == nullptr) return;
  std::lock_guard g2(c->m);
  std::erase_if(c->events, [id](Event* e) {
    if (e->ev.id != id && e->ev.listen_id != id) return false;
    delete e;
    return true;
  });
}

int complete(rdma_cm_id* id) {
  CmId* c = cm_of(id);
  if (!c->sync) return 0;
  if (id->event != nullptr) {
    rdma_ack_cm_event(id->event);
    id->event = nullptr;
  }
  if (rdma_get_cm_event(id->channel, &id->event) != 0) return -1;
  const rdma_cm_event* e = id->event;
  if (e->status == 0) return 0;
  if (e->event == RDMA_CM_EVENT_REJECTED) return fail(ECONNREFUSED);
  return fail(e->status < 0 ? -e->status : e->status);
}

}  // namespace hcasim::emu::shim

/// rdma_create_event_channel(3): its fd (a pipe's read end, close-on-exec) polls readable
/// while events wait; rdma_get_cm_event blocks unless it is made non-blocking. Null with errno
/// from pipe2(2).
rdma_event_channel* rdma_create_event_channel() { return hcasim::emu::shim::new_channel(); }

/// rdma_destroy_event_channel(3): events not yet taken are dropped; a thread blocked in
/// rdma_get_cm_event on it stays blocked (as on librdmacm's, whose fd is the device file).
void rdma_destroy_event_channel(rdma_event_channel* channel) {
  if (channel != nullptr) hcasim::emu::shim::delete_channel(channel, true);
}

/// rdma_get_cm_event(3): the channel's next event (on a destroyed channel: blocks for ever). 0,
/// or -1 with errno (EAGAIN: non-blocking and none waits).
int rdma_get_cm_event(rdma_event_channel* channel, rdma_cm_event** event) {
  auto* c = reinterpret_cast<hcasim::emu::shim::EventChannel*>(channel);
  if (c == nullptr || event == nullptr) return hcasim::emu::shim::fail(EINVAL);
  for (;;) {
    char b = 0;
    const ssize_t n = ::read(c->ch.fd, &b, 1);
    if (n == 0) return hcasim::emu::shim::fail(ENODATA);
    if (n != 1) return -1;
    std::lock_guard g(c->m);
    // No event for this byte: it was an event of a destroyed id (dropped); read the next.
    if (c->events.empty() || c->dead) continue;
    hcasim::emu::shim::Event* e = c->events.front();
    c->events.pop_front();
    *event = &e->ev;
    return 0;
  }
}

/// rdma_ack_cm_event(3): frees the event and its private data. Returns 0.
int rdma_ack_cm_event(rdma_cm_event* event) {
  delete reinterpret_cast<hcasim::emu::shim::Event*>(event);
  return 0;
}

/// rdma_event_str(3): librdmacm's names.
const char* rdma_event_str(rdma_cm_event_type event) {
  switch (event) {
    case RDMA_CM_EVENT_ADDR_RESOLVED: return "RDMA_CM_EVENT_ADDR_RESOLVED";
    case RDMA_CM_EVENT_ADDR_ERROR: return "RDMA_CM_EVENT_ADDR_ERROR";
    case RDMA_CM_EVENT_ROUTE_RESOLVED: return "RDMA_CM_EVENT_ROUTE_RESOLVED";
    case RDMA_CM_EVENT_ROUTE_ERROR: return "RDMA_CM_EVENT_ROUTE_ERROR";
    case RDMA_CM_EVENT_CONNECT_REQUEST: return "RDMA_CM_EVENT_CONNECT_REQUEST";
    case RDMA_CM_EVENT_CONNECT_RESPONSE: return "RDMA_CM_EVENT_CONNECT_RESPONSE";
    case RDMA_CM_EVENT_CONNECT_ERROR: return "RDMA_CM_EVENT_CONNECT_ERROR";
    case RDMA_CM_EVENT_UNREACHABLE: return "RDMA_CM_EVENT_UNREACHABLE";
    case RDMA_CM_EVENT_REJECTED: return "RDMA_CM_EVENT_REJECTED";
    case RDMA_CM_EVENT_ESTABLISHED: return "RDMA_CM_EVENT_ESTABLISHED";
    case RDMA_CM_EVENT_DISCONNECTED: return "RDMA_CM_EVENT_DISCONNECTED";
    case RDMA_CM_EVENT_DEVICE_REMOVAL: return "RDMA_CM_EVENT_DEVICE_REMOVAL";
    case RDMA_CM_EVENT_MULTICAST_JOIN: return "RDMA_CM_EVENT_MULTICAST_JOIN";
    case RDMA_CM_EVENT_MULTICAST_ERROR: return "RDMA_CM_EVENT_MULTICAST_ERROR";
    case RDMA_CM_EVENT_ADDR_CHANGE: return "RDMA_CM_EVENT_ADDR_CHANGE";
    case RDMA_CM_EVENT_TIMEWAIT_EXIT: return "RDMA_CM_EVENT_TIMEWAIT_EXIT";
  }
  return "UNKNOWN EVENT";
}

/// rdma_migrate_id(3): the id's future events go to `channel`, and those it has queued and not
/// yet handed out move there with it, as the kernel moves them between event files
/// (drivers/infiniband/core/ucma.c, ucma_migrate_id and ucma_move_events). A synchronous id
/// (rdma_create_id without a channel) becomes asynchronous: its own channel, and the event of
/// its last call still in id->event, are freed (rdma-core librdmacm/cma.c, rdma_migrate_id).
/// A null `channel` makes the id synchronous on a new channel of its own. Returns 0; -1 with
/// errno EINVAL (null id, or null channel for an id already synchronous), or pipe2(2)'s.
int rdma_migrate_id(rdma_cm_id* id, rdma_event_channel* channel) {
  namespace shim = hcasim::emu::shim;
  if (id == nullptr) return shim::fail(EINVAL);
  shim::CmId* c = shim::cm_of(id);
  const bool to_sync = channel == nullptr;
  if (to_sync && c->sync) return shim::fail(EINVAL);
  if (to_sync && (channel = shim::new_channel()) == nullptr) return -1;
  rdma_event_channel* old = nullptr;
  {
    std::lock_guard g(shim::g_channels);
    old = id->channel;
    if (old != nullptr && old != channel) {
      auto* from = reinterpret_cast<shim::EventChannel*>(old);
      auto* to = reinterpret_cast<shim::EventChannel*>(channel);
      std::scoped_lock g2(from->m, to->m);
      size_t moved = 0;
      for (auto it = from->events.begin(); it != from->events.end();) {
        // A CONNECT_REQUEST of a listener's request belongs to the listener (its listen_id).
        rdma_cm_id* owner = (*it)->ev.listen_id != nullptr ? (*it)->ev.listen_id : (*it)->ev.id;
        if (owner != id) {
          ++it;
          continue;
        }
        to->events.push_back(*it);
        it = from->events.erase(it);
        ++moved;
        const char one = 1;
        if (::write(to->write_fd, &one, 1) < 0) {
          // Full pipe: the reader has thousands of events to read already.
        }
      }
      // Their bytes on the old pipe go too, so that its fd does not poll readable for them. A
      // reader of the old channel may be blocked in read(2) on it, so they are read through a
      // non-blocking open file description of the pipe of its own (/proc/self/fd); without
      // one they stay, and rdma_get_cm_event skips a byte that has no event.
      if (moved > 0) {
        const std::string path = "/proc/self/fd/" + std::to_string(from->ch.fd);
        if (const int nb = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC); nb >= 0) {
          std::vector<char> bytes(moved);
          if (::read(nb, bytes.data(), bytes.size()) < 0) {
            // EAGAIN: a reader took them first (it finds no event for them and reads on).
          }
          ::close(nb);
        }
      }
    }
    id->channel = channel;
  }
  if (c->sync && old != nullptr && old != channel) {
    if (id->event != nullptr) {
      rdma_ack_cm_event(id->event);
      id->event = nullptr;
    }
    shim::delete_channel(old, false);
  }
  c->sync = to_sync;
  return 0;
}
