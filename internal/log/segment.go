package log

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gregor-broker/gregor/internal/record"
	"github.com/gregor-broker/gregor/internal/vfs"
)

// File name suffixes, as in Kafka.
const (
	LogSuffix       = ".log"
	IndexSuffix     = ".index"
	TimeIndexSuffix = ".timeindex"
	TxnIndexSuffix  = ".txnindex"
	SnapshotSuffix  = ".snapshot"
	CleanedSuffix   = ".cleaned"
	SwapSuffix      = ".swap"
	DeletedSuffix   = ".deleted"
)

// FileName is the 20-digit, zero-padded base offset Kafka names segment files by.
func FileName(offset int64) string { return fmt.Sprintf("%020d", offset) }

// ParseFileName returns the offset a segment-style file name starts with.
func ParseFileName(name string) (int64, bool) {
	if len(name) < 20 {
		return 0, false
	}
	off, err := strconv.ParseInt(name[:20], 10, 64)
	if err != nil || off < 0 || (len(name) > 20 && name[20] != '.') {
		return 0, false
	}
	return off, true
}

// segment is one .log file with its indexes. Fields other than size and
// the indexes' contents are set before the segment is published and not
// changed after, except by the appender under Log.mu.
type segment struct {
	dir        string
	baseOffset int64
	file       vfs.File
	size       atomic.Int64 // bytes readers may read
	index      offsetIndex
	timeIndex  timeIndex
	txn        *txnIndex // the aborted-transaction index; never nil

	// Appender state (Log.mu).
	nextOffset             int64 // offset after the last batch
	bytesSinceIndexEntry   int64
	maxTimestamp           int64 // largest batch max timestamp, -1 if none
	offsetOfMaxTimestamp   int64 // base offset of the batch holding it
	firstBatchMaxTimestamp int64 // for segment.ms: -1 until the first batch
	createdMs              int64
	rollJitterMs           int64
	rebuild                bool // indexes missing at load
	// preallocated: the .log file was created at segment.bytes (preallocate)
	// and is longer than size until trimLog cuts it.
	preallocated bool

	deleted atomic.Bool // removed from the log; its files are being deleted
}

func (s *segment) path(suffix string) string {
	return filepath.Join(s.dir, FileName(s.baseOffset)+suffix)
}

func (s *segment) readAt(p []byte, off int64) (int, error) {
	n, err := s.file.ReadAt(p, off)
	if err == io.EOF && n == len(p) {
		err = nil
	}
	return n, err
}

var headerBufs = sync.Pool{New: func() any { return new([record.HeaderSize]byte) }}

// batchPos is where a batch sits in a segment.
type batchPos struct {
	pos int64
	hdr record.Header
}

// scanFrom walks the batch headers of s starting at byte pos, up to limit
// bytes of file, calling fn for each; fn returns false to stop. It reads only
// headers. A batch that does not fit or a bad header ends the walk with
// ErrCorruptSegment.
func (s *segment) scanFrom(pos, limit int64, fn func(bp batchPos) bool) error {
	// The header buffer escapes through File.ReadAt; a pooled one keeps
	// reads free of allocations.
	hp := headerBufs.Get().(*[record.HeaderSize]byte)
	defer headerBufs.Put(hp)
	hb := hp[:]
	for pos < limit {
		if limit-pos < record.HeaderSize {
			return fmt.Errorf("%w: %s: %d stray bytes at position %d", ErrCorruptSegment, s.path(LogSuffix), limit-pos, pos)
		}
		if _, err := s.readAt(hb, pos); err != nil {
			return err
		}
		h, err := record.ParseHeader(hb)
		if err != nil {
			return fmt.Errorf("%w: %s at position %d: %v", ErrCorruptSegment, s.path(LogSuffix), pos, err)
		}
		if int64(h.Size()) > limit-pos {
			return fmt.Errorf("%w: %s: batch at position %d runs past the end", ErrCorruptSegment, s.path(LogSuffix), pos)
		}
		if !fn(batchPos{pos: pos, hdr: h}) {
			return nil
		}
		pos += int64(h.Size())
	}
	return nil
}

// findBatch returns the position of the first batch whose last offset is >=
// target, scanning from the index hint. ok is false when no such batch
// exists below limit.
func (s *segment) findBatch(target, limit int64) (batchPos, bool, error) {
	_, pos := s.index.lookup(target)
	var found batchPos
	var ok bool
	err := s.scanFrom(pos, limit, func(bp batchPos) bool {
		if bp.hdr.LastOffset() >= target {
			found, ok = bp, true
			return false
		}
		return true
	})
	return found, ok, err
}

