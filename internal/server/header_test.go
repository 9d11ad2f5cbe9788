package server

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestParseRequestHeader(t *testing.T) {
	id := "client-1"
	tests := []struct {
		name     string
		frame    []byte
		flexible bool
		want     requestHeader
		wantBody []byte
	}{
		{
			name:     "v1 with client id",
			frame:    append(kbin.AppendNullableString([]byte{0, 3, 0, 4, 0, 0, 0, 9}, &id), 0xaa),
			want:     requestHeader{key: 3, version: 4, correlationID: 9, clientID: &id},
			wantBody: []byte{0xaa},
		},
		{
			name:     "v1 null client id",
			frame:    []byte{0, 3, 0, 4, 0, 0, 0, 9, 0xff, 0xff},
			want:     requestHeader{key: 3, version: 4, correlationID: 9},
			wantBody: []byte{},
		},
		{
			name: "v2 client id stays non-compact, tagged fields skipped",
			frame: append(kbin.AppendNullableString([]byte{0, 18, 0, 3, 0, 0, 1, 0}, &id),
				2,          // two tagged fields
				0, 1, 0x55, // tag 0, 1 byte
				5, 2, 0x66, 0x77, // tag 5, 2 bytes
				0xbb),
			flexible: true,
			want:     requestHeader{key: 18, version: 3, correlationID: 256, clientID: &id},
			wantBody: []byte{0xbb},
		},
		{
			name:     "ControlledShutdown v0 has no client id",
			frame:    []byte{0, 7, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2},
			want:     requestHeader{key: 7, version: 0, correlationID: 1},
			wantBody: []byte{0, 0, 0, 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, body, err := parseRequestHeader(tt.frame, tt.flexible)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(requestHeader{})); diff != "" {
				t.Errorf("header (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantBody, body); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseRequestHeaderRejectsTruncation(t *testing.T) {
	id := "abc"
	full := append(kbin.AppendNullableString([]byte{0, 18, 0, 3, 0, 0, 0, 1}, &id), 1, 0, 3, 1, 2, 3)
	for n := range len(full) {
		if _, _, err := parseRequestHeader(full[:n], true); err == nil {
			t.Errorf("header cut to %d of %d bytes parsed without error", n, len(full))
		}
	}
	if _, _, err := parseRequestHeader(full, true); err != nil {
		t.Fatalf("full header: %v", err)
	}
}

func TestResponseHeader(t *testing.T) {
	if got := appendResponseHeader(nil, 0x01020304, false); !cmp.Equal(got, []byte{0, 0, 0, 0, 1, 2, 3, 4}) {
		t.Errorf("header v0 = %v", got)
	}
	f := appendResponseHeader(nil, 7, true)
	f = append(f, 0xee)
	finishFrame(f)
	if !cmp.Equal(f, []byte{0, 0, 0, 6, 0, 0, 0, 7, 0, 0xee}) {
		t.Errorf("header v1 frame = %v", f)
	}
	if responseHeaderV1(18, true) || !responseHeaderV1(3, true) || responseHeaderV1(3, false) {
		t.Error("ApiVersions must always use response header v0; others v1 exactly when flexible")
	}
}

// discardConn is a net.Conn that swallows writes, for driving process
// without a socket.
type discardConn struct{ net.Conn }

func (discardConn) Write(p []byte) (int, error)      { return len(p), nil }
func (discardConn) Close() error                     { return nil }
func (discardConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (discardConn) SetDeadline(time.Time) error      { return nil }
func (discardConn) SetReadDeadline(time.Time) error  { return nil }
func (discardConn) SetWriteDeadline(time.Time) error { return nil }

// FuzzProcess feeds arbitrary frames through header parsing, decoding and
// the handler. It calls process, not processGuarded, so a panic in the
// framing code or a decoder fails the fuzz target.
func FuzzProcess(f *testing.F) {
	fm := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	for _, req := range []kmsg.Request{kmsg.NewPtrApiVersionsRequest(), kmsg.NewPtrMetadataRequest(), kmsg.NewPtrListGroupsRequest()} {
		for v := int16(0); v <= req.MaxVersion(); v++ {
			req.SetVersion(v)
			f.Add(fm.AppendRequest(nil, req, 1)[4:])
		}
	}
	f.Add([]byte{0, 18, 0, 9, 0, 0, 0, 1, 0, 0, 0})
	s := New(Config{Logger: discardLogger()}, newFakeHandler())
	defer s.Shutdown(context.Background())
	c := newConn(s, 1, discardConn{})
	f.Fuzz(func(t *testing.T, frame []byte) {
		c.process(frame, time.Now())
	})
}
