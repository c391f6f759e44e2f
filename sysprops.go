package equeue

import "maps"

// SysProperties returns a copy of m's engine-owned properties (retry origin,
// last error), or nil when it has none. It is for transports such as package
// remote; applications read single properties with SysProperty.
func (m *Message) SysProperties() map[string]string {
	if len(m.sys) == 0 {
		return nil
	}
	return maps.Clone(m.sys)
}

// SetSysProperties replaces m's engine-owned properties with a copy of p. It
// is for transports such as package remote, which carry messages across the
// wire; applications should not call it.
func (m *Message) SetSysProperties(p map[string]string) {
	if len(p) == 0 {
		m.sys = nil
		return
	}
	m.sys = maps.Clone(p)
}
