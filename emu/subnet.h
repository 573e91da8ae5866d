#pragma once
/// \file The emulated subnet of one machine: how the emulated HCAs' ports of the processes on
/// it find each other by LID, as a subnet manager's LID assignment and path records would.
///
/// The subnet is a directory, `$HCASIM_SUBNET` (its trailing slashes taken off: "DIR/" would
/// follow a final symbolic link), default `/tmp/hcasim-subnet-$UID` (created 0700 when
/// absent). Another user must not be able to plant or change anything in it, so it
/// is refused when it is a symbolic link, not a directory, owned by another user or writable
/// by group or others; every entry is opened relative to it with O_NOFOLLOW (and never blocks:
/// a FIFO is garbage, not a claim).
///
/// Each port claims a LID in it: the file `lid-XXXX` (four lower-case hex digits, LID
/// 0x0001-0xBFFF, the IBA's unicast range) holding one line "PID TCP_PORT START": the owning
/// process, the 127.0.0.1 port number its port's QP streams are accepted on (TCP) and its UD
/// datagrams received on (UDP, the same number; emu::Hca::lid), and the process's start time
/// (proc(5) /proc/PID/stat field 22), so that a PID reused after a crash is not taken for the
/// owner. A claim is atomic: the line is written to a private temporary file, created with
/// O_EXCL, which is then link(2)ed to `lid-XXXX` (EEXIST: taken). Claims are made under an
/// exclusive flock(2) of the directory. An entry whose owner no longer runs, or that is no
/// claim at all (not a regular file, not such a line), is removed by the claimer, which then
/// tries that LID again (a directory that is not empty is renamed "garbage-lid-XXXX-PID-N",
/// with one line on stderr, rather than removed); temporary files of processes that are gone, or of the claimer's own
/// PID (left by a crash of a process whose PID it now has), are removed too. LIDs are tried
/// from 1 up, so the first process gets LID 1, the second 2, ... The owner removes its
/// file when its port closes; a forked child never removes its parent's.
///
/// The port's GUID is a ConnectX-3's port 1 GUID (node GUID + 1) with the LID in bits 8..23:
/// 0x0002c90300000000 | LID << 8 | 1 (the Mellanox OUI 00:02:c9, 03:00; the node GUID of
/// emu/verbs_shim/device.h is the same with bits 0..7 = 0); its GID 0 is fe80::/64 + the GUID
/// (IBA 4.1.1, the link-local default GID prefix). A QP given a destination by LID or by such a GID (ibv_modify_qp(3) to
/// RTR) finds the peer's TCP port here.
///
/// The file `secret` holds the subnet's key: 32 random bytes (getrandom(2)), made 0600 by the
/// first process that needs it and read once by each process's port (emu::Hca). Only the
/// subnet's owner can read it, so a process that proves it knows the key (a MAC, emu/auth.h)
/// belongs to the owner: every QP stream and UD datagram between ports is authenticated so.
#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hcasim::emu {

/// The environment variable naming the subnet directory.
inline constexpr const char* kSubnetEnv = "HCASIM_SUBNET";
/// The highest unicast LID (IBA 4.1.3: 0x0001-0xBFFF).
inline constexpr uint16_t kMaxUnicastLid = 0xBFFF;
/// The link-local GID prefix, fe80::/64.
inline constexpr uint64_t kGidPrefix = 0xfe80000000000000ull;

/// The subnet directory: $HCASIM_SUBNET without its trailing slashes ("/" stays), else
/// /tmp/hcasim-subnet-UID.
std::string subnet_dir();
/// A descriptor (O_DIRECTORY, close-on-exec; the caller closes it) of subnet_dir(), made 0700
/// first when `create` and absent. Throws sdp::DeviceError, one line naming the directory, when
/// it is a symbolic link or no directory, is owned by another user than the effective one, or
/// is writable by group or others.
int open_subnet_dir(bool create);
/// Bytes of the subnet's secret.
inline constexpr size_t kSecretSize = 32;
using SubnetSecret = std::array<uint8_t, kSecretSize>;
/// The subnet's secret (the file `secret` of open_subnet_dir(true)), created when absent: 32
/// bytes of getrandom(2), 0600, with O_CREAT | O_EXCL | O_NOFOLLOW under the directory's
/// flock(2). Throws sdp::DeviceError, one line naming the file, when the file is not a regular
/// file of exactly kSecretSize bytes owned by the effective user without group or other
/// permission bits (a symbolic link, a FIFO, mode 0644, another size), or cannot be read.
SubnetSecret subnet_secret();
/// The start time of process `pid` in clock ticks since boot (proc(5), /proc/PID/stat field
/// 22), or 0 when it cannot be read. With the PID it names one process: a PID reused after a
/// crash has another start time.
unsigned long long process_start_time(long pid);
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
  /// sdp::DeviceError when the directory cannot be made, is refused (open_subnet_dir) or cannot
  /// be written, or every LID is taken.
  explicit SubnetPort(uint16_t tcp_port);
  ~SubnetPort();
  SubnetPort(const SubnetPort&) = delete;
  SubnetPort& operator=(const SubnetPort&) = delete;
  uint16_t lid() const { return lid_; }
  uint64_t guid() const { return guid_of_lid(lid_); }

 private:
  pid_t owner_;
  /// The subnet directory, open while the claim is held (the claim is removed through it).
  int dir_ = -1;
  std::string name_;
  uint16_t lid_ = 0;
};

/// The multicast LID range (IBA 4.1.3: 0xC000-0xFFFE; 0xFFFF is the permissive LID).
inline constexpr uint16_t kMinMulticastLid = 0xC000;
inline constexpr uint16_t kMaxMulticastLid = 0xFFFE;
/// True for a multicast LID.
constexpr bool is_multicast_lid(uint16_t lid) { return lid >= kMinMulticastLid && lid <= kMaxMulticastLid; }

/// The subnet's multicast forwarding table, as a subnet manager programs the switches (IBA
/// 18.2.4.3.3, MulticastForwardingTable): the file `mcg-MMMM-LLLL` (MLID, member port LID; four
/// lower-case hex digits each, empty) says that port `lid` has QPs attached to the group of
/// `mlid`, so that a UD send to `mlid` reaches that port. Made with O_CREAT | O_NOFOLLOW;
/// failures are silent (the port then does not receive the group's packets, as a port whose
/// join the SM did not program). The port's Hca keeps which of its QPs are attached.
void join_multicast_port(uint16_t mlid, uint16_t lid);
/// Removes port `lid` from the group of `mlid` (its last QP detached, or the port closed).
void leave_multicast_port(uint16_t mlid, uint16_t lid);
/// The LIDs of the ports with QPs attached to the group of `mlid` whose process still runs
/// (the port's own included: a multicast send reaches the QPs of the sending port too), in
/// ascending order; empty for a LID outside the multicast range or a group without members.
std::vector<uint16_t> multicast_ports(uint16_t mlid);

/// The 127.0.0.1 TCP port the port with `lid` accepts QP streams on, or nothing when no
/// running process holds that LID.
std::optional<uint16_t> find_port(uint16_t lid);

}  // namespace hcasim::emu
