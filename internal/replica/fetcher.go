package replica

import (
	"context"
	"errors"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/record"
)

// FetcherConfig is the followers' side of replication, in Kafka's replica.*
// configs.
type FetcherConfig struct {
	// NumFetchers is num.replica.fetchers: fetchers per source broker.
	NumFetchers int
	// MaxWait, MinBytes, MaxBytes and PartitionMaxBytes are
	// replica.fetch.wait.max.ms, replica.fetch.min.bytes,
	// replica.fetch.response.max.bytes and replica.fetch.max.bytes.
	MaxWait           time.Duration
	MinBytes          int32
	MaxBytes          int32
	PartitionMaxBytes int32
	// Backoff is replica.fetch.backoff.ms, after an error.
	Backoff time.Duration
	// RequestTimeout bounds one request beyond MaxWait
	// (replica.socket.timeout.ms).
	RequestTimeout time.Duration
}

// fetcherID names a fetcher: its source broker and which of the
// num.replica.fetchers it is.
type fetcherID struct {
	source int32
	index  int
}

// fetchers are the follower fetchers (Kafka's ReplicaFetcherManager): each
// partition this broker follows is fetched by one of them, chosen by its
// leader and a hash of its name, so a leader's partitions share a few
// connections and fetch requests.
type fetchers struct {
	r *replication

	mu       sync.Mutex
	running  bool
	byID     map[fetcherID]*fetcher
	assigned map[*Partition]fetcherID
}

func newFetchers(r *replication) *fetchers {
	return &fetchers{r: r, byID: map[fetcherID]*fetcher{}, assigned: map[*Partition]fetcherID{}}
}

// add makes p fetch from leader in leaderEpoch, from its log end offset
// (Kafka's addFetcherForPartitions with an initial offset of the LEO and
// truncation on fetch). The same leader and epoch keep the fetch as it is.
func (fs *fetchers) add(p *Partition, leader, leaderEpoch int32) {
	n := 1
	if fs.r.cfg.Fetch.NumFetchers > 1 {
		n = fs.r.cfg.Fetch.NumFetchers
	}
	h := fnv.New32a()
	h.Write([]byte(p.TP.Topic))
	id := fetcherID{source: leader, index: int((h.Sum32() + uint32(p.TP.Partition)) % uint32(n))}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if old, ok := fs.assigned[p]; ok && old != id {
		fs.removeLocked(p)
	}
	f := fs.byID[id]
	if f == nil {
		f = newFetcher(fs, id)
		fs.byID[id] = f
		if fs.running {
			f.start()
		}
	}
	fs.assigned[p] = id
	f.put(p, leaderEpoch)
}

// remove stops fetching p.
func (fs *fetchers) remove(p *Partition) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.removeLocked(p)
}

func (fs *fetchers) removeLocked(p *Partition) {
	id, ok := fs.assigned[p]
	if !ok {
		return
	}
	delete(fs.assigned, p)
	f := fs.byID[id]
	if f.drop(p) == 0 {
		delete(fs.byID, id)
		f.close()
	}
}

func (fs *fetchers) start() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.running = true
	for _, f := range fs.byID {
		f.start()
	}
}

func (fs *fetchers) stop() {
	fs.mu.Lock()
	fs.running = false
	all := fs.byID
	fs.byID = map[fetcherID]*fetcher{}
	fs.assigned = map[*Partition]fetcherID{}
	fs.mu.Unlock()
	for _, f := range all {
		f.close()
	}
}

// FollowerState describes a followed partition's fetch (for admin views):
// false when this broker does not fetch it.
func (m *Manager) FollowerState(p *Partition) (FollowerState, bool) { return m.repl.fetchers.state(p) }

// lags is each followed partition's lag behind its leader's high
// watermark as of the leader's last answer (Kafka's FetcherLagMetrics:
// max(0, high watermark - fetch offset)); partitions without an answer yet
// are left out.
func (fs *fetchers) lags() map[*Partition]int64 {
	fs.mu.Lock()
	fetchers := make([]*fetcher, 0, len(fs.byID))
	for _, f := range fs.byID {
		fetchers = append(fetchers, f)
	}
	fs.mu.Unlock()
	out := map[*Partition]int64{}
	for _, f := range fetchers {
		f.mu.Lock()
		for p, st := range f.parts {
			if st.leaderHW >= 0 {
				out[p] = max(st.leaderHW-st.fetchOffset, 0)
			}
		}
		f.mu.Unlock()
	}
	return out
}

