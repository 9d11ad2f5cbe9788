package coord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// Record is one record of a coordinator partition. A nil Value is a
// tombstone.
type Record struct {
	Key, Value []byte
}

// Waiter identifies an op waiting for its reply. Zero is never a waiter.
type Waiter uint64

// Reply answers one waiter.
type Reply struct {
	Waiter Waiter
	Value  any
	Err    error
}

// Output collects what an op or a timer wants done.
type Output struct {
	// Records are written in a plain (non-transactional) batch.
	Records []Record
	// Txn, when set, are records written for a transactional producer, in
	// a batch of their own (a transactional offset commit).
	Txn *TxnWrite
	// Marker, when set, is a transaction marker written to the partition
	// after the records (ending a transaction on it).
	Marker  *Marker
	Replies []Reply
	// Effects are handed to Options.OnDurable once the round's writes are
	// durable, in op order; a round whose write fails drops them.
	Effects []any
}

// TxnWrite is records a transactional producer writes through a
// coordinator: one batch with the producer's id and epoch and the
// transactional attribute.
type TxnWrite struct {
	ProducerID    int64
	ProducerEpoch int16
	Records       []Record
}

// Write appends records to the partition.
func (o *Output) Write(recs ...Record) { o.Records = append(o.Records, recs...) }

// WriteTxn appends records of a transactional producer.
func (o *Output) WriteTxn(pid int64, epoch int16, recs ...Record) {
	if o.Txn == nil {
		o.Txn = &TxnWrite{ProducerID: pid, ProducerEpoch: epoch}
	}
	o.Txn.Records = append(o.Txn.Records, recs...)
}

// Marker is a transaction marker a coordinator writes to its own
// partition (log.MarkerSpec).
type Marker struct {
	ProducerID         int64
	ProducerEpoch      int16
	Commit             bool
	CoordinatorEpoch   int32
	TransactionVersion int16
}

// WriteMarker appends a transaction marker.
func (o *Output) WriteMarker(m Marker) { o.Marker = &m }

// Effect asks for e to be handed to Options.OnDurable once durable.
func (o *Output) Effect(e any) { o.Effects = append(o.Effects, e) }

// Reply answers w (once the round's records are durable).
func (o *Output) Reply(w Waiter, v any, err error) {
	if w != 0 {
		o.Replies = append(o.Replies, Reply{Waiter: w, Value: v, Err: err})
	}
}

// Shard is the state machine of one coordinator partition. Every method is
// called on the partition's owner goroutine.
type Shard interface {
	// Replay applies one record read from the log while loading.
	Replay(offset int64, r Record) error
	// Loaded is called once replay is complete.
	Loaded(now time.Time)
	// Tick runs the timers due at now.
	Tick(now time.Time, out *Output)
	// NextDeadline is the earliest pending timer.
	NextDeadline() (time.Time, bool)
}

// TxnShard is a Shard whose partition also holds transactional records and
// transaction markers (transactional offset commits); replay hands them
// over instead of skipping them.
type TxnShard interface {
	// ReplayTxn applies one record of a transactional batch.
	ReplayTxn(offset, producerID int64, r Record) error
	// ReplayMarker applies a transaction marker.
	ReplayMarker(offset, producerID int64, commit bool) error
}

// Op runs on the owner goroutine of a shard. w is the op's own waiter.
type Op[S Shard] func(s S, now time.Time, w Waiter, out *Output)

// Partitions is what the runtime needs from the replica manager: the log of
// a hosted partition to replay, and appends that return once acknowledged.
type Partitions interface {
	// Log is tp's log while this broker hosts tp.
	Log(tp topicpart.TopicPartition) (*log.Log, bool)
	// Append writes a batch and waits for the acknowledgement acks asks for.
	Append(ctx context.Context, tp topicpart.TopicPartition, batch []byte, acks int16, origin log.Origin) (log.AppendResult, error)
	// AppendMarker writes a transaction marker and waits likewise.
	AppendMarker(ctx context.Context, tp topicpart.TopicPartition, spec log.MarkerSpec, acks int16) (log.AppendResult, error)
}

