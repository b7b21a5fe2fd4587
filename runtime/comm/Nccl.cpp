//===- Nccl.cpp - Communicators over NCCL, between GPU ranks -------------===//
//
// Structure:
//  - Hub (NcclWorld::State): what the ranks of one world share: the NCCL
//    unique id, the abort reason, the watchdog thread and, between
//    processes, the TCP connections to rank 0 (Liveness).
//  - RankState: one rank's NCCL communicators (the world's and one per
//    group) and the collectives it has enqueued but not seen complete. Its
//    mutex serializes every NCCL call on those communicators, because the
//    owner thread, the wait hooks, the watchdog and abort() all use them.
//  - NcclCommunicator: the Communicator a rank's thread calls.
//
// All communicators are nonblocking (ncclConfig_t::blocking = 0): no NCCL
// call blocks the host; calls that return ncclInProgress are polled with
// ncclCommGetAsyncError, checking the abort reason and the timeout in
// between. Once a rank's communicators are aborted (ncclCommAbort), its
// queued NCCL kernels exit, so the stream drains and nothing waits forever;
// the rank's `failure` says why, and every later use throws it.
//
// Who aborts: a thread waiting for the device runs the wait hooks, and the
// hook of the device's rank aborts and throws (so the thread that waits for
// a result is the one that gets the error). A rank whose thread is not in
// such a wait (it computes on the host, or is blocked inside a CUDA call)
// is aborted by the watchdog after a grace period.
//
//===----------------------------------------------------------------------===//

#include "glimmer_rt/Nccl.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

#ifdef GLIMMER_RT_HAVE_CUDA
#include "../cuda/CudaBackend.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#endif

using namespace glimmer_rt;

//===----------------------------------------------------------------------===//
// Launcher environment
//===----------------------------------------------------------------------===//

namespace {

/// The value of `name`, or nullopt when it is unset or empty.
std::optional<std::string> envValue(const char *name) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return std::nullopt;
  return std::string(v);
}

/// A non-negative decimal integer (no sign, no spaces, no overflow).
bool parseCount(const std::string &text, int64_t &value) {
  if (text.empty() || text.size() > 18)
    return false;
  value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    value = value * 10 + (c - '0');
  }
  return true;
}

struct LauncherVars {
  const char *launcher;
  const char *rankVar;
  const char *sizeVar;
  std::vector<const char *> localVars; // first one set wins
};

/// Reads one launcher's variables: false with `error` set when they are
/// present but unusable; true with `found` false when they are absent.
bool readLauncher(const LauncherVars &vars, bool &found, LaunchInfo &info,
                  std::string &error) {
  std::optional<std::string> rank = envValue(vars.rankVar);
  std::optional<std::string> size = envValue(vars.sizeVar);
  found = rank || size;
  if (!found)
    return true;
  if (!rank || !size) {
    error = std::string(rank ? vars.rankVar : vars.sizeVar) + " is set but " +
            (rank ? vars.sizeVar : vars.rankVar) + " is not (" + vars.launcher +
            " sets both)";
    return false;
  }
  info.launcher = vars.launcher;
  if (!parseCount(*rank, info.rank)) {
    error = std::string(vars.rankVar) + "='" + *rank +
            "' is not a non-negative integer";
    return false;
  }
  if (!parseCount(*size, info.worldSize) || info.worldSize < 1) {
    error = std::string(vars.sizeVar) + "='" + *size +
            "' is not a positive integer";
    return false;
  }
  if (info.rank >= info.worldSize) {
    error = std::string(vars.rankVar) + "=" + *rank + " is outside " +
            vars.sizeVar + "=" + *size;
    return false;
  }
  // Without a local rank, assume one node: the global rank picks the GPU.
  info.localRank = info.rank;
  for (const char *name : vars.localVars)
    if (std::optional<std::string> local = envValue(name)) {
      if (!parseCount(*local, info.localRank)) {
        error = std::string(name) + "='" + *local +
                "' is not a non-negative integer";
        return false;
      }
      break;
    }
  return true;
}

} // namespace

std::optional<LaunchInfo>
glimmer_rt::launchFromEnvironment(std::string &error) {
  error.clear();
  const LauncherVars launchers[] = {
      {"torchrun", "RANK", "WORLD_SIZE", {"LOCAL_RANK"}},
      {"mpirun",
       "OMPI_COMM_WORLD_RANK",
       "OMPI_COMM_WORLD_SIZE",
       {"OMPI_COMM_WORLD_LOCAL_RANK"}},
      {"pmi",
       "PMI_RANK",
       "PMI_SIZE",
       {"MPI_LOCALRANKID", "PMI_LOCAL_RANK", "SLURM_LOCALID"}},
  };
  std::optional<LaunchInfo> chosen;
  for (const LauncherVars &vars : launchers) {
    bool found = false;
    LaunchInfo info;
    if (!readLauncher(vars, found, info, error))
      return std::nullopt;
    if (!found)
      continue;
    if (!chosen) {
      chosen = info;
      continue;
    }
    // A process started by one launcher may inherit another's variables
    // (RANK exported in an mpirun job script): accept them only if they
    // describe the same place.
    if (info.rank != chosen->rank || info.worldSize != chosen->worldSize) {
      error = chosen->launcher + " variables (rank " +
              std::to_string(chosen->rank) + " of " +
              std::to_string(chosen->worldSize) + ") disagree with " +
              info.launcher + " variables (rank " + std::to_string(info.rank) +
              " of " + std::to_string(info.worldSize) + ")";
      return std::nullopt;
    }
  }
  return chosen;
}

#ifdef GLIMMER_RT_HAVE_CUDA

namespace glimmer_rt {
namespace cuda {
// Declared in cuda/Common.cuh, which only nvcc can compile.
cudaStream_t stream(int device);
} // namespace cuda
namespace nccl_detail {
// comm/NcclKernels.cu.
cudaError_t writeWords(int64_t *dst, const int64_t *words, int count,
                       cudaStream_t stream);
} // namespace nccl_detail
} // namespace glimmer_rt

namespace {

using Clock = std::chrono::steady_clock;

/// How long a rank's thread may go without polling (in a wait hook or our
/// own waits) before the watchdog, rather than that thread, aborts it.
constexpr std::chrono::seconds kWatchdogGrace(2);
constexpr std::chrono::milliseconds kWatchdogPeriod(50);
/// Minimum interval between the NCCL state checks of one wait hook.
constexpr std::chrono::milliseconds kHookCheckPeriod(5);

/// send()'s header: magic, dtype, rank, then up to kMaxHeaderDims dims.
constexpr int kHeaderWords = 16;
constexpr int kMaxHeaderDims = kHeaderWords - 3;
constexpr int64_t kHeaderMagic = 0x474c4d5248445231; // "GLMRHDR1"

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

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             Clock::now().time_since_epoch())
      .count();
}

/// "60 s" or "200 ms".
std::string durationText(std::chrono::milliseconds t) {
  if (t.count() % 1000 == 0)
    return std::to_string(t.count() / 1000) + " s";
  return std::to_string(t.count()) + " ms";
}

std::string ranksText(const Group &group) {
  std::string s = "[";
  for (size_t i = 0; i < group.size(); ++i)
    s += (i ? ", " : "") + std::to_string(group[i]);
  return s + "]";
}

/// NCCL's description of `result` plus its last error message.
std::string ncclText(ncclResult_t result) {
  std::string text = ncclGetErrorString(result);
  const char *last = ncclGetLastError(nullptr);
  if (last && *last)
    text += " (" + std::string(last) + ")";
  return text;
}

/// Makes `device` current for the scope, restoring the previous device.
struct DeviceGuard {
  explicit DeviceGuard(int device) {
    if (cudaGetDevice(&previous) != cudaSuccess)
      previous = -1;
    if (previous != device)
      cudaSetDevice(device);
  }
  ~DeviceGuard() {
    if (previous >= 0)
      cudaSetDevice(previous);
  }
  int previous = -1;
};

ncclConfig_t nonblockingConfig() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

