package config

import "strings"

// AlterOp is an IncrementalAlterConfigs operation, numbered as on the wire.
type AlterOp int8

// IncrementalAlterConfigs operations.
const (
	AlterSet      AlterOp = 0
	AlterDelete   AlterOp = 1
	AlterAppend   AlterOp = 2
	AlterSubtract AlterOp = 3
)

// String returns Kafka's name for the operation.
func (op AlterOp) String() string {
	switch op {
	case AlterSet:
		return "SET"
	case AlterDelete:
		return "DELETE"
	case AlterAppend:
		return "APPEND"
	case AlterSubtract:
		return "SUBTRACT"
	}
	return "UNKNOWN"
}

// AlterEntry is one operation of an IncrementalAlterConfigs request.
// A SET with a nil Value removes the config, as DELETE does.
type AlterEntry struct {
	Name  string
	Op    AlterOp
	Value *string
}

// ApplyIncremental applies ops to current, the configs stored for one topic
// (isTopic) or one broker resource, and returns the new set; current is not
// modified. It follows Kafka's controller: APPEND and SUBTRACT are allowed
// only on LIST configs; APPEND adds values not already present and SUBTRACT
// removes them; a list that is not set starts from the config's default
// (Kafka's registry default, e.g. "delete" for cleanup.policy). The result is
// validated as the stored configs of that resource: topic overrides with
// ValidateTopicOverrides, broker configs against the dynamic-update rules
// (read-only configs refused). Naming one config twice is INVALID_REQUEST.
func ApplyIncremental(current map[string]string, ops []AlterEntry, isTopic bool) (map[string]string, error) {
	seen := make(map[string]bool, len(ops))
	for _, op := range ops {
		if seen[op.Name] {
			return nil, badRequestf("Error due to duplicate config keys")
		}
		seen[op.Name] = true
	}
	out := cloneMap(current)
	for _, op := range ops {
		if err := applyOp(out, op, isTopic); err != nil {
			return nil, err
		}
	}
	if isTopic {
		return out, ValidateTopicOverrides(out)
	}
	return out, checkDynamic(out, true)
}

func applyOp(m map[string]string, op AlterEntry, isTopic bool) error {
	reg := brokerReg
	if isTopic {
		reg = topicReg
	}
	switch op.Op {
	case AlterSet:
		if op.Value == nil {
			delete(m, op.Name)
		} else {
			m[op.Name] = *op.Value
		}
	case AlterDelete:
		delete(m, op.Name)
	case AlterAppend, AlterSubtract:
		d, ok := reg.byName[op.Name]
		if !ok || d.Type != List {
			return invalidf("Can't %s to key %s because its type is not LIST.", op.Op, op.Name)
		}
		if op.Value == nil {
			return invalidf("Can't %s a null value to key %s.", op.Op, op.Name)
		}
		m[op.Name] = strings.Join(appendOrSubtract(m, d, op), ",")
	default:
		return badRequestf("Unknown config operation %d for key %s", op.Op, op.Name)
	}
	return nil
}

// appendOrSubtract works on the raw comma-separated form, as Kafka's
// controller does, so "a, b" has the items "a" and " b".
func appendOrSubtract(m map[string]string, d *Def, op AlterEntry) []string {
	cur, ok := m[d.Name]
	if !ok && d.Default != nil {
		cur, ok = *d.Default, true
	}
	var items []string
	if ok {
		for _, s := range strings.Split(cur, ",") {
			if s != "" {
				items = append(items, s)
			}
		}
	}
	for _, v := range strings.Split(*op.Value, ",") {
		if op.Op == AlterAppend {
			if !contains(items, v) {
				items = append(items, v)
			}
			continue
		}
		for i, it := range items {
			if it == v {
				items = append(items[:i], items[i+1:]...)
				break
			}
		}
	}
	return items
}
