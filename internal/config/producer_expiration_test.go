package config

import "testing"

// producer.id.expiration.check.interval.ms is Kafka's internal INT config
// (default 600000, at least 1, read-only): accepted when set, validated, and
// left out of DescribeConfigs. producer.id.expiration.ms, the age it checks
// for, is dynamic.
func TestProducerIDExpirationConfigs(t *testing.T) {
	const name = "producer.id.expiration.check.interval.ms"
	d, ok := BrokerDef(name)
	if !ok {
		t.Fatalf("%s missing", name)
	}
	if d.Type != Int || d.Default == nil || *d.Default != "600000" || !d.Internal || !d.ReadOnly {
		t.Fatalf("%s: %+v", name, d)
	}
	if got := mustBroker(t, minimal()).Long(name); got != 600000 {
		t.Fatalf("default %s = %d", name, got)
	}
	if got := mustBroker(t, minimal(name, "1000")).Long(name); got != 1000 {
		t.Fatalf("%s set to 1000 reads %d", name, got)
	}
	if _, err := NewBroker(minimal(name, "0")); err == nil {
		t.Fatalf("%s=0 accepted", name)
	}
	for _, e := range DescribeBroker(mustBroker(t, minimal())) {
		if e.Name == name {
			t.Fatalf("internal %s described: %+v", name, e)
		}
	}
	if d, _ := BrokerDef("producer.id.expiration.ms"); d.ReadOnly || *d.Default != "86400000" {
		t.Fatalf("producer.id.expiration.ms: %+v", d)
	}
}
