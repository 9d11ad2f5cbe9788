package main

// `gregor log dump`: decode a partition's files offline, like Kafka's
// kafka-dump-log.sh. Files are read directly (no broker); a segment is
// streamed batch by batch, so memory stays bounded by the largest batch.
//
// On-disk formats (Kafka's, big-endian):
//   .log        v2 record batches back to back (see internal/record)
//   .index      8-byte entries: int32 offset relative to the segment's base
//               offset, int32 byte position in the .log
//   .timeindex  12-byte entries: int64 timestamp, int32 relative offset
//   .txnindex   34-byte entries: int16 version, int64 producer id, int64
//               first offset, int64 last offset, int64 last stable offset
// Index files may be preallocated: an all-zero entry ends the entries.

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/gregor-broker/gregor/internal/record"
)

type dumpOptions struct {
	records       bool // print each record, not just batches
	offsetsDecode bool
	txnDecode     bool
	maxBytes      int64
	maxBatch      int // decompression cap per batch
	json          bool
}

func logCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "log",
		Short: "Offline tools for partition files",
	}
	cmd.AddCommand(logDumpCmd())
	return cmd
}

func logDumpCmd() *cobra.Command {
	var (
		o      dumpOptions
		output string
	)
	cmd := &cobra.Command{
		Use:   "dump FILE...",
		Short: "Decode .log, .index, .timeindex and .txnindex files offline (like kafka-dump-log.sh)",
		Long: `Decode a partition's files without a broker:

  .log        every batch: offsets, count, position, size, leader epoch,
              producer id/epoch/sequences, transactional/control flags,
              compression, timestamps and whether its CRC is valid;
              with -d each record (key, value, headers, timestamp)
  .index      offset → position entries, checked for order and, when the
              segment's .log is next to it, that each points at a batch
  .timeindex  timestamp → offset entries, checked for order
  .txnindex   aborted transactions

--offsets-decoder decodes __consumer_offsets records (offset commits, group
metadata with member subscriptions and assignments) and
--transaction-log-decoder __transaction_state records; both are switched on
by themselves for files in a __consumer_offsets-N or __transaction_state-N
directory, and imply -d. Transaction markers are always decoded.

-o json streams one JSON array with a document per file.`,
		Example: `  gregor log dump data/orders-0/00000000000000000000.log -d
  gregor log dump data/__consumer_offsets-7/*.log
  gregor log dump data/orders-0/00000000000000000000.index -o json`,
		Args: cobra.MinimumNArgs(1),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return []string{"log", "index", "timeindex", "txnindex"}, cobra.ShellCompDirectiveFilterFileExt
		},
		RunE: func(cmd *cobra.Command, files []string) error {
			return logDump(cmd, files, output, o)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&output, "output", "o", "table", "output format: table (kafka-dump-log's layout) or json")
	fs.BoolVarP(&o.records, "print-data-log", "d", false, "print every record, not only batch headers")
	fs.BoolVar(&o.offsetsDecode, "offsets-decoder", false, "decode records as __consumer_offsets records (implies -d)")
	fs.BoolVar(&o.txnDecode, "transaction-log-decoder", false, "decode records as __transaction_state records (implies -d)")
	fs.Int64Var(&o.maxBytes, "max-bytes", 0, "read at most this many bytes of a .log (0: all)")
	fs.IntVar(&o.maxBatch, "max-batch-bytes", 64<<20, "refuse to decompress a batch to more than this")
	return cmd
}

// logDump dumps every file, going on past a file that fails.
func logDump(cmd *cobra.Command, files []string, output string, o dumpOptions) error {
	switch output {
	case "table":
	case "json":
		o.json = true
	default:
		return fmt.Errorf("--output %q: want table or json", output)
	}
	w := cmd.OutOrStdout()
	var failed failures
	if o.json {
		fmt.Fprintln(w, "[")
	}
	for i, path := range files {
		if o.json && i > 0 {
			fmt.Fprintln(w, ",")
		}
		if err := dumpFile(w, path, o); err != nil {
			failed++
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: %v\n", path, err)
		}
	}
	if o.json {
		fmt.Fprintln(w, "\n]")
	}
	return failed.err("files")
}