// state describes p's fetch for the admin views.
func (fs *fetchers) state(p *Partition) (FollowerState, bool) {
	fs.mu.Lock()
	id, ok := fs.assigned[p]
	var f *fetcher
	if ok {
		f = fs.byID[id]
	}
	fs.mu.Unlock()
	if f == nil {
		return FollowerState{}, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.parts[p]
	if st == nil {
		return FollowerState{}, false
	}
	return FollowerState{Leader: id.source, LeaderEpoch: st.leaderEpoch, FetchOffset: st.fetchOffset,
		LastFetchedEpoch: st.lastFetchedEpoch, Truncating: st.truncating, Failed: st.failed,
		LastFetch: st.lastFetch, LastError: st.lastErr, LeaderHW: st.leaderHW}, true
}

// FollowerState is what a follower's fetcher knows of one partition.
type FollowerState struct {
	Leader           int32
	LeaderEpoch      int32
	FetchOffset      int64
	LastFetchedEpoch int32
	Truncating       bool
	// Failed is why the partition is not fetched until new metadata
	// arrives ("" while it is).
	Failed    string
	LastFetch time.Time
	LastError string
	// LeaderHW is the leader's high watermark in its last answer, -1 none.
	LeaderHW int64
}

// fetchState is one partition's fetch (Kafka's PartitionFetchState).
type fetchState struct {
	leaderEpoch      int32
	fetchOffset      int64
	lastFetchedEpoch int32
	// truncating: ask the leader where to truncate (OffsetForLeaderEpoch)
	// before fetching again.
	truncating bool
	delayUntil time.Time
	failed     string
	lastFetch  time.Time
	lastErr    string
	leaderHW   int64
}

// fetcher is one fetch loop (Kafka's ReplicaFetcherThread) from one leader.
type fetcher struct {
	fs *fetchers
	id fetcherID

	mu      sync.Mutex
	parts   map[*Partition]*fetchState
	started bool

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
}

func newFetcher(fs *fetchers, id fetcherID) *fetcher {
	return &fetcher{fs: fs, id: id, parts: map[*Partition]*fetchState{}, wake: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
}

func (f *fetcher) start() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started {
		return
	}
	f.started = true
	go f.run()
}

// close stops the loop without waiting for it (a fetch in flight ends with
// its context).
func (f *fetcher) close() {
	f.mu.Lock()
	started := f.started
	f.started = true
	f.mu.Unlock()
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
	if !started {
		close(f.done)
	}
}

func (f *fetcher) put(p *Partition, leaderEpoch int32) {
	f.mu.Lock()
	if st := f.parts[p]; st == nil || st.leaderEpoch != leaderEpoch {
		f.parts[p] = initialFetchState(p, leaderEpoch)
	}
	f.mu.Unlock()
	f.nudge()
}

// initialFetchState starts at the log end offset with the latest epoch the
// log holds (Kafka's initialFetchOffset and truncation on fetch): the
// leader answers a divergence. A log with records but no epochs asks where
// to truncate first.
func initialFetchState(p *Partition, leaderEpoch int32) *fetchState {
	st := &fetchState{leaderEpoch: leaderEpoch, fetchOffset: p.Log.LogEndOffset(), lastFetchedEpoch: p.Log.LatestEpoch(), leaderHW: -1}
	st.truncating = st.lastFetchedEpoch < 0 && st.fetchOffset > p.Log.LogStartOffset()
	return st
}

// drop removes p and returns how many partitions are left.
func (f *fetcher) drop(p *Partition) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.parts, p)
	return len(f.parts)
}

func (f *fetcher) nudge() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *fetcher) cfg() FetcherConfig { return f.fs.r.cfg.Fetch }

func (f *fetcher) clock() clock.Clock { return f.fs.r.m.logs.Clock() }

// sleep waits d, a nudge or the stop; false on stop.
func (f *fetcher) sleep(d time.Duration) bool {
	if d <= 0 {
		d = time.Millisecond
	}
	ch, t := clock.NewTimer(f.clock(), d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-f.wake:
		return true
	case <-f.stop:
		return false
	}
}

