// Package kclient sends Kafka requests from one Gregor node to another: the
// controller RPCs a broker sends to the active controller (registration,
// heartbeats, forwarded admin requests) and follower fetches. It is a small client of the Kafka wire protocol, not a Kafka
// client library: a request goes out exactly as built, at the version it
// carries (no ApiVersions negotiation: every node of a cluster serves the
// versions its peers send, and a forwarded request must keep its client's
// version), and its response comes back decoded at that version.
//
// A broker keeps two Pools: one to the active controller's CONTROLLER
// listener (controller RPCs, with that listener's TLS) and one to the other
// brokers' inter-broker listener (follower fetches and other
// broker-to-broker requests, with that listener's TLS and SASL). kclient
// reads no configuration: the caller injects the dialer (which does TLS)
// and the SASL mechanism.
//
// # Connections
//
// A Pool keeps idle connections per address and uses each for one request
// at a time: a request takes an idle connection or dials a new one, and
// gives it back once its response is read. An idle connection the peer
// closed meanwhile (it restarted) is dropped when taken, found by a peek
// that does not wait (Linux; elsewhere its request fails instead), so the
// first request after a peer's restart does not fail with EOF. With Config.SASL a new
// connection authenticates before its first request (SaslHandshake v1,
// SaslAuthenticate v2 until the mechanism is done); a failed exchange
// fails that request with the broker's error and message and closes the
// connection. A session lifetime the broker announces (KIP-368) retires
// the connection at 85% of it: it is not taken from the idle list after
// that, and the next request dials afresh, so the broker never closes a
// connection under a request for an expired session. A request whose context ends, or
// whose connection fails, closes that connection (a late response could
// otherwise be read as the next request's). Frames are bounded
// (MaxResponseBytes) before anything is allocated for them. RequestReusing
// reads the response into the caller's buffer when it fits and hands back
// the buffer used: the response's byte fields alias it, so a follower's
// fetcher reads every answer into one buffer instead of allocating one per
// answer (those buffers were nearly all the bytes a follower allocated).
// A response body of 256 KiB or more still to come over a plain TCP socket
// (Linux) is read with the socket's SO_RCVLOWAT set to the bytes missing
// whenever the reader must wait, so the kernel wakes it about once per
// answer instead of once per 64 KiB loopback segment; the mark is back at
// 1 before the connection is reused (a small answer after a large one is
// not held back). Under TLS the bytes still needed from the socket are not
// the bytes the reader still needs, so TLS connections read as they
// arrive.
//
// # Concurrency
//
// A Pool is safe for concurrent use; Close closes every idle connection and
// makes later requests fail.
package kclient
