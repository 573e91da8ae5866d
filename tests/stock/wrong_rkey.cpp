// hcasim-wrong-rkey: a verbs user program of our own (linked against libibverbs only, no hcasim
// code) that checks the remote access protection of RC RDMA (IBA 1.2.1 9.7.5.1.4 and 10.6.3:
// the responder validates the R_Key, the range and the access rights, answers NAK Remote Access
// Error and writes nothing; the requester's WR completes with IBV_WC_REM_ACCESS_ERR).
//
//   hcasim-wrong-rkey [-d DEVICE] [-i IB_PORT] [-g GID_INDEX] [-p TCP_PORT]          (server)
//   hcasim-wrong-rkey [-d DEVICE] [-i IB_PORT] [-g GID_INDEX] [-p TCP_PORT] HOST     (client)
//
// Two processes, as ibv_rc_pingpong: the server listens on TCP_PORT (default 18516), the client
// connects to HOST:TCP_PORT, and over that socket they exchange, for each of kCases RC QPs, the
// LID, QPN, PSN and GID, and the server's buffer addresses and rkeys. Both connect their QPs with
// ibv_modify_qp (RESET -> INIT -> RTR -> RTS). Each case has a QP pair of its own, because an
// access error moves the requester's QP to the ERROR state. The client then does:
//   0. RDMA WRITE of kLen bytes (0x5A) to the server's buffer with the right rkey: IBV_WC_SUCCESS;
//   1. RDMA WRITE (0xEE) to another part of that buffer with rkey ^ 0x100: IBV_WC_REM_ACCESS_ERR;
//   2. RDMA WRITE (0xEE) to a second MR registered without IBV_ACCESS_REMOTE_WRITE, with its
//      own rkey: IBV_WC_REM_ACCESS_ERR;
//   3. RDMA READ of kLen bytes starting kLen / 2 bytes before the end of the server's MR (the
//      range goes beyond it): IBV_WC_REM_ACCESS_ERR, and nothing is read into the local buffer.
// and then writes "done" on the socket; the server checks its buffers (case 0's bytes landed,
// everything else still the 0xA5 it was filled with) and answers "ok" or what is wrong. The
// client prints one line per case, among them
//   wrong rkey: IBV_WC_REM_ACCESS_ERR, remote buffer unchanged
// and both exit 0 when every case went as it should, 1 otherwise.
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

constexpr int kCases = 4;
constexpr size_t kBufSize = 4096;  // the server's MR and its read-only MR, bytes
constexpr uint32_t kLen = 64;      // bytes of each RDMA
constexpr size_t kWrongOffset = 1024;  // where case 1 aims in the server's buffer
constexpr uint8_t kFill = 0xA5, kGood = 0x5A, kBad = 0xEE;

/// One side's address of one QP and, from the server, its buffers (the out-of-band exchange).
struct Dest {
  uint16_t lid = 0;
  uint32_t qpn = 0, psn = 0;
  ibv_gid gid{};
  uint64_t addr = 0, ro_addr = 0;
  uint32_t rkey = 0, ro_rkey = 0;
};

/// A line of text: "LID:QPN:PSN:GID(32 hex):ADDR:RKEY:RO_ADDR:RO_RKEY\n".
std::string to_line(const Dest& d) {
  char gid[33];
  for (int i = 0; i < 16; ++i) std::snprintf(gid + 2 * i, 3, "%02x", d.gid.raw[i]);
  char line[160];
  std::snprintf(line, sizeof line, "%04x:%06x:%06x:%s:%016" PRIx64 ":%08x:%016" PRIx64 ":%08x\n", d.lid, d.qpn,
                d.psn, gid, d.addr, d.rkey, d.ro_addr, d.ro_rkey);
  return line;
}

bool from_line(const std::string& s, Dest& d) {
  unsigned lid = 0, qpn = 0, psn = 0, rkey = 0, ro_rkey = 0;
  char gid[33] = {};
  uint64_t addr = 0, ro_addr = 0;
  if (std::sscanf(s.c_str(), "%x:%x:%x:%32[0-9a-f]:%" SCNx64 ":%x:%" SCNx64 ":%x", &lid, &qpn, &psn, gid, &addr,
                  &rkey, &ro_addr, &ro_rkey) != 8 ||
      std::strlen(gid) != 32)
    return false;
  d.lid = static_cast<uint16_t>(lid);
  d.qpn = qpn;
  d.psn = psn;
  for (int i = 0; i < 16; ++i) {
    unsigned b = 0;
    std::sscanf(gid + 2 * i, "%2x", &b);
    d.gid.raw[i] = static_cast<uint8_t>(b);
  }
  d.addr = addr;
  d.rkey = rkey;
  d.ro_addr = ro_addr;
  d.ro_rkey = ro_rkey;
  return true;
}

