package replica

import (
	"sync"
	"time"
)

// SessionKey names a partition inside a fetch session: by topic name (fetch
// v7-v12) or topic id (v13+).
type SessionKey struct {
	Topic     string
	TopicID   [16]byte
	Partition int32
}

// SessionPartition is what an incremental fetch session remembers about one
// partition (KIP-227): the client's last fetch position and what was last
// sent, so unchanged partitions can be left out of responses.
type SessionPartition struct {
	Key                SessionKey
	FetchOffset        int64
	MaxBytes           int32
	CurrentLeaderEpoch int32
	LastFetchedEpoch   int32

	SentHighWatermark int64
	SentLastStable    int64
	SentLogStart      int64
}

// Session is one incremental fetch session. Its owner (one connection)
// serialises use; mu guards against a concurrent eviction.
type Session struct {
	ID int32
	// Epoch is the next epoch the client must send.
	Epoch    int32
	mu       sync.Mutex
	order    []SessionKey
	parts    map[SessionKey]*SessionPartition
	lastUsed time.Time
}

// Lock and Unlock guard the session's partitions while a fetch uses them.
func (s *Session) Lock()   { s.mu.Lock() }
func (s *Session) Unlock() { s.mu.Unlock() }

// Upsert adds or updates a partition from a fetch request.
func (s *Session) Upsert(p SessionPartition) {
	if old := s.parts[p.Key]; old != nil {
		old.FetchOffset, old.MaxBytes = p.FetchOffset, p.MaxBytes
		old.CurrentLeaderEpoch, old.LastFetchedEpoch = p.CurrentLeaderEpoch, p.LastFetchedEpoch
		return
	}
	np := p
	np.SentHighWatermark, np.SentLastStable, np.SentLogStart = -1, -1, -1
	s.parts[p.Key] = &np
	s.order = append(s.order, p.Key)
}

// Forget removes a partition.
func (s *Session) Forget(k SessionKey) {
	if _, ok := s.parts[k]; !ok {
		return
	}
	delete(s.parts, k)
	for i, x := range s.order {
		if x == k {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
}

// Partitions returns the session's partitions in the order they were added.
func (s *Session) Partitions() []*SessionPartition {
	out := make([]*SessionPartition, 0, len(s.order))
	for _, k := range s.order {
		out = append(out, s.parts[k])
	}
	return out
}

// Len is the number of partitions in the session.
func (s *Session) Len() int { return len(s.order) }

// SessionCache holds incremental fetch sessions, at most
// max.incremental.fetch.session.cache.slots of them; when full the least
// recently used session is evicted for a new one.
type SessionCache struct {
	mu       sync.Mutex
	max      int
	nextID   int32
	sessions map[int32]*Session
	now      func() time.Time
}

// NewSessionCache makes a cache with room for max sessions (0 disables sessions).
func NewSessionCache(max int, now func() time.Time) *SessionCache {
	return &SessionCache{max: max, sessions: make(map[int32]*Session), now: now, nextID: 1}
}

// Create starts a session, or returns nil when sessions are disabled.
func (c *SessionCache) Create() *Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.max <= 0 {
		return nil
	}
	if len(c.sessions) >= c.max {
		var oldest *Session
		for _, s := range c.sessions {
			if oldest == nil || s.lastUsed.Before(oldest.lastUsed) {
				oldest = s
			}
		}
		delete(c.sessions, oldest.ID)
	}
	for c.sessions[c.nextID] != nil || c.nextID <= 0 {
		c.nextID++
		if c.nextID <= 0 {
			c.nextID = 1
		}
	}
	s := &Session{ID: c.nextID, Epoch: 1, parts: make(map[SessionKey]*SessionPartition), lastUsed: c.now()}
	c.nextID++
	c.sessions[s.ID] = s
	return s
}

// Get returns a session and marks it used.
func (c *SessionCache) Get(id int32) *Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[id]
	if s != nil {
		s.lastUsed = c.now()
	}
	return s
}

// Remove ends a session.
func (c *SessionCache) Remove(id int32) {
	c.mu.Lock()
	delete(c.sessions, id)
	c.mu.Unlock()
}

// Len is the number of live sessions.
func (c *SessionCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions)
}
