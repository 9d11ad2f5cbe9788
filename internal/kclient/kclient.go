package kclient

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
)

// lowatFrom is the fewest bytes a response still needs from the socket
// for it to be read with SO_RCVLOWAT (readAll): below it the extra system
// calls cost more than the wake-ups they save. A follower's fetch answer
// is often a megabyte or more arriving in 64 KiB segments.
const lowatFrom = 256 << 10

// ErrClosed is returned by requests on a closed Pool.
var ErrClosed = errors.New("kclient: pool closed")

// Config configures a Pool.
type Config struct {
	// ClientID is sent with every request; default "gregor".
	ClientID string
	// Dial opens connections; default a net.Dialer. A listener's TLS is
	// Dial's: it returns the TLS connection.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// SASL, when set, authenticates every new connection before its first
	// request (SaslHandshake v1, then SaslAuthenticate v2 rounds).
	SASL sasl.Mechanism
	// Now reads the time a SASL session expires against (KIP-368);
	// default time.Now.
	Now func() time.Time
	// MaxResponseBytes bounds a response frame; default 100 MiB.
	MaxResponseBytes int32
	// MaxIdlePerAddr bounds the idle connections kept per address;
	// default 4.
	MaxIdlePerAddr int
	// DefaultTimeout bounds a request whose context has no deadline;
	// default 30 s.
	DefaultTimeout time.Duration
}

// Pool sends requests over pooled connections.
type Pool struct {
	cfg Config
	f   *kmsg.RequestFormatter

	mu     sync.Mutex
	idle   map[string][]*conn
	closed bool
}

type conn struct {
	nc     net.Conn
	br     *bufio.Reader
	corrID int32
	// expires is when the connection is no longer used: before the
	// broker's SASL session ends (zero: never).
	expires time.Time
}

// NewPool returns a Pool.
func NewPool(cfg Config) *Pool {
	if cfg.ClientID == "" {
		cfg.ClientID = "gregor"
	}
	if cfg.Dial == nil {
		d := &net.Dialer{}
		cfg.Dial = d.DialContext
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = 100 << 20
	}
	if cfg.MaxIdlePerAddr <= 0 {
		cfg.MaxIdlePerAddr = 4
	}
	if cfg.DefaultTimeout <= 0 {
		cfg.DefaultTimeout = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Pool{cfg: cfg, f: kmsg.NewRequestFormatter(kmsg.FormatterClientID(cfg.ClientID)), idle: map[string][]*conn{}}
}

// Request sends req to addr at req's version and returns the decoded
// response. An error means no response was read: the request may or may not
// have been served.
func (p *Pool) Request(ctx context.Context, addr string, req kmsg.Request) (kmsg.Response, error) {
	resp, _, err := p.RequestReusing(ctx, addr, req, nil)
	return resp, err
}

// RequestReusing is Request reading the response frame into buf when it
// fits (a new buffer otherwise), and returns the buffer it used for the
// caller's next request: the response's byte fields (a fetch answer's
// record batches) alias it, so they are valid only until buf is reused.
// A follower's fetches, one at a time per fetcher, need no fresh buffer
// for every answer.
func (p *Pool) RequestReusing(ctx context.Context, addr string, req kmsg.Request, buf []byte) (kmsg.Response, []byte, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.cfg.DefaultTimeout)
		defer cancel()
	}
	c, err := p.get(ctx, addr)
	if err != nil {
		return nil, buf, err
	}
	resp, buf, err := c.roundTrip(ctx, p.f, req, p.cfg.MaxResponseBytes, buf)
	if err != nil {
		c.nc.Close()
		if ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded) {
			// The socket deadline is the context's: report it as such.
			err = context.Cause(ctx)
			if err == nil {
				err = context.DeadlineExceeded
			}
		}
		return nil, buf, fmt.Errorf("kclient: %s to %s: %w", kmsg.NameForKey(req.Key()), addr, err)
	}
	p.put(addr, c)
	return resp, buf, nil
}

func (p *Pool) get(ctx context.Context, addr string) (*conn, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrClosed
	}
	var stale []*conn
	defer func() {
		for _, c := range stale {
			c.nc.Close()
		}
	}()
	for cs := p.idle[addr]; len(cs) > 0; cs = p.idle[addr] {
		c := cs[len(cs)-1]
		p.idle[addr] = cs[:len(cs)-1]
		if !c.expires.IsZero() && !p.cfg.Now().Before(c.expires) {
			stale = append(stale, c)
			continue
		}
		p.mu.Unlock()
		if c.br.Buffered() == 0 && !peerClosed(c.nc) {
			return c, nil
		}
		// The peer closed it while it was idle (it restarted): a request
		// on it would fail with EOF, and a follower would back off
		// replica.fetch.backoff.ms for nothing.
		stale = append(stale, c)
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, ErrClosed
		}
	}
	p.mu.Unlock()
	nc, err := p.cfg.Dial(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("kclient: dial %s: %w", addr, err)
	}
	c := &conn{nc: nc, br: bufio.NewReaderSize(nc, 16<<10)}
	if p.cfg.SASL != nil {
		if err := p.authenticate(ctx, c, addr); err != nil {
			nc.Close()
			return nil, fmt.Errorf("kclient: SASL %s authentication to %s: %w", p.cfg.SASL.Name(), addr, err)
		}
	}
	return c, nil
}

