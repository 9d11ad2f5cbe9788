package log

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// A sealed segment's index file found inconsistent at load (cut short, too
// long, garbage, entries past the log, missing) is rebuilt from the .log, as
// Kafka's sanity check makes it rebuild it, and never stops the start: the
// log loads, every record is read back at its offset and found by its
// timestamp, and after the load's sync the file holds what it held before
// the damage. An index out of order in its middle passes the load's check;
// the lookups that read it ignore it, and reads are still right.
func TestDamagedIndexFilesAreRebuilt(t *testing.T) {
	fs := durableDirFS(t)
	clk := clock.NewFake(t0)
	cfg := indexedConfig()
	l := openAt(t, fs, clk, cfg, false, 0, -1)
	want := appendIndexed(t, l, 6000, t0.UnixMilli())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	leo := l.LogEndOffset()
	seg := l.segments()[1] // sealed, with a segment on either side
	good := map[string][]byte{}
	for _, sfx := range []string{IndexSuffix, TimeIndexSuffix} {
		b, err := vfs.ReadFile(fs, seg.path(sfx))
		if err != nil || len(b) < 100*offsetEntrySize {
			t.Fatalf("%s: %d bytes, %v", seg.path(sfx), len(b), err)
		}
		good[sfx] = b
	}
	rng := rand.New(rand.NewPCG(1, 2))
	garbage := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	type damage struct {
		name    string
		sfx     string
		apply   func(b []byte) []byte // nil: the file is removed
		rebuilt bool                  // the load's check finds it
	}
	es := func(sfx string) int {
		if sfx == IndexSuffix {
			return offsetEntrySize
		}
		return timeEntrySize
	}
	var cases []damage
	for _, sfx := range []string{IndexSuffix, TimeIndexSuffix} {
		n := es(sfx)
		cases = append(cases,
			damage{"cut mid-entry", sfx, func(b []byte) []byte { return b[:len(b)-3] }, true},
			damage{"cut by whole entries", sfx, func(b []byte) []byte { return b[:len(b)/2/n*n] }, true},
			damage{"emptied", sfx, func(b []byte) []byte { return nil }, true},
			damage{"padded with zeros", sfx, func(b []byte) []byte { return append(b, make([]byte, 64*n)...) }, true},
			damage{"padded with garbage", sfx, func(b []byte) []byte { return append(b, garbage(64*n)...) }, true},
			damage{"garbage", sfx, func(b []byte) []byte { return garbage(len(b)) }, true},
			damage{"missing", sfx, nil, true},
			damage{"out of order in the middle", sfx, func(b []byte) []byte {
				c := bytes.Clone(b)
				i := len(c) / n / 2 * n
				tmp := bytes.Clone(c[i : i+n])
				copy(c[i:i+n], c[i+n:i+2*n])
				copy(c[i+n:i+2*n], tmp)
				return c
			}, false},
		)
	}
	cases = append(cases, damage{"last entry past the log's end", IndexSuffix, func(b []byte) []byte {
		c := bytes.Clone(b)
		binary.BigEndian.PutUint32(c[len(c)-4:], uint32(seg.size.Load()+100))
		return c
	}, true})
	cases = append(cases, damage{"last entry past the next segment", TimeIndexSuffix, func(b []byte) []byte {
		c := bytes.Clone(b)
		binary.BigEndian.PutUint32(c[len(c)-4:], 1<<30)
		return c
	}, true})

	for _, c := range cases {
		for _, clean := range []bool{true, false} {
			what := c.sfx + " " + c.name
			if !clean {
				what += ", unclean start below the recovery point"
			}
			img := fs.CrashClone()
			path := seg.path(c.sfx)
			if c.apply == nil {
				if err := img.Remove(path); err != nil {
					t.Fatal(err)
				}
			} else if err := writeWhole(img, path, c.apply(good[c.sfx])); err != nil {
				t.Fatal(err)
			}
			l := openAt(t, img, clk, cfg, clean, leo, -1)
			if got := l.NeedsSync(); got != c.rebuilt {
				t.Fatalf("%s: a rebuild pending after the load: %v, want %v", what, got, c.rebuilt)
			}
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			checkIndexedLog(t, img, l, want, what)
			if c.rebuilt {
				for _, sfx := range []string{IndexSuffix, TimeIndexSuffix} {
					if b, err := vfs.ReadFile(img.CrashClone(), seg.path(sfx)); err != nil || !bytes.Equal(b, good[sfx]) {
						t.Fatalf("%s: %s after the rebuild: %d bytes (%v), want the %d it held", what, sfx, len(b), err, len(good[sfx]))
					}
				}
			} else {
				ix := &l.segments()[1].index.index
				if c.sfx == TimeIndexSuffix {
					ix = &l.segments()[1].timeIndex.index
				}
				if !ix.bad.Load() {
					t.Fatalf("%s: the lookups read the index and did not find it out of order", what)
				}
			}
			l.Close()
		}
	}
}

func writeWhole(fs vfs.FS, path string, b []byte) error {
	f, err := fs.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return f.Close()
}
