package config

import (
	"fmt"
	"strings"
)

// Broker is an immutable snapshot of a broker's configuration, in Kafka's
// layers, highest priority first:
//
//	DYNAMIC_BROKER_CONFIG          AlterConfigs on this broker's resource
//	DYNAMIC_DEFAULT_BROKER_CONFIG  AlterConfigs on the cluster default ("")
//	STATIC_BROKER_CONFIG           server.properties plus --set overrides
//	DEFAULT_CONFIG                 the defaults in BrokerDefs
//
// Every value in every layer has passed validation. Changing a layer returns
// a new Broker; a *Broker may be shared by any number of goroutines.
type Broker struct {
	static     map[string]string
	dynDefault map[string]string
	dynBroker  map[string]string
	unknown    []string
	vals       map[string]layered // one entry per broker def
}

type layered struct {
	v   any // nil when the value is null
	src Source
}

// NewBroker validates static configs (server.properties plus command-line
// overrides) and returns the snapshot built from them. As in Kafka, node.id
// and broker.id stand in for each other when only one is set, configs without
// a default must be present, and names Gregor does not know are kept but
// otherwise ignored; Unknown lists them so the caller can log them.
func NewBroker(static map[string]string) (*Broker, error) {
	st := cloneMap(static)
	if n, ok := st["node.id"]; ok {
		if _, ok := st["broker.id"]; !ok {
			st["broker.id"] = n
		}
	} else if id, ok := st["broker.id"]; ok {
		st["node.id"] = id
	}
	unknown, err := validateLayer(st)
	if err != nil {
		return nil, err
	}
	for _, d := range brokerReg.defs {
		if _, ok := st[d.Name]; d.Required && !ok {
			return nil, invalidf("Missing required configuration %q which has no default value.", d.Name)
		}
	}
	b := &Broker{static: st, unknown: unknown}
	return b.finish()
}

// WithDynamic returns a copy of b whose cluster-wide dynamic layer
// (DYNAMIC_DEFAULT_BROKER_CONFIG) is exactly m. Read-only and per-broker-only
// configs are refused, as Kafka refuses them at the default resource.
func (b *Broker) WithDynamic(m map[string]string) (*Broker, error) {
	if err := checkDynamic(m, false); err != nil {
		return nil, err
	}
	nb := &Broker{static: b.static, dynDefault: cloneMap(m), dynBroker: b.dynBroker, unknown: b.unknown}
	return nb.finish()
}

// WithDynamicPerBroker returns a copy of b whose per-broker dynamic layer
// (DYNAMIC_BROKER_CONFIG) is exactly m.
func (b *Broker) WithDynamicPerBroker(m map[string]string) (*Broker, error) {
	if err := checkDynamic(m, true); err != nil {
		return nil, err
	}
	nb := &Broker{static: b.static, dynDefault: b.dynDefault, dynBroker: cloneMap(m), unknown: b.unknown}
	return nb.finish()
}

func (b *Broker) finish() (*Broker, error) {
	b.vals = make(map[string]layered, len(brokerReg.defs))
	for _, d := range brokerReg.defs {
		raw, src, ok := b.raw(d.Name)
		if !ok {
			b.vals[d.Name] = layered{d.defaultValue(), SourceDefault}
			continue
		}
		v, err := d.parse(raw)
		if err != nil {
			return nil, err
		}
		b.vals[d.Name] = layered{v, src}
	}
	if err := b.validateMerged(); err != nil {
		return nil, err
	}
	return b, nil
}

// validateLayer checks every known config of one layer and returns the unknown names.
func validateLayer(m map[string]string) ([]string, error) {
	var unknown []string
	for _, k := range sortedKeys(m) {
		d, ok := brokerReg.byName[k]
		if !ok {
			unknown = append(unknown, k)
			continue
		}
		if _, err := d.parse(m[k]); err != nil {
			return nil, err
		}
	}
	return unknown, nil
}