// segmentBase parses the base offset from a segment file name
// (00000000000000000042.log); ok is false for other names.
func segmentBase(path string) (int64, bool) {
	name := filepath.Base(path)
	stem := strings.TrimSuffix(name, filepath.Ext(name))
	if len(stem) != 20 {
		return 0, false
	}
	n, err := strconv.ParseInt(stem, 10, 64)
	return n, err == nil
}

func dumpFile(w io.Writer, path string, o dumpOptions) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	dir := filepath.Base(filepath.Dir(path))
	if strings.HasPrefix(dir, "__consumer_offsets-") {
		o.offsetsDecode = true
	}
	if strings.HasPrefix(dir, "__transaction_state-") {
		o.txnDecode = true
	}
	o.records = o.records || o.offsetsDecode || o.txnDecode
	base, named := segmentBase(path)
	ext := filepath.Ext(path)
	if !named && ext != ".log" {
		return fmt.Errorf("not a segment file name (want 20-digit base offset, like 00000000000000000000%s)", ext)
	}
	d := newDumper(w, path, o.json)
	switch ext {
	case ".log":
		return d.log(f, fi.Size(), base, o)
	case ".index":
		return d.offsetIndex(f, fi.Size(), base)
	case ".timeindex":
		return d.timeIndex(f, fi.Size(), base)
	case ".txnindex":
		return d.txnIndex(f, fi.Size())
	}
	return fmt.Errorf("unsupported file type %q (want .log, .index, .timeindex or .txnindex)", ext)
}

// dumper writes one file's dump as text or as a streamed JSON document.
type dumper struct {
	w     io.Writer
	path  string
	json  bool
	items int // entries written to the JSON array so far
}

func newDumper(w io.Writer, path string, asJSON bool) *dumper {
	return &dumper{w: w, path: path, json: asJSON}
}

// begin starts a file: the text heading, or the JSON document up to its
// entries array.
func (d *dumper) begin(kind string, fields map[string]any, arrayName string) {
	if !d.json {
		fmt.Fprintf(d.w, "Dumping %s\n", d.path)
		return
	}
	head, _ := json.Marshal(d.path)
	fmt.Fprintf(d.w, "{\"file\":%s,\"type\":%q", head, kind)
	for _, k := range sortedKeys(fields) {
		v, _ := json.Marshal(fields[k])
		fmt.Fprintf(d.w, ",%q:%s", k, v)
	}
	fmt.Fprintf(d.w, ",%q:[", arrayName)
}

// item writes one array entry in JSON mode.
func (d *dumper) item(v any) error {
	if d.items > 0 {
		fmt.Fprint(d.w, ",")
	}
	d.items++
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(d.w, "\n%s", b)
	return err
}

