package config

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Def describes one broker or topic config: its Kafka name, type, default and
// validation. Defs are immutable; BrokerDefs and TopicDefs hand out copies.
type Def struct {
	Name string
	Type Type
	// Default is the value used when nothing sets the config, in Kafka's
	// string form; nil means the default is null.
	Default *string
	// Required configs have no default at all: a broker will not start
	// without them (Kafka's "no default value").
	Required bool
	Doc      string
	// ReadOnly broker configs cannot be changed with AlterConfigs. Topic
	// configs are never read-only.
	ReadOnly bool
	// PerBroker configs may be changed dynamically only for one broker, not
	// as a cluster-wide default.
	PerBroker bool
	// Sensitive values are never shown; DescribeConfigs reports them as null.
	Sensitive bool
	// Internal configs are accepted but not documented or described unless set.
	Internal bool
	// Validate parses a value of this config and checks Kafka's constraints.
	// Its errors wrap ErrInvalidConfig.
	Validate func(string) error

	checks []check
}

// check validates a parsed, non-null value.
type check func(name string, v any) error

// parse converts a raw value to its typed form (bool, int64, float64, string
// or []string) and runs the def's checks.
func (d *Def) parse(raw string) (any, error) {
	v, err := parseType(d.Name, d.Type, raw)
	if err != nil {
		return nil, err
	}
	for _, c := range d.checks {
		if err := c(d.Name, v); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// defaultValue returns the parsed default, or nil for a null default.
func (d *Def) defaultValue() any {
	if d.Default == nil {
		return nil
	}
	v, err := parseType(d.Name, d.Type, *d.Default)
	if err != nil {
		panic("config: bad default for " + d.Name + ": " + err.Error())
	}
	return v
}

func (d *Def) clone() Def {
	c := *d
	if d.Default != nil {
		s := *d.Default
		c.Default = &s
	}
	c.checks = append([]check(nil), d.checks...)
	return c
}

// javaTrim removes what Java's String.trim removes: every char <= ' ' at either end.
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

func isRegexSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\v' || r == '\f' || r == '\r'
}

// splitList splits a list value the way Kafka's ConfigDef does: the trimmed
// value split on commas with surrounding whitespace, keeping empty items.
func splitList(raw string) []string {
	t := javaTrim(raw)
	if t == "" {
		return []string{}
	}
	parts := strings.Split(t, ",")
	for i, p := range parts {
		parts[i] = strings.TrimFunc(p, isRegexSpace)
	}
	return parts
}

// ListContains reports whether the list value raw (e.g. a cleanup.policy of
// "compact,delete"), split as Kafka splits it, holds item.
func ListContains(raw, item string) bool {
	return slices.Contains(splitList(raw), item)
}

func parseType(name string, t Type, raw string) (any, error) {
	s := javaTrim(raw)
	switch t {
	case Boolean:
		switch strings.ToLower(s) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, invalidValue(name, raw, "Expected value to be either true or false")
	case Int, Short, Long:
		bits := map[Type]int{Int: 32, Short: 16, Long: 64}[t]
		n, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			return nil, invalidValue(name, raw, "Not a number of type "+t.String())
		}
		return n, nil
	case Double:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !isRangeErr(err) {
			return nil, invalidValue(name, raw, "Not a number of type "+t.String())
		}
		return f, nil
	case List:
		return splitList(raw), nil
	case String, Class, Password:
		return s, nil
	}
	return nil, invalidValue(name, raw, "unsupported config type "+t.String())
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// format renders a parsed value in Kafka's canonical string form
// (ConfigDef.convertToString); nil renders as "".
func format(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return javaDouble(x)
	case string:
		return x
	case []string:
		return strings.Join(x, ",")
	}
	panic("config: cannot format value")
}

// javaDouble formats f as Java's Double.toString does, so values read back
// through DescribeConfigs look like Kafka's (0.5, 1.0E-4, 1.7976931348623157E308).
func javaDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	if a := math.Abs(f); a >= 1e-3 && a < 1e7 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	mant, exp, _ := strings.Cut(strconv.FormatFloat(f, 'e', -1, 64), "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

// registry is an immutable, name-ordered set of defs.
type registry struct {
	defs   []*Def
	byName map[string]*Def
}

func newRegistry(defs []Def) *registry {
	r := &registry{byName: make(map[string]*Def, len(defs))}
	for i := range defs {
		d := &defs[i]
		if _, dup := r.byName[d.Name]; dup {
			panic("config: duplicate def " + d.Name)
		}
		if d.Type == Password {
			d.Sensitive = true
		}
		d.Validate = func(raw string) error { _, err := d.parse(raw); return err }
		if d.Default != nil {
			if _, err := d.parse(*d.Default); err != nil {
				panic("config: default of " + d.Name + " fails validation: " + err.Error())
			}
		}
		r.defs = append(r.defs, d)
		r.byName[d.Name] = d
	}
	sort.Slice(r.defs, func(i, j int) bool { return r.defs[i].Name < r.defs[j].Name })
	return r
}

func (r *registry) copies() []Def {
	out := make([]Def, len(r.defs))
	for i, d := range r.defs {
		out[i] = d.clone()
	}
	return out
}

// option configures a Def in the def tables.
type option func(*Def)

func mkDef(name string, t Type, dflt string, doc string, readOnly bool, opts []option) Def {
	d := Def{Name: name, Type: t, Default: &dflt, Doc: doc, ReadOnly: readOnly}
	for _, o := range opts {
		o(&d)
	}
	return d
}

var (
	// dynamic marks a broker config Kafka can update cluster-wide.
	dynamic option = func(d *Def) { d.ReadOnly = false }
	// perBroker marks a broker config Kafka can update only per broker.
	perBroker option = func(d *Def) { d.ReadOnly = false; d.PerBroker = true }
	// null gives the config a null default.
	null option = func(d *Def) { d.Default = nil }
	// required gives the config no default: it must be set.
	required option = func(d *Def) { d.Default = nil; d.Required = true }
	// internal hides the config from describe output unless it is set.
	internal option = func(d *Def) { d.Internal = true }
)

func withCheck(c check) option {
	return func(d *Def) { d.checks = append(d.checks, c) }
}
