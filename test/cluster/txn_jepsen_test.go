package cluster

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-broker/gregor/test/jepsen"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The Jepsen-style transaction checker on three `gregor serve` processes
// (design note §3, §7.3; the single-node one is test/e2e TestTxnJepsen).
// Every topic is replicated three times with min ISR 2: the data topic,
// __transaction_state and __consumer_offsets. Each round starts
// transactional producers whose ids are chosen so that their transaction
// coordinator (the leader of their __transaction_state partition) is on a
// given node, runs them, SIGKILLs a node while transactions are in flight,
// waits for commits to go on without it, restarts it and lets them run on:
//
//   - coordinator: the coordinators' node, which leads no data partition;
//   - data: the leader of data partition 0, not the coordinators' node;
//   - both: a node that is the coordinators' and data partition 0's leader.
//
// Each transaction is the transactional half of a consume-transform-produce:
// it writes an output record for each of the next input positions of its
// producer's group (a virtual input: position i of group g is "g/i"), to
// random data partitions, and commits the group's offset past them
// (AddOffsetsToTxn and TxnOffsetCommit, as kgo's GroupTransactSession does),
// then commits or (one in five) aborts. A producer whose transaction did
// not end within 1.5 s (one in flight across a failover) marks it unknown,
// replaces its client (the new InitProducerId fences the old one and ends
// what it left open) and resumes from its group's stable committed offset,
// as a Kafka application does after a transactional error. read_committed
// consumers poll throughout. After the last round an end record is written to every
// data partition and everything is read read_committed; the history is
// checked for:
//
//   - aborted read: a value of an aborted transaction was read;
//   - uncommitted read: a polled value is not in the final read (its
//     transaction did not commit);
//   - lost write: a committed transaction's values are not in the final read;
//   - torn transaction: some of a transaction's values are read, not all;
//   - duplicate: a value at two offsets, or an input position transformed
//     into two committed outputs;
//   - inconsistent offsets: a partition offset read with two values;
//   - group offset: a group's committed offset is not the end of its last
//     committed transaction, or the outputs of the positions below it are
//     not read exactly once, or outputs above it are read;
//   - nonmonotonic poll, unstable read: as in the single-node checker.
//
// Then every replica of the data partitions, of __transaction_state and of
// __consumer_offsets holds the same bytes. go test runs the three rounds
// once with two producers under transactions v2, acknowledging before
// fsync (a SIGKILL keeps the page cache); GREGOR_LONG=1 three times each
// with three producers and longer rounds, under transactions v2 and v1,
// with fsync before acknowledging (Gregor's default).
func TestClusterTxnJepsen(t *testing.T) {
	cfg := clusterJepsenConfig{producers: 2, before: 2, after: 2, records: 3,
		rounds: []string{"coordinator", "data", "both"}}
	tvs, fsync := []string{"2"}, "false"
	if os.Getenv("GREGOR_LONG") != "" {
		cfg = clusterJepsenConfig{producers: 3, before: 15, after: 15, records: 4}
		for range 3 {
			cfg.rounds = append(cfg.rounds, "coordinator", "data", "both")
		}
		tvs, fsync = []string{"2", "1"}, "true"
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("GREGOR_JEPSEN_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (GREGOR_JEPSEN_SEED)", seed)
	cfg.seed = seed
	for _, tv := range tvs {
		t.Run("transaction.version="+tv, func(t *testing.T) {
			start := time.Now()
			c := newClusterWith(t, 3, func(c *cluster) {
				for _, nd := range c.nodes {
					nd.extra = []string{"--set", "transaction.state.log.num.partitions=3", "--set", "offsets.topic.num.partitions=3",
						"--set", "min.insync.replicas=2", "--set", "gregor.ack.fsync=" + fsync,
						"--set", "gregor.transaction.version=" + tv,
						"--set", "transaction.abort.timed.out.transaction.cleanup.interval.ms=500"}
				}
			})
			t.Logf("cluster started in %v", time.Since(start).Round(10*time.Millisecond))
			h := runClusterJepsen(t, c, cfg)
			h.check(t)
			checkReplicasEqual(t, c, jepData, jepParts)
			for _, topic := range []string{"__transaction_state", "__consumer_offsets"} {
				for p := range int32(3) {
					checkReplicaBytes(t, c, fmt.Sprintf("%s-%d", topic, p))
				}
			}
			t.Logf("%v in all (cluster start to replicas checked)", time.Since(start).Round(100*time.Millisecond))
		})
	}
}

// checkReplicaBytes waits until every node holds the same bytes of
// partition (none at all included: an unused coordinator partition).
func checkReplicaBytes(t *testing.T, c *cluster, partition string) {
	t.Helper()
	var last string
	if !poll(30*time.Second, func() bool {
		var first []byte
		for i, nd := range c.nodes {
			b, err := partitionBytes(nd.dir, partition)
			if err != nil {
				last = err.Error()
				return false
			}
			if i == 0 {
				first = b
			} else if !bytes.Equal(first, b) {
				last = fmt.Sprintf("node %d holds %d bytes of %s, node 1 %d", nd.id, len(b), partition, len(first))
				return false
			}
		}
		return true
	}) {
		t.Fatalf("replicas differ: %s", last)
	}
}

// jepTxnDeadline is how long a producer waits for one transaction.
const jepTxnDeadline = 1500 * time.Millisecond

const (
	jepData  = "jep"
	jepInput = "jepin" // the virtual input's topic: it holds no records, its offsets are the groups'
	jepParts = 2
)

type clusterJepsenConfig struct {
	producers, before, after, records int
	rounds                            []string
	seed                              uint64
}

// jhistory is the checker's history and what a cluster run did: its kills
// and each group's committed offset at the end.
type jhistory struct {
	*jepsen.History
	offsets   map[string]int64
	kills     []string
	committed atomic.Int64
}

func (c *cluster) seeds() []string {
	var s []string
	for _, nd := range c.nodes {
		s = append(s, nd.client)
	}
	return s
}

func runClusterJepsen(t *testing.T, c *cluster, cfg clusterJepsenConfig) *jhistory {
	adm := kadm.NewClient(c.client())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	for topic, parts := range map[string]int32{jepData: jepParts, jepInput: 1} {
		resp, err := adm.CreateTopic(ctx, parts, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
		if err != nil || resp.Err != nil {
			t.Fatalf("create %s: %v / %v", topic, err, resp.Err)
		}
	}
	// The internal topics are created on first use.
	if !poll(60*time.Second, func() bool {
		g, tx := adm.FindGroupCoordinators(ctx, "jep-g")["jep-g"], adm.FindTxnCoordinators(ctx, "jep-t")["jep-t"]
		return g.Err == nil && tx.Err == nil
	}) {
		t.Fatal("no group or transaction coordinator within 60s")
	}
	h := &jhistory{History: jepsen.New(), offsets: map[string]int64{}}
	stopReading := make(chan struct{})
	var readers sync.WaitGroup
	for i := range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			cl := c.client(kgo.ConsumeTopics(jepData), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
				kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(200*time.Millisecond))
			h.Poll(ctx, cl, i, stopReading)
		}()
	}
	rng := rand.New(rand.NewPCG(cfg.seed, 1))
	var groups []string
	for r, scenario := range cfg.rounds {
		groups = append(groups, h.round(ctx, t, c, adm, cfg, r, scenario, rng.Uint64())...)
	}
	close(stopReading)
	readers.Wait()
	h.Drain(ctx, t, c.client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks())),
		c.client(kgo.ConsumeTopics(jepData), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(200*time.Millisecond)),
		jepData, jepParts)
	ocl := c.client()
	for _, g := range groups {
		h.offsets[g] = stableOffset(ctx, t, ocl, g)
	}
	return h
}