/// NVLink multicast (NVLS) must stay off on the GPU hosts; an explicit
/// setting in the environment wins. NCCL reads it once, at its first
/// communicator.
void keepNvlsOff() { setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0); }

//===----------------------------------------------------------------------===//
// Sockets (processCommunicator)
//===----------------------------------------------------------------------===//

std::string errnoText(int error) { return std::strerror(error); }

void closeFd(int &fd) {
  if (fd >= 0)
    ::close(fd);
  fd = -1;
}

void setNonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags >= 0)
    ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

/// Waits until `fd` is ready for `events` (or reports an error) or
/// `deadline` passes.
bool waitFd(int fd, short events, Clock::time_point deadline) {
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - Clock::now())
                    .count();
    pollfd p{fd, events, 0};
    int r =
        ::poll(&p, 1, int(std::max<int64_t>(0, std::min<int64_t>(left, 100))));
    if (r > 0)
      return true;
    if (r < 0 && errno != EINTR)
      return false;
    if (Clock::now() >= deadline)
      return false;
  }
}

bool sendAll(int fd, const void *data, size_t size,
             Clock::time_point deadline) {
  const char *p = static_cast<const char *>(data);
  while (size) {
    if (!waitFd(fd, POLLOUT, deadline))
      return false;
    ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        continue;
      return false;
    }
    p += n;
    size -= size_t(n);
  }
  return true;
}

bool recvAll(int fd, void *data, size_t size, Clock::time_point deadline) {
  char *p = static_cast<char *>(data);
  while (size) {
    if (!waitFd(fd, POLLIN, deadline))
      return false;
    ssize_t n = ::recv(fd, p, size, MSG_DONTWAIT);
    if (n == 0)
      return false;
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        continue;
      return false;
    }
    p += n;
    size -= size_t(n);
  }
  return true;
}

/// A nonblocking listening socket on `port` (0: any free port) of every
/// interface; `bound` is the port it got. -1 with `error` on failure.
int listenOn(uint16_t port, uint16_t &bound, std::string &error) {
  for (int family : {AF_INET6, AF_INET}) {
    int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      error = errnoText(errno);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_storage address{};
    socklen_t length;
    if (family == AF_INET6) {
      int zero = 0; // accept IPv4 clients too
      ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
      auto *a = reinterpret_cast<sockaddr_in6 *>(&address);
      a->sin6_family = AF_INET6;
      a->sin6_addr = in6addr_any;
      a->sin6_port = htons(port);
      length = sizeof(sockaddr_in6);
    } else {
      auto *a = reinterpret_cast<sockaddr_in *>(&address);
      a->sin_family = AF_INET;
      a->sin_addr.s_addr = htonl(INADDR_ANY);
      a->sin_port = htons(port);
      length = sizeof(sockaddr_in);
    }
    if (::bind(fd, reinterpret_cast<sockaddr *>(&address), length) != 0 ||
        ::listen(fd, 256) != 0) {
      error = errnoText(errno);
      ::close(fd);
      continue;
    }
    setNonblocking(fd);
    length = sizeof address;
    ::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length);
    bound = ntohs(address.ss_family == AF_INET6
                      ? reinterpret_cast<sockaddr_in6 *>(&address)->sin6_port
                      : reinterpret_cast<sockaddr_in *>(&address)->sin_port);
    return fd;
  }
  return -1;
}

/// One attempt to connect to host:port, giving up at `deadline`. Returns a
/// nonblocking socket, or -1 with `error`.
int connectOnce(const std::string &host, uint16_t port,
                Clock::time_point deadline, std::string &error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo *found = nullptr;
  int status =
      ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (status != 0) {
    error = "cannot resolve '" + host + "': " + gai_strerror(status);
    return -1;
  }
  int result = -1;
  for (addrinfo *ai = found; ai && result < 0; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
                      ai->ai_protocol);
    if (fd < 0) {
      error = errnoText(errno);
      continue;
    }
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
      result = fd;
      break;
    }
    if (errno != EINPROGRESS) {
      error = errnoText(errno);
      ::close(fd);
      continue;
    }
    int soError = ETIMEDOUT;
    if (waitFd(fd, POLLOUT, deadline)) {
      socklen_t length = sizeof soError;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &length);
    }
    if (soError == 0) {
      result = fd;
    } else {
      error = errnoText(soError);
      ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  return result;
}

/// Sends the hello and reads rank 0's reply on a fresh connection.
bool handshake(int fd, int64_t rank, int64_t worldSize,
               Clock::time_point deadline, ncclUniqueId &id,
               std::string &error) {
  Hello hello{};
  std::memcpy(hello.magic, kHelloMagic, sizeof hello.magic);
  hello.rank = int32_t(rank);
  hello.worldSize = int32_t(worldSize);
  Reply reply{};
  if (!sendAll(fd, &hello, sizeof hello, deadline) ||
      !recvAll(fd, &reply, sizeof reply, deadline)) {
    error = "the connection closed during the handshake (another job's "
            "rank 0, or a different world size?)";
    return false;
  }
  if (std::memcmp(reply.magic, kHelloMagic, sizeof reply.magic) != 0) {
    error = "the peer is not a Glimmer rank 0";
    return false;
  }
  id = reply.id;
  return true;
}

std::string hexOf(const void *data, size_t size) {
  static const char *digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < size; ++i) {
    unsigned char c = static_cast<const unsigned char *>(data)[i];
    s += digits[c >> 4];
    s += digits[c & 15];
  }
  return s;
}

bool fromHex(const std::string &text, void *data, size_t size) {
  if (text.size() != 2 * size)
    return false;
  auto value = [](char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                  : -1;
  };
  for (size_t i = 0; i < size; ++i) {
    int hi = value(text[2 * i]), lo = value(text[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return false;
    static_cast<unsigned char *>(data)[i] =
        static_cast<unsigned char>(hi * 16 + lo);
  }
  return true;
}

std::string hostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0)
    return "localhost";
  return name;
}

/// This host's IPv4 addresses, loopback excluded.
std::vector<std::string> hostAddresses() {
  std::vector<std::string> out;
  ifaddrs *list = nullptr;
  if (::getifaddrs(&list) != 0)
    return out;
  for (ifaddrs *i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
        !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK))
      continue;
    char text[INET_ADDRSTRLEN] = {};
    auto *a = reinterpret_cast<sockaddr_in *>(i->ifa_addr);
    if (::inet_ntop(AF_INET, &a->sin_addr, text, sizeof text))
      out.push_back(text);
  }
  ::freeifaddrs(list);
  return out;
}

//===----------------------------------------------------------------------===//
// Liveness: a TCP star around rank 0 (processCommunicator)
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Rank state
//===----------------------------------------------------------------------===//

/// A collective enqueued on the stream and not yet seen complete.
struct PendingOp {
  cudaEvent_t start = nullptr, end = nullptr;
  std::string what; // "all_reduce on ranks [0, 1]"
  bool started = false;
  Clock::time_point startedAt;
};

struct RankState {
  RankState(int64_t rank, int device) : rank(rank), device(device) {}
  ~RankState() {
    for (PendingOp &op : pending) {
      cudaEventDestroy(op.start);
      cudaEventDestroy(op.end);
    }
    for (cudaEvent_t e : spareEvents)
      cudaEventDestroy(e);
  }

  const int64_t rank;
  const int device;
  /// "rank 0 (cuda:0)"
  std::string name() const {
    return "rank " + std::to_string(rank) + " (cuda:" + std::to_string(device) +
           ")";
  }

  std::mutex mutex;
  /// Written by NCCL's initialization thread too, so it lives here (not on
  /// a stack) until the communicator is aborted or destroyed.
  ncclComm_t world = nullptr;
  bool worldReady = false;
  std::map<Group, ncclComm_t> groups;
  /// Set when the communicators were aborted; every later use throws it.
  std::string failure;
  std::deque<PendingOp> pending;
  std::vector<cudaEvent_t> spareEvents;
  /// When the rank's thread last polled (a wait hook or one of our waits).
  std::atomic<int64_t> lastPollNs{0};
  std::atomic<int64_t> lastHookCheckNs{0};

