package api

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/replica"
	"github.com/gregor-broker/gregor/internal/server"
)

// Fetch, versions 4-18 (Kafka 4.2; v0-v3 were removed in Kafka 4.0).
//
// Authorization: a follower's fetch needs CLUSTER_ACTION on the cluster, a
// consumer's READ on each topic; a denied partition is
// TOPIC_AUTHORIZATION_FAILED, decided before whether it exists.
//
// Consumers read up to the high watermark (read_uncommitted) or the last
// stable offset (read_committed); a replica id >= 0 reads up to the log end
// offset. Offsets below the log start offset or above the log end offset are
// OFFSET_OUT_OF_RANGE; offsets between the high watermark and the log end
// offset return no records. Long poll: when fewer than MinBytes are
// available the request waits up to MaxWaitMillis for any of its partitions'
// high watermark to move. Byte limits follow KIP-74 and Kafka's
// ReplicaManager: min(MaxBytes, fetch.max.bytes) for the whole response
// (followers too: replica.fetch.response.max.bytes is what a follower asks
// for, not a limit on the leader), PartitionMaxBytes per partition, whole
// batches only, and the first batch of the first non-empty partition is
// returned whole even if it is larger; a long poll waits for at most
// min(MinBytes, that limit). Deviation: a follower's fetch naming a leader
// epoch newer than this broker's replica has waits for the leadership
// (fetchPart.awaitEpoch) instead of being answered UNKNOWN_LEADER_EPOCH at
// once.
// Incremental fetch sessions (KIP-227, v7+) are served from the broker's
// session cache (max.incremental.fetch.session.cache.slots), which evicts by
// KIP-227's rules (replica.SessionCache): a full fetch asking for a session
// when none may be evicted is answered without one (session id 0), as Kafka
// does. A follower's session is privileged. Record sets of 16 KiB and more
// are not read here: the response carries where they lie in their segment
// files and the server reads them while it writes it (fetch_bulk.go), so a
// fetch asking for 2 GiB costs the memory of one asking for 1 MiB. Bytes a
// segment file can no longer give (a disk error while the response is
// written) close the connection, as a failed sendfile does in Kafka.
func init() { register(kmsg.Fetch.Int16(), 4, 18, handleFetch) }

// fetchPart is one partition to read.
type fetchPart struct {
	key    replica.SessionKey
	name   string
	err    error
	sp     *replica.SessionPartition // the session's record (or a standalone one)
	hosted *replica.Partition
	// unknown: the metadata holds no such topic or partition. As in Kafka,
	// whose KafkaApis answers these before the replica manager reads
	// anything, the error does not end a long poll that has partitions to
	// wait for (a consumer of a deleted topic and a live one is not sent
	// back at once, again and again).
	unknown bool
	// diverging is where the fetcher's log diverged from this leader's
	// (KIP-320): answered at once, with no records.
	diverging *replica.EpochEndOffset
	// awaitEpoch: a follower named a leader epoch newer than this broker
	// has (UNKNOWN_LEADER_EPOCH): its metadata is ahead, and the
	// leadership is on its way here. The error does not end the long
	// poll; each poll checks again (a new role wakes the waiter), so the
	// fetch is served as soon as this broker leads in that epoch instead
	// of the follower backing off replica.fetch.backoff.ms (Kafka's
	// answers at once, and its follower waits that second: the tail of a
	// controlled shutdown's unavailability). Still behind at the max
	// wait, it is answered UNKNOWN_LEADER_EPOCH.
	awaitEpoch bool
	// recorded: the follower's fetch of this partition was recorded
	// (Kafka's updateFollowerFetchState, on its first read only).
	recorded bool
}

func handleFetch(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.FetchRequest)
	resp := req.ResponseKind().(*kmsg.FetchResponse)

	session, incremental, code := h.fetchSession(req)
	if code != nil {
		resp.ErrorCode = code.Code
		return resp, nil
	}
	if session != nil {
		session.Lock()
		resp.SessionID = session.ID
	}
	op := &fetchOp{h: h, req: req, FetchResponse: resp, session: session, incremental: incremental, listener: r.Conn.Listener,
		follower: isFollower(req)}
	defer op.releaseOnPanic()
	op.resolve(h.authz(r))

	// Kafka's limits: the response carries at most fetch.max.bytes whatever
	// the request asks (the first batch excepted, KIP-74), and a long poll
	// waits for no more than that.
	op.maxBytes = min(req.MaxBytes, h.d.Config().Int("fetch.max.bytes"))
	op.minBytes = int(min(req.MinBytes, op.maxBytes))
	op.maxWait = time.Duration(req.MaxWaitMillis) * time.Millisecond
	op.deadline = h.d.Clock.Now().Add(op.maxWait)
	if resp, done := op.poll(); done {
		return resp, nil
	}
	// Register before reading again so no append between the read and the
	// wait goes unnoticed.
	op.waiter = h.d.Replicas.NewFetchWaiter(op.hosted, op.follower)
	if resp, done := op.poll(); done {
		return resp, nil
	}
	// A long poll: the server reads the connection's next requests while
	// this one waits (server.Deferred), and answers it in order.
	return op, nil
}

