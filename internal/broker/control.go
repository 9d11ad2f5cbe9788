package broker

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/admin"
	"github.com/gregor-broker/gregor/internal/api"
	"github.com/gregor-broker/gregor/internal/cluster"
	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/kclient"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/server"
)

// openNode opens the metadata log and serves the CONTROLLER listener: raft
// connections go to the quorum's transport, every other connection to the
// controller's Kafka RPCs. Its security (secureNode) covers both ways:
// connections this node accepts and the ones it dials.
func (b *Broker) openNode(cfg *config.Broker) error {
	l := b.layout
	ln, err := net.Listen("tcp", l.ControllerBind)
	if err != nil {
		return fmt.Errorf("%s listener: %w", l.ControllerListener, err)
	}
	b.ctrlLn = ln
	nodeLn, dial, err := b.secureNode(cfg, ln)
	if err != nil {
		ln.Close()
		return err
	}
	if _, port, _ := net.SplitHostPort(l.Voters[l.NodeID]); port == "0" {
		// A one-node cluster on a free port: its own address book entry
		// (which only this node's controller client reads) is the port.
		l.Voters[l.NodeID] = ln.Addr().String()
	}
	b.node, err = cluster.OpenNode(cluster.NodeConfig{FS: b.o.FS, MetadataLogDir: b.dirs.MetadataDir, Layout: l,
		ClusterID: b.dirs.ClusterID, Broker: b.static, Clock: b.o.Clock, Logger: b.logger,
		LocalIncarnation: b.incarnation, Dial: dial(b.o.DialRaft), OnElection: b.onElection})
	if err != nil {
		ln.Close()
		return err
	}
	handler := api.NewControllerHandler(api.ControllerDeps{NodeID: l.NodeID, Controller: b.node.Shell(), Image: b.node.Image,
		Quorum: b.node.Raft().Status, Voters: l.Voters, ControllerListener: l.ControllerListener, Config: b.Config,
		Logger: b.logger.With("listener", l.ControllerListener)})
	b.ctrlSrv = server.New(server.Config{Listener: l.ControllerListener, SocketRequestMaxBytes: cfg.Int("socket.request.max.bytes"),
		Logger: b.logger}, handler)
	b.node.Serve(nodeLn, b.ctrlSrv.ServeConn)
	// Controller RPCs go to the CONTROLLER listener with its security, as
	// Kafka's brokers reach the controllers on controller.listener.names;
	// broker-to-broker requests use the inter-broker pool (interBrokerPool).
	b.ctrlPool = kclient.NewPool(kclient.Config{ClientID: fmt.Sprintf("gregor-broker-%d", l.NodeID), Dial: dial(nil)})
	b.ctrl = api.ControllerClient{RPC: api.NewControllerRouter(api.RouterConfig{NodeID: l.NodeID, Leader: b.node.Leader,
		Addr: b.node.ControllerAddr, Local: handler, OverTCP: b.o.ControllerOverTCP, Pool: b.ctrlPool, Clock: b.o.Clock,
		Logger: b.logger})}
	return nil
}

// startLifecycle registers this broker with the active controller and
// heartbeats from then on (in the background). The previous broker epoch
// comes from the epoch file (see cluster.EpochFile); with
// gregor.ack.fsync=true each new epoch is written there at once.
func (b *Broker) startLifecycle(cfg *config.Broker) error {
	prev, reason, err := cluster.ReadEpoch(b.o.FS, b.dirs.MetadataDir)
	if err != nil {
		b.logger.Warn("ignoring an unreadable broker epoch file: this start counts as an unclean restart", "err", err)
		prev = -1
	}
	l := b.layout
	// Every client listener is registered, so each broker can describe the
	// others on the listener a request came in on.
	var eps []metadata.Endpoint
	for _, cl := range l.Clients {
		eps = append(eps, metadata.Endpoint{Name: cl.Advertised.Listener, Host: cl.Advertised.Host, Port: int32(cl.Advertised.Port),
			SecurityProtocol: cluster.SecurityProtocolID(cl.Protocol)})
	}
	adv := eps[0]
	reg := controller.BrokerRegistrationRequest{BrokerID: l.NodeID, ClusterID: b.dirs.ClusterID, IncarnationID: b.incarnation,
		Listeners: eps, Rack: cfg.String("broker.rack"), LogDirs: b.logDirIDs(), PreviousBrokerEpoch: prev}
	ackFsync := cfg.Bool("gregor.ack.fsync")
	ms := func(name string) time.Duration { return time.Duration(cfg.Long(name)) * time.Millisecond }
	b.life = cluster.NewLifecycle(cluster.LifecycleConfig{
		Registration: reg, Controller: b.ctrl,
		MetadataOffset:    func() int64 { return int64(b.node.Applied()) },
		HeartbeatInterval: ms("broker.heartbeat.interval.ms"), SessionTimeout: ms("broker.session.timeout.ms"),
		OnRegistered: func(epoch int64) error {
			b.adm.SetCondition("broker registration", admin.NotReady, fmt.Sprintf("registered with broker epoch %d; fenced until caught up", epoch))
			if !ackFsync {
				return nil
			}
			return cluster.WriteEpoch(b.o.FS, b.dirs.MetadataDir, epoch, cluster.EpochAckFsync)
		},
		Clock: b.o.Clock, Logger: b.logger,
	})
	b.logger.Info("starting", "node_id", l.NodeID, "cluster_id", b.dirs.ClusterID, "voters", l.VoterIDs(),
		"controller_listener", b.ctrlLn.Addr().String(), "client_listener", b.Addr().String(),
		"advertised", fmt.Sprintf("%s:%d", adv.Host, adv.Port), "previous_broker_epoch", prev, "epoch_file", reason)
	b.life.Start()
	return nil
}

