package kclient

import (
	"errors"
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
