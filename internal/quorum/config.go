package quorum

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/quorum/wal"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// Timing is raft's logical clock: one Tick every Tick of wall time; a
// follower that hears no leader for a random [ElectionTicks, 2×ElectionTicks)
// ticks campaigns; a leader heartbeats every HeartbeatTicks and, with
// CheckQuorum, steps down after ElectionTicks without hearing from a quorum.
type Timing struct {
	Tick           time.Duration
	ElectionTicks  int
	HeartbeatTicks int
}

// DefaultTiming is 100 ms ticks, 10-tick elections, 1-tick heartbeats
// (design §5.5): a failover takes about 1–2 s.
func DefaultTiming() Timing {
	return Timing{Tick: 100 * time.Millisecond, ElectionTicks: 10, HeartbeatTicks: 1}
}

// TimingFromKafka derives raft timing from controller.quorum.election.timeout.ms
// (Kafka default 1000). KRaft randomises a candidate's election timeout in
// [T, 2T); etcd raft randomises a follower's in [ElectionTicks, 2×ElectionTicks)
// ticks, so ElectionTicks×Tick = T with 10 ticks per timeout (100 ms ticks
// at the default). controller.quorum.fetch.timeout.ms (Kafka default 2000,
// how long a KRaft follower waits for its leader) has no separate knob in
// etcd raft: the follower's randomised election timeout plays its part, and
// with the defaults it stays below 2 s.
func TimingFromKafka(electionTimeoutMs int) Timing {
	if electionTimeoutMs < 20 {
		electionTimeoutMs = 20
	}
	return Timing{Tick: time.Duration(electionTimeoutMs) * time.Millisecond / 10, ElectionTicks: 10, HeartbeatTicks: 1}
}

// Config configures a Peer, and a Node around it.
type Config struct {
	FS  vfs.FS
	Dir string // formatted by Bootstrap; holds raft-meta, wal/, snap/
	// NodeID is this node's Kafka node.id; it must match raft-meta.
	NodeID int32
	// ClusterID, if set, must match raft-meta.
	ClusterID string

	StateMachine StateMachine
	Transport    Transport
	Logger       *slog.Logger
	Timing       Timing

	// SnapshotEntries: take a snapshot every this many applied entries
	// (default 10,000). SnapshotKeepEntries: keep this many entries before
	// the snapshot in memory for slow followers (default 5,000).
	SnapshotEntries     uint64
	SnapshotKeepEntries uint64

	// Raft flow control (design §5.5).
	MaxSizePerMsg             uint64 // default 1 MiB
	MaxInflightMsgs           int    // default 256
	MaxUncommittedEntriesSize uint64 // default 64 MiB
	// MaxEntryBytes bounds one proposal (default 8 MiB), well inside the
	// transport's frame limit.
	MaxEntryBytes int

	WALSegmentBytes int64 // default 64 MiB

	// Node only: the clock that drives ticks, and the inbound queue size.
	Clock     clock.Clock
	InboxSize int // default 4096
	// PeerDirectories, Node only and optional, tells Status each peer's
	// metadata directory id (the transport's record of the id each peer
	// connected with); without it peers' ids are left empty.
	PeerDirectories interface{ Known(node int32) string }
}

func (c *Config) setDefaults() error {
	if c.FS == nil || c.Dir == "" {
		return fmt.Errorf("quorum: FS and Dir are required")
	}
	if c.StateMachine == nil || c.Transport == nil {
		return fmt.Errorf("quorum: StateMachine and Transport are required")
	}
	if c.NodeID < 0 {
		return fmt.Errorf("quorum: node id %d is negative", c.NodeID)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Timing == (Timing{}) {
		c.Timing = DefaultTiming()
	}
	if c.Timing.Tick <= 0 || c.Timing.HeartbeatTicks <= 0 || c.Timing.ElectionTicks <= c.Timing.HeartbeatTicks {
		return fmt.Errorf("quorum: bad timing %+v: need Tick > 0 and ElectionTicks > HeartbeatTicks > 0", c.Timing)
	}
	def := func(v *uint64, d uint64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.SnapshotEntries, 10_000)
	def(&c.SnapshotKeepEntries, 5_000)
	def(&c.MaxSizePerMsg, 1<<20)
	def(&c.MaxUncommittedEntriesSize, 64<<20)
	if c.MaxInflightMsgs <= 0 {
		c.MaxInflightMsgs = 256
	}
	if c.MaxEntryBytes <= 0 {
		c.MaxEntryBytes = 8 << 20
	}
	if c.WALSegmentBytes <= 0 {
		c.WALSegmentBytes = wal.DefaultSegmentBytes
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.InboxSize <= 0 {
		c.InboxSize = 4096
	}
	return nil
}