// end closes the document with a summary and any problems found.
func (d *dumper) end(summary map[string]any, problems []string) {
	if !d.json {
		for _, p := range problems {
			fmt.Fprintf(d.w, "problem: %s\n", p)
		}
		return
	}
	fmt.Fprint(d.w, "]")
	for _, k := range sortedKeys(summary) {
		v, _ := json.Marshal(summary[k])
		fmt.Fprintf(d.w, ",%q:%s", k, v)
	}
	if problems == nil {
		problems = []string{}
	}
	p, _ := json.Marshal(problems)
	fmt.Fprintf(d.w, ",\"problems\":%s}", p)
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

// dumpBatch is one batch of a .log.
type dumpBatch struct {
	BaseOffset           int64        `json:"base_offset"`
	LastOffset           int64        `json:"last_offset"`
	Count                int32        `json:"count"`
	Position             int64        `json:"position"`
	Size                 int          `json:"size"`
	PartitionLeaderEpoch int32        `json:"partition_leader_epoch"`
	Magic                int8         `json:"magic"`
	CRC                  uint32       `json:"crc"`
	CRCValid             bool         `json:"crc_valid"`
	Compression          string       `json:"compression"`
	TimestampType        string       `json:"timestamp_type"`
	BaseTimestamp        int64        `json:"base_timestamp"`
	MaxTimestamp         int64        `json:"max_timestamp"`
	DeleteHorizonMs      *int64       `json:"delete_horizon_ms"`
	ProducerID           int64        `json:"producer_id"`
	ProducerEpoch        int16        `json:"producer_epoch"`
	BaseSequence         int32        `json:"base_sequence"`
	LastSequence         int32        `json:"last_sequence"`
	Transactional        bool         `json:"transactional"`
	Control              bool         `json:"control"`
	Records              []dumpRecord `json:"records,omitempty"`
	Error                string       `json:"error,omitempty"`
}

// dumpRecord is one record of a batch.
type dumpRecord struct {
	Offset        int64        `json:"offset"`
	Timestamp     int64        `json:"timestamp"`
	Sequence      int32        `json:"sequence"`
	KeySize       int          `json:"key_size"`
	ValueSize     int          `json:"value_size"`
	Key           *string      `json:"key"`
	KeyEncoding   string       `json:"key_encoding,omitempty"`
	Value         *string      `json:"value"`
	ValueEncoding string       `json:"value_encoding,omitempty"`
	Headers       []jsonHeader `json:"headers,omitempty"`
	Control       decoded      `json:"control,omitempty"`
	DecodedKey    decoded      `json:"decoded_key,omitempty"`
	DecodedValue  decoded      `json:"decoded_value,omitempty"`
	DecodeError   string       `json:"decode_error,omitempty"`
}

func (d *dumper) log(f *os.File, size, base int64, o dumpOptions) error {
	limit := size
	if o.maxBytes > 0 {
		limit = min(size, o.maxBytes)
	}
	d.begin("log", map[string]any{"base_offset": base, "size": size}, "batches")
	if !d.json {
		fmt.Fprintf(d.w, "Log starting offset: %d\n", base)
	}
	var problems []string
	var (
		pos, batches, records int64
		buf                   = make([]byte, record.HeaderSize)
		prevNext              = int64(-1)
	)
	for pos < limit {
		if limit-pos < record.LogOverhead {
			problems = append(problems, fmt.Sprintf("%d stray bytes at position %d", limit-pos, pos))
			break
		}
		if _, err := f.ReadAt(buf[:record.LogOverhead], pos); err != nil {
			return err
		}
		n := int64(int32(binary.BigEndian.Uint32(buf[8:]))) + record.LogOverhead
		if n < record.HeaderSize {
			problems = append(problems, fmt.Sprintf("position %d: batch length %d is below the header size; the rest is unreadable", pos, n-record.LogOverhead))
			break
		}
		if pos+n > size {
			problems = append(problems, fmt.Sprintf("position %d: batch of %d bytes is truncated (%d bytes left in the file)", pos, n, size-pos))
			break
		}
		if pos+n > limit {
			break
		}
		if int64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		batch := buf[:n]
		if _, err := f.ReadAt(batch, pos); err != nil {
			return err
		}
		db, err := decodeBatch(batch, pos, o)
		if err != nil {
			problems = append(problems, fmt.Sprintf("position %d: %v", pos, err))
			break
		}
		if !db.CRCValid {
			problems = append(problems, fmt.Sprintf("position %d: CRC mismatch (stored %d)", pos, db.CRC))
		}
		if db.Error != "" {
			problems = append(problems, fmt.Sprintf("position %d: %s", pos, db.Error))
		}
		if prevNext >= 0 && db.BaseOffset < prevNext {
			problems = append(problems, fmt.Sprintf("position %d: base offset %d is below the previous batch's next offset %d", pos, db.BaseOffset, prevNext))
		}
		prevNext = db.LastOffset + 1
		batches++
		records += int64(db.Count)
		if d.json {
			if err := d.item(db); err != nil {
				return err
			}
		} else {
			printBatchText(d.w, db)
		}
		pos += n
	}
	d.end(map[string]any{"batches_read": batches, "records": records, "bytes_read": pos}, problems)
	if len(problems) > 0 {
		return errors.New(problems[0])
	}
	return nil
}

func decodeBatch(batch []byte, pos int64, o dumpOptions) (dumpBatch, error) {
	h, err := record.ParseHeader(batch)
	if err != nil {
		return dumpBatch{}, err
	}
	db := dumpBatch{BaseOffset: h.BaseOffset, LastOffset: h.LastOffset(), Count: h.NumRecords, Position: pos, Size: h.Size(),
		PartitionLeaderEpoch: h.LeaderEpoch, Magic: h.Magic, CRC: h.CRC, CRCValid: record.ComputeCRC(batch) == h.CRC,
		Compression: h.Codec().String(), TimestampType: "CreateTime", BaseTimestamp: h.BaseTimestamp, MaxTimestamp: h.MaxTimestamp,
		ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, BaseSequence: h.BaseSequence, LastSequence: h.LastSequence(),
		Transactional: h.Transactional(), Control: h.Control()}
	if h.LogAppendTime() {
		db.TimestampType = "LogAppendTime"
	}
	if h.HasDeleteHorizon() {
		dh := h.BaseTimestamp
		db.DeleteHorizonMs = &dh
	}
	if !o.records {
		return db, nil
	}
	err = record.Iterate(batch, o.maxBatch, func(r *record.Record) error {
		dr := dumpRecord{Offset: h.BaseOffset + int64(r.OffsetDelta), Timestamp: h.BaseTimestamp + r.TimestampDelta,
			Sequence: -1, KeySize: int(nullLen(r.Key)), ValueSize: int(nullLen(r.Value))}
		if h.LogAppendTime() {
			dr.Timestamp = h.MaxTimestamp
		}
		if h.BaseSequence != record.NoSequence {
			dr.Sequence = record.IncrementSequence(h.BaseSequence, r.OffsetDelta)
		}
		dr.Key, dr.KeyEncoding = jsonBytes(r.Key)
		dr.Value, dr.ValueEncoding = jsonBytes(r.Value)
		for _, rh := range r.Headers {
			jh := jsonHeader{Key: rh.Key}
			jh.Value, jh.Encoding = jsonBytes(rh.Value)
			dr.Headers = append(dr.Headers, jh)
		}
		var derr error
		switch {
		case h.Control():
			dr.Control, derr = decodeControl(r.Key, r.Value)
		case o.offsetsDecode:
			var kind string
			kind, dr.DecodedKey, derr = decodeOffsetsKey(r.Key)
			if derr == nil {
				dr.DecodedValue, derr = decodeOffsetsValue(kind, r.Value)
			}
		case o.txnDecode:
			dr.DecodedKey, derr = decodeTxnKey(r.Key)
			if derr == nil {
				dr.DecodedValue, derr = decodeTxnValue(r.Value)
			}
		}
		if derr != nil {
			dr.DecodeError = derr.Error()
		}
		db.Records = append(db.Records, dr)
		return nil
	})
	if err != nil {
		db.Error = fmt.Sprintf("records: %v", err)
	}
	return db, nil
}

func printBatchText(w io.Writer, b dumpBatch) {
	horizon := "none"
	if b.DeleteHorizonMs != nil {
		horizon = fmt.Sprint(*b.DeleteHorizonMs)
	}
	fmt.Fprintf(w, "baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d producerId: %d producerEpoch: %d "+
		"partitionLeaderEpoch: %d isTransactional: %t isControl: %t deleteHorizonMs: %s position: %d %s: %d size: %d magic: %d "+
		"compresscodec: %s crc: %d isValid: %t\n",
		b.BaseOffset, b.LastOffset, b.Count, b.BaseSequence, b.LastSequence, b.ProducerID, b.ProducerEpoch,
		b.PartitionLeaderEpoch, b.Transactional, b.Control, horizon, b.Position, b.TimestampType, b.MaxTimestamp, b.Size, b.Magic,
		b.Compression, b.CRC, b.CRCValid)
	for _, r := range b.Records {
		var sb strings.Builder
		fmt.Fprintf(&sb, "| offset: %d %s: %d keySize: %d valueSize: %d sequence: %d headerKeys: [", r.Offset, b.TimestampType,
			r.Timestamp, r.KeySize, r.ValueSize, r.Sequence)
		for i, h := range r.Headers {
			if i > 0 {
				sb.WriteString(",")
			}
			sb.WriteString(h.Key)
		}
		sb.WriteString("]")
		switch {
		case r.Control != nil:
			fmt.Fprintf(&sb, " endTxnMarker: %s", compactJSON(r.Control))
		case r.DecodedKey != nil:
			fmt.Fprintf(&sb, " key: %s payload: %s", compactJSON(r.DecodedKey), compactJSON(r.DecodedValue))
		default:
			fmt.Fprintf(&sb, " key: %s payload: %s", textField(r.Key, r.KeyEncoding), textField(r.Value, r.ValueEncoding))
		}
		if r.DecodeError != "" {
			fmt.Fprintf(&sb, " decodeError: %q", r.DecodeError)
		}
		fmt.Fprintln(w, sb.String())
	}
}

func compactJSON(v decoded) string {
	if v == nil {
		return "null"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%q", err.Error())
	}
	return string(b)
}

// textField prints a key or value on one line: as is when it is plain
// printable text, quoted otherwise, "null" for null.
func textField(s *string, encoding string) string {
	if s == nil {
		return "null"
	}
	if encoding != "" {
		return encoding + ":" + *s
	}
	plain := *s != "" && *s != "null" && utf8.ValidString(*s)
	for _, r := range *s {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			plain = false
			break
		}
	}
	if plain {
		return *s
	}
	return strconv.Quote(*s)
}