// fetchOp is one fetch request from its session lookup to its answer; while
// it waits for data it is the server.Deferred its Handle returned. It holds
// its session's lock and its waiter from Handle until it answers.
type fetchOp struct {
	h   *Handler
	req *kmsg.FetchRequest
	// The response being built; embedded so that the op is the
	// kmsg.Response Handle returns.
	*kmsg.FetchResponse
	session     *replica.Session
	incremental bool
	listener    string // the listener asked, whose endpoints leader hints carry

	parts  []fetchPart
	hosted []*replica.Partition

	maxBytes int32
	minBytes int
	maxWait  time.Duration
	deadline time.Time
	waiter   *replica.Waiter
	out      []fetchResult
	// follower: a replica sent the fetch; waiting: the leader was told it
	// waits (a long poll), and is told again when it is answered.
	follower, waiting bool
}

// resolve applies the request's partitions to its session and finds each
// partition to read, as far as z allows.
func (op *fetchOp) resolve(z authz) {
	h, req, session := op.h, op.req, op.session
	byID := req.Version >= 13
	// The partitions of this request, applied to the session.
	reqParts := make([]*replica.SessionPartition, 0, 8)
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			sp := replica.SessionPartition{
				Key:         replica.SessionKey{Topic: rt.Topic, TopicID: rt.TopicID, Partition: rp.Partition},
				FetchOffset: rp.FetchOffset, MaxBytes: rp.PartitionMaxBytes,
				CurrentLeaderEpoch: rp.CurrentLeaderEpoch, LastFetchedEpoch: rp.LastFetchedEpoch,
				LogStartOffset: rp.LogStartOffset, HighWatermark: -1,
			}
			if req.Version >= 18 {
				sp.HighWatermark = rp.HighWatermark
			}
			if byID {
				sp.Key.Topic = ""
			} else {
				sp.Key.TopicID = [16]byte{}
			}
			if session != nil {
				session.Upsert(sp)
			} else {
				c := sp
				c.SentHighWatermark, c.SentLastStable, c.SentLogStart = -1, -1, -1
				reqParts = append(reqParts, &c)
			}
		}
	}
	if session != nil {
		for _, ft := range req.ForgottenTopics {
			for _, p := range ft.Partitions {
				k := replica.SessionKey{Topic: ft.Topic, TopicID: ft.TopicID, Partition: p}
				if byID {
					k.Topic = ""
				} else {
					k.TopicID = [16]byte{}
				}
				session.Forget(k)
			}
		}
		reqParts = session.Partitions()
		if op.incremental {
			h.d.Sessions.Touch(session)
		}
	}

	op.parts = make([]fetchPart, len(reqParts))
	// A session's partitions come topic by topic: resolve each topic once,
	// not once per partition (a name check or id lookup, the image load).
	var topic replica.SessionKey
	var topicName string
	var topicErr error
	follower := isFollower(req)
	clusterAction := !follower || z.cluster(auth.OpClusterAction)
	for i, sp := range reqParts {
		fp := fetchPart{key: sp.Key, sp: sp}
		if i == 0 || sp.Key.Topic != topic.Topic || sp.Key.TopicID != topic.TopicID {
			topic = sp.Key
			topicName, topicErr = h.topicName(sp.Key.Topic, sp.Key.TopicID, byID)
			if topicErr == nil && (!clusterAction || !follower && !z.allowed(auth.OpRead, auth.ResourceTopic, topicName)) {
				topicErr = kerr.TopicAuthorizationFailed
			}
		}
		fp.name, fp.err = topicName, topicErr
		if fp.err == nil {
			if fp.hosted, fp.err = h.partition(fp.name, sp.Key.Partition); fp.err == nil {
				fp.check(req.Version)
				fp.awaitEpoch = follower && errors.Is(fp.err, kerr.UnknownLeaderEpoch)
				op.hosted = append(op.hosted, fp.hosted)
			} else if follower && h.awaitLeadership(&fp) {
				op.hosted = append(op.hosted, fp.hosted)
			}
		}
		fp.unknown = fp.err != nil && fp.hosted == nil
		op.parts[i] = fp
	}
}