  std::vector<ncclComm_t> commsLocked() const {
    std::vector<ncclComm_t> all;
    if (world)
      all.push_back(world);
    for (const auto &entry : groups)
      all.push_back(entry.second);
    return all;
  }

  cudaEvent_t takeEventLocked() {
    if (!spareEvents.empty()) {
      cudaEvent_t e = spareEvents.back();
      spareEvents.pop_back();
      return e;
    }
    DeviceGuard guard(device);
    cudaEvent_t e = nullptr;
    cudaError_t status = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    if (status != cudaSuccess)
      throw RuntimeError(name() + ": cannot create a CUDA event: " +
                         cudaGetErrorString(status));
    return e;
  }

  /// Forgets the collectives that have completed (in stream order) and
  /// notes when the oldest remaining one started running.
  void retireLocked() {
    while (!pending.empty() &&
           cudaEventQuery(pending.front().end) == cudaSuccess) {
      spareEvents.push_back(pending.front().start);
      spareEvents.push_back(pending.front().end);
      pending.pop_front();
    }
    if (!pending.empty() && !pending.front().started &&
        cudaEventQuery(pending.front().start) == cudaSuccess) {
      pending.front().started = true;
      pending.front().startedAt = Clock::now();
    }
  }

  /// Whether the oldest pending collective has been running (waiting for
  /// the other ranks, in practice) for longer than `timeout`. Counted from
  /// when it started on the GPU, not from when it was queued: work queued
  /// ahead of it is not the other ranks' fault.
  bool overdueLocked(std::chrono::milliseconds timeout) const {
    return !pending.empty() && pending.front().started &&
           Clock::now() - pending.front().startedAt > timeout;
  }

  /// What a failure message is about: the oldest pending collective, else
  /// the rank itself.
  std::string subjectLocked() const {
    return pending.empty() ? name() : name() + ": " + pending.front().what;
  }

  /// An NCCL error of any of the communicators, as a message, or "".
  std::string asyncErrorLocked() {
    for (ncclComm_t comm : commsLocked()) {
      ncclResult_t state = ncclSuccess;
      ncclResult_t r = ncclCommGetAsyncError(comm, &state);
      if (r != ncclSuccess)
        state = r;
      if (state != ncclSuccess && state != ncclInProgress)
        return subjectLocked() + " failed: NCCL error: " + ncclText(state);
    }
    return "";
  }

  /// Aborts every communicator (their queued kernels exit, so the stream
  /// drains) and records why. The first reason stays.
  void abortLocked(const std::string &why) {
    if (!failure.empty())
      return;
    failure = why;
    DeviceGuard guard(device);
    for (ncclComm_t comm : commsLocked())
      ncclCommAbort(comm);
    world = nullptr;
    groups.clear();
  }
};

} // namespace

//===----------------------------------------------------------------------===//
// The hub
//===----------------------------------------------------------------------===//

struct NcclWorld::State {
  State(int64_t size, std::chrono::milliseconds timeout)
      : size(size), timeout(timeout), created(size_t(size), false) {}

  ~State() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wake.notify_all();
    if (watchdog.joinable())
      watchdog.join();
    // Communicators destroyed while others were alive left theirs here.
    drainFinalizing();
  }

  const int64_t size;
  const std::chrono::milliseconds timeout;
  ncclUniqueId id{};

  std::mutex mutex; // guards everything below but the atomics and liveness
  std::atomic<bool> aborted{false};
  std::string reason;
  std::vector<std::shared_ptr<RankState>> ranks;
  std::vector<bool> created;
  int64_t live = 0;
  /// Communicators of destroyed ranks whose ncclCommFinalize is running.
  std::vector<std::pair<ncclComm_t, int>> finalizing;

  std::mutex livenessMutex;
  std::unique_ptr<Liveness> liveness;

  std::thread watchdog;
  std::condition_variable wake;
  bool stopping = false;

  /// Records the first reason and tells the other processes.
  void abort(const std::string &why) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (aborted.load())
        return;
      reason = why;
      aborted.store(true);
    }
    std::lock_guard<std::mutex> lock(livenessMutex);
    if (liveness)
      liveness->broadcast(kAbortMessage, why);
  }

  std::string abortReason() {
    std::lock_guard<std::mutex> lock(mutex);
    return reason;
  }

  std::string livenessProgress() {
    std::lock_guard<std::mutex> lock(livenessMutex);
    return liveness ? liveness->progress() : "";
  }

  void add(const std::shared_ptr<RankState> &s) {
    std::lock_guard<std::mutex> lock(mutex);
    ranks.push_back(s);
    ++live;
  }

  void remove(const std::shared_ptr<RankState> &s) {
    std::lock_guard<std::mutex> lock(mutex);
    ranks.erase(std::remove(ranks.begin(), ranks.end(), s), ranks.end());
  }

  void startWatchdog() {
    watchdog = std::thread([this] {
      std::unique_lock<std::mutex> lock(mutex);
      while (!wake.wait_for(lock, kWatchdogPeriod, [&] { return stopping; })) {
        lock.unlock();
        try {
          tick();
        } catch (const std::exception &e) {
          // The watchdog must outlive any one failure.
          std::fprintf(stderr, "glimmer NCCL watchdog: %s\n", e.what());
        }
        lock.lock();
      }
    });
  }

  void tick() {
    std::string lost;
    {
      std::lock_guard<std::mutex> lock(livenessMutex);
      if (liveness)
        lost = liveness->poll();
    }
    if (!lost.empty())
      abort(lost);

    std::vector<std::shared_ptr<RankState>> list;
    {
      std::lock_guard<std::mutex> lock(mutex);
      list = ranks;
    }
    bool isAborted = aborted.load();
    std::string why = isAborted ? abortReason() : "";
    for (const std::shared_ptr<RankState> &s : list) {
      std::string message;
      bool tellOthers = false;
      {
        std::lock_guard<std::mutex> lock(s->mutex);
        if (!s->failure.empty())
          continue;
        s->retireLocked();
        // A thread that polls gets the error from its own poll.
        if (nowNs() - s->lastPollNs.load() <
            std::chrono::nanoseconds(kWatchdogGrace).count())
          continue;
        if (isAborted) {
          message = s->subjectLocked() + " aborted: " + why;
        } else {
          message = s->asyncErrorLocked();
          if (message.empty() && s->overdueLocked(timeout))
            message = s->subjectLocked() + " timed out after " +
                      durationText(timeout) + " waiting for the other ranks";
          tellOthers = !message.empty();
        }
        if (!message.empty())
          s->abortLocked(message);
      }
      if (tellOthers)
        abort(message);
    }
  }

  /// A destroyed rank's communicators whose ncclCommFinalize was started.
  /// The last communicator of the world waits for all of them at once:
  /// finalization synchronizes the ranks of a node, so waiting rank by rank
  /// would deadlock when one thread destroys several ranks' communicators.
  void release(std::vector<std::pair<ncclComm_t, int>> started) {
    bool last;
    {
      std::lock_guard<std::mutex> lock(mutex);
      finalizing.insert(finalizing.end(), started.begin(), started.end());
      last = --live == 0;
    }
    if (last)
      drainFinalizing();
  }

  /// Waits (up to the timeout) for finalization, then destroys; aborts what
  /// fails, is aborted or takes too long.
  void drainFinalizing() {
    std::vector<std::pair<ncclComm_t, int>> list;
    {
      std::lock_guard<std::mutex> lock(mutex);
      list.swap(finalizing);
    }
    auto deadline = Clock::now() + timeout;
    while (!list.empty()) {
      bool giveUp = aborted.load() || Clock::now() > deadline;
      for (size_t i = 0; i < list.size();) {
        DeviceGuard guard(list[i].second);
        ncclResult_t state = ncclInProgress;
        if (ncclCommGetAsyncError(list[i].first, &state) != ncclSuccess)
          state = ncclInternalError;
        if (state == ncclInProgress && !giveUp) {
          ++i;
          continue;
        }
        if (state == ncclSuccess)
          ncclCommDestroy(list[i].first);
        else
          ncclCommAbort(list[i].first);
        list.erase(list.begin() + long(i));
      }
      if (!list.empty())
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
};

namespace {

using Hub = NcclWorld::State;

/// The wait hook of one rank: gives up a wait on the rank's device when the
/// world was aborted, NCCL reports an error, or the collective being waited
/// for has been running longer than the timeout. (The time this wait has
/// lasted is no measure: it includes any compute queued ahead.)
void onWait(Hub &hub, RankState &s, int device, double /*secondsWaited*/) {
  if (device != s.device)
    return;
  int64_t now = nowNs();
  s.lastPollNs.store(now);
  std::string message;
  bool tellOthers = false;
  if (hub.aborted.load()) {
    std::string why = hub.abortReason();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.failure.empty())
      throw RuntimeError(s.failure);
    s.retireLocked();
    message = s.subjectLocked() + " aborted: " + why;
    s.abortLocked(message);
    throw RuntimeError(message);
  }
  if (now - s.lastHookCheckNs.load() <
      std::chrono::nanoseconds(kHookCheckPeriod).count())
    return;
  s.lastHookCheckNs.store(now);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.failure.empty())
      throw RuntimeError(s.failure);
    s.retireLocked();
    message = s.asyncErrorLocked();
    if (message.empty() && s.overdueLocked(hub.timeout))
      message = s.subjectLocked() + " timed out after " +
                durationText(hub.timeout) + " waiting for the other ranks";
    if (message.empty())
      return;
    s.abortLocked(message);
    tellOthers = true;
  }
  if (tellOthers)
    hub.abort(message);
  throw RuntimeError(message);
}

