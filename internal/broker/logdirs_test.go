package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-broker/gregor/internal/admin"
	"github.com/gregor-broker/gregor/internal/broker"
	"github.com/gregor-broker/gregor/internal/broker/brokertest"
	"github.com/gregor-broker/gregor/internal/logdirs"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// Issue #11 §1 and §7 against real brokers on real dirs: what a broker does
// with its log dirs before it serves.

// startRefused starts a broker with props and returns the error it refuses
// to start with (failing the test if it starts).
func startRefused(t *testing.T, props map[string]string) error {
	t.Helper()
	b, err := broker.New(broker.Options{Static: props, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	err = b.Start()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = b.Shutdown(ctx)
	if err == nil {
		t.Fatalf("a broker on %s started, want it refused", props["log.dirs"])
	}
	return err
}

// produceN produces n records "<topic>-<i>" round-robin over the topic's
// partitions, acks=all.
func produceN(t *testing.T, b *brokertest.Broker, topic string, n int) {
	t.Helper()
	cl := b.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(topic + "-" + strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// consumeAll reads topic from the start until n records came back.
func consumeAll(t *testing.T, b *brokertest.Broker, topic string, n int) map[string]bool {
	t.Helper()
	cl := b.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := map[string]bool{}
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of %s", len(got), n, topic)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s[%d]: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)] = true })
	}
	return got
}

func clusterView(t *testing.T, b *brokertest.Broker) admin.ClusterView {
	t.Helper()
	resp, err := http.Get("http://" + b.AdminAddr().String() + "/v1/cluster")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var v admin.ClusterView
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("/v1/cluster: %v\n%s", err, body)
	}
	return v
}

// The reproduction of #11 §1: data produced with log.dirs=old, then a start
// with log.dirs=new,old (a disk added in front, or a mount that failed).
// Before, the broker formatted a new cluster in new, rewrote old's
// meta.properties and deleted old/orders-0. Now it refuses, names both dirs
// and what to do, and writes nothing; the data is all there afterwards.
func TestEmptyLogDirInFrontOfDataIsRefused(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	old, newDir := filepath.Join(root, "old"), filepath.Join(root, "new")
	b := brokertest.StartIn(t, old, nil)
	clusterID := b.Metadata().ClusterID
	brokertest.CreateTopic(t, b.AdminClient(), "orders", 1, nil)
	produceN(t, b, "orders", 20)
	b.Stop()
	metaBefore, err := os.ReadFile(filepath.Join(old, "meta.properties"))
	if err != nil {
		t.Fatal(err)
	}

	props := brokertest.Props(newDir + "," + old)
	err = startRefused(t, props)
	var de *logdirs.Error
	if !errors.As(err, &de) {
		t.Fatalf("refused with %v, want a *logdirs.Error", err)
	}
	for _, want := range []string{newDir + ": does not exist", old + ": meta.properties version=1 cluster.id=" + clusterID,
		"1 partition dir", "the metadata (__cluster_metadata-0)", "No `meta.properties` found in " + newDir,
		"gregor storage format --ignore-formatted", "not mounted"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal does not say %q:\n%s", want, err)
		}
	}
	// An empty mount point is refused the same way.
	if err := os.Mkdir(newDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := startRefused(t, props); !strings.Contains(err.Error(), newDir+": empty") {
		t.Errorf("with an empty %s: %v", newDir, err)
	}
	if metaAfter, _ := os.ReadFile(filepath.Join(old, "meta.properties")); string(metaAfter) != string(metaBefore) {
		t.Errorf("old's meta.properties was rewritten:\n%s\nwas:\n%s", metaAfter, metaBefore)
	}
	if _, err := os.Stat(filepath.Join(newDir, "meta.properties")); !os.IsNotExist(err) {
		t.Errorf("new was formatted: %v", err)
	}
	b = brokertest.StartIn(t, old, nil)
	if id := b.Metadata().ClusterID; id != clusterID {
		t.Fatalf("cluster id %s after the refusal, want %s", id, clusterID)
	}
	if got := consumeAll(t, b, "orders", 20); len(got) != 20 {
		t.Fatalf("%d records after the refusal, want 20", len(got))
	}
}

// A reordered log.dirs starts the same cluster with every record: the
// metadata is found in whichever dir holds it.
func TestReorderedLogDirsStartTheSameCluster(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	a, c := filepath.Join(root, "a"), filepath.Join(root, "c")
	b := brokertest.StartIn(t, a+","+c, nil)
	clusterID := b.Metadata().ClusterID
	brokertest.CreateTopic(t, b.AdminClient(), "orders", 4, nil)
	produceN(t, b, "orders", 40)
	b.Stop()
	for _, d := range []string{a, c} {
		if n, _ := filepath.Glob(filepath.Join(d, "orders-*")); len(n) == 0 {
			t.Fatalf("no partition of orders in %s: the test needs both dirs used", d)
		}
	}
	b = brokertest.StartIn(t, c+","+a, nil)
	if id := b.Metadata().ClusterID; id != clusterID {
		t.Fatalf("log.dirs reordered: cluster id %s, want %s", id, clusterID)
	}
	if got := consumeAll(t, b, "orders", 40); len(got) != 40 {
		t.Fatalf("%d records after the reorder, want 40", len(got))
	}
	if v := clusterView(t, b); v.MetadataDir != a || v.StrayLogs != 0 {
		t.Fatalf("metadata dir %q, %d stray logs; want %s and none", v.MetadataDir, v.StrayLogs, a)
	}
}

// #11 §7: a second broker on a dir a running broker uses refuses to start,
// with Kafka's message naming the dir, and the first goes on serving.
func TestSecondBrokerOnALogDirIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := brokertest.StartIn(t, dir, nil)
	brokertest.CreateTopic(t, b.AdminClient(), "orders", 1, nil)
	err := startRefused(t, brokertest.Props(dir))
	var inUse *logdirs.InUseError
	if !errors.As(err, &inUse) || !errors.Is(err, vfs.ErrLocked) {
		t.Fatalf("second broker: %v, want the lock refused", err)
	}
	if want := "Failed to acquire lock on file .lock in " + dir + ". A Gregor instance in another process or thread is using this directory."; err.Error() != want {
		t.Errorf("second broker:\n%s\nwant:\n%s", err, want)
	}
	produceN(t, b, "orders", 5)
	b.Stop()
	b = brokertest.StartIn(t, dir, nil)
	if got := consumeAll(t, b, "orders", 5); len(got) != 5 {
		t.Fatalf("%d records, want 5", len(got))
	}
}

// KIP-858: partition logs the metadata does not know (an unknown topic, or a
// log of another topic with the same name) are renamed stray and kept, not
// deleted; /metrics, /v1/cluster and the console report them.
func TestStrayLogsAreKeptAndReported(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	other, dir := filepath.Join(root, "other"), filepath.Join(root, "data")
	// Another node's logs: topic ghost, and a topic orders with its own id.
	b := brokertest.StartIn(t, other, nil)
	brokertest.CreateTopic(t, b.AdminClient(), "ghost", 1, nil)
	brokertest.CreateTopic(t, b.AdminClient(), "orders", 1, nil)
	produceN(t, b, "ghost", 7)
	produceN(t, b, "orders", 3)
	b.Stop()
	b = brokertest.StartIn(t, dir, nil)
	brokertest.CreateTopic(t, b.AdminClient(), "orders", 1, nil)
	produceN(t, b, "orders", 2)
	b.Stop()
	// Move the other node's logs in, orders-0 in place of this node's.
	for _, name := range []string{"ghost-0", "orders-0"} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(other, name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}

	b = brokertest.StartIn(t, dir, nil)
	v := clusterView(t, b)
	if v.StrayLogs != 2 || len(v.LogDirs) != 1 || len(v.LogDirs[0].Strays) != 2 {
		t.Fatalf("/v1/cluster: %d stray logs, log dirs %+v; want ghost-0 and orders-0", v.StrayLogs, v.LogDirs)
	}
	for i, want := range []string{"ghost", "orders"} {
		s := v.LogDirs[0].Strays[i]
		if s.Topic != want || s.Partition != 0 || !strings.HasPrefix(s.Name, want+"-0.") || !strings.HasSuffix(s.Name, "-stray") || s.SizeBytes == 0 {
			t.Errorf("stray %d: %+v, want %s-0.<id>-stray with its bytes", i, s, want)
		}
		files, err := filepath.Glob(filepath.Join(dir, s.Name, "*.log"))
		if err != nil || len(files) == 0 {
			t.Errorf("stray %s has no segment left: %v", s.Name, err)
		}
	}
	if got := mustValue(t, scrape(t, b), "gregor_log_stray_logs", map[string]string{"logDirectory": dir}); got != 2 {
		t.Errorf("gregor_log_stray_logs = %v, want 2", got)
	}
	resp, err := http.Get("http://" + b.AdminAddr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), v.LogDirs[0].Strays[0].Name) {
		t.Error("the console overview does not list the stray logs")
	}
	// The topic orders of this node starts afresh, empty; ghost does not exist.
	if im := b.Metadata(); im.Topic("ghost") != nil {
		t.Error("a stray log created a topic")
	}
	if p, ok := b.Replicas().Get(topicpart.TopicPartition{Topic: "orders", Partition: 0}); !ok || p.Log.LogEndOffset() != 0 {
		t.Errorf("orders-0 after its log was set aside: hosted=%v", ok)
	}
}
