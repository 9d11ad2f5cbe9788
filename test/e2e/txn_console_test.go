package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/gregor-broker/gregor/internal/admin/consoletest"
	"github.com/gregor-broker/gregor/internal/broker/brokertest"
	"github.com/gregor-broker/gregor/internal/record"
)

// produceOrphan writes one transactional batch of a producer id no
// coordinator ever gave out to topic/partition (Produce v11, with
// transaction.partition.verification.enable=false: how hanging transactions
// arose before KIP-890), and returns its offset.
func produceOrphan(ctx context.Context, t *testing.T, addr, topic string, partition int32, pid int64) int64 {
	t.Helper()
	b, err := record.Build(&record.BatchSpec{ProducerID: pid, ProducerEpoch: 3, BaseSequence: 0, Transactional: true,
		Records: []record.BuildRecord{{Timestamp: time.Now().UnixMilli(), Value: []byte("orphan")}}})
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis, req.TransactionID = -1, 5000, kmsg.StringPtr("not-a-real-one")
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{{Partition: partition, Records: b}}
	req.Topics = append(req.Topics, rt)
	v11 := kversion.V4_2_0()
	v11.SetMaxKeyVersion(int16(kmsg.Produce), 11)
	resp, err := req.RequestWith(ctx, newClient(t, addr, kgo.MaxVersions(v11)))
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("produce the orphan: %v %+v", err, resp)
	}
	return resp.Topics[0].Partitions[0].BaseOffset
}

func getPage(ctx context.Context, t *testing.T, url string) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", url, resp.Status, err)
	}
	return string(b)
}

func wantAll(t *testing.T, what, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("%s lacks %q", what, w)
		}
	}
}

// TestHungTransactionInConsole: a real broker with a transaction a kgo
// producer leaves open (partition 0) and an orphan (partition 1). The
// console's Transactions page lists both held partitions with the
// detector's class and explanation, the abort command for the orphan and
// the open one among the ongoing transactions; each partition page's LSO
// marker carries the reason (class, explanation, first offset), in
// headless Chromium without console errors.
func TestHungTransactionInConsole(t *testing.T) {
	b := brokertest.Start(t, map[string]string{"transaction.partition.verification.enable": "false",
		"transaction.state.log.num.partitions": "2"})
	base := "http://" + b.AdminAddr().String()
	ensureConsole(t, b, base)
	topic := uniqueTopic(t)
	createTopic(t, b.Addr().String(), topic, 2, nil)
	ctx := testCtx(t, 60*time.Second)

	txc := b.Client(kgo.TransactionalID("console-open"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionTimeout(10*time.Minute))
	if err := txc.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produceSync(ctx, t, txc, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("open")})
	first := produceOrphan(ctx, t, b.Addr().String(), topic, 1, 987655)
	// Records after each, so the LSO is below the HW on both.
	plain := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceSync(ctx, t, plain, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("after")},
		&kgo.Record{Topic: topic, Partition: 1, Value: []byte("after")})

	page := getPage(ctx, t, base+"/ui/transactions")
	wantAll(t, "/ui/transactions", page,
		fmt.Sprintf(`data-partition="%s/0" data-class="open" data-first-offset="0"`, topic),
		fmt.Sprintf(`data-partition="%s/1" data-class="orphan" data-first-offset="%d"`, topic, first),
		`transaction &#34;console-open&#34; of producer`, "times out in", "is hanging",
		fmt.Sprintf("gregor txn abort %s/1 --start-offset %d", topic, first),
		`data-txn="console-open" data-state="Ongoing"`, "automatic abort is off")
	p0 := getPage(ctx, t, fmt.Sprintf("%s/ui/topics/%s/0", base, topic))
	wantAll(t, "partition 0", p0, `data-marker="lso" data-offset="0" data-held-by="open"`,
		`<p class="lso-why" data-class="open" data-first-offset="0">`, "LSO held 2 records below the HW", "console-open")
	p1 := getPage(ctx, t, fmt.Sprintf("%s/ui/topics/%s/1", base, topic))
	wantAll(t, "partition 1", p1, fmt.Sprintf(`data-marker="lso" data-offset="%d" data-held-by="orphan"`, first),
		"[ORPHAN]", "no coordinator will ever write its marker", fmt.Sprintf("gregor txn abort %s/1 --start-offset %d", topic, first))

	br := consoletest.Start(t, 60*time.Second)
	br.Visit(base+"/ui/transactions", http.StatusOK)
	var orphans int
	br.Eval(`document.querySelectorAll('table.held tr[data-class="orphan"]').length`, &orphans)
	if orphans != 1 {
		t.Errorf("the browser shows %d orphan rows, want 1", orphans)
	}
	t.Logf("transactions page screenshot: %s", br.Screenshot("console-transactions-e2e.png"))
	for p, class := range map[int]string{0: "open", 1: "orphan"} {
		br.Visit(fmt.Sprintf("%s/ui/topics/%s/%d", base, topic, p), http.StatusOK)
		var held string
		br.Eval(`document.querySelector('svg.offsets-bar [data-marker="lso"]').getAttribute("data-held-by")`, &held)
		if held != class {
			t.Errorf("partition %d: the LSO marker is held by %q, want %q", p, held, class)
		}
		br.CheckMarkerOrder()
	}
	t.Logf("partition page screenshot: %s", br.Screenshot("console-lso-held-e2e.png"))
	if err := txc.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
}

