package api

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/replica"
	"github.com/gregor-broker/gregor/internal/server"
)

// Fetch, versions 4-18 (Kafka 4.2; v0-v3 were removed in Kafka 4.0).
//
// Consumers read up to the high watermark (read_uncommitted) or the last
// stable offset (read_committed); a replica id >= 0 reads up to the log end
// offset. Offsets below the log start offset or above the log end offset are
// OFFSET_OUT_OF_RANGE; offsets between the high watermark and the log end
// offset return no records. Long poll: when fewer than MinBytes are
// available the request waits up to MaxWaitMillis for any of its partitions'
// high watermark to move. Byte limits follow KIP-74: MaxBytes for the whole
// response, PartitionMaxBytes per partition, and the first batch of the first
// non-empty partition is returned whole even if it is larger.
// Incremental fetch sessions (KIP-227, v7+) are served from the broker's
// session cache (max.incremental.fetch.session.cache.slots), which evicts by
// KIP-227's rules (replica.SessionCache): a full fetch asking for a session
// when none may be evicted is answered without one (session id 0), as Kafka
// does. A follower's session is privileged. Record sets of
// 16 KiB and more are read into pooled buffers and written from there by the
// server without another copy (fetch_buffers.go).
func init() { register(kmsg.Fetch.Int16(), 4, 18, handleFetch) }

// fetchPart is one partition to read.
type fetchPart struct {
	key    replica.SessionKey
	name   string
	err    error
	sp     *replica.SessionPartition // the session's record (or a standalone one)
	hosted *replica.Partition
}

func handleFetch(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.FetchRequest)
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	byID := req.Version >= 13

	session, incremental, code := h.fetchSession(req)
	if code != nil {
		resp.ErrorCode = code.Code
		return resp, nil
	}
	if session != nil {
		session.Lock()
		defer session.Unlock()
		resp.SessionID = session.ID
	}

	// The partitions of this request, applied to the session.
	reqParts := make([]*replica.SessionPartition, 0, 8)
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			sp := replica.SessionPartition{
				Key:         replica.SessionKey{Topic: rt.Topic, TopicID: rt.TopicID, Partition: rp.Partition},
				FetchOffset: rp.FetchOffset, MaxBytes: rp.PartitionMaxBytes,
				CurrentLeaderEpoch: rp.CurrentLeaderEpoch, LastFetchedEpoch: rp.LastFetchedEpoch,
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
		if incremental {
			h.d.Sessions.Touch(session)
		}
	}

	parts := make([]fetchPart, len(reqParts))
	var hosted []*replica.Partition
	// A session's partitions come topic by topic: resolve each topic once,
	// not once per partition (a name check or id lookup, the image load).
	var topic replica.SessionKey
	var topicName string
	var topicErr error
	for i, sp := range reqParts {
		fp := fetchPart{key: sp.Key, sp: sp}
		if i == 0 || sp.Key.Topic != topic.Topic || sp.Key.TopicID != topic.TopicID {
			topic = sp.Key
			topicName, topicErr = h.topicName(sp.Key.Topic, sp.Key.TopicID, byID)
		}
		fp.name, fp.err = topicName, topicErr
		if fp.err == nil {
			if fp.hosted, fp.err = h.partition(fp.name, sp.Key.Partition); fp.err == nil {
				fp.err = checkLeaderEpoch(fp.hosted, sp.CurrentLeaderEpoch)
				hosted = append(hosted, fp.hosted)
			}
		}
		parts[i] = fp
	}

	maxWait := time.Duration(req.MaxWaitMillis) * time.Millisecond
	deadline := h.d.Clock.Now().Add(maxWait)
	var waiter *replica.Waiter
	defer func() {
		if waiter != nil {
			waiter.Done()
		}
	}()
	var bufs fetchBuffers
	for {
		bufs.release() // a read after a wait replaces what the last one returned
		out, bytes, anyErr := h.readFetch(req, parts, &bufs)
		done := bytes >= int(req.MinBytes) || anyErr || maxWait <= 0 || len(hosted) == 0 ||
			!h.d.Clock.Now().Before(deadline) || h.d.Replicas.Closing()
		if done {
			h.finishFetch(resp, req, parts, out, incremental)
			if incremental {
				// A new session already expects epoch 1 (KIP-227).
				session.Epoch++
			}
			return bulkOrPlain(resp, bufs), nil
		}
		if waiter == nil {
			// Register before re-reading so no append between the read and
			// the wait goes unnoticed.
			waiter = h.d.Replicas.NewWaiter(hosted)
			continue
		}
		expired, timer := clock.NewTimer(h.d.Clock, deadline.Sub(h.d.Clock.Now()))
		waiter.Wait(ctx, expired)
		timer.Stop()
		if ctx.Err() != nil {
			h.finishFetch(resp, req, parts, out, incremental)
			return bulkOrPlain(resp, bufs), nil
		}
	}
}

