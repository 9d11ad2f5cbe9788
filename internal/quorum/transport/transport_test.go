package transport

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/gregor-broker/gregor/internal/quorum"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// recorder is a Handler that records what it is given.
type recorder struct {
	mu          sync.Mutex
	delivered   []*pb.Message
	unreachable map[uint64]int
	snaps       []raft.SnapshotStatus
}

func newRecorder() *recorder { return &recorder{unreachable: map[uint64]int{}} }

func (r *recorder) Deliver(m *pb.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.delivered = append(r.delivered, m)
}

func (r *recorder) ReportUnreachable(to uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unreachable[to]++
}

func (r *recorder) ReportSnapshot(_ uint64, s raft.SnapshotStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.snaps = append(r.snaps, s)
}

func (r *recorder) count(f func(r *recorder) int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return f(r)
}

// eventually polls cond until it holds or 10 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

type endpoint struct {
	tr  *Transport
	rec *recorder
	ln  net.Listener
}

// pair builds transports for nodes 1 and 2 of cluster c1 listening on
// loopback, with cfg tweaks applied to both.
func pair(t *testing.T, tweak func(id int32, c *Config)) (a, b *endpoint) {
	t.Helper()
	lns := map[int32]net.Listener{1: listen(t), 2: listen(t)}
	peers := map[int32]string{1: lns[1].Addr().String(), 2: lns[2].Addr().String()}
	mk := func(id int32) *endpoint {
		cfg := Config{ClusterID: "c1", NodeID: id, DirectoryID: "dir" + string(rune('0'+id)), Peers: peers}
		if tweak != nil {
			tweak(id, &cfg)
		}
		tr, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		e := &endpoint{tr: tr, rec: newRecorder(), ln: lns[id]}
		tr.Start(e.rec)
		go tr.Serve(lns[id], nil)
		t.Cleanup(func() { tr.Close() })
		return e
	}
	return mk(1), mk(2)
}

func msg(typ pb.MessageType, from, to int32, data []byte) *pb.Message {
	m := &pb.Message{Type: typ.Enum(), From: new(quorum.RaftID(from)), To: new(quorum.RaftID(to)), Term: new(uint64(3))}
	if typ == pb.MsgSnap {
		m.Snapshot = &pb.Snapshot{Data: data, Metadata: &pb.SnapshotMetadata{Index: new(uint64(10)), Term: new(uint64(2)), ConfState: &pb.ConfState{}}}
	} else if data != nil {
		m.Entries = []*pb.Entry{{Data: data}}
	}
	return m
}

func TestDeliversBothLanesAndReportsSnapshots(t *testing.T) {
	a, b := pair(t, nil)
	big := bytes.Repeat([]byte("s"), 8<<20)
	a.tr.Send([]*pb.Message{msg(pb.MsgSnap, 1, 2, big)})
	for i := range 100 {
		a.tr.Send([]*pb.Message{msg(pb.MsgHeartbeat, 1, 2, nil), msg(pb.MsgApp, 1, 2, []byte{byte(i)})})
	}
	eventually(t, "201 messages at node 2", func() bool { return b.rec.count(func(r *recorder) int { return len(r.delivered) }) == 201 })
	eventually(t, "snapshot report", func() bool { return a.rec.count(func(r *recorder) int { return len(r.snaps) }) == 1 })
	b.rec.mu.Lock()
	defer b.rec.mu.Unlock()
	var apps []byte
	var snap *pb.Message
	for _, m := range b.rec.delivered {
		switch m.GetType() {
		case pb.MsgApp:
			apps = append(apps, m.GetEntries()[0].GetData()[0])
		case pb.MsgSnap:
			snap = m
		}
	}
	if len(apps) != 100 || !slices.IsSorted(apps) {
		t.Fatalf("appends arrived out of order or lost: %v", apps)
	}
	if snap == nil || !bytes.Equal(snap.GetSnapshot().GetData(), big) {
		t.Fatal("snapshot lost or damaged")
	}
	if a.rec.snaps[0] != raft.SnapshotFinish {
		t.Fatalf("snapshot report %v", a.rec.snaps[0])
	}
}

