package e2e

import (
	"context"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// copyTree copies the directory src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A data dir of the single-node Gregor that kept its metadata in
// gregor-metadata.json (testdata/singlenode-json, written by that binary)
// starts under the metadata quorum: its metadata becomes the first raft
// snapshot, topics keep their ids, configs and records, group offsets and
// dynamic broker configs survive, producer ids continue after the block it
// had handed out, and the JSON file is retired.
func TestUpgradeFromSingleNodeJSON(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	copyTree(t, "testdata/singlenode-json/data", dir)
	old, err := os.ReadFile(filepath.Join(dir, "gregor-metadata.json"))
	if err != nil {
		t.Fatal(err)
	}
	p := startProc(t, dir)
	checkUpgraded(t, p, string(old))
	// A second start finds the metadata log and converts nothing.
	if err := p.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	p = startProc(t, dir)
	checkUpgraded(t, p, string(old))
	if log := readLog(t, p); strings.Contains(log, "converted the single-node metadata") {
		t.Error("the second start converted the metadata again")
	}
}

func checkUpgraded(t *testing.T, p *proc, oldJSON string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := os.Stat(filepath.Join(p.dataDir, "gregor-metadata.json")); !os.IsNotExist(err) {
		t.Fatalf("gregor-metadata.json still there: %v", err)
	}
	for _, f := range []string{"gregor-metadata.json.migrated", "__cluster_metadata-0"} {
		if _, err := os.Stat(filepath.Join(p.dataDir, f)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	md, err := adm.Metadata(ctx, "orders", "profiles", "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	for name, parts := range map[string]int{"orders": 3, "profiles": 1, "__consumer_offsets": 2} {
		td := md.Topics[name]
		if td.Err != nil || len(td.Partitions) != parts {
			t.Fatalf("%s: %v, %d partitions", name, td.Err, len(td.Partitions))
		}
		if id := hex.EncodeToString(td.ID[:]); !strings.Contains(oldJSON, `"id": "`+id+`"`) {
			t.Fatalf("%s has topic id %s, not its old one", name, id)
		}
		for _, pd := range td.Partitions {
			if pd.Err != nil || pd.Leader != 1 {
				t.Fatalf("%s-%d: leader %d, %v", name, pd.Partition, pd.Leader, pd.Err)
			}
		}
	}
	rc, err := adm.DescribeTopicConfigs(ctx, "orders", "profiles")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{"orders": {"retention.ms", "3600000"}, "profiles": {"cleanup.policy", "compact"}}
	for _, r := range rc {
		if got := configValue(r, want[r.Name][0]); got != want[r.Name][1] {
			t.Fatalf("%s %s = %q, want %s", r.Name, want[r.Name][0], got, want[r.Name][1])
		}
	}
	bc, err := adm.DescribeBrokerConfigs(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{"log.retention.ms": "7200000", "log.segment.bytes": "2097152"} {
		if got := configValue(bc[0], name); got != v {
			t.Fatalf("broker config %s = %q, want %s", name, got, v)
		}
	}
	offs, err := adm.FetchOffsets(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup("orders", 0); !ok || o.At != 7 || o.Metadata != "m0" {
		t.Fatalf("g1 orders-0: %+v", o)
	}
	if o, ok := offs.Lookup("orders", 2); !ok || o.At != 9 {
		t.Fatalf("g1 orders-2: %+v", o)
	}
	consumed := map[string]int{}
	cons, err := kgo.NewClient(kgo.SeedBrokers(p.addr), kgo.ConsumeTopics("orders", "profiles"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for consumed["orders"] < 30 || consumed["profiles"] < 5 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %v", consumed)
		}
		fs.EachRecord(func(r *kgo.Record) { consumed[r.Topic]++ })
	}
	// Producer ids continue after the block the old broker handed out.
	resp, err := cl.Request(ctx, kmsg.NewPtrInitProducerIDRequest())
	if err != nil {
		t.Fatal(err)
	}
	if id := resp.(*kmsg.InitProducerIDResponse).ProducerID; id < 1000 {
		t.Fatalf("producer id %d was handed out before the upgrade", id)
	}
	if log := readLog(t, p); strings.Contains(log, "unclean leader election") {
		t.Fatal("the upgrade made an unclean leader election")
	}
}

// configValue is a described resource's config value ("" if absent).
func configValue(r kadm.ResourceConfig, name string) string {
	for _, c := range r.Configs {
		if c.Key == name {
			return c.MaybeValue()
		}
	}
	return ""
}
