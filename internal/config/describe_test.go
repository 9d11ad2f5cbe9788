package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func find(t *testing.T, entries []Entry, name string) Entry {
	t.Helper()
	for _, e := range entries {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no entry %s", name)
	return Entry{}
}

func syn(name, value string, src Source) Synonym {
	return Synonym{Name: name, Value: strPtr(value), Source: src}
}

func TestDescribeTopicSynonymOrder(t *testing.T) {
	b := mustBroker(t, minimal("log.retention.ms", "1000", "log.retention.hours", "24", "log.cleanup.policy", "compact", "message.max.bytes", "2000"))
	b, err := b.WithDynamic(kv("log.retention.ms", "2000", "log.cleanup.policy", "delete"))
	if err != nil {
		t.Fatal(err)
	}
	b, err = b.WithDynamicPerBroker(kv("log.cleanup.policy", "compact,delete"))
	if err != nil {
		t.Fatal(err)
	}
	entries := DescribeTopic(b, kv("retention.ms", "3000"))

	for _, tc := range []struct {
		name  string
		value string
		src   Source
		syns  []Synonym
	}{
		{"retention.ms", "3000", SourceDynamicTopic, []Synonym{
			syn("retention.ms", "3000", SourceDynamicTopic),
			syn("log.retention.ms", "2000", SourceDynamicDefaultBroker),
			syn("log.retention.ms", "1000", SourceStaticBroker),
			syn("log.retention.hours", "24", SourceStaticBroker),
			syn("log.retention.hours", "168", SourceDefault),
		}},
		{"cleanup.policy", "compact,delete", SourceDynamicBroker, []Synonym{
			syn("log.cleanup.policy", "compact,delete", SourceDynamicBroker),
			syn("log.cleanup.policy", "delete", SourceDynamicDefaultBroker),
			syn("log.cleanup.policy", "compact", SourceStaticBroker),
			syn("log.cleanup.policy", "delete", SourceDefault),
		}},
		{"max.message.bytes", "2000", SourceStaticBroker, []Synonym{
			syn("message.max.bytes", "2000", SourceStaticBroker),
			syn("message.max.bytes", "1048588", SourceDefault),
		}},
		{"segment.bytes", "1073741824", SourceDefault, []Synonym{syn("log.segment.bytes", "1073741824", SourceDefault)}},
		// No broker default: no synonyms at all.
		{"leader.replication.throttled.replicas", "", SourceDefault, nil},
	} {
		e := find(t, entries, tc.name)
		if e.Value == nil || *e.Value != tc.value || e.Source != tc.src || e.ReadOnly || e.Sensitive {
			t.Errorf("%s: value %v source %v ro %v sensitive %v", tc.name, e.Value, e.Source, e.ReadOnly, e.Sensitive)
		}
		if diff := cmp.Diff(tc.syns, e.Synonyms); diff != "" {
			t.Errorf("%s synonyms (-want +got):\n%s", tc.name, diff)
		}
	}
	if e := find(t, entries, "retention.ms"); e.Type != Long || e.Doc == "" {
		t.Errorf("retention.ms type %v doc %q", e.Type, e.Doc)
	}
	for _, e := range entries {
		if e.Name == "internal.segment.bytes" {
			t.Error("internal configs are described only when set")
		}
	}
}

// Kafka drops broker synonyms listed ahead of the topic's first synonym, so
// retention set through log.retention.hours alone shows as DEFAULT_CONFIG
// with no synonyms, though the value is the one hours gives.
func TestDescribeTopicFollowsKafkaDropWhile(t *testing.T) {
	b := mustBroker(t, minimal("log.retention.hours", "24"))
	e := find(t, DescribeTopic(b, nil), "retention.ms")
	if *e.Value != "86400000" || e.Source != SourceDefault || len(e.Synonyms) != 0 {
		t.Errorf("retention.ms = %s from %v, synonyms %v", *e.Value, e.Source, e.Synonyms)
	}
	e = find(t, DescribeTopic(b, nil), "flush.ms")
	if e.Source != SourceDefault || len(e.Synonyms) != 0 {
		t.Errorf("flush.ms from %v with %v", e.Source, e.Synonyms)
	}
}

func TestDescribeTopicNilBrokerAndUnknownOverride(t *testing.T) {
	entries := DescribeTopic(nil, kv("internal.segment.bytes", "4096", "mystery", "1"))
	if e := find(t, entries, "internal.segment.bytes"); *e.Value != "4096" || e.Source != SourceDynamicTopic {
		t.Errorf("internal.segment.bytes: %v %v", e.Value, e.Source)
	}
	if e := find(t, entries, "mystery"); e.Value != nil || !e.Sensitive || e.Type != Unknown {
		t.Errorf("unknown override: %+v", e)
	}
}

func TestDescribeBroker(t *testing.T) {
	b := mustBroker(t, minimal("log.retention.ms", "1000", "ssl.keystore.password", "hunter2", "custom.plugin", "on"))
	b, err := b.WithDynamic(kv("log.retention.ms", "2000"))
	if err != nil {
		t.Fatal(err)
	}
	entries := DescribeBroker(b)

	e := find(t, entries, "log.retention.ms")
	want := Entry{Name: "log.retention.ms", Value: strPtr("2000"), Source: SourceDynamicDefaultBroker, Type: Long, Doc: e.Doc,
		Synonyms: []Synonym{
			syn("log.retention.ms", "2000", SourceDynamicDefaultBroker),
			syn("log.retention.ms", "1000", SourceStaticBroker),
			syn("log.retention.hours", "168", SourceDefault),
		}}
	if diff := cmp.Diff(want, e); diff != "" {
		t.Errorf("log.retention.ms (-want +got):\n%s", diff)
	}
	if e := find(t, entries, "log.retention.hours"); !e.ReadOnly || e.Source != SourceDefault || *e.Value != "168" ||
		!cmp.Equal(e.Synonyms, []Synonym{syn("log.retention.hours", "168", SourceDefault)}) {
		t.Errorf("log.retention.hours: %+v", e)
	}
	pw := find(t, entries, "ssl.keystore.password")
	if pw.Value != nil || !pw.Sensitive || pw.Source != SourceStaticBroker || pw.Type != Password ||
		!cmp.Equal(pw.Synonyms, []Synonym{{Name: "ssl.keystore.password", Source: SourceStaticBroker}}) {
		t.Errorf("sensitive config: %+v", pw)
	}
	if e := find(t, entries, "log.roll.ms"); e.Value != nil || e.Source != SourceDefault || e.ReadOnly {
		t.Errorf("null dynamic config: %+v", e)
	}
	if e := find(t, entries, "custom.plugin"); e.Value != nil || !e.Sensitive || !e.ReadOnly || e.Type != Unknown || e.Source != SourceStaticBroker {
		t.Errorf("unknown config: %+v", e)
	}
	defaults := DescribeBrokerDefaults(b)
	if len(defaults) != 1 || defaults[0].Name != "log.retention.ms" || *defaults[0].Value != "2000" ||
		!cmp.Equal(defaults[0].Synonyms, []Synonym{syn("log.retention.ms", "2000", SourceDynamicDefaultBroker)}) {
		t.Errorf("DescribeBrokerDefaults = %+v", defaults)
	}
}
