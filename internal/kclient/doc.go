// Package kclient sends Kafka requests from one Gregor node to another: the
// controller RPCs a broker sends to the active controller (registration,
// heartbeats, forwarded admin requests) and, with replication, follower
// fetches. It is a small client of the Kafka wire protocol, not a Kafka
// client library: a request goes out exactly as built, at the version it
// carries (no ApiVersions negotiation: every node of a cluster serves the
// versions its peers send, and a forwarded request must keep its client's
// version), and its response comes back decoded at that version.
//
// # Connections
//
// A Pool keeps idle connections per address and uses each for one request
// at a time: a request takes an idle connection or dials a new one, and
// gives it back once its response is read. A request whose context ends, or
// whose connection fails, closes that connection (a late response could
// otherwise be read as the next request's). Frames are bounded
// (MaxResponseBytes) before anything is allocated for them.
//
// # Concurrency
//
// A Pool is safe for concurrent use; Close closes every idle connection and
// makes later requests fail.
package kclient
