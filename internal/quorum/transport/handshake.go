package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Magic opens every raft connection (see the package documentation).
var Magic = [4]byte{'G', 'R', 'F', 'T'}

const (
	version   = 2
	laneMsg   = 0
	laneSnap  = 1
	statusOK  = 0
	statusRej = 1
	maxString = 1 << 10
)

// IsRaft reports whether the first four bytes of a connection open a raft
// connection.
func IsRaft(first4 []byte) bool {
	return len(first4) >= 4 && [4]byte(first4[:4]) == Magic
}

// errRejected wraps the reason a peer gave for refusing a connection.
var errRejected = errors.New("transport: connection rejected by peer")

type hello struct {
	lane        byte
	from, to    uint64
	clusterID   string
	directoryID string
	// peerDirectoryID is the acceptor's directory id as the dialer first
	// saw it ("" if it never did): an acceptor whose directory was wiped
	// and re-formatted since refuses the connection, so it never takes
	// messages meant for the log it lost.
	peerDirectoryID string
}

func (h hello) encode() []byte {
	b := append([]byte{}, Magic[:]...)
	b = append(b, version, h.lane)
	b = binary.BigEndian.AppendUint64(b, h.from)
	b = binary.BigEndian.AppendUint64(b, h.to)
	b = appendString(b, h.clusterID)
	b = appendString(b, h.directoryID)
	return appendString(b, h.peerDirectoryID)
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func readString(r io.Reader) (string, error) {
	var n [2]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return "", err
	}
	l := binary.BigEndian.Uint16(n[:])
	if l > maxString {
		return "", fmt.Errorf("transport: handshake string of %d bytes", l)
	}
	b := make([]byte, l)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", err
	}
	return string(b), nil
}

// readHello reads a handshake after its magic.
func readHello(r io.Reader) (hello, error) {
	var fixed [18]byte
	if _, err := io.ReadFull(r, fixed[:]); err != nil {
		return hello{}, err
	}
	if fixed[0] != version {
		return hello{}, fmt.Errorf("transport: handshake version %d, want %d", fixed[0], version)
	}
	h := hello{lane: fixed[1], from: binary.BigEndian.Uint64(fixed[2:]), to: binary.BigEndian.Uint64(fixed[10:])}
	if h.lane != laneMsg && h.lane != laneSnap {
		return hello{}, fmt.Errorf("transport: unknown lane %d", h.lane)
	}
	var err error
	if h.clusterID, err = readString(r); err != nil {
		return hello{}, err
	}
	if h.directoryID, err = readString(r); err != nil {
		return hello{}, err
	}
	if h.peerDirectoryID, err = readString(r); err != nil {
		return hello{}, err
	}
	return h, nil
}

func encodeAnswer(reason string) []byte {
	if reason == "" {
		return appendString([]byte{statusOK}, "")
	}
	return appendString([]byte{statusRej}, reason)
}

func readAnswer(r io.Reader) error {
	var st [1]byte
	if _, err := io.ReadFull(r, st[:]); err != nil {
		return err
	}
	reason, err := readString(r)
	if err != nil {
		return err
	}
	if st[0] != statusOK {
		return fmt.Errorf("%w: %s", errRejected, reason)
	}
	return nil
}
