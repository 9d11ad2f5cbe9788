// Package quorum is Gregor's metadata quorum: a replicated log on etcd raft
// (go.etcd.io/raft/v3, driven through RawNode) with Gregor's own WAL and
// snapshot files. The layer above (the controller and its metadata records)
// implements StateMachine; this package decides nothing about metadata.
//
// # Pieces
//
//   - Peer: the synchronous core. One RawNode, its MemoryStorage, the WAL
//     (package wal), the snapshot files and the StateMachine; no goroutines,
//     clocks or channels. Inputs (Tick, Step, Propose, ReadIndex, Report…)
//     feed raft; Process handles each Ready. A simulation drives Peers
//     directly (package quorumtest).
//   - Node: one Peer on its own goroutine, the raft loop, with the API the
//     rest of the process uses: Propose / WaitCommitted / ProposeAndWait,
//     WaitApplied, ReadIndex / CaughtUp, Leadership / LeaderChanged, Status,
//     and Deliver / ReportUnreachable / ReportSnapshot for the transport.
//   - Transport: how messages leave (package transport: TCP on the
//     CONTROLLER listener; quorumtest: in memory).
//   - Bootstrap: formats a directory (what `gregor format` runs).
//
// # The Ready loop (raft's doc.go, synchronous storage writes)
//
// For each Ready, strictly in order: persist (an incoming snapshot first:
// its file, then a WAL marker; then entries and HardState in one WAL write,
// fsynced iff Ready.MustSync), mirror into MemoryStorage, send the messages,
// apply the snapshot and then the committed entries, take a snapshot if
// SnapshotEntries have been applied since the last one, Advance. Messages
// leave only after what they vouch for is durable; raft itself holds back
// the ones that need it (MsgAppResp, votes) until that Ready.
//
// Raft is configured with PreVote, CheckQuorum (a partitioned leader steps
// down after an election timeout), StepDownOnRemoval and
// DisableProposalForwarding (only the leader accepts proposals; a follower
// answers *NotLeaderError at once), MaxSizePerMsg 1 MiB, MaxInflightMsgs 256,
// MaxUncommittedEntriesSize 64 MiB. A single-voter quorum campaigns when it
// opens, so `gregor serve` alone leads at once.
//
// # Invariants
//
//   - MemoryStorage holds exactly what is durable: it is updated only after
//     the WAL write it mirrors returned.
//   - StateMachine.Restore is called once at open (the newest snapshot) and
//     for every snapshot installed from the leader; Apply then sees each
//     committed non-empty normal entry in index order, exactly once per
//     process lifetime after the last Restore (raft's Config.Applied is the
//     snapshot index, so entries after it are replayed at every start).
//   - A proposal's EntryID is (index, term) as appended by the leader. It
//     commits iff this node later applies that exact EntryID; it is lost
//     iff another term commits at its index, or a later term commits below
//     it (log terms never decrease); WaitCommitted reports which.
//   - Membership changes (EntryConfChange/V2) are always passed to
//     RawNode.ApplyConfChange when applied, never to the StateMachine.
//   - After any storage or state machine error the Peer stops (Err) and the
//     Node's loop ends: an fsync that failed is never retried.
//   - Raft ids are Kafka node ids plus one (raft reserves 0); ids are never
//     reused.
//
// # On-disk format
//
// A metadata directory (e.g. <metadata.log.dir>/__cluster_metadata-0)
// holds:
//
//   - raft-meta: "key=value" lines: version=1, cluster.id, node.id,
//     raft.id (node.id+1), directory.id (random per format). Written once,
//     by Bootstrap.
//   - wal/: the WAL (see package wal): segments of CRC-32C framed Entry,
//     HardState and SnapshotMarker records.
//   - snap/<term>-<index>.snap (16 hex digits each): "GRSN" | u8 version 1 |
//     u32 crc32c(body) | body = proto.Marshal(raftpb.Snapshot), the
//     StateMachine's bytes with index, term and ConfState. Written to .tmp,
//     fsynced, renamed, directory fsynced.
//   - peer-directories (written by the transport): "node directory-id"
//     lines, the directory id each peer first connected with.
//
// Bootstrap writes raft-meta, a snapshot at index 1, term 1 whose ConfState
// lists the initial voters and whose data is the caller's initial state (the
// same bytes on every voter), and a WAL whose marker points at it with
// HardState{term 1, commit 1}; it writes them in <dir>.format.tmp and renames
// that into place, so a crash leaves the directory unformatted or formatted.
// Open refuses a directory with some of these but not all
// (ErrVoteAmnesia: a voter that lost its WAL may vote twice in one term),
// and one formatted for another node or cluster (ErrCorrupt).
//
// Taking a snapshot at applied index i: the file (durable), then a WAL
// segment starting with a marker that carries the HardState and every entry
// after i (durable), and only then older segments are deleted (etcd #10219);
// MemoryStorage.CreateSnapshot and Compact keep SnapshotKeepEntries entries
// before i for slow followers; snapshot files other than the newest and the
// one before are deleted. An installed snapshot is written the same way,
// with the Ready's entries and HardState in its marker.
//
// # Wiring (what the composition root does)
//
//	meta, _ := quorum.ReadMeta(fs, dir)        // after quorum.Bootstrap, once
//	dirs, _ := transport.OpenPeerDirectories(fs, dir+"/peer-directories")
//	tr, _ := transport.New(transport.Config{ClusterID: meta.ClusterID, NodeID: id,
//		DirectoryID: meta.DirectoryID, Peers: voterAddrs, PeerDirectories: dirs})
//	n, _ := quorum.Open(quorum.Config{FS: fs, Dir: dir, NodeID: id,
//		StateMachine: sm, Transport: tr, PeerDirectories: dirs,
//		Timing: quorum.TimingFromKafka(electionMs)})
//	tr.Start(n)
//	go tr.Serve(controllerListener, kafkaControllerRPCs)
//
// Close the Node, then the Transport.
//
// # Goroutines
//
// A Node has one goroutine, the raft loop, which owns the Peer (and so the
// RawNode, the WAL and the StateMachine calls) and the waiters. Public
// methods post closures to it; Deliver and the reports never block (a full
// inbox drops the message, which raft tolerates). StateMachine methods and
// Transport.Send run on the raft loop and must not call back into the Node
// synchronously. The clock drives ticks through Clock.AfterFunc; a tick
// that finds the loop busy is dropped, slowing raft's clock rather than
// queueing.
package quorum
