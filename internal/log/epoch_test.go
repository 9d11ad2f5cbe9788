package log

import (
	"slices"
	"testing"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/vfs"
)

func appendN(t *testing.T, l *Log, n int, epoch int32) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := l.Append(testBatch(t, 2, t0.UnixMilli(), "k"), OriginClient, epoch); err != nil {
			t.Fatal(err)
		}
	}
}

// The cases of Kafka's LeaderEpochFileCacheTest against the epoch cache.

func newTestEpochCache(t *testing.T) (*epochCache, *vfs.MemFS) {
	t.Helper()
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/p", 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := loadEpochCache(fs, "/p")
	if err != nil {
		t.Fatal(err)
	}
	return c, fs
}

func mustAssign(t *testing.T, c *epochCache, epoch int32, offset int64) {
	t.Helper()
	c.assign(epoch, offset)
	if _, err := c.writeIfDirty(false); err != nil {
		t.Fatal(err)
	}
}

func entries(es ...int64) []EpochEntry {
	var out []EpochEntry
	for i := 0; i < len(es); i += 2 {
		out = append(out, EpochEntry{int32(es[i]), es[i+1]})
	}
	return out
}

func TestEpochCacheEndOffsetFor(t *testing.T) {
	c, _ := newTestEpochCache(t)
	if e, o := c.endOffsetFor(0, 100); e != -1 || o != -1 {
		t.Fatalf("empty cache: %d %d", e, o)
	}
	mustAssign(t, c, 2, 6)
	mustAssign(t, c, 3, 8)
	mustAssign(t, c, 5, 11)
	for _, tc := range []struct {
		ask       int32
		epoch     int32
		endOffset int64
	}{
		{-1, -1, -1}, // undefined epoch asked
		{5, 5, 20},   // the latest epoch ends at the log end offset
		{3, 3, 11},   // ends where the next epoch starts
		{4, 3, 11},   // not held: the largest epoch below, ending where 5 starts (KIP-279)
		{1, 1, 6},    // below every epoch: the asked epoch, the first start offset
		{6, -1, -1},  // above every epoch
	} {
		if e, o := c.endOffsetFor(tc.ask, 20); e != tc.epoch || o != tc.endOffset {
			t.Errorf("endOffsetFor(%d) = (%d, %d), want (%d, %d)", tc.ask, e, o, tc.epoch, tc.endOffset)
		}
	}
}

func TestEpochCacheAssign(t *testing.T) {
	for _, tc := range []struct {
		name   string
		assign []int64 // epoch, offset pairs
		want   []EpochEntry
	}{
		{"keeps the first start offset of an epoch", []int64{2, 6, 2, 7}, entries(2, 6)},
		{"no change when nothing changed", []int64{2, 6, 2, 6}, entries(2, 6)},
		{"epochs need not start at zero", []int64{5, 3, 7, 9}, entries(5, 3, 7, 9)},
		{"start offsets increase: a newer epoch below drops the older", []int64{2, 6, 3, 5}, entries(3, 5)},
		{"same epoch at an earlier offset replaces it", []int64{0, 0, 1, 7, 1, 5}, entries(0, 0, 1, 5)},
		{"an empty leader epoch is replaced by the next at its offset", []int64{4, 0, 5, 100, 6, 100}, entries(4, 0, 6, 100)},
		{"a lower epoch drops the later ones", []int64{1, 0, 2, 5, 3, 9, 2, 7}, entries(1, 0, 2, 7)},
		{"negative epochs are ignored", []int64{1, 0, -1, 4}, entries(1, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newTestEpochCache(t)
			for i := 0; i < len(tc.assign); i += 2 {
				mustAssign(t, c, int32(tc.assign[i]), tc.assign[i+1])
			}
			if got := c.snapshot(); !slices.Equal(got, tc.want) {
				t.Fatalf("cache %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEpochCacheTruncate(t *testing.T) {
	fill := func(t *testing.T) *epochCache {
		c, _ := newTestEpochCache(t)
		mustAssign(t, c, 2, 6)
		mustAssign(t, c, 3, 8)
		mustAssign(t, c, 4, 11)
		return c
	}
	for _, tc := range []struct {
		name string
		do   func(c *epochCache) error
		want []EpochEntry
	}{
		{"from end at a start offset drops it", func(c *epochCache) error { return c.truncateFromEnd(8, true) }, entries(2, 6)},
		{"from end inside an epoch keeps it", func(c *epochCache) error { return c.truncateFromEnd(9, true) }, entries(2, 6, 3, 8)},
		{"from end past everything keeps all", func(c *epochCache) error { return c.truncateFromEnd(100, true) }, entries(2, 6, 3, 8, 4, 11)},
		{"from end below everything clears", func(c *epochCache) error { return c.truncateFromEnd(0, true) }, nil},
		{"from start inside an epoch moves its start", func(c *epochCache) error { return c.truncateFromStart(9, true) }, entries(3, 9, 4, 11)},
		{"from start at a start offset", func(c *epochCache) error { return c.truncateFromStart(8, true) }, entries(3, 8, 4, 11)},
		{"from start past the latest keeps it, moved", func(c *epochCache) error { return c.truncateFromStart(15, true) }, entries(4, 15)},
		{"from start below everything keeps all", func(c *epochCache) error { return c.truncateFromStart(1, true) }, entries(2, 6, 3, 8, 4, 11)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fill(t)
			if err := tc.do(c); err != nil {
				t.Fatal(err)
			}
			if got := c.snapshot(); !slices.Equal(got, tc.want) {
				t.Fatalf("cache %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEpochCachePersists(t *testing.T) {
	c, fs := newTestEpochCache(t)
	mustAssign(t, c, 2, 6)
	mustAssign(t, c, 3, 8)
	if err := c.truncateFromEnd(8, true); err != nil {
		t.Fatal(err)
	}
	mustAssign(t, c, 5, 8)
	again, err := loadEpochCache(fs, "/p")
	if err != nil {
		t.Fatal(err)
	}
	if got := again.snapshot(); !slices.Equal(got, entries(2, 6, 5, 8)) {
		t.Fatalf("reloaded %v", got)
	}
}

// TestTruncateAtLogEndTrimsEpochs: a former leader whose epoch has no record
// (assigned at its log end when it took the lead) drops it when it truncates
// to its log end as a follower, or it would name that epoch in every fetch
// and be told it diverged again and again.
func TestTruncateAtLogEndTrimsEpochs(t *testing.T) {
	l := openTest(t, vfs.NewMem(), clock.NewFake(t0), smallConfig(), false)
	appendN(t, l, 3, 1)
	if err := l.AssignLeaderEpoch(5); err != nil {
		t.Fatal(err)
	}
	if l.LatestEpoch() != 5 {
		t.Fatalf("latest epoch %d", l.LatestEpoch())
	}
	if err := l.TruncateTo(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if l.LatestEpoch() != 1 {
		t.Fatalf("latest epoch %d after truncating at the log end; want 1", l.LatestEpoch())
	}
}

func TestTruncateFullyAndStartAt(t *testing.T) {
	l := openTest(t, vfs.NewMem(), clock.NewFake(t0), smallConfig(), false)
	appendN(t, l, 3, 1)
	if err := l.TruncateFullyAndStartAt(50); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 50 || l.LogEndOffset() != 50 || l.HighWatermark() != 50 || l.LatestEpoch() != -1 {
		t.Fatalf("start %d end %d hw %d epoch %d", l.LogStartOffset(), l.LogEndOffset(), l.HighWatermark(), l.LatestEpoch())
	}
}
