//go:build !linux

package kclient

import "net"

// peerClosed cannot tell without a read here: a connection the peer closed
// fails its next request instead.
func peerClosed(net.Conn) bool { return false }

// readAll is Linux only: elsewhere the caller reads as usual.
func readAll(net.Conn, []byte) (bool, error) { return false, nil }
