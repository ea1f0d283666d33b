#pragma once
// Whether the client of a request is still there. cpp-httplib 0.11 gives a handler no
// access to its connection, so the socket is found once per request by its two endpoints
// (each open socket of the process compared with getsockname/getpeername), then polled:
// a peer that closed (or reset) its end makes the socket readable with nothing to read.
// A client that pipelines its next request keeps it readable with bytes: still there.
#include <string>

namespace rfa {

// The connected socket with these endpoints; -1 when none is found.
int peer_socket_find(const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port);
// True when the peer closed or reset the connection (never for fd < 0).
bool peer_socket_closed(int fd);

}  // namespace rfa
