package source

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/gregor-broker/gregor/internal/admin"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/record"
)

// Bounds of one records page (admin.RecordQuery documents them).
const (
	defaultPageRecords = 50
	maxPageRecords     = 1000
	defaultPageBytes   = 1 << 20
	maxPageBytes       = 4 << 20
	// readChunk bounds one log read of a page's scan.
	readChunk = 256 << 10
)

// Records reads a page of records from a hosted partition, up to its high
// watermark or, read_committed, its last stable offset. Control batches
// (transaction markers) are scanned but not shown; read_committed also
// skips the batches of aborted transactions, from the log's
// aborted-transaction index, as a read_committed consumer does.
func (s *Source) Records(ctx context.Context, q admin.RecordQuery) (admin.RecordPage, error) {
	h, err := s.hosted(q.Topic, q.Partition)
	if err != nil {
		return admin.RecordPage{}, err
	}
	maxRecords, maxBytes := q.MaxRecords, q.MaxBytes
	if maxRecords <= 0 {
		maxRecords = defaultPageRecords
	}
	if maxBytes <= 0 {
		maxBytes = defaultPageBytes
	}
	maxRecords, maxBytes = min(maxRecords, maxPageRecords), min(maxBytes, maxPageBytes)

	l, snap := h.part.Log, &h.snap
	page := admin.RecordPage{Topic: q.Topic, Partition: q.Partition, Bound: snap.HighWatermark, Records: []admin.RecordView{}}
	if q.ReadCommitted {
		page.Bound = snap.LastStableOffset
	}
	start := q.Offset
	if q.TimestampMs >= 0 {
		found, ok, err := l.FindOffsetByTimestamp(q.TimestampMs)
		if err != nil {
			return page, fmt.Errorf("finding offset for timestamp %d in %s: %w", q.TimestampMs, h.tp(), err)
		}
		start = snap.LogEndOffset // no record that late
		if ok {
			start = found.Offset
		}
	}
	start = max(start, snap.LogStartOffset)
	page.StartOffset, page.NextOffset = start, start
	sc := pageScan{page: &page, maxRecords: maxRecords, maxBytes: maxBytes, maxOut: int(snap.Config.MaxMessageBytes)*64 + 1<<20}
	if q.ReadCommitted {
		if sc.aborted, err = l.AbortedTransactions(start, page.Bound); err != nil {
			return page, fmt.Errorf("reading the aborted transactions of %s: %w", h.tp(), err)
		}
	}
	if err := sc.run(ctx, l); err != nil {
		return page, fmt.Errorf("reading %s from offset %d: %w", h.tp(), page.NextOffset, err)
	}
	return page, nil
}

// pageScan fills a RecordPage from a log, batch by batch.
type pageScan struct {
	page       *admin.RecordPage
	maxRecords int
	maxBytes   int
	maxOut     int // decompression cap
	// held is the bytes of keys, values and headers in page.Records; a
	// compressed batch may hold far more than it scans, so maxBytes bounds
	// it too (past the first record).
	held int
	// full is the reason the page is full ("max_records", "max_bytes"), or "".
	full string
	// aborted are the aborted transactions the page's range overlaps
	// (read_committed only): their batches are skipped.
	aborted []log.AbortedTxn
}

// isAborted reports whether a transactional batch belongs to an aborted
// transaction (between its first offset and its ABORT marker).
func (sc *pageScan) isAborted(h *record.Header) bool {
	if !h.Transactional() {
		return false
	}
	for _, a := range sc.aborted {
		if a.ProducerID == h.ProducerID && a.FirstOffset <= h.BaseOffset && h.BaseOffset < a.LastOffset {
			return true
		}
	}
	return false
}

