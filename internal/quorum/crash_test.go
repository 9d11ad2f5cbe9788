package quorum_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/gregor-broker/gregor/internal/quorum"
	"github.com/gregor-broker/gregor/internal/quorum/quorumtest"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// Crash tests for the storage a Peer drives (WAL + snapshots + compaction +
// pruning) and for Bootstrap: run the workload on a MemFS that fails every
// operation from the k-th on, for every k, then recover from the durable
// state (and a torn variant) and check nothing acknowledged was lost.

type nopTransport struct{}

func (nopTransport) Send([]*pb.Message) {}

func formattedFS(t *testing.T, voters ...int32) *vfs.MemFS {
	t.Helper()
	fs := vfs.NewMem()
	fs.MkdirAll(filepath.Dir(metaDir), 0o755)
	fs.SyncDir("/")
	if err := quorum.Bootstrap(fs, metaDir, quorum.BootstrapConfig{ClusterID: "c1", NodeID: 0, Voters: voters}); err != nil {
		t.Fatal(err)
	}
	return fs
}

func singlePeerConfig(fs vfs.FS, sm quorum.StateMachine) quorum.Config {
	return quorum.Config{FS: fs, Dir: metaDir, NodeID: 0, StateMachine: sm, Transport: nopTransport{},
		SnapshotEntries: 7, SnapshotKeepEntries: 2, WALSegmentBytes: 512}
}

// peerWorkload proposes on a single-voter Peer (which commits and applies
// within Propose), taking snapshots every 7 entries, with clean restarts.
// acked is what the state machine had applied after the last successful
// Propose; proposed is every proposal in order.
func peerWorkload(fs vfs.FS, seed uint64, steps int, acked, proposed *[]string) error {
	rng := rand.New(rand.NewPCG(seed, 3))
	sm := quorumtest.NewLogSM()
	p, err := quorum.NewPeer(singlePeerConfig(fs, sm), nil)
	if err != nil {
		return err
	}
	for step := range steps {
		if rng.IntN(15) == 0 {
			p.Close()
			sm = quorumtest.NewLogSM()
			if p, err = quorum.NewPeer(singlePeerConfig(fs, sm), nil); err != nil {
				return err
			}
			continue
		}
		var batch [][]byte
		for i := range 1 + rng.IntN(3) {
			d := fmt.Sprintf("p%d-%d", step, i)
			*proposed = append(*proposed, d)
			batch = append(batch, []byte(d))
		}
		if _, err := p.Propose(batch); err != nil {
			return err
		}
		*acked = sm.Data()
	}
	return p.Close()
}

func TestPeerCrashAtEveryStep(t *testing.T) {
	seeds, steps := 2, 40
	if raceEnabled {
		seeds, steps = 1, 15 // single goroutine; the race detector only slows it
	}
	if os.Getenv("GREGOR_LONG") != "" {
		seeds, steps = 20, 120
	}
	for s := range seeds {
		seed := uint64(s + 1)
		base := formattedFS(t, 0)
		counter := vfs.NewCountingInjector()
		var acked, proposed []string
		if err := peerWorkload(vfs.NewInjecting(base.CrashClone(), counter), seed, steps, &acked, &proposed); err != nil {
			t.Fatalf("seed %d without faults: %v", seed, err)
		}
		n := counter.Count()
		for k := range n {
			mem := base.CrashClone()
			acked, proposed = nil, nil
			err := peerWorkload(vfs.NewInjecting(mem, vfs.FromIndex(k)), seed, steps, &acked, &proposed)
			if err != nil && !errors.Is(err, vfs.ErrInjected) {
				t.Fatalf("seed %d k %d: %v", seed, k, err)
			}
			torn := rand.New(rand.NewPCG(seed, uint64(k)))
			for name, fs := range map[string]*vfs.MemFS{"clean": mem.CrashClone(), "torn": mem.CrashCloneTorn(torn)} {
				sm := quorumtest.NewLogSM()
				p, err := quorum.NewPeer(singlePeerConfig(fs, sm), nil)
				if err != nil {
					t.Fatalf("seed %d k %d/%d %s: recovery: %v", seed, k, n, name, err)
				}
				got := sm.Data()
				if len(got) < len(acked) || !slices.Equal(got[:len(acked)], acked) {
					t.Fatalf("seed %d k %d/%d %s: recovered %v\nacknowledged %v", seed, k, n, name, got, acked)
				}
				if len(got) > len(proposed) || !slices.Equal(got, proposed[:len(got)]) {
					t.Fatalf("seed %d k %d/%d %s: recovered %v, not a prefix of the proposals %v", seed, k, n, name, got, proposed)
				}
				if _, err := p.Propose([][]byte{[]byte("after")}); err != nil {
					t.Fatalf("seed %d k %d %s: propose after recovery: %v", seed, k, name, err)
				}
				p.Close()
			}
		}
	}
}

func TestBootstrapCrashAtEveryStep(t *testing.T) {
	cfg := quorum.BootstrapConfig{ClusterID: "c1", NodeID: 0, Voters: []int32{0, 1, 2}, Data: []byte("initial")}
	prep := func() *vfs.MemFS {
		fs := vfs.NewMem()
		fs.MkdirAll(filepath.Dir(metaDir), 0o755)
		fs.SyncDir("/")
		return fs
	}
	counter := vfs.NewCountingInjector()
	if err := quorum.Bootstrap(vfs.NewInjecting(prep(), counter), metaDir, cfg); err != nil {
		t.Fatal(err)
	}
	open := func(fs vfs.FS) (*quorumtest.LogSM, error) {
		sm := &restoreSM{}
		p, err := quorum.NewPeer(quorum.Config{FS: fs, Dir: metaDir, NodeID: 0, StateMachine: sm, Transport: nopTransport{}}, nil)
		if err == nil {
			p.Close()
			if string(sm.data) != "initial" {
				return nil, fmt.Errorf("restored %q, want the bootstrap data", sm.data)
			}
		}
		return nil, err
	}
	for k := range counter.Count() {
		mem := prep()
		err := quorum.Bootstrap(vfs.NewInjecting(mem, vfs.FromIndex(k)), metaDir, cfg)
		if err != nil && !errors.Is(err, vfs.ErrInjected) {
			t.Fatalf("k %d: %v", k, err)
		}
		fs := mem.CrashClone()
		_, err = open(fs)
		switch {
		case err == nil:
		case errors.Is(err, quorum.ErrNotFormatted):
			// Never half formatted: formatting again must work.
			if err := quorum.Bootstrap(fs, metaDir, cfg); err != nil {
				t.Fatalf("k %d: format after an interrupted format: %v", k, err)
			}
			if _, err := open(fs); err != nil {
				t.Fatalf("k %d: open after re-format: %v", k, err)
			}
		default:
			t.Fatalf("k %d: after a crash during format: %v", k, err)
		}
	}
}

// restoreSM records the snapshot data it was restored from.
type restoreSM struct{ data []byte }

func (r *restoreSM) Apply(quorum.Entry) error                    { return nil }
func (r *restoreSM) Snapshot() ([]byte, error)                   { return r.data, nil }
func (r *restoreSM) Restore(_ quorum.EntryID, data []byte) error { r.data = data; return nil }