/// Writes all of `s` to the socket; false on an error.
bool send_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

/// Reads one line (up to and including '\n') from the socket; false on EOF or an error.
bool recv_line(int fd, std::string& line) {
  line.clear();
  char c = 0;
  while (true) {
    const ssize_t n = ::read(fd, &c, 1);
    if (n <= 0) return false;
    line.push_back(c);
    if (c == '\n') return true;
  }
}

int tcp_listen_accept(int port) {
  const int ls = ::socket(AF_INET6, SOCK_STREAM, 0);
  if (ls < 0) return -1;
  const int one = 1;
  ::setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_any;
  a.sin6_port = htons(static_cast<uint16_t>(port));
  if (::bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(ls, 1) != 0) {
    std::perror("bind/listen");
    ::close(ls);
    return -1;
  }
  const int fd = ::accept(ls, nullptr, nullptr);
  ::close(ls);
  return fd;
}

int tcp_connect(const char* host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (::getaddrinfo(host, service.c_str(), &hints, &res) != 0) return -1;
  int fd = -1;
  for (addrinfo* r = res; r != nullptr && fd < 0; r = r->ai_next) {
    fd = ::socket(r->ai_family, r->ai_socktype, r->ai_protocol);
    if (fd >= 0 && ::connect(fd, r->ai_addr, r->ai_addrlen) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(res);
  return fd;
}

/// RESET -> INIT -> RTR -> RTS of an RC QP towards `remote` (ibv_modify_qp(3)); false on an error.
bool connect_qp(ibv_qp* qp, int ib_port, int gid_index, uint32_t my_psn, const Dest& remote) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = static_cast<uint8_t>(ib_port);
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0) {
    std::fprintf(stderr, "ibv_modify_qp to INIT failed\n");
    return false;
  }
  a = {};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = remote.qpn;
  a.rq_psn = remote.psn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.dlid = remote.lid;
  a.ah_attr.sl = 0;
  a.ah_attr.port_num = static_cast<uint8_t>(ib_port);
  if (gid_index >= 0) {
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = remote.gid;
    a.ah_attr.grh.sgid_index = static_cast<uint8_t>(gid_index);
    a.ah_attr.grh.hop_limit = 1;
  }
  if (ibv_modify_qp(qp, &a,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0) {
    std::fprintf(stderr, "ibv_modify_qp to RTR failed\n");
    return false;
  }
  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.sq_psn = my_psn;
  a.max_rd_atomic = 1;
  if (ibv_modify_qp(qp, &a,
                    IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                        IBV_QP_MAX_QP_RD_ATOMIC) != 0) {
    std::fprintf(stderr, "ibv_modify_qp to RTS failed\n");
    return false;
  }
  return true;
}

/// Polls `cq` for one completion, at most `seconds`; false on a poll error or timeout.
bool wait_wc(ibv_cq* cq, ibv_wc& wc, int seconds) {
  const time_t end = std::time(nullptr) + seconds;
  while (std::time(nullptr) <= end) {
    const int n = ibv_poll_cq(cq, 1, &wc);
    if (n < 0) return false;
    if (n == 1) return true;
  }
  return false;
}

/// Checks that buf[from, to) is all `v`; the first offset that is not, or -1.
long first_not(const uint8_t* buf, size_t from, size_t to, uint8_t v) {
  for (size_t i = from; i < to; ++i)
    if (buf[i] != v) return static_cast<long>(i);
  return -1;
}

void usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s [-d DEVICE] [-i IB_PORT] [-g GID_INDEX] [-p TCP_PORT] [HOST]\n", argv0);
}

}  // namespace

