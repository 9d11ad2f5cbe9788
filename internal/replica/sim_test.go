package replica

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/logmgr"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// The deterministic simulation of replication (design §6.2): three brokers
// (the real replica.Manager each, over its own MemFS), the real active
// controller (controller.Core) over a perfect metadata log, producers and a
// network of delayed messages (a third of the produces transactional
// batches or their COMMIT/ABORT markers), all driven by one seeded random schedule in
// virtual time. Faults: power loss (unsynced bytes dropped, sometimes torn),
// pauses past the session timeout (zombie leaders), cut links between
// brokers and to the controller. After every step the invariants of design
// §4.3 are checked (sim_check_test.go); at the end the faults heal and the
// cluster must converge with every acknowledged record on every replica
// and the same transactional state (LSO, aborted index, open transactions).
// A failure prints the seed and the last events; GREGOR_SIM_SEED=N replays
// one seed.

const (
	simTopic        = "t"
	simHeartbeat    = 100 * time.Millisecond
	simSession      = 1000 * time.Millisecond
	simLagMax       = 600 * time.Millisecond
	simLatencyMax   = 8 * time.Millisecond
	simFetchBackoff = 50 * time.Millisecond
	// simDiskCheck is how often a broker reads its log dir's free space
	// (the broker's DiskCheckInterval).
	simDiskCheck = time.Second
)

// simOptions shape one run.
type simOptions struct {
	brokers, partitions int
	minISR              int
	steps               int
	faults              bool
}

type sim struct {
	t    testing.TB
	seed uint64
	o    simOptions
	rng  *rand.Rand
	clk  *clock.Fake
	bcfg *config.Broker
	lcfg log.Config

	ctrl     *controller.Core
	im       *metadata.Image
	topicID  metadata.TopicID
	nextReq  uint64
	replies  map[uint64]func(controller.Reply)
	ctrlNext time.Time

	brokers []*simBroker
	net     []*simMsg
	cut     map[[2]int32]bool // directed links cut; 0 is the controller

	produced int
	pending  []*simProduce
	acked    map[int32]map[int64]string // partition → offset → value
	trueHW   map[int32]int64
	writers  map[[2]int32]int32 // (partition, leader epoch) → the broker that appended in it
	unclean  map[int32]bool     // partitions that had an unclean or last-known-leader election
	leaderHW map[simHWKey]int64
	// txnPIDs are the producers per partition whose transaction may be
	// open (a marker for one whose transaction a truncation took away, or
	// that was ended already, is a marker without a transaction, as Kafka
	// allows); nextPID numbers new ones.
	txnPIDs map[int32][]int64
	nextPID int64

	trace []string
	// quiet: no more produces (the end of a run).
	quiet bool
}

type simHWKey struct{ broker, partition, epoch int32 }

type simBroker struct {
	id          int32
	fs          *vfs.MemFS
	logs        *logmgr.Manager
	m           *Manager
	up, paused  bool
	incarnation int
	epoch       int64 // broker epoch; -1 until registered
	prevEpoch   int64 // the epoch file (gregor.ack.fsync keeps it across crashes)
	registering bool
	applied     uint64
	nextBeat    time.Time
	nextISR     time.Time
	nextDisk    time.Time    // the next free-space check
	minFree     atomic.Int64 // gregor.log.dir.min.free.bytes (-1: the default)
	upAt        time.Time    // when a down or paused broker comes back
	syncs       []func()
	inFlight    map[fetcherID]bool
	altering    bool
}

type simMsg struct {
	at       time.Time
	from, to int32
	deliver  func()
	fail     func()
}

type simProduce struct {
	b           *simBroker
	incarnation int
	partition   int32
	value       string
	pend        Pending
	waiter      *ackWaiter
}

