package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The transactional clients of other libraries, each run as a script
// against the gregor binary: confluent-kafka-python (librdkafka) and
// kafkajs. Both speak the original transaction protocol (transaction
// version 1: no KIP-890 part 2, AddPartitionsToTxn before each new
// partition, EndTxn below v5) to a broker that advertises
// transaction.version 2.

// kafkajsVersion is the kafkajs scripts/test.sh installs.
const kafkajsVersion = "2.2.4"

// txnClientReport is what each script prints: the committed records of the
// input topic it read, the group's committed offset of the input topic's
// partition 0 after the aborted and after the committed consume-transform-
// produce transaction (none: negative), the output topic read committed
// and uncommitted, and the error a producer fenced by a newer one of its
// transactional id got from its commit.
type txnClientReport struct {
	ReadCommitted      []string `json:"read_committed"`
	OffsetsAfterAbort  []int64  `json:"offsets_after_abort"`
	OffsetsAfterCommit []int64  `json:"offsets_after_commit"`
	OutCommitted       []string `json:"out_committed"`
	OutUncommitted     []string `json:"out_uncommitted"`
	FencedError        string   `json:"fenced_error"`
}

// missingClient skips the test, or fails it under CI (where scripts/test.sh
// installs the client) unless unavailable says why it could not be.
func missingClient(t *testing.T, what, unavailable string) {
	t.Helper()
	if os.Getenv("CI") != "" && unavailable == "" {
		t.Fatalf("%s is not installed (scripts/test.sh installs it under CI)", what)
	}
	if unavailable != "" {
		what += " (" + unavailable + ")"
	}
	t.Skipf("%s is not installed; scripts/test.sh installs it", what)
}

// runTxnClient starts `gregor serve`, creates the script's topics (one
// partition each), runs name with args BOOTSTRAP IN OUT GROUP and checks
// its report and the broker's state: the input topic holds the aborted
// records too, read_committed clients saw the committed ones only, the
// group's offset was committed by the committed transaction only, the
// fenced producer's commit failed with wantFenced and its record is
// aborted.
func runTxnClient(t *testing.T, env []string, wantFenced, name string, args ...string) {
	t.Helper()
	p := startProc(t, t.TempDir(),
		"--set", "group.initial.rebalance.delay.ms=0",
		"--set", "offsets.topic.num.partitions=1",
		"--set", "transaction.state.log.num.partitions=1")
	in, out, group := uniqueTopic(t)+"-in", uniqueTopic(t)+"-out", sanitize(t.Name())
	createTopic(t, p.addr, in, 1, nil)
	createTopic(t, p.addr, out, 1, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, append(args, p.addr, in, out, group)...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	started := time.Now()
	err := cmd.Run()
	t.Logf("%s ran %v", filepath.Base(args[len(args)-1]), time.Since(started).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("%s: %v (context: %v)\nstdout:\n%s\nstderr (last 3000 bytes):\n%s", strings.Join(cmd.Args, " "), err, ctx.Err(), stdout.String(), tail(stderr.String(), 3000))
	}
	var r txnClientReport
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("the script's output is not its report: %v\n%s\nstderr:\n%s", err, stdout.String(), tail(stderr.String(), 3000))
	}
	t.Logf("report: %+v", r)

	if want := []string{"c1", "c2", "c3", "c4"}; !slices.Equal(r.ReadCommitted, want) {
		t.Errorf("the read_committed consumer read %v, want the committed %v", r.ReadCommitted, want)
	}
	// The aborted records are in the log: a read_uncommitted reader sees
	// them. f1 is the fenced producer's, aborted when the newer one
	// initialised; f2 the newer one's, committed.
	values := func(rs []*kgo.Record) []string {
		var vs []string
		for _, r := range rs {
			vs = append(vs, string(r.Value))
		}
		return vs
	}
	if got, want := values(consumeN(ctx, t, p.addr, in, 8)), []string{"c1", "c2", "c3", "a1", "a2", "c4", "f1", "f2"}; !slices.Equal(got, want) {
		t.Errorf("read_uncommitted the input topic holds %v, want %v", got, want)
	}
	if got, want := values(consumeN(ctx, t, p.addr, in, 5, kgo.FetchIsolationLevel(kgo.ReadCommitted()))), []string{"c1", "c2", "c3", "c4", "f2"}; !slices.Equal(got, want) {
		t.Errorf("read_committed the input topic holds %v, want %v", got, want)
	}
	if r.FencedError != wantFenced {
		t.Errorf("the fenced producer's commit got %q, want %q", r.FencedError, wantFenced)
	}

	if len(r.OffsetsAfterAbort) != 1 || r.OffsetsAfterAbort[0] >= 0 {
		t.Errorf("after the aborted transaction the group's offsets are %v, want none committed", r.OffsetsAfterAbort)
	}
	adm := kadm.NewClient(newClient(t, p.addr))
	fetched, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("OffsetFetch %s: %v", group, err)
	}
	ends, err := adm.ListEndOffsets(ctx, in)
	if err != nil {
		t.Fatalf("ListOffsets %s: %v", in, err)
	}
	committed, _ := fetched.Lookup(in, 0)
	end, _ := ends.Lookup(in, 0)
	// c4 is at offset 7 (c1-c3, a marker, a1-a2, a marker): the committed
	// offset is past it, at most the log end offset (past c4's marker).
	if len(r.OffsetsAfterCommit) != 1 || r.OffsetsAfterCommit[0] != committed.At ||
		committed.At < 8 || committed.At > end.Offset {
		t.Errorf("after the committed transaction the client sees the group's offsets %v, the broker %d (log end %d); want the one offset in 8..%d",
			r.OffsetsAfterCommit, committed.At, end.Offset, end.Offset)
	}

	if want := []string{"C1", "C2", "C3", "C4"}; !slices.Equal(r.OutCommitted, want) {
		t.Errorf("read_committed the output topic holds %v, want %v", r.OutCommitted, want)
	}
	if want := []string{"C1-aborted", "C2-aborted", "C3-aborted", "C4-aborted", "C1", "C2", "C3", "C4"}; !slices.Equal(r.OutUncommitted, want) {
		t.Errorf("read_uncommitted the output topic holds %v, want the aborted then the committed copy %v", r.OutUncommitted, want)
	}
	outCommitted := values(consumeN(ctx, t, p.addr, out, 4, kgo.FetchIsolationLevel(kgo.ReadCommitted())))
	if want := []string{"C1", "C2", "C3", "C4"}; !slices.Equal(outCommitted, want) {
		t.Errorf("franz-go read_committed reads %v from the output topic, want %v", outCommitted, want)
	}
}

