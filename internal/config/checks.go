package config

import (
	"net"
	"regexp"
	"strconv"
	"strings"
)

// The checks below mirror Kafka's ConfigDef validators (Range, ValidString,
// ValidList, …) and word their errors the same way.

func atLeast(min int64) option {
	return withCheck(func(name string, v any) error {
		if n, ok := v.(int64); ok && n < min {
			return invalidValue(name, format(v), "Value must be at least "+strconv.FormatInt(min, 10))
		}
		return nil
	})
}

func between(min, max int64) option {
	return withCheck(func(name string, v any) error {
		n, ok := v.(int64)
		switch {
		case !ok:
		case n < min:
			return invalidValue(name, format(v), "Value must be at least "+strconv.FormatInt(min, 10))
		case n > max:
			return invalidValue(name, format(v), "Value must be no more than "+strconv.FormatInt(max, 10))
		}
		return nil
	})
}

// betweenFloat rejects NaN too, which Kafka's Range lets through.
func betweenFloat(min, max float64) option {
	fmtBound := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	return withCheck(func(name string, v any) error {
		f, ok := v.(float64)
		switch {
		case !ok:
		case !(f >= min):
			return invalidValue(name, format(v), "Value must be at least "+fmtBound(min))
		case f > max:
			return invalidValue(name, format(v), "Value must be no more than "+fmtBound(max))
		}
		return nil
	})
}

// gzipLevel is Kafka's GZIP level validator: 1..9, or -1 for the codec default.
func gzipLevel() option {
	return withCheck(func(name string, v any) error {
		if n, ok := v.(int64); ok && (n > 9 || (n < 1 && n != -1)) {
			return invalidValue(name, format(v), "Value must be between 1 and 9 or equal to -1")
		}
		return nil
	})
}

func oneOf(valid ...string) option {
	return withCheck(func(name string, v any) error {
		s, _ := v.(string)
		for _, ok := range valid {
			if s == ok {
				return nil
			}
		}
		return invalidValue(name, s, "String must be one of: "+strings.Join(valid, ", "))
	})
}

// listOf is Kafka's ValidList (KIP-1161 form): no duplicates, no empty
// items, optionally non-empty, and, if valid is given, only those items.
func listOf(emptyAllowed bool, valid ...string) option {
	return withCheck(func(name string, v any) error {
		items, _ := v.([]string)
		if !emptyAllowed && len(items) == 0 {
			what := "any non-empty value"
			if len(valid) > 0 {
				what = "[" + strings.Join(valid, ", ") + "]"
			}
			return invalidf("Configuration '%s' must not be empty. Valid values include: %s", name, what)
		}
		seen := make(map[string]bool, len(items))
		for _, it := range items {
			if seen[it] {
				return invalidf("Configuration '%s' values must not be duplicated.", name)
			}
			seen[it] = true
		}
		for _, it := range items {
			if it == "" {
				return invalidf("Configuration '%s' values must not be empty.", name)
			}
			if len(valid) > 0 && !contains(valid, it) {
				return invalidValue(name, it, "String must be one of: "+strings.Join(valid, ", "))
			}
		}
		return nil
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

var replicaEntry = regexp.MustCompile(`^([0-9]+:[0-9]+)?$`)

// throttledReplicas is Kafka's ThrottledReplicaListValidator.
func throttledReplicas() option {
	return withCheck(func(name string, v any) error {
		items, _ := v.([]string)
		if strings.Join(items, "") == "*" {
			return nil
		}
		for _, it := range items {
			if !replicaEntry.MatchString(strings.TrimSpace(it)) {
				return invalidValue(name, format(v), name+" must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")
			}
		}
		return nil
	})
}

// hostPort checks a "host:port" string with a numeric port.
func hostPort(s string) bool {
	host, port, err := net.SplitHostPort(s)
	if err != nil || strings.ContainsAny(host, " \t") {
		return false
	}
	p, err := strconv.Atoi(port)
	return err == nil && p >= 0 && p <= 65535
}

func hostPortCheck() option {
	return withCheck(func(name string, v any) error {
		s, _ := v.(string)
		if !hostPort(s) {
			return invalidValue(name, s, "must be host:port")
		}
		return nil
	})
}

func hostPortList() option {
	return withCheck(func(name string, v any) error {
		for _, it := range v.([]string) {
			if !hostPort(it) {
				return invalidValue(name, format(v), "entry "+strconv.Quote(it)+" is not in the form {host}:{port}")
			}
		}
		return nil
	})
}

// quorumVoters checks controller.quorum.voters entries: {id}@{host}:{port}.
func quorumVoters() option {
	return withCheck(func(name string, v any) error {
		for _, it := range v.([]string) {
			id, addr, ok := strings.Cut(it, "@")
			n, err := strconv.ParseInt(id, 10, 32)
			if !ok || err != nil || n < 0 || !hostPort(addr) {
				return invalidValue(name, format(v), "entry "+strconv.Quote(it)+" is not in the form {id}@{host}:{port}")
			}
		}
		return nil
	})
}

func endpointList() option {
	return withCheck(func(name string, v any) error {
		eps, err := ParseEndpoints(v.([]string))
		if err != nil {
			return invalidValue(name, format(v), err.Error())
		}
		seen := map[string]bool{}
		for _, ep := range eps {
			if seen[ep.Listener] {
				return invalidValue(name, format(v), "Each listener must have a different name")
			}
			seen[ep.Listener] = true
		}
		return nil
	})
}

func protocolMap() option {
	return withCheck(func(name string, v any) error {
		if _, err := ParseSecurityProtocolMap(v.(string)); err != nil {
			return invalidValue(name, v.(string), err.Error())
		}
		return nil
	})
}