// readEntries reads a whole index file; they are small (segment.index.bytes,
// 10 MiB by default).
func readEntries(f *os.File, size int64, entrySize int) ([]byte, int64, error) {
	const maxIndex = 1 << 30
	if size > maxIndex {
		return nil, 0, fmt.Errorf("index of %d bytes is larger than any index Kafka writes", size)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, 0, err
	}
	return b, size % int64(entrySize), nil
}

type indexEntry struct {
	Offset   int64 `json:"offset"`
	Position int64 `json:"position"`
}

func (d *dumper) offsetIndex(f *os.File, size, base int64) error {
	b, stray, err := readEntries(f, size, 8)
	if err != nil {
		return err
	}
	d.begin("index", map[string]any{"base_offset": base, "size": size}, "entries")
	var problems []string
	if stray != 0 {
		problems = append(problems, fmt.Sprintf("size %d is not a multiple of the 8-byte entry", size))
	}
	logPath := strings.TrimSuffix(d.path, ".index") + ".log"
	lf, lerr := os.Open(logPath)
	if lerr == nil {
		defer lf.Close()
	}
	var entries, padding int64
	prev := indexEntry{Offset: -1, Position: -1}
	for i := 0; i+8 <= len(b); i += 8 {
		rel, p := binary.BigEndian.Uint32(b[i:]), binary.BigEndian.Uint32(b[i+4:])
		if rel == 0 && p == 0 {
			padding = int64(len(b) - i)
			break
		}
		e := indexEntry{Offset: base + int64(rel), Position: int64(p)}
		if e.Offset <= prev.Offset || e.Position <= prev.Position {
			problems = append(problems, fmt.Sprintf("entry %d (offset %d, position %d) does not follow entry %d (offset %d, position %d)",
				entries, e.Offset, e.Position, entries-1, prev.Offset, prev.Position))
		}
		if lf != nil {
			if msg := checkIndexTarget(lf, e); msg != "" {
				problems = append(problems, msg)
			}
		}
		prev = e
		entries++
		if d.json {
			if err := d.item(e); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(d.w, "offset: %d position: %d\n", e.Offset, e.Position)
		}
	}
	summary := map[string]any{"entries_read": entries, "zero_padding_bytes": padding, "checked_against_log": lf != nil}
	if !d.json {
		fmt.Fprintf(d.w, "%d entries, %d bytes of preallocated padding", entries, padding)
		if lf != nil {
			fmt.Fprintf(d.w, "; checked against %s", filepath.Base(logPath))
		}
		fmt.Fprintln(d.w)
	}
	d.end(summary, problems)
	if len(problems) > 0 {
		return errors.New(problems[0])
	}
	return nil
}

