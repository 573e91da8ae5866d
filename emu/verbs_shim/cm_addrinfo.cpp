// rdma_getaddrinfo(3) and rdma_freeaddrinfo(3) of the verbs shim's librdmacm half
// (emu/verbs_shim/rdmacm.cpp): the emulated CM's addresses are IP addresses (its TCP
// endpoints), so a name or a numeric address and a service resolve as getaddrinfo(3) resolves
// them, for a stream socket over TCP (RDMA_PS_TCP, IBV_QPT_RC unless the hints say otherwise).
// AF_IB addresses and path records (ai_route) are not emulated: the result has none.
#include <netdb.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <rdma/rdma_cma.h>

namespace {

/// A malloc'd copy of `len` bytes of `src` into *dst (freed by rdma_freeaddrinfo). False on ENOMEM.
bool copy_addr(sockaddr** dst, socklen_t* dst_len, const sockaddr* src, socklen_t len) {
  *dst = static_cast<sockaddr*>(std::malloc(len));
  if (*dst == nullptr) return false;
  std::memcpy(*dst, src, len);
  *dst_len = len;
  return true;
}

bool copy_name(char** dst, const char* src) {
  if (src == nullptr) return true;
  *dst = ::strdup(src);
  return *dst != nullptr;
}

}  // namespace

/// rdma_freeaddrinfo(3): the whole list of rdma_getaddrinfo.
void rdma_freeaddrinfo(rdma_addrinfo* res) {
  while (res != nullptr) {
    rdma_addrinfo* next = res->ai_next;
    std::free(res->ai_src_addr);
    std::free(res->ai_dst_addr);
    std::free(res->ai_src_canonname);
    std::free(res->ai_dst_canonname);
    std::free(res->ai_route);
    std::free(res->ai_connect);
    std::free(res);
    res = next;
  }
}

/// rdma_getaddrinfo(3): one rdma_addrinfo for `node` (a host name or a numeric IPv4 / IPv6
/// address; null: the wildcard with RAI_PASSIVE, else loopback) and `service` (a port number
/// or a TCP service name), from getaddrinfo(3)'s first answer. RAI_PASSIVE: the address is the
/// source (ai_src_addr, to bind and listen on), else the destination (ai_dst_addr; the hints'
/// ai_src_addr, if any, is copied as the source). RAI_NUMERICHOST, RAI_FAMILY (ai_family) and
/// the hints' ai_qp_type and ai_port_space are honoured (defaults IBV_QPT_RC, RDMA_PS_TCP).
/// Returns 0; getaddrinfo's EAI_* code when it fails (gai_strerror(3) names it); -1 with errno
/// EINVAL without node, service and hints, or ENOMEM.
int rdma_getaddrinfo(const char* node, const char* service, const rdma_addrinfo* hints, rdma_addrinfo** res) {
  static const rdma_addrinfo no_hints{};
  if (res == nullptr || (node == nullptr && service == nullptr && hints == nullptr)) {
    errno = EINVAL;
    return -1;
  }
  if (hints == nullptr) hints = &no_hints;
  auto* rai = static_cast<rdma_addrinfo*>(std::calloc(1, sizeof(rdma_addrinfo)));
  if (rai == nullptr) {
    errno = ENOMEM;
    return -1;
  }
  rai->ai_flags = hints->ai_flags;
  rai->ai_qp_type = hints->ai_qp_type != 0 ? hints->ai_qp_type : IBV_QPT_RC;
  rai->ai_port_space = hints->ai_port_space != 0 ? hints->ai_port_space : RDMA_PS_TCP;
  rai->ai_family = hints->ai_family;
  bool ok = true;
  if (node != nullptr || service != nullptr) {
    addrinfo want{};
    if ((hints->ai_flags & RAI_PASSIVE) != 0) want.ai_flags |= AI_PASSIVE;
    if ((hints->ai_flags & RAI_NUMERICHOST) != 0) want.ai_flags |= AI_NUMERICHOST;
    if (hints->ai_family == AF_INET || hints->ai_family == AF_INET6) want.ai_family = hints->ai_family;
    want.ai_socktype = SOCK_STREAM;
    want.ai_protocol = IPPROTO_TCP;
    addrinfo* ai = nullptr;
    if (const int rc = ::getaddrinfo(node, service, &want, &ai); rc != 0) {
      rdma_freeaddrinfo(rai);
      return rc;
    }
    rai->ai_family = ai->ai_family;
    if ((hints->ai_flags & RAI_PASSIVE) != 0) {
      ok = copy_addr(&rai->ai_src_addr, &rai->ai_src_len, ai->ai_addr, ai->ai_addrlen) &&
           copy_name(&rai->ai_src_canonname, ai->ai_canonname);
    } else {
      ok = copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len, ai->ai_addr, ai->ai_addrlen) &&
           copy_name(&rai->ai_dst_canonname, ai->ai_canonname);
    }
    ::freeaddrinfo(ai);
  } else if (hints->ai_dst_len != 0 && hints->ai_dst_addr != nullptr) {
    ok = copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len, hints->ai_dst_addr, hints->ai_dst_len);
  }
  if (ok && rai->ai_src_len == 0 && hints->ai_src_len != 0 && hints->ai_src_addr != nullptr)
    ok = copy_addr(&rai->ai_src_addr, &rai->ai_src_len, hints->ai_src_addr, hints->ai_src_len);
  if (!ok) {
    rdma_freeaddrinfo(rai);
    errno = ENOMEM;
    return -1;
  }
  *res = rai;
  return 0;
}