int main(int argc, char** argv) {
  const char* dev_name = nullptr;
  int ib_port = 1, gid_index = -1, tcp_port = 18516;
  int opt;
  while ((opt = ::getopt(argc, argv, "d:i:g:p:")) != -1) {
    switch (opt) {
      case 'd': dev_name = optarg; break;
      case 'i': ib_port = std::atoi(optarg); break;
      case 'g': gid_index = std::atoi(optarg); break;
      case 'p': tcp_port = std::atoi(optarg); break;
      default: usage(argv[0]); return 2;
    }
  }
  if (optind < argc - 1) {
    usage(argv[0]);
    return 2;
  }
  const char* host = optind == argc - 1 ? argv[optind] : nullptr;
  const bool client = host != nullptr;
  const char* side = client ? "client" : "server";
  std::setvbuf(stdout, nullptr, _IOLBF, 0);

  int ndev = 0;
  ibv_device** list = ibv_get_device_list(&ndev);
  if (list == nullptr || ndev == 0) {
    std::fprintf(stderr, "%s: no RDMA device\n", side);
    return 1;
  }
  ibv_device* dev = list[0];
  if (dev_name != nullptr) {
    dev = nullptr;
    for (int i = 0; i < ndev; ++i)
      if (std::strcmp(ibv_get_device_name(list[i]), dev_name) == 0) dev = list[i];
    if (dev == nullptr) {
      std::fprintf(stderr, "%s: device %s not found\n", side, dev_name);
      return 1;
    }
  }
  ibv_context* ctx = ibv_open_device(dev);
  if (ctx == nullptr) {
    std::fprintf(stderr, "%s: ibv_open_device failed\n", side);
    return 1;
  }
  ibv_port_attr port{};
  if (ibv_query_port(ctx, static_cast<uint8_t>(ib_port), &port) != 0) {
    std::fprintf(stderr, "%s: ibv_query_port failed\n", side);
    return 1;
  }
  ibv_gid my_gid{};
  if (gid_index >= 0 && ibv_query_gid(ctx, static_cast<uint8_t>(ib_port), gid_index, &my_gid) != 0) {
    std::fprintf(stderr, "%s: ibv_query_gid failed\n", side);
    return 1;
  }
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ibv_cq* cq = ibv_create_cq(ctx, 2 * kCases, nullptr, nullptr, 0);
  if (pd == nullptr || cq == nullptr) {
    std::fprintf(stderr, "%s: ibv_alloc_pd / ibv_create_cq failed\n", side);
    return 1;
  }
  // The server's buffer (remote read and write) and its second buffer (no remote write); the
  // client's source / sink buffer.
  std::vector<uint8_t> buf(kBufSize, client ? 0 : kFill), ro(kBufSize, kFill);
  ibv_mr* mr = ibv_reg_mr(pd, buf.data(), buf.size(),
                          IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  ibv_mr* ro_mr = ibv_reg_mr(pd, ro.data(), ro.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
  if (mr == nullptr || ro_mr == nullptr) {
    std::fprintf(stderr, "%s: ibv_reg_mr failed\n", side);
    return 1;
  }
  ibv_qp* qps[kCases];
  Dest mine[kCases], theirs[kCases];
  std::srand(static_cast<unsigned>(std::time(nullptr)) ^ static_cast<unsigned>(::getpid()));
  for (int c = 0; c < kCases; ++c) {
    ibv_qp_init_attr ia{};
    ia.send_cq = cq;
    ia.recv_cq = cq;
    ia.cap.max_send_wr = 4;
    ia.cap.max_recv_wr = 1;
    ia.cap.max_send_sge = 1;
    ia.cap.max_recv_sge = 1;
    ia.qp_type = IBV_QPT_RC;
    ia.sq_sig_all = 1;
    qps[c] = ibv_create_qp(pd, &ia);
    if (qps[c] == nullptr) {
      std::fprintf(stderr, "%s: ibv_create_qp failed\n", side);
      return 1;
    }
    mine[c].lid = port.lid;
    mine[c].qpn = qps[c]->qp_num;
    mine[c].psn = static_cast<uint32_t>(std::rand()) & 0xFFFFFF;
    mine[c].gid = my_gid;
    mine[c].addr = reinterpret_cast<uintptr_t>(buf.data());
    mine[c].rkey = mr->rkey;
    mine[c].ro_addr = reinterpret_cast<uintptr_t>(ro.data());
    mine[c].ro_rkey = ro_mr->rkey;
  }

  const int fd = client ? tcp_connect(host, tcp_port) : tcp_listen_accept(tcp_port);
  if (fd < 0) {
    std::fprintf(stderr, "%s: TCP connection on port %d failed\n", side, tcp_port);
    return 1;
  }
  std::string line;
  for (int c = 0; c < kCases; ++c) {
    bool ok;
    if (client) {
      ok = send_all(fd, to_line(mine[c])) && recv_line(fd, line) && from_line(line, theirs[c]);
    } else {
      ok = recv_line(fd, line) && from_line(line, theirs[c]) && send_all(fd, to_line(mine[c]));
    }
    if (!ok) {
      std::fprintf(stderr, "%s: the address exchange failed\n", side);
      return 1;
    }
    if (!connect_qp(qps[c], ib_port, gid_index, mine[c].psn, theirs[c])) return 1;
  }
  // Both sides at RTS before the client sends anything.
  if (!send_all(fd, "rts\n") || !recv_line(fd, line) || line != "rts\n") {
    std::fprintf(stderr, "%s: the RTS handshake failed\n", side);
    return 1;
  }

  if (!client) {
    // The server only waits: the RDMAs do not involve its CPU. Then it checks its buffers.
    if (!recv_line(fd, line) || line != "done\n") {
      std::fprintf(stderr, "server: no \"done\" from the client\n");
      return 1;
    }
    std::string verdict;
    long bad;
    if ((bad = first_not(buf.data(), 0, kLen, kGood)) >= 0)
      verdict += " right-rkey-write-did-not-land@" + std::to_string(bad);
    if ((bad = first_not(buf.data(), kLen, kBufSize, kFill)) >= 0)
      verdict += " buffer-changed@" + std::to_string(bad);
    if ((bad = first_not(ro.data(), 0, kBufSize, kFill)) >= 0)
      verdict += " read-only-buffer-changed@" + std::to_string(bad);
    const bool good = verdict.empty();
    send_all(fd, good ? "ok\n" : "bad" + verdict + "\n");
    if (good)
      std::printf("server: right rkey's %u bytes landed; wrong rkey and no-remote-write MR: buffers unchanged\n", kLen);
    else
      std::printf("server: FAILED:%s\n", verdict.c_str());
    ::close(fd);
    for (auto* qp : qps) ibv_destroy_qp(qp);
    ibv_dereg_mr(ro_mr);
    ibv_dereg_mr(mr);
    ibv_destroy_cq(cq);
    ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
    ibv_free_device_list(list);
    return good ? 0 : 1;
  }

  struct Case {
    const char* name;
    ibv_wr_opcode op;
    uint64_t remote;
    uint32_t rkey;
    uint8_t fill;
    ibv_wc_status want;
  };
  const Dest& s = theirs[0];
  const Case cases[kCases] = {
      {"right rkey", IBV_WR_RDMA_WRITE, s.addr, s.rkey, kGood, IBV_WC_SUCCESS},
      {"wrong rkey", IBV_WR_RDMA_WRITE, s.addr + kWrongOffset, s.rkey ^ 0x100u, kBad, IBV_WC_REM_ACCESS_ERR},
      {"no remote write access", IBV_WR_RDMA_WRITE, s.ro_addr, s.ro_rkey, kBad, IBV_WC_REM_ACCESS_ERR},
      {"read beyond the MR", IBV_WR_RDMA_READ, s.addr + kBufSize - kLen / 2, s.rkey, 0, IBV_WC_REM_ACCESS_ERR},
  };
  bool all = true;
  for (int c = 0; c < kCases; ++c) {
    const Case& k = cases[c];
    std::memset(buf.data(), k.fill, kLen);
    if (k.op == IBV_WR_RDMA_READ) std::memset(buf.data(), 0x11, kLen);  // a READ must not land
    ibv_sge sge{reinterpret_cast<uintptr_t>(buf.data()), kLen, mr->lkey};
    ibv_send_wr wr{}, *bad_wr = nullptr;
    wr.wr_id = static_cast<uint64_t>(c);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = k.op;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = k.remote;
    wr.wr.rdma.rkey = k.rkey;
    if (ibv_post_send(qps[c], &wr, &bad_wr) != 0) {
      std::fprintf(stderr, "client: ibv_post_send (%s) failed\n", k.name);
      return 1;
    }
    ibv_wc wc{};
    if (!wait_wc(cq, wc, 30)) {
      std::fprintf(stderr, "client: no completion for %s within 30 s\n", k.name);
      return 1;
    }
    if (wc.wr_id != static_cast<uint64_t>(c) || wc.status != k.want) {
      std::printf("%s: FAILED: wr_id %" PRIu64 " %s, expected %s\n", k.name, wc.wr_id, ibv_wc_status_str(wc.status),
                  ibv_wc_status_str(k.want));
      all = false;
    }
    if (k.op == IBV_WR_RDMA_READ && first_not(buf.data(), 0, kLen, 0x11) >= 0) {
      std::printf("%s: FAILED: data landed in the local buffer\n", k.name);
      all = false;
    }
  }
  if (!send_all(fd, "done\n") || !recv_line(fd, line)) {
    std::fprintf(stderr, "client: no verdict from the server\n");
    return 1;
  }
  const bool remote_ok = line == "ok\n";
  if (!remote_ok) {
    std::printf("server's buffers: FAILED:%s", line.c_str() + 3);
    all = false;
  }
  const char* kStatus[kCases] = {"IBV_WC_SUCCESS", "IBV_WC_REM_ACCESS_ERR", "IBV_WC_REM_ACCESS_ERR",
                                 "IBV_WC_REM_ACCESS_ERR"};
  if (all) {
    std::printf("right rkey: %s, %u bytes landed in the remote buffer\n", kStatus[0], kLen);
    std::printf("wrong rkey: %s, remote buffer unchanged\n", kStatus[1]);
    std::printf("no remote write access: %s, remote buffer unchanged\n", kStatus[2]);
    std::printf("read beyond the MR: %s, local buffer unchanged\n", kStatus[3]);
  }
  ::close(fd);
  for (auto* qp : qps) ibv_destroy_qp(qp);
  ibv_dereg_mr(ro_mr);
  ibv_dereg_mr(mr);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  ibv_free_device_list(list);
  return all ? 0 : 1;
}