// check is a led partition's leader epoch check and, v12+, its divergence
// check, made before reading as Kafka's readRecords does.
func (fp *fetchPart) check(version int16) {
	fp.err = checkLeaderEpoch(fp.hosted, fp.sp.CurrentLeaderEpoch)
	if fp.err == nil && version >= 12 {
		fp.diverging, fp.err = fp.hosted.DivergingEpoch(fp.sp.LastFetchedEpoch, fp.sp.FetchOffset)
	}
}

// awaitLeadership: a follower's fetch of a partition this broker hosts but
// does not lead, naming a leader epoch newer than this replica's, waits
// for the leadership (see fetchPart.awaitEpoch); Kafka, which checks the
// epoch before the leadership, answers such a fetch UNKNOWN_LEADER_EPOCH.
func (h *Handler) awaitLeadership(fp *fetchPart) bool {
	part, err := h.localPartition(fp.name, fp.sp.Key.Partition)
	if err != nil {
		return false
	}
	if role := part.Role(); role.Leader || fp.sp.CurrentLeaderEpoch <= role.LeaderEpoch {
		return false
	}
	fp.hosted, fp.err, fp.awaitEpoch = part, kerr.UnknownLeaderEpoch, true
	return true
}

// recheck checks again a partition awaiting its leader epoch: it is read
// once this broker leads in the epoch the fetch names, answered
// NOT_LEADER_OR_FOLLOWER once this replica's epoch reached it without the
// leadership, and waits otherwise.
func (fp *fetchPart) recheck(version int16) {
	switch role := fp.hosted.Role(); {
	case role.Leader:
		fp.check(version)
	case fp.sp.CurrentLeaderEpoch <= role.LeaderEpoch:
		fp.err = replica.NotLeaderError(role)
	}
	fp.awaitEpoch = errors.Is(fp.err, kerr.UnknownLeaderEpoch)
}

// Finish waits until the fetch has enough bytes, its max wait has passed,
// the broker is closing or ctx ends, and answers with what there is.
func (op *fetchOp) Finish(ctx context.Context) (kmsg.Response, error) {
	defer op.releaseOnPanic()
	h := op.h
	for {
		if ctx.Err() != nil {
			return op.answer(), nil
		}
		expired, timer := clock.NewTimer(h.d.Clock, op.deadline.Sub(h.d.Clock.Now()))
		op.waiter.Wait(ctx, expired)
		timer.Stop()
		if ctx.Err() != nil {
			return op.answer(), nil
		}
		if resp, done := op.poll(); done {
			return resp, nil
		}
	}
}

// poll reads the partitions and answers when the fetch need not wait.
func (op *fetchOp) poll() (kmsg.Response, bool) {
	h := op.h
	for i := range op.parts {
		if fp := &op.parts[i]; fp.awaitEpoch {
			fp.recheck(op.req.Version)
		}
	}
	out, bytes, anyErr := h.readFetch(op.req, op.maxBytes, op.parts)
	op.out = out
	if op.follower {
		anyErr = h.followerFetched(op.req, op.parts, out) || anyErr
	}
	done := bytes >= op.minBytes || anyErr || op.maxWait <= 0 || len(op.hosted) == 0 ||
		!h.d.Clock.Now().Before(op.deadline) || h.d.Replicas.Closing() ||
		(op.follower && h.followerNeedsHighWatermark(op.req, op.parts))
	if !done {
		if op.follower && !op.waiting {
			op.waiting = true
			op.h.followerWaiting(op.req, op.parts, op.out, true)
		}
		return nil, false
	}
	return op.answer(), true
}

// answer encodes the last read and ends the fetch: the session's epoch
// moves on and its lock and the waiter are given back.
func (op *fetchOp) answer() kmsg.Response {
	if op.waiting {
		op.waiting = false
		op.h.followerWaiting(op.req, op.parts, op.out, false)
	}
	bodies := op.h.finishFetch(op.FetchResponse, op.req, op.listener, op.parts, op.out, op.incremental)
	if op.incremental && op.session != nil {
		// A new session already expects epoch 1 (KIP-227).
		op.session.Epoch++
	}
	op.release()
	return bulkOrPlain(op.FetchResponse, bodies)
}