// round runs one kill scenario and returns its producers' groups.
func (h *jhistory) round(ctx context.Context, t *testing.T, c *cluster, adm *kadm.Client, cfg clusterJepsenConfig,
	r int, scenario string, seed uint64) []string {
	roundStart := time.Now()
	for topic, parts := range map[string]int32{jepData: jepParts, "__transaction_state": 3, "__consumer_offsets": 3} {
		waitFullISR(t, c, topic, parts)
	}
	isrWait := time.Since(roundStart)
	// Leadership back on the preferred replicas, so that a node leads no
	// data partition and another leads data partition 0.
	ectx, ecancel := context.WithTimeout(ctx, 10*time.Second)
	_, _ = adm.ElectLeaders(ectx, kadm.ElectPreferredReplica, nil)
	ecancel()
	l0, _ := leaderOf(t, c, jepData, 0)
	l1, _ := leaderOf(t, c, jepData, 1)
	free := int32(-1)
	for _, nd := range c.nodes {
		if nd.id != l0 && nd.id != l1 {
			free = nd.id
		}
	}
	var coord, victim int32
	switch scenario {
	case "coordinator":
		coord, victim = free, free
	case "data":
		coord, victim = free, l0
	case "both":
		coord, victim = l0, l0
	}
	if coord < 0 {
		t.Fatalf("round %d (%s): every node leads a data partition (leaders %d, %d)", r, scenario, l0, l1)
	}
	ids := txnIDsOn(ctx, t, adm, fmt.Sprintf("jep-r%d", r), coord, cfg.producers)
	stop := make(chan struct{})
	var workers sync.WaitGroup
	var groups []string
	for w := range cfg.producers {
		group := fmt.Sprintf("jep-g-r%d-w%d", r, w)
		groups = append(groups, group)
		workers.Add(1)
		go func() {
			defer workers.Done()
			h.produce(ctx, t, c, fmt.Sprintf("r%d-w%d", r, w), ids[w], group, cfg, seed+uint64(w), stop)
		}()
	}
	waitCommits := func(n int64, what string) {
		t.Helper()
		want := h.committed.Load() + n
		if !poll(90*time.Second, func() bool { return h.committed.Load() >= want }) {
			close(stop)
			workers.Wait()
			t.Fatalf("round %d (%s): %d commits did not come %s (at %d)", r, scenario, n, what, h.committed.Load())
		}
	}
	waitCommits(int64(cfg.producers*cfg.before), "before the kill")
	killed := time.Now()
	c.sigkill(victim)
	waitCommits(int64(cfg.producers*cfg.after), fmt.Sprintf("after node %d was killed", victim))
	moved := time.Since(killed)
	restarted := time.Now()
	c.start(victim)
	c.waitReady(victim, 60*time.Second)
	ready := time.Since(restarted)
	waitCommits(int64(cfg.producers*cfg.after), fmt.Sprintf("after node %d restarted", victim))
	close(stop)
	workers.Wait()
	h.kills = append(h.kills, fmt.Sprintf("%s: node %d (coordinator %d, data leaders %d/%d); full ISR after %v, %d commits %v after the kill, restarted node ready in %v; round %v",
		scenario, victim, coord, l0, l1, isrWait.Round(10*time.Millisecond), cfg.producers*cfg.after, moved.Round(10*time.Millisecond),
		ready.Round(10*time.Millisecond), time.Since(roundStart).Round(10*time.Millisecond)))
	return groups
}

