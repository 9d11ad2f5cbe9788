// Package transport carries etcd raft messages between the members of
// Gregor's metadata quorum over TCP, on the CONTROLLER listener.
//
// # Sharing the CONTROLLER listener with Kafka RPCs
//
// The controller listener also serves Kafka-framed controller RPCs
// (BrokerRegistration, BrokerHeartbeat, AlterPartition). A raft connection
// is told apart by its first four bytes, the magic "GRFT": read as a Kafka
// request's int32 size they are 1,196,574,292, above any
// socket.request.max.bytes, so no Kafka client ever starts a connection with
// them. Serve peeks those four bytes (Kafka clients speak first, so peeking
// never stalls a client) and hands every other connection, bytes intact, to
// the fallback the caller gives it (the Kafka server); HandleConn serves one
// connection that a caller's own listener already routed here.
//
// # Wire format
//
// The dialer opens with
//
//	"GRFT" | u8 version (2) | u8 lane | u64 from raft id | u64 to raft id |
//	u16 n | cluster id | u16 n | directory id | u16 n | peer directory id
//
// and the acceptor answers u8 status (0 accepted, 1 rejected) | u16 n |
// reason. The acceptor rejects another cluster id, a sender not in its
// address book, a connection not meant for its raft id, and a sender whose
// directory id differs from the one it first saw from that node (recorded in
// a small file, see PeerDirectories): a voter whose metadata directory was
// wiped and re-formatted has forgotten its votes, and must not take part
// until it is removed and re-added. The peer directory id is the acceptor's
// as the dialer first saw it (empty if never): an acceptor whose own
// directory id differs refuses too, so a re-formatted voter never takes
// messages meant for the log it lost (a leader's heartbeat committing
// entries it no longer has would otherwise stop it). Then the dialer sends frames
//
//	u32 length | proto.Marshal(raftpb.Message)
//
// (big-endian); the acceptor drops the connection on a frame above its
// lane's bound, undecodable bytes, or a message whose From or To disagrees
// with the handshake, and hands each message to Handler.Deliver.
//
// # Lanes and loss
//
// Each peer gets two outbound connections, each owned by one sender
// goroutine with a bounded queue: lane 0 for every message but MsgSnap, lane
// 1 for MsgSnap alone, so heartbeats never wait behind a large snapshot.
// Messages are marshalled in Send, on the raft goroutine (raftpb messages
// share entries with raft's log). Raft tolerates loss, so nothing blocks:
// a full queue drops the message and reports the peer unreachable; a failed
// dial or write closes the connection, drops what was queued, reports the
// peer unreachable, and retries with exponential backoff (50 ms to 2 s).
// Every MsgSnap ends in exactly one ReportSnapshot: finish once its frame is
// written and flushed, failure if it was dropped or the write failed.
//
// The address book is the static voter list (controller.quorum.voters);
// learners joining through the metadata log (phase 2) will need it to grow.
//
// # Goroutines
//
// Two senders per peer (started by Start), one accept loop per Serve, one
// reader per inbound connection. Close stops and waits for all of them.
package transport