func TestUnreachablePeerIsReportedAndRecovers(t *testing.T) {
	a, b := pair(t, nil)
	addr := b.ln.Addr().String()
	b.tr.Close() // node 2 goes down, and with it its listener
	a.tr.Send([]*pb.Message{msg(pb.MsgHeartbeat, 1, 2, nil), msg(pb.MsgSnap, 1, 2, []byte("x"))})
	eventually(t, "unreachable report", func() bool { return a.rec.count(func(r *recorder) int { return r.unreachable[quorum.RaftID(2)] }) > 0 })
	eventually(t, "snapshot failure", func() bool {
		return a.rec.count(func(r *recorder) int { return len(r.snaps) }) == 1
	})
	if a.rec.snaps[0] != raft.SnapshotFailure {
		t.Fatalf("snapshot report %v, want failure", a.rec.snaps[0])
	}
	// Node 2 comes back on the same address: sends get through again.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("could not listen on %s again: %v", addr, err)
	}
	tr2, _ := New(Config{ClusterID: "c1", NodeID: 2, Peers: map[int32]string{1: a.ln.Addr().String(), 2: addr}})
	rec2 := newRecorder()
	tr2.Start(rec2)
	go tr2.Serve(ln, nil)
	defer tr2.Close()
	eventually(t, "delivery after recovery", func() bool {
		a.tr.Send([]*pb.Message{msg(pb.MsgHeartbeat, 1, 2, nil)})
		return rec2.count(func(r *recorder) int { return len(r.delivered) }) > 0
	})
}

func TestQueueFullDropsAndReports(t *testing.T) {
	a, b := pair(t, func(id int32, c *Config) { c.QueueSize = 1 })
	b.tr.Close()
	for range 200 {
		a.tr.Send([]*pb.Message{msg(pb.MsgApp, 1, 2, []byte("x"))})
	}
	eventually(t, "drops", func() bool {
		for _, p := range a.tr.Peers() {
			if p.NodeID == 2 && p.Dropped > 0 {
				return true
			}
		}
		return false
	})
	if a.rec.count(func(r *recorder) int { return r.unreachable[quorum.RaftID(2)] }) == 0 {
		t.Fatal("drops were not reported as unreachable")
	}
}

func TestHandshakeRefusals(t *testing.T) {
	cases := []struct {
		name  string
		tweak func(id int32, c *Config)
		want  string
	}{
		{"other cluster", func(id int32, c *Config) {
			if id == 1 {
				c.ClusterID = "c2"
			}
		}, "cluster"},
		{"not in the address book", func(id int32, c *Config) {
			if id == 2 {
				c.Peers = map[int32]string{2: c.Peers[2], 3: "127.0.0.1:1"}
			}
		}, "address book"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, b := pair(t, tc.tweak)
			eventually(t, "refusal", func() bool {
				a.tr.Send([]*pb.Message{msg(pb.MsgHeartbeat, 1, 2, nil)})
				for _, p := range a.tr.Peers() {
					if p.NodeID == 2 && strings.Contains(p.LastError, tc.want) {
						return true
					}
				}
				return false
			})
			if n := b.rec.count(func(r *recorder) int { return len(r.delivered) }); n != 0 {
				t.Fatalf("%d messages delivered over a refused connection", n)
			}
		})
	}
}

func TestReformattedPeerIsRefused(t *testing.T) {
	fs := vfs.NewMem()
	dirs, err := OpenPeerDirectories(fs, "/meta/peer-directories")
	if err != nil {
		t.Fatal(err)
	}
	fs.MkdirAll("/meta", 0o755)
	fs.SyncDir("/")
	a, b := pair(t, func(id int32, c *Config) {
		if id == 2 {
			c.PeerDirectories = dirs
		}
	})
	a.tr.Send([]*pb.Message{msg(pb.MsgHeartbeat, 1, 2, nil)})
	eventually(t, "first contact", func() bool { return b.rec.count(func(r *recorder) int { return len(r.delivered) }) == 1 })
	// Node 1 comes back with a re-formatted directory (a new directory
	// id) at the same address book entry.
	a.tr.Close()
	tr, _ := New(Config{ClusterID: "c1", NodeID: 1, DirectoryID: "reformatted", Peers: map[int32]string{1: "127.0.0.1:1", 2: b.ln.Addr().String()}})
	rec := newRecorder()
	tr.Start(rec)
	defer tr.Close()
	eventually(t, "refusal of the re-formatted node", func() bool {
		tr.Send([]*pb.Message{msg(pb.MsgVote, 1, 2, nil)})
		p := tr.Peers()[0]
		return strings.Contains(p.LastError, "re-formatted")
	})
	if n := b.rec.count(func(r *recorder) int { return len(r.delivered) }); n != 1 {
		t.Fatalf("%d messages delivered, want only the one before the re-format", n)
	}
	// The refusal survives a restart of node 2 (the record is durable).
	again, err := OpenPeerDirectories(fs.CrashClone(), "/meta/peer-directories")
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Check(1, "reformatted"); err == nil {
		t.Fatal("the recorded directory id was not durable")
	}
	if err := again.Check(1, "dir1"); err != nil {
		t.Fatal(err)
	}
}