// txnIDsOn finds n transactional ids with prefix whose coordinator is node.
func txnIDsOn(ctx context.Context, t *testing.T, adm *kadm.Client, prefix string, node int32, n int) []string {
	t.Helper()
	var ids []string
	for batch := 0; batch < 20 && len(ids) < n; batch++ {
		var cands []string
		for i := range 30 {
			cands = append(cands, fmt.Sprintf("%s-%d", prefix, batch*30+i))
		}
		fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp := adm.FindTxnCoordinators(fctx, cands...)
		cancel()
		for _, id := range cands {
			if r := resp[id]; r.Err == nil && r.NodeID == node && len(ids) < n {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) < n {
		t.Fatalf("only %d of %d transactional ids with prefix %s found coordinated by node %d", len(ids), n, prefix, node)
	}
	return ids
}

// jepClient is a client of every node of c (dead ones included: kgo skips
// them) with opts; kgo's log goes to GREGOR_JEPSEN_KGOLOG/name.log if set.
func jepClient(c *cluster, name string, opts ...kgo.Opt) (*kgo.Client, error) {
	if dir := os.Getenv("GREGOR_JEPSEN_KGOLOG"); dir != "" {
		f, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err == nil {
			opts = append(opts, kgo.WithLogger(kgo.BasicLogger(f, kgo.LogLevelDebug, func() string {
				return time.Now().Format("15:04:05.000 ")
			})))
		}
	}
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.seeds()...)}, opts...)...)
}

