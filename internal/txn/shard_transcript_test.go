package txn

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/gregor-broker/gregor/internal/coord"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/transcript"
)

// TestShardTranscript runs testdata/shard/*.txt: conversations between
// transactional producers and one __transaction_state shard. Each command
// is a request, the completion of the markers written so far, the passing
// of time or a restart, and prints what the shard does: its answer, the
// records it writes and the markers it asks for. -rewrite regenerates the
// expected output.
//
//	config [max.timeout=D] [abort.check=D] [expiry.check=D] [expiration=D] [value.version=N]
//	init id=T [timeout=D] [pid=N epoch=N]      InitProducerId (pid/epoch: KIP-360)
//	add id=T pid=N epoch=N partitions=(t-0, …) [tv2] [verify]
//	                                            AddPartitionsToTxn (tv2: an implicit add; verify: VerifyOnly)
//	end id=T pid=N epoch=N commit|abort [v5]    EndTxn (v5: transactions v2)
//	markers                                     every marker asked for so far is acknowledged
//	advance by=D                                time passes; timers fire at their deadlines
//	describe id=T                               DescribeTransactions
//	list [states=(S, …)] [pids=(N, …)] [longer-than=D]
//	restart                                     a new shard (coordinator epoch + 1) replays every record
//
// Producer ids the shard asks for are handed out from 1000 up. Times are
// shown relative to the start of the transcript.
func TestShardTranscript(t *testing.T) {
	datadriven.Walk(t, "testdata/shard", func(t *testing.T, path string) {
		d := newDriver()
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			a := transcript.NewCmd(t, td)
			defer a.Done()
			return d.run(t, td, a)
		})
	})
}

func (d *driver) run(t *testing.T, td *datadriven.TestData, a *transcript.Cmd) string {
	var b strings.Builder
	switch td.Cmd {
	case "config":
		d.cfg.MaxTimeoutMs = int32(a.Ms("max.timeout", int64(d.cfg.MaxTimeoutMs)))
		d.cfg.AbortCheckMs = a.Ms("abort.check", d.cfg.AbortCheckMs)
		d.cfg.ExpirationCheckMs = a.Ms("expiry.check", d.cfg.ExpirationCheckMs)
		d.cfg.IDExpirationMs = a.Ms("expiration", d.cfg.IDExpirationMs)
		d.cfg.ValueVersion = int16(a.Int("value.version", int64(d.cfg.ValueVersion)))
		d.s.Loaded(d.now) // the checks' intervals count from now
	case "init":
		req := InitRequest{TransactionalID: a.String("id", ""), TimeoutMs: int32(a.Ms("timeout", 60000)),
			ProducerID: a.Int("pid", -1), ProducerEpoch: int16(a.Int("epoch", -1))}
		d.report(&b, "init", func(newPID int64) coord.Op[*Shard] {
			r := req
			r.NewProducerID = newPID
			return func(s *Shard, now time.Time, w coord.Waiter, out *coord.Output) { s.InitProducerID(r, now, w, out) }
		})
	case "add":
		d.add(t, td, a, &b)
	case "end":
		req := EndRequest{TransactionalID: a.String("id", ""), ProducerID: a.Int("pid", -1),
			ProducerEpoch: int16(a.Int("epoch", -1)), Commit: a.Has("commit"), TV2: a.Has("v5")}
		a.Has("abort")
		d.report(&b, "end", func(newPID int64) coord.Op[*Shard] {
			r := req
			r.NewProducerID = newPID
			return func(s *Shard, now time.Time, w coord.Waiter, out *coord.Output) { s.EndTxn(r, now, w, out) }
		})
	case "markers":
		before := len(d.records)
		jobs := d.completeMarkers()
		if len(jobs) == 0 {
			b.WriteString("no markers pending\n")
		}
		for _, j := range jobs {
			fmt.Fprintf(&b, "acknowledged %s\n", showJob(j))
		}
		for _, r := range d.records[before:] {
			fmt.Fprintf(&b, "record %s\n", d.showRecord(r))
		}
		d.showLate(&b)
	case "advance":
		d.advance(d.now.Add(time.Duration(a.Ms("by", 0))*time.Millisecond), func(at time.Time, out *coord.Output) {
			if len(out.Records)+len(out.Effects)+len(out.Replies) > 0 {
				fmt.Fprintf(&b, "at %s:\n", d.at(at.UnixMilli()))
				d.show(&b, out)
			}
		})
		d.showLate(&b)
		if b.Len() == 0 {
			fmt.Fprintf(&b, "nothing happens; now %s\n", d.at(d.now.UnixMilli()))
		}
	case "describe":
		v, _, _, err := d.do(func(int64) coord.Op[*Shard] {
			return func(s *Shard, now time.Time, w coord.Waiter, out *coord.Output) {
				s.Describe(a.String("id", ""), now, w, out)
			}
		})
		if err != nil {
			fmt.Fprintf(&b, "describe: %s\n", errName(err))
			break
		}
		desc := v.(Description)
		fmt.Fprintf(&b, "%s: %s\n", desc.TransactionalID, d.showTxn(&Txn{State: desc.State, ProducerID: desc.ProducerID,
			ProducerEpoch: desc.ProducerEpoch, TimeoutMs: desc.TimeoutMs, Partitions: desc.Partitions, StartMs: desc.StartMs,
			PrevProducerID: -1, NextProducerID: -1, ClientTV: desc.ClientTV}))
	case "list":
		d.list(t, td, a, &b)
	case "restart":
		if err := d.restart(); err != nil {
			td.Fatalf(t, "restart: %v", err)
		}
		fmt.Fprintf(&b, "replayed %d records; coordinator epoch %d\n", len(d.records), d.epoch)
	default:
		td.Fatalf(t, "unknown command %s", td.Cmd)
	}
	return b.String()
}

