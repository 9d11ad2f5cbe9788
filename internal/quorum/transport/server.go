package transport

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/gregor-broker/gregor/internal/quorum"
)

// peekTimeout bounds how long an accepted connection may take to send its
// first four bytes.
const peekTimeout = 10 * time.Second

// Serve accepts connections on ln until Close, which closes ln: raft
// connections (opening with Magic) are served here, every other connection
// goes to fallback (nil: closed) with its first bytes still to be read.
// fallback runs on the connection's own goroutine and may serve it for its
// whole life: the Kafka server owns those connections, and Close does not
// wait for them.
func (t *Transport) Serve(ln net.Listener, fallback func(net.Conn)) error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		ln.Close()
		return net.ErrClosed
	}
	t.listeners = append(t.listeners, ln)
	t.wg.Add(1)
	t.mu.Unlock()
	defer t.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			select {
			case <-t.stop:
				return nil
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		t.wg.Add(1)
		go func() {
			other := t.route(c, fallback != nil)
			t.wg.Done()
			if other != nil {
				fallback(other)
			}
		}()
	}
}

// route serves a raft connection, or returns a connection that is not one
// (its first bytes replayed) for the fallback.
func (t *Transport) route(c net.Conn, hasFallback bool) net.Conn {
	var first [4]byte
	c.SetReadDeadline(t.deadline(peekTimeout))
	n, err := io.ReadFull(c, first[:])
	c.SetReadDeadline(time.Time{})
	if err == nil && IsRaft(first[:]) {
		t.HandleConn(&prefixConn{Conn: c, prefix: first[:]})
		return nil
	}
	if !hasFallback || n == 0 {
		c.Close()
		return nil
	}
	return &prefixConn{Conn: c, prefix: first[:n]}
}

// prefixConn replays bytes already read from a connection.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.prefix) > 0 {
		n := copy(b, p.prefix)
		p.prefix = p.prefix[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

// HandleConn serves one inbound raft connection, from its magic on, until
// it fails or the transport closes.
func (t *Transport) HandleConn(c net.Conn) {
	defer c.Close()
	if t.handler == nil || !t.track(c) {
		return
	}
	defer t.untrack(c)
	br := bufio.NewReaderSize(c, 64<<10)
	c.SetReadDeadline(t.deadline(peekTimeout))
	var magic [4]byte
	if _, err := io.ReadFull(br, magic[:]); err != nil || !IsRaft(magic[:]) {
		return
	}
	h, err := readHello(br)
	if err != nil {
		t.log.Warn("bad raft handshake", "remote", c.RemoteAddr(), "err", err)
		return
	}
	if reason := t.admit(h); reason != "" {
		t.log.Error("raft connection refused", "remote", c.RemoteAddr(), "from", quorum.NodeID(h.from), "reason", reason)
		c.SetWriteDeadline(t.deadline(time.Second))
		c.Write(encodeAnswer(reason))
		return
	}
	c.SetWriteDeadline(t.deadline(t.cfg.DialTimeout))
	if _, err := c.Write(encodeAnswer("")); err != nil {
		return
	}
	c.SetDeadline(time.Time{})
	limit := t.cfg.MaxFrameBytes
	if h.lane == laneSnap {
		limit = t.cfg.MaxSnapshotBytes
	}
	if err := t.readFrames(br, h.from, limit); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		t.log.Warn("raft connection closed", "from", quorum.NodeID(h.from), "err", err)
	}
}

// admit returns why a handshake is refused, or "".
func (t *Transport) admit(h hello) string {
	from := quorum.NodeID(h.from)
	switch {
	case h.clusterID != t.cfg.ClusterID:
		return fmt.Sprintf("cluster %q, this node is in cluster %q", h.clusterID, t.cfg.ClusterID)
	case h.to != t.self:
		return fmt.Sprintf("meant for raft id %d, this is %d", h.to, t.self)
	}
	if _, ok := t.lanes[from]; !ok || h.from == 0 {
		return fmt.Sprintf("node %d is not in this node's voter address book", from)
	}
	if h.peerDirectoryID != "" && h.peerDirectoryID != t.cfg.DirectoryID {
		return fmt.Sprintf("node %d knows this node's metadata directory as %s, but it is %s: this node's metadata directory "+
			"was wiped and re-formatted, so it may have forgotten votes it cast and entries it acknowledged; it must not "+
			"take part in the quorum until it is removed from it and added back under a new node id",
			from, h.peerDirectoryID, t.cfg.DirectoryID)
	}
	if t.cfg.PeerDirectories != nil {
		if err := t.cfg.PeerDirectories.Check(from, h.directoryID); err != nil {
			return err.Error()
		}
	}
	return ""
}

func (t *Transport) readFrames(br *bufio.Reader, from uint64, limit int) error {
	var h [4]byte
	for {
		if _, err := io.ReadFull(br, h[:]); err != nil {
			return err
		}
		n := binary.BigEndian.Uint32(h[:])
		if uint64(n) > uint64(limit) {
			return fmt.Errorf("frame of %d bytes, at most %d", n, limit)
		}
		// Grow with what arrives rather than trusting the length with
		// one allocation up front.
		buf := bytes.NewBuffer(make([]byte, 0, min(int(n), 1<<20)))
		if _, err := io.CopyN(buf, br, int64(n)); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		b := buf.Bytes()
		m := &pb.Message{}
		if err := proto.Unmarshal(b, m); err != nil {
			return fmt.Errorf("undecodable raft message: %w", err)
		}
		if m.GetFrom() != from || m.GetTo() != t.self {
			return fmt.Errorf("message from %d to %d on a connection from %d to %d", m.GetFrom(), m.GetTo(), from, t.self)
		}
		t.handler.Deliver(m)
	}
}