// release gives back the waiter and the session's lock, once.
func (op *fetchOp) release() {
	if op.waiter != nil {
		op.waiter.Done()
		op.waiter = nil
	}
	if op.session != nil {
		op.session.Unlock()
		op.session = nil
	}
}

// releaseOnPanic releases the fetch if a panic (recovered by the server,
// which closes the connection) leaves it unanswered, so its session stays
// usable.
func (op *fetchOp) releaseOnPanic() {
	if r := recover(); r != nil {
		op.release()
		panic(r)
	}
}

// isFollower reports whether a replica (not a consumer) sent req.
func isFollower(req *kmsg.FetchRequest) bool { return req.ReplicaID >= 0 || req.ReplicaState.ID >= 0 }

// replicaOf is the fetching replica's broker id and epoch (v15+:
// ReplicaState; before, ReplicaId and no epoch).
func replicaOf(req *kmsg.FetchRequest) (int32, int64) {
	if req.Version >= 15 {
		return req.ReplicaState.ID, req.ReplicaState.Epoch
	}
	return req.ReplicaID, -1
}

// followerFetched records a follower's fetch on each partition it read
// (Kafka's updateFollowerFetchState, on a partition's first read only; one
// waiting for its leader epoch is recorded once it has it); a refused
// fetch becomes that partition's error. It reports whether any was
// refused.
func (h *Handler) followerFetched(req *kmsg.FetchRequest, parts []fetchPart, out []fetchResult) bool {
	id, epoch := replicaOf(req)
	refused := false
	for i := range parts {
		fp, res := &parts[i], &out[i]
		if fp.recorded || fp.awaitEpoch {
			continue
		}
		fp.recorded = true
		if fp.err != nil || fp.diverging != nil || fp.hosted == nil {
			continue
		}
		err := h.d.Replicas.FollowerFetched(fp.hosted, replica.FollowerFetch{ReplicaID: id, BrokerEpoch: epoch,
			FetchOffset: fp.sp.FetchOffset, LogStart: fp.sp.LogStartOffset, LeaderLEO: res.leo,
			CurrentLeaderEpoch: fp.sp.CurrentLeaderEpoch})
		if err != nil {
			fp.err, res.err = err, err
			res.records, res.body, res.size = nil, log.Span{}, 0
			refused = true
		}
	}
	return refused
}

// followerWaiting tells each partition's leader state that the follower's
// fetch waits for data, or has been answered (Kafka records a follower's
// fetch on its first read only; see isr.Leader.FollowerWaiting).
func (h *Handler) followerWaiting(req *kmsg.FetchRequest, parts []fetchPart, out []fetchResult, waiting bool) {
	id, _ := replicaOf(req)
	for i := range parts {
		fp := &parts[i]
		if fp.err == nil && !fp.awaitEpoch && fp.diverging == nil && fp.hosted != nil && out[i].err == nil {
			h.d.Replicas.FollowerWaiting(fp.hosted, id, fp.sp.FetchOffset, waiting)
		}
	}
}

// followerNeedsHighWatermark: a caught-up follower's fetch is answered when
// a partition's high watermark passed what it was last sent.
func (h *Handler) followerNeedsHighWatermark(req *kmsg.FetchRequest, parts []fetchPart) bool {
	id, _ := replicaOf(req)
	for i := range parts {
		fp := &parts[i]
		if fp.err == nil && fp.hosted != nil && fp.hosted.FollowerNeedsHighWatermark(id, fp.sp.FetchOffset, fp.sp.HighWatermark) {
			return true
		}
	}
	return false
}