// Options configure a Runtime.
type Options[S Shard] struct {
	Topic    string
	Replicas Partitions
	// NewShard returns an empty shard for a partition.
	NewShard func(partition int32) S
	Clock    clock.Clock
	Logger   *slog.Logger
	// Codec compresses written batches (offsets.topic.compression.codec).
	Codec func() record.Codec
	// LoadBufferBytes is the read size while loading (offsets.load.buffer.size).
	LoadBufferBytes func() int
	// WriteTimeout bounds one append (offsets.commit.timeout.ms).
	WriteTimeout func() time.Duration
	// OnDurable receives the effects of a round once its writes are
	// durable, on the owner goroutine (it must not block on the shard).
	OnDurable func(partition int32, effects []any)
}

// ErrRecordsTooLarge: one op's records do not fit in a batch of the
// partition's max.message.bytes.
var ErrRecordsTooLarge = errors.New("coordinator records exceed max.message.bytes")

const maxOpsPerRound = 128

var errStopped = errors.New("coordinator partition unloaded while loading")

// Runtime runs the shards of one coordinator.
type Runtime[S Shard] struct {
	o Options[S]

	mu     sync.Mutex
	owners map[int32]*owner[S]
	closed bool
}

// New makes a Runtime with no partitions loaded.
func New[S Shard](o Options[S]) *Runtime[S] {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Codec == nil {
		o.Codec = func() record.Codec { return record.CodecNone }
	}
	if o.LoadBufferBytes == nil {
		o.LoadBufferBytes = func() int { return 5 << 20 }
	}
	if o.WriteTimeout == nil {
		o.WriteTimeout = func() time.Duration { return 5 * time.Second }
	}
	return &Runtime[S]{o: o, owners: make(map[int32]*owner[S])}
}

// Load starts the owner of partition, which replays it and then serves ops.
// Loading an already loaded partition does nothing.
func (r *Runtime[S]) Load(partition int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.owners[partition] != nil {
		return
	}
	ow := &owner[S]{
		rt:        r,
		partition: partition,
		tp:        topicpart.TopicPartition{Topic: r.o.Topic, Partition: partition},
		ops:       make(chan *pendingOp[S], maxOpsPerRound),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
		tick:      make(chan struct{}, 1),
		waiters:   make(map[Waiter]chan result),
	}
	r.owners[partition] = ow
	go ow.run()
}

// Unload stops the owner of partition and waits for it. Parked and queued
// ops are answered NOT_COORDINATOR.
func (r *Runtime[S]) Unload(partition int32) {
	r.mu.Lock()
	ow := r.owners[partition]
	delete(r.owners, partition)
	r.mu.Unlock()
	if ow != nil {
		ow.shutdown()
	}
}

// Close unloads every partition; later Loads do nothing.
func (r *Runtime[S]) Close() {
	r.mu.Lock()
	r.closed = true
	owners := r.owners
	r.owners = make(map[int32]*owner[S])
	r.mu.Unlock()
	for _, ow := range owners {
		ow.stopOnce.Do(func() { close(ow.stop) })
	}
	for _, ow := range owners {
		<-ow.done
	}
}

// Owned lists the partitions with an owner (loading or loaded).
func (r *Runtime[S]) Owned() []int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]int32, 0, len(r.owners))
	for p := range r.owners {
		out = append(out, p)
	}
	return out
}

