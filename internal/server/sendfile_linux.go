package server

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

const sendfileSupported = true

// maxSendfile is the most one sendfile(2) call moves (Linux's MAX_RW_COUNT).
const maxSendfile = 0x7ffff000

// sendFile writes n bytes of f from byte off to the socket sock with
// sendfile(2): the kernel moves them from the page cache to the socket,
// the broker copies nothing. The offset is passed explicitly, so f's own
// offset (shared by every reader of the segment) is left alone. The
// socket's write deadline applies: while its buffer is full the call
// waits in the runtime's poller. A file that ends early is an error (a
// truncated segment), like a short ReadAt. The file's descriptor is held
// for the whole call (SyscallConn.Control), so a concurrent Close cannot
// hand it to another file meanwhile.
func sendFile(sock syscall.RawConn, f *os.File, off int64, n int) (int, error) {
	fc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	written := 0
	var serr error
	cerr := fc.Control(func(ffd uintptr) {
		werr := sock.Write(func(sfd uintptr) bool {
			for written < n {
				pos := off + int64(written)
				m, err := syscall.Sendfile(int(sfd), int(ffd), &pos, min(n-written, maxSendfile))
				if m > 0 {
					written += m
				}
				switch {
				case errors.Is(err, syscall.EAGAIN):
					return false // wait until the socket is writable
				case errors.Is(err, syscall.EINTR):
				case err != nil:
					serr = os.NewSyscallError("sendfile", err)
					return true
				case m == 0:
					serr = io.ErrUnexpectedEOF
					return true
				}
			}
			return true
		})
		if serr == nil {
			serr = werr
		}
	})
	if cerr != nil {
		return written, fmt.Errorf("sendfile from %s: %w", f.Name(), cerr)
	}
	if serr != nil {
		return written, fmt.Errorf("sendfile of %d bytes at %d of %s (%d sent): %w", n, off, f.Name(), written, serr)
	}
	return written, nil
}
