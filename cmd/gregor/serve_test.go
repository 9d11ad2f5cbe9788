package main

import (
	"os"
	"path/filepath"
	"testing"
)

// The internal topics' replication follows the quorum's size unless the
// operator names it: one node gets Kafka's sample single-node values, three
// nodes Kafka's defaults (before, three nodes got one replica each, and a
// transaction coordinator died with its node until it came back).
func TestServeInternalReplication(t *testing.T) {
	props := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(props, []byte("offsets.topic.replication.factor=2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const three = "1@127.0.0.1:9093,2@127.0.0.1:9094,3@127.0.0.1:9095"
	for _, c := range []struct {
		name                  string
		f                     configFlags
		offsetsRF, txnRF, isr string
	}{
		{"one node", configFlags{}, "1", "1", "1"},
		{"one voter", configFlags{voters: "1@127.0.0.1:9093"}, "1", "1", "1"},
		{"two voters", configFlags{voters: "1@127.0.0.1:9093,2@127.0.0.1:9094"}, "2", "2", "1"},
		{"three voters", configFlags{voters: three}, "3", "3", "2"},
		{"five voters in --set", configFlags{sets: []string{"controller.quorum.voters=" + three + ",4@127.0.0.1:9096,5@127.0.0.1:9097"}}, "3", "3", "2"},
		{"--set wins", configFlags{voters: three, sets: []string{"transaction.state.log.replication.factor=1",
			"transaction.state.log.min.isr=1"}}, "3", "1", "1"},
		{"--config wins", configFlags{voters: three, configFile: props}, "2", "3", "2"},
	} {
		p, err := c.f.props()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := [3]string{p["offsets.topic.replication.factor"], p["transaction.state.log.replication.factor"], p["transaction.state.log.min.isr"]}
		if want := [3]string{c.offsetsRF, c.txnRF, c.isr}; got != want {
			t.Errorf("%s: offsets RF, transaction state RF, min ISR %v, want %v", c.name, got, want)
		}
	}
}