std::optional<ncclDataType_t> reductionType(DType dtype) {
  switch (dtype) {
  case DType::F64:
    return ncclFloat64;
  case DType::F32:
    return ncclFloat32;
  case DType::BF16:
    return ncclBfloat16;
  case DType::F16:
    return ncclFloat16;
  case DType::I64:
    return ncclInt64;
  case DType::I32:
    return ncclInt32;
  case DType::I8:
    return ncclInt8;
  case DType::U8:
  case DType::Bool: // max = or, min = and
    return ncclUint8;
  default:
    return std::nullopt;
  }
}

const char *reductionName(Reduction kind) {
  return kind == Reduction::Sum   ? "sum"
         : kind == Reduction::Max ? "max"
                                  : "min";
}

ncclRedOp_t ncclOp(Reduction kind) {
  return kind == Reduction::Sum   ? ncclSum
         : kind == Reduction::Max ? ncclMax
                                  : ncclMin;
}

/// x with its dims permuted (result dim i = x dim perm[i]): a view when
/// only size-1 dims change places (no data moves), else a transpose on x's
/// device.
Tensor permuted(const Tensor &x, const std::vector<int64_t> &perm) {
  bool moves = false;
  int64_t last = -1;
  for (int64_t p : perm)
    if (x.dim(p) != 1) {
      moves |= p < last;
      last = p;
    }
  if (moves)
    return transpose(x, perm);
  Shape shape;
  for (int64_t p : perm)
    shape.push_back(x.dim(p));
  return x.view(shape);
}

//===----------------------------------------------------------------------===//
// The communicator
//===----------------------------------------------------------------------===//

class NcclCommunicator : public Communicator {
public:
  NcclCommunicator(std::shared_ptr<Hub> hubPtr, int64_t rank, int device)
      : hub(std::move(hubPtr)), s(std::make_shared<RankState>(rank, device)),
        unwinding(std::uncaught_exceptions()) {
    cuda::setDevice(device);
    ncclConfig_t config = nonblockingConfig();
    ncclResult_t r = ncclCommInitRankConfig(&s->world, int(hub->size), hub->id,
                                            int(rank), &config);
    if (r != ncclSuccess && r != ncclInProgress) {
      if (s->world)
        ncclCommAbort(s->world);
      throw RuntimeError(s->name() +
                         ": initializing NCCL failed: " + ncclText(r));
    }
    hub->add(s);
    std::shared_ptr<Hub> h = hub;
    std::shared_ptr<RankState> st = s;
    hookId = cuda::addWaitHook([h, st](int device, double waited) {
      onWait(*h, *st, device, waited);
    });
  }

