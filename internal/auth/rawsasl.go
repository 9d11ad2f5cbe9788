package auth

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// SaslHandshake v0 (KIP-43): after the handshake the client sends its SASL
// tokens as bare size-prefixed frames, outside Kafka's request framing, and
// the server answers each with a bare size-prefixed token. saslConn serves
// that exchange under the Kafka listener's reads: while a v0 exchange is
// under way it reads tokens, steps the mechanism and writes the answers
// itself, and gives the listener the bytes that follow authentication. The
// listener's reader is the only caller of Read, and the session switches to
// raw mode while handling the handshake on that same goroutine, so no lock
// is needed; nothing else is written meanwhile (the client sends its first
// token only after the handshake's answer arrived).
type saslConn struct {
	net.Conn
	s *Session
}

// rawTokenWriteTimeout bounds writing one token answer.
const rawTokenWriteTimeout = 30 * time.Second

func (c *saslConn) Read(p []byte) (int, error) {
	for c.s.raw {
		if err := c.serveToken(); err != nil {
			return 0, err
		}
	}
	return c.Conn.Read(p)
}

// PlainSocket is the TCP socket under a SASL_PLAINTEXT connection, for
// sendfile(2) (server.PlainSocket): saslConn writes through unchanged, and
// writes tokens itself only while it authenticates, when the server
// answers nothing else. Nil under TLS.
func (c *saslConn) PlainSocket() *net.TCPConn {
	tc, _ := c.Conn.(*net.TCPConn)
	return tc
}

// NetConn is the connection under the SASL exchange.
func (c *saslConn) NetConn() net.Conn { return c.Conn }

func (c *saslConn) serveToken() error {
	var size [4]byte
	if _, err := io.ReadFull(c.Conn, size[:]); err != nil {
		return err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || int(n) > c.s.l.maxToken {
		err := fmt.Errorf("SASL token of %d bytes (sasl.server.max.receive.size is %d)", n, c.s.l.maxToken)
		c.s.raw = false
		c.s.fail(err)
		return err
	}
	token := make([]byte, n)
	if _, err := io.ReadFull(c.Conn, token); err != nil {
		return err
	}
	out, _, se := c.s.Authenticate(rawTokenVersion, token)
	if se != nil {
		// Kafka answers nothing here: the connection closes.
		return errors.New(se.Message)
	}
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(out)))
	c.Conn.SetWriteDeadline(time.Now().Add(rawTokenWriteTimeout))
	_, err := c.Conn.Write(append(frame, out...))
	c.Conn.SetWriteDeadline(time.Time{})
	return err
}

// rawTokenVersion is the version saslConn steps a v0 exchange with: no
// request has it.
const rawTokenVersion int16 = -1
