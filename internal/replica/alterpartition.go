package replica

import (
	"context"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/replica/isr"
)

// AlterPartitionSender sends AlterPartition (v3: NewIsrWithEpochs) to the
// active controller, wherever it is, and returns its per-partition answers;
// an error is a failure of the whole request (retried).
type AlterPartitionSender interface {
	AlterPartition(ctx context.Context, brokerID int32, brokerEpoch int64, items []AlterPartitionItem) ([]AlterPartitionAnswer, error)
}

// AlterPartitionItem is one partition's proposed ISR.
type AlterPartitionItem struct {
	TopicID        [16]byte
	Partition      int32
	LeaderEpoch    int32
	PartitionEpoch int32
	ISR            []isr.Member
}

// AlterPartitionAnswer is the controller's answer for one partition.
type AlterPartitionAnswer struct {
	TopicID   [16]byte
	Partition int32
	isr.Result
}

// alterRetryBackoff is how soon a failed request or a proposal to resend
// goes out again (Kafka's AlterPartitionManager retries after 50 ms).
const alterRetryBackoff = 50 * time.Millisecond

// alterManager is Kafka's AlterPartitionManager: ISR proposals queue by
// partition (a newer one replaces a queued older one), all queued ones go
// out in one AlterPartition with this broker's id and epoch, one request at
// a time, retried until the controller answers; partitions the answer
// leaves out stay queued.
type alterManager struct {
	r *replication

	mu      sync.Mutex
	queue   map[*Partition]*isr.Proposal
	running bool
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

func newAlterManager(r *replication) *alterManager {
	return &alterManager{r: r, queue: map[*Partition]*isr.Proposal{}, wake: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
}

func (a *alterManager) submit(p *Partition, prop *isr.Proposal) {
	a.mu.Lock()
	a.queue[p] = prop
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// resubmit queues a proposal again after a short backoff.
func (a *alterManager) resubmit(p *Partition, prop *isr.Proposal) {
	go func() {
		ch, t := clock.NewTimer(a.r.m.logs.Clock(), alterRetryBackoff)
		defer t.Stop()
		select {
		case <-ch:
			a.submit(p, prop)
		case <-a.stop:
		}
	}()
}

func (a *alterManager) start() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.running {
		return
	}
	a.running = true
	go a.run()
}

func (a *alterManager) close() {
	a.mu.Lock()
	running := a.running
	a.running = true
	a.mu.Unlock()
	close(a.stop)
	if running {
		<-a.done
	} else {
		close(a.done)
	}
}

func (a *alterManager) run() {
	defer close(a.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-a.stop
		cancel()
	}()
	for {
		select {
		case <-a.stop:
			return
		case <-a.wake:
		}
		for a.sendQueued(ctx) {
			ch, t := clock.NewTimer(a.r.m.logs.Clock(), alterRetryBackoff)
			select {
			case <-ch:
			case <-a.stop:
				t.Stop()
				return
			}
		}
	}
}

// sendQueued sends every queued proposal in one request and hands each
// answer to its partition; true when the request failed and must be retried.
func (a *alterManager) sendQueued(ctx context.Context) bool {
	batch, items := a.take()
	if len(items) == 0 {
		return false
	}
	rctx, cancel := context.WithTimeout(ctx, a.r.cfg.RequestTimeout)
	answers, err := a.r.cfg.AlterPartition.AlterPartition(rctx, a.r.nodeID, a.r.brokerEpoch(), items)
	cancel()
	if ctx.Err() != nil {
		return false
	}
	return a.finish(batch, answers, err)
}

// take empties the queue into one request's items.
func (a *alterManager) take() (map[*Partition]*isr.Proposal, []AlterPartitionItem) {
	a.mu.Lock()
	batch := a.queue
	a.queue = map[*Partition]*isr.Proposal{}
	a.mu.Unlock()
	items := make([]AlterPartitionItem, 0, len(batch))
	for p, prop := range batch {
		items = append(items, AlterPartitionItem{TopicID: p.TopicID, Partition: p.TP.Partition, LeaderEpoch: prop.LeaderEpoch,
			PartitionEpoch: prop.PartitionEpoch, ISR: prop.ISR})
	}
	return batch, items
}

// finish hands each answer to its partition and queues again what the
// request did not settle; true when something must be sent again.
func (a *alterManager) finish(batch map[*Partition]*isr.Proposal, answers []AlterPartitionAnswer, err error) bool {
	if err != nil {
		a.r.logger.Warn("AlterPartition failed; retrying", "partitions", len(batch), "err", err)
		a.requeue(batch)
		return true
	}
	type key struct {
		id   [16]byte
		part int32
	}
	byKey := map[key]*Partition{}
	for p := range batch {
		byKey[key{p.TopicID, p.TP.Partition}] = p
	}
	for _, ans := range answers {
		p := byKey[key{ans.TopicID, ans.Partition}]
		prop := batch[p]
		if p == nil || prop == nil {
			continue
		}
		delete(batch, p)
		a.r.m.alterPartitionDone(p, prop.Seq, ans.Result)
	}
	if len(batch) > 0 {
		a.requeue(batch)
		return true
	}
	return false
}

// requeue puts proposals back unless a newer one for the partition queued
// meanwhile.
func (a *alterManager) requeue(batch map[*Partition]*isr.Proposal) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for p, prop := range batch {
		if _, newer := a.queue[p]; !newer {
			a.queue[p] = prop
		}
	}
}
