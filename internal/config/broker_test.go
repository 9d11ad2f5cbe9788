package config

import (
	"errors"
	"strings"
	"testing"
)

func TestNewBrokerRequiresKRaftIdentity(t *testing.T) {
	for _, missing := range []string{"node.id", "process.roles", "controller.listener.names"} {
		m := minimal()
		delete(m, missing)
		_, err := NewBroker(m)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), `Missing required configuration "`+missing+`"`) {
			t.Errorf("without %s: err = %v", missing, err)
		}
	}
}

func TestNodeIDAndBrokerIDStandInForEachOther(t *testing.T) {
	b := mustBroker(t, minimal("node.id", "7"))
	if b.Int("broker.id") != 7 || b.NodeID() != 7 {
		t.Errorf("broker.id = %d, node.id = %d", b.Int("broker.id"), b.NodeID())
	}
	m := minimal("broker.id", "3")
	delete(m, "node.id")
	if b := mustBroker(t, m); b.NodeID() != 3 {
		t.Errorf("node.id from broker.id = %d", b.NodeID())
	}
	_, err := NewBroker(minimal("broker.id", "2"))
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "must be the same") {
		t.Errorf("mismatched ids: %v", err)
	}
}

func TestNewBrokerKeepsUnknownNames(t *testing.T) {
	b := mustBroker(t, minimal("share.coordinator.state.topic.min.isr", "1", "custom.thing", "x"))
	if got := b.Unknown(); len(got) != 2 || got[0] != "custom.thing" || got[1] != "share.coordinator.state.topic.min.isr" {
		t.Errorf("Unknown() = %v", got)
	}
	if v, src, ok := b.Value("custom.thing"); !ok || v != "x" || src != SourceStaticBroker {
		t.Errorf("Value(custom.thing) = %q %v %v", v, src, ok)
	}
}

func TestNewBrokerRejectsBadValues(t *testing.T) {
	for _, tc := range []struct{ name, value, want string }{
		{"log.segment.bytes", "1024", "Invalid value 1024 for configuration log.segment.bytes: Value must be at least 1048576"},
		{"num.io.threads", "eight", "Invalid value eight for configuration num.io.threads: Not a number of type INT"},
		{"log.cleaner.enable", "yes", "Invalid value yes for configuration log.cleaner.enable: Expected value to be either true or false"},
		{"log.cleanup.policy", "delete,remove", "Invalid value remove for configuration log.cleanup.policy: String must be one of: compact, delete"},
		{"process.roles", "", "Configuration 'process.roles' must not be empty. Valid values include: [broker, controller]"},
		{"process.roles", "broker,broker", "Configuration 'process.roles' values must not be duplicated."},
		{"log.cleaner.min.cleanable.ratio", "1.5", "Invalid value 1.5 for configuration log.cleaner.min.cleanable.ratio: Value must be no more than 1"},
		{"listeners", "PLAINTEXT//:9092", "Unable to parse PLAINTEXT//:9092 to a broker endpoint"},
		{"listeners", "PLAINTEXT://:9092,plaintext://:9093", "Each listener must have a different name"},
		{"gregor.admin.listen", "localhost", "must be host:port"},
		{"advertised.listeners", "PLAINTEXT://0.0.0.0:9092", "nonroutable meta-address 0.0.0.0"},
		{"listeners", "INTERNAL://:9092", "No security protocol defined for listener INTERNAL"},
		{"replica.fetch.wait.max.ms", "40000", "replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms"},
		{"log.cleaner.min.compaction.lag.ms", "10", ""}, // fine on its own
	} {
		_, err := NewBroker(minimal(tc.name, tc.value))
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s=%s: %v", tc.name, tc.value, err)
			}
			continue
		}
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%q: err = %v, want %q", tc.name, tc.value, err, tc.want)
		}
	}
	_, err := NewBroker(minimal("log.cleaner.min.compaction.lag.ms", "10", "log.cleaner.max.compaction.lag.ms", "5"))
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)") {
		t.Errorf("conflicting compaction lags: %v", err)
	}
}

func TestTypedGetters(t *testing.T) {
	b := mustBroker(t, minimal("log.cleaner.io.buffer.load.factor", " 0.75 ", "log.dir", "/a, /b", "offsets.topic.replication.factor", "1",
		"gregor.ack.fsync", "FALSE", "log.retention.bytes", "+100"))
	if got := b.Double("log.cleaner.io.buffer.load.factor"); got != 0.75 {
		t.Errorf("Double = %v", got)
	}
	if got := b.LogDirs(); len(got) != 2 || got[0] != "/a" || got[1] != "/b" {
		t.Errorf("LogDirs = %q", got)
	}
	if b.Int("offsets.topic.replication.factor") != 1 || b.Bool("gregor.ack.fsync") || b.Long("log.retention.bytes") != 100 {
		t.Error("typed getters disagree with static values")
	}
	if b.Long("log.retention.ms") != 0 {
		t.Error("null LONG should read as 0")
	}
	if v, src, ok := b.Value("log.retention.ms"); ok || src != SourceDefault || v != "" {
		t.Errorf("Value(log.retention.ms) = %q %v %v, want null default", v, src, ok)
	}
	if got := b.String("log.dir"); got != "/a,/b" {
		t.Errorf("String(log.dir) = %q", got)
	}
	if v, src, _ := b.Value("gregor.ack.fsync"); v != "false" || src != SourceStaticBroker {
		t.Errorf("Value(gregor.ack.fsync) = %q %v", v, src)
	}
	defer func() {
		if recover() == nil {
			t.Error("Int on a LONG config should panic")
		}
	}()
	b.Int("log.retention.bytes")
}