  ~NcclCommunicator() override {
    cuda::removeWaitHook(hookId);
    hub->remove(s);
    bool unwindingNow = std::uncaught_exceptions() > unwinding;
    if (!unwindingNow)
      awaitInitQuietly();
    std::vector<std::pair<ncclComm_t, int>> started;
    std::string failure;
    bool newFailure = false;
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      if (s->failure.empty()) {
        newFailure = true;
        if (hub->aborted.load()) {
          newFailure = false;
          s->abortLocked(s->name() + " aborted: " + hub->abortReason());
        } else if (unwindingNow) {
          s->abortLocked(s->name() + " stopped: its communicator was "
                                     "destroyed while an error propagated");
        } else if (s->world && !s->worldReady) {
          // Finalizing waits for initialization; abort instead.
          s->abortLocked(s->name() + ": the communicator was destroyed "
                                     "before NCCL finished initializing");
        } else {
          newFailure = false;
        }
      }
      failure = s->failure;
      if (failure.empty()) {
        DeviceGuard guard(s->device);
        for (ncclComm_t comm : s->commsLocked()) {
          ncclResult_t r = ncclCommFinalize(comm);
          if (r == ncclSuccess || r == ncclInProgress)
            started.emplace_back(comm, s->device);
          else
            ncclCommAbort(comm);
        }
        s->world = nullptr;
        s->groups.clear();
        s->failure = s->name() + ": the communicator was destroyed";
      }
    }
    if (newFailure) {
      // The other ranks would wait for this one: stop them (and, between
      // processes, tell them why).
      hub->abort(failure);
    } else if (failure.empty()) {
      // Peers that see this process go after a goodbye do not fail.
      std::lock_guard<std::mutex> lock(hub->livenessMutex);
      if (hub->liveness)
        hub->liveness->broadcast(kByeMessage, "");
    }
    hub->release(std::move(started));
  }

  int64_t rank() const override { return s->rank; }
  int64_t worldSize() const override { return hub->size; }

  Tensor allGather(const Tensor &x, const Group &group, int64_t dim) override {
    const char *op = "all_gather";
    checkInput(x, op);
    int64_t n = int64_t(group.size());
    indexIn(group, op);
    if (dim < 0 || dim >= x.rank())
      throw RuntimeError(std::string(op) + ": dimension " +
                         std::to_string(dim) + " is out of range for " +
                         x.describe());
    if (n == 1)
      return x;
    ncclComm_t comm = commFor(group);
    Shape gatheredShape{n};
    gatheredShape.insert(gatheredShape.end(), x.shape().begin(),
                         x.shape().end());
    Tensor gathered(x.dtype(), gatheredShape, x.device());
    if (x.nbytes())
      enqueue(describe(op, group), comm, [&] {
        return ncclAllGather(x.raw(), gathered.raw(), x.nbytes(), ncclUint8,
                             comm, stream());
      });
    // gathered is [n, x dims...]; the result puts n next to `dim` and
    // merges the two.
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < x.rank(); ++d) {
      if (d == dim)
        perm.push_back(0);
      perm.push_back(d + 1);
    }
    Shape out = x.shape();
    out[size_t(dim)] *= n;
    return permuted(gathered, perm).view(out);
  }

  Tensor reduceScatter(const Tensor &x, const Group &group, int64_t dim,
                       Reduction kind) override {
    const char *op = "reduce_scatter";
    checkInput(x, op);
    int64_t n = int64_t(group.size());
    indexIn(group, op);
    if (dim < 0 || dim >= x.rank() || x.dim(dim) % n != 0)
      throw RuntimeError("reduce_scatter: dimension " + std::to_string(dim) +
                         " of " + x.describe() +
                         " is not divisible by the group size " +
                         std::to_string(n));
    ncclDataType_t type = reductionTypeOf(x, kind, op);
    if (n == 1)
      return x;
    ncclComm_t comm = commFor(group);
    int64_t piece = x.dim(dim) / n;
    // NCCL scatters contiguous chunks: bring the n pieces of `dim` to the
    // front ([pre..., n, piece, post...] -> [n, pre..., piece, post...]).
    Shape split;
    for (int64_t d = 0; d < x.rank(); ++d) {
      if (d == dim) {
        split.push_back(n);
        split.push_back(piece);
      } else {
        split.push_back(x.dim(d));
      }
    }
    std::vector<int64_t> perm{dim};
    for (int64_t d = 0; d <= x.rank(); ++d)
      if (d != dim)
        perm.push_back(d);
    Tensor chunks = permuted(x.view(split), perm);
    Shape outShape = x.shape();
    outShape[size_t(dim)] = piece;
    Tensor out(x.dtype(), outShape, x.device());
    if (out.numel())
      enqueue(describe(op, group), comm, [&] {
        return ncclReduceScatter(chunks.raw(), out.raw(), size_t(out.numel()),
                                 type, ncclOp(kind), comm, stream());
      });
    return out;
  }

  Tensor allReduce(const Tensor &x, const Group &group,
                   Reduction kind) override {
    const char *op = "all_reduce";
    checkInput(x, op);
    indexIn(group, op);
    ncclDataType_t type = reductionTypeOf(x, kind, op);
    if (group.size() == 1)
      return x;
    ncclComm_t comm = commFor(group);
    Tensor out(x.dtype(), x.shape(), x.device());
    if (out.numel())
      enqueue(describe(op, group), comm, [&] {
        return ncclAllReduce(x.raw(), out.raw(), size_t(x.numel()), type,
                             ncclOp(kind), comm, stream());
      });
    return out;
  }

  Tensor allToAll(const Tensor &x, const Group &group, int64_t splitDim,
                  int64_t concatDim) override {
    const char *op = "all_to_all";
    checkInput(x, op);
    int64_t n = int64_t(group.size());
    indexIn(group, op);
    if (splitDim < 0 || splitDim >= x.rank() || x.dim(splitDim) % n != 0)
      throw RuntimeError("all_to_all: split dimension of " + x.describe() +
                         " is not divisible by the group size " +
                         std::to_string(n));
    if (concatDim < 0 || concatDim >= x.rank())
      throw RuntimeError("all_to_all: concat dimension " +
                         std::to_string(concatDim) + " is out of range for " +
                         x.describe());
    if (n == 1)
      return x;
    ncclComm_t comm = commFor(group);
    int64_t k = x.rank(), piece = x.dim(splitDim) / n;
    // Piece j of `splitDim` goes to member j: make the pieces contiguous
    // chunks by moving splitDim to the front.
    std::vector<int64_t> toFront{splitDim};
    for (int64_t d = 0; d < k; ++d)
      if (d != splitDim)
        toFront.push_back(d);
    Tensor chunks = permuted(x, toFront);
    Tensor received(x.dtype(), chunks.shape(), x.device());
    size_t chunkBytes = x.nbytes() / size_t(n);
    if (chunkBytes)
      enqueue(describe(op, group), comm, [&] {
        ncclResult_t first = ncclGroupStart();
        if (first != ncclSuccess)
          return first;
        const char *src = static_cast<const char *>(chunks.raw());
        char *dst = static_cast<char *>(received.raw());
        for (int64_t j = 0; j < n; ++j) {
          ncclResult_t a = ncclSend(src + size_t(j) * chunkBytes, chunkBytes,
                                    ncclUint8, int(j), comm, stream());
          ncclResult_t b = ncclRecv(dst + size_t(j) * chunkBytes, chunkBytes,
                                    ncclUint8, int(j), comm, stream());
          if (first == ncclSuccess)
            first = a != ncclSuccess ? a : b;
        }
        ncclResult_t end = ncclGroupEnd();
        return first != ncclSuccess ? first : end;
      });
    // received is [n, piece, other dims...] (chunk i from member i); the
    // result concatenates the pieces along concatDim in member order: put
    // n just before concatDim and merge the two.
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < k; ++d) {
      if (d == concatDim)
        perm.push_back(0);
      perm.push_back(d == splitDim ? 1 : 2 + (d < splitDim ? d : d - 1));
    }
    Shape pieces{n, piece};
    Shape out = x.shape();
    out[size_t(splitDim)] = piece;
    for (int64_t d = 0; d < k; ++d)
      if (d != splitDim)
        pieces.push_back(x.dim(d));
    out[size_t(concatDim)] *= n;
    return permuted(received.view(pieces), perm).view(out);
  }

  void send(const Tensor &x, int64_t peer) override {
    const char *op = "send";
    checkInput(x, op);
    checkPeer(peer, op);
    if (x.rank() > kMaxHeaderDims)
      throw RuntimeError("send: " + x.describe() + " has more than " +
                         std::to_string(kMaxHeaderDims) + " dimensions");
    ncclComm_t comm = commFor(worldGroup());
    int64_t words[kHeaderWords] = {kHeaderMagic, int64_t(x.dtype()), x.rank()};
    for (int64_t d = 0; d < x.rank(); ++d)
      words[3 + d] = x.dim(d);
    Tensor header(DType::I64, {kHeaderWords}, x.device());
    {
      DeviceGuard guard(s->device);
      cudaError_t status = nccl_detail::writeWords(
          header.data<int64_t>(), words, kHeaderWords, stream());
      if (status != cudaSuccess)
        throw RuntimeError(s->name() + ": send: writing the header failed: " +
                           cudaGetErrorString(status));
    }
    std::string what = "send to rank " + std::to_string(peer);
    enqueue(what + " (header)", comm, [&] {
      return ncclSend(header.raw(), kHeaderWords, ncclInt64, int(peer), comm,
                      stream());
    });
    if (x.nbytes())
      enqueue(what, comm, [&] {
        return ncclSend(x.raw(), x.nbytes(), ncclUint8, int(peer), comm,
                        stream());
      });
  }

  Tensor recv(int64_t peer) override {
    const char *op = "recv";
    checkPeer(peer, op);
    ncclComm_t comm = commFor(worldGroup());
    std::string what = "recv from rank " + std::to_string(peer);
    Device device = Device::cuda(s->device);
    Tensor header(DType::I64, {kHeaderWords}, device);
    enqueue(what + " (header)", comm, [&] {
      return ncclRecv(header.raw(), kHeaderWords, ncclInt64, int(peer), comm,
                      stream());
    });
    // The shape is needed on the host before the payload can be received.
    waitIdle(what);
    Tensor host = header.to(Device::cpu());
    const int64_t *words = host.data<int64_t>();
    int64_t rank = words[2];
    if (words[0] != kHeaderMagic || words[1] < 0 ||
        words[1] > int64_t(DType::Bool) || rank < 0 || rank > kMaxHeaderDims)
      throw RuntimeError(s->name() + ": " + what +
                         ": the message is not a tensor sent by send()");
    Shape shape(words + 3, words + 3 + rank);
    Tensor out(DType(words[1]), shape, device);
    if (out.nbytes())
      enqueue(what, comm, [&] {
        return ncclRecv(out.raw(), out.nbytes(), ncclUint8, int(peer), comm,
                        stream());
      });
    return out;
  }

  Tensor ppermute(const Tensor &x, const Group &group,
                  const std::vector<int64_t> &pairs) override {
    const char *op = "ppermute";
    checkInput(x, op);
    int64_t n = int64_t(group.size());
    int64_t index = indexIn(group, op);
    if (pairs.size() % 2 != 0)
      throw RuntimeError("ppermute: pairs must come as (source, destination)");
    // Every member checks every pair, so all of them throw alike.
    std::vector<bool> isDestination(size_t(n), false);
    std::vector<int64_t> sendTo;
    int64_t source = -1;
    for (size_t i = 0; i < pairs.size(); i += 2) {
      int64_t src = pairs[i], dst = pairs[i + 1];
      if (src < 0 || src >= n || dst < 0 || dst >= n)
        throw RuntimeError("ppermute: pair (" + std::to_string(src) + ", " +
                           std::to_string(dst) +
                           ") is out of range for a group of " +
                           std::to_string(n));
      if (isDestination[size_t(dst)])
        throw RuntimeError("ppermute: member " + std::to_string(dst) +
                           " is the destination of two pairs");
      isDestination[size_t(dst)] = true;
      if (src == index && dst != index)
        sendTo.push_back(dst);
      if (dst == index)
        source = src;
    }
    Tensor out;
    if (source == index)
      out = x;
    else if (source < 0)
      out = Tensor::zeros(x.dtype(), x.shape(), x.device());
    else
      out = Tensor(x.dtype(), x.shape(), x.device());
    if (n == 1)
      return out;
    ncclComm_t comm = commFor(group);
    bool receives = source >= 0 && source != index;
    if ((sendTo.empty() && !receives) || !x.nbytes())
      return out;
    enqueue(describe(op, group), comm, [&] {
      ncclResult_t first = ncclGroupStart();
      if (first != ncclSuccess)
        return first;
      for (int64_t dst : sendTo) {
        ncclResult_t r =
            ncclSend(x.raw(), x.nbytes(), ncclUint8, int(dst), comm, stream());
        if (first == ncclSuccess)
          first = r;
      }
      if (receives) {
        ncclResult_t r = ncclRecv(out.raw(), out.nbytes(), ncclUint8,
                                  int(source), comm, stream());
        if (first == ncclSuccess)
          first = r;
      }
      ncclResult_t end = ncclGroupEnd();
      return first != ncclSuccess ? first : end;
    });
    return out;
  }