func (sc *pageScan) run(ctx context.Context, l *log.Log) error {
	page := sc.page
	var buf []byte
	// A retention pass or DeleteRecords may move the log start offset past
	// the scan; it then resumes from the new log start, a bounded number of
	// times.
	for restarts := 0; ; {
		switch {
		case ctx.Err() != nil:
			page.StopReason = "canceled"
			return nil
		case sc.full != "":
			page.StopReason = sc.full
			return nil
		case page.NextOffset >= page.Bound:
			page.StopReason = "end"
			return nil
		case page.ScannedBytes >= int64(sc.maxBytes):
			page.StopReason = "max_bytes"
			return nil
		}
		chunk := min(sc.maxBytes-int(page.ScannedBytes), readChunk)
		data, err := l.Read(buf[:0], page.NextOffset, chunk, page.Bound, true)
		if errors.Is(err, log.ErrOffsetOutOfRange) && restarts < 3 && l.LogStartOffset() > page.NextOffset {
			restarts++
			page.NextOffset = l.LogStartOffset()
			continue
		}
		if err != nil {
			return err
		}
		if len(data) == 0 {
			page.StopReason = "end"
			return nil
		}
		buf = data
		for len(data) > 0 && sc.full == "" {
			batch, rest, ok := record.Split(data)
			if !ok {
				return fmt.Errorf("%w: partial batch in a log read", record.ErrCorrupt)
			}
			data = rest
			if err := sc.batch(batch); err != nil {
				return err
			}
		}
	}
}

// batch adds the records of one batch at or above NextOffset.
func (sc *pageScan) batch(batch []byte) error {
	page := sc.page
	h, err := record.ParseHeader(batch)
	if err != nil {
		return err
	}
	page.ScannedBytes += int64(len(batch))
	if h.Control() || sc.isAborted(&h) {
		page.NextOffset = max(page.NextOffset, h.NextOffset())
		return nil
	}
	from := page.NextOffset
	err = record.Iterate(batch, sc.maxOut, func(r *record.Record) error {
		off := h.BaseOffset + int64(r.OffsetDelta)
		if off < from {
			return nil
		}
		n := len(r.Key) + len(r.Value)
		for _, hd := range r.Headers {
			n += len(hd.Key) + len(hd.Value)
		}
		switch {
		case len(page.Records) >= sc.maxRecords:
			sc.full = "max_records"
		case len(page.Records) > 0 && sc.held+n > sc.maxBytes:
			sc.full = "max_bytes"
		}
		if sc.full != "" {
			page.NextOffset = off
			return errPageFull
		}
		sc.held += n
		page.Records = append(page.Records, recordView(&h, r, off))
		page.NextOffset = off + 1
		return nil
	})
	if errors.Is(err, errPageFull) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
	}
	// Offsets a batch skips (compaction) belong to it.
	page.NextOffset = max(page.NextOffset, h.NextOffset())
	return nil
}

var errPageFull = errors.New("page full")

func recordView(h *record.Header, r *record.Record, off int64) admin.RecordView {
	v := admin.RecordView{Offset: off, TimestampMs: h.BaseTimestamp + r.TimestampDelta, TimestampType: "CreateTime",
		LeaderEpoch: h.LeaderEpoch, ProducerID: h.ProducerID, Transactional: h.Transactional(), Compression: h.Codec().String(),
		Headers: []admin.HeaderView{}}
	if h.LogAppendTime() {
		v.TimestampMs, v.TimestampType = h.MaxTimestamp, "LogAppendTime"
	}
	v.KeyNull = r.Key == nil
	v.Key, v.KeyEncoding = encodeBytes(r.Key)
	v.ValueNull = r.Value == nil
	v.Value, v.ValueEncoding = encodeBytes(r.Value)
	for _, hd := range r.Headers {
		hv := admin.HeaderView{Key: hd.Key, ValueNull: hd.Value == nil}
		hv.Value, hv.ValueEncoding = encodeBytes(hd.Value)
		v.Headers = append(v.Headers, hv)
	}
	return v
}

// encodeBytes shows b as text when it is valid UTF-8, else as base64.
func encodeBytes(b []byte) (string, string) {
	if utf8.Valid(b) {
		return string(b), "utf8"
	}
	return base64.StdEncoding.EncodeToString(b), "base64"
}