// A re-formatted node refuses the connections of peers that knew its old
// directory: a leader's messages meant for the log it lost never reach it
// (a heartbeat committing entries it no longer has would stop its raft).
func TestReformattedNodeRefusesPeersThatKnewIt(t *testing.T) {
	fs := vfs.NewMem()
	fs.MkdirAll("/meta", 0o755)
	fs.SyncDir("/")
	dirs, err := OpenPeerDirectories(fs, "/meta/peer-directories")
	if err != nil {
		t.Fatal(err)
	}
	// Node 1 knew node 2 as "old-dir"; node 2 now runs a new format.
	if err := dirs.Check(2, "old-dir"); err != nil {
		t.Fatal(err)
	}
	a, b := pair(t, func(id int32, c *Config) {
		if id == 1 {
			c.PeerDirectories = dirs
		}
	})
	eventually(t, "refusal by the re-formatted node", func() bool {
		a.tr.Send([]*pb.Message{msg(pb.MsgHeartbeat, 1, 2, nil)})
		for _, p := range a.tr.Peers() {
			if p.NodeID == 2 && strings.Contains(p.LastError, "wiped and re-formatted") {
				return true
			}
		}
		return false
	})
	if n := b.rec.count(func(r *recorder) int { return len(r.delivered) }); n != 0 {
		t.Fatalf("%d messages reached the re-formatted node", n)
	}
}

func TestBadFramesCloseTheConnection(t *testing.T) {
	_, b := pair(t, func(id int32, c *Config) { c.MaxFrameBytes = 1024 })
	for name, frames := range map[string][]byte{
		"oversized": {0, 0, 0x10, 0},
		"forged":    frame(t, msg(pb.MsgHeartbeat, 3, 2, nil)),
		"garbage":   {0, 0, 0, 3, 0xff, 0xff, 0xff},
	} {
		c, err := net.Dial("tcp", b.ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Write(hello{lane: laneMsg, from: quorum.RaftID(1), to: quorum.RaftID(2), clusterID: "c1", directoryID: "d"}.encode())
		if err := readAnswer(c); err != nil {
			t.Fatalf("%s: handshake: %v", name, err)
		}
		c.Write(frames)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("%s: connection not closed by the receiver: %v", name, err)
		}
		c.Close()
	}
	if n := b.rec.count(func(r *recorder) int { return len(r.delivered) }); n != 0 {
		t.Fatalf("%d bad messages delivered", n)
	}
}

func frame(t *testing.T, m *pb.Message) []byte {
	var buf bytes.Buffer
	bw := bufio.NewWriter(&buf)
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	writeFrame(bw, b)
	bw.Flush()
	return buf.Bytes()
}

func TestOtherConnectionsGoToFallback(t *testing.T) {
	tr, _ := New(Config{ClusterID: "c1", NodeID: 1, Peers: map[int32]string{}})
	tr.Start(newRecorder())
	defer tr.Close()
	ln := listen(t)
	got := make(chan []byte, 1)
	go tr.Serve(ln, func(c net.Conn) {
		defer c.Close()
		b := make([]byte, 12)
		io.ReadFull(c, b)
		got <- b
	})
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A Kafka request header: size, api key 18 (ApiVersions), version 3.
	kafka := []byte{0, 0, 0, 8, 0, 18, 0, 3, 0, 0, 0, 7}
	c.Write(kafka)
	select {
	case b := <-got:
		if !bytes.Equal(b, kafka) {
			t.Fatalf("fallback read %v, want %v", b, kafka)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("fallback never called")
	}
}

func TestContextCancelledDialDoesNotLeak(t *testing.T) {
	// A peer that accepts but never answers the handshake: Close must
	// still return promptly.
	ln := listen(t)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	tr, _ := New(Config{ClusterID: "c1", NodeID: 1, Peers: map[int32]string{2: ln.Addr().String()}, DialTimeout: 30 * time.Second,
		Dial: (&net.Dialer{}).DialContext})
	tr.Start(newRecorder())
	tr.Send([]*pb.Message{msg(pb.MsgHeartbeat, 1, 2, nil)})
	done := make(chan struct{})
	go func() { tr.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(40 * time.Second):
		t.Fatal("Close hung on a handshake that never completes")
	}
}