// checkIndexTarget verifies an index entry points at a batch whose base
// offset is at or below the entry's offset. (The entry names the last offset
// of the append that wrote that batch, which may end in a later batch.)
func checkIndexTarget(lf *os.File, e indexEntry) string {
	hdr := make([]byte, record.HeaderSize)
	if _, err := lf.ReadAt(hdr, e.Position); err != nil {
		return fmt.Sprintf("index offset %d: position %d is not in the log (%v)", e.Offset, e.Position, err)
	}
	h, err := record.ParseHeader(hdr)
	if err != nil {
		return fmt.Sprintf("index offset %d: no batch at position %d: %v", e.Offset, e.Position, err)
	}
	if h.BaseOffset > e.Offset {
		return fmt.Sprintf("index offset %d: the batch at position %d starts at offset %d, after it", e.Offset, e.Position, h.BaseOffset)
	}
	return ""
}

type timeIndexEntry struct {
	Timestamp int64 `json:"timestamp"`
	Offset    int64 `json:"offset"`
}

func (d *dumper) timeIndex(f *os.File, size, base int64) error {
	b, stray, err := readEntries(f, size, 12)
	if err != nil {
		return err
	}
	d.begin("timeindex", map[string]any{"base_offset": base, "size": size}, "entries")
	var problems []string
	if stray != 0 {
		problems = append(problems, fmt.Sprintf("size %d is not a multiple of the 12-byte entry", size))
	}
	var entries, padding int64
	prev := timeIndexEntry{Timestamp: -1 << 63, Offset: -1}
	for i := 0; i+12 <= len(b); i += 12 {
		ts, rel := int64(binary.BigEndian.Uint64(b[i:])), binary.BigEndian.Uint32(b[i+8:])
		if ts == 0 && rel == 0 {
			padding = int64(len(b) - i)
			break
		}
		e := timeIndexEntry{Timestamp: ts, Offset: base + int64(rel)}
		if e.Timestamp < prev.Timestamp || e.Offset < prev.Offset || e.Timestamp == prev.Timestamp && e.Offset == prev.Offset {
			problems = append(problems, fmt.Sprintf("entry %d (timestamp %d, offset %d) does not follow entry %d (timestamp %d, offset %d)",
				entries, e.Timestamp, e.Offset, entries-1, prev.Timestamp, prev.Offset))
		}
		prev = e
		entries++
		if d.json {
			if err := d.item(e); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(d.w, "timestamp: %d offset: %d\n", e.Timestamp, e.Offset)
		}
	}
	if !d.json {
		fmt.Fprintf(d.w, "%d entries, %d bytes of preallocated padding\n", entries, padding)
	}
	d.end(map[string]any{"entries_read": entries, "zero_padding_bytes": padding}, problems)
	if len(problems) > 0 {
		return errors.New(problems[0])
	}
	return nil
}