func TestDynamicLayers(t *testing.T) {
	b := mustBroker(t, minimal("log.retention.bytes", "100", "message.max.bytes", "2000"))
	d, err := b.WithDynamic(map[string]string{"log.retention.bytes": "200", "log.cleaner.threads": "2"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := d.WithDynamicPerBroker(map[string]string{"log.retention.bytes": "300", "listeners": "PLAINTEXT://:9095"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		b    *Broker
		name string
		want string
		src  Source
	}{
		{b, "log.retention.bytes", "100", SourceStaticBroker},
		{d, "log.retention.bytes", "200", SourceDynamicDefaultBroker},
		{p, "log.retention.bytes", "300", SourceDynamicBroker},
		{p, "log.cleaner.threads", "2", SourceDynamicDefaultBroker},
		{p, "message.max.bytes", "2000", SourceStaticBroker},
		{p, "num.io.threads", "8", SourceDefault},
		{p, "listeners", "PLAINTEXT://:9095", SourceDynamicBroker},
	} {
		if v, src, _ := tc.b.Value(tc.name); v != tc.want || src != tc.src {
			t.Errorf("Value(%s) = %s from %v, want %s from %v", tc.name, v, src, tc.want, tc.src)
		}
	}
	if v, _, _ := b.Value("log.retention.bytes"); v != "100" {
		t.Error("WithDynamic modified its receiver")
	}
}

func TestDynamicUpdateRules(t *testing.T) {
	b := mustBroker(t, minimal())
	for _, tc := range []struct {
		perBroker bool
		m         map[string]string
		want      string
	}{
		{false, map[string]string{"log.retention.hours": "1", "num.partitions": "3"}, "Cannot update these configs dynamically: Set(log.retention.hours, num.partitions)"},
		{true, map[string]string{"node.id": "2"}, "Cannot update these configs dynamically: Set(node.id)"},
		{false, map[string]string{"listeners": "PLAINTEXT://:9093"}, "Cannot update these configs at default cluster level, broker id must be specified: Set(listeners)"},
		{true, map[string]string{"ssl.keystore.location": "/k"}, "only per-listener using the listener prefix: Set(ssl.keystore.location)"},
		{false, map[string]string{"log.segment.bytes": "12"}, "Value must be at least 1048576"},
		{false, map[string]string{"log.cleaner.min.compaction.lag.ms": "9", "log.cleaner.max.compaction.lag.ms": "8"}, "conflict topic config setting"},
	} {
		var err error
		if tc.perBroker {
			_, err = b.WithDynamicPerBroker(tc.m)
		} else {
			_, err = b.WithDynamic(tc.m)
		}
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.m, err, tc.want)
		}
	}
	if _, err := b.WithDynamic(map[string]string{"some.plugin.setting": "x"}); err != nil {
		t.Errorf("unknown dynamic names are kept, not refused: %v", err)
	}
}

func TestSecurityProtocolMapDefaultsControllerToPlaintext(t *testing.T) {
	b := mustBroker(t, minimal("listeners", "PLAINTEXT://:9092,CONTROLLER://:9093"))
	if got := b.SecurityProtocolMap()["CONTROLLER"]; got != "PLAINTEXT" {
		t.Errorf("CONTROLLER → %q", got)
	}
	_, err := NewBroker(minimal("listeners", "PLAINTEXT://:9092,CONTROLLER://:9093", "listener.security.protocol.map", "PLAINTEXT:PLAINTEXT"))
	if err == nil || !strings.Contains(err.Error(), "No security protocol defined for listener CONTROLLER") {
		t.Errorf("explicit map without CONTROLLER: %v", err)
	}
}

func TestParseEndpoint(t *testing.T) {
	for in, want := range map[string]Endpoint{
		"PLAINTEXT://:9092":         {"PLAINTEXT", "", 9092},
		"ssl://broker-1.local:9093": {"SSL", "broker-1.local", 9093},
		"CLIENT://[::1]:9094":       {"CLIENT", "::1", 9094},
		"EXTERNAL://10.0.0.1:0":     {"EXTERNAL", "10.0.0.1", 0},
	} {
		got, err := ParseEndpoint(in)
		if err != nil || got != want {
			t.Errorf("ParseEndpoint(%q) = %+v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "PLAINTEXT:9092", "://:9092", "PLAINTEXT://:port", "PLAINTEXT://:70000"} {
		if _, err := ParseEndpoint(bad); err == nil {
			t.Errorf("ParseEndpoint(%q) should fail", bad)
		}
	}
}
