package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults, as in Kafka.
const (
	// DefaultSocketRequestMaxBytes is socket.request.max.bytes.
	DefaultSocketRequestMaxBytes int32 = 104857600
	// DefaultConnectionsMaxIdle is connections.max.idle.ms.
	DefaultConnectionsMaxIdle = 10 * time.Minute
	// DefaultListener is the listener name used when Config.Listener is empty.
	DefaultListener = "PLAINTEXT"
)

// ErrServerClosed is returned by Listen and Serve after Shutdown began.
var ErrServerClosed = errors.New("server: closed")

// Config configures a Server.
type Config struct {
	// Addr is the host:port to listen on; port 0 picks a free port.
	Addr string
	// Listener names the listener in logs, metrics and ConnInfo; default
	// "PLAINTEXT".
	Listener string
	// SocketRequestMaxBytes is socket.request.max.bytes: the largest
	// request frame accepted, size prefix excluded. 0 means the default,
	// 104857600.
	SocketRequestMaxBytes int32
	// MaxConnections is max.connections: while this many connections are
	// open the listener stops accepting (new connections wait in the
	// kernel's backlog), as Kafka's acceptor does. 0 means unlimited.
	MaxConnections int
	// ConnectionsMaxIdle is connections.max.idle.ms: a connection that has
	// sent no request for this long is closed. 0 means the default, 10
	// minutes; a negative value disables the limit.
	ConnectionsMaxIdle time.Duration
	// Logger receives the server's logs; default slog.Default().
	Logger *slog.Logger
	// Metrics records request and connection metrics; may be nil.
	Metrics *Metrics
	// MemoryPool bounds the bytes of requests held at once, shared by the
	// broker's listeners (queued.max.request.bytes); nil is unbounded.
	MemoryPool *MemoryPool
	// MaxInflightRequests is gregor.max.in.flight.requests.per.connection:
	// a connection reads no further request while this many of its
	// requests are unanswered. 0 means the default, 5.
	MaxInflightRequests int
	// MaxInflightBytes is gregor.max.in.flight.bytes.per.connection: a
	// connection reads no further request while its unanswered requests
	// hold this many bytes (one request is always allowed). 0 means the
	// default, 64 MiB.
	MaxInflightBytes int
	// Secure, when set, is called with each accepted connection, in the
	// accept loop, and must not block: it returns the connection to use
	// (wrapped in TLS, whose handshake then runs on the first read) and
	// the connection's security session, handed to the Handler as
	// ConnInfo.Session (package auth's Listener.Wrap).
	Secure func(net.Conn) (net.Conn, any)
}

// Server accepts Kafka protocol connections on one listener and hands each
// decoded request to a Handler. See the package documentation.
type Server struct {
	cfg     Config
	h       Handler
	log     *slog.Logger
	metrics *listenerMetrics
	pool    *MemoryPool

	// base is the context handed to Handle; cancelBase is called when
	// Shutdown's grace period ends (or drain completes).
	base       context.Context
	cancelBase context.CancelFunc

	nextConnID atomic.Uint64
	// draining is set once, when Shutdown begins or Serve's context ends.
	draining  atomic.Bool
	drainOnce sync.Once
	drained   chan struct{} // closed when draining begins

	// conns counts connection goroutines; Serve and Shutdown wait on it.
	conns sync.WaitGroup

	mu struct {
		sync.Mutex
		ln    net.Listener
		conns map[uint64]*conn
		// slotFreed is closed (and reset to nil) when a connection ends,
		// waking an acceptor blocked on max.connections.
		slotFreed chan struct{}
	}
}

// New returns a Server for cfg that sends requests to h. Call Listen, then
// Serve.
func New(cfg Config, h Handler) *Server {
	if cfg.Listener == "" {
		cfg.Listener = DefaultListener
	}
	if cfg.SocketRequestMaxBytes == 0 {
		cfg.SocketRequestMaxBytes = DefaultSocketRequestMaxBytes
	}
	if cfg.ConnectionsMaxIdle == 0 {
		cfg.ConnectionsMaxIdle = DefaultConnectionsMaxIdle
	}
	if cfg.MaxInflightRequests <= 0 {
		cfg.MaxInflightRequests = DefaultMaxInflightRequests
	}
	if cfg.MaxInflightBytes <= 0 {
		cfg.MaxInflightBytes = DefaultMaxInflightBytes
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	pool := cfg.MemoryPool
	if pool == nil {
		pool = NewMemoryPool(0)
	}
	s := &Server{
		cfg:     cfg,
		h:       h,
		log:     log.With("listener", cfg.Listener),
		metrics: cfg.Metrics.forListener(cfg.Listener),
		pool:    pool,
		drained: make(chan struct{}),
	}
	s.base, s.cancelBase = context.WithCancel(context.Background())
	s.mu.conns = make(map[uint64]*conn)
	return s
}

// Listen binds the listening socket. Addr is valid afterwards.
func (s *Server) Listen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining.Load() {
		return ErrServerClosed
	}
	if s.mu.ln != nil {
		return fmt.Errorf("server: listener %s already bound to %s", s.cfg.Listener, s.mu.ln.Addr())
	}
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("server: listen %s on %q: %w", s.cfg.Listener, s.cfg.Addr, err)
	}
	s.mu.ln = ln
	s.log.Info("listening", "addr", ln.Addr().String())
	return nil
}

