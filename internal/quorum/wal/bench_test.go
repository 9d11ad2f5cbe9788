package wal

import (
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/gregor-broker/gregor/internal/vfs"
)

// BenchmarkSave is one raft Ready's worth of WAL work on the real disk (in
// the test's temp dir): one 256-byte entry plus its HardState, with and
// without the fsync that Ready.MustSync asks for. The difference is what an
// fsync costs on this disk.
func BenchmarkSave(b *testing.B) {
	for _, sync := range []bool{false, true} {
		name := "nosync"
		if sync {
			name = "fsync"
		}
		b.Run(name, func(b *testing.B) {
			fs := vfs.Default
			w, err := Create(fs, b.TempDir()+"/wal", Options{}, snapMeta(1, 1, 1), hard(1, 0, 1))
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			data := make([]byte, 256)
			b.SetBytes(int64(len(data)))
			i := uint64(2)
			for b.Loop() {
				e := &pb.Entry{Index: new(i), Term: new(uint64(2)), Data: data}
				if err := w.Save(hard(2, 1, i-1), []*pb.Entry{e}, sync); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