// checkDynamic applies Kafka's DynamicBrokerConfig.validateConfigs rules.
func checkDynamic(m map[string]string, perBrokerLayer bool) error {
	var readOnly, security, brokerOnly []string
	for _, k := range sortedKeys(m) {
		d, ok := brokerReg.byName[k]
		switch {
		case !ok:
		case d.ReadOnly:
			readOnly = append(readOnly, k)
		case securityReconfigurable[k]:
			security = append(security, k)
		case d.PerBroker && !perBrokerLayer:
			brokerOnly = append(brokerOnly, k)
		}
	}
	if len(readOnly) > 0 {
		return invalidf("Cannot update these configs dynamically: %s", scalaSet(readOnly))
	}
	if len(security) > 0 {
		return invalidf("These security configs can be dynamically updated only per-listener using the listener prefix: %s", scalaSet(security))
	}
	if _, err := validateLayer(m); err != nil {
		return err
	}
	if len(brokerOnly) > 0 {
		return invalidf("Cannot update these configs at default cluster level, broker id must be specified: %s", scalaSet(brokerOnly))
	}
	return dynamicSecurity(m, perBrokerLayer)
}

// raw returns the highest-priority value set for name in any layer.
func (b *Broker) raw(name string) (string, Source, bool) {
	if b == nil {
		return "", SourceUnknown, false
	}
	if v, ok := b.dynBroker[name]; ok {
		return v, SourceDynamicBroker, true
	}
	if v, ok := b.dynDefault[name]; ok {
		return v, SourceDynamicDefaultBroker, true
	}
	if v, ok := b.static[name]; ok {
		return v, SourceStaticBroker, true
	}
	return "", SourceUnknown, false
}

// lookup returns the parsed effective value of a known broker config; b may be nil.
func (b *Broker) lookup(name string) (any, Source) {
	if b != nil {
		if l, ok := b.vals[name]; ok {
			return l.v, l.src
		}
	}
	d, ok := brokerReg.byName[name]
	if !ok {
		panic("config: unknown broker config " + name)
	}
	return d.defaultValue(), SourceDefault
}

// Unknown returns the static config names Gregor does not know, sorted.
// Kafka logs these and ignores them; so should the caller.
func (b *Broker) Unknown() []string { return append([]string(nil), b.unknown...) }

// Static returns a copy of the static layer, after node.id/broker.id filling.
func (b *Broker) Static() map[string]string { return cloneMap(b.static) }

// Dynamic returns a copy of the cluster-wide dynamic layer.
func (b *Broker) Dynamic() map[string]string { return cloneMap(b.dynDefault) }

// DynamicPerBroker returns a copy of the per-broker dynamic layer.
func (b *Broker) DynamicPerBroker() map[string]string { return cloneMap(b.dynBroker) }

// Value returns the effective value of name in Kafka's canonical string form
// and where it came from. ok is false when the value is null or name is set
// nowhere. Names Gregor does not know are looked up in the layers verbatim.
func (b *Broker) Value(name string) (value string, src Source, ok bool) {
	if _, known := brokerReg.byName[name]; !known {
		return b.raw(name)
	}
	v, src := b.lookup(name)
	if v == nil {
		return "", src, false
	}
	return format(v), src, true
}

func (b *Broker) typed(name string, want ...Type) any {
	d, ok := brokerReg.byName[name]
	if !ok {
		panic("config: unknown broker config " + name)
	}
	for _, t := range want {
		if d.Type == t {
			v, _ := b.lookup(name)
			return v
		}
	}
	panic(fmt.Sprintf("config: %s is a %s config, not %v", name, d.Type, want))
}

// The typed getters panic when name is not a broker config of a matching
// type: names are constants in Gregor's code, never user input. A null value
// reads as the zero value; use Value to tell null apart.

// Int returns an INT or SHORT broker config.
func (b *Broker) Int(name string) int32 {
	n, _ := b.typed(name, Int, Short).(int64)
	return int32(n)
}