type abortedTxn struct {
	Version          int16 `json:"version"`
	ProducerID       int64 `json:"producer_id"`
	FirstOffset      int64 `json:"first_offset"`
	LastOffset       int64 `json:"last_offset"`
	LastStableOffset int64 `json:"last_stable_offset"`
}

func (d *dumper) txnIndex(f *os.File, size int64) error {
	const entrySize = 34
	b, stray, err := readEntries(f, size, entrySize)
	if err != nil {
		return err
	}
	d.begin("txnindex", map[string]any{"size": size}, "aborted_transactions")
	var problems []string
	if stray != 0 {
		problems = append(problems, fmt.Sprintf("size %d is not a multiple of the %d-byte entry", size, entrySize))
	}
	var entries int64
	for i := 0; i+entrySize <= len(b); i += entrySize {
		a := abortedTxn{Version: int16(binary.BigEndian.Uint16(b[i:])), ProducerID: int64(binary.BigEndian.Uint64(b[i+2:])),
			FirstOffset: int64(binary.BigEndian.Uint64(b[i+10:])), LastOffset: int64(binary.BigEndian.Uint64(b[i+18:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(b[i+26:]))}
		if a.Version != 0 {
			problems = append(problems, fmt.Sprintf("entry %d: unknown version %d", entries, a.Version))
		}
		if a.FirstOffset > a.LastOffset {
			problems = append(problems, fmt.Sprintf("entry %d: first offset %d after last offset %d", entries, a.FirstOffset, a.LastOffset))
		}
		entries++
		if d.json {
			if err := d.item(a); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(d.w, "version: %d producerId: %d firstOffset: %d lastOffset: %d lastStableOffset: %d\n",
				a.Version, a.ProducerID, a.FirstOffset, a.LastOffset, a.LastStableOffset)
		}
	}
	if !d.json {
		fmt.Fprintf(d.w, "%d aborted transactions\n", entries)
	}
	d.end(map[string]any{"entries_read": entries}, problems)
	if len(problems) > 0 {
		return errors.New(problems[0])
	}
	return nil
}
