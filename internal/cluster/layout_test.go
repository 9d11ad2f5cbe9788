package cluster

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gregor-broker/gregor/internal/config"
)

func layoutOf(t *testing.T, props map[string]string) (*Layout, error) {
	t.Helper()
	base := map[string]string{"node.id": "1", "process.roles": "broker,controller", "controller.listener.names": "CONTROLLER",
		"listeners": "PLAINTEXT://127.0.0.1:9092", "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"log.dirs": "/d"}
	for k, v := range props {
		if v == "" {
			delete(base, k)
		} else {
			base[k] = v
		}
	}
	b, err := config.NewBroker(base)
	if err != nil {
		t.Fatal(err)
	}
	return ParseLayout(b)
}

func TestLayout(t *testing.T) {
	// gregor serve's defaults: a one-node cluster, its own voter, on a
	// free loopback port.
	l, err := layoutOf(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.ExplicitVoters || l.ControllerBind != "127.0.0.1:0" || !cmp.Equal(l.Voters, map[int32]string{1: "127.0.0.1:0"}) ||
		l.Client.Listener != "PLAINTEXT" || l.Advertised.Host != "127.0.0.1" || l.Advertised.Port != 9092 || l.InterBroker != "PLAINTEXT" {
		t.Fatalf("default layout %+v", l)
	}
	// The three-node command line.
	l, err = layoutOf(t, map[string]string{"node.id": "2", "listeners": "PLAINTEXT://127.0.0.1:9192,CONTROLLER://127.0.0.1:9193",
		"advertised.listeners":     "PLAINTEXT://localhost:9192",
		"controller.quorum.voters": "1@127.0.0.1:9093,2@127.0.0.1:9193,3@127.0.0.1:9293"})
	if err != nil {
		t.Fatal(err)
	}
	if !l.ExplicitVoters || l.ControllerBind != "127.0.0.1:9193" || len(l.Voters) != 3 || l.Voters[3] != "127.0.0.1:9293" ||
		l.Advertised.Host != "localhost" || !cmp.Equal(l.VoterIDs(), []int32{1, 2, 3}) {
		t.Fatalf("three-node layout %+v", l)
	}
	// Without a CONTROLLER listener, the node binds its voter address.
	l, err = layoutOf(t, map[string]string{"controller.quorum.voters": "1@127.0.0.5:9093"})
	if err != nil || l.ControllerBind != "127.0.0.5:9093" {
		t.Fatalf("bind from voters: %+v, %v", l, err)
	}
	// Kafka 4's stock server.properties (a standalone dynamic quorum)
	// loads as a one-node cluster.
	l, err = layoutOf(t, map[string]string{"controller.quorum.bootstrap.servers": "localhost:9093",
		"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093"})
	if err != nil || l.ControllerBind != ":9093" || l.Advertised.Host != "127.0.0.1" {
		t.Fatalf("stock properties: %+v, %v", l, err)
	}
}

// TestLayoutClientListeners: every listener outside
// controller.listener.names is a client listener, with its own advertised
// address and security protocol; inter.broker.listener.name may name any.
func TestLayoutClientListeners(t *testing.T) {
	l, err := layoutOf(t, map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:9092,SECURE://0.0.0.0:9094,CONTROLLER://127.0.0.1:9093",
		"advertised.listeners":           "SECURE://kafka.example:9094",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SECURE:SASL_SSL,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name":     "SECURE"})
	if err != nil {
		t.Fatal(err)
	}
	want := []ClientListener{
		{Bind: config.Endpoint{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}, Advertised: config.Endpoint{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}, Protocol: "PLAINTEXT"},
		{Bind: config.Endpoint{Listener: "SECURE", Host: "0.0.0.0", Port: 9094}, Advertised: config.Endpoint{Listener: "SECURE", Host: "kafka.example", Port: 9094}, Protocol: "SASL_SSL"},
	}
	if diff := cmp.Diff(want, l.Clients); diff != "" {
		t.Fatalf("client listeners (-want +got):\n%s", diff)
	}
	if l.Client != want[0].Bind || l.InterBroker != "SECURE" || l.InterBrokerProtocol != "SASL_SSL" || l.ControllerProtocol != "PLAINTEXT" {
		t.Fatalf("layout %+v", l)
	}
	l, err = layoutOf(t, map[string]string{"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL"})
	if err != nil || l.ControllerProtocol != "SSL" {
		t.Fatalf("SSL CONTROLLER listener: %+v, %v", l, err)
	}
	// Without inter.broker.listener.name, Kafka's rule: the listener named
	// as security.inter.broker.protocol (default PLAINTEXT); Gregor falls
	// back to the first client listener only when neither is set.
	for _, tc := range []struct {
		props     map[string]string
		want, pro string
	}{
		{map[string]string{"listeners": "SASL_SSL://:9094,PLAINTEXT://:9092,CONTROLLER://:9093"}, "PLAINTEXT", "PLAINTEXT"},
		{map[string]string{"listeners": "PLAINTEXT://:9092,SASL_SSL://:9094,CONTROLLER://:9093",
			"security.inter.broker.protocol": "SASL_SSL"}, "SASL_SSL", "SASL_SSL"},
		{map[string]string{"listeners": "SSL://:9094,CONTROLLER://:9093"}, "SSL", "SSL"},
	} {
		tc.props["listener.security.protocol.map"] = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT"
		l, err := layoutOf(t, tc.props)
		if err != nil || l.InterBroker != tc.want || l.InterBrokerProtocol != tc.pro {
			t.Errorf("%v: inter-broker %+v, %v; want %s", tc.props, l, err, tc.want)
		}
	}
	for name, id := range map[string]int16{"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3, "GSSAPI": -1} {
		if got := SecurityProtocolID(name); got != id {
			t.Errorf("SecurityProtocolID(%s) = %d, want %d", name, got, id)
		}
	}
}

func TestLayoutRefusals(t *testing.T) {
	for _, tc := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{"process.roles": "broker"}, "combined nodes only"},
		{map[string]string{"process.roles": "controller"}, "combined nodes only"},
		{map[string]string{"controller.quorum.voters": "2@h:1,3@h:2"}, "node.id 1 is not among controller.quorum.voters"},
		{map[string]string{"controller.quorum.bootstrap.servers": "a:1,b:2"}, "dynamic quorums"},
		{map[string]string{"controller.quorum.voters": "1@127.0.0.1:9093", "listeners": "PLAINTEXT://:9092,CONTROLLER://:9999"},
			"would dial the wrong port"},
		{map[string]string{"listeners": "CONTROLLER://:9093"}, "no client listener"},
		{map[string]string{"inter.broker.listener.name": "CONTROLLER", "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093"}, "not one of the client listeners"},
		{map[string]string{"security.inter.broker.protocol": "SSL", "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093"}, "names no client listener"},
		{map[string]string{"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
			"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_SSL"}, "SASL between nodes is not built"},
	} {
		if _, err := layoutOf(t, tc.props); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.props, err, tc.want)
		}
	}
	if _, err := ParseVoters([]string{"1@h:1", "1@h:2"}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("duplicate voter: %v", err)
	}
	if _, err := ParseVoters([]string{"x@h:1"}); err == nil {
		t.Error("bad voter accepted")
	}
}
