package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchMetricSlots checks Fetch is counted as Kafka's RequestMetrics
// name it: FetchConsumer for a consumer, FetchFollower for a replica (by
// replica id before v15, by the ReplicaState tag from v15).
func TestFetchMetricSlots(t *testing.T) {
	consumer := kmsg.NewPtrFetchRequest()
	old := kmsg.NewPtrFetchRequest()
	old.ReplicaID = 2
	tagged := kmsg.NewPtrFetchRequest()
	tagged.ReplicaState.ID = 3
	for _, tc := range []struct {
		key  int16
		body kmsg.Request
		want string
	}{
		{kmsg.Fetch.Int16(), consumer, "FetchConsumer"},
		{kmsg.Fetch.Int16(), old, "FetchFollower"},
		{kmsg.Fetch.Int16(), tagged, "FetchFollower"},
		{kmsg.Produce.Int16(), kmsg.NewPtrProduceRequest(), "Produce"},
		{kmsg.Metadata.Int16(), kmsg.NewPtrMetadataRequest(), "Metadata"},
	} {
		slot := metricSlot(tc.key, tc.body)
		if got := slotName(slot); got != tc.want {
			t.Errorf("%s request with %+v: counted as %q, want %q", kmsg.NameForKey(tc.key), tc.body, got, tc.want)
		}
		if slotKey(slot) != tc.key {
			t.Errorf("slot %d maps back to key %d, want %d", slot, slotKey(slot), tc.key)
		}
	}
}
