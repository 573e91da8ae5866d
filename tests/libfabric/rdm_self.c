/* One libfabric RDM endpoint (verbs;ofi_rxm) sends N messages of SIZE bytes to its own address
 * and waits for each completion with fi_cq_sread on a CQ whose wait object is a file
 * descriptor (FI_WAIT_FD: ofi_rxm waits in epoll(7) on the verbs completion channel's fd).
 * ofi_rxm connects the endpoint to itself on the first send: its RDMA CM listener and its
 * connecting id are served by this one thread (manual progress), so rdma_connect must return
 * before the REP comes. Every message is checked byte by byte.
 *
 *   rdm_self [N [SIZE]]     (defaults 100 and 4096; SIZE at most 65536)
 *
 * Prints "rdm_self: N x SIZE B to itself, fi_cq_sread: T s" and exits 0; otherwise names the
 * call that failed on stderr and exits 1.
 */
#define _POSIX_C_SOURCE 200809L
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                            \
  do {                                                                         \
    int rc_ = (int)(call);                                                     \
    if (rc_ != 0) {                                                            \
      fprintf(stderr, "rdm_self: %s: %s\n", #call, fi_strerror(-rc_));         \
      return 1;                                                                \
    }                                                                          \
  } while (0)

enum { kMaxSize = 65536, kWaitMs = 5000 };
static char rbuf[kMaxSize], sbuf[kMaxSize];

/* Waits until the completions of both contexts have come. 0, or 1 after a message. */
static int wait_both(struct fid_cq *cq, void *a, void *b) {
  int got_a = 0, got_b = 0;
  while (!got_a || !got_b) {
    struct fi_cq_entry e;
    ssize_t n = fi_cq_sread(cq, &e, 1, NULL, kWaitMs);
    if (n == 1) {
      got_a |= e.op_context == a;
      got_b |= e.op_context == b;
    } else if (n != -FI_EAGAIN) {
      fprintf(stderr, "rdm_self: fi_cq_sread: %s\n", fi_strerror((int)-n));
      return 1;
    } else {
      fprintf(stderr, "rdm_self: fi_cq_sread: no completion in %d ms\n", kWaitMs);
      return 1;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 100;
  const size_t size = argc > 2 ? (size_t)atol(argv[2]) : 4096;
  if (n < 1 || size < 1 || size > kMaxSize) {
    fprintf(stderr, "usage: rdm_self [N [SIZE]] (SIZE 1 to %d)\n", kMaxSize);
    return 2;
  }
  struct fi_info *hints = fi_allocinfo(), *info = NULL;
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_MSG;
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  hints->fabric_attr->prov_name = strdup("verbs;ofi_rxm");
  CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
  struct fid_fabric *fabric;
  struct fid_domain *domain;
  struct fid_cq *cq;
  struct fid_av *av;
  struct fid_ep *ep;
  CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
  CHECK(fi_domain(fabric, info, &domain, NULL));
  struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_FD, .size = 64};
  CHECK(fi_cq_open(domain, &cq_attr, &cq, NULL));
  struct fi_av_attr av_attr = {.type = FI_AV_MAP};
  CHECK(fi_av_open(domain, &av_attr, &av, NULL));
  CHECK(fi_endpoint(domain, info, &ep, NULL));
  CHECK(fi_ep_bind(ep, &av->fid, 0));
  CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
  CHECK(fi_enable(ep));
  char name[128];
  size_t name_len = sizeof name;
  CHECK(fi_getname(&ep->fid, name, &name_len));
  fi_addr_t self;
  if (fi_av_insert(av, name, 1, &self, 0, NULL) != 1) {
    fprintf(stderr, "rdm_self: fi_av_insert of its own address failed\n");
    return 1;
  }
  struct fid_mr *rmr, *smr;
  CHECK(fi_mr_reg(domain, rbuf, size, FI_RECV, 0, 0, 0, &rmr, NULL));
  CHECK(fi_mr_reg(domain, sbuf, size, FI_SEND, 0, 0, 0, &smr, NULL));
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < n; ++i) {
    struct fi_context rctx, sctx;
    for (size_t j = 0; j < size; ++j) sbuf[j] = (char)(i * 31 + j);
    memset(rbuf, 0, size);
    CHECK(fi_recv(ep, rbuf, size, fi_mr_desc(rmr), FI_ADDR_UNSPEC, &rctx));
    ssize_t rc;
    while ((rc = fi_send(ep, sbuf, size, fi_mr_desc(smr), self, &sctx)) == -FI_EAGAIN) {
      struct fi_cq_entry e;
      if (fi_cq_read(cq, &e, 1) == 1) {
        fprintf(stderr, "rdm_self: a completion before the send was posted\n");
        return 1;
      }
    }
    CHECK(rc);
    if (wait_both(cq, &rctx, &sctx) != 0) return 1;
    if (memcmp(rbuf, sbuf, size) != 0) {
      fprintf(stderr, "rdm_self: message %d arrived changed\n", i);
      return 1;
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("rdm_self: %d x %zu B to itself, fi_cq_sread: %.3f s\n", n, size,
         (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
  CHECK(fi_close(&ep->fid));
  CHECK(fi_close(&rmr->fid));
  CHECK(fi_close(&smr->fid));
  CHECK(fi_close(&av->fid));
  CHECK(fi_close(&cq->fid));
  CHECK(fi_close(&domain->fid));
  CHECK(fi_close(&fabric->fid));
  fi_freeinfo(info);
  fi_freeinfo(hints);
  return 0;
}
