package log

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync/atomic"

	"github.com/gregor-broker/gregor/internal/vfs"
)

// FailureDomain is the fate the logs of one log dir share, as Kafka's
// LogDirFailureChannel takes a whole dir offline: the first failed write or
// fsync of any file in it fails every log opened with it. A failed log
// takes no more appends, syncs nothing more, never advances its recovery
// point again, and answers every SyncTo, past waiters and future ones, with
// the failure, so nothing appended after the failure (nor anything the
// failed fsync covered) is acknowledged. Only a restart, whose recovery
// re-validates everything past the last checkpointed recovery point, brings
// the logs back.
type FailureDomain struct {
	err    atomic.Pointer[error]
	onFail func(cause error)
}

// NewFailureDomain returns a domain that has not failed. onFail, if not nil,
// is called once, by the first Fail, on the failing goroutine, which may hold
// a log's locks: it must not block or call back into the logs.
func NewFailureDomain(onFail func(cause error)) *FailureDomain {
	return &FailureDomain{onFail: onFail}
}

// Fail records cause as the domain's failure. Only the first cause is kept;
// Fail reports whether this call was the one that failed the domain.
func (d *FailureDomain) Fail(cause error) bool {
	err := fmt.Errorf("%w: %w", ErrStorageFailed, cause)
	if !d.err.CompareAndSwap(nil, &err) {
		return false
	}
	if d.onFail != nil {
		d.onFail(cause)
	}
	return true
}

// Err is nil until the domain fails, then an error wrapping
// ErrStorageFailed and the first cause.
func (d *FailureDomain) Err() error {
	if p := d.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Failed is nil while the log is in service, else why it is not (an error
// wrapping ErrStorageFailed).
func (l *Log) Failed() error { return l.domain.Err() }

// fail fails the log's domain for cause and returns the error the caller
// answers with.
func (l *Log) fail(cause error) error {
	l.domain.Fail(cause)
	return fmt.Errorf("%w: %w", ErrStorageFailed, cause)
}

// ioErr classifies an error from changing the log's files. A write refused
// for want of space (vfs.IsNoSpace) changed nothing the log keeps, once the
// caller cut back what was written: it is ErrNoSpace and the log stays
// writable. Any other failed write, truncate or sync leaves the files in a
// state the log cannot vouch for, and fails it. Anything else (a create,
// rename or remove that did not happen, a closed log, a bad argument, a
// failure already classified) is returned as it is: the operation changed
// nothing, and the caller undoes or retries it as before.
func (l *Log) ioErr(err error) error {
	switch {
	case err == nil, errors.Is(err, ErrStorageFailed), errors.Is(err, ErrNoSpace), errors.Is(err, os.ErrClosed):
		return err
	case vfs.IsNoSpace(err):
		return fmt.Errorf("%w: %s: %w", ErrNoSpace, l.dir, err)
	case changedData(err):
		return l.fail(err)
	}
	return err
}

// changedData reports whether err is a failed write, truncate or sync (vfs
// errors are *fs.PathError named by the operation): one after which the
// file's contents, on disk or in the page cache, are not known.
func changedData(err error) bool {
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Op {
	case "write", "writeat", "truncate", "sync", "syncdir", "fsync", "fdatasync":
		return true
	}
	return false
}

// writableLocked is nil when the log may change its files. l.mu is held.
func (l *Log) writableLocked() error {
	if l.closed {
		return ErrClosed
	}
	return l.domain.Err()
}
