package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// logDoc is one file's document in `log dump -o json`.
type logDoc struct {
	File     string           `json:"file"`
	Type     string           `json:"type"`
	Batches  []dumpBatch      `json:"batches"`
	Entries  []map[string]any `json:"entries"`
	Records  int64            `json:"records"`
	Problems []string         `json:"problems"`
	Read     int64            `json:"entries_read"`
}

func TestLogDump(t *testing.T) {
	c := startCLIWith(t, groupProps)
	c.run("topic", "create", "dump", "-p", "1", "-c", "index.interval.bytes=1")
	cl := c.b.Client(kgo.ProducerBatchCompression(kgo.NoCompression()))
	zcl := c.b.Client(kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ts := time.UnixMilli(1700000000000)
	produce := func(cl *kgo.Client, rs ...*kgo.Record) {
		t.Helper()
		for _, r := range rs {
			r.Topic, r.Timestamp = "dump", ts
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(cl, &kgo.Record{Key: []byte("k0"), Value: []byte("hello world")})
	produce(zcl, &kgo.Record{Key: []byte("k1"), Value: []byte(strings.Repeat("z", 500))},
		&kgo.Record{Key: []byte("k2"), Value: []byte{0xff, 0x00}, Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}})
	produce(cl, &kgo.Record{Key: []byte("k0")}) // tombstone

	// A group commit, for the __consumer_offsets decoder.
	var plan struct{ Executed bool }
	c.json(&plan, "group", "seek", "dumpers", "--to", "start", "--topic", "dump", "--execute")
	c.b.Stop() // closes segments: indexes are written out

	dir := filepath.Join(c.b.Dir, "dump-0")
	seg := filepath.Join(dir, "00000000000000000000")
	var docs []logDoc
	c.jsonNoBroker(&docs, "log", "dump", "-d", seg+".log", seg+".index", seg+".timeindex")
	if len(docs) != 3 {
		t.Fatalf("%d documents", len(docs))
	}
	lg := docs[0]
	if lg.Type != "log" || len(lg.Batches) != 3 || lg.Records != 4 || len(lg.Problems) != 0 {
		t.Fatalf("log: %+v", lg)
	}
	b0, b1, b2 := lg.Batches[0], lg.Batches[1], lg.Batches[2]
	if b0.BaseOffset != 0 || b0.Position != 0 || !b0.CRCValid || b0.Compression != "none" || *b0.Records[0].Value != "hello world" ||
		b0.Records[0].Timestamp != 1700000000000 || b0.ProducerID < 0 || b0.Records[0].Sequence != 0 {
		t.Fatalf("batch 0: %+v", b0)
	}
	if b1.BaseOffset != 1 || b1.LastOffset != 2 || b1.Compression != "zstd" || b1.Position != int64(b0.Size) || len(b1.Records) != 2 ||
		len(*b1.Records[0].Value) != 500 || b1.Records[1].ValueEncoding != "base64" || *b1.Records[1].Value != "/wA=" ||
		b1.Records[1].Headers[0].Key != "h" || b1.Records[1].Offset != 2 {
		t.Fatalf("batch 1: %+v", b1)
	}
	if b2.BaseOffset != 3 || b2.Records[0].Value != nil || b2.Records[0].ValueSize != -1 {
		t.Fatalf("batch 2 (tombstone): %+v", b2)
	}
	idx := docs[1]
	if idx.Type != "index" || idx.Read != 2 || len(idx.Problems) != 0 || idx.Entries[0]["position"].(float64) != float64(b1.Position) {
		t.Fatalf("index: %+v", idx)
	}
	if tix := docs[2]; tix.Type != "timeindex" || tix.Read < 1 || len(tix.Problems) != 0 {
		t.Fatalf("timeindex: %+v", tix)
	}

	// Text layout.
	out, _, err := c.exec("", true, "log", "dump", "-d", seg+".log")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Dumping " + seg + ".log",
		"baseOffset: 1 lastOffset: 2 count: 2 ",
		"compresscodec: zstd crc: ",
		"| offset: 0 CreateTime: 1700000000000 keySize: 2 valueSize: 11 sequence: 0 headerKeys: [] key: k0 payload: \"hello world\"",
		"| offset: 3 CreateTime: 1700000000000 keySize: 2 valueSize: -1 sequence: 1 headerKeys: [] key: k0 payload: null",
		"headerKeys: [h] key: k2 payload: base64:/wA=",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text dump lacks %q:\n%s", want, out)
		}
	}

	// __consumer_offsets: the directory name switches the decoder on.
	var found bool
	logs, _ := filepath.Glob(filepath.Join(c.b.Dir, "__consumer_offsets-*", "*.log"))
	for _, l := range logs {
		var d []logDoc
		c.jsonNoBroker(&d, "log", "dump", l)
		for _, b := range d[0].Batches {
			for _, r := range b.Records {
				if r.DecodedKey["type"] == "offset_commit" && r.DecodedKey["group"] == "dumpers" && r.DecodedKey["topic"] == "dump" &&
					r.DecodedValue["offset"].(float64) == 0 {
					found = true
				}
			}
		}
	}
	if !found {
		t.Fatalf("no decoded offset commit of group dumpers in %v", logs)
	}

	// Corruption: a flipped byte fails the CRC; a cut tail is reported.
	raw, err := os.ReadFile(seg + ".log")
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "00000000000000000000.log")
	raw[len(raw)-3] ^= 0xff
	if err := os.WriteFile(bad, raw[:len(raw)-1], 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err = c.exec("", true, "log", "dump", bad, "-o", "json")
	if err == nil {
		t.Fatal("dump of a truncated log succeeded")
	}
	var badDocs []logDoc
	if jerr := json.Unmarshal([]byte(out), &badDocs); jerr != nil {
		t.Fatal(jerr, out)
	}
	if len(badDocs[0].Batches) != 2 || len(badDocs[0].Problems) != 1 || !strings.Contains(badDocs[0].Problems[0], "truncated") {
		t.Fatalf("truncated log: %+v", badDocs[0])
	}
	if err := os.WriteFile(bad, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, _ = c.exec("", true, "log", "dump", bad)
	if !strings.Contains(out, "isValid: false") || !strings.Contains(out, "problem: position") {
		t.Fatalf("corrupt log:\n%s", out)
	}
}

// jsonNoBroker runs a broker-less command with -o json and decodes it.
func (c cli) jsonNoBroker(v any, args ...string) {
	c.t.Helper()
	out, stderr, err := c.exec("", true, append(args, "-o", "json")...)
	if err != nil {
		c.t.Fatalf("gregor %s: %v\n%s\n%s", strings.Join(args, " "), err, out, stderr)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		c.t.Fatalf("gregor %s -o json: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func TestDumpCraftedIndexes(t *testing.T) {
	dir := t.TempDir()
	c := cli{t: t}
	be := binary.BigEndian

	// An aborted transaction: version 0, producer 7, offsets 10..12, LSO 10.
	txn := make([]byte, 34)
	be.PutUint64(txn[2:], 7)
	be.PutUint64(txn[10:], 10)
	be.PutUint64(txn[18:], 12)
	be.PutUint64(txn[26:], 10)
	path := filepath.Join(dir, "00000000000000000100.txnindex")
	if err := os.WriteFile(path, txn, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := c.exec("", true, "log", "dump", path)
	if err != nil || !strings.Contains(out, "version: 0 producerId: 7 firstOffset: 10 lastOffset: 12 lastStableOffset: 10\n1 aborted transactions") {
		t.Fatalf("txnindex: %v\n%s", err, out)
	}

	// Offset index entries out of order, then preallocated zeros. No .log
	// next to it, so positions are not checked.
	idx := make([]byte, 8*4)
	be.PutUint32(idx[0:], 5)
	be.PutUint32(idx[4:], 400)
	be.PutUint32(idx[8:], 3)
	be.PutUint32(idx[12:], 800)
	path = filepath.Join(dir, "00000000000000000100.index")
	if err := os.WriteFile(path, idx, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err = c.exec("", true, "log", "dump", path)
	if err == nil || !strings.Contains(out, "offset: 105 position: 400\noffset: 103 position: 800\n2 entries, 16 bytes of preallocated padding\n") ||
		!strings.Contains(out, "problem: entry 1 (offset 103, position 800) does not follow entry 0") {
		t.Fatalf("index: %v\n%s", err, out)
	}

	// Time index: 12-byte entries of timestamp and relative offset.
	tix := make([]byte, 12*2)
	be.PutUint64(tix[0:], 1700000000000)
	be.PutUint32(tix[8:], 4)
	path = filepath.Join(dir, "00000000000000000100.timeindex")
	if err := os.WriteFile(path, tix, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err = c.exec("", true, "log", "dump", path)
	if err != nil || !strings.Contains(out, "timestamp: 1700000000000 offset: 104\n1 entries, 12 bytes of preallocated padding\n") {
		t.Fatalf("timeindex: %v\n%s", err, out)
	}

	if _, _, err := c.exec("", true, "log", "dump", filepath.Join(dir, "leader-epoch-checkpoint")); err == nil {
		t.Fatal("dumping a non-segment file succeeded")
	}
}
