package config

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Type is a config's value type. The numeric values are the ConfigType codes
// of the DescribeConfigs response (v3+), so an API handler can send int8(t).
type Type int

// Config value types, numbered as in DescribeConfigs.
const (
	Unknown  Type = 0
	Boolean  Type = 1
	String   Type = 2
	Int      Type = 3
	Short    Type = 4
	Long     Type = 5
	Double   Type = 6
	List     Type = 7
	Class    Type = 8
	Password Type = 9
)

var typeNames = [...]string{"UNKNOWN", "BOOLEAN", "STRING", "INT", "SHORT", "LONG", "DOUBLE", "LIST", "CLASS", "PASSWORD"}

// String returns Kafka's name for the type, e.g. "LONG".
func (t Type) String() string {
	if t < 0 || int(t) >= len(typeNames) {
		return typeNames[0]
	}
	return typeNames[t]
}

// Source says where a config value came from, numbered as the ConfigSource of
// the DescribeConfigs response.
type Source int8

// Config sources, numbered as in DescribeConfigs.
const (
	SourceUnknown              Source = 0
	SourceDynamicTopic         Source = 1
	SourceDynamicBroker        Source = 2
	SourceDynamicDefaultBroker Source = 3
	SourceStaticBroker         Source = 4
	SourceDefault              Source = 5
	SourceDynamicBrokerLogger  Source = 6
	SourceClientMetrics        Source = 7
	SourceGroup                Source = 8
)

var sourceNames = [...]string{
	"UNKNOWN", "DYNAMIC_TOPIC_CONFIG", "DYNAMIC_BROKER_CONFIG", "DYNAMIC_DEFAULT_BROKER_CONFIG",
	"STATIC_BROKER_CONFIG", "DEFAULT_CONFIG", "DYNAMIC_BROKER_LOGGER_CONFIG", "CLIENT_METRICS_CONFIG", "GROUP_CONFIG",
}

// String returns Kafka's name for the source, e.g. "STATIC_BROKER_CONFIG".
func (s Source) String() string {
	if s < 0 || int(s) >= len(sourceNames) {
		return sourceNames[0]
	}
	return sourceNames[s]
}

// Sentinel errors. Every error this package returns wraps exactly one of them;
// its Error() text is the message Kafka would put in the response.
var (
	// ErrInvalidConfig maps to Kafka's INVALID_CONFIG (40).
	ErrInvalidConfig = errors.New("invalid config")
	// ErrInvalidRequest maps to Kafka's INVALID_REQUEST (42).
	ErrInvalidRequest = errors.New("invalid request")
)

// Error carries a Kafka-style message and the sentinel it belongs to.
type Error struct {
	kind error
	msg  string
}

func (e *Error) Error() string { return e.msg }

// Unwrap returns ErrInvalidConfig or ErrInvalidRequest.
func (e *Error) Unwrap() error { return e.kind }

func invalidf(format string, args ...any) error {
	return &Error{kind: ErrInvalidConfig, msg: fmt.Sprintf(format, args...)}
}

func badRequestf(format string, args ...any) error {
	return &Error{kind: ErrInvalidRequest, msg: fmt.Sprintf(format, args...)}
}

// invalidValue phrases an error the way Kafka's ConfigException(name, value, message) does.
func invalidValue(name, value, reason string) error {
	return invalidf("Invalid value %s for configuration %s: %s", value, name, reason)
}

// scalaSet renders names as Kafka's Scala code prints a Set, which is what
// its dynamic-config errors contain.
func scalaSet(names []string) string {
	s := append([]string(nil), names...)
	sort.Strings(s)
	return "Set(" + strings.Join(s, ", ") + ")"
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
