package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/internal/admin"
	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/cluster"
	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/server"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// StandardAuthorizer is the authorizer.class.name Gregor's authorizer
// stands for: Kafka's KRaft authorizer, over ACLs in the metadata.
const StandardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// kafkaListener is one client listener: where it binds, what it
// advertises, its security and its server.
type kafkaListener struct {
	cluster.ClientListener
	sec *auth.Listener
	srv *server.Server
}

// buildSecurity makes every client listener's security (auth.Listener);
// anything Gregor cannot honour stops the start.
func (b *Broker) buildSecurity(cfg *config.Broker) error {
	b.listeners = nil
	for _, cl := range b.layout.Clients {
		if cl.Protocol == "" {
			return fmt.Errorf("%w: listener %s has no security protocol in listener.security.protocol.map", config.ErrInvalidConfig, cl.Bind.Listener)
		}
		sec, err := b.newListener(cfg, cl.Bind.Listener, cl.Protocol)
		if err != nil {
			return err
		}
		b.listeners = append(b.listeners, kafkaListener{ClientListener: cl, sec: sec})
	}
	return nil
}

// newListener builds one listener's security.
func (b *Broker) newListener(cfg *config.Broker, name, protocol string) (*auth.Listener, error) {
	sec, err := auth.NewListener(auth.ListenerOptions{Name: name, Protocol: protocol, Config: cfg, Clock: b.o.Clock,
		Audit: b.audit, Scram: b.scramCredential, ReadFile: func(path string) ([]byte, error) { return vfs.ReadFile(b.o.FS, path) },
		FetchURL: fetchURL})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", config.ErrInvalidConfig, err)
	}
	return sec, nil
}

// buildAuthorizerConfig reads authorizer.class.name, super.users and
// allow.everyone.if.no.acl.found; an authorizer Gregor does not have stops
// the start.
func (b *Broker) buildAuthorizerConfig(cfg *config.Broker) error {
	switch cls := cfg.String("authorizer.class.name"); cls {
	case "":
	case StandardAuthorizer:
		supers, err := auth.ParseSuperUsers(cfg.String("super.users"))
		if err != nil {
			return fmt.Errorf("%w: %v", config.ErrInvalidConfig, err)
		}
		b.authzCfg = &auth.AuthorizerConfig{SuperUsers: supers, AllowIfNoACL: cfg.Bool("allow.everyone.if.no.acl.found")}
	default:
		return fmt.Errorf("%w: authorizer.class.name %s is not supported: Gregor's authorizer is Kafka's StandardAuthorizer (%s), over ACLs in the metadata",
			config.ErrInvalidConfig, cls, StandardAuthorizer)
	}
	return nil
}

// controllerConnection is what a refused connection to the CONTROLLER
// listener is counted as in the denied-requests metric.
const controllerConnection = "ControllerConnection"

// secureNode makes the CONTROLLER listener's security, both ways: ln
// wrapped so that every connection (raft or Kafka RPC) is admitted by
// admitNode, on SSL after its TLS handshake; and dial, which wraps a
// dialer (nil: a net.Dialer) so this node reaches its peers' CONTROLLER
// listeners with the same protocol, its own key store as client
// certificate.
func (b *Broker) secureNode(cfg *config.Broker, ln net.Listener) (net.Listener, func(dialFunc) dialFunc, error) {
	l := b.layout
	sec, err := b.newListener(cfg, l.ControllerListener, l.ControllerProtocol)
	if err != nil {
		return nil, nil, err
	}
	b.ctrlSec = sec
	nodeLn, err := sec.NodeListener(ln, b.admitNode)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", config.ErrInvalidConfig, err)
	}
	dial := func(base dialFunc) dialFunc {
		if base == nil {
			d := &net.Dialer{}
			base = d.DialContext
		}
		if l.ControllerProtocol != auth.SSL {
			return base
		}
		return func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, _ := net.SplitHostPort(addr)
			tc, err := sec.ClientTLS(host)
			if err != nil {
				return nil, err
			}
			c, err := base(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return tls.Client(c, tc), nil
		}
	}
	return nodeLn, dial, nil
}

type dialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// admitNode decides whether a connection to the CONTROLLER listener may be
// served: without an authorizer every one; with one, its principal needs
// CLUSTER_ACTION on the cluster, as Kafka's controller asks of its callers
// (brokers' principals are usually super users). Until the ACLs are loaded
// from the metadata, which needs these very connections, only super users
// pass (Kafka's StandardAuthorizer before its initial load).
func (b *Broker) admitNode(p auth.Principal, host netip.Addr) error {
	if b.authzCfg == nil {
		return nil
	}
	act := auth.Action{Principal: p, Host: host, Operation: auth.OpClusterAction, Resource: auth.ResourceCluster, Name: auth.ClusterName}
	a := b.Authorizer()
	if (a == nil && b.authzCfg.SuperUsers[p]) || (a != nil && a.Allowed(act)) {
		return nil
	}
	b.audit.Denied(controllerConnection, act)
	return fmt.Errorf("%s may not connect to the %s listener: it needs CLUSTER_ACTION on the cluster", p, b.layout.ControllerListener)
}

