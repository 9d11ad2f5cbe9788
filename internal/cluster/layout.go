package cluster

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/gregor-broker/gregor/internal/config"
)

// Layout is where a node sits in its cluster, read from Kafka's KRaft
// configs: its id, the voters of the metadata quorum with their CONTROLLER
// listeners, the CONTROLLER listener it binds, and the client listener it
// serves and advertises.
type Layout struct {
	NodeID int32
	// Voters maps every voter's node id to its CONTROLLER listener
	// (host:port), as controller.quorum.voters lists them. Without that
	// config the node is its own single voter, at ControllerBind.
	Voters map[int32]string
	// ExplicitVoters: controller.quorum.voters was set. A new cluster's id
	// is then derived from the voters (see DeriveClusterID); otherwise it
	// is random.
	ExplicitVoters bool
	// ControllerListener is the CONTROLLER listener's name (the first of
	// controller.listener.names).
	ControllerListener string
	// ControllerBind is what the CONTROLLER listener binds: its entry in
	// listeners, else this node's address in controller.quorum.voters,
	// else a free loopback port (127.0.0.1:0) for a one-node cluster
	// nobody else needs to reach.
	ControllerBind string
	// Client is the client listener as bound (the first listener that is
	// not a controller listener) and Advertised what brokers register and
	// clients are told for it.
	Client, Advertised config.Endpoint
	// InterBroker is inter.broker.listener.name (the client listener when
	// unset): the listener brokers use to reach each other.
	InterBroker string
}

// ParseLayout reads a node's place in the cluster from its configuration.
// Gregor runs combined nodes only (process.roles=broker,controller) with a
// static quorum (controller.quorum.voters); anything else is refused with
// what to change.
func ParseLayout(b *config.Broker) (*Layout, error) {
	roles := b.List("process.roles")
	if !slices.Contains(roles, "broker") || !slices.Contains(roles, "controller") {
		return nil, fmt.Errorf("process.roles=%s: Gregor runs combined nodes only, each a broker and a metadata "+
			"voter (process.roles=broker,controller); dedicated brokers and controllers are not supported yet",
			strings.Join(roles, ","))
	}
	l := &Layout{NodeID: b.NodeID()}
	names := b.List("controller.listener.names")
	if len(names) == 0 {
		return nil, fmt.Errorf("controller.listener.names is empty: name the CONTROLLER listener")
	}
	l.ControllerListener = strings.ToUpper(names[0])
	voters, err := ParseVoters(b.List("controller.quorum.voters"))
	if err != nil {
		return nil, err
	}
	if len(voters) > 0 {
		if _, ok := voters[l.NodeID]; !ok {
			return nil, fmt.Errorf("node.id %d is not among controller.quorum.voters (%s): every Gregor node is a voter",
				l.NodeID, strings.Join(b.List("controller.quorum.voters"), ","))
		}
		l.Voters, l.ExplicitVoters = voters, true
	} else if bs := b.List("controller.quorum.bootstrap.servers"); len(bs) > 1 {
		return nil, fmt.Errorf("controller.quorum.bootstrap.servers=%s without controller.quorum.voters: dynamic quorums "+
			"(KIP-853) are not supported; list every voter in controller.quorum.voters as id@host:port", strings.Join(bs, ","))
	}
	if err := l.listeners(b, names); err != nil {
		return nil, err
	}
	if !l.ExplicitVoters {
		l.Voters = map[int32]string{l.NodeID: l.ControllerBind}
	}
	return l, nil
}

// listeners splits listeners into the CONTROLLER one and the client one.
func (l *Layout) listeners(b *config.Broker, ctrlNames []string) error {
	isCtrl := map[string]bool{}
	for _, n := range ctrlNames {
		isCtrl[strings.ToUpper(n)] = true
	}
	eps, err := config.ParseEndpoints(b.List("listeners"))
	if err != nil {
		return err
	}
	var client *config.Endpoint
	for i, ep := range eps {
		switch {
		case ep.Listener == l.ControllerListener:
			l.ControllerBind = net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port))
		case isCtrl[ep.Listener]:
		case client == nil:
			client = &eps[i]
		}
	}
	if client == nil {
		return fmt.Errorf("listeners %v has no client listener outside controller.listener.names", b.List("listeners"))
	}
	if proto := b.SecurityProtocolMap()[client.Listener]; proto != "" && proto != "PLAINTEXT" {
		return fmt.Errorf("listener %s uses security protocol %s; Gregor serves only PLAINTEXT so far (TLS and SASL are not implemented)",
			client.Listener, proto)
	}
	l.Client, l.Advertised = *client, *client
	if advs, err := config.ParseEndpoints(b.List("advertised.listeners")); err == nil {
		for _, ep := range advs {
			if ep.Listener == client.Listener {
				l.Advertised = ep
			}
		}
	}
	if h := l.Advertised.Host; h == "" || h == "0.0.0.0" || h == "::" {
		l.Advertised.Host = "127.0.0.1"
	}
	if err := l.controllerBind(); err != nil {
		return err
	}
	l.InterBroker = client.Listener
	if n := b.String("inter.broker.listener.name"); n != "" {
		if strings.ToUpper(n) != client.Listener {
			return fmt.Errorf("inter.broker.listener.name=%s: Gregor serves one client listener (%s), which brokers use too",
				n, client.Listener)
		}
	}
	return nil
}

// controllerBind settles the CONTROLLER listener's address against the
// voter list: a listener entry must use the port the voters give this node
// (other voters dial that), and without one the voter address is bound.
func (l *Layout) controllerBind() error {
	self, isVoter := l.Voters[l.NodeID]
	switch {
	case l.ControllerBind == "" && isVoter:
		l.ControllerBind = self
	case l.ControllerBind == "":
		l.ControllerBind = "127.0.0.1:0"
	case isVoter:
		_, bindPort, _ := net.SplitHostPort(l.ControllerBind)
		_, voterPort, _ := net.SplitHostPort(self)
		if bindPort != "0" && bindPort != voterPort {
			return fmt.Errorf("the %s listener binds %s but controller.quorum.voters gives node %d the address %s: "+
				"the other voters would dial the wrong port", l.ControllerListener, l.ControllerBind, l.NodeID, self)
		}
	}
	return nil
}

// ParseVoters parses controller.quorum.voters entries, id@host:port.
func ParseVoters(entries []string) (map[int32]string, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	out := make(map[int32]string, len(entries))
	for _, e := range entries {
		id, addr, ok := strings.Cut(strings.TrimSpace(e), "@")
		n, err := strconv.ParseInt(id, 10, 32)
		host, port, herr := net.SplitHostPort(addr)
		if !ok || err != nil || n < 0 || herr != nil || host == "" || port == "" {
			return nil, fmt.Errorf("controller.quorum.voters entry %q is not in the form {id}@{host}:{port}", e)
		}
		if _, dup := out[int32(n)]; dup {
			return nil, fmt.Errorf("controller.quorum.voters names node %d twice", n)
		}
		out[int32(n)] = addr
	}
	return out, nil
}

// VoterIDs returns the voters' node ids in order.
func (l *Layout) VoterIDs() []int32 {
	ids := make([]int32, 0, len(l.Voters))
	for id := range l.Voters {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
