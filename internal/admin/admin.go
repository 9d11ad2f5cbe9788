package admin

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// readHeaderTimeout bounds how long a client may take to send request
// headers, so idle or slow clients cannot hold connections open.
const readHeaderTimeout = 10 * time.Second

// Config configures an Admin listener.
type Config struct {
	// Addr is the host:port to listen on; port 0 picks a free port.
	Addr string
	// Logger receives the listener's logs; default slog.Default().
	Logger *slog.Logger
	// Registry is served on /metrics. The Go runtime and process
	// collectors are registered in it. If nil, a new registry is used.
	Registry *prometheus.Registry
	// Security is the listener's TLS, authentication, record browser and
	// profiler settings.
	Security Security
	// MetricsAddr, when set, is a second listener serving /metrics, /livez
	// and /readyz without authentication (for a Prometheus that holds no
	// credentials), plain HTTP.
	MetricsAddr string
}

// Admin is the HTTP admin listener: health, readiness, metrics, and the
// routes other packages add with Handle.
type Admin struct {
	log *slog.Logger
	mux *http.ServeMux
	srv *http.Server
	// now is time.Now, replaceable in tests.
	now  func() time.Time
	addr string
	// loopback is set by Listen when the listener is bound to a loopback
	// address: then only loopback Hosts are served (host.go).
	loopback atomic.Bool
	sec      Security
	// metrics is the separate metrics listener, nil without MetricsAddr.
	metrics *http.Server
	mAddr   string

	mu struct {
		sync.Mutex
		ln  net.Listener
		mln net.Listener // the metrics listener
		// conditions in the order they were first set.
		conditions []condition
		shutdown   bool
	}
}

type condition struct {
	name  string
	ready bool
	// warn: ready, but in a state an operator must see (detail says why).
	warn   bool
	detail string
	since  time.Time
}

// New returns an Admin serving /livez, /readyz and /metrics. Call Listen,
// then Serve.
func New(cfg Config) *Admin {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	reg := cfg.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
			log.Warn("admin: cannot register runtime collector", "err", err)
		}
	}
	a := &Admin{
		log:   log,
		mux:   http.NewServeMux(),
		now:   time.Now,
		addr:  cfg.Addr,
		sec:   cfg.Security,
		mAddr: cfg.MetricsAddr,
	}
	handler, err := cfg.Security.authenticate(a.mux)
	if err != nil {
		// Fail closed: an authentication that cannot work serves nothing
		// but the health probes (the broker refuses to start first).
		log.Error("admin: authentication misconfigured; serving only /livez and /readyz", "err", err)
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if open(r.URL.Path) {
				a.mux.ServeHTTP(w, r)
				return
			}
			http.Error(w, "admin authentication is misconfigured", http.StatusServiceUnavailable)
		})
	}
	a.srv = &http.Server{
		Handler:           a.loopbackOnly(handler),
		ReadHeaderTimeout: readHeaderTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	a.mux.HandleFunc("GET /livez", serveLivez)
	if cfg.Security.Pprof {
		// Go's profiler, for operators chasing CPU or memory: off unless
		// gregor.admin.pprof.enable.
		a.mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		a.mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		a.mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	a.mux.HandleFunc("GET /readyz", a.serveReadyz)
	metrics := promhttp.InstrumentMetricHandler(reg,
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
			Registry: reg,
		}))
	a.mux.Handle("GET /metrics", metrics)
	if cfg.MetricsAddr != "" {
		mux := http.NewServeMux()
		mux.HandleFunc("GET /livez", serveLivez)
		mux.HandleFunc("GET /readyz", a.serveReadyz)
		mux.Handle("GET /metrics", metrics)
		a.metrics = &http.Server{Handler: mux, ReadHeaderTimeout: readHeaderTimeout,
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	}
	return a
}

// Validate reports a Security that cannot work (basic auth without users,
// bearer auth without tokens, an unknown scheme).
func (s Security) Validate() error {
	_, err := s.authenticate(http.NotFoundHandler())
	return err
}

// Handle registers h for pattern (net/http.ServeMux syntax, e.g.
// "GET /v1/partitions/{topic}"). It panics if pattern conflicts with a
// registered one, as ServeMux does.
func (a *Admin) Handle(pattern string, h http.Handler) {
	a.mux.Handle(pattern, h)
}

// Handler returns the admin routes as one http.Handler, for tests and for
// serving them on another server. It does not include the Host check the
// admin listener applies (host.go): a caller serving it elsewhere decides
// who may reach it.
func (a *Admin) Handler() http.Handler { return a.mux }

// SetReady registers the readiness condition named reason (e.g. "log
// recovery", "metadata") on first use and sets its state. /readyz answers
// 200 only while every registered condition is ready. Safe for concurrent
// use.
func (a *Admin) SetReady(reason string, ready bool) {
	st := NotReady
	if ready {
		st = Ready
	}
	a.SetCondition(reason, st, "")
}

