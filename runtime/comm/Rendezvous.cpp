//===- Rendezvous.cpp - How the ranks' processes find each other ----------===//
//
// Part of the Glimmer runtime. See Rendezvous.h.
//
//===----------------------------------------------------------------------===//

#include "Rendezvous.h"
#include "NcclEnv.h"
#include "NcclHub.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <thread>

namespace glimmer_rt::nccl_detail {

//===----------------------------------------------------------------------===//
// Sockets
//===----------------------------------------------------------------------===//

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

namespace {

std::string errnoText(int error) { return std::strerror(error); }

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

} // namespace

//===----------------------------------------------------------------------===//
// The id exchange
//===----------------------------------------------------------------------===//

void exchangeOverTcp(NcclWorld::State &hub, const LaunchInfo &info,
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

void exchangeThroughFile(NcclWorld::State &hub, const LaunchInfo &info,
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

} // namespace glimmer_rt::nccl_detail
