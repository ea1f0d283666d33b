// listen_backlog_raise finds this process's listening socket by its port and sets its
// backlog (read back from TCP_INFO, where Linux reports a listening socket's backlog in
// tcpi_sacked); other ports' sockets are left alone.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <fstream>

#include "serve/listen_backlog.h"
#include "support/skip.h"

using namespace rfa;

namespace {

// A socket listening on 127.0.0.1 with `backlog`; its port in *port.
int listening_socket(int backlog, int* port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(fd, backlog) == 0);
  socklen_t len = sizeof a;
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  *port = ntohs(a.sin_port);
  return fd;
}

unsigned backlog_of(int fd) {
  tcp_info info{};
  socklen_t len = sizeof info;
  REQUIRE(getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0);
  return info.tcpi_sacked;
}

// Whether TCP_INFO hands back tcp_info as far as tcpi_sacked. qemu-user (the arm64 cross build's
// test runner, scripts/cross-build-arm64.sh) passes only an int through for IPPROTO_TCP options.
bool tcp_info_reports_backlog(int fd) {
  tcp_info info{};
  socklen_t len = sizeof info;
  return getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0 &&
         len >= offsetof(tcp_info, tcpi_sacked) + sizeof info.tcpi_sacked;
}

}  // namespace

TEST_CASE("listen backlog: the server's socket is found by its port and raised; others untouched") {
  int port = 0, other_port = 0;
  const int fd = listening_socket(5, &port), other = listening_socket(5, &other_port);
  if (rfa::test::skip_if(!tcp_info_reports_backlog(fd),
                         "getsockopt(TCP_INFO) comes back short here (an emulator such as qemu-user), "
                         "so no backlog can be read back")) {
    close(fd);
    close(other);
    return;
  }
  REQUIRE(backlog_of(fd) == 5);
  unsigned somaxconn = 4096;
  std::ifstream("/proc/sys/net/core/somaxconn") >> somaxconn;
  CHECK(listen_backlog_raise(port, 1024) == 1);
  CHECK(backlog_of(fd) == std::min(1024u, somaxconn));
  CHECK(backlog_of(other) == 5);
  CHECK(listen_backlog_raise(1, 1024) == 0);  // no socket of ours there
  close(fd);
  close(other);
}
