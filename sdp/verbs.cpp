#include "sdp/verbs.h"

namespace hcasim::sdp {

const char* wc_status_str(WcStatus s) {
  switch (s) {
    case WcStatus::Success: return "success";
    case WcStatus::LocLenErr: return "local length error";
    case WcStatus::LocProtErr: return "local protection error";
    case WcStatus::RemAccessErr: return "remote access error";
    case WcStatus::RemInvReqErr: return "remote invalid request error";
    case WcStatus::RemOpErr: return "remote operation error";
    case WcStatus::RnrRetryExcErr: return "RNR retry exceeded";
    case WcStatus::RetryExcErr: return "transport retry counter exceeded";
    case WcStatus::WrFlushErr: return "WR flushed";
    case WcStatus::MwBindErr: return "memory window bind error";
  }
  return "?";
}

int wc_status_code(WcStatus s) {
  switch (s) {
    case WcStatus::Success: return 0;
    case WcStatus::LocLenErr: return 1;
    case WcStatus::LocProtErr: return 4;
    case WcStatus::WrFlushErr: return 5;
    case WcStatus::MwBindErr: return 6;
    case WcStatus::RemInvReqErr: return 9;
    case WcStatus::RemAccessErr: return 10;
    case WcStatus::RemOpErr: return 11;
    case WcStatus::RetryExcErr: return 12;
    case WcStatus::RnrRetryExcErr: return 13;
  }
  return -1;
}

}  // namespace hcasim::sdp