// produce runs one producer's transactions until stop.
func (h *jhistory) produce(ctx context.Context, t *testing.T, c *cluster, name, id, group string, cfg clusterJepsenConfig,
	seed uint64, stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(seed, 2))
	var cl *kgo.Client
	var pos int64
	// connect replaces the client and resumes from the group's stable
	// offset: the new client's InitProducerId fences the old one and ends
	// what it left open, so the offset is its transactions' outcome.
	connect := func() bool {
		if cl != nil {
			cl.Close()
		}
		for attempt := 0; ; attempt++ {
			var err error
			cl, err = jepClient(c, name, kgo.TransactionalID(id), kgo.TransactionTimeout(10*time.Second),
				kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequestRetries(100), kgo.RetryTimeout(30*time.Second),
				kgo.RetryBackoffFn(javaBackoff), kgo.MetadataMinAge(250*time.Millisecond))
			if err != nil {
				t.Error(err)
				return false
			}
			ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
			if _, _, err = cl.ProducerID(ictx); err == nil {
				pos, err = stableOffsetErr(ictx, cl, group)
			}
			cancel()
			if err == nil {
				pos = max(pos, 0)
				return true
			}
			cl.Close()
			if attempt == 5 || ctx.Err() != nil {
				t.Errorf("%s: no producer id and stable offset after %d attempts: %v", name, attempt+1, err)
				return false
			}
		}
	}
	if !connect() {
		return
	}
	defer func() { cl.Close() }()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		tname := fmt.Sprintf("%s-t%d", name, i)
		k := int64(1 + rng.IntN(cfg.records))
		tx := &jepsen.Txn{Group: group, From: pos, To: pos + k, Result: jepsen.Unknown}
		var recs []*kgo.Record
		for j := range k {
			v := fmt.Sprintf("%s|%s/%d", tname, group, pos+j)
			tx.Values = append(tx.Values, v)
			recs = append(recs, &kgo.Record{Topic: jepData, Partition: int32(rng.IntN(jepParts)), Value: []byte(v)})
		}
		h.Begin(tname, tx)
		commit := rng.IntN(5) != 0
		// A transaction not ended within jepTxnDeadline is given up: one in
		// flight across a failover (about 2 s) ends unknown, and the
		// producer resumes as a fresh client.
		tctx, cancel := context.WithTimeout(ctx, jepTxnDeadline)
		err := cl.BeginTransaction()
		if err != nil {
			// Nothing was written: this transaction never began.
			cancel()
			tx.Result = jepsen.Aborted
			if !connect() {
				return
			}
			continue
		}
		err = cl.ProduceSync(tctx, recs...).FirstErr()
		if err == nil {
			err = commitTxnOffset(tctx, cl, id, group, tx.To)
		}
		end := kgo.TransactionEndTry(commit && err == nil)
		if cl.EndTransaction(tctx, end) == nil {
			tx.Result = jepsen.Aborted
			if end == kgo.TryCommit {
				tx.Result = jepsen.Committed
			}
		}
		cancel()
		switch tx.Result {
		case jepsen.Committed:
			pos = tx.To
			h.committed.Add(1)
		case jepsen.Unknown:
			if !connect() {
				return
			}
		}
		time.Sleep(5 * time.Millisecond) // a steady load, not a flood: the nodes share the machine
	}
}

// javaBackoff is the Java client's retry backoff (retry.backoff.ms=100
// doubling up to retry.backoff.max.ms=1000) instead of kgo's (250 ms
// doubling up to 5 s): with a metadata refresh every 250 ms at most (kgo's
// default is 5 s), a failover is noticed within a second of its end.
func javaBackoff(tries int) time.Duration {
	return min(100*time.Millisecond<<min(max(tries-1, 0), 4), time.Second)
}