// State is a readiness condition's state.
type State int8

const (
	// Ready: the condition holds.
	Ready State = iota
	// Warning: the condition holds, so /readyz still answers 200, but in a
	// state an operator must see (a full log dir: produce is refused while
	// fetches are served, and taking the broker out of service would not
	// free a byte). /readyz and the console show it with its detail.
	Warning
	// NotReady: /readyz answers 503.
	NotReady
)

// SetCondition registers the readiness condition named reason on first use
// and sets its state, with a detail shown beside it (e.g. why it is not
// ready). Its since time moves only when the state changes. Safe for
// concurrent use.
func (a *Admin) SetCondition(reason string, st State, detail string) {
	now := a.now()
	ready, warn := st != NotReady, st == Warning
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := range a.mu.conditions {
		c := &a.mu.conditions[i]
		if c.name != reason {
			continue
		}
		if c.ready != ready || c.warn != warn {
			c.ready, c.warn, c.since = ready, warn, now
			a.log.Info("readiness changed", "condition", reason, "ready", ready, "warning", warn, "detail", detail)
		}
		c.detail = detail
		return
	}
	a.mu.conditions = append(a.mu.conditions, condition{name: reason, ready: ready, warn: warn, detail: detail, since: now})
	a.log.Info("readiness condition registered", "condition", reason, "ready", ready, "warning", warn)
}

// readiness returns a copy of the conditions and whether all are ready.
func (a *Admin) readiness() ([]condition, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	conds := append([]condition(nil), a.mu.conditions...)
	all := true
	for _, c := range conds {
		all = all && c.ready
	}
	return conds, all
}

// Listen binds the listening socket. Addr is valid afterwards.
func (a *Admin) Listen() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mu.shutdown {
		return http.ErrServerClosed
	}
	if a.mu.ln != nil {
		return fmt.Errorf("admin: already listening on %s", a.mu.ln.Addr())
	}
	ln, err := net.Listen("tcp", a.addr)
	if err != nil {
		return fmt.Errorf("admin: listen on %q: %w", a.addr, err)
	}
	if a.metrics != nil {
		mln, err := net.Listen("tcp", a.mAddr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("admin: metrics listener on %q: %w", a.mAddr, err)
		}
		a.mu.mln = mln
	}
	a.mu.ln = ln
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		a.loopback.Store(true)
	}
	a.log.Info("admin listening", "addr", ln.Addr().String(), "tls", a.sec.TLS != nil, "auth", a.sec.Auth)
	return nil
}

// MetricsAddr is the bound address of the separate metrics listener, nil
// without one or before Listen.
func (a *Admin) MetricsAddr() net.Addr {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mu.mln == nil {
		return nil
	}
	return a.mu.mln.Addr()
}

// Addr returns the bound address, or nil before Listen.
func (a *Admin) Addr() net.Addr {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mu.ln == nil {
		return nil
	}
	return a.mu.ln.Addr()
}

// Serve serves HTTP until ctx is done or Shutdown is called; it calls
// Listen first if needed. When ctx ends, in-flight requests are allowed to
// finish before Serve returns. It returns nil when stopped either way.
func (a *Admin) Serve(ctx context.Context) error {
	ln := a.listener()
	if ln == nil {
		if err := a.Listen(); err != nil {
			return err
		}
		ln = a.listener()
	}
	shutdownDone := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(shutdownDone)
		if a.metrics != nil {
			a.metrics.Shutdown(context.WithoutCancel(ctx))
		}
		if err := a.srv.Shutdown(context.WithoutCancel(ctx)); err != nil {
			a.log.Warn("admin shutdown", "err", err)
		}
	})
	a.mu.Lock()
	mln := a.mu.mln
	a.mu.Unlock()
	if mln != nil {
		go func() {
			if err := a.metrics.Serve(mln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				a.log.Warn("admin metrics listener stopped", "err", err)
			}
		}()
	}
	if a.sec.TLS != nil {
		ln = tls.NewListener(ln, a.sec.TLS)
	}
	err := a.srv.Serve(ln)
	if !stop() {
		<-shutdownDone
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("admin: serve: %w", err)
}

func (a *Admin) listener() net.Listener {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mu.ln
}

// Shutdown stops accepting, lets in-flight requests finish and closes idle
// connections. If ctx ends first, remaining connections are closed at once
// and ctx's error is returned.
func (a *Admin) Shutdown(ctx context.Context) error {
	a.mu.Lock()
	a.mu.shutdown = true
	ln := a.mu.ln
	a.mu.Unlock()
	if a.metrics != nil {
		a.metrics.Shutdown(ctx)
	}
	err := a.srv.Shutdown(ctx)
	if ln != nil {
		// Shutdown closes only listeners Serve was given; close ours in
		// case Serve was never called.
		ln.Close()
	}
	if err != nil {
		a.srv.Close()
		return err
	}
	return nil
}

func serveLivez(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write([]byte("ok"))
}
