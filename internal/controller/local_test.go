package controller

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/metadata"
)

// A node restarted after a crash registers its own broker with the
// controller it runs itself: the earlier incarnation's session still looks
// valid, but it shared the log dir this process now holds, so the new one
// replaces it at once. Another incarnation, or the same one on other dirs,
// still waits for the session to expire.
func TestLocalIncarnationReplacesItsPredecessor(t *testing.T) {
	c := newCluster(t, clusterOpts{nodes: 1, elr: true})
	var replies []Reply
	c.onReply = func(_ int32, r Reply, _ Request) { replies = append(replies, r) }
	register := func(inc byte, dir byte) Reply {
		t.Helper()
		replies = nil
		c.submit(1, &BrokerRegistrationRequest{BrokerID: 1, ClusterID: "test-cluster", IncarnationID: [16]byte{inc},
			Listeners: []metadata.Endpoint{{Name: "PLAINTEXT", Host: "h", Port: 9092}}, LogDirs: [][16]byte{{15: 100 + dir, 0: 1}},
			PreviousBrokerEpoch: -1})
		if len(replies) != 1 {
			t.Fatalf("%d replies", len(replies))
		}
		return replies[0]
	}
	c.elect(1, 2, true)
	first := register(1, 1)
	if first.Err != nil {
		t.Fatal(first.Err)
	}
	epoch := first.Value.(*BrokerRegistrationResponse).BrokerEpoch
	replies = nil
	c.submit(1, &BrokerHeartbeatRequest{BrokerID: 1, BrokerEpoch: epoch, CurrentMetadataOffset: int64(c.im.Index)})
	if c.im.Brokers[1].Fenced {
		t.Fatal("broker 1 not unfenced")
	}

	// The process dies; a new one starts the controller again with its new
	// broker's incarnation.
	b, err := config.NewBroker(map[string]string{"node.id": "1", "process.roles": "broker,controller", "controller.listener.names": "CONTROLLER"})
	if err != nil {
		t.Fatal(err)
	}
	c.nodes[1] = New(Config{NodeID: 1, Broker: b, LocalIncarnation: [16]byte{2}, Logger: discardLogger()}, c.im)
	c.elect(1, 3, true)
	if r := register(3, 1); !errors.Is(r.Err, kerr.DuplicateBrokerRegistration) {
		t.Fatalf("another incarnation while the old session is valid: %v", r.Err)
	}
	if r := register(2, 2); !errors.Is(r.Err, kerr.DuplicateBrokerRegistration) {
		t.Fatalf("the local incarnation on another dir: %v", r.Err)
	}
	r := register(2, 1)
	if r.Err != nil {
		t.Fatalf("the local incarnation on its predecessor's dir: %v", r.Err)
	}
	if got := r.Value.(*BrokerRegistrationResponse).BrokerEpoch; got <= epoch || c.im.Brokers[1].Incarnation != [16]byte{2} {
		t.Fatalf("new epoch %d (old %d), incarnation %v", got, epoch, c.im.Brokers[1].Incarnation)
	}
}
