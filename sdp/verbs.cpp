#include "sdp/verbs.h"

namespace hcasim::sdp {

const char* wc_status_str(WcStatus s) {
  switch (s) {
    case WcStatus::Success: return "success";
    case WcStatus::LocLenErr: return "local length error";
    case WcStatus::LocProtErr: return "local protection error";
    case WcStatus::RemAccessErr: return "remote access error";
    case WcStatus::RemInvReqErr: return "remote invalid request error";
    case WcStatus::RetryExcErr: return "RETRY_EXC_ERR";
    case WcStatus::RnrRetryExcErr: return "RNR retry exceeded";
    case WcStatus::WrFlushErr: return "WR flushed";
  }
  return "?";
}

}  // namespace hcasim::sdp