func (f *fetcher) run() {
	defer close(f.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-f.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	var ep LeaderEndpoint
	defer func() {
		if ep != nil {
			ep.Close()
		}
	}()
	for ctx.Err() == nil {
		if ep == nil {
			var err error
			if ep, err = f.fs.r.cfg.Endpoint(f.id.source); err != nil {
				f.fs.r.logger.Warn("cannot reach the leader to fetch from", "leader", f.id.source, "err", err)
				if !f.sleep(f.cfg().Backoff) {
					return
				}
				continue
			}
		}
		ok, broken := f.round(ctx, ep)
		if broken {
			// Resolve the leader's address again: it may have restarted
			// elsewhere.
			ep.Close()
			ep = nil
		}
		if !ok {
			return
		}
	}
}

// round truncates what must be, then sends one fetch and applies its
// answer; ok is false when the fetcher stops, broken when the request
// failed as a whole.
func (f *fetcher) round(ctx context.Context, ep LeaderEndpoint) (ok, broken bool) {
	epoch := f.fs.r.brokerEpoch()
	if epoch < 0 {
		return f.sleep(f.cfg().Backoff), false // not registered yet
	}
	f.truncate(ctx, ep)
	f.syncFetchOffsets()
	req, sent, wait := f.request(epoch)
	if len(sent) == 0 {
		return f.sleep(wait), false
	}
	rctx, cancel := context.WithTimeout(ctx, f.cfg().MaxWait+f.cfg().RequestTimeout)
	resp, err := ep.Fetch(rctx, req)
	cancel()
	if ctx.Err() != nil {
		return false, false
	}
	if err != nil {
		f.fs.r.logger.Warn("fetch from leader failed", "leader", f.id.source, "partitions", len(sent), "err", err)
		f.delay(sent, err)
		return f.sleep(f.cfg().Backoff), true
	}
	f.apply(ctx, ep, sent, resp)
	return true, false
}

// sentPart is one partition of a fetch in flight, as it was sent.
type sentPart struct {
	p  *Partition
	st *fetchState
	FetchPartition
}

// request builds a fetch of every partition ready to fetch; when none is,
// wait is how long until one may be.
func (f *fetcher) request(brokerEpoch int64) (*FetchRequest, map[PartitionKey]*sentPart, time.Duration) {
	cfg := f.cfg()
	now := f.clock().Now()
	req := &FetchRequest{ReplicaID: f.fs.r.nodeID, BrokerEpoch: brokerEpoch, MaxWait: cfg.MaxWait, MinBytes: cfg.MinBytes,
		MaxBytes: cfg.MaxBytes}
	sent := map[PartitionKey]*sentPart{}
	wait := cfg.MaxWait
	f.mu.Lock()
	defer f.mu.Unlock()
	for p, st := range f.parts {
		if st.failed != "" || st.truncating {
			continue
		}
		if now.Before(st.delayUntil) {
			wait = min(wait, st.delayUntil.Sub(now))
			continue
		}
		fp := FetchPartition{Key: PartitionKey{Topic: p.TP.Topic, TopicID: p.TopicID, Partition: p.TP.Partition},
			FetchOffset: st.fetchOffset, LogStartOffset: p.Log.LogStartOffset(), LastFetchedEpoch: st.lastFetchedEpoch,
			CurrentLeaderEpoch: st.leaderEpoch, MaxBytes: cfg.PartitionMaxBytes}
		req.Partitions = append(req.Partitions, fp)
		sent[fp.Key] = &sentPart{p: p, st: st, FetchPartition: fp}
	}
	return req, sent, wait
}

// current reports whether sp is still p's fetch as it was sent (Kafka drops
// an answer whose partition was truncated, re-added or moved meanwhile).
func (f *fetcher) current(sp *sentPart) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.parts[sp.p] == sp.st && sp.st.fetchOffset == sp.FetchOffset && sp.st.leaderEpoch == sp.CurrentLeaderEpoch
}

// delay backs every partition sent off after a failed request.
func (f *fetcher) delay(sent map[PartitionKey]*sentPart, err error) {
	until := f.clock().Now().Add(f.cfg().Backoff)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, sp := range sent {
		sp.st.delayUntil, sp.st.lastErr = until, err.Error()
	}
}

// appended is a partition that took records in this round: fsynced before
// the next fetch, then given the leader's high watermark.
type appended struct {
	sp       *sentPart
	hw, logS int64
}

