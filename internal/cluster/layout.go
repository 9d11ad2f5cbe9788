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
// listeners, the CONTROLLER listener it binds, and the client listeners it
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
	// controller.listener.names) and ControllerProtocol its security
	// protocol: PLAINTEXT or SSL.
	ControllerListener, ControllerProtocol string
	// ControllerBind is what the CONTROLLER listener binds: its entry in
	// listeners, else this node's address in controller.quorum.voters,
	// else a free loopback port (127.0.0.1:0) for a one-node cluster
	// nobody else needs to reach.
	ControllerBind string
	// Clients are the client listeners (every listener that is not a
	// controller listener), in listeners order; Client and Advertised are
	// the first one's.
	Clients []ClientListener
	// Client is the first client listener as bound and Advertised what
	// brokers register and clients are told for it.
	Client, Advertised config.Endpoint
	// InterBroker is the listener brokers use to reach each other
	// (inter.broker.listener.name, else the one named as
	// security.inter.broker.protocol, else the first client listener) and
	// InterBrokerProtocol its security protocol.
	InterBroker, InterBrokerProtocol string
}

// ClientListener is one client listener: what it binds, what it
// advertises, and its security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT or
// SASL_SSL, from listener.security.protocol.map).
type ClientListener struct {
	Bind, Advertised config.Endpoint
	Protocol         string
}

// SecurityProtocolID is Kafka's id of a security protocol, as broker
// registrations carry it (-1 for an unknown name).
func SecurityProtocolID(name string) int16 {
	switch name {
	case "PLAINTEXT":
		return 0
	case "SSL":
		return 1
	case "SASL_PLAINTEXT":
		return 2
	case "SASL_SSL":
		return 3
	}
	return -1
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

// listeners splits listeners into the CONTROLLER one and the client ones.
func (l *Layout) listeners(b *config.Broker, ctrlNames []string) error {
	isCtrl := map[string]bool{}
	for _, n := range ctrlNames {
		isCtrl[strings.ToUpper(n)] = true
	}
	eps, err := config.ParseEndpoints(b.List("listeners"))
	if err != nil {
		return err
	}
	protos := b.SecurityProtocolMap()
	advs, _ := config.ParseEndpoints(b.List("advertised.listeners"))
	for _, ep := range eps {
		switch {
		case ep.Listener == l.ControllerListener:
			l.ControllerBind = net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port))
		case isCtrl[ep.Listener]:
		default:
			cl := ClientListener{Bind: ep, Advertised: ep, Protocol: protos[ep.Listener]}
			for _, a := range advs {
				if a.Listener == ep.Listener {
					cl.Advertised = a
				}
			}
			if h := cl.Advertised.Host; h == "" || h == "0.0.0.0" || h == "::" {
				cl.Advertised.Host = "127.0.0.1"
			}
			l.Clients = append(l.Clients, cl)
		}
	}
	if len(l.Clients) == 0 {
		return fmt.Errorf("listeners %v has no client listener outside controller.listener.names", b.List("listeners"))
	}
	switch l.ControllerProtocol = protos[l.ControllerListener]; l.ControllerProtocol {
	case "":
		l.ControllerProtocol = "PLAINTEXT"
	case "PLAINTEXT", "SSL":
	default:
		return fmt.Errorf("the %s listener uses security protocol %s; Gregor's nodes talk to each other over PLAINTEXT or SSL "+
			"(SASL between nodes is not built): map %s to SSL, with the nodes' certificates, or to PLAINTEXT on a network "+
			"only the nodes reach", l.ControllerListener, l.ControllerProtocol, l.ControllerListener)
	}
	l.Client, l.Advertised = l.Clients[0].Bind, l.Clients[0].Advertised
	if err := l.controllerBind(); err != nil {
		return err
	}
	return l.interBroker(b)
}

// interBroker picks the listener brokers dial each other on, by Kafka's
// rule: inter.broker.listener.name, else the listener named as
// security.inter.broker.protocol (default PLAINTEXT). Where Kafka would
// refuse to start because neither is set and no listener is named
// PLAINTEXT, Gregor takes the first client listener (a one-node broker on
// an SSL listener only needs no configuration for a peer it never dials).
func (l *Layout) interBroker(b *config.Broker) error {
	pick := func(name string) bool {
		i := slices.IndexFunc(l.Clients, func(c ClientListener) bool { return c.Bind.Listener == strings.ToUpper(name) })
		if i >= 0 {
			l.InterBroker, l.InterBrokerProtocol = l.Clients[i].Bind.Listener, l.Clients[i].Protocol
		}
		return i >= 0
	}
	if n := b.String("inter.broker.listener.name"); n != "" {
		if !pick(n) {
			return fmt.Errorf("inter.broker.listener.name=%s is not one of the client listeners", n)
		}
		return nil
	}
	p, src, _ := b.Value("security.inter.broker.protocol")
	if pick(p) {
		return nil
	}
	if src != config.SourceDefault {
		return fmt.Errorf("security.inter.broker.protocol=%s names no client listener: the inter-broker listener is the one named %s; "+
			"set inter.broker.listener.name to the listener brokers should reach each other on", p, strings.ToUpper(p))
	}
	pick(l.Clients[0].Bind.Listener)
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
