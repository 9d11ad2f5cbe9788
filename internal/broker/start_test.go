package broker_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/gregor-broker/gregor/internal/broker"
	"github.com/gregor-broker/gregor/internal/broker/brokertest"
)

// startErr builds and starts a broker on dir with overrides and returns
// the error New or Start gave (nil if it started; it is then stopped).
func startErr(t *testing.T, dir string, overrides map[string]string) error {
	t.Helper()
	props := brokertest.Props(dir)
	for k, v := range overrides {
		props[k] = v
	}
	b, err := broker.New(broker.Options{Static: props, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	err = b.Start()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = b.Shutdown(ctx)
	return err
}

// A broker config that could never create or write an internal topic stops
// the start with a message naming the settings, instead of a broker that
// answers every group request COORDINATOR_NOT_AVAILABLE for ever.
func TestStartRefusesInternalTopicConfigsThatCanNeverWork(t *testing.T) {
	for _, tc := range []struct {
		set  map[string]string
		want []string
	}{
		{map[string]string{"offsets.topic.segment.bytes": "1000"},
			[]string{"__consumer_offsets", "offsets.topic.segment.bytes=1000", "Value must be at least 1048576", "no consumer group"}},
		{map[string]string{"offsets.topic.replication.factor": "3"},
			[]string{"__consumer_offsets", "offsets.topic.replication.factor=3", "cannot be reached"}},
		{map[string]string{"transaction.state.log.segment.bytes": "4096"},
			[]string{"__transaction_state", "transaction.state.log.segment.bytes=4096", "Value must be at least 1048576"}},
		{map[string]string{"transaction.state.log.replication.factor": "3", "transaction.state.log.min.isr": "2"},
			[]string{"__transaction_state", "transaction.state.log.replication.factor=3", "cannot be reached"}},
	} {
		err := startErr(t, t.TempDir(), tc.set)
		if err == nil {
			t.Errorf("%v: broker started", tc.set)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not mention %q", tc.set, err, w)
			}
		}
	}
}

// An internal topic that exists keeps the configs it was created with (as
// in Kafka): changing offsets.topic.segment.bytes afterwards, even to a value
// the topic would refuse, no longer concerns it.
func TestStartWithExistingOffsetsTopicIgnoresItsDerivedConfigs(t *testing.T) {
	dir := t.TempDir()
	b := brokertest.StartIn(t, dir, nil)
	if err := b.Groups().EnsureTopic(context.Background()); err != nil {
		t.Fatal(err)
	}
	b.Stop()
	if err := startErr(t, dir, map[string]string{"offsets.topic.segment.bytes": "1000"}); err != nil {
		t.Fatalf("restart with an existing __consumer_offsets: %v", err)
	}
}

// min.insync.replicas above an internal topic's replication factor counts
// as the replication factor (Kafka's effectiveMinIsr), so the broker starts
// and the topic takes acks=all writes.
func TestStartWithMinISRAboveInternalReplicationFactor(t *testing.T) {
	if err := startErr(t, t.TempDir(), map[string]string{"min.insync.replicas": "2", "transaction.state.log.min.isr": "2"}); err != nil {
		t.Fatalf("start: %v", err)
	}
}
