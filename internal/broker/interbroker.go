package broker

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"

	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/kclient"
)

// interBrokerPool is the pool brokers reach each other with (follower
// fetches; transaction markers and AddPartitionsToTxn verification through
// api.Deps.Peers): on the inter-broker
// listener (cluster.Layout.InterBroker) as each peer advertises it, with
// that listener's security as a client. On SSL and SASL_SSL this broker's
// key store for the listener is its client certificate and the listener's
// trust store verifies the peer (auth.Listener.ClientTLS, with
// ssl.endpoint.identification.algorithm); on SASL_PLAINTEXT and SASL_SSL
// it authenticates with sasl.mechanism.inter.broker.protocol and its own
// credentials (auth.Listener.ClientMechanism). The requests it sends are
// authorized as the principal that yields (Kafka's brokers are usually
// super.users; else they need CLUSTER_ACTION on the cluster).
//
// Controller RPCs do not use it: they go to the CONTROLLER listener with
// its own security (openNode), as Kafka's brokers reach the controllers on
// controller.listener.names.
//
// A setting the client cannot use stops the start of a node in a
// multi-node cluster; a one-node cluster has no peer to dial, so there it
// is logged and the pool fails its dials with the reason.
func (b *Broker) interBrokerPool(cfg *config.Broker) (*kclient.Pool, error) {
	l := b.layout
	kc := kclient.Config{ClientID: fmt.Sprintf("gregor-broker-%d", l.NodeID)}
	dial, mech, err := b.interBrokerSecurity(cfg)
	if err != nil {
		err = fmt.Errorf("%w: the inter-broker listener %s (%s): %v", config.ErrInvalidConfig, l.InterBroker, l.InterBrokerProtocol, err)
		if len(l.Voters) > 1 {
			return nil, err
		}
		b.logger.Info("a one-node cluster: this node could not dial other brokers on the inter-broker listener", "reason", err)
		kc.Dial = func(context.Context, string, string) (net.Conn, error) { return nil, err }
		return kclient.NewPool(kc), nil
	}
	kc.Dial, kc.SASL = dial, mech
	return kclient.NewPool(kc), nil
}

// interBrokerSecurity is the dialer (with TLS on SSL and SASL_SSL) and
// SASL mechanism (on SASL_*) of the inter-broker listener.
func (b *Broker) interBrokerSecurity(cfg *config.Broker) (dialFunc, sasl.Mechanism, error) {
	l := b.layout
	var sec *auth.Listener
	for _, kl := range b.listeners {
		if kl.Bind.Listener == l.InterBroker {
			sec = kl.sec
		}
	}
	if sec == nil {
		return nil, nil, fmt.Errorf("no such client listener")
	}
	d := &net.Dialer{}
	dial := d.DialContext
	var mech sasl.Mechanism
	switch l.InterBrokerProtocol {
	case auth.SSL, auth.SASLSSL:
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, _ := net.SplitHostPort(addr)
			tc, err := sec.ClientTLS(host)
			if err != nil {
				return nil, err
			}
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			tlsc := tls.Client(c, tc)
			if err := tlsc.HandshakeContext(ctx); err != nil {
				c.Close()
				return nil, fmt.Errorf("TLS handshake: %w", err)
			}
			return tlsc, nil
		}
	}
	switch l.InterBrokerProtocol {
	case auth.SASLPlaintext, auth.SASLSSL:
		var err error
		if mech, err = sec.ClientMechanism(cfg, cfg.String("sasl.mechanism.inter.broker.protocol")); err != nil {
			return nil, nil, err
		}
	}
	return dial, mech, nil
}