// checkSealed is the check a sealed segment trusted without a rescan passes
// at load (Kafka's LogSegment.sanityCheck, and more), reading a few entries
// and batch headers rather than every entry:
//   - each index's first and last entries are in order and within the
//     segment (positions below its size, offsets below nextBase, the offset
//     index's positions positive: no entry is ever made for position 0);
//   - the batch at the offset index's last entry ends at that entry's
//     offset, and the walk from it to the end of the file meets whole
//     batches, no more of them than one index.interval.bytes (interval)
//     allows between entries (unless the index is full), and none reaching
//     a timestamp above the time index's last;
//   - the batch the time index's last entry names reaches exactly that
//     entry's timestamp (the segment's largest, which retention goes by),
//     and with no time index entry the first batch has no timestamp.
//
// So a file cut short (by a part entry, by whole entries), padded, filled
// with garbage or pointing past the log fails. An index out of order in its
// middle passes, and is found by the lookups that read it: they ignore it
// from then on and scan the segment (see index).
func (s *segment) checkSealed(nextBase, interval int64) error {
	x, tx := &s.index.index, &s.timeIndex.index
	size := s.size.Load()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrCorruptSegment, s.path(LogSuffix), fmt.Sprintf(format, args...))
	}
	var pos int64
	lastOff := s.baseOffset
	if x.n > 0 {
		if !x.inOrder(nil, x.first[:]) || (x.n > 1 && !x.inOrder(x.first[:], x.last[:])) || positionOf(x.first[:]) <= 0 ||
			positionOf(x.last[:]) >= size || s.baseOffset+relOffsetKey(x.last[:]) >= nextBase {
			return bad("offset index entries out of order or past the log")
		}
		pos, lastOff = positionOf(x.last[:]), s.baseOffset+relOffsetKey(x.last[:])
	}
	maxTS := int64(-1)
	if tx.n > 0 {
		maxTS = timestampKey(tx.last[:])
	}
	// The walk from the last entry also checks that the segment ends with a
	// whole batch: a recovery-point checkpoint older than a truncation can
	// vouch for a segment whose tail was rewritten and lost.
	var problem error
	var tail, lastSize int64
	err := s.scanFrom(pos, size, func(bp batchPos) bool {
		switch h := &bp.hdr; {
		case bp.pos == pos && x.n > 0 && h.LastOffset() != lastOff:
			problem = bad("the last offset index entry names offset %d, its batch ends at %d", lastOff, h.LastOffset())
		case h.MaxTimestamp > maxTS:
			problem = bad("a batch at offset %d reaches timestamp %d, above the time index's last %d", h.BaseOffset, h.MaxTimestamp, maxTS)
		}
		tail += int64(bp.hdr.Size())
		lastSize = int64(bp.hdr.Size())
		return problem == nil
	})
	if err != nil {
		return err
	}
	if problem != nil {
		return problem
	}
	if tail-lastSize > max(interval, 0) && x.n < x.maxEntries && tx.n < tx.maxEntries {
		return bad("%d bytes of batches after the last offset index entry: entries are missing", tail-lastSize)
	}
	if tx.n == 0 {
		if size == 0 {
			return nil
		}
		bp, ok, err := s.findBatch(s.baseOffset, size)
		if err == nil && ok && bp.hdr.MaxTimestamp >= 0 {
			return bad("no time index entry, but the first batch has a timestamp")
		}
		return err
	}
	ts, off := timestampKey(tx.last[:]), s.baseOffset+timeOffsetKey(tx.last[:])
	if !tx.inOrder(nil, tx.first[:]) || (tx.n > 1 && !tx.inOrder(tx.first[:], tx.last[:])) || off >= nextBase {
		return bad("time index entries out of order or past the log")
	}
	bp, ok, err := s.findBatch(off, size)
	if err != nil {
		return err
	}
	if !ok || bp.hdr.BaseOffset > off || bp.hdr.MaxTimestamp != ts {
		return bad("the last time index entry (%d at offset %d) does not match its batch", ts, off)
	}
	return nil
}

// trimLog cuts a preallocated .log file to the bytes written (Kafka's
// FileRecords.trim), when the segment rolls and when the log closes. The
// appender calls it under Log.mu; readers never read past size.
func (s *segment) trimLog() error {
	if !s.preallocated {
		return nil
	}
	if err := s.file.Truncate(s.size.Load()); err != nil {
		return fmt.Errorf("trim %s: %w", s.path(LogSuffix), err)
	}
	s.preallocated = false
	return nil
}

func (s *segment) close() error {
	if s.file == nil {
		return nil
	}
	err := s.file.Close()
	if s.txn != nil {
		if terr := s.txn.close(); terr != nil && err == nil {
			err = terr
		}
	}
	return err
}

// segmentSuffixes lists the files that belong to a segment with this base.
// The .txnindex comes first: a segment being removed loses it before its
// .log, so after a crash a .txnindex whose .log is gone is never an old
// one (completeSwap relies on it).
func segmentSuffixes() []string {
	return []string{TxnIndexSuffix, LogSuffix, IndexSuffix, TimeIndexSuffix}
}

func hasSuffixAny(name string, sfx ...string) bool {
	for _, s := range sfx {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}
