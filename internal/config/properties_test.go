package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLoadKafkaServerProperties(t *testing.T) {
	props, err := LoadProperties("testdata/server.properties")
	if err != nil {
		t.Fatal(err)
	}
	if props["listeners"] != "PLAINTEXT://:9092,CONTROLLER://:9093" || props["node.id"] != "1" {
		t.Fatalf("parsed %v", props)
	}
	if _, ok := props["log.flush.interval.messages"]; ok {
		t.Error("commented-out line was loaded")
	}
	b, err := NewBroker(props)
	if err != nil {
		t.Fatalf("stock server.properties rejected: %v", err)
	}
	want := []string{
		"share.coordinator.state.topic.min.isr",
		"share.coordinator.state.topic.replication.factor",
	}
	if diff := cmp.Diff(want, b.Unknown()); diff != "" {
		t.Errorf("Unknown (-want +got):\n%s", diff)
	}
	if got := b.LogDirs(); !cmp.Equal(got, []string{"/tmp/kraft-combined-logs"}) {
		t.Errorf("LogDirs = %v", got)
	}
	if got := b.List("process.roles"); !cmp.Equal(got, []string{"broker", "controller"}) {
		t.Errorf("process.roles = %v", got)
	}
	if b.NodeID() != 1 || b.Int("offsets.topic.replication.factor") != 1 || b.Int("num.recovery.threads.per.data.dir") != 1 {
		t.Error("static values not applied")
	}
	if v, src, _ := b.Value("log.retention.hours"); v != "168" || src != SourceStaticBroker {
		t.Errorf("log.retention.hours = %s from %v", v, src)
	}
	eps, err := ParseEndpoints(b.List("advertised.listeners"))
	if err != nil || len(eps) != 2 || eps[1] != (Endpoint{"CONTROLLER", "localhost", 9093}) {
		t.Errorf("advertised.listeners = %v, %v", eps, err)
	}
	topic, err := ResolveTopic(b, nil)
	if err != nil || topic.RetentionMs != 7*24*3600*1000 || topic.SegmentBytes != 1<<30 {
		t.Errorf("topic defaults %+v, %v", topic, err)
	}
}

func TestLoadPropertiesJavaSyntax(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.properties")
	text := "# comment\n! also a comment\n" +
		"a=1\n" +
		"b : two\n" +
		"c three\n" +
		"log.dirs=/data/one,\\\n    /data/two\n" +
		"d=${a}\n" +
		"e=tab\\there\n" +
		"   f   =   spaced\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := LoadProperties(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "1", "b": "two", "c": "three", "log.dirs": "/data/one,/data/two", "d": "${a}", "e": "tab\there", "f": "spaced"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := LoadProperties(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("missing file should fail")
	}
}
