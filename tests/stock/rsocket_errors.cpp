// An rsocket(7) program of our own, linked against rdma-core's librdmacm only: the ends of a
// stream and the errnos a socket gives, between two processes (forked before either touches
// the device) on loopback.
//
//   rsocket_errors PORT
//
// 0. A non-blocking rconnect to a port nobody listens on: EINPROGRESS, POLLOUT | POLLERR,
//    SO_ERROR ECONNREFUSED.
// 1. A non-blocking raccept with nobody connecting: EAGAIN. A non-blocking rrecv with nothing
//    sent: EAGAIN.
// 2. Half close: the client sends 1000 bytes and rshutdown(SHUT_WR); the server reads the 1000
//    bytes, then rrecv returns 0, and still sends its answer, which the client reads.
// 3. The client rcloses: the server's rsend fails with EPIPE.
// 4. A second connection whose client process exits without rclose: the server's rrecv fails
//    with ECONNRESET (no end of stream came).
// Each check prints "ok WHAT" or "FAIL WHAT"; the last line is "rsocket_errors: N checks, F
// failed"; exit status 0 only when F is 0.
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <rdma/rsocket.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {

int checks = 0, failed = 0;

void check(bool ok, const char* what) {
  ++checks;
  if (!ok) ++failed;
  std::printf("%s %s\n", ok ? "ok" : "FAIL", what);
  std::fflush(stdout);
}

sockaddr_in loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

/// Reads exactly n bytes (blocking); false on EOF or error.
bool read_all(int s, char* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = rrecv(s, buf + got, n - got, 0);
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

int connect_to(int port) {
  const int s = rsocket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = loopback(port);
  for (int i = 0; i < 200; ++i) {  // until the server listens
    if (rconnect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return s;
    if (errno != ECONNREFUSED) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::perror("rconnect");
  std::exit(1);
}

int client(int port) {
  const int s = connect_to(port);
  char buf[1000];
  for (int i = 0; i < 1000; ++i) buf[i] = static_cast<char>(i * 13);
  if (rsend(s, buf, sizeof buf, 0) != static_cast<ssize_t>(sizeof buf)) return 1;
  if (rshutdown(s, SHUT_WR) != 0) return 1;
  char answer[5] = {};
  if (!read_all(s, answer, 4) || std::strcmp(answer, "done") != 0) return 2;
  rclose(s);
  // The second connection: the process ends with it open.
  const int t = connect_to(port);
  if (rsend(t, buf, 10, 0) != 10) return 3;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  _exit(0);
}

int server(int port, pid_t child) {
  // A non-blocking rconnect to a port nobody listens on: EINPROGRESS, then POLLOUT with
  // POLLERR, and SO_ERROR says ECONNREFUSED.
  const int n = rsocket(AF_INET, SOCK_STREAM, 0);
  rfcntl(n, F_SETFL, O_NONBLOCK);
  sockaddr_in nobody = loopback(1);  // tcpmux: nobody listens
  errno = 0;
  check(rconnect(n, reinterpret_cast<sockaddr*>(&nobody), sizeof nobody) == -1 && errno == EINPROGRESS,
        "non-blocking rconnect: -1, EINPROGRESS");
  pollfd np{n, POLLOUT, 0};
  check(rpoll(&np, 1, 20000) == 1 && (np.revents & POLLOUT) && (np.revents & POLLERR),
        "rpoll after the refused non-blocking rconnect: POLLOUT | POLLERR");
  int so_error = 0;
  socklen_t len = sizeof so_error;
  check(rgetsockopt(n, SOL_SOCKET, SO_ERROR, &so_error, &len) == 0 && so_error == ECONNREFUSED,
        "SO_ERROR: ECONNREFUSED");
  rclose(n);
  const int l = rsocket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = loopback(port);
  const int one = 1;
  rsetsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  check(rbind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0, "rbind");
  check(rlisten(l, 4) == 0, "rlisten");
  rfcntl(l, F_SETFL, O_NONBLOCK);
  errno = 0;
  int s = raccept(l, nullptr, nullptr);
  // The client may be quick: EAGAIN only if nobody is there yet.
  if (s < 0) {
    check(errno == EAGAIN, "non-blocking raccept with no connection waiting: -1, EAGAIN");
    pollfd p{l, POLLIN, 0};
    check(rpoll(&p, 1, 20000) == 1 && (p.revents & POLLIN), "rpoll on the listener: POLLIN");
    s = raccept(l, nullptr, nullptr);
  }
  check(s >= 0, "raccept");
  char buf[1000];
  if (!read_all(s, buf, sizeof buf)) check(false, "the 1000 bytes");
  bool same = true;
  for (int i = 0; i < 1000; ++i) same = same && buf[i] == static_cast<char>(i * 13);
  check(same, "the 1000 bytes, in order");
  check(rrecv(s, buf, sizeof buf, 0) == 0, "after the peer's rshutdown(SHUT_WR): rrecv returns 0");
  check(rsend(s, "done", 4, 0) == 4, "rsend after the peer's half close");
  // The client rcloses once it has the answer: rsend fails with EPIPE (within 5 s).
  ssize_t r = 0;
  int e = 0;
  for (int i = 0; i < 500 && r >= 0; ++i) {
    errno = 0;
    r = rsend(s, "x", 1, 0);
    e = errno;
    if (r >= 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  check(r == -1 && e == EPIPE, "rsend after the peer's rclose: -1, EPIPE");
  check(rclose(s) == 0, "rclose");
  // The second connection: its process exits without rclose.
  rfcntl(l, F_SETFL, 0);
  const int t = raccept(l, nullptr, nullptr);
  check(t >= 0, "raccept (second)");
  check(read_all(t, buf, 10), "10 bytes of the second connection");
  rfcntl(t, F_SETFL, O_NONBLOCK);
  errno = 0;
  check(rrecv(t, buf, 1, 0) == -1 && errno == EAGAIN, "non-blocking rrecv with nothing sent: -1, EAGAIN");
  rfcntl(t, F_SETFL, 0);
  errno = 0;
  r = rrecv(t, buf, 1, 0);
  check(r == -1 && errno == ECONNRESET, "rrecv after the peer's process exited: -1, ECONNRESET");
  rclose(t);
  rclose(l);
  int status = 0;
  waitpid(child, &status, 0);
  check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the client process exited 0");
  std::printf("rsocket_errors: %d checks, %d failed\n", checks, failed);
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s PORT\n", argv[0]);
    return 2;
  }
  const int port = std::atoi(argv[1]);
  const pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) return client(port);
  return server(port, child);
}
