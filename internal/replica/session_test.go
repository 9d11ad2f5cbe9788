package replica

import (
	"testing"
	"time"
)

// sessionClock is a settable clock for the session cache.
type sessionClock struct{ t time.Time }

func (c *sessionClock) now() time.Time          { return c.t }
func (c *sessionClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// fill creates a session of size partitions and gives it that many.
func fill(t *testing.T, c *SessionCache, privileged bool, size int) *Session {
	t.Helper()
	s := c.Create(privileged, size)
	if s == nil {
		t.Fatalf("no room for a session (privileged %v, %d partitions)", privileged, size)
	}
	s.Lock()
	for i := range size {
		s.Upsert(SessionPartition{Key: SessionKey{Topic: "t", Partition: int32(i)}})
	}
	s.Unlock()
	return s
}

func touch(c *SessionCache, ss ...*Session) {
	for _, s := range ss {
		s.Lock()
		c.Touch(s)
		s.Unlock()
	}
}

func alive(c *SessionCache, s *Session) bool { return c.Get(s.ID) == s }

// KIP-227's eviction rules, case by case (Kafka's FetchSessionCache.tryEvict).
func TestSessionCacheEviction(t *testing.T) {
	clk := &sessionClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}

	t.Run("young sessions in use are kept", func(t *testing.T) {
		c := NewSessionCache(2, clk.now)
		a, b := fill(t, c, false, 1), fill(t, c, false, 1)
		// However big, a new consumer session may not evict sessions
		// created less than MinSessionEvictionAge ago.
		if s := c.Create(false, 100); s != nil {
			t.Fatal("a new consumer session evicted a young one")
		}
		if !alive(c, a) || !alive(c, b) {
			t.Fatal("a young session was evicted")
		}
	})

	t.Run("a stale session goes first", func(t *testing.T) {
		c := NewSessionCache(3, clk.now)
		a, b, f := fill(t, c, false, 5), fill(t, c, false, 1), fill(t, c, true, 9)
		clk.advance(MinSessionEvictionAge / 2)
		touch(c, a, f)
		clk.advance(MinSessionEvictionAge/2 + time.Second)
		// b has not been used for more than MinSessionEvictionAge: any new
		// session, even a smaller unprivileged one, takes its place.
		if s := c.Create(false, 1); s == nil || alive(c, b) || !alive(c, a) || !alive(c, f) {
			t.Fatalf("stale eviction: new %v, a %v b %v f %v", s != nil, alive(c, a), alive(c, b), alive(c, f))
		}
		if _, _, ev := c.Stats(); ev != 1 {
			t.Fatalf("%d evictions counted, want 1", ev)
		}
	})

	t.Run("an old session with fewer partitions gives way", func(t *testing.T) {
		c := NewSessionCache(3, clk.now)
		small, mid, big := fill(t, c, false, 2), fill(t, c, false, 3), fill(t, c, false, 8)
		clk.advance(MinSessionEvictionAge + time.Second)
		touch(c, small, mid, big) // in use, and now old enough to be evictable
		if s := c.Create(false, 2); s != nil {
			t.Fatal("a new session evicted one of the same size")
		}
		if s := c.Create(false, 4); s == nil || alive(c, small) || !alive(c, mid) || !alive(c, big) {
			t.Fatalf("a bigger session should evict the smallest old one: small %v mid %v big %v",
				alive(c, small), alive(c, mid), alive(c, big))
		}
	})

	t.Run("followers' sessions are privileged", func(t *testing.T) {
		c := NewSessionCache(2, clk.now)
		cons, foll := fill(t, c, false, 50), fill(t, c, true, 1)
		// A follower evicts a young consumer session, however big.
		foll2 := fill(t, c, true, 1)
		if alive(c, cons) || !alive(c, foll) {
			t.Fatalf("follower session: consumer %v, follower %v", alive(c, cons), alive(c, foll))
		}
		// Young privileged sessions are safe from everyone.
		if s := c.Create(true, 10); s != nil {
			t.Fatal("a young follower session was evicted")
		}
		if s := c.Create(false, 10); s != nil {
			t.Fatal("a consumer session evicted a follower's")
		}
		// Old enough, a privileged session gives way to a bigger privileged
		// one, never to a consumer's (privilege weighs first).
		clk.advance(MinSessionEvictionAge + time.Second)
		touch(c, foll, foll2)
		if s := c.Create(false, 100); s != nil {
			t.Fatal("a consumer session evicted an old follower session in use")
		}
		if s := c.Create(true, 2); s == nil || alive(c, foll) || !alive(c, foll2) {
			t.Fatal("an old follower session with one partition was not evicted by a bigger follower session")
		}
	})

	t.Run("touch after eviction is ignored", func(t *testing.T) {
		c := NewSessionCache(1, clk.now)
		a := fill(t, c, false, 3)
		clk.advance(MinSessionEvictionAge + time.Second)
		if c.Create(true, 1) == nil {
			t.Fatal("a stale session was not evicted")
		}
		touch(c, a)
		if n, parts, _ := c.Stats(); n != 1 || parts != 1 {
			t.Fatalf("%d sessions caching %d partitions, want 1 and 1", n, parts)
		}
	})
}