// authenticate runs the SASL exchange on a new connection, as Kafka's
// clients do: SaslHandshake v1 names the mechanism, then SaslAuthenticate
// v2 carries its messages until the mechanism is done. A session lifetime
// in the answer (connections.max.reauth.ms) retires the connection at 85%
// of it, before the broker would close it (Kafka's clients re-authenticate
// between 85% and 95%; a new connection does the same here).
func (p *Pool) authenticate(ctx context.Context, c *conn, addr string) error {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = p.cfg.SASL.Name()
	kresp, _, err := c.roundTrip(ctx, p.f, hs, p.cfg.MaxResponseBytes, nil)
	if err != nil {
		return err
	}
	if hr := kresp.(*kmsg.SASLHandshakeResponse); hr.ErrorCode != 0 {
		return fmt.Errorf("%w (the broker enables %v)", kerr.ErrorForCode(hr.ErrorCode), hr.SupportedMechanisms)
	}
	host, _, _ := net.SplitHostPort(addr)
	sess, out, err := p.cfg.SASL.Authenticate(ctx, host)
	if err != nil {
		return err
	}
	for done := false; !done || len(out) > 0; {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SetVersion(2)
		req.SASLAuthBytes = out
		kresp, _, err := c.roundTrip(ctx, p.f, req, p.cfg.MaxResponseBytes, nil)
		if err != nil {
			return err
		}
		resp := kresp.(*kmsg.SASLAuthenticateResponse)
		if resp.ErrorCode != 0 {
			msg := ""
			if resp.ErrorMessage != nil {
				msg = ": " + *resp.ErrorMessage
			}
			return fmt.Errorf("%w%s", kerr.ErrorForCode(resp.ErrorCode), msg)
		}
		if resp.SessionLifetimeMillis > 0 {
			c.expires = p.cfg.Now().Add(time.Duration(resp.SessionLifetimeMillis) * time.Millisecond * 85 / 100)
		}
		if done {
			break
		}
		if done, out, err = sess.Challenge(resp.SASLAuthBytes); err != nil {
			return err
		}
	}
	return nil
}

func (p *Pool) put(addr string, c *conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.idle[addr]) >= p.cfg.MaxIdlePerAddr {
		c.nc.Close()
		return
	}
	p.idle[addr] = append(p.idle[addr], c)
}

// CloseIdle closes the idle connections to addr (a peer that went away).
func (p *Pool) CloseIdle(addr string) {
	p.mu.Lock()
	cs := p.idle[addr]
	delete(p.idle, addr)
	p.mu.Unlock()
	for _, c := range cs {
		c.nc.Close()
	}
}

// Close closes every idle connection; later requests fail with ErrClosed.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = map[string][]*conn{}
	p.mu.Unlock()
	for _, cs := range idle {
		for _, c := range cs {
			c.nc.Close()
		}
	}
}

// roundTrip sends req and reads its response into buf when it fits; it
// returns the buffer it read into.
func (c *conn) roundTrip(ctx context.Context, f *kmsg.RequestFormatter, req kmsg.Request, maxBytes int32, buf []byte) (kmsg.Response, []byte, error) {
	dl, _ := ctx.Deadline()
	if err := c.nc.SetDeadline(dl); err != nil {
		return nil, buf, err
	}
	// A context cancelled before its deadline unblocks the I/O at once.
	stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	c.corrID++
	if _, err := c.nc.Write(f.AppendRequest(nil, req, c.corrID)); err != nil {
		return nil, buf, err
	}
	var size [4]byte
	if _, err := io.ReadFull(c.br, size[:]); err != nil {
		return nil, buf, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > maxBytes {
		return nil, buf, fmt.Errorf("response frame of %d bytes (at most %d)", n, maxBytes)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	body := buf[:n]
	if err := c.readBody(body); err != nil {
		return nil, buf, err
	}
	r := kbin.Reader{Src: body}
	if corr := r.Int32(); corr != c.corrID {
		return nil, buf, fmt.Errorf("response correlation id %d, want %d", corr, c.corrID)
	}
	// ApiVersions answers with a v0 header whatever its version, so a
	// client that sent too new a version can still read the error.
	if req.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		for range r.Uvarint() {
			r.Uvarint()              // tag key
			r.Span(int(r.Uvarint())) // tag value
		}
	}
	if !r.Ok() {
		return nil, buf, errors.New("truncated response header")
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(r.Src); err != nil {
		return nil, buf, fmt.Errorf("decode %s v%d response: %w", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	c.nc.SetDeadline(time.Time{})
	return resp, buf, nil
}

// readBody fills body, the rest of a response frame: what the buffered
// reader holds first, then, for a large rest on a plain TCP socket, the
// socket directly, waking once for all of it (readAll).
func (c *conn) readBody(body []byte) error {
	if len(body)-c.br.Buffered() < lowatFrom {
		_, err := io.ReadFull(c.br, body)
		return err
	}
	n, err := c.br.Read(body[:c.br.Buffered()])
	if err != nil {
		return err
	}
	if ok, err := readAll(c.nc, body[n:]); ok {
		return err
	}
	_, err = io.ReadFull(c.br, body[n:])
	return err
}
