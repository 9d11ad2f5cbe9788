package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/gregor-broker/gregor/internal/record"
)

// The hanging-transaction detector through `gregor why lso`: a transaction
// left open by a producer (here a transactional client that stops
// mid-transaction) is OPEN, with its transactional id and the time left
// before its timeout; a transactional batch no coordinator knows (written
// with transaction.partition.verification.enable=false, the way hanging
// transactions arose before KIP-890) is an ORPHAN, with the
// kafka-transactions.sh abort command that ends it; after that abort
// (WriteTxnMarkers straight to the partition leader, as the tool sends it)
// nothing holds the last stable offset.
func TestWhyLSO(t *testing.T) {
	t.Parallel()
	p := startProc(t, t.TempDir(), "--set", "transaction.partition.verification.enable=false",
		"--set", "transaction.state.log.num.partitions=2")
	cli := gregorCLI{t: t, p: p}
	topic := uniqueTopic(t)
	createTopic(t, p.addr, topic, 2, nil)
	ctx := testCtx(t, 30*time.Second)

	// An open transaction on partition 0.
	txc := newClient(t, p.addr, kgo.TransactionalID("why-open"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionTimeout(10*time.Minute))
	if err := txc.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produceSync(ctx, t, txc, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("open")})
	out := cli.run("why", "lso", topic+"/0")
	for _, want := range []string{"record(s) below the high watermark", "[OPEN] from offset 0", `transaction "why-open"`, "times out in"} {
		if !strings.Contains(out, want) {
			t.Errorf("why lso %s/0 lacks %q:\n%s", topic, want, out)
		}
	}

	// An orphan on partition 1: a transactional batch of a producer id no
	// coordinator ever gave out.
	const pid = 987654
	b, err := record.Build(&record.BatchSpec{ProducerID: pid, ProducerEpoch: 3, BaseSequence: 0, Transactional: true,
		Records: []record.BuildRecord{{Timestamp: time.Now().UnixMilli(), Value: []byte("orphan")}}})
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis, req.TransactionID = -1, 5000, kmsg.StringPtr("not-a-real-one")
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{{Partition: 1, Records: b}}
	req.Topics = append(req.Topics, rt)
	v11 := kversion.V4_2_0()
	v11.SetMaxKeyVersion(int16(kmsg.Produce), 11) // v12+ adds the partition to the transaction
	cl := newClient(t, p.addr, kgo.MaxVersions(v11))
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("produce the orphan: %v %+v", err, resp)
	}
	t.Logf("gregor why lso %s/0:\n%s", topic, out)
	out = cli.run("why", "lso", topic+"/1")
	t.Logf("gregor why lso %s/1:\n%s", topic, out)
	for _, want := range []string{"[ORPHAN] from offset 0", "is hanging", "no coordinator will ever write its marker",
		"gregor txn abort " + topic + "/1 --start-offset 0", "kafka-transactions.sh --bootstrap-server HOST:PORT abort --topic " + topic + " --partition 1 --producer-id 987654 --producer-epoch 3 --coordinator-epoch 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("why lso %s/1 lacks %q:\n%s", topic, want, out)
		}
	}
	// /v1/transactions lists both.
	var held []struct {
		Partition    int32 `json:"partition"`
		Transactions []struct {
			Class string `json:"class"`
		} `json:"transactions"`
	}
	adminJSON(ctx, t, p.admin+"/v1/transactions", &held)
	classes := map[int32]string{}
	for _, h := range held {
		for _, tx := range h.Transactions {
			classes[h.Partition] = tx.Class
		}
	}
	if classes[0] != "open" || classes[1] != "orphan" {
		t.Fatalf("/v1/transactions classes %v, want open on 0 and orphan on 1", classes)
	}

	// The command why lso gave ends it: gregor txn abort (DescribeProducers,
	// then WriteTxnMarkers(ABORT) to the leader, as kafka-transactions.sh).
	if got := cli.run("txn", "abort", topic+"/1", "--start-offset", "0"); !strings.Contains(got, "aborted the transaction of producer 987654") {
		t.Fatalf("gregor txn abort: %q", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		out = cli.run("why", "lso", topic+"/1")
		if strings.Contains(out, "nothing holds the last stable offset back") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the abort, why lso %s/1 still says:\n%s", topic, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := txc.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
}

// adminJSON GETs url from the admin listener and decodes it into v.
func adminJSON(ctx context.Context, t *testing.T, url string, v any) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}