// isFollower reports whether a replica (not a consumer) sent req.
func isFollower(req *kmsg.FetchRequest) bool { return req.ReplicaID >= 0 || req.ReplicaState.ID >= 0 }

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
	records           []byte
}

// bulkOrPlain is the response to send: one written from bufs when the
// records were read into pooled buffers.
func bulkOrPlain(resp *kmsg.FetchResponse, bufs fetchBuffers) kmsg.Response {
	if len(bufs.bufs) == 0 {
		return resp
	}
	return &bulkFetchResponse{FetchResponse: resp, bufs: bufs}
}

// readFetch reads every partition once within the byte limits; large reads
// go into buffers from bufs.
func (h *Handler) readFetch(req *kmsg.FetchRequest, parts []fetchPart, bufs *fetchBuffers) ([]fetchResult, int, bool) {
	out := make([]fetchResult, len(parts))
	remaining := int(req.MaxBytes)
	if remaining <= 0 {
		remaining = 1
	}
	total, anyErr := 0, false
	minOne := true
	follower := isFollower(req)
	for i, fp := range parts {
		res := &out[i]
		res.hw, res.lso, res.logStart = -1, -1, -1
		if fp.err != nil {
			res.err, anyErr = fp.err, true
			continue
		}
		l := fp.hosted.Log
		res.hw, res.logStart = l.HighWatermark(), l.LogStartOffset()
		res.lso = l.LastStableOffset()
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
		var data []byte
		if err == nil {
			data, err = span.AppendTo(bufs.get(span.Size()))
		}
		if err != nil {
			res.err, anyErr = err, true
			continue
		}
		if len(data) > 0 {
			minOne = false
			remaining -= len(data)
			total += len(data)
			res.records = data
		}
	}
	return out, total, anyErr
}

// finishFetch encodes the results; incremental sessions leave out partitions
// with nothing new.
func (h *Handler) finishFetch(resp *kmsg.FetchResponse, req *kmsg.FetchRequest, parts []fetchPart, out []fetchResult, incremental bool) {
	byID := req.Version >= 13
	consumer := req.ReplicaID < 0 && req.ReplicaState.ID < 0
	tm := h.d.Replicas.TopicMetrics()
	stats, statsOf := tm.Topic(""), ""
	topicIdx := map[replica.SessionKey]int{}
	for i, fp := range parts {
		res := out[i]
		sp := fp.sp
		if fp.name != statsOf {
			stats, statsOf = tm.Topic(fp.name), fp.name
		}
		bytesOut := 0
		if consumer {
			bytesOut = len(res.records)
		}
		stats.Fetch(bytesOut, res.err != nil)
		changed := res.err != nil || len(res.records) > 0 || res.hw != sp.SentHighWatermark ||
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
		if res.err != nil {
			p.ErrorCode = errCode(h.d.Logger, res.err)
		}
		if req.IsolationLevel == 1 {
			p.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
		}
		// An empty record set, never null: librdkafka rejects a null one.
		p.RecordBatches = res.records
		if p.RecordBatches == nil {
			p.RecordBatches = []byte{}
		}
		resp.Topics[ti].Partitions = append(resp.Topics[ti].Partitions, p)
	}
}
