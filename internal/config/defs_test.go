package config

import (
	"math"
	"sort"
	"testing"
)

// minimal is the smallest static config a broker starts with.
func minimal(extra ...string) map[string]string {
	m := map[string]string{"node.id": "1", "process.roles": "broker,controller", "controller.listener.names": "CONTROLLER"}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return m
}

func mustBroker(t *testing.T, static map[string]string) *Broker {
	t.Helper()
	b, err := NewBroker(static)
	if err != nil {
		t.Fatalf("NewBroker: %v", err)
	}
	return b
}

func TestWellKnownDefaults(t *testing.T) {
	const null = "<null>"
	broker := map[string]string{
		"log.segment.bytes":                  "1073741824",
		"log.roll.hours":                     "168",
		"log.roll.ms":                        null,
		"log.retention.hours":                "168",
		"log.retention.minutes":              null,
		"log.retention.ms":                   null,
		"log.retention.bytes":                "-1",
		"log.retention.check.interval.ms":    "300000",
		"log.cleanup.policy":                 "delete",
		"log.cleaner.enable":                 "true",
		"log.cleaner.threads":                "1",
		"log.cleaner.dedupe.buffer.size":     "134217728",
		"log.cleaner.io.buffer.load.factor":  "0.9",
		"log.cleaner.min.cleanable.ratio":    "0.5",
		"log.cleaner.delete.retention.ms":    "86400000",
		"log.cleaner.backoff.ms":             "15000",
		"log.message.timestamp.after.max.ms": "3600000",
		"log.flush.interval.messages":        "9223372036854775807",
		"log.flush.interval.ms":              null,
		"log.dir":                            "/tmp/kafka-logs",
		"log.dirs":                           null,
		"message.max.bytes":                  "1048588",
		"num.partitions":                     "1",
		"default.replication.factor":         "1",
		"min.insync.replicas":                "1",
		"num.recovery.threads.per.data.dir":  "2",
		"listeners":                          "PLAINTEXT://:9092",
		"socket.request.max.bytes":           "104857600",
		"fetch.max.bytes":                    "57671680",
		"replica.lag.time.max.ms":            "30000",
		"group.initial.rebalance.delay.ms":   "3000",
		"offsets.topic.replication.factor":   "3",
		"offsets.retention.minutes":          "10080",
		"transactional.id.expiration.ms":     "604800000",
		"producer.id.expiration.ms":          "86400000",
		"gregor.ack.fsync":                   "true",
		"gregor.admin.listen":                "127.0.0.1:9644",
	}
	for name, want := range broker {
		d, ok := BrokerDef(name)
		if !ok {
			t.Errorf("broker config %s missing", name)
			continue
		}
		checkDefault(t, d, want, null)
	}
	topic := map[string]string{
		"cleanup.policy":                  "delete",
		"compression.type":                "producer",
		"delete.retention.ms":             "86400000",
		"max.message.bytes":               "1048588",
		"message.timestamp.type":          "CreateTime",
		"message.timestamp.after.max.ms":  "3600000",
		"message.timestamp.before.max.ms": "9223372036854775807",
		"min.cleanable.dirty.ratio":       "0.5",
		"retention.ms":                    "604800000",
		"retention.bytes":                 "-1",
		"segment.bytes":                   "1073741824",
		"segment.ms":                      "604800000",
		"segment.index.bytes":             "10485760",
		"index.interval.bytes":            "4096",
		"flush.ms":                        "9223372036854775807",
		"local.retention.ms":              "-2",
		"unclean.leader.election.enable":  "false",
	}
	for name, want := range topic {
		d, ok := TopicDef(name)
		if !ok {
			t.Errorf("topic config %s missing", name)
			continue
		}
		checkDefault(t, d, want, null)
	}
	for _, name := range []string{"node.id", "process.roles", "controller.listener.names"} {
		if d, _ := BrokerDef(name); !d.Required || d.Default != nil {
			t.Errorf("%s: want required with no default", name)
		}
	}
}

func checkDefault(t *testing.T, d Def, want, null string) {
	t.Helper()
	switch {
	case want == null && d.Default != nil:
		t.Errorf("%s default = %q, want null", d.Name, *d.Default)
	case want != null && (d.Default == nil || *d.Default != want):
		t.Errorf("%s default = %v, want %q", d.Name, d.Default, want)
	}
}

func TestRemovedConfigsAreUnknown(t *testing.T) {
	for _, name := range []string{"message.format.version", "message.downconversion.enable", "message.timestamp.difference.max.ms"} {
		if _, ok := TopicDef(name); ok {
			t.Errorf("%s was removed in Kafka 4.0", name)
		}
	}
}

