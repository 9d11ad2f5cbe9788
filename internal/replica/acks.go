package replica

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ackWaiter is an acks=all produce waiting for its partition's high
// watermark (Kafka's DelayedProduce): no goroutine of its own; whoever
// moves the high watermark, or ends the leadership, answers it. err is set
// before done is closed.
type ackWaiter struct {
	required int64
	done     chan struct{}
	err      error
}

// awaitHighWatermark waits until the high watermark reaches required
// (Kafka's checkEnoughReplicasReachOffset): then it succeeds while the
// maximal ISR holds at least the effective min.insync.replicas, else it is
// NOT_ENOUGH_REPLICAS_AFTER_APPEND (the record is committed but fewer
// replicas than asked for hold it). It is registered under the role's read
// lock, so a leadership change, which fails every waiter under the write
// lock, cannot slip between the check and the registration.
func (p *Partition) awaitHighWatermark(ctx context.Context, required int64) error {
	w, err := p.registerAck(required)
	if w == nil {
		return err
	}
	select {
	case <-w.done:
		return w.err
	case <-ctx.Done():
		p.mu.Lock()
		for i, x := range p.acks {
			if x == w {
				p.acks = append(p.acks[:i], p.acks[i+1:]...)
				break
			}
		}
		p.mu.Unlock()
		select {
		case <-w.done: // answered meanwhile
			return w.err
		default:
		}
		return fmt.Errorf("%w: the high watermark %d did not reach %d in time (ISR %s)",
			kerr.RequestTimedOut, p.Log.HighWatermark(), required, p.isrString())
	}
}

// registerAck registers an acks=all waiter for required, or answers at
// once (nil waiter): the high watermark has passed it, or this broker does
// not lead.
func (p *Partition) registerAck(required int64) (*ackWaiter, error) {
	p.roleMu.RLock()
	if !p.role.Leader {
		role := p.role
		p.roleMu.RUnlock()
		return nil, NotLeaderError(role)
	}
	if p.Log.HighWatermark() >= required {
		err := p.enoughReplicasLocked()
		p.roleMu.RUnlock()
		return nil, err
	}
	w := &ackWaiter{required: required, done: make(chan struct{})}
	p.mu.Lock()
	p.acks = append(p.acks, w)
	p.mu.Unlock()
	p.roleMu.RUnlock()
	// The high watermark may have passed between the check and the
	// registration; completeAcks then missed w.
	if hw := p.Log.HighWatermark(); hw >= required {
		p.completeAcks(hw, p.enoughReplicas())
	}
	return w, nil
}

// enoughReplicasLocked is nil, or NOT_ENOUGH_REPLICAS_AFTER_APPEND when the
// maximal ISR is smaller than the effective min.insync.replicas; roleMu is
// held.
func (p *Partition) enoughReplicasLocked() error {
	if p.leader == nil {
		return nil
	}
	p.replMu.Lock()
	defer p.replMu.Unlock()
	if p.leader.EnoughReplicas() {
		return nil
	}
	return fmt.Errorf("%w: the ISR %v is smaller than min.insync.replicas %d", kerr.NotEnoughReplicasAfterAppend,
		p.leader.MaximalISR(), p.leader.EffectiveMinISR())
}

func (p *Partition) enoughReplicas() bool {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	return p.enoughReplicasLocked() == nil
}

// completeAcks answers every waiter the high watermark hw has passed.
func (p *Partition) completeAcks(hw int64, enough bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.acks) == 0 {
		return
	}
	keep := p.acks[:0]
	for _, w := range p.acks {
		if w.required > hw {
			keep = append(keep, w)
			continue
		}
		if !enough {
			w.err = fmt.Errorf("%w: the ISR of %s is smaller than min.insync.replicas", kerr.NotEnoughReplicasAfterAppend, p.TP)
		}
		close(w.done)
	}
	clear(p.acks[len(keep):])
	p.acks = keep
}

// failAcks answers every waiter with err.
func (p *Partition) failAcks(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.acks {
		w.err = err
		close(w.done)
	}
	p.acks = nil
}

// checkMinISR answers the waiting acks=all produces
// NOT_ENOUGH_REPLICAS_AFTER_APPEND once the committed ISR is below the
// effective min.insync.replicas: the high watermark cannot pass them until
// the ISR grows again (strict min ISR), so they learn now rather than at
// their timeout. (Kafka lets them time out; the answer is as indeterminate
// as a timeout: the records may be committed later.)
func (m *Manager) checkMinISR(p *Partition) {
	p.roleMu.RLock()
	under := false
	var isr []int32
	var minISR int
	if p.role.Leader && p.leader != nil {
		p.replMu.Lock()
		under, isr, minISR = p.leader.UnderMinISR(), p.leader.ISR(), p.leader.EffectiveMinISR()
		p.replMu.Unlock()
	}
	p.roleMu.RUnlock()
	if under {
		p.failAcks(fmt.Errorf("%w: the ISR of %s shrank to %v, below min.insync.replicas %d",
			kerr.NotEnoughReplicasAfterAppend, p.TP, isr, minISR))
	}
}

// isrString is the ISR for messages.
func (p *Partition) isrString() string {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	if p.leader == nil {
		return "of this broker alone"
	}
	p.replMu.Lock()
	defer p.replMu.Unlock()
	return fmt.Sprint(p.leader.ISR())
}