// TestOrphanAutoAbort: an orphan on a real broker is watched but left alone
// while gregor.transaction.orphan.abort.enable is off (the default), for
// several checks after it became due; turned on (a dynamic broker config),
// the next check aborts it with an ABORT marker — the LSO reaches the HW,
// /v1/transactions/auto-abort and the console list the abort, the metric
// counts it.
func TestOrphanAutoAbort(t *testing.T) {
	b := brokertest.Start(t, map[string]string{"transaction.partition.verification.enable": "false",
		"transaction.max.timeout.ms": "1000", "gregor.transaction.orphan.abort.min.orphan.ms": "200",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "50"})
	base := "http://" + b.AdminAddr().String()
	ensureConsole(t, b, base)
	topic := uniqueTopic(t)
	createTopic(t, b.Addr().String(), topic, 1, nil)
	ctx := testCtx(t, 60*time.Second)
	first := produceOrphan(ctx, t, b.Addr().String(), topic, 0, 987656)

	type autoAbort struct {
		Enabled     bool  `json:"enabled"`
		Checks      int64 `json:"checks"`
		LastCheckMs int64 `json:"last_check_ms"`
		Aborted     int64 `json:"aborted_total"`
		Watched     []struct {
			FirstOffset int64 `json:"first_offset"`
			DueMs       int64 `json:"due_ms"`
		} `json:"watched"`
		Recent []struct {
			FirstOffset int64  `json:"first_offset"`
			ProducerID  int64  `json:"producer_id"`
			Error       string `json:"error"`
		} `json:"recent"`
	}
	poll := func(what string, done func(aa autoAbort) bool) autoAbort {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			var aa autoAbort
			adminJSON(ctx, t, base+"/v1/transactions/auto-abort", &aa)
			if done(aa) {
				return aa
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: never; last %+v", what, aa)
			}
		}
	}
	held := func() (lso, hw int64) {
		var pv struct {
			LSO int64 `json:"last_stable_offset"`
			HW  int64 `json:"high_watermark"`
		}
		adminJSON(ctx, t, fmt.Sprintf("%s/v1/partitions/%s/0", base, topic), &pv)
		return pv.LSO, pv.HW
	}

	// Off: due (orphan for 200 ms, older than transaction.max.timeout.ms),
	// then three more checks, and it is still there.
	due := poll("the orphan watched and due", func(aa autoAbort) bool {
		return len(aa.Watched) == 1 && aa.Watched[0].FirstOffset == first && aa.Watched[0].DueMs <= aa.LastCheckMs
	})
	after := poll("three more checks", func(aa autoAbort) bool { return aa.Checks >= due.Checks+3 })
	if lso, hw := held(); after.Enabled || after.Aborted != 0 || len(after.Recent) != 0 || lso != first || hw <= lso {
		t.Fatalf("with the automatic abort off: %+v, LSO %d HW %d; want the orphan left alone at %d", after, lso, hw, first)
	}
	page := getPage(ctx, t, base+"/ui/transactions")
	wantAll(t, "/ui/transactions (off)", page, `data-enabled="false"`, "automatic abort is off", `data-class="orphan"`)

	// On: the next check aborts it.
	if _, err := b.AdminClient().AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "gregor.transaction.orphan.abort.enable",
		Value: kadm.StringPtr("true")}}); err != nil {
		t.Fatal(err)
	}
	done := poll("the automatic abort", func(aa autoAbort) bool { return aa.Enabled && len(aa.Recent) > 0 })
	if r := done.Recent[0]; r.Error != "" || r.ProducerID != 987656 || r.FirstOffset != first || done.Aborted != 1 {
		t.Fatalf("the abort: %+v", done)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		lso, hw := held()
		if lso == hw {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the abort LSO %d, HW %d", lso, hw)
		}
	}
	// Its records are aborted: read_committed reads none of them.
	cl := b.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(100*time.Millisecond))
	fctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	fs := cl.PollFetches(fctx)
	cancel()
	if n := fs.NumRecords(); n != 0 {
		t.Errorf("read_committed reads %d records of the aborted orphan", n)
	}
	wantAll(t, "/metrics", getPage(ctx, t, base+"/metrics"), "gregor_transaction_orphans_aborted_total 1")
	page = getPage(ctx, t, base+"/ui/transactions")
	wantAll(t, "/ui/transactions (on)", page, `data-enabled="true"`, "on · 1 aborted",
		fmt.Sprintf(`data-auto-abort="%s/0" data-first-offset="%d" data-result="aborted"`, topic, first))
	if strings.Contains(page, `data-class="orphan"`) {
		t.Error("/ui/transactions still lists the orphan after its abort")
	}
}
