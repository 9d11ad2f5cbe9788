package cluster

import (
	"bytes"
	"encoding/base64"
	"path/filepath"
	"testing"

	"github.com/gregor-broker/gregor/internal/logdirs"
	"github.com/gregor-broker/gregor/internal/vfs"
)

func TestDeriveClusterID(t *testing.T) {
	a := DeriveClusterID(map[int32]string{1: "127.0.0.1:9093", 2: "127.0.0.1:9193", 3: "127.0.0.1:9293"})
	b := DeriveClusterID(map[int32]string{3: "127.0.0.1:9293", 1: "127.0.0.1:9093", 2: "127.0.0.1:9193"})
	if a != b {
		t.Fatalf("the id depends on map order: %s vs %s", a, b)
	}
	if err := logdirs.ValidateClusterID(a); err != nil || a[0] == '-' {
		t.Fatalf("%s is not a usable Kafka cluster id: %v", a, err)
	}
	for _, other := range []map[int32]string{
		{1: "127.0.0.1:9093", 2: "127.0.0.1:9193"},
		{1: "127.0.0.1:9093", 2: "127.0.0.1:9193", 3: "127.0.0.2:9293"},
		{1: "127.0.0.1:9093", 2: "127.0.0.1:9193", 4: "127.0.0.1:9293"},
	} {
		if DeriveClusterID(other) == a {
			t.Errorf("voters %v get the same id as another voter set", other)
		}
	}
	// Many voter sets: never a reserved id or a leading '-'.
	for i := range 2000 {
		id := DeriveClusterID(map[int32]string{int32(i): "h:1"})
		raw, _ := base64.RawURLEncoding.DecodeString(id)
		if id[0] == '-' || len(raw) != 16 || bytes.Equal(raw[:8], make([]byte, 8)) {
			t.Fatalf("voter %d: id %s", i, id)
		}
	}
}

// Every voter formats the same bootstrap snapshot, byte for byte, when
// given the same cluster id and voters: raft's log starts identical
// everywhere.
func TestFormatIsIdenticalOnEveryVoter(t *testing.T) {
	fs := vfs.NewMem()
	voters := []int32{1, 2, 3}
	id := DeriveClusterID(map[int32]string{1: "a:1", 2: "b:1", 3: "c:1"})
	var snaps [][]byte
	for _, n := range voters {
		dir := filepath.Join("/n", string(rune('0'+n)))
		if err := fs.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := Format(fs, n, voters)(dir, id); err != nil {
			t.Fatal(err)
		}
		names, err := fs.List(filepath.Join(MetadataDir(dir), "snap"))
		if err != nil || len(names) != 1 {
			t.Fatalf("node %d snapshots %v, %v", n, names, err)
		}
		data, err := vfs.ReadFile(fs, filepath.Join(MetadataDir(dir), "snap", names[0]))
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, data)
	}
	for i := 1; i < len(snaps); i++ {
		if !bytes.Equal(snaps[0], snaps[i]) {
			t.Fatalf("node %d's bootstrap snapshot differs from node 1's", voters[i])
		}
	}
	if err := Format(fs, 1, voters)("/n/1", id); err == nil {
		t.Fatal("formatting a formatted metadata log again succeeded")
	}
}

func TestEpochFile(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/m", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
	if e, _, err := ReadEpoch(fs, "/m"); e != -1 || err != nil {
		t.Fatalf("no file: %d, %v", e, err)
	}
	// A clean-shutdown epoch is presented once: the file goes before the
	// broker registers, durably, so a crash after that is unclean.
	if err := WriteEpoch(fs, "/m", 42, EpochCleanShutdown); err != nil {
		t.Fatal(err)
	}
	crashed := fs.CrashClone()
	if e, r, err := ReadEpoch(crashed, "/m"); e != 42 || r != EpochCleanShutdown || err != nil {
		t.Fatalf("after a crash: %d %s %v", e, r, err)
	}
	if e, _, err := ReadEpoch(fs, "/m"); e != 42 || err != nil {
		t.Fatalf("first read: %d, %v", e, err)
	}
	if e, _, _ := ReadEpoch(fs.CrashClone(), "/m"); e != -1 {
		t.Fatalf("the clean-shutdown epoch survives a crash after it was read: %d", e)
	}
	// An epoch written under gregor.ack.fsync stays for every later start.
	if err := WriteEpoch(fs, "/m", 50, EpochAckFsync); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if e, r, err := ReadEpoch(fs, "/m"); e != 50 || r != EpochAckFsync || err != nil {
			t.Fatalf("ack-fsync epoch: %d %s %v", e, r, err)
		}
	}
	if err := vfs.WriteFileAtomic(fs, "/m/"+EpochFile, []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	if e, _, err := ReadEpoch(fs, "/m"); e != -1 || err == nil {
		t.Fatalf("garbage: %d, %v", e, err)
	}
}