// scramCredential reads a SCRAM credential from the metadata this node
// has applied (the newest it has: a credential just altered is usable at
// once).
func (b *Broker) scramCredential(user string, m auth.ScramMechanism) (auth.ScramCredential, bool) {
	if b.node == nil {
		return auth.ScramCredential{}, false
	}
	c, ok := b.node.Image().ScramCredential(user, int8(m))
	return auth.ScramCredential{Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: c.Iterations}, ok
}

// jwksClient fetches https: JSON Web Key Sets.
var jwksClient = &http.Client{Timeout: 10 * time.Second}

func fetchURL(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := jwksClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 1<<20))
}

// refreshAuthorizer rebuilds the authorizer over the image's ACLs; without
// authorizer.class.name there is none.
func (b *Broker) refreshAuthorizer(im *metadata.Image) {
	if b.authzCfg == nil {
		return
	}
	b.authorizer.Store(auth.New(*b.authzCfg, controller.Bindings(im)))
}

// Authorizer is the current authorizer, nil when none is configured.
func (b *Broker) Authorizer() *auth.Authorizer { return b.authorizer.Load() }

// checkBrokerConfig validates what a dynamic broker config change would do
// to the listeners: a changed key or trust store must load (and keep its
// certificate's subject).
func (b *Broker) checkBrokerConfig(next *config.Broker) error {
	var errs []error
	for _, sec := range b.securedListeners() {
		errs = append(errs, sec.Reload(next, false))
	}
	return errors.Join(errs...)
}

// securedListeners are the client listeners' and the CONTROLLER
// listener's security.
func (b *Broker) securedListeners() []*auth.Listener {
	var out []*auth.Listener
	for _, l := range b.listeners {
		if l.sec != nil {
			out = append(out, l.sec)
		}
	}
	if b.ctrlSec != nil {
		out = append(out, b.ctrlSec)
	}
	return out
}

// reloadListeners applies the current configuration's key and trust
// stores to new connections (AlterConfigs of listener.name.X.ssl.*, also
// with unchanged paths: the files may have changed).
func (b *Broker) reloadListeners(cfg *config.Broker) {
	for _, sec := range b.securedListeners() {
		if err := sec.Reload(cfg, true); err != nil {
			b.logger.Error("reloading the listener's TLS configuration failed; it keeps the previous one", "listener", sec.Name(), "err", err)
		}
	}
}

// ListenerAddr is the bound address of a client listener, nil if there is
// no such listener.
func (b *Broker) ListenerAddr(name string) net.Addr {
	for _, l := range b.listeners {
		if l.Bind.Listener == name && l.srv != nil {
			return l.srv.Addr()
		}
	}
	return nil
}

// ListenerNames are the client listeners' names, in listeners order.
func (b *Broker) ListenerNames() []string {
	var out []string
	for _, l := range b.listeners {
		out = append(out, l.Bind.Listener)
	}
	return out
}

// adminSecurity builds the admin HTTP listener's protection from the
// gregor.admin.* configs; one that cannot work stops the start.
func (b *Broker) adminSecurity(cfg *config.Broker) (admin.Security, error) {
	sec := admin.Security{Auth: cfg.String("gregor.admin.auth"), RecordBrowser: cfg.Bool("gregor.admin.record.browser.enable"),
		Pprof: cfg.Bool("gregor.admin.pprof.enable")}
	certFile, keyFile := cfg.String("gregor.admin.tls.certificate"), cfg.String("gregor.admin.tls.key")
	if (certFile == "") != (keyFile == "") {
		return sec, fmt.Errorf("%w: gregor.admin.tls.certificate and gregor.admin.tls.key go together", config.ErrInvalidConfig)
	}
	if certFile != "" {
		certPEM, err := vfs.ReadFile(b.o.FS, certFile)
		if err != nil {
			return sec, fmt.Errorf("gregor.admin.tls.certificate: %w", err)
		}
		keyPEM, err := vfs.ReadFile(b.o.FS, keyFile)
		if err != nil {
			return sec, fmt.Errorf("gregor.admin.tls.key: %w", err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return sec, fmt.Errorf("%w: gregor.admin.tls.certificate/key: %v", config.ErrInvalidConfig, err)
		}
		sec.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	users, err := admin.ParseUsers(cfg.String("gregor.admin.auth.users"))
	if err != nil {
		return sec, fmt.Errorf("%w: %v", config.ErrInvalidConfig, err)
	}
	sec.Users = users
	for _, t := range strings.Split(cfg.String("gregor.admin.auth.tokens"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			sec.Tokens = append(sec.Tokens, t)
		}
	}
	if err := sec.Validate(); err != nil {
		return sec, fmt.Errorf("%w: %v", config.ErrInvalidConfig, err)
	}
	return sec, nil
}
