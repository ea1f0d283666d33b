#pragma once
// Debian's cpp-httplib is a compiled library (libcpp-httplib.so) that listens with a backlog
// of 5, whatever CPPHTTPLIB_LISTEN_BACKLOG our code defines. With 64 clients connecting at
// once on a busy machine the accept queue overflows; the kernel then answers with SYN
// cookies and resets connections it cannot complete (clients see ECONNRESET). Calling
// listen() again on a listening socket sets its backlog, so after binding we find the
// server's socket by its port and raise it (the kernel caps it at net.core.somaxconn).

namespace rfa {

// Returns how many listening sockets of this process on `port` were raised to `backlog`.
int listen_backlog_raise(int port, int backlog);

}  // namespace rfa