// Long returns a LONG, INT or SHORT broker config.
func (b *Broker) Long(name string) int64 {
	n, _ := b.typed(name, Long, Int, Short).(int64)
	return n
}

// Bool returns a BOOLEAN broker config.
func (b *Broker) Bool(name string) bool {
	v, _ := b.typed(name, Boolean).(bool)
	return v
}

// Double returns a DOUBLE broker config.
func (b *Broker) Double(name string) float64 {
	f, _ := b.typed(name, Double).(float64)
	return f
}

// List returns a LIST broker config.
func (b *Broker) List(name string) []string {
	l, _ := b.typed(name, List).([]string)
	return append([]string(nil), l...)
}

// String returns any broker config in Kafka's canonical string form.
func (b *Broker) String(name string) string {
	return format(b.typed(name, Boolean, String, Int, Short, Long, Double, List, Class, Password))
}

// NodeID returns node.id.
func (b *Broker) NodeID() int32 { return b.Int("node.id") }

// LogDirs returns log.dirs, or log.dir when log.dirs is unset.
func (b *Broker) LogDirs() []string {
	if v, _ := b.lookup("log.dirs"); v != nil {
		return b.List("log.dirs")
	}
	return b.List("log.dir")
}

// validateMerged runs the checks that span several configs, on the merged layers.
func (b *Broker) validateMerged() error {
	if n, id := b.Long("node.id"), b.Long("broker.id"); n != id {
		return invalidf("broker.id (%d) and node.id (%d) must be the same if both are specified", id, n)
	}
	wait := b.Long("replica.fetch.wait.max.ms")
	if b.Long("replica.socket.timeout.ms") < wait {
		return invalidf("replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms to prevent unnecessary socket timeouts")
	}
	if b.Long("replica.lag.time.max.ms") < wait {
		return invalidf("replica.fetch.wait.max.ms should always be less than or equal to replica.lag.time.max.ms to prevent frequent changes in ISR")
	}
	if err := b.validateListeners(); err != nil {
		return err
	}
	_, err := resolveTopic(b, nil)
	return err
}

// SecurityProtocolMap returns the effective listener name → protocol map.
// When listener.security.protocol.map is not set, KRaft maps the
// controller listener names to PLAINTEXT as well.
func (b *Broker) SecurityProtocolMap() map[string]string {
	m, _ := ParseSecurityProtocolMap(b.String("listener.security.protocol.map"))
	if _, _, set := b.raw("listener.security.protocol.map"); !set {
		for _, n := range b.List("controller.listener.names") {
			if _, ok := m[strings.ToUpper(n)]; !ok {
				m[strings.ToUpper(n)] = "PLAINTEXT"
			}
		}
	}
	return m
}

func (b *Broker) validateListeners() error {
	protos := b.SecurityProtocolMap()
	listeners, _ := ParseEndpoints(b.List("listeners"))
	names := map[string]bool{}
	for _, ep := range listeners {
		if _, ok := protos[ep.Listener]; !ok {
			return invalidf("No security protocol defined for listener %s", ep.Listener)
		}
		names[ep.Listener] = true
	}
	advertised, _ := ParseEndpoints(b.List("advertised.listeners"))
	for _, ep := range advertised {
		if ep.Host == "0.0.0.0" {
			return invalidf("advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address.")
		}
		if !names[ep.Listener] {
			return invalidf("advertised.listeners listener names must be equal to or a subset of the ones defined in listeners. Found %s.", ep.Listener)
		}
	}
	_, _, ibl := b.raw("inter.broker.listener.name")
	_, _, ibp := b.raw("security.inter.broker.protocol")
	if ibl && ibp {
		return invalidf("Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.")
	}
	if ibl {
		if n := strings.ToUpper(b.String("inter.broker.listener.name")); !names[n] {
			return invalidf("inter.broker.listener.name must be a listener name defined in listeners. Found %s.", n)
		}
	}
	return nil
}