// Addr returns the bound address, or nil before Listen.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.ln == nil {
		return nil
	}
	return s.mu.ln.Addr()
}

// Serve accepts connections until ctx is done or Shutdown is called, then
// drains like Shutdown (idle connections are closed, in-flight requests are
// answered) and returns once every connection goroutine has ended. It
// calls Listen first if the Server is not yet listening. Serve's ctx does
// not cancel the context handed to Handle: only Shutdown's deadline does.
func (s *Server) Serve(ctx context.Context) error {
	s.mu.Lock()
	ln := s.mu.ln
	s.mu.Unlock()
	if ln == nil {
		if err := s.Listen(); err != nil {
			return err
		}
		s.mu.Lock()
		ln = s.mu.ln
		s.mu.Unlock()
	}
	if s.draining.Load() {
		return ErrServerClosed
	}
	stop := context.AfterFunc(ctx, s.beginDrain)
	defer stop()

	err := s.acceptLoop(ln)
	s.beginDrain()
	s.conns.Wait()
	return err
}

// acceptLoop accepts connections until draining; it returns nil when
// stopped by draining.
func (s *Server) acceptLoop(ln net.Listener) error {
	var backoff time.Duration
	for {
		if !s.waitForConnectionSlot() {
			return nil
		}
		nc, err := ln.Accept()
		if err != nil {
			if s.draining.Load() {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("server: listener %s closed: %w", s.cfg.Listener, err)
			}
			// Transient failures (EMFILE, ECONNABORTED) must not spin.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("accept failed; retrying", "err", err, "retry_in", backoff)
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-s.drained:
				t.Stop()
				return nil
			}
			continue
		}
		backoff = 0
		s.startConn(nc)
	}
}

// waitForConnectionSlot blocks while max.connections connections are open,
// like Kafka's acceptor. It returns false once draining begins.
func (s *Server) waitForConnectionSlot() bool {
	if s.cfg.MaxConnections <= 0 {
		return !s.draining.Load()
	}
	logged := false
	for {
		s.mu.Lock()
		if s.draining.Load() {
			s.mu.Unlock()
			return false
		}
		n := len(s.mu.conns)
		if n < s.cfg.MaxConnections {
			s.mu.Unlock()
			if logged {
				s.log.Info("connection slot free; accepting again", "max_connections", s.cfg.MaxConnections)
			}
			return true
		}
		if s.mu.slotFreed == nil {
			s.mu.slotFreed = make(chan struct{})
		}
		freed := s.mu.slotFreed
		s.mu.Unlock()
		if !logged {
			s.log.Warn("max.connections reached; not accepting new connections until one closes",
				"connections", n, "max_connections", s.cfg.MaxConnections)
			logged = true
		}
		select {
		case <-freed:
		case <-s.drained:
			return false
		}
	}
}

// ServeConn serves one connection accepted elsewhere (the CONTROLLER
// listener's, which the raft transport shares: it hands over every
// connection that is not raft's). It returns at once; the connection is
// served, counted and drained like an accepted one, and closed at once
// when the Server is draining.
func (s *Server) ServeConn(nc net.Conn) { s.startConn(nc) }

func (s *Server) startConn(nc net.Conn) {
	var session any
	if s.cfg.Secure != nil {
		nc, session = s.cfg.Secure(nc)
	}
	c := newConn(s, s.nextConnID.Add(1), nc)
	c.info.Session = session
	c.gate, _ = session.(AuthGate)
	s.mu.Lock()
	if s.draining.Load() {
		s.mu.Unlock()
		nc.Close()
		return
	}
	s.mu.conns[c.info.ID] = c
	s.conns.Add(1)
	s.mu.Unlock()
	s.metrics.opened()
	go c.serve()
}

// removeConn forgets c and wakes an acceptor waiting for a slot.
func (s *Server) removeConn(c *conn) {
	s.mu.Lock()
	delete(s.mu.conns, c.info.ID)
	if s.mu.slotFreed != nil {
		close(s.mu.slotFreed)
		s.mu.slotFreed = nil
	}
	s.mu.Unlock()
	s.metrics.closed()
	s.conns.Done()
}

// beginDrain stops accepting and stops every connection's reader: a
// connection closes once the requests it has read are answered.
func (s *Server) beginDrain() {
	s.drainOnce.Do(func() {
		s.draining.Store(true)
		close(s.drained)
		s.mu.Lock()
		ln := s.mu.ln
		conns := make([]*conn, 0, len(s.mu.conns))
		for _, c := range s.mu.conns {
			conns = append(conns, c)
		}
		s.mu.Unlock()
		if ln != nil {
			ln.Close()
		}
		for _, c := range conns {
			c.stopReading()
		}
	})
}

// Shutdown stops accepting, lets in-flight requests finish and their
// responses be written, and closes every connection. If ctx ends first, the
// context handed to Handle is cancelled, all connections are closed at
// once, and ctx's error is returned.
func (s *Server) Shutdown(ctx context.Context) error {
	s.beginDrain()
	done := make(chan struct{})
	go func() {
		s.conns.Wait()
		close(done)
	}()
	select {
	case <-done:
		s.cancelBase()
		return nil
	case <-ctx.Done():
		s.cancelBase()
		s.mu.Lock()
		for _, c := range s.mu.conns {
			c.nc.Close()
		}
		s.mu.Unlock()
		s.log.Warn("shutdown deadline passed; closed connections with requests in flight", "err", ctx.Err())
		return ctx.Err()
	}
}