func TestDefsAreSortedAndSelfConsistent(t *testing.T) {
	for _, defs := range [][]Def{BrokerDefs(), TopicDefs()} {
		if !sort.SliceIsSorted(defs, func(i, j int) bool { return defs[i].Name < defs[j].Name }) {
			t.Error("defs not in name order")
		}
		for _, d := range defs {
			if d.Validate == nil || d.Doc == "" {
				t.Errorf("%s: missing Validate or Doc", d.Name)
			}
			if d.Type == Password && !d.Sensitive {
				t.Errorf("%s: password configs must be sensitive", d.Name)
			}
		}
	}
	for topicName, syns := range topicSynonyms {
		td, ok := TopicDef(topicName)
		if !ok {
			t.Errorf("synonym table names unknown topic config %s", topicName)
		}
		for _, s := range syns {
			bd, ok := BrokerDef(s.name)
			if !ok {
				t.Errorf("%s: synonym %s is not a broker config", topicName, s.name)
				continue
			}
			if bd.ReadOnly == false && bd.PerBroker {
				t.Errorf("%s: synonym %s cannot be per-broker only", topicName, s.name)
			}
			if s.conv == sameUnit && bd.Type != td.Type && !(bd.Type == Int && td.Type == Long) {
				t.Errorf("%s (%s) and %s (%s) disagree on type", topicName, td.Type, s.name, bd.Type)
			}
		}
	}
}

// With every broker config at its default, each topic config resolves to
// its own default: the two registries agree.
func TestBrokerDefaultsMatchTopicDefaults(t *testing.T) {
	vals, err := resolveTopic(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range topicReg.defs {
		got, want := format(vals[d.Name]), format(d.defaultValue())
		if got != want {
			t.Errorf("%s: broker-derived default %q, topic default %q", d.Name, got, want)
		}
	}
}

func TestTypeAndSourceNames(t *testing.T) {
	for typ, want := range map[Type]string{Boolean: "BOOLEAN", String: "STRING", Int: "INT", Short: "SHORT", Long: "LONG",
		Double: "DOUBLE", List: "LIST", Class: "CLASS", Password: "PASSWORD", Unknown: "UNKNOWN", Type(42): "UNKNOWN"} {
		if typ.String() != want {
			t.Errorf("Type(%d) = %s, want %s", int(typ), typ, want)
		}
	}
	for src, want := range map[Source]string{SourceDynamicTopic: "DYNAMIC_TOPIC_CONFIG", SourceDynamicBroker: "DYNAMIC_BROKER_CONFIG",
		SourceDynamicDefaultBroker: "DYNAMIC_DEFAULT_BROKER_CONFIG", SourceStaticBroker: "STATIC_BROKER_CONFIG", SourceDefault: "DEFAULT_CONFIG",
		SourceDynamicBrokerLogger: "DYNAMIC_BROKER_LOGGER_CONFIG", SourceClientMetrics: "CLIENT_METRICS_CONFIG", SourceGroup: "GROUP_CONFIG"} {
		if src.String() != want {
			t.Errorf("Source(%d) = %s, want %s", src, src, want)
		}
	}
	if int(SourceDynamicTopic) != 1 || int(SourceDefault) != 5 || int(SourceGroup) != 8 || int(Password) != 9 {
		t.Error("wire numbering changed")
	}
}

func TestJavaDouble(t *testing.T) {
	for f, want := range map[float64]string{
		0.5: "0.5", 1: "1.0", 0.9: "0.9", 0: "0.0", 1e-4: "1.0E-4", 1e7: "1.0E7", 1234567.5: "1234567.5",
		math.MaxFloat64: "1.7976931348623157E308", -2.5e-9: "-2.5E-9", 0.001: "0.001",
	} {
		if got := javaDouble(f); got != want {
			t.Errorf("javaDouble(%v) = %s, want %s", f, got, want)
		}
	}
}

func TestSplitListLikeKafka(t *testing.T) {
	for in, want := range map[string][]string{
		"":                   {},
		"  ":                 {},
		"delete":             {"delete"},
		" compact , delete ": {"compact", "delete"},
		"a,,b":               {"a", "", "b"},
		"a,":                 {"a", ""},
	} {
		got := splitList(in)
		if len(got) != len(want) {
			t.Errorf("splitList(%q) = %q, want %q", in, got, want)
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("splitList(%q) = %q, want %q", in, got, want)
			}
		}
	}
}
