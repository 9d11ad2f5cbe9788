package txn

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"pgregory.net/rapid"

	"github.com/gregor-broker/gregor/internal/coord"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// TestShardModel drives a shard with random interleavings of
// InitProducerId, AddPartitionsToTxn (explicit, implicit TV2, verify-only),
// EndTxn (TV1 and TV2, current and stale epochs, stale producer ids),
// marker completions, the passing of time (timeouts, expiry) and restarts
// (a replay of every record, as a crash or failover at any op boundary
// gives: each op's records are one batch), and checks after every step:
//   - every transition is in Kafka's state graph and an epoch never goes back
//     (Shard.apply panics otherwise);
//   - the state a replay rebuilds is the state the shard had;
//   - a decided transaction keeps its outcome until it completes, across
//     restarts (never both committed and aborted);
//   - answers follow Kafka's tables where they are unambiguous: another
//     producer id is INVALID_PRODUCER_ID_MAPPING, an older epoch
//     PRODUCER_FENCED, a TV2 end answers the next epoch;
//   - at the end, a restart and the markers complete every decided
//     transaction.
//
// rapid prints the seed that replays a failure.
func TestShardModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := &shardModel{d: newDriver(), decided: map[string]bool{}}
		m.d.cfg.AbortCheckMs, m.d.cfg.ExpirationCheckMs, m.d.cfg.IDExpirationMs = 1000, 5000, 20000
		m.d.s.Loaded(m.d.now)
		for range rapid.IntRange(1, 80).Draw(rt, "steps") {
			m.step(rt)
			m.check(rt)
		}
		if err := m.d.restart(); err != nil {
			rt.Fatal(err)
		}
		m.d.advance(m.d.now, nil)
		for range 3 {
			m.completeMarkers(rt)
		}
		for id, tx := range m.d.s.txns {
			if tx.State.preparing() {
				rt.Fatalf("%s still %s after a restart and its markers", id, tx.State)
			}
		}
	})
}

type shardModel struct {
	d *driver
	// decided: the outcome of each transactional id's decided, not yet
	// completed transaction.
	decided map[string]bool
}

var modelIDs = []string{"a", "b", "c"}

func (m *shardModel) pick(t *rapid.T) (string, *Txn) {
	id := rapid.SampledFrom(modelIDs).Draw(t, "id")
	return id, m.d.s.txns[id]
}

// producer is the (pid, epoch) a request carries: mostly the current one,
// sometimes a stale epoch or another producer id.
func (m *shardModel) producer(t *rapid.T, tx *Txn) (int64, int16) {
	if tx == nil {
		return rapid.Int64Range(1000, 1003).Draw(t, "pid"), int16(rapid.IntRange(0, 3).Draw(t, "epoch"))
	}
	switch rapid.IntRange(0, 9).Draw(t, "which") {
	case 0:
		return tx.ProducerID + 7, tx.ProducerEpoch
	case 1, 2:
		return tx.ProducerID, tx.ProducerEpoch - int16(rapid.IntRange(1, 2).Draw(t, "staleBy"))
	}
	return tx.ProducerID, tx.ProducerEpoch
}

