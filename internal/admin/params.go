package admin

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// Pieces the JSON API and the console share: the error that carries an
// HTTP status, the status an error gets, and the parameters both parse.

// httpError is an error that carries its HTTP status (bad query parameters).
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// errorStatus is the status err is answered with — an httpError's own, 404
// for ErrNotFound, 503 for ErrUnavailable (retryAfter: send Retry-After: 1),
// else 500 — and the message to show with it.
func errorStatus(err error) (status int, msg string, retryAfter bool) {
	var he *httpError
	switch {
	case errors.As(err, &he):
		return he.status, he.msg, false
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound, err.Error(), false
	case errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable, err.Error(), true
	}
	return http.StatusInternalServerError, err.Error(), false
}

// parsePartition parses a {partition} path segment: a non-negative int32.
func parsePartition(raw string) (int32, bool) {
	p, err := strconv.ParseInt(raw, 10, 32)
	return int32(p), err == nil && p >= 0
}

// parseIsolation parses an isolation level as Kafka names it; empty is
// read_uncommitted.
func parseIsolation(raw string) (committed bool, err error) {
	switch raw {
	case "", "read_uncommitted":
		return false, nil
	case "read_committed":
		return true, nil
	}
	return false, badRequest("isolation=%q: want read_committed or read_uncommitted", raw)
}
