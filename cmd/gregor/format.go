package main

// kcat-style format strings: an output format for consume (%t %p %o %k %s
// %T %h …) and an input format for produce (%k %v %T %p %h separated by
// literal delimiters).

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// fmtItem is either literal text or one %-directive.
type fmtItem struct {
	lit string
	dir byte // 0 for a literal
}

// parseFormat splits a format into literals and the directives in allowed.
// Escapes: \n \r \t \0 \\ and %% for a literal percent sign.
func parseFormat(s, allowed string) ([]fmtItem, error) {
	var items []fmtItem
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			items = append(items, fmtItem{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case 'n':
				lit.WriteByte('\n')
			case 'r':
				lit.WriteByte('\r')
			case 't':
				lit.WriteByte('\t')
			case '0':
				lit.WriteByte(0)
			case '\\':
				lit.WriteByte('\\')
			default:
				return nil, fmt.Errorf("format %q: unknown escape \\%c", s, s[i])
			}
		case c == '%':
			if i+1 >= len(s) {
				return nil, fmt.Errorf("format %q: ends in a lone %%", s)
			}
			i++
			if s[i] == '%' {
				lit.WriteByte('%')
				continue
			}
			if !strings.ContainsRune(allowed, rune(s[i])) {
				return nil, fmt.Errorf("format %q: unknown directive %%%c (known: %s)", s, s[i], directiveList(allowed))
			}
			flush()
			items = append(items, fmtItem{dir: s[i]})
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	return items, nil
}

func directiveList(allowed string) string {
	var parts []string
	for _, c := range allowed {
		parts = append(parts, "%"+string(c))
	}
	return strings.Join(parts, " ")
}

// outputDirectives are those consume understands, as in kcat: topic,
// partition, offset, key, key length, value, value length, timestamp (ms),
// headers, leader epoch.
const outputDirectives = "tpokKsSThe"

// recordFormatter prints records by an output format.
type recordFormatter struct {
	items []fmtItem
	null  string // printed for a null key or value
}

func newRecordFormatter(format, null string) (*recordFormatter, error) {
	items, err := parseFormat(format, outputDirectives)
	if err != nil {
		return nil, err
	}
	return &recordFormatter{items: items, null: null}, nil
}

func (f *recordFormatter) nullable(b []byte) []byte {
	if b == nil {
		return []byte(f.null)
	}
	return b
}

// append formats r onto buf.
func (f *recordFormatter) append(buf []byte, r *kgo.Record) []byte {
	for _, it := range f.items {
		switch it.dir {
		case 0:
			buf = append(buf, it.lit...)
		case 't':
			buf = append(buf, r.Topic...)
		case 'p':
			buf = strconv.AppendInt(buf, int64(r.Partition), 10)
		case 'o':
			buf = strconv.AppendInt(buf, r.Offset, 10)
		case 'k':
			buf = append(buf, f.nullable(r.Key)...)
		case 'K':
			buf = strconv.AppendInt(buf, nullLen(r.Key), 10)
		case 's':
			buf = append(buf, f.nullable(r.Value)...)
		case 'S':
			buf = strconv.AppendInt(buf, nullLen(r.Value), 10)
		case 'T':
			buf = strconv.AppendInt(buf, r.Timestamp.UnixMilli(), 10)
		case 'e':
			buf = strconv.AppendInt(buf, int64(r.LeaderEpoch), 10)
		case 'h':
			for i, h := range r.Headers {
				if i > 0 {
					buf = append(buf, ',')
				}
				buf = append(buf, h.Key...)
				buf = append(buf, '=')
				buf = append(buf, f.nullable(h.Value)...)
			}
		}
	}
	return buf
}

// nullLen is kcat's length of a key or value: -1 for null.
func nullLen(b []byte) int64 {
	if b == nil {
		return -1
	}
	return int64(len(b))
}

// inputDirectives are those produce reads: key, value, timestamp (ms),
// partition, headers (k=v,k=v).
const inputDirectives = "kvTph"

// recordReader reads records from text by an input format. Every directive
// runs up to the literal that follows it, and the format ends with a
// literal: the record terminator.
type recordReader struct {
	items     []fmtItem
	r         *bufio.Reader
	nullEmpty bool // kcat -Z: an empty key or value is null
	record    int  // records read, for error messages
}

func newRecordReader(format string, r io.Reader, nullEmpty bool) (*recordReader, error) {
	items, err := parseFormat(format, inputDirectives)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 || items[len(items)-1].dir != 0 {
		return nil, fmt.Errorf("input format %q: must end with a delimiter such as \\n", format)
	}
	seen := map[byte]bool{}
	for i, it := range items {
		if it.dir == 0 {
			continue
		}
		if items[i+1].dir != 0 {
			return nil, fmt.Errorf("input format %q: %%%c must be followed by a delimiter", format, it.dir)
		}
		if seen[it.dir] {
			return nil, fmt.Errorf("input format %q: %%%c appears twice", format, it.dir)
		}
		seen[it.dir] = true
	}
	if !seen['k'] && !seen['v'] {
		return nil, fmt.Errorf("input format %q: needs %%k or %%v", format)
	}
	return &recordReader{items: items, r: bufio.NewReaderSize(r, 1<<16), nullEmpty: nullEmpty}, nil
}

// has reports whether the format reads directive d.
func (rr *recordReader) has(d byte) bool {
	for _, it := range rr.items {
		if it.dir == d {
			return true
		}
	}
	return false
}

// errTruncated marks input that ends inside a record.
var errTruncated = errors.New("input ends inside a record")

// next reads one record; io.EOF at a clean end of input. A final record
// without its terminator is accepted, as a last line without a newline is.
func (rr *recordReader) next() (*kgo.Record, error) {
	rr.record++
	rec := &kgo.Record{}
	if rr.has('p') {
		rec.Partition = -1
	}
	items := rr.items
	started := false
	if items[0].dir == 0 { // a prefix before the first field
		want := items[0].lit
		got := make([]byte, len(want))
		if _, err := io.ReadFull(rr.r, got); err == io.EOF {
			return nil, io.EOF
		} else if err != nil {
			return nil, fmt.Errorf("record %d: %w", rr.record, errTruncated)
		}
		if string(got) != want {
			return nil, fmt.Errorf("record %d: expected %q, found %q", rr.record, want, got)
		}
		items = items[1:]
		started = true
	}
	// Validated: from here directives and delimiters alternate.
	for i := 0; i < len(items); i += 2 {
		dir, delim := items[i].dir, items[i+1].lit
		field, err := readUntil(rr.r, delim)
		switch {
		case err == io.EOF && !started && len(field) == 0:
			return nil, io.EOF
		case err == io.EOF && i+2 < len(items):
			return nil, fmt.Errorf("record %d: %w (no %q after %%%c)", rr.record, errTruncated, delim, dir)
		case err != nil && err != io.EOF:
			return nil, err
		}
		started = true
		if err := rr.set(rec, dir, field); err != nil {
			return nil, fmt.Errorf("record %d: %w", rr.record, err)
		}
	}
	return rec, nil
}

func (rr *recordReader) set(rec *kgo.Record, dir byte, field []byte) error {
	switch dir {
	case 'k':
		rec.Key = rr.bytes(field)
	case 'v':
		rec.Value = rr.bytes(field)
	case 'T':
		ms, err := strconv.ParseInt(string(field), 10, 64)
		if err != nil {
			return fmt.Errorf("timestamp %q: want milliseconds since the epoch", field)
		}
		rec.Timestamp = time.UnixMilli(ms)
	case 'p':
		p, err := strconv.ParseInt(string(field), 10, 32)
		if err != nil || p < 0 {
			return fmt.Errorf("partition %q: want a partition number", field)
		}
		rec.Partition = int32(p)
	case 'h':
		if len(field) == 0 {
			return nil
		}
		for _, kv := range strings.Split(string(field), ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return fmt.Errorf("header %q: want key=value", kv)
			}
			rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
		}
	}
	return nil
}

// bytes copies a field, null when empty under -Z.
func (rr *recordReader) bytes(field []byte) []byte {
	if len(field) == 0 {
		if rr.nullEmpty {
			return nil
		}
		return []byte{}
	}
	return bytes.Clone(field)
}

// readUntil reads up to and including delim and returns what came before
// it. At the end of input it returns what it read and io.EOF.
func readUntil(r *bufio.Reader, delim string) ([]byte, error) {
	last := delim[len(delim)-1]
	var buf []byte
	for {
		chunk, err := r.ReadSlice(last)
		buf = append(buf, chunk...)
		if err == nil && bytes.HasSuffix(buf, []byte(delim)) {
			return buf[:len(buf)-len(delim)], nil
		}
		if err != nil && err != bufio.ErrBufferFull {
			return buf, err
		}
	}
}
