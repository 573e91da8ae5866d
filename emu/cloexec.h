#pragma once
/// \file Sockets of the emulated HCA made close-on-exec from their first instant: Boost.Asio
/// (1.74) opens and accepts without SOCK_CLOEXEC, so a program on the verbs shim that runs
/// another (system(3), fork then exec) would hand it the port's listener, its datagram socket
/// and every QP stream, and the child would hold the port after the program exits. Each socket
/// is made here with SOCK_CLOEXEC (socket(2), accept4(2)) and given to Asio, so no fork in
/// another thread ever sees one without the flag.
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <utility>  // before Asio: Boost 1.74 asio/awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>

namespace hcasim::emu {

/// Opens `s` (an Asio socket or acceptor) for `protocol` (tcp::v4(), udp::v6(), ...) with
/// SOCK_CLOEXEC. On failure `ec` holds socket(2)'s errno (EMFILE, ENFILE, ENOBUFS, ...) and `s`
/// stays closed.
template <class Socket, class Protocol>
void open_cloexec(Socket& s, const Protocol& protocol, boost::system::error_code& ec) {
  const int fd = ::socket(protocol.family(), protocol.type() | SOCK_CLOEXEC, protocol.protocol());
  if (fd < 0) {
    ec.assign(errno, boost::system::system_category());
    return;
  }
  s.assign(protocol, fd, ec);
  if (ec) ::close(fd);
}

/// Takes the next connection of the listening `a` into `s` (closed) with accept4(2) and
/// SOCK_CLOEXEC. A non-blocking listener with no connection waiting gives `ec` would_block
/// (EAGAIN), a blocking one waits; else `ec` holds accept4's errno (EMFILE, ENFILE, ENOBUFS,
/// ENOMEM, ECONNABORTED, EINTR, ...). The stream is a blocking descriptor, as accept(2) gives it
/// (Asio's operations choose for themselves).
inline void accept_cloexec(boost::asio::ip::tcp::acceptor& a, boost::asio::ip::tcp::socket& s,
                           boost::system::error_code& ec) {
  const int fd = ::accept4(a.native_handle(), nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) {
    ec.assign(errno, boost::system::system_category());
    return;
  }
  boost::system::error_code ep_ec;
  const auto ep = a.local_endpoint(ep_ec);
  s.assign(ep_ec ? boost::asio::ip::tcp::v4() : ep.protocol(), fd, ec);
  if (ec) ::close(fd);
}

}  // namespace hcasim::emu
