package watermill

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/equeue-go/equeue"
)

// maxNameLen is the length limit of a name, or of each part of a
// namespace-qualified one (equeue.ValidateName).
const maxNameLen = 127

// scopedHashLen is the number of hex digits of the hash that ends a
// shortened scoped group name.
const scopedHashLen = 16

// TopicScopedGroup names the equeue group "<consumerGroup>.<topic>", so one
// Subscriber with a ConsumerGroup can subscribe to several topics.
//
// The group lives in the topic's namespace: for a namespace-qualified
// topic "tenant:orders" it is "tenant:<consumerGroup>.orders", the group
// "<consumerGroup>.orders" of the tenant's Namespace view. A consumerGroup
// of the topic's namespace is used without it ("tenant:svc" on
// "tenant:orders" is "tenant:svc.orders"), one of another namespace keeps
// it as the first part of the name ("other:svc" on "tenant:orders" is
// "tenant:other.svc.orders"); on a topic of the default namespace the
// group keeps its own namespace ("other:svc" on "orders" is
// "other:svc.orders").
//
// A name longer than a name may be (127 characters, equeue.ValidateName)
// is shortened to its first 110 characters, a '-' and 16 hex digits of a
// SHA-256 hash of the whole scoped name: the same group and topic always
// give the same name, and two topics another name each. For a valid group
// and topic the result is always a valid group name; an invalid one gives
// "<consumerGroup>.<topic>", which Subscribe refuses with
// equeue.ErrInvalidName.
func TopicScopedGroup(consumerGroup, topic string) string {
	if equeue.ValidateName(consumerGroup) != nil || equeue.ValidateName(topic) != nil {
		return consumerGroup + "." + topic
	}
	ns, name, qualified := strings.Cut(topic, equeue.NamespaceSeparator)
	if !qualified {
		ns, name = "", topic
		if gns, g, ok := strings.Cut(consumerGroup, equeue.NamespaceSeparator); ok {
			ns, consumerGroup = gns, g
		}
	} else if gns, g, ok := strings.Cut(consumerGroup, equeue.NamespaceSeparator); ok {
		if gns == ns {
			consumerGroup = g
		} else {
			consumerGroup = gns + "." + g
		}
	}
	name = consumerGroup + "." + name
	prefix := ""
	if ns != "" {
		prefix = ns + equeue.NamespaceSeparator
	}
	if len(name) > maxNameLen {
		sum := sha256.Sum256([]byte(prefix + name))
		name = name[:maxNameLen-1-scopedHashLen] + "-" + hex.EncodeToString(sum[:])[:scopedHashLen]
	}
	return prefix + name
}
