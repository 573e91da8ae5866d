#pragma once
/// \file The emulated subnet of one machine: how the emulated HCAs' ports of the processes on
/// it find each other by LID, as a subnet manager's LID assignment and path records would.
///
/// The subnet is a directory, `$HCASIM_SUBNET`, default `/tmp/hcasim-subnet-$UID` (created
/// 0700 when absent). Each port claims a LID in it: the file `lid-XXXX` (four lower-case hex
/// digits, LID 0x0001-0xBFFF, the IBA's unicast range) holding one line "PID TCP_PORT": the
/// owning process and the 127.0.0.1 port number its port's QP streams are accepted on (TCP)
/// and its UD datagrams received on (UDP, the same number; emu::Hca::lid). A claim
/// is atomic: the line is written to a private temporary file which is then link(2)ed to
/// `lid-XXXX` (EEXIST: taken). A file whose PID no longer runs (kill(PID, 0) fails with
/// ESRCH) is stale: the claimer removes it and tries that LID again. LIDs are tried from 1 up,
/// so the first process gets LID 1, the second 2, ... The owner removes its file when its
/// port closes (a crashed owner's file is cleaned up by the next claimer).
///
/// The port's GUID is a ConnectX-3's port 1 GUID (node GUID + 1) with the LID in bits 8..23:
/// 0x0002c90300000000 | LID << 8 | 1 (the Mellanox OUI 00:02:c9, 03:00; the node GUID of
/// emu/verbs_shim/device.h is the same with bits 0..7 = 0); its GID 0 is fe80::/64 + the GUID
/// (IBA 4.1.1, the link-local default GID prefix). A QP given a destination by LID or by such a GID (ibv_modify_qp(3) to
/// RTR) finds the peer's TCP port here.
#include <sys/types.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace hcasim::emu {

/// The environment variable naming the subnet directory.
inline constexpr const char* kSubnetEnv = "HCASIM_SUBNET";
/// The highest unicast LID (IBA 4.1.3: 0x0001-0xBFFF).
inline constexpr uint16_t kMaxUnicastLid = 0xBFFF;
/// The link-local GID prefix, fe80::/64.
inline constexpr uint64_t kGidPrefix = 0xfe80000000000000ull;

/// The subnet directory: $HCASIM_SUBNET, else /tmp/hcasim-subnet-UID.
std::string subnet_dir();
/// The port GUID of `lid` (0x0002c90300000000 | lid << 8 | 1).
constexpr uint64_t guid_of_lid(uint16_t lid) { return 0x0002c90300000000ull | static_cast<uint64_t>(lid) << 8 | 1; }
/// GID 0 of the port with `lid`: fe80::/64 + the GUID, network byte order (ibv_gid.raw).
std::array<uint8_t, 16> gid_of_lid(uint16_t lid);
/// The LID of a GID of this subnet (bits 8..23 of a GUID of guid_of_lid under fe80::/64), or
/// nothing for another GID.
std::optional<uint16_t> lid_of_gid(const uint8_t (&gid)[16]);

/// One port's claim of a LID on the subnet; removing it (the destructor) frees the LID.
class SubnetPort {
 public:
  /// Claims the lowest free LID and publishes `tcp_port` (127.0.0.1) for it. Throws
  /// sdp::DeviceError when the directory cannot be made or written, or every LID is taken.
  explicit SubnetPort(uint16_t tcp_port);
  ~SubnetPort();
  SubnetPort(const SubnetPort&) = delete;
  SubnetPort& operator=(const SubnetPort&) = delete;
  uint16_t lid() const { return lid_; }
  uint64_t guid() const { return guid_of_lid(lid_); }

 private:
  std::string path_;
  uint16_t lid_ = 0;
};

/// The 127.0.0.1 TCP port the port with `lid` accepts QP streams on, or nothing when no
/// running process holds that LID.
std::optional<uint16_t> find_port(uint16_t lid);

}  // namespace hcasim::emu
