package cluster

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/quorum"
)

// Listener is what a node's broker does with the metadata: its replica
// manager, group coordinator and configuration follow each published image.
type Listener interface {
	// Publish makes the broker act on next. d says what changed since
	// prev; a nil d means compare prev and next whole (the first publish,
	// whose prev is the empty image, and a snapshot installed from the
	// leader). Publish runs on the publisher's goroutine, one image at a
	// time, in log order.
	Publish(prev, next *metadata.Image, d *metadata.Delta)
}

// stateMachine is the quorum's state machine: each committed entry is
// applied to the image (metadata.Apply), handed to the controller and
// queued for the publisher. It runs on the raft loop and never blocks.
type stateMachine struct {
	shell *controller.Shell
	pub   *publisher
	im    atomic.Pointer[metadata.Image]
}

func newStateMachine(shell *controller.Shell, pub *publisher) *stateMachine {
	sm := &stateMachine{shell: shell, pub: pub}
	sm.im.Store(metadata.Empty())
	return sm
}

func (sm *stateMachine) Apply(e quorum.Entry) error {
	entry, err := metadata.DecodeEntry(e.Data)
	if err != nil {
		return fmt.Errorf("metadata entry %v: %w", e.EntryID, err)
	}
	prev := sm.im.Load()
	next, d := metadata.Apply(prev, e.Index, e.Term, entry)
	sm.pub.push(pubItem{prev: prev, next: next, d: d}, func() { sm.im.Store(next) })
	sm.shell.Applied(next, entry)
	return nil
}

func (sm *stateMachine) Snapshot() ([]byte, error) { return metadata.EncodeSnapshot(sm.im.Load()), nil }

func (sm *stateMachine) Restore(id quorum.EntryID, data []byte) error {
	im, err := metadata.DecodeSnapshot(data)
	if err != nil {
		return fmt.Errorf("metadata snapshot %v: %w", id, err)
	}
	// The bootstrap snapshot is encoded before raft gives it an index.
	im.Index, im.Term = id.Index, id.Term
	prev := sm.im.Load()
	sm.pub.push(pubItem{prev: prev, next: im}, func() { sm.im.Store(im) })
	sm.shell.Applied(im, nil)
	return nil
}

// image is the image after the last applied entry.
func (sm *stateMachine) image() *metadata.Image { return sm.im.Load() }

// pubItem is one applied entry (or installed snapshot: d nil) to publish.
type pubItem struct {
	prev, next *metadata.Image
	d          *metadata.Delta
}

// publisher hands applied images to the broker's Listener on its own
// goroutine, so the raft loop never waits for the broker. Nothing is
// published before Start: a node rebuilds its image from the snapshot and
// the log first, without side effects, and its first publish is the whole
// image it has when it has caught up.
type publisher struct {
	mu      sync.Mutex
	queue   []pubItem
	started bool
	closed  bool
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	// changed is closed, and replaced, at every publish.
	changed chan struct{}

	published atomic.Pointer[metadata.Image]
}

func newPublisher() *publisher {
	return &publisher{wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		changed: make(chan struct{})}
}

// push queues an applied image; store makes it the state machine's image
// under the same lock, so Start sees the image and the queue agree.
func (p *publisher) push(it pubItem, store func()) {
	p.mu.Lock()
	store()
	if p.started {
		p.queue = append(p.queue, it)
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// start publishes current() whole to l, then every image applied after it.
func (p *publisher) start(l Listener, current func() *metadata.Image) {
	p.mu.Lock()
	if p.started {
		p.mu.Unlock()
		return
	}
	p.started = true
	first := current()
	p.mu.Unlock()
	go p.run(l, first)
}

func (p *publisher) run(l Listener, first *metadata.Image) {
	defer close(p.done)
	l.Publish(metadata.Empty(), first, nil)
	p.publish(first)
	for {
		select {
		case <-p.stop:
			return
		case <-p.wake:
		}
		p.mu.Lock()
		items := p.queue
		p.queue = nil
		p.mu.Unlock()
		for _, it := range items {
			last := p.published.Load()
			if it.next.Index <= last.Index {
				continue // covered by the first publish
			}
			d := it.d
			if it.prev != last {
				d = nil
			}
			l.Publish(last, it.next, d)
			p.publish(it.next)
		}
	}
}

func (p *publisher) publish(im *metadata.Image) {
	p.published.Store(im)
	p.mu.Lock()
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}

// image is the last published image, nil before the first publish.
func (p *publisher) image() *metadata.Image { return p.published.Load() }

// wait returns once an image at or past index is published.
func (p *publisher) wait(ctx context.Context, index uint64) error {
	for {
		p.mu.Lock()
		ch := p.changed
		p.mu.Unlock()
		if im := p.published.Load(); im != nil && im.Index >= index {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-p.done:
			return fmt.Errorf("metadata publisher stopped")
		}
	}
}

// close stops the publisher and waits for the image being published. It
// may be called more than once.
func (p *publisher) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.done
		return
	}
	p.closed = true
	started := p.started
	p.started = true // no start after close
	p.mu.Unlock()
	close(p.stop)
	if started {
		<-p.done
	} else {
		close(p.done)
	}
}
