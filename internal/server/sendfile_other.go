//go:build !linux

package server

import (
	"errors"
	"os"
	"syscall"
)

const sendfileSupported = false

func sendFile(syscall.RawConn, *os.File, int64, int) (int, error) {
	return 0, errors.New("sendfile is not supported on this platform")
}