// apply handles the leader's answer partition by partition (Kafka's
// processFetchRequest), fsyncs what was appended (so under
// gregor.ack.fsync the next fetch offset is durable), and only then takes
// the leader's high watermarks.
func (f *fetcher) apply(ctx context.Context, ep LeaderEndpoint, sent map[PartitionKey]*sentPart, resp []FetchedPartition) {
	now := f.clock().Now()
	var done []appended
	for i := range resp {
		fp := &resp[i]
		sp := sent[fp.Key]
		if sp == nil || !f.current(sp) {
			continue
		}
		f.mu.Lock()
		sp.st.lastFetch, sp.st.leaderHW = now, fp.HighWatermark
		f.mu.Unlock()
		switch {
		case fp.Err == nil && fp.Diverging != nil:
			f.diverged(sp, *fp.Diverging)
		case fp.Err == nil:
			if f.appendRecords(sp, fp.Records) {
				done = append(done, appended{sp: sp, hw: fp.HighWatermark, logS: fp.LogStartOffset})
			}
		case errors.Is(fp.Err, kerr.OffsetOutOfRange):
			f.outOfRange(ctx, ep, sp)
		case errors.Is(fp.Err, kerr.FencedLeaderEpoch):
			f.fenced(sp, fp.Err)
		default:
			f.backoff(sp, fp.Err)
		}
	}
	f.syncAll(done)
	for _, a := range done {
		if err := a.sp.p.followLeader(a.sp.CurrentLeaderEpoch, a.hw, a.logS); err != nil && !errors.Is(err, errNotFollowing) {
			f.fs.r.logger.Warn("following the leader's offsets failed", "partition", a.sp.p.TP, "err", err)
		}
	}
}

// appendRecords appends the whole batches of records and moves the fetch
// on; false when nothing changed that needs the leader's offsets.
func (f *fetcher) appendRecords(sp *sentPart, records []byte) bool {
	whole := wholeBatches(records)
	if len(whole) == 0 {
		return true
	}
	res, err := sp.p.appendAsFollower(whole, sp.CurrentLeaderEpoch)
	switch {
	case errors.Is(err, errNotFollowing):
		return false
	case errors.Is(err, log.ErrOffsetMismatch):
		// The log moved under the fetch (a truncation it did not see):
		// start again from where the log ends.
		f.reset(sp, "the log moved under the fetch")
		return false
	case errors.Is(err, log.ErrNoSpace):
		// A full log dir is not a failed one: fetch again after the
		// backoff, and still follow the leader's log start offset, which
		// DeleteRecords or retention there moves to free this disk too.
		f.noSpace(sp, err)
		return true
	case err != nil:
		f.fail(sp, err)
		return false
	}
	f.mu.Lock()
	if f.parts[sp.p] == sp.st {
		sp.st.fetchOffset = res.LastOffset + 1
		sp.st.lastFetchedEpoch = sp.p.Log.LatestEpoch()
		sp.st.lastErr = ""
	}
	f.mu.Unlock()
	return true
}

// wholeBatches cuts a trailing partial batch (a leader may answer with one
// when its size limit cuts into it).
func wholeBatches(b []byte) []byte {
	n := 0
	for rest := b; ; {
		batch, r, ok := record.Split(rest)
		if !ok {
			break
		}
		n += len(batch)
		rest = r
	}
	return b[:n]
}