private:
  cudaStream_t stream() const { return cuda::stream(s->device); }

  Group worldGroup() const {
    Group g(size_t(hub->size));
    for (int64_t r = 0; r < hub->size; ++r)
      g[size_t(r)] = r;
    return g;
  }

  std::string describe(const char *op, const Group &group) const {
    return std::string(op) + " on ranks " + ranksText(group);
  }

  void checkInput(const Tensor &x, const char *op) const {
    if (!x.defined())
      throw RuntimeError(std::string(op) + ": missing input tensor");
    if (x.device() != Device::cuda(s->device))
      throw RuntimeError(std::string(op) + ": expects a tensor on cuda:" +
                         std::to_string(s->device) + " (" + s->name() +
                         "'s GPU), got " + x.describe());
  }

  void checkPeer(int64_t peer, const char *op) const {
    if (peer < 0 || peer >= hub->size || peer == s->rank)
      throw RuntimeError(std::string(op) + ": invalid peer rank " +
                         std::to_string(peer));
  }

  int64_t indexIn(const Group &group, const char *op) const {
    for (size_t i = 0; i < group.size(); ++i)
      if (group[i] < 0 || group[i] >= hub->size)
        throw RuntimeError(std::string(op) + ": group " + ranksText(group) +
                           " names ranks outside a world of " +
                           std::to_string(hub->size));
    for (size_t i = 0; i < group.size(); ++i)
      if (group[i] == s->rank)
        return int64_t(i);
    throw RuntimeError("rank " + std::to_string(s->rank) +
                       " is not a member of its collective's group");
  }

  ncclDataType_t reductionTypeOf(const Tensor &x, Reduction kind,
                                 const char *op) const {
    std::optional<ncclDataType_t> type = reductionType(x.dtype());
    if (!type || (x.dtype() == DType::Bool && kind == Reduction::Sum))
      throw RuntimeError(std::string(op) + ": cannot " + reductionName(kind) +
                         "-reduce " + x.describe() + " with NCCL");
    return *type;
  }

  /// Throws the rank's failure, or the world's abort.
  void throwIfFailedLocked(const std::string &what) {
    if (!s->failure.empty())
      throw RuntimeError(s->failure);
    if (hub->aborted.load()) {
      std::string message =
          s->name() + ": " + what + " aborted: " + hub->abortReason();
      s->abortLocked(message);
      throw RuntimeError(message);
    }
  }

  /// Aborts the rank (and, between ranks of this hub, the world), then
  /// throws `message`.
  [[noreturn]] void fail(const std::string &message) {
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      // Whoever failed the rank first has told the others.
      if (!s->failure.empty())
        throw RuntimeError(s->failure);
      s->abortLocked(message);
    }
    hub->abort(message);
    throw RuntimeError(message);
  }

  /// Polls `comm` until it leaves ncclInProgress, giving up on an NCCL
  /// error, an abort or the timeout.
  void awaitComm(ncclComm_t comm, const std::string &what,
                 const std::string &onTimeout = "waiting for the other ranks") {
    auto start = Clock::now();
    for (int polls = 0;; ++polls) {
      ncclResult_t state = ncclInProgress;
      std::string message;
      {
        std::lock_guard<std::mutex> lock(s->mutex);
        throwIfFailedLocked(what);
        // Another rank failed: no point waiting for it to join.
        if (hub->aborted.load())
          message = s->name() + ": " + what + " aborted: " + hub->abortReason();
        else if (ncclCommGetAsyncError(comm, &state) != ncclSuccess)
          state = ncclInternalError;
      }
      if (!message.empty())
        fail(message);
      if (state == ncclSuccess)
        return;
      if (state != ncclInProgress)
        fail(s->name() + ": " + what +
             " failed: NCCL error: " + ncclText(state));
      if (Clock::now() - start > hub->timeout) {
        std::string progress = hub->livenessProgress();
        fail(s->name() + ": " + what + " timed out after " +
             durationText(hub->timeout) + " " + onTimeout +
             (progress.empty() ? "" : " (" + progress + ")"));
      }
      s->lastPollNs.store(nowNs());
      if (polls > 200)
        std::this_thread::sleep_for(std::chrono::microseconds(500));
      else
        std::this_thread::yield();
    }
  }

  /// Waits on the host until every enqueued collective has completed.
  void waitIdle(const std::string &what) {
    for (int polls = 0;; ++polls) {
      std::string message;
      {
        std::lock_guard<std::mutex> lock(s->mutex);
        throwIfFailedLocked(what);
        s->retireLocked();
        if (s->pending.empty())
          return;
        message = s->asyncErrorLocked();
        if (message.empty() && s->overdueLocked(hub->timeout))
          message = s->subjectLocked() + " timed out after " +
                    durationText(hub->timeout) + " waiting for the other ranks";
      }
      if (!message.empty())
        fail(message);
      s->lastPollNs.store(nowNs());
      if (polls > 1000)
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      else
        std::this_thread::yield();
    }
  }

  /// Waits (up to the timeout, without throwing) for the initialization of
  /// a communicator that was never used: the other ranks' finalization
  /// needs this rank initialized.
  void awaitInitQuietly() {
    auto deadline = Clock::now() + hub->timeout;
    while (!hub->aborted.load() && Clock::now() < deadline) {
      ncclResult_t state = ncclInternalError;
      {
        std::lock_guard<std::mutex> lock(s->mutex);
        if (s->worldReady || !s->failure.empty() || !s->world ||
            ncclCommGetAsyncError(s->world, &state) != ncclSuccess)
          return;
        s->worldReady = state == ncclSuccess;
      }
      if (state != ncclInProgress)
        return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  /// Waits for the world communicator's initialization (every rank must
  /// have created its communicator).
  void ensureReady() {
    if (s->worldReady)
      return;
    ncclComm_t world;
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      throwIfFailedLocked("initializing NCCL");
      world = s->world;
    }
    awaitComm(world,
              "initializing NCCL for " + std::to_string(hub->size) + " ranks",
              "for every rank to create its communicator");
    std::lock_guard<std::mutex> lock(s->mutex);
    s->worldReady = true;
  }

  /// The communicator of `group` (the world's for the world in rank order),
  /// split from the world's at the group's first use. All ranks of the
  /// world take part in a split, each with its own group.
  ncclComm_t commFor(const Group &group) {
    ensureReady();
    bool isWorld = int64_t(group.size()) == hub->size;
    for (size_t i = 0; isWorld && i < group.size(); ++i)
      isWorld = group[i] == int64_t(i);
    ncclComm_t parent;
    std::string what =
        "creating the NCCL communicator of ranks " + ranksText(group);
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      throwIfFailedLocked(what);
      if (isWorld)
        return s->world;
      auto it = s->groups.find(group);
      if (it != s->groups.end())
        return it->second;
      parent = s->world;
    }
    int color = int(*std::min_element(group.begin(), group.end()));
    int key = int(indexIn(group, "split"));
    // NCCL fills the new handle from its own thread when the split
    // completes; should we give up first, the slot must stay valid, so it
    // is leaked on that path.
    ncclComm_t *slot = new ncclComm_t(nullptr);
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      throwIfFailedLocked(what);
      DeviceGuard guard(s->device);
      ncclConfig_t config = nonblockingConfig();
      ncclResult_t r = ncclCommSplit(parent, color, key, slot, &config);
      if (r != ncclSuccess && r != ncclInProgress) {
        std::string message =
            s->name() + ": " + what + " failed: NCCL error: " + ncclText(r);
        s->abortLocked(message);
        hub->abort(message);
        throw RuntimeError(message);
      }
    }
    // A nonblocking split completes when the parent leaves ncclInProgress.
    awaitComm(parent, what, "for every rank to reach the split");
    ncclComm_t child = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    delete slot;
    if (!child)
      fail(s->name() + ": " + what +
           " failed: ncclCommSplit made no communicator");
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      if (!s->failure.empty()) {
        ncclCommAbort(child);
        throw RuntimeError(s->failure);
      }
      s->groups[group] = child;
    }
    awaitComm(child, what, "for every rank to reach the split");
    return child;
  }

  /// Runs `calls` (NCCL calls on `comm`, on the rank's stream) and tracks
  /// the collective until it completes.
  template <typename Calls>
  void enqueue(const std::string &what, ncclComm_t comm, Calls &&calls) {
    PendingOp op;
    op.what = what;
    cudaStream_t st = stream();
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      throwIfFailedLocked(what);
      s->retireLocked();
      DeviceGuard guard(s->device);
      op.start = s->takeEventLocked();
      recordLocked(op.start, st, what);
      ncclResult_t r = calls();
      if (r != ncclSuccess && r != ncclInProgress) {
        s->spareEvents.push_back(op.start);
        std::string message =
            s->name() + ": " + what + " failed: NCCL error: " + ncclText(r);
        s->abortLocked(message);
        hub->abort(message);
        throw RuntimeError(message);
      }
    }
    // Until the call leaves ncclInProgress nothing else may be queued on
    // the stream (nonblocking communicators may still be connecting).
    try {
      awaitComm(comm, what);
    } catch (...) {
      std::lock_guard<std::mutex> lock(s->mutex);
      s->spareEvents.push_back(op.start);
      throw;
    }
    std::lock_guard<std::mutex> lock(s->mutex);
    DeviceGuard guard(s->device);
    op.end = s->takeEventLocked();
    try {
      recordLocked(op.end, st, what);
    } catch (...) {
      s->spareEvents.push_back(op.start);
      throw;
    }
    s->pending.push_back(std::move(op));
  }

  /// Records `event` on `st`; an event that cannot be recorded would look
  /// like a collective that never completes.
  void recordLocked(cudaEvent_t event, cudaStream_t st,
                    const std::string &what) {
    cudaError_t status = cudaEventRecord(event, st);
    if (status == cudaSuccess)
      return;
    s->spareEvents.push_back(event);
    throw RuntimeError(
        s->name() + ": " + what +
        ": cannot record a CUDA event: " + cudaGetErrorString(status));
  }

  std::shared_ptr<Hub> hub;
  std::shared_ptr<RankState> s;
  int hookId = -1;
  int unwinding;
};

