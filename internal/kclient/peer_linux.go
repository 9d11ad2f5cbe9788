package kclient

import (
	"errors"
	"io"
	"net"
	"syscall"
)

// peerClosed reports whether the peer has closed nc (or reset it) while it
// sat idle: a peek that does not wait reads end of file or fails with
// something other than "would block". A connection with bytes waiting that
// nobody asked for is no use either. Connections that are not sockets (a
// test's pipe) count as open.
func peerClosed(nc net.Conn) bool {
	if u, ok := nc.(interface{ NetConn() net.Conn }); ok {
		nc = u.NetConn() // TLS: the socket under it
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	closed := false
	var b [1]byte
	cerr := rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR):
		case err != nil || n == 0:
			closed = true // reset, or end of file
		default:
			closed = true // bytes nobody asked for
		}
		return true // never wait
	})
	return closed || cerr != nil
}

// readAll fills p from nc, a plain TCP socket, waking the reading
// goroutine about once for all of it rather than once per arriving
// segment: whenever it must wait it sets the socket's SO_RCVLOWAT to the
// bytes still missing, so the kernel signals the socket readable only when
// they are all queued (or its receive window is nearly full). The kernel
// caps the mark at half the largest receive buffer and grows the buffer
// to hold it. It leaves the mark at 1 when it returns. ok is false when nc
// is not a plain TCP socket (under TLS the bytes still needed from the
// socket are not the bytes still needed by the reader): the caller reads
// as usual.
func readAll(nc net.Conn, p []byte) (ok bool, err error) {
	tc, isTCP := nc.(*net.TCPConn)
	if !isTCP {
		return false, nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return false, nil
	}
	got, mark := 0, 1
	setMark := func(fd uintptr, n int) error {
		if n == mark {
			return nil
		}
		mark = n
		return syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, n)
	}
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		for got < len(p) {
			n, err := syscall.Read(int(fd), p[got:])
			switch {
			case errors.Is(err, syscall.EINTR):
				continue
			case errors.Is(err, syscall.EAGAIN):
				want := len(p) - got
				if want < lowatFrom {
					want = 1
				}
				if rerr = setMark(fd, want); rerr != nil {
					return true
				}
				return false // wait until readable
			case err != nil:
				rerr = err
				return true
			case n == 0:
				rerr = io.ErrUnexpectedEOF
				return true
			}
			got += n
		}
		return true
	})
	if mark != 1 {
		if cerr := rc.Control(func(fd uintptr) {
			if serr := setMark(fd, 1); rerr == nil {
				rerr = serr
			}
		}); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = rerr
	}
	return true, err
}
