// The verbs shim's cost against the number of live QPs (bench/CMakeLists.txt,
// bench_emu_qp_scaling): for N = 10000, 20000 and 40000 RC QPs on one CQ, the wall time to
// create them (ibv_create_qp), then the mean time of one ibv_reg_mr + ibv_dereg_mr of a 4 KiB
// buffer while they are live (dereg waits only for the accesses to its own MR, so it should not
// grow with N), then the time to destroy them. The process links the shim (its ibv_* are the
// emulated HCA's) and runs on an emulated subnet of its own (a temporary HCASIM_SUBNET).
//
// Usage: emu_qp_bench [MAX_QPS]  (default 40000; N doubles from 10000 up to it)
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  long max_qps = 40000;
  if (argc > 2 || (argc == 2 && (max_qps = std::strtol(argv[1], nullptr, 10)) < 10000)) {
    std::fprintf(stderr, "emu_qp_bench: usage: emu_qp_bench [MAX_QPS >= 10000]\n");
    return 2;
  }
  std::string dir = "/tmp/hcasim-qp-bench-XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) {
    std::perror("emu_qp_bench: mkdtemp");
    return 1;
  }
  ::setenv("HCASIM_SUBNET", dir.c_str(), 1);
  int n = 0;
  ibv_context** list = rdma_get_devices(&n);
  ibv_context* ctx = n == 1 ? list[0] : nullptr;
  ibv_pd* pd = ctx != nullptr ? ibv_alloc_pd(ctx) : nullptr;
  ibv_cq* cq = pd != nullptr ? ibv_create_cq(ctx, 1024, nullptr, nullptr, 0) : nullptr;
  if (cq == nullptr) {
    std::fprintf(stderr, "emu_qp_bench: no emulated device, PD or CQ\n");
    return 1;
  }
  std::vector<char> buf(4096);
  int status = 0;
  for (long qps = 10000; qps <= max_qps && status == 0; qps *= 2) {
    std::vector<ibv_qp*> live;
    live.reserve(static_cast<size_t>(qps));
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < qps; ++i) {
      ibv_qp_init_attr a{};
      a.send_cq = a.recv_cq = cq;
      a.qp_type = IBV_QPT_RC;
      a.cap.max_send_wr = a.cap.max_recv_wr = 1;
      a.cap.max_send_sge = a.cap.max_recv_sge = 1;
      ibv_qp* q = ibv_create_qp(pd, &a);
      if (q == nullptr) {
        std::fprintf(stderr, "emu_qp_bench: ibv_create_qp failed at QP %ld\n", i);
        status = 1;
        break;
      }
      live.push_back(q);
    }
    const double create_s = seconds_since(t0);
    constexpr int kRegs = 1000;
    t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kRegs && status == 0; ++i) {
      ibv_mr* mr = ibv_reg_mr(pd, buf.data(), buf.size(), int{IBV_ACCESS_LOCAL_WRITE});
      if (mr == nullptr || ibv_dereg_mr(mr) != 0) status = 1;
    }
    const double reg_us = seconds_since(t0) * 1e6 / kRegs;
    t0 = std::chrono::steady_clock::now();
    for (ibv_qp* q : live) ibv_destroy_qp(q);
    const double destroy_s = seconds_since(t0);
    std::printf("bench_emu_qp_scaling: %ld QPs: created in %.3f s (%.2f us each), reg+dereg %.1f us with them live, "
                "destroyed in %.3f s\n",
                qps, create_s, create_s * 1e6 / static_cast<double>(qps), reg_us, destroy_s);
    std::fflush(stdout);
  }
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  rdma_free_devices(list);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return status;
}