//===----------------------------------------------------------------------===//
// Process setup
//===----------------------------------------------------------------------===//

/// The visible GPU count, or a RuntimeError naming `who`.
int requireGpus(const std::string &who) {
  int count = cuda::deviceCount();
  if (count < 1)
    throw RuntimeError(who + " needs a CUDA device, but none is visible");
  return count;
}

uint16_t portFrom(const std::string &name, const std::string &text) {
  int64_t port = 0;
  if (!parseCount(text, port) || port < 1 || port > 65535)
    throw RuntimeError(name + "='" + text + "' is not a TCP port");
  return uint16_t(port);
}

/// The TCP port of the id exchange next to torchrun's MASTER_ADDR.
uint16_t idPort() {
  if (std::optional<std::string> port = envValue("GLIMMER_NCCL_ID_PORT"))
    return portFrom("GLIMMER_NCCL_ID_PORT", *port);
  std::optional<std::string> master = envValue("MASTER_PORT");
  if (!master)
    throw RuntimeError("MASTER_ADDR is set but MASTER_PORT is not");
  uint16_t port = portFrom("MASTER_PORT", *master);
  // torchrun's agent serves its own store on MASTER_PORT.
  if (envValue("TORCHELASTIC_RUN_ID")) {
    if (port == 65535)
      throw RuntimeError("MASTER_PORT=65535 leaves no port for the NCCL id "
                         "exchange; set GLIMMER_NCCL_ID_PORT");
    ++port;
  }
  return port;
}

/// torchrun: rank 0 listens on the id port, the others connect to
/// MASTER_ADDR.
void exchangeOverTcp(Hub &hub, const LaunchInfo &info,
                     Clock::time_point deadline) {
  std::string master = *envValue("MASTER_ADDR");
  uint16_t port = idPort();
  std::string prefix =
      "rank " + std::to_string(info.rank) + " (" + info.launcher + "): ";
  if (info.rank == 0) {
    ncclResult_t r = ncclGetUniqueId(&hub.id);
    if (r != ncclSuccess)
      throw RuntimeError(prefix + "ncclGetUniqueId failed: " + ncclText(r));
    std::string error;
    uint16_t bound = 0;
    int fd = listenOn(port, bound, error);
    if (fd < 0)
      throw RuntimeError(prefix + "cannot listen on port " +
                         std::to_string(port) + " for the NCCL id exchange: " +
                         error + " (set GLIMMER_NCCL_ID_PORT to a free port)");
    hub.liveness =
        std::make_unique<Liveness>(info.worldSize, fd, hub.id, std::string());
    return;
  }
  std::string error = "no attempt made";
  while (Clock::now() < deadline) {
    int fd = connectOnce(
        master, port,
        std::min(deadline, Clock::now() + std::chrono::seconds(2)), error);
    if (fd >= 0) {
      if (handshake(fd, info.rank, info.worldSize, deadline, hub.id, error)) {
        hub.liveness =
            std::make_unique<Liveness>(info.rank, info.worldSize, fd);
        return;
      }
      ::close(fd);
    }
    // Rank 0 may not be listening yet.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  throw RuntimeError(prefix + "could not get the NCCL id from rank 0 at " +
                     master + ":" + std::to_string(port) + " within " +
                     durationText(hub.timeout) + ": " + error);
}

/// The id file: "glimmer-nccl-id 1", rank 0's host name, its port, its
/// IPv4 addresses, the id in hex.
struct IdFile {
  std::string host;
  uint16_t port = 0;
  std::vector<std::string> addresses;
  ncclUniqueId id{};
};

bool readIdFile(const std::string &path, IdFile &file) {
  std::ifstream in(path);
  std::string header, portText, addressLine, hex;
  if (!std::getline(in, header) || header != "glimmer-nccl-id 1" ||
      !std::getline(in, file.host) || !std::getline(in, portText) ||
      !std::getline(in, addressLine) || !std::getline(in, hex))
    return false;
  int64_t port = 0;
  if (!parseCount(portText, port) || port < 1 || port > 65535)
    return false;
  file.port = uint16_t(port);
  std::istringstream words(addressLine);
  file.addresses.clear();
  for (std::string a; words >> a;)
    file.addresses.push_back(a);
  return fromHex(hex, &file.id, sizeof file.id);
}