// published is the metadata as this broker acts on it (api.Metadata).
type published struct{ b *Broker }

func (p published) Image() *metadata.Image {
	if im := p.b.node.Published(); im != nil {
		return im
	}
	return metadata.Empty()
}

func (p published) WaitPublished(ctx context.Context, index uint64) error {
	return p.b.node.WaitPublished(ctx, index)
}

// createTopic creates a topic through the controller and returns once this
// broker has published it (group.Topics).
func (b *Broker) createTopic(ctx context.Context, name string, partitions int32, rf int16, configs map[string]string) error {
	index, err := b.ctrl.CreateTopic(ctx, name, partitions, rf, configs)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return err
	}
	if werr := b.node.WaitPublished(ctx, index); werr != nil {
		return werr
	}
	return err
}

// groupTopics is what the group coordinator needs from the cluster.
type groupTopics struct{ b *Broker }

func (g groupTopics) Image() *metadata.Image { return published(g).Image() }

func (g groupTopics) CreateTopic(ctx context.Context, name string, partitions int32, rf int16, configs map[string]string) error {
	return g.b.createTopic(ctx, name, partitions, rf, configs)
}

// ensureTopic creates a topic with broker defaults (auto-creation).
func (b *Broker) ensureTopic(ctx context.Context, name string) error {
	return b.createTopic(ctx, name, -1, -1, nil)
}

// producerIDBlockWait bounds how long an InitProducerId waits for the
// controller to hand out a block of producer ids: without an active
// controller it is answered REQUEST_TIMED_OUT (retriable) instead of being
// held until the client gives up, which would also hold a shutdown up.
const producerIDBlockWait = 2 * time.Second

// nextProducerID hands out producer ids from blocks the controller
// allocates to this broker (AllocateProducerIds), so no id is handed out
// twice in the cluster.
func (b *Broker) nextProducerID(ctx context.Context) (int64, error) {
	b.pidMu.Lock()
	defer b.pidMu.Unlock()
	if b.pidNext >= b.pidEnd {
		ctx, cancel := context.WithTimeout(ctx, producerIDBlockWait)
		defer cancel()
		start, n, err := b.ctrl.AllocateProducerIDs(ctx, b.layout.NodeID, b.life.Epoch())
		if err != nil {
			return -1, err
		}
		b.pidNext, b.pidEnd = start, start+int64(n)
	}
	id := b.pidNext
	b.pidNext++
	return id, nil
}

// CreateTopic creates a topic with the given partitions (-1: default),
// replication factor 1 and configs through the controller, and returns
// once this broker has published it (tests, tools).
func (b *Broker) CreateTopic(ctx context.Context, name string, partitions int32, configs map[string]string) error {
	return b.createTopic(ctx, name, partitions, -1, configs)
}

// parseUUID reads a Kafka Uuid (base64url, no padding).
func parseUUID(s string) ([16]byte, error) {
	var id [16]byte
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil && len(b) != 16 {
		err = fmt.Errorf("uuid %q has %d bytes", s, len(b))
	}
	copy(id[:], b)
	return id, err
}

// formatUUID writes a Kafka Uuid (base64url, no padding).
func formatUUID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// writeCleanEpoch records the broker epoch after a clean shutdown.
func writeCleanEpoch(b *Broker, epoch int64) error {
	return cluster.WriteEpoch(b.o.FS, b.dirs.MetadataDir, epoch, cluster.EpochCleanShutdown)
}

// Metadata is the metadata image this broker has published (the one its
// partitions, coordinators and answers follow).
func (b *Broker) Metadata() *metadata.Image { return published{b}.Image() }

// onElection counts an unclean or last-known-leader election (the
// controller has logged it as a possible loss of acknowledged records).
func (b *Broker) onElection(e controller.Election) {
	if e.LastKnownLeader {
		b.lastKnownElections.Add(1)
	} else {
		b.uncleanElections.Add(1)
	}
}