// commitTxnOffset adds group's offsets to cl's transaction and commits
// offset for the input topic in it.
func commitTxnOffset(ctx context.Context, cl *kgo.Client, id, group string, offset int64) error {
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		return err
	}
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = id, pid, epoch, group
	resp, err := ao.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("AddOffsetsToTxn: %w", err)
	}
	tc := kmsg.NewPtrTxnOffsetCommitRequest()
	tc.TransactionalID, tc.Group, tc.ProducerID, tc.ProducerEpoch = id, group, pid, epoch
	tc.Generation, tc.MemberID = -1, ""
	tt := kmsg.NewTxnOffsetCommitRequestTopic()
	tt.Topic = jepInput
	tp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	tp.Partition, tp.Offset, tp.LeaderEpoch = 0, offset, -1
	tt.Partitions = append(tt.Partitions, tp)
	tc.Topics = append(tc.Topics, tt)
	tr, err := tc.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(tr.Topics[0].Partitions[0].ErrorCode); err != nil {
		return fmt.Errorf("TxnOffsetCommit: %w", err)
	}
	return nil
}

// stableOffsetErr is group's committed offset of the input (-1: none),
// waiting out a pending transactional commit (RequireStable).
func stableOffsetErr(ctx context.Context, cl *kgo.Client, group string) (int64, error) {
	for {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group, req.RequireStable = group, true
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = jepInput, []int32{0}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return -1, err
		}
		code := resp.ErrorCode
		if len(resp.Groups) > 0 {
			code = resp.Groups[0].ErrorCode
		}
		var off int64 = -1
		for _, g := range resp.Groups {
			for _, t := range g.Topics {
				for _, p := range t.Partitions {
					off, code = p.Offset, max(code, p.ErrorCode)
				}
			}
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				off, code = p.Offset, max(code, p.ErrorCode)
			}
		}
		err = kerr.ErrorForCode(code)
		if err == nil {
			return off, nil
		}
		if !kerr.IsRetriable(err) {
			return -1, err
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func stableOffset(ctx context.Context, t *testing.T, cl *kgo.Client, group string) int64 {
	t.Helper()
	fctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	off, err := stableOffsetErr(fctx, cl, group)
	if err != nil {
		t.Fatalf("the committed offset of %s: %v", group, err)
	}
	return off
}

func (h *jhistory) check(t *testing.T) {
	h.Check()
	h.checkGroups()
	t.Logf("%d groups", len(h.offsets))
	h.Report(t, append(slices.Clone(jepsen.Kinds), "group offset"), h.kills...)
}

// checkGroups: each group's committed offset against the outputs read.
func (h *jhistory) checkGroups() {
	outputs := map[string]map[int64][]string{} // group -> input position -> values read
	ends := map[string][]int64{}               // group -> ends of its committed or unknown transactions
	for name, tx := range h.Txns() {
		if tx.Result != jepsen.Aborted {
			ends[tx.Group] = append(ends[tx.Group], tx.To)
		}
		if outputs[tx.Group] == nil {
			outputs[tx.Group] = map[int64][]string{}
		}
		for i, v := range tx.Values {
			if h.InFinal(v) {
				outputs[tx.Group][tx.From+int64(i)] = append(outputs[tx.Group][tx.From+int64(i)], name)
			}
		}
	}
	for g, off := range h.offsets {
		if off >= 0 && !slices.Contains(ends[g], off) {
			h.Anomaly("group offset", "%s: committed offset %d is not the end of a committed transaction", g, off)
		}
		for pos, names := range outputs[g] {
			switch {
			case len(names) > 1:
				h.Anomaly("duplicate", "%s/%d transformed by %d committed transactions %v", g, pos, len(names), names)
			case pos >= off:
				h.Anomaly("group offset", "%s/%d output by %v is read but the group's offset is %d", g, pos, names, off)
			}
		}
		for pos := int64(0); pos < off; pos++ {
			if len(outputs[g][pos]) == 0 {
				h.Anomaly("group offset", "%s: offset %d committed, the output of position %d not read", g, off, pos)
			}
		}
	}
}