// syncAll fsyncs every partition appended this round, concurrently, before
// the next fetch tells the leader the new offsets (gregor.ack.fsync=true).
func (f *fetcher) syncAll(done []appended) {
	if !f.fs.r.m.ackFsync || len(done) == 0 {
		return
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, a := range done {
		wg.Add(1)
		sem <- struct{}{}
		go func(sp *sentPart) {
			defer func() { <-sem; wg.Done() }()
			p := sp.p
			if err := f.fs.r.m.timedSync(p, p.Log.LogEndOffset(), p.Log.Flush); err != nil {
				f.fail(sp, err)
			}
		}(a.sp)
	}
	wg.Wait()
}

// syncFetchOffsets fsyncs the partitions whose fetch offset is beyond
// what their log has made durable: a leader become follower has records it
// appended as leader whose acknowledgement fsync had not run. A fetch offset
// tells the leader the follower holds everything below it, and the leader's
// HW counts it (gregor.ack.fsync=true: only durably).
func (f *fetcher) syncFetchOffsets() {
	if !f.fs.r.m.ackFsync {
		return
	}
	var done []appended
	f.mu.Lock()
	for p, st := range f.parts {
		if st.failed == "" && !st.truncating && p.Log.DurableOffset() < st.fetchOffset {
			done = append(done, appended{sp: &sentPart{p: p, st: st}})
		}
	}
	f.mu.Unlock()
	f.syncAll(done)
}

// diverged truncates to where the follower's log last agrees with the
// leader's (KIP-320: the DivergingEpoch of the answer). When the follower
// did not know the epoch the leader answered with, it cut to the end of the
// largest epoch it knows below it and asks again (OffsetForLeaderEpoch).
func (f *fetcher) diverged(sp *sentPart, div EpochEndOffset) {
	p := sp.p
	t := truncationFor(div, p.Log.EndOffsetForEpoch, p.Log.LogEndOffset(), sp.FetchOffset)
	f.fs.r.logger.Info("follower log diverged from its leader; truncating", "partition", p.TP, "leader", f.id.source,
		"leader_epoch", sp.CurrentLeaderEpoch, "last_fetched_epoch", sp.LastFetchedEpoch,
		"leader_epoch_end", div.Epoch, "leader_end_offset", div.EndOffset, "truncate_to", t.Offset, "complete", t.Complete)
	f.truncateTo(sp, t)
}

// truncateTo applies a truncation and restarts the fetch from the new log
// end.
func (f *fetcher) truncateTo(sp *sentPart, t Truncation) {
	p := sp.p
	before, hw := p.Log.LogEndOffset(), p.Log.HighWatermark()
	if err := p.truncateAsFollower(t.Offset, sp.CurrentLeaderEpoch); err != nil {
		if !errors.Is(err, errNotFollowing) {
			f.fail(sp, err)
		}
		return
	}
	if leo := p.Log.LogEndOffset(); leo < before {
		p.noteTruncation(Truncated{LeaderEpoch: sp.CurrentLeaderEpoch, FromLogEnd: before, FromHighWatermark: hw, To: leo,
			At: f.clock().Now()})
		f.fs.r.truncated(p, leo)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.parts[p] != sp.st {
		return
	}
	sp.st.fetchOffset, sp.st.lastFetchedEpoch = p.Log.LogEndOffset(), p.Log.LatestEpoch()
	sp.st.truncating = !t.Complete
}

// outOfRange is Kafka's fetchOffsetAndTruncate: a leader whose log ends
// below the follower's (possible only after an unclean election) is
// followed by truncating to its end; a leader whose log starts past the
// follower's end is followed by restarting there.
func (f *fetcher) outOfRange(ctx context.Context, ep LeaderEndpoint, sp *sentPart) {
	p := sp.p
	key := sp.Key
	rctx, cancel := context.WithTimeout(ctx, f.cfg().RequestTimeout)
	defer cancel()
	leo := p.Log.LogEndOffset()
	leaderEnd, err := ep.ListOffset(rctx, f.fs.r.nodeID, key, sp.CurrentLeaderEpoch, -1)
	if err != nil {
		f.backoff(sp, err)
		return
	}
	if leaderEnd < leo {
		f.fs.r.logger.Warn("the leader's log ends below this follower's: truncating to it (an unclean election?)",
			"partition", p.TP, "leader", f.id.source, "leader_log_end_offset", leaderEnd, "log_end_offset", leo)
		f.truncateTo(sp, Truncation{Offset: leaderEnd, Complete: true})
		return
	}
	leaderStart, err := ep.ListOffset(rctx, f.fs.r.nodeID, key, sp.CurrentLeaderEpoch, -2)
	if err != nil {
		f.backoff(sp, err)
		return
	}
	if leaderStart > leo {
		f.fs.r.logger.Info("the leader's log starts past this follower's end: restarting the log there",
			"partition", p.TP, "leader_log_start_offset", leaderStart, "log_end_offset", leo)
		if err := p.restartAsFollower(leaderStart, sp.CurrentLeaderEpoch); err != nil {
			if !errors.Is(err, errNotFollowing) {
				f.fail(sp, err)
			}
			return
		}
		f.fs.r.truncated(p, leaderStart)
	}
	f.reset(sp, "")
}

// reset restarts p's fetch from its log end.
func (f *fetcher) reset(sp *sentPart, why string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.parts[sp.p] == sp.st {
		sp.st.fetchOffset, sp.st.lastFetchedEpoch = sp.p.Log.LogEndOffset(), sp.p.Log.LatestEpoch()
		sp.st.lastErr = why
	}
}

// fenced: the leader has a newer epoch than the fetch named. If the
// metadata here still says the epoch sent, the partition waits for it to
// catch up (Kafka's onPartitionFenced); a newer epoch already re-added it.
func (f *fetcher) fenced(sp *sentPart, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.parts[sp.p] == sp.st {
		sp.st.failed = "fenced by the leader (" + err.Error() + "); waiting for newer metadata"
	}
}

// backoff retries p after replica.fetch.backoff.ms (the leader does not
// know the epoch yet, is not the leader, or failed to read).
func (f *fetcher) backoff(sp *sentPart, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.parts[sp.p] == sp.st {
		sp.st.delayUntil, sp.st.lastErr = f.clock().Now().Add(f.cfg().Backoff), err.Error()
	}
}

// noSpace retries p from its log end after replica.fetch.backoff.ms: its
// log dir had no room for the leader's records (the log cut back what did
// not fit). The follower falls behind and leaves the ISR after
// replica.lag.time.max.ms; once space is freed it catches up and rejoins,
// as a follower whose fetches failed for any retriable reason.
func (f *fetcher) noSpace(sp *sentPart, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.parts[sp.p] != sp.st {
		return
	}
	if !strings.HasPrefix(sp.st.lastErr, noSpacePrefix) {
		f.fs.r.logger.Warn("no space for the leader's records; fetching again after the backoff until space is freed",
			"partition", sp.p.TP, "leader", f.id.source, "err", err)
	}
	sp.st.fetchOffset, sp.st.lastFetchedEpoch = sp.p.Log.LogEndOffset(), sp.p.Log.LatestEpoch()
	sp.st.delayUntil, sp.st.lastErr = f.clock().Now().Add(f.cfg().Backoff), noSpacePrefix+err.Error()
}

// noSpacePrefix marks a fetch state's last error as a full log dir's.
const noSpacePrefix = "no space: "

// fail stops fetching p until new metadata re-adds it: its log failed (the
// log dir is offline) or refused the leader's records.
func (f *fetcher) fail(sp *sentPart, err error) {
	f.fs.r.logger.Error("stopped fetching a partition", "partition", sp.p.TP, "leader", f.id.source, "err", err)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.parts[sp.p] == sp.st {
		sp.st.failed, sp.st.lastErr = err.Error(), err.Error()
	}
}

// truncate asks the leader where each partition marked truncating ends its
// latest epoch (OffsetForLeaderEpoch, the fallback of truncation on fetch)
// and truncates there; a log without epochs truncates to its high
// watermark, as before KIP-101.
func (f *fetcher) truncate(ctx context.Context, ep LeaderEndpoint) {
	now := f.clock().Now()
	f.mu.Lock()
	var asks []EpochQuery
	var toHW []*sentPart
	ask := map[PartitionKey]*sentPart{}
	for p, st := range f.parts {
		if !st.truncating || st.failed != "" || now.Before(st.delayUntil) {
			continue
		}
		key := PartitionKey{Topic: p.TP.Topic, TopicID: p.TopicID, Partition: p.TP.Partition}
		sp := &sentPart{p: p, st: st, FetchPartition: FetchPartition{Key: key, FetchOffset: st.fetchOffset,
			LastFetchedEpoch: st.lastFetchedEpoch, CurrentLeaderEpoch: st.leaderEpoch}}
		if st.lastFetchedEpoch < 0 {
			toHW = append(toHW, sp)
			continue
		}
		asks = append(asks, EpochQuery{Key: key, CurrentLeaderEpoch: st.leaderEpoch, LeaderEpoch: st.lastFetchedEpoch})
		ask[key] = sp
	}
	f.mu.Unlock()
	for _, sp := range toHW {
		f.truncateTo(sp, Truncation{Offset: sp.p.Log.HighWatermark(), Complete: true})
	}
	if len(asks) == 0 {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, f.cfg().RequestTimeout)
	answers, err := ep.OffsetForLeaderEpoch(rctx, f.fs.r.nodeID, asks)
	cancel()
	for _, a := range answers {
		sp := ask[a.Key]
		if sp == nil || !f.current(sp) {
			continue
		}
		delete(ask, a.Key)
		if a.Err != nil {
			f.backoff(sp, a.Err)
			continue
		}
		t := truncationFor(a.EpochEndOffset, sp.p.Log.EndOffsetForEpoch, sp.p.Log.LogEndOffset(), sp.FetchOffset)
		f.truncateTo(sp, t)
	}
	if err == nil {
		err = errors.New("no answer")
	}
	for _, sp := range ask {
		f.backoff(sp, err)
	}
}