func newSim(t testing.TB, seed uint64, o simOptions) *sim {
	bcfg, err := config.NewBroker(map[string]string{"node.id": "100", "process.roles": "broker,controller",
		"controller.listener.names": "CONTROLLER", "broker.session.timeout.ms": fmt.Sprint(simSession.Milliseconds()),
		"broker.heartbeat.interval.ms": fmt.Sprint(simHeartbeat.Milliseconds()),
		"min.insync.replicas":          fmt.Sprint(o.minISR), "default.replication.factor": fmt.Sprint(o.brokers),
		"leader.imbalance.check.interval.seconds": "1", "unclean.leader.election.interval.ms": "1000"})
	if err != nil {
		t.Fatal(err)
	}
	lcfg := log.DefaultConfig()
	lcfg.SegmentBytes, lcfg.SegmentIndexBytes, lcfg.IndexIntervalBytes = 2048, 1024, 256
	lcfg.TimestampAfterMs = -1
	s := &sim{t: t, seed: seed, o: o, rng: rand.New(rand.NewPCG(seed, 0x5eed)), clk: clock.NewFake(time.Unix(1_800_000_000, 0)),
		bcfg: bcfg, lcfg: lcfg, replies: map[uint64]func(controller.Reply){}, cut: map[[2]int32]bool{},
		acked: map[int32]map[int64]string{}, trueHW: map[int32]int64{}, writers: map[[2]int32]int32{},
		unclean: map[int32]bool{}, leaderHW: map[simHWKey]int64{}, txnPIDs: map[int32][]int64{}}
	im, _ := metadata.Apply(metadata.Empty(), 1, 1, &metadata.Entry{Proposer: -1, Term: 1, Records: controller.BootstrapRecords("sim")})
	s.im = im
	var topicSeq byte
	s.ctrl = controller.New(controller.Config{NodeID: 100, Broker: bcfg, Rand: rand.New(rand.NewPCG(seed, 1)),
		NewTopicID: func() metadata.TopicID { topicSeq++; return metadata.TopicID{0: 0x51, 15: topicSeq} },
		Logger:     discard()}, im)
	s.ctrl.LeadershipChanged(s.clk.Now(), true, 1)
	for i := range o.brokers {
		b := &simBroker{id: int32(i + 1), fs: vfs.NewMem(), epoch: -1, prevEpoch: -1}
		b.minFree.Store(-1)
		s.brokers = append(s.brokers, b)
		s.start(b)
	}
	return s
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func (s *sim) now() time.Time { return s.clk.Now() }

func (s *sim) logf(format string, args ...any) {
	line := fmt.Sprintf("%8.3fs ", float64(s.now().UnixMilli()%1_000_000)/1000) + fmt.Sprintf(format, args...)
	s.trace = append(s.trace, line)
	if len(s.trace) > 300 {
		s.trace = s.trace[len(s.trace)-200:]
	}
}

// simAbort ends a failed run (fatalf runs on the seed's goroutine, which
// may not be the test's).
type simAbort struct{}

func (s *sim) fatalf(format string, args ...any) {
	s.t.Helper()
	defer panic(simAbort{})
	s.t.Errorf("seed %d (replay: GREGOR_SIM_SEED=%d go test ./internal/replica -run TestSimulation): %s\nlast events:\n%s\nimage:\n%s",
		s.seed, s.seed, fmt.Sprintf(format, args...), strings.Join(s.trace, "\n"), s.describe())
}

// start opens a broker's logs (recovering them) and registers it.
func (s *sim) start(b *simBroker) {
	logs, err := logmgr.Open(logmgr.Options{FS: b.fs, Clock: s.clk, Dirs: []string{"/data"}, Logger: discard(),
		ConfigFor: func(string) log.Config { return s.lcfg }, MinFreeBytes: b.minFree.Load})
	if err != nil {
		s.fatalf("broker %d: opening logs: %v", b.id, err)
	}
	b.logs = logs
	b.m = New(logs, true, discard())
	b.m.runSync = func(f func()) { b.syncs = append(b.syncs, f) }
	b.m.repl.configure(b.m, ReplicationConfig{NodeID: b.id, BrokerEpoch: func() int64 { return b.epoch },
		LagTimeMax: simLagMax, Fetch: FetcherConfig{MaxWait: 0, MinBytes: 1, MaxBytes: 1 << 20, PartitionMaxBytes: 4096,
			Backoff: simFetchBackoff, RequestTimeout: time.Second}})
	b.up, b.paused, b.epoch, b.applied, b.registering, b.altering = true, false, -1, 0, false, false
	b.incarnation++
	b.syncs, b.inFlight = nil, map[fetcherID]bool{}
	b.nextBeat, b.nextISR, b.nextDisk = s.now(), s.now().Add(simLagMax/2), s.now().Add(simDiskCheck)
	s.register(b)
	s.logf("broker %d starts (incarnation %d)", b.id, b.incarnation)
}

// crash is a power loss: the process and its page cache are gone.
func (s *sim) crash(b *simBroker, torn bool) {
	if torn {
		b.fs = b.fs.CrashCloneTorn(s.rng)
	} else {
		b.fs = b.fs.CrashClone()
	}
	b.up, b.paused = false, false
	b.upAt = s.now().Add(time.Duration(300+s.rng.IntN(2500)) * time.Millisecond)
	s.logf("broker %d loses power (torn=%v)", b.id, torn)
}

func (s *sim) linked(from, to int32) bool {
	if s.cut[[2]int32{from, to}] {
		return false
	}
	for _, id := range []int32{from, to} {
		if id > 0 {
			b := s.brokers[id-1]
			if !b.up || b.paused {
				return false
			}
		}
	}
	return true
}

// send queues a message; at delivery a cut link or a stopped receiver
// fails it instead (a paused receiver holds it, as its socket would).
func (s *sim) send(from, to int32, deliver, fail func()) {
	s.net = append(s.net, &simMsg{at: s.now().Add(time.Duration(1+s.rng.IntN(int(simLatencyMax/time.Millisecond))) * time.Millisecond),
		from: from, to: to, deliver: deliver, fail: fail})
}

func (s *sim) deliver() {
	var keep []*simMsg
	due := s.net
	s.net = nil // what deliveries send meanwhile
	for _, m := range due {
		if m.at.After(s.now()) {
			keep = append(keep, m)
			continue
		}
		if m.to > 0 {
			b := s.brokers[m.to-1]
			if b.up && b.paused {
				keep = append(keep, m)
				continue
			}
		}
		// What was sent is delivered unless the link is cut or the
		// receiver died; the sender's fate since does not matter.
		if !s.cut[[2]int32{m.from, m.to}] && (m.to == 0 || s.brokers[m.to-1].up) {
			m.deliver()
		} else if m.fail != nil {
			m.fail()
		}
	}
	s.net = append(keep, s.net...)
}

// submit sends a request to the controller; its reply travels back. When
// either leg is lost (a cut link, a receiver down) onLost runs, as the
// sender's request timeout would: a registration or an AlterPartition is
// then sent again.
func (s *sim) submit(from int32, req controller.Request, onReply func(controller.Reply), onLost func()) {
	s.send(from, 0, func() {
		s.nextReq++
		id := s.nextReq
		s.replies[id] = func(r controller.Reply) { s.send(0, from, func() { onReply(r) }, onLost) }
		s.ctrl.Submit(s.now(), id, req)
		s.settle()
	}, onLost)
}

// settle runs the controller until it has nothing more to do: each
// proposal commits at once and every reply goes out.
func (s *sim) settle() {
	for range 1000 {
		out := s.ctrl.Ready()
		s.ctrlNext = out.Deadline
		for _, r := range out.Replies {
			if f := s.replies[r.ID]; f != nil {
				delete(s.replies, r.ID)
				f(r)
			}
		}
		for _, e := range out.Elections {
			s.unclean[e.Partition] = true
			s.logf("UNCLEAN or last-known-leader election of %s-%d: leader %d epoch %d", e.Topic, e.Partition, e.Leader, e.LeaderEpoch)
		}
		if out.Propose == nil {
			return
		}
		prev := s.im
		s.im, _ = metadata.Apply(prev, prev.Index+1, 1, out.Propose)
		s.noteEntry(prev, s.im)
		s.ctrl.Applied(s.now(), s.im, out.Propose)
	}
	s.fatalf("the controller does not settle")
}

func (s *sim) noteEntry(prev, next *metadata.Image) {
	t := next.Topic(simTopic)
	if t == nil {
		return
	}
	s.topicID = t.ID
	for i, p := range t.Partitions {
		if pt := prev.Topic(simTopic); pt != nil && i < len(pt.Partitions) && pt.Partitions[i].PartitionEpoch == p.PartitionEpoch {
			continue
		}
		s.logf("metadata %d: %s-%d leader=%d epoch=%d/%d isr=%v elr=%v", next.Index, simTopic, i, p.Leader,
			p.LeaderEpoch, p.PartitionEpoch, p.ISR, p.ELR)
	}
	for _, b := range next.SortedBrokers() {
		if ob := prev.Brokers[b.ID]; ob == nil || ob.Fenced != b.Fenced || ob.Epoch != b.Epoch || ob.InControlledShutdown != b.InControlledShutdown {
			s.logf("metadata %d: broker %d epoch %d fenced=%v", next.Index, b.ID, b.Epoch, b.Fenced)
		}
	}
}

func (s *sim) register(b *simBroker) {
	if b.registering || !b.up {
		return
	}
	b.registering = true
	inc := b.incarnation
	req := &controller.BrokerRegistrationRequest{BrokerID: b.id, ClusterID: "sim", IncarnationID: b.incarnationID(),
		Listeners: []metadata.Endpoint{{Name: "PLAINTEXT", Host: "sim", Port: 9000 + b.id}},
		LogDirs:   [][16]byte{{0: 0xD1, 1: byte(b.id)}}, PreviousBrokerEpoch: b.prevEpoch}
	s.submit(b.id, req, func(r controller.Reply) {
		if b.incarnation != inc {
			return
		}
		b.registering = false
		if r.Err != nil {
			return // a session still valid: again at the next heartbeat time
		}
		b.epoch = r.Value.(*controller.BrokerRegistrationResponse).BrokerEpoch
		b.prevEpoch = b.epoch // gregor.ack.fsync: the epoch file is written at once
		s.logf("broker %d registered with epoch %d", b.id, b.epoch)
	}, func() {
		if b.incarnation == inc {
			b.registering = false
		}
	})
}

func (s *sim) heartbeat(b *simBroker) {
	b.nextBeat = s.now().Add(simHeartbeat)
	if b.epoch < 0 {
		s.register(b)
		return
	}
	req := &controller.BrokerHeartbeatRequest{BrokerID: b.id, BrokerEpoch: b.epoch, CurrentMetadataOffset: int64(b.applied)}
	s.submit(b.id, req, func(controller.Reply) {}, nil)
}

// publish makes a broker follow the committed image, as broker.Publish does.
func (s *sim) publish(b *simBroker) {
	if b.applied >= s.im.Index {
		return
	}
	im := s.im
	b.applied = im.Index
	b.m.SetImage(im)
	t := im.Topic(simTopic)
	if t == nil {
		return
	}
	for i, pi := range t.Partitions {
		tp := topicpart.TopicPartition{Topic: simTopic, Partition: int32(i)}
		if !pi.IsReplica(b.id) {
			if _, ok := b.m.Get(tp); ok {
				if err := b.m.Drop(tp); err != nil {
					s.fatalf("broker %d dropping %s: %v", b.id, tp, err)
				}
			}
			continue
		}
		pi = ForIncarnation(pi, im, b.id, b.incarnationID())
		if _, err := b.m.Assign(tp, t.ID, s.lcfg, int32(s.o.minISR), pi); err != nil {
			s.fatalf("broker %d assigning %s: %v", b.id, tp, err)
		}
	}
}

// fetchRound sends a fetch from every fetcher of b that has none in flight.
func (s *sim) fetchRound(b *simBroker) {
	fs := b.m.repl.fetchers
	fs.mu.Lock()
	ids := make([]fetcherID, 0, len(fs.byID))
	for id := range fs.byID {
		ids = append(ids, id)
	}
	fs.mu.Unlock()
	slices.SortFunc(ids, func(a, c fetcherID) int { return int(a.source - c.source) })
	for _, id := range ids {
		if b.inFlight[id] || b.epoch < 0 {
			continue
		}
		fs.mu.Lock()
		f := fs.byID[id]
		fs.mu.Unlock()
		if f == nil {
			continue
		}
		ep := &simEndpoint{s: s, from: b.id, to: id.source}
		f.truncate(context.Background(), ep)
		f.syncFetchOffsets()
		req, sent, _ := f.request(b.epoch)
		if len(sent) == 0 {
			continue
		}
		b.inFlight[id] = true
		inc, leader := b.incarnation, id.source
		done := func() {
			if b.incarnation == inc {
				delete(b.inFlight, id)
			}
		}
		s.send(b.id, leader, func() {
			resp := serveFetch(s.brokers[leader-1].m, req)
			s.send(leader, b.id, func() {
				done()
				if b.incarnation == inc {
					f.apply(context.Background(), ep, sent, resp)
				}
			}, done)
		}, func() {
			done()
			f.delay(sent, fmt.Errorf("sim: no connection to %d", leader))
		})
	}
}

// alter sends b's queued ISR proposals to the controller, one request at a
// time, as the AlterPartition manager does.
func (s *sim) alter(b *simBroker) {
	if b.altering || b.epoch < 0 {
		return
	}
	a := b.m.repl.alter
	batch, items := a.take()
	if len(items) == 0 {
		return
	}
	b.altering = true
	inc := b.incarnation
	req := &controller.AlterPartitionRequest{BrokerID: b.id, BrokerEpoch: b.epoch}
	for _, it := range items {
		cp := controller.AlterPartitionPartition{Partition: it.Partition, LeaderEpoch: it.LeaderEpoch, PartitionEpoch: it.PartitionEpoch,
			LeaderRecoveryState: metadata.Recovered}
		for _, m := range it.ISR {
			cp.NewISR = append(cp.NewISR, controller.BrokerState{BrokerID: m.ID, BrokerEpoch: m.BrokerEpoch})
		}
		req.Topics = append(req.Topics, controller.AlterPartitionTopic{TopicID: metadata.TopicID(it.TopicID), Partitions: []controller.AlterPartitionPartition{cp}})
	}
	s.submit(b.id, req, func(r controller.Reply) {
		if b.incarnation != inc {
			return
		}
		b.altering = false
		var answers []AlterPartitionAnswer
		if r.Err == nil {
			for _, t := range r.Value.(*controller.AlterPartitionResponse).Topics {
				for _, p := range t.Partitions {
					ans := AlterPartitionAnswer{TopicID: t.TopicID, Partition: p.Partition}
					ans.Err, ans.LeaderEpoch, ans.PartitionEpoch, ans.ISR = p.Err, p.LeaderEpoch, p.PartitionEpoch, p.ISR
					answers = append(answers, ans)
				}
			}
		}
		a.finish(batch, answers, r.Err)
	}, func() {
		if b.incarnation == inc {
			b.altering = false
			a.finish(batch, nil, errSimLost)
		}
	})
}

// produce sends one acks=all record to the broker the client believes leads
// a random partition (sometimes to any broker: clients' metadata lags).
func (s *sim) produce() {
	t := s.im.Topic(simTopic)
	if t == nil {
		return
	}
	part := int32(s.rng.IntN(len(t.Partitions)))
	target := t.Partitions[part].Leader
	if target < 0 || s.rng.IntN(10) == 0 {
		target = int32(1 + s.rng.IntN(len(s.brokers)))
	}
	b := s.brokers[target-1]
	if !b.up || b.paused {
		return
	}
	tp := topicpart.TopicPartition{Topic: simTopic, Partition: part}
	spec := &record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	var pid int64 = -1
	if s.rng.IntN(3) == 0 { // a transaction: its one batch, or its marker
		if pids := s.txnPIDs[part]; len(pids) >= 3 || (len(pids) > 0 && s.rng.IntN(2) == 0) {
			s.marker(b, tp, pids[s.rng.IntN(len(pids))])
			return
		}
		s.nextPID++
		pid = 1000 + s.nextPID
		spec = &record.BatchSpec{ProducerID: pid, ProducerEpoch: 0, BaseSequence: 0, Transactional: true}
	}
	s.produced++
	value := fmt.Sprintf("v%d", s.produced)
	spec.Records = []record.BuildRecord{{Timestamp: s.now().UnixMilli(), Value: []byte(value)}}
	batch, err := record.Build(spec)
	if err != nil {
		s.fatalf("build: %v", err)
	}
	var pend Pending
	if pid >= 0 { // verified by the coordinator first (KIP-890), as the api layer does
		guard, gerr := b.m.StartTransactionVerification(tp, pid, 0, 0, false)
		if gerr != nil {
			return
		}
		produced := record.ParseProduce(batch)
		pend, err = b.m.AppendProducedVerified(tp, &produced, -1, guard)
	} else {
		pend, err = b.m.AppendNoWait(tp, batch, -1, log.OriginClient)
	}
	if err != nil {
		s.logf("broker %d: append to %s refused: %v", b.id, tp, err)
		return
	}
	if pid >= 0 {
		s.txnPIDs[part] = append(s.txnPIDs[part], pid)
	}
	p, _ := b.m.Get(tp)
	epoch := p.LeaderEpoch()
	key := [2]int32{part, epoch}
	if w, ok := s.writers[key]; ok && w != b.id {
		s.fatalf("I8: brokers %d and %d both appended to %s in leader epoch %d", w, b.id, tp, epoch)
	}
	s.writers[key] = b.id
	s.logf("broker %d appends %s at %s-%d offset %d (leader epoch %d)", b.id, value, simTopic, part, pend.Result.BaseOffset, epoch)
	s.pending = append(s.pending, &simProduce{b: b, incarnation: b.incarnation, partition: part, value: value, pend: pend})
}

// marker has b write a COMMIT or ABORT marker for pid's transaction on tp
// with acks=-1, as a transaction coordinator does (WriteTxnMarkers goes to
// the leader only). Written, pid's transaction is over; refused (not the
// leader), it stays to be ended later.
func (s *sim) marker(b *simBroker, tp topicpart.TopicPartition, pid int64) {
	commit := s.rng.IntN(2) == 0
	pend, err := b.m.AppendMarkerNoWait(tp, log.MarkerSpec{ProducerID: pid, ProducerEpoch: 0, Commit: commit,
		TransactionVersion: log.TV1}, -1)
	if err != nil {
		s.logf("broker %d: marker of producer %d on %s refused: %v", b.id, pid, tp, err)
		return
	}
	if pend.required != pend.Result.LastOffset+1 {
		s.fatalf("the marker of producer %d on %s does not wait for the high watermark past it (required %d, marker at %d)",
			pid, tp, pend.required, pend.Result.LastOffset)
	}
	s.txnPIDs[tp.Partition] = slices.DeleteFunc(s.txnPIDs[tp.Partition], func(x int64) bool { return x == pid })
	s.logf("broker %d writes the %v marker of producer %d at %s offset %d", b.id, commit, pid, tp, pend.Result.BaseOffset)
}

// acks collects the produces that are acknowledged now.
func (s *sim) acks() {
	keep := s.pending[:0]
	for _, pr := range s.pending {
		if !s.ackOne(pr) {
			keep = append(keep, pr)
		}
	}
	s.pending = keep
}

// ackOne reports whether pr is settled (acknowledged or failed).
func (s *sim) ackOne(pr *simProduce) bool {
	if pr.b.incarnation != pr.incarnation || !pr.b.up {
		return true // the connection died: indeterminate
	}
	if ps := pr.pend.sync; ps != nil {
		select {
		case <-ps.done:
			if ps.err != nil {
				return true
			}
		default:
			return false
		}
	}
	var err error
	if pr.waiter == nil {
		pr.waiter, err = pr.pend.p.registerAck(pr.pend.required)
		if pr.waiter == nil {
			if err == nil {
				s.acked1(pr)
			}
			return true
		}
	}
	select {
	case <-pr.waiter.done:
		if pr.waiter.err == nil {
			s.acked1(pr)
		} else {
			s.logf("produce %s answered %v", pr.value, pr.waiter.err)
		}
		return true
	default:
		return false
	}
}

func (s *sim) acked1(pr *simProduce) {
	off := pr.pend.Result.BaseOffset
	if s.acked[pr.partition] == nil {
		s.acked[pr.partition] = map[int64]string{}
	}
	if old, ok := s.acked[pr.partition][off]; ok && old != pr.value {
		s.fatalf("I1: %s and %s both acknowledged at %s-%d offset %d", old, pr.value, simTopic, pr.partition, off)
	}
	s.acked[pr.partition][off] = pr.value
	s.logf("acknowledged %s at %s-%d offset %d by broker %d", pr.value, simTopic, pr.partition, off, pr.b.id)
}

// runSyncs completes some of b's pending fsyncs (group commit lags).
func (s *sim) runSyncs(b *simBroker) {
	n := len(b.syncs)
	if n == 0 {
		return
	}
	k := 1 + s.rng.IntN(n)
	todo := b.syncs[:k]
	b.syncs = append([]func(){}, b.syncs[k:]...)
	for _, f := range todo {
		f()
	}
}

// step advances virtual time a little and lets everything due happen.
func (s *sim) step(faults bool) {
	s.clk.Advance(time.Duration(1+s.rng.IntN(15)) * time.Millisecond)
	if !s.ctrlNext.IsZero() && !s.now().Before(s.ctrlNext) {
		s.ctrl.Tick(s.now())
		s.settle()
	}
	s.deliver()
	for _, b := range s.brokers {
		s.brokerStep(b)
	}
	if !s.quiet && s.rng.IntN(3) == 0 {
		s.produce()
	}
	s.acks()
	if faults {
		s.fault()
	}
}

func (s *sim) brokerStep(b *simBroker) {
	if !b.up {
		if !b.upAt.IsZero() && !s.now().Before(b.upAt) {
			s.start(b)
		}
		return
	}
	if b.paused {
		if !s.now().Before(b.upAt) {
			b.paused = false
			s.logf("broker %d resumes", b.id)
		}
		return
	}
	if !s.now().Before(b.nextBeat) {
		s.heartbeat(b)
	}
	if s.rng.IntN(2) == 0 {
		s.publish(b)
	}
	if s.rng.IntN(2) == 0 {
		s.runSyncs(b)
	}
	s.fetchRound(b)
	if !s.now().Before(b.nextDisk) {
		b.nextDisk = s.now().Add(simDiskCheck)
		b.logs.CheckDiskSpace()
	}
	if !s.now().Before(b.nextISR) {
		b.nextISR = s.now().Add(simLagMax / 2)
		for _, p := range b.m.Partitions() {
			b.m.checkISR(p)
		}
	}
	s.alter(b)
}

// fault injects one fault now and then: at most one broker down or paused
// at a time, so a quorum of the replicas stays.
func (s *sim) fault() {
	if s.rng.IntN(60) != 0 {
		return
	}
	b := s.brokers[s.rng.IntN(len(s.brokers))]
	for _, o := range s.brokers {
		if !o.up || o.paused {
			return
		}
	}
	switch s.rng.IntN(5) {
	case 0, 1:
		s.crash(b, s.rng.IntN(2) == 0)
	case 2:
		b.paused = true
		b.upAt = s.now().Add(time.Duration(200+s.rng.IntN(2500)) * time.Millisecond)
		s.logf("broker %d pauses until %s", b.id, b.upAt.Format("05.000"))
	case 3:
		o := s.brokers[s.rng.IntN(len(s.brokers))]
		if o != b {
			s.cut[[2]int32{b.id, o.id}], s.cut[[2]int32{o.id, b.id}] = true, true
			s.logf("link %d-%d cut", b.id, o.id)
		}
	case 4:
		s.cut[[2]int32{b.id, 0}], s.cut[[2]int32{0, b.id}] = true, true
		s.logf("broker %d cut from the controller", b.id)
	}
	if len(s.cut) > 0 && s.rng.IntN(3) == 0 {
		clear(s.cut)
		s.logf("links healed")
	}
}

// boot registers the brokers and creates the topic.
func (s *sim) boot() {
	for range 2000 {
		s.step(false)
		ok := true
		for _, b := range s.brokers {
			if br := s.im.Brokers[b.id]; br == nil || br.Fenced {
				ok = false
			}
		}
		if ok {
			break
		}
	}
	created := false
	s.submit(1, &controller.CreateTopicsRequest{Topics: []controller.CreatableTopic{{Name: simTopic,
		NumPartitions: int32(s.o.partitions), ReplicationFactor: int16(s.o.brokers)}}}, func(r controller.Reply) {
		if r.Err != nil {
			s.fatalf("create topic: %v", r.Err)
		}
		if res := r.Value.(*controller.CreateTopicsResponse).Topics[0]; res.Err != nil {
			s.fatalf("create topic: %v", res.Err)
		}
		created = true
	}, nil)
	for i := 0; !created; i++ {
		if i > 2000 {
			s.fatalf("the topic was never created")
		}
		s.step(false)
	}
}

// heal ends every fault and runs until the cluster has converged: every
// broker up and unfenced, every ISR whole, every replica at the leader's
// log end and high watermark.
func (s *sim) heal() {
	clear(s.cut)
	for _, b := range s.brokers {
		if !b.up {
			s.start(b)
		}
		b.paused = false
	}
	s.quiet = true
	s.logf("healed")
	for i := 0; ; i++ {
		if i > 20000 {
			s.fatalf("liveness: no convergence %s after healing", s.now().Sub(time.Unix(1_800_000_000, 0)))
		}
		s.step(false)
		if err := s.converged(); err == nil {
			return
		} else if i%5000 == 4999 {
			s.logf("not converged: %v", err)
		}
	}
}

func run(t *testing.T, seed uint64, o simOptions) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(simAbort); !ok {
				t.Errorf("seed %d: panic: %v", seed, r)
			}
		}
	}()
	s := newSim(t, seed, o)
	s.boot()
	for range o.steps {
		s.step(o.faults)
		s.check()
	}
	s.heal()
	for range 200 {
		s.step(false)
	}
	s.final()
}

func (s *sim) partition(b *simBroker, p int32) (*Partition, bool) {
	return b.m.Get(topicpart.TopicPartition{Topic: simTopic, Partition: p})
}

var _ = kerr.NotEnoughReplicas

// errSimLost is a request or its answer lost on the simulated network.
var errSimLost = errors.New("request lost")

func (b *simBroker) incarnationID() [16]byte { return [16]byte{0: byte(b.id), 1: byte(b.incarnation)} }
