package otel

import (
	"maps"

	"go.opentelemetry.io/otel/propagation"
)

// readCarrier reads trace context from a message's properties.
type readCarrier map[string]string

var _ propagation.TextMapCarrier = readCarrier(nil)

func (c readCarrier) Get(key string) string { return c[key] }

func (c readCarrier) Set(string, string) {}

func (c readCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// writeCarrier collects what a propagator injects, to be merged into a copy
// of the message's properties: the caller's map may be shared with other
// messages and goroutines, so it is never written into.
type writeCarrier map[string]string

func (c writeCarrier) Get(key string) string { return c[key] }

func (c writeCarrier) Set(key, value string) { c[key] = value }

func (c writeCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// withProperties returns props with add set over it, as a new map; props
// itself when add is empty.
func withProperties(props, add map[string]string) map[string]string {
	if len(add) == 0 {
		return props
	}
	out := make(map[string]string, len(props)+len(add))
	maps.Copy(out, props)
	maps.Copy(out, add)
	return out
}