// fetchSession applies KIP-227's session rules to the request; a new
// session the cache has no room for leaves the fetch sessionless.
func (h *Handler) fetchSession(req *kmsg.FetchRequest) (*replica.Session, bool, *kerr.Error) {
	const finalEpoch = -1
	if req.Version < 7 || h.d.Sessions == nil {
		return nil, false, nil
	}
	id, epoch := req.SessionID, req.SessionEpoch
	create := func() *replica.Session {
		size := 0
		for _, t := range req.Topics {
			size += len(t.Partitions)
		}
		return h.d.Sessions.Create(isFollower(req), size)
	}
	switch {
	case id == 0 && epoch == finalEpoch:
		return nil, false, nil // sessionless full fetch
	case id == 0 && epoch == 0:
		return create(), false, nil
	case epoch == finalEpoch:
		h.d.Sessions.Remove(id)
		return nil, false, nil
	case epoch == 0:
		h.d.Sessions.Remove(id)
		return create(), false, nil
	case id == 0:
		return nil, false, kerr.InvalidFetchSessionEpoch
	}
	s := h.d.Sessions.Get(id)
	if s == nil {
		return nil, false, kerr.FetchSessionIDNotFound
	}
	if s.Epoch != epoch {
		h.d.Logger.Debug("fetch session epoch mismatch", "session", id, "expected", s.Epoch, "got", epoch)
		return nil, false, kerr.InvalidFetchSessionEpoch
	}
	return s, true, nil
}

type fetchResult struct {
	err               error
	hw, lso, logStart int64
	// leo is the log end offset before the read (a follower's progress is
	// measured against it).
	leo int64
	// records are a small record set read at once; body a large one, to be
	// read while the response is written; size is the bytes of either.
	records []byte
	body    log.Span
	size    int
	// aborted are the aborted transactions a read_committed reader of the
	// records must filter out.
	aborted []log.AbortedTxn
}

// bulkOrPlain is the response to send: one that reads bodies while it is
// written when there are any.
func bulkOrPlain(resp *kmsg.FetchResponse, bodies []log.Span) kmsg.Response {
	if len(bodies) == 0 {
		return resp
	}
	return &bulkFetchResponse{FetchResponse: resp, bodies: bodies}
}

// readFetch locates every partition's records within the byte limits
// (maxBytes for the response, each partition's own) and reads the small
// ones.
func (h *Handler) readFetch(req *kmsg.FetchRequest, maxBytes int32, parts []fetchPart) ([]fetchResult, int, bool) {
	out := make([]fetchResult, len(parts))
	remaining := max(int(maxBytes), 1)
	total, eager, anyErr := 0, 0, false
	minOne := true
	follower := isFollower(req)
	for i, fp := range parts {
		res := &out[i]
		res.hw, res.lso, res.logStart = -1, -1, -1
		if fp.err != nil {
			res.err = fp.err
			anyErr = anyErr || !fp.unknown && !fp.awaitEpoch
			continue
		}
		l := fp.hosted.Log
		// The last stable offset first: read after it, the high watermark
		// is never below it (nor the log end offset below the high watermark).
		res.lso = l.LastStableOffset()
		res.hw, res.logStart = l.HighWatermark(), l.LogStartOffset()
		res.leo = l.LogEndOffset()
		if fp.diverging != nil {
			anyErr = true // answered at once, with no records (Kafka's fetchMessages)
			continue
		}
		bound := res.hw
		switch {
		case follower:
			bound = l.LogEndOffset()
		case req.IsolationLevel == 1:
			bound = res.lso
		}
		limit := min(int(fp.sp.MaxBytes), remaining)
		if limit <= 0 && !minOne {
			continue
		}
		span, err := l.Locate(fp.sp.FetchOffset, max(limit, 0), bound, minOne)
		if err == nil {
			if span.Size() < bulkMinBytes && eager+span.Size() <= eagerMaxBytes {
				res.records, err = span.AppendTo(nil)
				res.size = len(res.records)
				eager += res.size
			} else if res.body, err = span.Whole(); err == nil {
				res.size = res.body.Size()
			}
		}
		if err == nil && res.size > 0 && req.IsolationLevel == 1 && !follower {
			res.aborted, err = abortedIn(l, fp.sp.FetchOffset, res, bound)
		}
		if err != nil {
			res.err, anyErr = err, true
			res.records, res.body, res.size = nil, log.Span{}, 0
			continue
		}
		if res.size > 0 {
			minOne = false
			remaining -= res.size
			total += res.size
		}
	}
	return out, total, anyErr
}

