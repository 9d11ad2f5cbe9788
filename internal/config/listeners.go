package config

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Endpoint is one entry of listeners or advertised.listeners:
// LISTENER_NAME://host:port. Host is empty when the listener binds every
// interface of the default address family.
type Endpoint struct {
	Listener string // upper-cased, as Kafka normalises listener names
	Host     string
	Port     int
}

// Same shape as Kafka's endpoint syntax; IPv6 hosts sit in brackets.
var endpointRE = regexp.MustCompile(`^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$`)

// ParseEndpoint parses one listener entry such as "PLAINTEXT://:9092" or
// "SSL://[::1]:9093".
func ParseEndpoint(s string) (Endpoint, error) {
	m := endpointRE.FindStringSubmatch(s)
	if m == nil || m[1] == "" {
		return Endpoint{}, fmt.Errorf("Unable to parse %s to a broker endpoint", s)
	}
	port, err := strconv.Atoi(m[3])
	if err != nil || port < 0 || port > 65535 {
		return Endpoint{}, fmt.Errorf("Unable to parse %s to a broker endpoint: bad port", s)
	}
	return Endpoint{Listener: strings.ToUpper(m[1]), Host: m[2], Port: port}, nil
}

// ParseEndpoints parses every entry of a listeners-style list.
func ParseEndpoints(entries []string) ([]Endpoint, error) {
	out := make([]Endpoint, 0, len(entries))
	for _, e := range entries {
		ep, err := ParseEndpoint(e)
		if err != nil {
			return nil, err
		}
		out = append(out, ep)
	}
	return out, nil
}

// securityProtocols are the protocols a listener can speak.
var securityProtocols = []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

// ParseSecurityProtocolMap parses listener.security.protocol.map
// ("NAME:PROTOCOL,…") into upper-cased listener name → protocol.
func ParseSecurityProtocolMap(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, entry := range splitList(s) {
		name, proto, ok := strings.Cut(entry, ":")
		name, proto = strings.TrimSpace(name), strings.ToUpper(strings.TrimSpace(proto))
		if !ok || name == "" {
			return nil, fmt.Errorf("map entry %q is not in the form LISTENER_NAME:SECURITY_PROTOCOL", entry)
		}
		if !contains(securityProtocols, proto) {
			return nil, fmt.Errorf("unknown security protocol %q (must be one of %s)", proto, strings.Join(securityProtocols, ", "))
		}
		name = strings.ToUpper(name)
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("listener name %s appears more than once", name)
		}
		out[name] = proto
	}
	return out, nil
}
