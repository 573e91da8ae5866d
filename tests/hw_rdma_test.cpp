// The hardware backend (hw/): its errors without a device, and its verbs mappings. Opening a
// real HCA, connecting and moving data need one (mlx4/mlx5) and are not tested here.
#include <array>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include "hw/rdma_device.h"

namespace hcasim::hw {
namespace {

/// The names ibv_get_device_list(3) gives; empty when there is no RDMA support at all.
std::vector<std::string> device_names() {
  std::vector<std::string> names;
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr) return names;
  for (int i = 0; i < n; ++i) names.emplace_back(ibv_get_device_name(list[i]));
  ibv_free_device_list(list);
  return names;
}

/// The message of the sdp::DeviceError open_rdma_device(name) throws ("" when it opened).
std::string open_error(const std::string& name) {
  try {
    open_rdma_device(name, 1 << 20);
  } catch (const sdp::DeviceError& e) {
    return e.what();
  }
  return "";
}

TEST(HwRdmaDevice, NoDeviceIsOneClearLine) {
  if (!device_names().empty()) GTEST_SKIP() << "this machine has RDMA devices";
  const std::string msg = open_error("");
  EXPECT_EQ(msg.rfind("no RDMA device", 0), 0u) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_NE(msg.find("--device emu"), std::string::npos) << msg;
}

TEST(HwRdmaDevice, UnknownNameIsOneClearLine) {
  const std::vector<std::string> names = device_names();
  for (const std::string& n : names)
    if (n == "mlx4_9") GTEST_SKIP() << "this machine has an mlx4_9";
  const std::string msg = open_error("mlx4_9");
  ASSERT_FALSE(msg.empty());
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  if (names.empty())
    EXPECT_EQ(msg.rfind("no RDMA device", 0), 0u) << msg;
  else
    EXPECT_EQ(msg.rfind("RDMA device 'mlx4_9' not found (have: ", 0), 0u) << msg;
}

TEST(HwRdmaVerbs, WcStatusMapping) {
  bool exact = false;
  EXPECT_EQ(to_wc_status(IBV_WC_SUCCESS, &exact), sdp::WcStatus::Success);
  EXPECT_TRUE(exact);
  EXPECT_EQ(to_wc_status(IBV_WC_RETRY_EXC_ERR, &exact), sdp::WcStatus::RetryExcErr);
  EXPECT_TRUE(exact);
  EXPECT_EQ(to_wc_status(IBV_WC_RNR_RETRY_EXC_ERR), sdp::WcStatus::RnrRetryExcErr);
  EXPECT_EQ(to_wc_status(IBV_WC_WR_FLUSH_ERR), sdp::WcStatus::WrFlushErr);
  EXPECT_EQ(to_wc_status(IBV_WC_REM_ACCESS_ERR), sdp::WcStatus::RemAccessErr);
  EXPECT_EQ(to_wc_status(IBV_WC_REM_OP_ERR, &exact), sdp::WcStatus::RemOpErr);
  EXPECT_TRUE(exact);
  EXPECT_EQ(to_wc_status(IBV_WC_RESP_TIMEOUT_ERR, &exact), sdp::WcStatus::RetryExcErr);
  EXPECT_FALSE(exact);
  EXPECT_EQ(to_wc_status(IBV_WC_LOC_QP_OP_ERR, &exact), sdp::WcStatus::LocProtErr);
  EXPECT_FALSE(exact);
  EXPECT_STREQ(sdp::wc_status_str(sdp::WcStatus::RetryExcErr), "transport retry counter exceeded");  // ibv_wc_status_str
  // The numbers perftest prints are libibverbs' own.
  EXPECT_EQ(sdp::wc_status_code(sdp::WcStatus::Success), IBV_WC_SUCCESS);
  EXPECT_EQ(sdp::wc_status_code(sdp::WcStatus::LocLenErr), IBV_WC_LOC_LEN_ERR);
  EXPECT_EQ(sdp::wc_status_code(sdp::WcStatus::LocProtErr), IBV_WC_LOC_PROT_ERR);
  EXPECT_EQ(sdp::wc_status_code(sdp::WcStatus::WrFlushErr), IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(sdp::wc_status_code(sdp::WcStatus::RemInvReqErr), IBV_WC_REM_INV_REQ_ERR);
  EXPECT_EQ(sdp::wc_status_code(sdp::WcStatus::RemAccessErr), IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(sdp::wc_status_code(sdp::WcStatus::RetryExcErr), IBV_WC_RETRY_EXC_ERR);
  EXPECT_EQ(sdp::wc_status_code(sdp::WcStatus::RnrRetryExcErr), IBV_WC_RNR_RETRY_EXC_ERR);
}

TEST(HwRdmaVerbs, WcFromIbvWc) {
  ibv_wc wc{};
  wc.wr_id = 42;
  wc.status = IBV_WC_SUCCESS;
  wc.opcode = IBV_WC_RECV;
  wc.byte_len = 1500;
  wc.qp_num = 0x1234;
  sdp::Wc c = to_wc(wc);
  EXPECT_EQ(c.wr_id, 42u);
  EXPECT_EQ(c.opcode, sdp::WcOpcode::Recv);
  EXPECT_EQ(c.byte_len, 1500u);
  EXPECT_EQ(c.qp_num, 0x1234u);
  wc.opcode = IBV_WC_RDMA_WRITE;
  EXPECT_EQ(to_wc(wc).opcode, sdp::WcOpcode::RdmaWrite);
  wc.opcode = IBV_WC_RDMA_READ;
  EXPECT_EQ(to_wc(wc).opcode, sdp::WcOpcode::RdmaRead);
  wc.opcode = IBV_WC_SEND;
  EXPECT_EQ(to_wc(wc).opcode, sdp::WcOpcode::Send);
  wc.status = IBV_WC_WR_FLUSH_ERR;
  wc.opcode = IBV_WC_RECV;  // undefined for an error completion: not trusted
  c = to_wc(wc);
  EXPECT_EQ(c.status, sdp::WcStatus::WrFlushErr);
  EXPECT_EQ(c.opcode, sdp::WcOpcode::Send);
}

TEST(HwRdmaCm, RejectReasons) {
  EXPECT_EQ(reject_reason_str(8), "IB CM REJ reason 8, invalid service ID");
  EXPECT_EQ(reject_reason_str(28), "IB CM REJ reason 28, consumer defined");
  EXPECT_EQ(reject_reason_str(34), "IB CM REJ reason 34");
  EXPECT_EQ(reject_reason_str(99), "IB CM REJ reason 99");
  EXPECT_EQ(reject_reason_str(-111), "Connection refused");
}

TEST(HwRdmaCm, PrintablePrivateData) {
  std::array<uint8_t, 148> rej{};
  const std::string why = "SDP: unsupported version 3.0";
  std::copy(why.begin(), why.end(), rej.begin());
  EXPECT_EQ(printable_private_data(rej), why);
  rej[100] = 1;  // not zero padding after the text
  EXPECT_EQ(printable_private_data(rej), "");
  const std::array<uint8_t, 4> binary{0x11, 0x22, 0, 0};
  EXPECT_EQ(printable_private_data(binary), "");
  const std::array<uint8_t, 4> zeros{};
  EXPECT_EQ(printable_private_data(zeros), "");
  EXPECT_EQ(printable_private_data({}), "");
}

TEST(HwRdmaCm, PrivateDataLimits) {
  // rdma_connect(3) / rdma_accept(3) for RDMA_PS_TCP; the SDP Hello (92 bytes) does not fit a
  // REQ's, the HelloAck (196 bytes) fits a REP's.
  EXPECT_EQ(kReqPrivateDataMax, 56u);
  EXPECT_EQ(kRepPrivateDataMax, 196u);
  EXPECT_EQ(kRejPrivateDataMax, 148u);
}

}  // namespace
}  // namespace hcasim::hw