// finishFetch encodes the results; incremental sessions leave out partitions
// with nothing new. It returns the record sets to read while the response
// is written, in the order kmsg encodes their partitions.
func (h *Handler) finishFetch(resp *kmsg.FetchResponse, req *kmsg.FetchRequest, listener string, parts []fetchPart, out []fetchResult, incremental bool) []log.Span {
	byID := req.Version >= 13
	consumer := req.ReplicaID < 0 && req.ReplicaState.ID < 0
	tm := h.d.Replicas.TopicMetrics()
	stats, statsOf := tm.Topic(""), ""
	topicIdx := map[replica.SessionKey]int{}
	var bodies []encodedBody
	hints := h.newLeaderHints(listener)
	defer func() {
		if req.Version >= 16 {
			hints.each(func(id int32, ep metadata.Endpoint, rack *string) {
				b := kmsg.NewFetchResponseBroker()
				b.NodeID, b.Host, b.Port, b.Rack = id, ep.Host, ep.Port, rack
				resp.Brokers = append(resp.Brokers, b)
			})
		}
	}()
	for i, fp := range parts {
		res := out[i]
		sp := fp.sp
		if fp.name != statsOf {
			stats, statsOf = tm.Topic(fp.name), fp.name
		}
		bytesOut := 0
		if consumer {
			bytesOut = res.size
		}
		stats.Fetch(bytesOut, res.err != nil)
		changed := res.err != nil || res.size > 0 || res.hw != sp.SentHighWatermark ||
			res.lso != sp.SentLastStable || res.logStart != sp.SentLogStart
		if incremental && !changed {
			continue
		}
		sp.SentHighWatermark, sp.SentLastStable, sp.SentLogStart = res.hw, res.lso, res.logStart
		tk := replica.SessionKey{Topic: fp.key.Topic, TopicID: fp.key.TopicID}
		ti, ok := topicIdx[tk]
		if !ok {
			t := kmsg.NewFetchResponseTopic()
			if byID {
				t.TopicID = fp.key.TopicID
			} else {
				t.Topic = fp.key.Topic
			}
			resp.Topics = append(resp.Topics, t)
			ti = len(resp.Topics) - 1
			topicIdx[tk] = ti
		}
		p := kmsg.NewFetchResponseTopicPartition()
		p.Partition = fp.key.Partition
		p.HighWatermark, p.LastStableOffset, p.LogStartOffset = res.hw, res.lso, res.logStart
		p.PreferredReadReplica = -1
		if fp.diverging != nil {
			p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = fp.diverging.Epoch, fp.diverging.EndOffset
		}
		if !consumer && res.err == nil && fp.hosted != nil {
			id, _ := replicaOf(req)
			fp.hosted.SentHighWatermark(id, res.hw)
		}
		if res.err != nil {
			p.ErrorCode = errCode(h.d.Logger, res.err)
			if req.Version >= 12 && hints.wants(p.ErrorCode) {
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = hints.leader(fp.name, fp.key.Partition)
			}
		}
		if req.IsolationLevel == 1 {
			p.AbortedTransactions = make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, len(res.aborted))
			for i, a := range res.aborted {
				p.AbortedTransactions[i] = kmsg.FetchResponseTopicPartitionAbortedTransaction{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset}
			}
		}
		// An empty record set, never null: librdkafka rejects a null one.
		p.RecordBatches = res.records
		switch {
		case res.body.Size() > 0:
			p.RecordBatches = recordsMarker
			bodies = append(bodies, encodedBody{ti, len(resp.Topics[ti].Partitions), res.body})
		case p.RecordBatches == nil:
			p.RecordBatches = []byte{}
		}
		resp.Topics[ti].Partitions = append(resp.Topics[ti].Partitions, p)
	}
	if len(bodies) == 0 {
		return nil
	}
	// A session's partitions of one topic need not be adjacent; kmsg writes
	// them topic by topic.
	slices.SortFunc(bodies, func(a, b encodedBody) int { return cmp.Or(a.topic-b.topic, a.part-b.part) })
	spans := make([]log.Span, len(bodies))
	for i, b := range bodies {
		spans[i] = b.span
	}
	return spans
}

// encodedBody is a record set to read while the response is written, with
// where its partition is in the response.
type encodedBody struct {
	topic, part int
	span        log.Span
}

// abortedIn lists the aborted transactions overlapping the records a
// read_committed fetch returns (Kafka's LocalLog.addAbortedTransactions):
// from the fetch offset to the offset after the last batch returned.
func abortedIn(l *log.Log, fetchOffset int64, res *fetchResult, bound int64) ([]log.AbortedTxn, error) {
	upper := res.body.NextOffset()
	if res.records != nil {
		upper = log.NextOffsetOf(res.records)
	}
	if upper < 0 {
		upper = bound
	}
	return l.AbortedTransactions(fetchOffset, upper)
}
