package transport

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"

	"github.com/gregor-broker/gregor/internal/clock"
	"github.com/gregor-broker/gregor/internal/quorum"
)

const (
	minBackoff = 50 * time.Millisecond
	maxBackoff = 2 * time.Second
)

// lane is one outbound connection to a peer and the goroutine that owns it.
type lane struct {
	t    *Transport
	peer int32
	to   uint64
	addr string
	kind byte
	q    chan []byte

	dropped   atomic.Uint64
	connected atomic.Bool
	mu        sync.Mutex
	lastErr   string
}

func newLane(t *Transport, peer int32, addr string, kind byte) *lane {
	size := t.cfg.QueueSize
	if kind == laneSnap {
		size = 4
	}
	return &lane{t: t, peer: peer, to: quorum.RaftID(peer), addr: addr, kind: kind, q: make(chan []byte, size)}
}

func (l *lane) enqueue(frame []byte) bool {
	select {
	case l.q <- frame:
		return true
	default:
		l.dropped.Add(1)
		return false
	}
}

func (l *lane) status(id int32) PeerStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	return PeerStatus{NodeID: id, Addr: l.addr, Connected: l.connected.Load(), LastError: l.lastErr, Dropped: l.dropped.Load()}
}

func (l *lane) run() {
	defer l.t.wg.Done()
	var conn net.Conn
	var bw *bufio.Writer
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	backoff := minBackoff
	for {
		var msg []byte
		select {
		case <-l.t.stop:
			return
		case msg = <-l.q:
		}
		if conn == nil {
			c, err := l.dial()
			if err != nil {
				l.lost(msg, err)
				if !l.sleep(backoff) {
					return
				}
				backoff = min(2*backoff, maxBackoff)
				continue
			}
			conn, bw, backoff = c, bufio.NewWriterSize(c, 64<<10), minBackoff
			l.connected.Store(true)
		}
		if err := l.write(conn, bw, msg); err != nil {
			conn.Close()
			conn = nil
			l.connected.Store(false)
			l.lost(nil, err)
		}
	}
}

// write sends msg and whatever else is queued, then flushes. On the
// snapshot lane each frame is one MsgSnap, reported finished once flushed.
func (l *lane) write(conn net.Conn, bw *bufio.Writer, msg []byte) error {
	timeout := l.t.cfg.WriteTimeout
	if l.kind == laneSnap {
		timeout = max(timeout, 60*time.Second)
	}
	conn.SetWriteDeadline(l.t.deadline(timeout))
	for n := 0; ; n++ {
		if err := writeFrame(bw, msg); err != nil {
			if l.kind == laneSnap {
				l.t.handler.ReportSnapshot(l.to, raft.SnapshotFailure)
			}
			return err
		}
		if l.kind == laneSnap {
			if err := bw.Flush(); err != nil {
				l.t.handler.ReportSnapshot(l.to, raft.SnapshotFailure)
				return err
			}
			l.t.handler.ReportSnapshot(l.to, raft.SnapshotFinish)
			return nil
		}
		if n == 256 {
			break
		}
		select {
		case msg = <-l.q:
			continue
		default:
		}
		break
	}
	return bw.Flush()
}

func writeFrame(bw *bufio.Writer, b []byte) error {
	var h [4]byte
	binary.BigEndian.PutUint32(h[:], uint32(len(b)))
	if _, err := bw.Write(h[:]); err != nil {
		return err
	}
	_, err := bw.Write(b)
	return err
}

// lost handles a failed dial or write: msg (if any) and everything queued
// is dropped, and raft hears that the peer is unreachable (and, for each
// snapshot dropped, that it failed).
func (l *lane) lost(msg []byte, err error) {
	l.mu.Lock()
	first := l.lastErr != err.Error()
	l.lastErr = err.Error()
	l.mu.Unlock()
	if first {
		l.t.log.Warn("raft peer unreachable", "peer", l.peer, "addr", l.addr, "lane", l.kind, "err", err)
	}
	n := 0
	if msg != nil {
		n++
	}
	for drained := false; !drained; {
		select {
		case <-l.q:
			n++
		default:
			drained = true
		}
	}
	l.dropped.Add(uint64(n))
	l.t.handler.ReportUnreachable(l.to)
	if l.kind == laneSnap {
		for range n {
			l.t.handler.ReportSnapshot(l.to, raft.SnapshotFailure)
		}
	}
}

func (l *lane) sleep(d time.Duration) bool {
	c, timer := clock.NewTimer(l.t.cfg.Clock, d)
	select {
	case <-c:
		return true
	case <-l.t.stop:
		timer.Stop()
		return false
	}
}

// dial connects and performs the handshake, within DialTimeout, and gives
// up at once when the transport closes.
func (l *lane) dial() (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), l.t.cfg.DialTimeout)
	defer cancel()
	go func() {
		select {
		case <-l.t.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	c, err := l.t.cfg.Dial(ctx, "tcp", l.addr)
	if err != nil {
		return nil, err
	}
	// Until the handshake is done, the end of ctx unblocks it.
	unwatch := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	h := hello{lane: l.kind, from: l.t.self, to: l.to, clusterID: l.t.cfg.ClusterID, directoryID: l.t.cfg.DirectoryID}
	if pd := l.t.cfg.PeerDirectories; pd != nil {
		h.peerDirectoryID = pd.Known(l.peer)
	}
	_, err = c.Write(h.encode())
	if err == nil {
		err = readAnswer(c)
	}
	if !unwatch() && err == nil {
		err = ctx.Err()
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("handshake with node %d: %w", l.peer, err)
	}
	return c, nil
}
