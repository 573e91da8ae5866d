// An ordinary TCP program, for running under librspreload (rdma-core's socket preload, which
// turns its stream sockets into rsockets): the client sends a known number of bytes of a known
// pattern and ends its side; the server checks every byte and answers with the count; the
// client checks the answer. The server waits with poll(2), the client with select(2), so that
// librspreload's rpoll and rselect are used too.
//
//   tcp_stream server PORT              one connection on 127.0.0.1:PORT, then exits
//   tcp_stream client HOST PORT BYTES
//
// Prints "server: BYTES bytes received, pattern verified" and "client: BYTES bytes sent,
// server counted BYTES"; exit status 0 only then, 1 on any error (with perror's line).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

uint8_t pattern(uint64_t i) { return static_cast<uint8_t>((i * 7 + i / 251 + 3) & 0xff); }

int die(const char* what) {
  std::perror(what);
  return 1;
}

int server(int port) {
  const int l = ::socket(AF_INET, SOCK_STREAM, 0);
  if (l < 0) return die("socket");
  const int one = 1;
  if (::setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0) return die("setsockopt SO_REUSEADDR");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return die("bind");
  if (::listen(l, 1) != 0) return die("listen");
  pollfd p{l, POLLIN, 0};
  if (::poll(&p, 1, 20000) != 1 || !(p.revents & POLLIN)) return die("poll (listening)");
  const int s = ::accept(l, nullptr, nullptr);
  if (s < 0) return die("accept");
  std::vector<uint8_t> buf(1 << 16);
  uint64_t n = 0;
  for (;;) {
    pollfd q{s, POLLIN, 0};
    if (::poll(&q, 1, 20000) != 1) return die("poll (connected)");
    const ssize_t r = ::read(s, buf.data(), buf.size());
    if (r < 0) return die("read");
    if (r == 0) break;
    for (ssize_t i = 0; i < r; ++i, ++n)
      if (buf[i] != pattern(n)) {
        std::fprintf(stderr, "server: byte %llu is %u, not %u\n", static_cast<unsigned long long>(n), buf[i], pattern(n));
        return 1;
      }
  }
  const uint64_t count = n;
  if (::write(s, &count, sizeof count) != sizeof count) return die("write (count)");
  std::printf("server: %llu bytes received, pattern verified\n", static_cast<unsigned long long>(n));
  ::close(s);
  ::close(l);
  return 0;
}

int client(const char* host, int port, uint64_t bytes) {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) return die("socket");
  const int one = 1;
  if (::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) return die("setsockopt TCP_NODELAY");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, host, &a.sin_addr) != 1) return die("inet_pton");
  if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return die("connect");
  std::vector<uint8_t> buf(100000);
  uint64_t sent = 0;
  while (sent < bytes) {
    fd_set w;
    FD_ZERO(&w);
    FD_SET(s, &w);
    timeval tv{20, 0};
    if (::select(s + 1, nullptr, &w, nullptr, &tv) != 1) return die("select");
    const size_t n = static_cast<size_t>(std::min<uint64_t>(bytes - sent, buf.size()));
    for (size_t i = 0; i < n; ++i) buf[i] = pattern(sent + i);
    const ssize_t r = ::send(s, buf.data(), n, 0);
    if (r <= 0) return die("send");
    sent += static_cast<uint64_t>(r);
  }
  if (::shutdown(s, SHUT_WR) != 0) return die("shutdown");
  uint64_t count = 0;
  size_t got = 0;
  while (got < sizeof count) {
    const ssize_t r = ::recv(s, reinterpret_cast<char*>(&count) + got, sizeof count - got, 0);
    if (r <= 0) return die("recv (count)");
    got += static_cast<size_t>(r);
  }
  char end = 0;
  if (::recv(s, &end, 1, 0) != 0) return die("recv (end of stream)");
  std::printf("client: %llu bytes sent, server counted %llu\n", static_cast<unsigned long long>(sent),
              static_cast<unsigned long long>(count));
  ::close(s);
  return count == bytes ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "server") == 0) return server(std::atoi(argv[2]));
  if (argc == 5 && std::strcmp(argv[1], "client") == 0)
    return client(argv[2], std::atoi(argv[3]), std::strtoull(argv[4], nullptr, 10));
  std::fprintf(stderr, "usage: %s server PORT | client HOST PORT BYTES\n", argv[0]);
  return 2;
}