// report runs an op and prints what it wrote and asked for, then its
// answer (or that it waits).
func (d *driver) report(b *strings.Builder, what string, op func(newPID int64) coord.Op[*Shard]) {
	v, out, answered, err := d.do(op)
	d.show(b, out)
	if !answered {
		fmt.Fprintf(b, "%s waits\n", what)
		return
	}
	if r, ok := v.(ProducerIDAndEpoch); ok && err == nil {
		fmt.Fprintf(b, "%s: ok, pid %d epoch %d\n", what, r.ProducerID, r.ProducerEpoch)
		return
	}
	fmt.Fprintf(b, "%s: %s\n", what, errName(err))
}

func (d *driver) showLate(b *strings.Builder) {
	for _, r := range d.late {
		fmt.Fprintf(b, "earlier request answered: %s\n", errName(r.Err))
	}
	d.late = nil
}

func (d *driver) add(t *testing.T, td *datadriven.TestData, a *transcript.Cmd, b *strings.Builder) {
	tps, err := parseTPs(a.List("partitions"))
	if err != nil {
		td.Fatalf(t, "%v", err)
	}
	req := AddRequest{TransactionalID: a.String("id", ""), ProducerID: a.Int("pid", -1), ProducerEpoch: int16(a.Int("epoch", -1)),
		Partitions: tps, VerifyOnly: a.Has("verify")}
	if a.Has("tv2") {
		req.TV = TV2
	}
	if !req.VerifyOnly {
		d.report(b, "add", func(int64) coord.Op[*Shard] {
			return func(s *Shard, now time.Time, w coord.Waiter, out *coord.Output) { s.AddPartitions(req, now, w, out) }
		})
		return
	}
	v, _, _, err := d.do(func(int64) coord.Op[*Shard] {
		return func(s *Shard, now time.Time, w coord.Waiter, out *coord.Output) { s.Verify(req, now, w, out) }
	})
	if err != nil {
		fmt.Fprintf(b, "verify: %s\n", errName(err))
		return
	}
	per := v.(map[topicpart.TopicPartition]error)
	for _, tp := range tps {
		fmt.Fprintf(b, "verify %s: %s\n", tp, errName(per[tp]))
	}
}

func (d *driver) list(t *testing.T, td *datadriven.TestData, a *transcript.Cmd, b *strings.Builder) {
	f := ListFilter{MinDurationMs: a.Ms("longer-than", -1)}
	for _, s := range a.List("states") {
		st, ok := ParseState(s)
		if !ok {
			td.Fatalf(t, "unknown state %s", s)
		}
		f.States = append(f.States, st)
	}
	for _, p := range a.List("pids") {
		var pid int64
		fmt.Sscan(p, &pid)
		f.ProducerIDs = append(f.ProducerIDs, pid)
	}
	v, _, _, _ := d.do(func(int64) coord.Op[*Shard] {
		return func(s *Shard, now time.Time, w coord.Waiter, out *coord.Output) { s.List(f, now, w, out) }
	})
	list, _ := v.([]Description)
	if len(list) == 0 {
		b.WriteString("no transactions\n")
	}
	for _, desc := range list {
		fmt.Fprintf(b, "%s: %s pid %d\n", desc.TransactionalID, desc.State, desc.ProducerID)
	}
}
