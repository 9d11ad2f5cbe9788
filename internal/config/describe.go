package config

import "sort"

// Entry is one config as DescribeConfigs reports it.
type Entry struct {
	Name      string
	Value     *string // nil for null and for sensitive values
	Source    Source
	ReadOnly  bool
	Sensitive bool
	Type      Type
	Doc       string
	Synonyms  []Synonym // highest priority first; the first one is the source
}

// Synonym is one place a config's value could come from.
type Synonym struct {
	Name   string
	Value  *string // nil for sensitive values
	Source Source
}

func strPtr(s string) *string { return &s }

// DescribeTopic describes every topic config of a topic with the given
// overrides, sorted by name, the way Kafka's DescribeConfigs does: each
// entry's synonyms are the topic override (if any), then the broker synonyms
// set in the per-broker dynamic, cluster dynamic and static layers, then
// their non-null defaults. Following Kafka, broker synonyms listed before
// the first synonym's own name are dropped, so a retention set only through
// log.retention.hours is reported with source DEFAULT_CONFIG.
//
// The overrides are expected to be valid (they were checked when stored); a
// value that does not parse is shown verbatim, and an unknown name is shown
// like any config Kafka does not know: sensitive, type UNKNOWN.
func DescribeTopic(b *Broker, overrides map[string]string) []Entry {
	var out []Entry
	for _, d := range topicReg.defs {
		_, set := overrides[d.Name]
		if d.Internal && !set {
			continue
		}
		out = append(out, describeTopicConfig(b, d, overrides))
	}
	for _, k := range sortedKeys(overrides) {
		if _, ok := topicReg.byName[k]; !ok {
			out = append(out, Entry{Name: k, Source: SourceDynamicTopic, Sensitive: true, Type: Unknown,
				Synonyms: []Synonym{{Name: k, Source: SourceDynamicTopic}}})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func describeTopicConfig(b *Broker, d *Def, overrides map[string]string) Entry {
	e := Entry{Name: d.Name, Type: d.Type, Doc: d.Doc, Sensitive: d.Sensitive}
	v, _, err := topicValue(b, d, overrides)
	var value *string
	switch {
	case err != nil:
		value = strPtr(overrides[d.Name])
	case v != nil:
		value = strPtr(format(v))
	}
	var syns []Synonym
	if len(topicSynonyms[d.Name]) > 0 {
		first := topicSynonyms[d.Name][0].name
		syns = b.configSynonyms(first, brokerConfigSynonyms(first), d.Sensitive)
	}
	if _, ok := overrides[d.Name]; ok {
		syns = append([]Synonym{{Name: d.Name, Value: value, Source: SourceDynamicTopic}}, syns...)
	}
	if d.Sensitive {
		value = nil
		for i := range syns {
			syns[i].Value = nil
		}
	}
	e.Value, e.Synonyms, e.Source = value, syns, SourceDefault
	if len(syns) > 0 {
		e.Source = syns[0].Source
	}
	return e
}

// configSynonyms is Kafka's ConfigHelper.configSynonyms: the layers that set
// any of names, in precedence order, with leading entries for other names
// dropped. b may be nil.
func (b *Broker) configSynonyms(name string, names []string, sensitive bool) []Synonym {
	var out []Synonym
	add := func(layer map[string]string, src Source) {
		for _, n := range names {
			if v, ok := layer[n]; ok {
				out = append(out, Synonym{Name: n, Value: strPtr(v), Source: src})
			}
		}
	}
	if b != nil {
		add(b.dynBroker, SourceDynamicBroker)
		add(b.dynDefault, SourceDynamicDefaultBroker)
		add(b.static, SourceStaticBroker)
	}
	for _, n := range names {
		if d, ok := brokerReg.byName[n]; ok && d.Default != nil {
			out = append(out, Synonym{Name: n, Value: strPtr(*d.Default), Source: SourceDefault})
		}
	}
	for len(out) > 0 && out[0].Name != name {
		out = out[1:]
	}
	if sensitive {
		for i := range out {
			out[i].Value = nil
		}
	}
	return out
}

// DescribeBroker describes b as DescribeConfigs does for this broker's own
// resource: every broker config, plus every name set in a layer that Gregor
// does not know (reported, as Kafka does, as sensitive with type UNKNOWN),
// sorted by name.
func DescribeBroker(b *Broker) []Entry {
	var out []Entry
	for _, d := range brokerReg.defs {
		if d.Internal {
			continue
		}
		v, _ := b.lookup(d.Name)
		e := Entry{Name: d.Name, ReadOnly: d.ReadOnly, Sensitive: d.Sensitive, Type: d.Type, Doc: d.Doc}
		if v != nil && !d.Sensitive {
			e.Value = strPtr(format(v))
		}
		out = append(out, finishBrokerEntry(e, b.configSynonyms(d.Name, brokerConfigSynonyms(d.Name), d.Sensitive)))
	}
	seen := map[string]bool{}
	for _, layer := range []map[string]string{b.dynBroker, b.dynDefault, b.static} {
		for k := range layer {
			if _, known := brokerReg.byName[k]; known || seen[k] {
				continue
			}
			seen[k] = true
			e := Entry{Name: k, ReadOnly: true, Sensitive: true, Type: Unknown}
			out = append(out, finishBrokerEntry(e, b.configSynonyms(k, []string{k}, true)))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// DescribeBrokerDefaults describes the cluster-wide dynamic layer, as
// DescribeConfigs does for the broker resource named "": only the configs set
// there, with only DYNAMIC_DEFAULT_BROKER_CONFIG synonyms.
func DescribeBrokerDefaults(b *Broker) []Entry {
	var out []Entry
	for _, k := range sortedKeys(b.dynDefault) {
		e := Entry{Name: k, ReadOnly: true, Sensitive: true, Type: Unknown, Value: strPtr(b.dynDefault[k])}
		if d, ok := brokerReg.byName[k]; ok {
			e.ReadOnly, e.Sensitive, e.Type, e.Doc = d.ReadOnly, d.Sensitive, d.Type, d.Doc
		}
		if e.Sensitive {
			e.Value = nil
		}
		var syns []Synonym
		for _, s := range b.configSynonyms(k, brokerConfigSynonyms(k), e.Sensitive) {
			if s.Source == SourceDynamicDefaultBroker {
				syns = append(syns, s)
			}
		}
		out = append(out, finishBrokerEntry(e, syns))
	}
	return out
}

func finishBrokerEntry(e Entry, syns []Synonym) Entry {
	e.Synonyms, e.Source = syns, SourceDefault
	if len(syns) > 0 {
		e.Source = syns[0].Source
	}
	return e
}

// EffectiveTopic returns the configs a topic with the given overrides would
// have, as CreateTopics (v5+) reports them for a new topic (Kafka's
// KafkaConfigSchema.resolveEffectiveTopicConfigs): every topic config sorted
// by name, with its effective value and the layer it comes from, and no
// synonyms. Unlike DescribeTopic there is no synonym quirk: a retention set
// by log.retention.hours in server.properties is STATIC_BROKER_CONFIG here.
// Sensitive values are nil. The overrides are expected to be valid.
func EffectiveTopic(b *Broker, overrides map[string]string) []Entry {
	var out []Entry
	for _, d := range topicReg.defs {
		raw, set := overrides[d.Name]
		if d.Internal && !set {
			continue
		}
		e := Entry{Name: d.Name, Type: d.Type, Doc: d.Doc, Sensitive: d.Sensitive, Source: SourceDefault}
		v, src, err := topicValue(b, d, overrides)
		switch {
		case err != nil:
			e.Value, e.Source = strPtr(raw), SourceDynamicTopic
		case v != nil:
			e.Value, e.Source = strPtr(format(v)), src
		default:
			e.Source = src
		}
		if d.Sensitive {
			e.Value = nil
		}
		out = append(out, e)
	}
	return out
}