// Do runs op on partition's shard and returns its reply. It fails with
// NOT_COORDINATOR when the partition has no owner and
// COORDINATOR_LOAD_IN_PROGRESS while it loads.
func (r *Runtime[S]) Do(ctx context.Context, partition int32, op Op[S]) (any, error) {
	r.mu.Lock()
	ow := r.owners[partition]
	r.mu.Unlock()
	if ow == nil {
		return nil, fmt.Errorf("%w: %s-%d is not loaded on this broker", kerr.NotCoordinator, r.o.Topic, partition)
	}
	if !ow.loaded.Load() {
		return nil, fmt.Errorf("%w: %s-%d is loading", kerr.CoordinatorLoadInProgress, r.o.Topic, partition)
	}
	p := &pendingOp[S]{op: op, reply: make(chan result, 1)}
	select {
	case ow.ops <- p:
	case <-ow.done:
		return nil, ow.stoppedErr()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case res := <-p.reply:
		return res.v, res.err
	case <-ow.done:
		select {
		case res := <-p.reply:
			return res.v, res.err
		default:
			return nil, ow.stoppedErr()
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type result struct {
	v   any
	err error
}

type pendingOp[S Shard] struct {
	op    Op[S]
	reply chan result
}

// owner is the goroutine that owns one shard.
type owner[S Shard] struct {
	rt        *Runtime[S]
	partition int32
	tp        topicpart.TopicPartition
	ops       chan *pendingOp[S]
	stop      chan struct{}
	done      chan struct{}
	tick      chan struct{}
	loaded    atomic.Bool
	stopOnce  sync.Once

	// Owner goroutine only.
	shard      S
	waiters    map[Waiter]chan result
	nextWaiter Waiter
	timer      clock.Timer
	timerAt    time.Time
	requeue    []*pendingOp[S]
}

func (ow *owner[S]) shutdown() {
	ow.stopOnce.Do(func() { close(ow.stop) })
	<-ow.done
}

func (ow *owner[S]) stoppedErr() error {
	return fmt.Errorf("%w: %s-%d was unloaded", kerr.NotCoordinator, ow.rt.o.Topic, ow.partition)
}

func (ow *owner[S]) logger() *slog.Logger {
	return ow.rt.o.Logger.With("partition", ow.tp.String())
}

func (ow *owner[S]) run() {
	defer func() {
		if ow.timer != nil {
			ow.timer.Stop()
		}
		err := ow.stoppedErr()
		ow.failWaiters(err)
		for _, p := range ow.requeue {
			p.reply <- result{err: err}
		}
		ow.requeue = nil
		close(ow.done)
		// Ops that raced with the stop are answered by Do through done.
	}()
	if err := ow.load(); err != nil {
		if !errors.Is(err, errStopped) {
			ow.logger().Error("coordinator partition failed to load", "err", err)
		}
		ow.rt.mu.Lock()
		if ow.rt.owners[ow.partition] == ow {
			delete(ow.rt.owners, ow.partition)
		}
		ow.rt.mu.Unlock()
		return
	}
	ow.loaded.Store(true)
	for {
		ow.armTimer()
		var round []*pendingOp[S]
		if len(ow.requeue) > 0 {
			round, ow.requeue = ow.requeue, nil
		} else {
			select {
			case <-ow.stop:
				return
			case p := <-ow.ops:
				round = append(round, p)
			case <-ow.tick:
				ow.timer = nil // fired
			}
		}
	drain:
		for len(round) < maxOpsPerRound {
			select {
			case p := <-ow.ops:
				round = append(round, p)
			default:
				break drain
			}
		}
		ow.process(round)
		select {
		case <-ow.stop:
			return
		default:
		}
	}
}

// load replays the partition into a fresh shard.
func (ow *owner[S]) load() error {
	l, ok := ow.rt.o.Replicas.Log(ow.tp)
	if !ok {
		return fmt.Errorf("%w: %s is not hosted", kerr.UnknownTopicOrPartition, ow.tp)
	}
	start := ow.rt.o.Clock.Now()
	s := ow.rt.o.NewShard(ow.partition)
	maxOut := max(int(l.Config().MaxMessageBytes), 1<<20) * 64
	off := l.LogStartOffset()
	var buf []byte
	var records int
	for {
		select {
		case <-ow.stop:
			return errStopped
		default:
		}
		leo := l.LogEndOffset()
		if off >= leo {
			break
		}
		var err error
		buf, err = l.Read(buf[:0], off, ow.rt.o.LoadBufferBytes(), leo, true)
		if err != nil {
			return fmt.Errorf("read %s at %d: %w", ow.tp, off, err)
		}
		if len(buf) == 0 {
			break
		}
		next, n, err := replayBatches(s, buf, maxOut)
		records += n
		if err != nil {
			return err
		}
		if next <= off {
			return fmt.Errorf("%w: %s: no progress reading at offset %d", log.ErrCorruptSegment, ow.tp, off)
		}
		off = next
	}
	now := ow.rt.o.Clock.Now()
	s.Loaded(now)
	ow.shard = s
	ow.logger().Info("coordinator partition loaded", "records", records, "end_offset", off, "took", now.Sub(start))
	return nil
}

// replayBatches replays every record of the batches in buf and returns the
// offset after the last batch.
func replayBatches[S Shard](s S, buf []byte, maxOut int) (next int64, n int, err error) {
	for rest := buf; len(rest) > 0; {
		batch, tail, ok := record.Split(rest)
		if !ok {
			return next, n, fmt.Errorf("%w: truncated batch while loading", log.ErrCorruptSegment)
		}
		rest = tail
		h, err := record.ParseHeader(batch)
		if err != nil {
			return next, n, err
		}
		next = h.NextOffset()
		ts, txnAware := any(s).(TxnShard)
		if h.Control() || h.Transactional() {
			if !txnAware {
				continue
			}
			if h.Control() {
				m, err := record.ParseControl(batch, maxOut)
				if err != nil {
					return next, n, fmt.Errorf("replay marker at offset %d: %w", h.BaseOffset, err)
				}
				if m.Type == record.ControlAbort || m.Type == record.ControlCommit {
					if err := ts.ReplayMarker(h.BaseOffset, h.ProducerID, m.Type == record.ControlCommit); err != nil {
						return next, n, err
					}
				}
				continue
			}
		}
		err = record.Iterate(batch, maxOut, func(r *record.Record) error {
			n++
			rec := Record{Key: cloneBytes(r.Key), Value: cloneBytes(r.Value)}
			if h.Transactional() {
				return ts.ReplayTxn(h.BaseOffset+int64(r.OffsetDelta), h.ProducerID, rec)
			}
			return s.Replay(h.BaseOffset+int64(r.OffsetDelta), rec)
		})
		if err != nil {
			return next, n, fmt.Errorf("replay batch at offset %d: %w", h.BaseOffset, err)
		}
	}
	return next, n, nil
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

func (ow *owner[S]) armTimer() {
	at, ok := ow.shard.NextDeadline()
	if !ok {
		if ow.timer != nil {
			ow.timer.Stop()
			ow.timer = nil
		}
		return
	}
	if ow.timer != nil && at.Equal(ow.timerAt) {
		return
	}
	if ow.timer != nil {
		ow.timer.Stop()
	}
	ow.timerAt = at
	d := max(at.Sub(ow.rt.o.Clock.Now()), 0)
	ow.timer = ow.rt.o.Clock.AfterFunc(d, func() {
		select {
		case ow.tick <- struct{}{}:
		default:
		}
	})
}

// process runs one round: the ops in order, due timers, one durable append,
// then the replies.
func (ow *owner[S]) process(round []*pendingOp[S]) {
	now := ow.rt.o.Clock.Now()
	maxBytes := ow.maxBatchBytes()
	var (
		replies []Reply
		groups  []writeGroup
		effects []any
		tooBig  = -1
	)
	collect := func(out *Output) {
		replies = append(replies, out.Replies...)
		effects = append(effects, out.Effects...)
		if len(out.Records) > 0 {
			groups = append(groups, writeGroup{recs: out.Records, pid: -1})
		}
		if out.Txn != nil && len(out.Txn.Records) > 0 {
			groups = append(groups, writeGroup{recs: out.Txn.Records, pid: out.Txn.ProducerID, epoch: out.Txn.ProducerEpoch})
		}
		if out.Marker != nil {
			groups = append(groups, writeGroup{marker: out.Marker})
		}
	}
	for i, p := range round {
		ow.nextWaiter++
		w := ow.nextWaiter
		ow.waiters[w] = p.reply
		var out Output
		p.op(ow.shard, now, w, &out)
		if ow.tooLarge(&out, now, maxBytes) {
			tooBig = i
			ow.deliver([]Reply{{Waiter: w, Err: fmt.Errorf("%w: %w: %d records of one request",
				kerr.UnknownServerError, ErrRecordsTooLarge, len(out.Records))}})
			break
		}
		collect(&out)
	}
	if tooBig < 0 {
		if at, ok := ow.shard.NextDeadline(); ok && !now.Before(at) {
			var out Output
			ow.shard.Tick(now, &out)
			collect(&out)
		}
	}
	if tooBig >= 0 {
		ow.requeue = append(ow.requeue, round[tooBig+1:]...)
	}
	if err := ow.write(now, groups, maxBytes); err != nil {
		nerr := NormalizeWriteError(err)
		ow.logger().Warn("coordinator write failed; rebuilding the partition state from its log", "err", err)
		for i := range replies {
			replies[i].Value, replies[i].Err = nil, nerr
		}
		ow.deliver(replies)
		ow.reload(nerr)
		return
	}
	ow.deliver(replies)
	if len(effects) > 0 && ow.rt.o.OnDurable != nil {
		ow.rt.o.OnDurable(ow.partition, effects)
	}
	if tooBig >= 0 {
		ow.reload(fmt.Errorf("%w: the coordinator state was rebuilt after an oversized write", kerr.NotCoordinator))
	}
}

// tooLarge reports whether one op's records cannot fit in a batch.
func (ow *owner[S]) tooLarge(out *Output, now time.Time, maxBytes int) bool {
	for _, recs := range [][]Record{out.Records, txnRecords(out.Txn)} {
		if len(recs) > 0 && recordsSize(recs)+record.HeaderSize > maxBytes && !ow.fitsCompressed(recs, now, maxBytes) {
			return true
		}
	}
	return false
}

func txnRecords(t *TxnWrite) []Record {
	if t == nil {
		return nil
	}
	return t.Records
}

// writeGroup is one op's write: plain records (pid -1), a transactional
// producer's records, or a marker.
type writeGroup struct {
	recs   []Record
	pid    int64
	epoch  int16
	marker *Marker
}

// reload answers every parked waiter with err and rebuilds the shard from
// the log. A partition that cannot be reloaded is unloaded.
func (ow *owner[S]) reload(err error) {
	ow.failWaiters(err)
	ow.loaded.Store(false)
	if lerr := ow.load(); lerr != nil {
		if !errors.Is(lerr, errStopped) {
			ow.logger().Error("coordinator partition failed to reload; unloading it", "err", lerr)
		}
		ow.stopOnce.Do(func() { close(ow.stop) })
		ow.rt.mu.Lock()
		if ow.rt.owners[ow.partition] == ow {
			delete(ow.rt.owners, ow.partition)
		}
		ow.rt.mu.Unlock()
		return
	}
	ow.loaded.Store(true)
}

func (ow *owner[S]) failWaiters(err error) {
	for w, ch := range ow.waiters {
		ch <- result{err: err}
		delete(ow.waiters, w)
	}
}

func (ow *owner[S]) deliver(replies []Reply) {
	for _, r := range replies {
		ch, ok := ow.waiters[r.Waiter]
		if !ok {
			continue
		}
		delete(ow.waiters, r.Waiter)
		ch <- result{v: r.Value, err: r.Err}
	}
}

func (ow *owner[S]) maxBatchBytes() int {
	if l, ok := ow.rt.o.Replicas.Log(ow.tp); ok {
		return int(l.Config().MaxMessageBytes)
	}
	return 1048588
}

// recordsSize is the uncompressed size of recs in a batch.
func recordsSize(recs []Record) int {
	var scratch []byte
	n := 0
	for i := range recs {
		scratch = record.AppendRecord(scratch[:0], &record.Record{OffsetDelta: int32(i), Key: recs[i].Key, Value: recs[i].Value})
		n += len(scratch)
	}
	return n
}

func (ow *owner[S]) fitsCompressed(recs []Record, now time.Time, maxBytes int) bool {
	if ow.rt.o.Codec() == record.CodecNone {
		return false
	}
	b, err := ow.build(recs, now)
	return err == nil && len(b) <= maxBytes
}

func (ow *owner[S]) build(recs []Record, now time.Time) ([]byte, error) {
	return ow.buildFor(recs, now, -1, -1)
}

// buildFor encodes records as one batch; pid >= 0 makes it a transactional
// producer's (base sequence -1, as Kafka's coordinator runtime writes them).
func (ow *owner[S]) buildFor(recs []Record, now time.Time, pid int64, epoch int16) ([]byte, error) {
	ts := now.UnixMilli()
	spec := &record.BatchSpec{Codec: ow.rt.o.Codec(), ProducerID: pid, ProducerEpoch: epoch, BaseSequence: -1,
		Transactional: pid >= 0}
	spec.Records = make([]record.BuildRecord, len(recs))
	for i, r := range recs {
		spec.Records[i] = record.BuildRecord{OffsetDelta: int32(i), Timestamp: ts, Key: r.Key, Value: r.Value}
	}
	return record.Build(spec)
}

// write appends the round's writes in op order, each with acks=-1: plain
// record groups in as few batches as fit, a transactional producer's
// records in a batch of their own, markers as they come.
func (ow *owner[S]) write(now time.Time, groups []writeGroup, maxBytes int) error {
	var batch []Record
	size := record.HeaderSize
	appendBatch := func(recs []Record, pid int64, epoch int16) error {
		b, err := ow.buildFor(recs, now, pid, epoch)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), ow.rt.o.WriteTimeout())
		defer cancel()
		_, err = ow.rt.o.Replicas.Append(ctx, ow.tp, b, -1, log.OriginCoordinator)
		return err
	}
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := appendBatch(batch, -1, -1)
		batch, size = batch[:0], record.HeaderSize
		return err
	}
	for _, g := range groups {
		switch {
		case g.marker != nil:
			if err := flush(); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), ow.rt.o.WriteTimeout())
			m := g.marker
			_, err := ow.rt.o.Replicas.AppendMarker(ctx, ow.tp, log.MarkerSpec{ProducerID: m.ProducerID,
				ProducerEpoch: m.ProducerEpoch, Commit: m.Commit, CoordinatorEpoch: m.CoordinatorEpoch,
				TransactionVersion: m.TransactionVersion}, -1)
			cancel()
			if err != nil {
				return err
			}
		case g.pid >= 0:
			if err := flush(); err != nil {
				return err
			}
			if err := appendBatch(g.recs, g.pid, g.epoch); err != nil {
				return err
			}
		default:
			gs := recordsSize(g.recs)
			if len(batch) > 0 && size+gs > maxBytes {
				if err := flush(); err != nil {
					return err
				}
			}
			batch = append(batch, g.recs...)
			size += gs
		}
	}
	return flush()
}

// NormalizeWriteError maps an append failure to the error Kafka's
// coordinators answer with.
func NormalizeWriteError(err error) error {
	var ke *kerr.Error
	switch {
	case errors.Is(err, ErrRecordsTooLarge), errors.Is(err, record.ErrTooLarge):
		return fmt.Errorf("%w: %v", kerr.UnknownServerError, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err)
	case errors.Is(err, log.ErrInvalidProducerEpoch):
		return fmt.Errorf("%w: %v", kerr.InvalidProducerEpoch, err)
	case errors.Is(err, log.ErrTransactionCoordinatorFenced):
		return fmt.Errorf("%w: %v", kerr.TransactionCoordinatorFenced, err)
	case errors.Is(err, log.ErrInvalidTxnState):
		return fmt.Errorf("%w: %v", kerr.InvalidTxnState, err)
	case errors.As(err, &ke):
		switch ke {
		case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
			return fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err)
		case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
			return fmt.Errorf("%w: %v", kerr.UnknownServerError, err)
		case kerr.NotCoordinator, kerr.CoordinatorNotAvailable, kerr.CoordinatorLoadInProgress:
			return err
		}
	}
	return fmt.Errorf("%w: %v", kerr.NotCoordinator, err)
}
