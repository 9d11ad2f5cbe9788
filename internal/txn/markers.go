package txn

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// Marker is one transaction marker for the leaders of its partitions
// (WriteTxnMarkers' WritableTxnMarker).
type Marker struct {
	ProducerID         int64
	ProducerEpoch      int16
	Commit             bool
	CoordinatorEpoch   int32
	TransactionVersion int16
	Partitions         []topicpart.TopicPartition
}

// ErrPartitionGone: the marker's partition no longer exists (its topic was
// deleted); the coordinator skips it, as Kafka skips partitions without a
// leader.
var ErrPartitionGone = errors.New("partition no longer exists")

// MarkerWriter writes markers to the leaders of their partitions and waits
// for each write to be acknowledged as WriteTxnMarkers does (acks=all),
// answering each partition's error (nil: written): kerr values as a
// WriteTxnMarkers response carries them, or ErrPartitionGone. On one node
// every leader is local; in a cluster the writer routes each partition to
// its leader over the Kafka protocol. Either way the coordinator sees the
// same errors and retries the same way.
type MarkerWriter interface {
	WriteTxnMarkers(ctx context.Context, m Marker) map[topicpart.TopicPartition]error
}

// markerAction is what the coordinator does after a partition's answer
// (Kafka's TransactionMarkerRequestCompletionHandler).
type markerAction int

const (
	markerDone markerAction = iota
	markerRetry
	markerDrop       // skip the partition
	markerSuperseded // stop: the transaction was superseded
)

func classifyMarkerError(err error) markerAction {
	var ke *kerr.Error
	switch {
	case err == nil:
		return markerDone
	case errors.Is(err, ErrPartitionGone):
		return markerDrop
	case errors.As(err, &ke):
		switch ke {
		case kerr.InvalidProducerEpoch, kerr.TransactionCoordinatorFenced:
			return markerSuperseded
		case kerr.UnsupportedForMessageFormat, kerr.UnsupportedVersion:
			return markerDrop
		}
	}
	// UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS(_AFTER_APPEND),
	// REQUEST_TIMED_OUT, KAFKA_STORAGE_ERROR, transport errors: retry (with the
	// leader looked up again). Kafka treats CORRUPT_MESSAGE and the like as
	// illegal states; Gregor logs them and retries too.
	return markerRetry
}

// MarkerStatus is a transaction whose markers are being written: what the
// hanging-transaction detector shows for a COMPLETING transaction.
type MarkerStatus struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	Commit          bool
	Pending         []topicpart.TopicPartition
	Attempts        int
	LastError       string
	SinceMs         int64
}

// markerSender runs one goroutine per decided transaction until its
// markers are all written (or it was superseded, or the coordinator
// partition unloaded), then completes it on its shard.
type markerSender struct {
	writer   MarkerWriter
	clock    clock.Clock
	complete func(ctx context.Context, job MarkerJob) error
	logf     func(msg string, args ...any)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	running map[string]*MarkerStatus // by transactional id
}

const (
	markerBackoffMin = 20 * time.Millisecond
	markerBackoffMax = time.Second
)

func newMarkerSender(w MarkerWriter, clk clock.Clock, complete func(context.Context, MarkerJob) error, logf func(string, ...any)) *markerSender {
	ctx, cancel := context.WithCancel(context.Background())
	return &markerSender{writer: w, clock: clk, complete: complete, logf: logf, ctx: ctx, cancel: cancel,
		running: make(map[string]*MarkerStatus)}
}

// start sends job's markers in the background.
func (m *markerSender) start(job MarkerJob) {
	st := &MarkerStatus{TransactionalID: job.TransactionalID, ProducerID: job.ProducerID, ProducerEpoch: job.ProducerEpoch,
		Commit: job.Commit, Pending: job.Partitions, SinceMs: m.clock.Now().UnixMilli()}
	m.mu.Lock()
	if m.ctx.Err() != nil {
		m.mu.Unlock()
		return
	}
	m.running[job.TransactionalID] = st
	m.wg.Add(1)
	m.mu.Unlock()
	go func() {
		defer m.wg.Done()
		m.run(job, st)
		m.mu.Lock()
		if m.running[job.TransactionalID] == st {
			delete(m.running, job.TransactionalID)
		}
		m.mu.Unlock()
	}()
}

func (m *markerSender) run(job MarkerJob, st *MarkerStatus) {
	pending := append([]topicpart.TopicPartition(nil), job.Partitions...)
	backoff := markerBackoffMin
	for len(pending) > 0 {
		res := m.writer.WriteTxnMarkers(m.ctx, Marker{ProducerID: job.ProducerID, ProducerEpoch: job.ProducerEpoch,
			Commit: job.Commit, CoordinatorEpoch: job.CoordinatorEpoch, TransactionVersion: job.TransactionVersion,
			Partitions: pending})
		var left []topicpart.TopicPartition
		var lastErr error
		for _, tp := range pending {
			err := res[tp]
			switch classifyMarkerError(err) {
			case markerSuperseded:
				m.logf("transaction marker refused: the transaction was superseded; not completing it",
					"transactional_id", job.TransactionalID, "partition", tp.String(), "err", err)
				return
			case markerRetry:
				left, lastErr = append(left, tp), err
			case markerDrop:
				m.logf("transaction marker skipped", "transactional_id", job.TransactionalID, "partition", tp.String(), "err", err)
			}
		}
		m.mu.Lock()
		st.Pending, st.Attempts = left, st.Attempts+1
		if lastErr != nil {
			st.LastError = lastErr.Error()
		}
		m.mu.Unlock()
		pending = left
		if len(pending) > 0 && !m.sleep(&backoff) {
			return
		}
	}
	// The decision is in every partition: record the completion, retrying
	// while the coordinator partition cannot be written (Kafka retries
	// COORDINATOR_NOT_AVAILABLE for ever; another owner re-drives it).
	backoff = markerBackoffMin
	for {
		err := m.complete(m.ctx, job)
		if !errors.Is(err, kerr.CoordinatorNotAvailable) {
			if err != nil && m.ctx.Err() == nil {
				m.logf("transaction completion not written; the partition's next owner re-drives it",
					"transactional_id", job.TransactionalID, "err", err)
			}
			return
		}
		if !m.sleep(&backoff) {
			return
		}
	}
}

// sleep waits backoff (doubling it up to the maximum); false when stopped.
func (m *markerSender) sleep(backoff *time.Duration) bool {
	t, stop := clock.NewTimer(m.clock, *backoff)
	defer stop.Stop()
	*backoff = min(*backoff*2, markerBackoffMax)
	select {
	case <-t:
		return true
	case <-m.ctx.Done():
		return false
	}
}

// status lists the transactions whose markers are being written.
func (m *markerSender) status() []MarkerStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]MarkerStatus, 0, len(m.running))
	for _, st := range m.running {
		c := *st
		c.Pending = append([]topicpart.TopicPartition(nil), st.Pending...)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TransactionalID < out[j].TransactionalID })
	return out
}

// close stops every sender and waits for them.
func (m *markerSender) close() {
	m.mu.Lock()
	m.cancel()
	m.mu.Unlock()
	m.wg.Wait()
}