// confluent-kafka-python (Debian's python3-confluent-kafka 1.7.0 on
// librdkafka 2.0.2): init_transactions, a committed, an aborted and a
// committed transaction; a subscribed read_committed consumer; a
// consume-transform-produce transaction with send_offsets_to_transaction
// and the consumer's group metadata, aborted once and then committed; a
// producer fenced by a newer one of its transactional id (librdkafka
// raises its fatal _FENCED).
func TestPythonTransactions(t *testing.T) {
	t.Parallel()
	py := ""
	for _, c := range []string{"/usr/bin/python3", "python3"} {
		if path, err := exec.LookPath(c); err == nil && exec.Command(path, "-c", "import confluent_kafka").Run() == nil {
			py = path
			break
		}
	}
	if py == "" {
		missingClient(t, "confluent-kafka-python (Debian's python3-confluent-kafka)", "")
	}
	runTxnClient(t, nil, "_FENCED", py, filepath.Join("testdata", "txn_clients", "confluent_txn.py"))
}

// kafkajs: producer.transaction() committed, aborted and committed; a
// consumer with readUncommitted false; a consume-transform-produce
// transaction with sendOffsets (AddOffsetsToTxn, TxnOffsetCommit v1),
// aborted once and then committed; a producer fenced by a newer one of its
// transactional id.
func TestKafkajsTransactions(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("GREGOR_KAFKAJS_DIR")
	if dir == "" {
		if cache, err := os.UserCacheDir(); err == nil {
			dir = filepath.Join(cache, "gregor-tools", "kafkajs-"+kafkajsVersion)
		}
	}
	modules := filepath.Join(dir, "node_modules")
	node, err := exec.LookPath("node")
	if _, statErr := os.Stat(filepath.Join(modules, "kafkajs", "package.json")); err != nil || statErr != nil {
		missingClient(t, "kafkajs "+kafkajsVersion+" (in "+dir+") or node", os.Getenv("GREGOR_KAFKAJS_UNAVAILABLE"))
	}
	// kafkajs does not know PRODUCER_FENCED (90): EndTxn v1 answers
	// INVALID_PRODUCER_EPOCH, as Kafka does below v2.
	runTxnClient(t, []string{"NODE_PATH=" + modules, "KAFKAJS_NO_PARTITIONER_WARNING=1"}, "INVALID_PRODUCER_EPOCH", node,
		filepath.Join("testdata", "txn_clients", "kafkajs_txn.js"))
}
