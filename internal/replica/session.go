package replica

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
	// LogStartOffset is a follower's log start offset (-1 from consumers).
	LogStartOffset int64
	// HighWatermark is a follower's own high watermark (Fetch v18,
	// KIP-1166; -1 unknown).
	HighWatermark int64

	SentHighWatermark int64
	SentLastStable    int64
	SentLogStart      int64
}

// Session is one incremental fetch session. Its owner (one connection)
// serialises use with Lock; the cache's bookkeeping (the c* fields) is
// guarded by the cache's mutex instead, so eviction never waits for a
// session in use.
type Session struct {
	ID int32
	// Epoch is the next epoch the client must send.
	Epoch int32
	mu    sync.Mutex
	order []SessionKey
	parts map[SessionKey]*SessionPartition

	// Guarded by SessionCache.mu.
	cPrivileged bool      // created by a follower's fetch
	cCreated    time.Time // creation time
	cLastUsed   time.Time // last Touch
	cSize       int       // partitions at the last Touch
	// cByAll and cByPrivileged: evictable by any new session, by a
	// privileged one; decided at the last Touch.
	cByAll, cByPrivileged bool
}

// Lock and Unlock guard the session's partitions while a fetch uses them.
func (s *Session) Lock()   { s.mu.Lock() }
func (s *Session) Unlock() { s.mu.Unlock() }

// Upsert adds or updates a partition from a fetch request.
func (s *Session) Upsert(p SessionPartition) {
	if old := s.parts[p.Key]; old != nil {
		old.FetchOffset, old.MaxBytes = p.FetchOffset, p.MaxBytes
		old.CurrentLeaderEpoch, old.LastFetchedEpoch = p.CurrentLeaderEpoch, p.LastFetchedEpoch
		old.LogStartOffset, old.HighWatermark = p.LogStartOffset, p.HighWatermark
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

// MinSessionEvictionAge is how long a session is safe from eviction by a
// bigger one, and how long unused before any new session may evict it
// (Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS, a constant there too).
const MinSessionEvictionAge = 120 * time.Second

// SessionCache holds incremental fetch sessions, at most
// max.incremental.fetch.session.cache.slots of them. When it is full a new
// session may take the place of one other, by KIP-227's rules (Kafka's
// FetchSessionCache.tryEvict):
//   - a stale session, unused for more than MinSessionEvictionAge, is
//     evicted first (the least recently used one);
//   - otherwise a new session evicts the least valuable session it is
//     allowed to, if that one is worth no more than itself. Value orders
//     unprivileged before privileged (followers' sessions are privileged),
//     then fewer partitions before more, then the older id. A privileged new
//     session may evict any unprivileged session and privileged ones created
//     more than MinSessionEvictionAge ago; an unprivileged one only sessions
//     created that long ago.
//
// A new session that may evict nothing is not created: the fetch is served
// without a session (its response says session id 0) and the client keeps
// sending full fetches. So one client churning sessions cannot push out the
// sessions of the consumers in use, and a follower always finds room.
// Eligibility and size are taken at each session's last Touch, as in Kafka.
// Unlike Kafka 3.7+ the cache is not split into shards: one lock per fetch
// costs little here, and a single cache applies the rules to all sessions.
type SessionCache struct {
	mu        sync.Mutex
	max       int
	nextID    int32
	sessions  map[int32]*Session
	now       func() time.Time
	evictions uint64
	// partitions is the sum of the sessions' cSize.
	partitions int
}

// NewSessionCache makes a cache with room for max sessions (0 disables sessions).
func NewSessionCache(max int, now func() time.Time) *SessionCache {
	return &SessionCache{max: max, sessions: make(map[int32]*Session), now: now, nextID: 1}
}

// Create starts a session for a full fetch of size partitions, privileged
// when a follower asks, evicting another if the cache is full and the rules
// allow. It returns nil when sessions are disabled or there is no room.
func (c *SessionCache) Create(privileged bool, size int) *Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.max <= 0 {
		return nil
	}
	now := c.now()
	if len(c.sessions) >= c.max && !c.evictLocked(privileged, size, now) {
		return nil
	}
	for c.sessions[c.nextID] != nil || c.nextID <= 0 {
		c.nextID++
		if c.nextID <= 0 {
			c.nextID = 1
		}
	}
	s := &Session{ID: c.nextID, Epoch: 1, parts: make(map[SessionKey]*SessionPartition),
		cPrivileged: privileged, cCreated: now}
	c.nextID++
	c.sessions[s.ID] = s
	c.touchLocked(s, size, now)
	return s
}

// evictLocked removes one session to make room for a new one, if the rules
// allow, and reports whether it did.
func (c *SessionCache) evictLocked(privileged bool, size int, now time.Time) bool {
	var lru, victim *Session
	for _, s := range c.sessions {
		if lru == nil || s.cLastUsed.Before(lru.cLastUsed) || (s.cLastUsed.Equal(lru.cLastUsed) && s.ID < lru.ID) {
			lru = s
		}
		if evictable := s.cByAll || (privileged && s.cByPrivileged); evictable && (victim == nil || lessValuable(s, victim)) {
			victim = s
		}
	}
	switch {
	case lru != nil && now.Sub(lru.cLastUsed) > MinSessionEvictionAge:
		victim = lru
	case victim == nil:
		return false
	case worth(privileged, size) <= worth(victim.cPrivileged, victim.cSize):
		return false // an equal session is not displaced
	}
	c.removeLocked(victim)
	c.evictions++
	return true
}

// worth orders sessions for eviction by privilege, then size. A new
// session must be worth more than the one it evicts (in Kafka its key has
// id 0, below every live session's).
func worth(privileged bool, size int) int64 {
	w := int64(size)
	if privileged {
		w += 1 << 40
	}
	return w
}

// lessValuable orders evictable sessions: by worth, then by id.
func lessValuable(a, b *Session) bool {
	wa, wb := worth(a.cPrivileged, a.cSize), worth(b.cPrivileged, b.cSize)
	return wa < wb || (wa == wb && a.ID < b.ID)
}

// Get returns a session.
func (c *SessionCache) Get(id int32) *Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessions[id]
}

