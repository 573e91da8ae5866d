// The sdp.* parameters, which sim/testbed.cpp reads into sdp::SdpConfig (sdp/socket.h). They are
// declared here, in model/, because the schema must be whole below sdp/ (model/params.h).
#include "model/params.h"

namespace hcasim::model::schema {
namespace {
using namespace decl;
constexpr ParamSpec kSdp[] = {
    integer("sdp.zcopy_thresh", "B", 0, kLargest,
            "sends of at least this many bytes go zero-copy (bzcopy); 0: never (ib_sdp sdp_zcopy_thresh)"),
    integer("sdp.tx_ring", "", 1, 4096, "SDP send ring, WRs (OFED 1.3 SDP_TX_SIZE); <= hca.max_qp_wr"),
    integer("sdp.rx_ring", "", 1, 4096, "SDP receive ring, buffers (SDP_RX_SIZE); >= 2 x (sdp.min_credits + 1)"),
    integer("sdp.initial_recv_buffer", "B", 64, 1048576, "first receive buffer size, before ChRcvBuf grows it"),
    integer("sdp.max_recv_buffer", "B", 64, 1048576,
            "largest receive buffer ChRcvBuf may ask for; >= initial_recv_buffer (1 MiB: above OFED's 32 KB)"),
    nonneg("sdp.recv_poll", "us", "recv() busy-polls the CQ this long before sleeping (ib_sdp recv_poll)"),
    nonneg("sdp.bzcopy_poll", "us", "a bzcopy send polls for its completions this long before sleeping"),
    integer("sdp.min_credits", "", 0, 1024, "data goes only while the peer's credits exceed this (SDP_MIN_BUFS)"),
    integer("sdp.socket_lines", "lines", 0, 4096, "cache lines of socket state every call touches"),
    integer("sdp.skb_lines", "lines", 0, 4096, "cache lines of an skb's metadata (each payload page adds one)"),
};
}  // namespace
std::span<const ParamSpec> sdp() { return kSdp; }
}  // namespace hcasim::model::schema