/// mpirun: rank 0 writes the id file (temp file + rename), the others poll
/// for it and then connect to rank 0 for liveness.
void exchangeThroughFile(Hub &hub, const LaunchInfo &info,
                         Clock::time_point deadline) {
  std::string dir = envValue("GLIMMER_NCCL_ID_DIR").value_or("/tmp");
  std::string key = envValue("OMPI_MCA_ess_base_jobid")
                        .value_or(envValue("MASTER_PORT").value_or("default"));
  for (char &c : key)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.')
      c = '_';
  std::string path = dir + "/glimmer-nccl-" + key;
  std::string prefix =
      "rank " + std::to_string(info.rank) + " (" + info.launcher + "): ";
  if (info.rank == 0) {
    ncclResult_t r = ncclGetUniqueId(&hub.id);
    if (r != ncclSuccess)
      throw RuntimeError(prefix + "ncclGetUniqueId failed: " + ncclText(r));
    std::string error;
    uint16_t port = 0;
    int fd = listenOn(0, port, error);
    if (fd < 0)
      throw RuntimeError(prefix +
                         "cannot listen for the other ranks: " + error);
    std::string text =
        "glimmer-nccl-id 1\n" + hostName() + "\n" + std::to_string(port) + "\n";
    for (const std::string &a : hostAddresses())
      text += a + " ";
    text += "\n" + hexOf(&hub.id, sizeof hub.id) + "\n";
    std::string temp = path + ".tmp." + std::to_string(::getpid());
    {
      std::ofstream out(temp, std::ios::trunc);
      out << text;
      out.flush();
      if (!out) {
        ::close(fd);
        ::unlink(temp.c_str());
        throw RuntimeError(prefix + "cannot write the NCCL id file " + temp +
                           " (set GLIMMER_NCCL_ID_DIR to a writable "
                           "directory shared by the ranks)");
      }
    }
    if (::rename(temp.c_str(), path.c_str()) != 0) {
      int error = errno;
      ::close(fd);
      ::unlink(temp.c_str());
      throw RuntimeError(prefix + "cannot rename " + temp + " to " + path +
                         ": " + errnoText(error));
    }
    hub.liveness = std::make_unique<Liveness>(info.worldSize, fd, hub.id, path);
    return;
  }
  // A file much older than this rank comes from an earlier job.
  auto notBefore = std::chrono::system_clock::to_time_t(
      std::chrono::system_clock::now() - std::chrono::minutes(1));
  std::string me = hostName();
  std::string problem = "the file did not appear";
  while (Clock::now() < deadline) {
    struct stat st {};
    IdFile file;
    if (::stat(path.c_str(), &st) != 0) {
      problem = "the file did not appear";
    } else if (st.st_mtime < notBefore) {
      problem = "the file is older than this job (left by an earlier run?)";
    } else if (!readIdFile(path, file)) {
      problem = "the file is malformed";
    } else {
      // Same host: loopback first; else rank 0's addresses, then its name.
      std::vector<std::string> candidates;
      if (file.host == me)
        candidates.push_back("127.0.0.1");
      candidates.insert(candidates.end(), file.addresses.begin(),
                        file.addresses.end());
      candidates.push_back(file.host);
      problem = "rank 0 (" + file.host + " port " + std::to_string(file.port) +
                ") is not reachable";
      for (const std::string &host : candidates) {
        std::string error;
        int fd = connectOnce(
            host, file.port,
            std::min(deadline, Clock::now() + std::chrono::seconds(1)), error);
        if (fd < 0) {
          problem += "; " + host + ": " + error;
          continue;
        }
        ncclUniqueId served{};
        if (handshake(fd, info.rank, info.worldSize, deadline, served, error) &&
            std::memcmp(&served, &file.id, sizeof served) == 0) {
          hub.id = file.id;
          hub.liveness =
              std::make_unique<Liveness>(info.rank, info.worldSize, fd);
          return;
        }
        ::close(fd);
        problem +=
            "; " + host + ": " + (error.empty() ? "serves another id" : error);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  throw RuntimeError(prefix + "found no NCCL id from rank 0 in " + path +
                     " within " + durationText(hub.timeout) + ": " + problem +
                     (problem == "the file did not appear"
                          ? " (is rank 0 running? GLIMMER_NCCL_ID_DIR must be "
                            "shared by the ranks' hosts)"
                          : ""));
}

} // namespace

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

NcclWorld::NcclWorld(int64_t size, std::chrono::milliseconds timeout) {
  if (size < 1)
    throw RuntimeError("a world needs at least one rank");
  int count = requireGpus("NcclWorld");
  if (size > count)
    throw RuntimeError("NcclWorld of " + std::to_string(size) +
                       " ranks needs " + std::to_string(size) +
                       " GPUs (NCCL runs one rank per GPU), but " +
                       std::to_string(count) + " are visible");
  keepNvlsOff();
  state = std::make_shared<State>(size, timeout);
  ncclResult_t r = ncclGetUniqueId(&state->id);
  if (r != ncclSuccess)
    throw RuntimeError("NcclWorld: ncclGetUniqueId failed: " + ncclText(r));
  state->startWatchdog();
}

NcclWorld::~NcclWorld() = default;

int64_t NcclWorld::size() const { return state->size; }

Device NcclWorld::deviceOf(int64_t rank) const {
  if (rank < 0 || rank >= state->size)
    throw RuntimeError("rank " + std::to_string(rank) + " outside a world of " +
                       std::to_string(state->size));
  return Device::cuda(int(rank % cuda::deviceCount()));
}

std::unique_ptr<Communicator> NcclWorld::communicator(int64_t rank) {
  Device device = deviceOf(rank);
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    if (state->created[size_t(rank)])
      throw RuntimeError("NcclWorld: the communicator of rank " +
                         std::to_string(rank) + " was already created");
    state->created[size_t(rank)] = true;
  }
  return std::make_unique<NcclCommunicator>(state, rank, device.index);
}

void NcclWorld::abort(const std::string &why) { state->abort(why); }

std::unique_ptr<Communicator>
glimmer_rt::processCommunicator(const LaunchInfo &info,
                                std::chrono::milliseconds timeout) {
  if (info.worldSize < 1 || info.rank < 0 || info.rank >= info.worldSize ||
      info.localRank < 0)
    throw RuntimeError(
        "processCommunicator: rank " + std::to_string(info.rank) + " (local " +
        std::to_string(info.localRank) + ") of " +
        std::to_string(info.worldSize) + " is not a valid place");
  std::string who =
      "rank " + std::to_string(info.rank) + " (" + info.launcher + ")";
  int count = requireGpus(who);
  int device = int(info.localRank % count);
  keepNvlsOff();
  cuda::setDevice(device);
  auto hub = std::make_shared<Hub>(info.worldSize, timeout);
  auto deadline = Clock::now() + timeout;
  if (info.worldSize == 1) {
    ncclResult_t r = ncclGetUniqueId(&hub->id);
    if (r != ncclSuccess)
      throw RuntimeError(who + ": ncclGetUniqueId failed: " + ncclText(r));
  } else if (envValue("MASTER_ADDR")) {
    exchangeOverTcp(*hub, info, deadline);
  } else {
    exchangeThroughFile(*hub, info, deadline);
  }
  hub->startWatchdog();
  return std::make_unique<NcclCommunicator>(hub, info.rank, device);
}

#else // !GLIMMER_RT_HAVE_CUDA

// Without the CUDA backend the entry points exist (the driver links them
// unconditionally) and fail like DeviceScope does.

struct NcclWorld::State {};

[[noreturn]] static void noCuda() {
  throw RuntimeError("this runtime was built without the CUDA backend (NCCL "
                     "communicators need it)");
}

NcclWorld::NcclWorld(int64_t, std::chrono::milliseconds) { noCuda(); }
NcclWorld::~NcclWorld() = default;
int64_t NcclWorld::size() const { noCuda(); }
std::unique_ptr<Communicator> NcclWorld::communicator(int64_t) { noCuda(); }
void NcclWorld::abort(const std::string &) { noCuda(); }
Device NcclWorld::deviceOf(int64_t) const { noCuda(); }

std::unique_ptr<Communicator>
glimmer_rt::processCommunicator(const LaunchInfo &, std::chrono::milliseconds) {
  noCuda();
}

#endif // GLIMMER_RT_HAVE_CUDA