func (m *shardModel) step(t *rapid.T) {
	d := m.d
	id, tx := m.pick(t)
	switch op := rapid.IntRange(0, 99).Draw(t, "op"); {
	case op < 15:
		req := InitRequest{TransactionalID: id, TimeoutMs: int32(rapid.IntRange(1, 30).Draw(t, "timeoutS") * 1000),
			ProducerID: -1, ProducerEpoch: -1}
		if tx != nil && rapid.Bool().Draw(t, "kip360") {
			req.ProducerID, req.ProducerEpoch = m.producer(t, tx)
		}
		v, err := m.run(t, func(newPID int64) coord.Op[*Shard] {
			r := req
			r.NewProducerID = newPID
			return func(s *Shard, now time.Time, w coord.Waiter, out *coord.Output) { s.InitProducerID(r, now, w, out) }
		})
		if res, ok := v.(ProducerIDAndEpoch); ok && err == nil && tx != nil && res.ProducerID == tx.ProducerID &&
			res.ProducerEpoch < tx.ProducerEpoch {
			t.Fatalf("InitProducerId answered epoch %d after %d", res.ProducerEpoch, tx.ProducerEpoch)
		}
	case op < 45:
		pid, epoch := m.producer(t, tx)
		req := AddRequest{TransactionalID: id, ProducerID: pid, ProducerEpoch: epoch,
			Partitions: []topicpart.TopicPartition{{Topic: "t", Partition: int32(rapid.IntRange(0, 3).Draw(t, "partition"))}},
			VerifyOnly: rapid.IntRange(0, 4).Draw(t, "verify") == 0}
		if rapid.Bool().Draw(t, "tv2") {
			req.TV = TV2
		}
		_, err := m.run(t, func(int64) coord.Op[*Shard] {
			if req.VerifyOnly {
				return func(s *Shard, now time.Time, w coord.Waiter, out *coord.Output) { s.Verify(req, now, w, out) }
			}
			return func(s *Shard, now time.Time, w coord.Waiter, out *coord.Output) { s.AddPartitions(req, now, w, out) }
		})
		m.checkCommon(t, tx, pid, epoch, err, "add")
	case op < 70:
		pid, epoch := m.producer(t, tx)
		req := EndRequest{TransactionalID: id, ProducerID: pid, ProducerEpoch: epoch, Commit: rapid.Bool().Draw(t, "commit"),
			TV2: rapid.Bool().Draw(t, "v5")}
		v, err := m.run(t, func(newPID int64) coord.Op[*Shard] {
			r := req
			r.NewProducerID = newPID
			return func(s *Shard, now time.Time, w coord.Waiter, out *coord.Output) { s.EndTxn(r, now, w, out) }
		})
		if !req.TV2 {
			m.checkCommon(t, tx, pid, epoch, err, "end")
		}
		if res, ok := v.(ProducerIDAndEpoch); ok && err == nil && req.TV2 && tx != nil && tx.State == Ongoing &&
			!(res.ProducerID == tx.ProducerID && res.ProducerEpoch == tx.ProducerEpoch+1 ||
				res.ProducerID != tx.ProducerID && res.ProducerEpoch == 0) {
			t.Fatalf("TV2 end of %s at epoch %d answered %+v", id, tx.ProducerEpoch, res)
		}
	case op < 85:
		m.completeMarkers(t)
	case op < 95:
		d.advance(d.now.Add(time.Duration(rapid.IntRange(0, 8000).Draw(t, "advanceMs"))*time.Millisecond), func(_ time.Time, out *coord.Output) {
			m.noteJobs(t, out.Effects)
		})
		m.late(t)
	default:
		before := m.snapshot()
		if err := d.restart(); err != nil {
			t.Fatalf("restart: %v", err)
		}
		if after := m.snapshot(); !slices.Equal(before, after) {
			t.Fatalf("a replay rebuilt\n%v\nfrom a shard holding\n%v", after, before)
		}
	}
}

// run runs an op through the driver and checks the jobs it emitted.
func (m *shardModel) run(t *rapid.T, op func(newPID int64) coord.Op[*Shard]) (any, error) {
	v, out, _, err := m.d.do(op)
	m.noteJobs(t, out.Effects)
	m.late(t)
	return v, err
}

func (m *shardModel) late(t *rapid.T) { m.d.late = nil }

// noteJobs checks that a decided transaction is never decided the other
// way before it completes.
func (m *shardModel) noteJobs(t *rapid.T, effects []any) {
	for _, e := range effects {
		j, ok := e.(MarkerJob)
		if !ok {
			continue
		}
		if was, ok := m.decided[j.TransactionalID]; ok && was != j.Commit {
			t.Fatalf("%s decided commit=%v, then commit=%v before completing", j.TransactionalID, was, j.Commit)
		}
		m.decided[j.TransactionalID] = j.Commit
	}
}

func (m *shardModel) completeMarkers(t *rapid.T) {
	for _, j := range m.d.completeMarkers() {
		if tx := m.d.s.txns[j.TransactionalID]; tx == nil || !tx.State.preparing() {
			delete(m.decided, j.TransactionalID)
		}
	}
	m.late(t)
}

// checkCommon checks the answers every coordinator API shares: another
// producer id is INVALID_PRODUCER_ID_MAPPING, another epoch PRODUCER_FENCED.
func (m *shardModel) checkCommon(t *rapid.T, tx *Txn, pid int64, epoch int16, err error, what string) {
	switch {
	case tx == nil || pid != tx.ProducerID:
		if !errors.Is(err, kerr.InvalidProducerIDMapping) {
			t.Fatalf("%s with producer id %d (current %v): %v, want INVALID_PRODUCER_ID_MAPPING", what, pid, tx, err)
		}
	case epoch != tx.ProducerEpoch:
		if !errors.Is(err, kerr.ProducerFenced) {
			t.Fatalf("%s with epoch %d (current %d): %v, want PRODUCER_FENCED", what, epoch, tx.ProducerEpoch, err)
		}
	}
}

// snapshot renders the durable part of the shard's state.
func (m *shardModel) snapshot() []string {
	var out []string
	for _, id := range m.d.s.sortedIDs() {
		tx := m.d.s.txns[id]
		out = append(out, fmt.Sprintf("%s %s pid %d/%d/%d epoch %d timeout %d parts %v start %d update %d tv %d", id, tx.State,
			tx.ProducerID, tx.PrevProducerID, tx.NextProducerID, tx.ProducerEpoch, tx.TimeoutMs, tx.Partitions,
			tx.StartMs, tx.LastUpdateMs, tx.ClientTV))
	}
	return out
}

func (m *shardModel) check(t *rapid.T) {
	for id, tx := range m.d.s.txns {
		if _, ok := m.decided[id]; ok && !tx.State.preparing() {
			delete(m.decided, id)
		}
		if tx.State == Empty && len(tx.Partitions) > 0 {
			t.Fatalf("%s Empty with partitions %v", id, tx.Partitions)
		}
	}
}
