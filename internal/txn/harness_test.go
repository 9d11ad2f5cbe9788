package txn

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/coord"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// driver runs a Shard as the coord runtime and the Coordinator shell do:
// it keeps the records written (a restart replays them), hands out
// producer ids when an op asks for one, keeps the marker jobs the shard
// emitted and completes them on request.
type driver struct {
	s       *Shard
	cfg     Config
	epoch   int32 // coordinator epoch of the next shard
	now     time.Time
	records []coord.Record
	jobs    []MarkerJob
	nextPID int64
	waiter  coord.Waiter
	// replies of ops parked earlier (an implicit add waiting for markers).
	late []coord.Reply
}

func newDriver() *driver {
	d := &driver{cfg: DefaultConfig(), now: t0, nextPID: 1000}
	d.s = d.newShard()
	d.s.Loaded(d.now)
	return d
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func (d *driver) newShard() *Shard {
	return NewShard(0, d.epoch, func() Config { return d.cfg }, discard())
}

// apply collects an output: records are kept, marker jobs queued.
func (d *driver) apply(out *coord.Output, own coord.Waiter) (reply coord.Reply, answered bool) {
	d.records = append(d.records, out.Records...)
	for _, e := range out.Effects {
		if j, ok := e.(MarkerJob); ok {
			d.jobs = append(d.jobs, j)
		}
	}
	for _, r := range out.Replies {
		if r.Waiter == own {
			reply, answered = r, true
		} else {
			d.late = append(d.late, r)
		}
	}
	return reply, answered
}

// do runs an op; an ErrNeedProducerID answer is retried with a fresh id,
// as the shell does.
func (d *driver) do(op func(newPID int64) coord.Op[*Shard]) (any, *coord.Output, bool, error) {
	newPID := int64(-1)
	var all coord.Output
	for {
		d.waiter++
		w := d.waiter
		var out coord.Output
		op(newPID)(d.s, d.now, w, &out)
		all.Records = append(all.Records, out.Records...)
		all.Effects = append(all.Effects, out.Effects...)
		r, ok := d.apply(&out, w)
		if ok && errors.Is(r.Err, ErrNeedProducerID) {
			newPID = d.nextPID
			d.nextPID++
			continue
		}
		return r.Value, &all, ok, r.Err
	}
}

// completeMarkers completes every queued marker job, as the sender does
// once every partition acknowledged.
func (d *driver) completeMarkers() []MarkerJob {
	jobs := d.jobs
	d.jobs = nil
	for _, j := range jobs {
		d.waiter++
		var out coord.Output
		d.s.CompleteTxn(j, d.now, d.waiter, &out)
		d.apply(&out, d.waiter)
	}
	return jobs
}

// advance moves time to end, ticking at every deadline on the way.
func (d *driver) advance(end time.Time, each func(at time.Time, out *coord.Output)) {
	for range 100000 {
		at, ok := d.s.NextDeadline()
		if !ok || at.After(end) {
			break
		}
		if at.After(d.now) {
			d.now = at
		}
		var out coord.Output
		d.s.Tick(d.now, &out)
		d.apply(&out, 0)
		if each != nil {
			each(d.now, &out)
		}
	}
	d.now = end
}

// restart replays every record into a new shard (a new coordinator epoch),
// as a load after a crash or a failover does; queued marker jobs are lost
// with the old owner.
func (d *driver) restart() error {
	d.epoch++
	s := d.newShard()
	for i, r := range d.records {
		if err := s.Replay(int64(i), r); err != nil {
			return err
		}
	}
	d.s, d.jobs, d.late = s, nil, nil
	s.Loaded(d.now)
	return nil
}

// errName is a Kafka error's name ("ok" for nil).
func errName(err error) string {
	if err == nil {
		return "ok"
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return err.Error()
}

func showTPs(tps []topicpart.TopicPartition) string {
	s := make([]string, len(tps))
	for i, tp := range tps {
		s[i] = tp.String()
	}
	return "(" + strings.Join(s, ", ") + ")"
}

// showRecord decodes a __transaction_state record.
func (d *driver) showRecord(r coord.Record) string {
	id, _, err := decodeKey(r.Key)
	if err != nil {
		return "undecodable key: " + err.Error()
	}
	if r.Value == nil {
		return id + ": tombstone"
	}
	t, err := decodeValue(id, r.Value)
	if err != nil {
		return "undecodable value: " + err.Error()
	}
	return fmt.Sprintf("%s: %s", id, d.showTxn(t))
}

func (d *driver) showTxn(t *Txn) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s pid %d epoch %d timeout %s", t.State, t.ProducerID, t.ProducerEpoch, time.Duration(t.TimeoutMs)*time.Millisecond)
	if len(t.Partitions) > 0 {
		fmt.Fprintf(&b, " partitions %s", showTPs(t.Partitions))
	}
	if t.StartMs >= 0 {
		fmt.Fprintf(&b, " started %s", d.at(t.StartMs))
	}
	if t.PrevProducerID >= 0 {
		fmt.Fprintf(&b, " previous pid %d", t.PrevProducerID)
	}
	if t.NextProducerID >= 0 {
		fmt.Fprintf(&b, " next pid %d", t.NextProducerID)
	}
	if t.ClientTV > 0 {
		fmt.Fprintf(&b, " tv%d", t.ClientTV)
	}
	return b.String()
}

// at shows unix ms relative to the transcript's start ("+3s").
func (d *driver) at(ms int64) string {
	return "+" + (time.Duration(ms-t0.UnixMilli()) * time.Millisecond).String()
}

func showJob(j MarkerJob) string {
	what := "ABORT"
	if j.Commit {
		what = "COMMIT"
	}
	return fmt.Sprintf("markers %s: %s pid %d epoch %d coordinator epoch %d tv%d to %s", j.TransactionalID, what,
		j.ProducerID, j.ProducerEpoch, j.CoordinatorEpoch, j.TransactionVersion, showTPs(j.Partitions))
}

// show prints an op's records, effects and replies.
func (d *driver) show(b *strings.Builder, out *coord.Output) {
	for _, r := range out.Records {
		fmt.Fprintf(b, "record %s\n", d.showRecord(r))
	}
	for _, e := range out.Effects {
		switch e := e.(type) {
		case MarkerJob:
			fmt.Fprintf(b, "%s\n", showJob(e))
		case NeedProducerID:
			fmt.Fprintf(b, "needs a producer id to abort %s\n", e.TransactionalID)
		}
	}
}

func parseTPs(vals []string) ([]topicpart.TopicPartition, error) {
	var out []topicpart.TopicPartition
	for _, v := range vals {
		i := strings.LastIndexByte(v, '-')
		var p int32
		if i < 0 {
			return nil, fmt.Errorf("partition %q: want TOPIC-N", v)
		}
		if _, err := fmt.Sscan(v[i+1:], &p); err != nil {
			return nil, fmt.Errorf("partition %q: %v", v, err)
		}
		out = append(out, topicpart.TopicPartition{Topic: v[:i], Partition: p})
	}
	return out, nil
}