// Touch records that a request used s and left it with its current
// partitions; the caller holds s's lock. An evicted session is ignored.
func (c *SessionCache) Touch(s *Session) {
	size := s.Len()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sessions[s.ID] == s {
		c.touchLocked(s, size, c.now())
	}
}

func (c *SessionCache) touchLocked(s *Session, size int, now time.Time) {
	c.partitions += size - s.cSize
	s.cSize, s.cLastUsed = size, now
	old := now.Sub(s.cCreated) > MinSessionEvictionAge
	s.cByAll = old
	s.cByPrivileged = old || !s.cPrivileged
}

// Remove ends a session.
func (c *SessionCache) Remove(id int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.sessions[id]; s != nil {
		c.removeLocked(s)
	}
}

func (c *SessionCache) removeLocked(s *Session) {
	delete(c.sessions, s.ID)
	c.partitions -= s.cSize
}

// Len is the number of live sessions.
func (c *SessionCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions)
}

// Stats reports the live sessions, the partitions they cache (as of each
// one's last Touch) and the sessions evicted so far.
func (c *SessionCache) Stats() (sessions, partitions int, evictions uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions), c.partitions, c.evictions
}

// The fetch session cache's metrics (Kafka's kafka.server:type=FetchSessionCache).
var (
	descSessions = prometheus.NewDesc("kafka_server_fetchsessioncache_numincrementalfetchsessions",
		"Incremental fetch sessions in the cache (NumIncrementalFetchSessions).", nil, nil)
	descSessionPartitions = prometheus.NewDesc("kafka_server_fetchsessioncache_numincrementalfetchpartitionscached",
		"Partitions the cached fetch sessions hold (NumIncrementalFetchPartitionsCached).", nil, nil)
	descSessionEvictions = prometheus.NewDesc("kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total",
		"Fetch sessions evicted to make room for new ones (IncrementalFetchSessionEvictionsPerSec).", nil, nil)
)

// Collector returns the cache's Prometheus metrics, read at scrape time.
func (c *SessionCache) Collector() prometheus.Collector { return (*sessionCollector)(c) }

type sessionCollector SessionCache

func (sc *sessionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descSessions
	ch <- descSessionPartitions
	ch <- descSessionEvictions
}

func (sc *sessionCollector) Collect(ch chan<- prometheus.Metric) {
	n, parts, ev := (*SessionCache)(sc).Stats()
	ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(descSessionPartitions, prometheus.GaugeValue, float64(parts))
	ch <- prometheus.MustNewConstMetric(descSessionEvictions, prometheus.CounterValue, float64(ev))
}
