package server

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Key numbers the framing layer itself needs.
const (
	keyControlledShutdown int16 = 7
	keyApiVersions        int16 = 18
)

// errShortHeader is returned for a frame too short to hold a request header.
var errShortHeader = errors.New("request header truncated")

// requestHeader is Kafka's request header (RequestHeaderData).
//
// v0 is api key, api version, correlation id (only ControlledShutdown v0
// uses it); v1 adds a nullable client id; v2 adds tagged fields. The client
// id stays a plain (non-compact) nullable string in v2: clients send
// ApiVersions before they know whether the broker understands flexible
// headers.
type requestHeader struct {
	key, version  int16
	correlationID int32
	clientID      *string
}

// peekKeyVersion returns the api key and version of a frame, or ok=false if
// the frame is shorter than the fixed part of every header.
func peekKeyVersion(frame []byte) (key, version int16, ok bool) {
	if len(frame) < 8 {
		return 0, 0, false
	}
	return int16(uint16(frame[0])<<8 | uint16(frame[1])),
		int16(uint16(frame[2])<<8 | uint16(frame[3])), true
}

// parseRequestHeader parses the header at the start of frame and returns
// it with the body that follows. flexible says whether the request's
// version uses header v2.
func parseRequestHeader(frame []byte, flexible bool) (requestHeader, []byte, error) {
	var h requestHeader
	b := kbin.Reader{Src: frame}
	h.key = b.Int16()
	h.version = b.Int16()
	h.correlationID = b.Int32()
	if h.key == keyControlledShutdown && h.version == 0 {
		if !b.Ok() {
			return h, nil, errShortHeader
		}
		return h, b.Src, nil
	}
	h.clientID = b.NullableString()
	if flexible {
		kmsg.SkipTags(&b)
	}
	if !b.Ok() {
		return h, nil, errShortHeader
	}
	return h, b.Src, nil
}

// appendResponseHeader starts a response frame in dst: a size placeholder,
// the correlation id, and for header v1 an empty tagged-field section.
// finishFrame fills in the size once the body is appended.
func appendResponseHeader(dst []byte, correlationID int32, headerV1 bool) []byte {
	dst = append(dst, 0, 0, 0, 0)
	dst = kbin.AppendInt32(dst, correlationID)
	if headerV1 {
		dst = append(dst, 0)
	}
	return dst
}

// finishFrame writes the size prefix of a frame started by
// appendResponseHeader.
func finishFrame(frame []byte) {
	kbin.AppendInt32(frame[:0], int32(len(frame)-4))
}

// responseHeaderV1 says whether a response uses header v1 (with tagged
// fields). ApiVersions responses always use header v0, so that a client
// can read the answer even when the broker does not support the version it
// asked with.
func responseHeaderV1(key int16, flexible bool) bool {
	return flexible && key != keyApiVersions
}
