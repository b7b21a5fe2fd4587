//===- Rendezvous.h - How the ranks' processes find each other -*- C++ -*-===//
//
// Internal to the runtime's NCCL communicators (processCommunicator): the
// exchange of the NCCL unique id from rank 0 to the other processes (over
// TCP next to torchrun's MASTER_ADDR, or through an id file for mpirun) and
// the TCP connections to rank 0 kept afterwards to notice lost ranks
// (Liveness).
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_COMM_RENDEZVOUS_H
#define GLIMMER_RT_COMM_RENDEZVOUS_H

#include "NcclCommon.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace glimmer_rt::nccl_detail {

/// The TCP handshake of processCommunicator.
constexpr char kHelloMagic[8] = {'G', 'L', 'M', 'N', 'C', 'C', 'L', '1'};
struct Hello {
  char magic[8];
  int32_t rank;
  int32_t worldSize;
};
struct Reply {
  char magic[8];
  ncclUniqueId id;
};
constexpr char kByeMessage = 'B';
constexpr char kAbortMessage = 'A';

void closeFd(int &fd);
void setNonblocking(int fd);
bool sendAll(int fd, const void *data, size_t size, Clock::time_point deadline);
bool recvAll(int fd, void *data, size_t size, Clock::time_point deadline);

/// Rank 0 accepts one connection per other rank (and answers its hello with
/// the NCCL id); every other rank keeps its connection to rank 0. A process
/// that exits without closing its communicator closes its sockets, which
/// its peers notice at once; rank 0 forwards aborts to everybody. Messages
/// are framed as type (1 byte), length (4 bytes), text.
class Liveness {
public:
  /// Rank 0: serves `id` on `listenFd`; removes `idFile` (if any) once
  /// every rank has connected, since each read it before connecting.
  Liveness(int64_t worldSize, int listenFd, const ncclUniqueId &id,
           std::string idFile)
      : rank(0), worldSize(worldSize), listenFd(listenFd), id(id),
        idFile(std::move(idFile)), peers(size_t(worldSize)) {}
  /// Rank > 0: connected to rank 0 through `fd`.
  Liveness(int64_t rank, int64_t worldSize, int fd)
      : rank(rank), worldSize(worldSize), peers(1) {
    peers[0].fd = fd;
    peers[0].rank = 0;
  }
  ~Liveness() {
    closeFd(listenFd);
    for (Peer &p : peers)
      closeFd(p.fd);
    removeIdFile();
  }
  Liveness(const Liveness &) = delete;
  Liveness &operator=(const Liveness &) = delete;

  /// Accepts new ranks and reads messages. Returns why a peer is lost (it
  /// exited, or sent an abort), or "".
  std::string poll() {
    if (listenFd >= 0)
      acceptPeers();
    std::string lost;
    for (Peer &p : peers) {
      if (p.fd < 0)
        continue;
      char buffer[4096];
      bool gone = false;
      while (true) {
        ssize_t n = ::recv(p.fd, buffer, sizeof buffer, MSG_DONTWAIT);
        if (n > 0) {
          p.input.append(buffer, size_t(n));
          continue;
        }
        // End of stream or a reset: the peer's process has gone.
        gone = n == 0 ||
               (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
        break;
      }
      // Messages first: a goodbye or an abort often arrives with the end.
      while (p.input.size() >= 5) {
        uint32_t length;
        std::memcpy(&length, p.input.data() + 1, 4);
        if (p.input.size() < 5 + size_t(length))
          break;
        char type = p.input[0];
        std::string text = p.input.substr(5, length);
        p.input.erase(0, 5 + size_t(length));
        if (type == kByeMessage)
          p.saidBye = true;
        else if (type == kAbortMessage && lost.empty())
          lost = text;
      }
      if (gone) {
        closeFd(p.fd);
        if (!p.saidBye && lost.empty())
          lost = "rank " + std::to_string(p.rank) +
                 " exited (or lost its connection to rank " +
                 std::to_string(rank) + ") before closing its communicator";
      }
    }
    return lost;
  }

  /// Best effort: the peers may be gone already.
  void broadcast(char type, const std::string &text) {
    std::string frame(1, type);
    uint32_t length = uint32_t(text.size());
    frame.append(reinterpret_cast<const char *>(&length), 4);
    frame += text;
    for (Peer &p : peers)
      if (p.fd >= 0)
        sendAll(p.fd, frame.data(), frame.size(),
                Clock::now() + std::chrono::milliseconds(200));
  }

  /// "1 of 3 ranks connected" (rank 0), for timeout messages.
  std::string progress() const {
    if (rank != 0)
      return "";
    int64_t connected = 0;
    for (size_t r = 1; r < peers.size(); ++r)
      connected += peers[r].fd >= 0 || peers[r].saidBye;
    return std::to_string(connected) + " of " + std::to_string(worldSize - 1) +
           " other ranks connected to rank 0";
  }

private:
  struct Peer {
    int fd = -1;
    int64_t rank = -1;
    bool saidBye = false;
    std::string input;
  };

  void acceptPeers() {
    while (true) {
      int fd = ::accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0)
        return;
      // Clients send their hello right after connecting.
      auto deadline = Clock::now() + std::chrono::seconds(2);
      setNonblocking(fd);
      Hello hello{};
      if (!recvAll(fd, &hello, sizeof hello, deadline) ||
          std::memcmp(hello.magic, kHelloMagic, sizeof hello.magic) != 0 ||
          hello.worldSize != worldSize || hello.rank <= 0 ||
          hello.rank >= worldSize || peers[size_t(hello.rank)].fd >= 0) {
        ::close(fd);
        continue;
      }
      Reply reply{};
      std::memcpy(reply.magic, kHelloMagic, sizeof reply.magic);
      reply.id = id;
      if (!sendAll(fd, &reply, sizeof reply, deadline)) {
        ::close(fd);
        continue;
      }
      Peer &p = peers[size_t(hello.rank)];
      p.fd = fd;
      p.rank = hello.rank;
      if (++accepted == worldSize - 1) {
        closeFd(listenFd);
        removeIdFile();
      }
    }
  }

  void removeIdFile() {
    if (!idFile.empty())
      ::unlink(idFile.c_str());
    idFile.clear();
  }

  int64_t rank, worldSize;
  int listenFd = -1;
  ncclUniqueId id{};
  std::string idFile;
  std::vector<Peer> peers; // by rank on rank 0; [rank 0] elsewhere
  int64_t accepted = 0;
};

/// torchrun: rank 0 listens on the id port, the others connect to
/// MASTER_ADDR. Sets the hub's id and liveness.
void exchangeOverTcp(NcclWorld::State &hub, const LaunchInfo &info,
                     Clock::time_point deadline);
/// mpirun: rank 0 writes the id file (temp file + rename), the others poll
/// for it and then connect to rank 0 for liveness. Sets the hub's id and
/// liveness.
void exchangeThroughFile(NcclWorld::State &hub, const LaunchInfo &info,
                         Clock::time_point deadline);

} // namespace glimmer_rt::nccl_detail

#endif // GLIMMER_RT_COMM_RENDEZVOUS_H
