package watermill

import (
	"fmt"
	"strconv"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/equeue-go/equeue"
)

// UUIDProperty is the equeue property that carries the Watermill message
// UUID. The equeue message ID is left to the broker, which makes it unique
// per stored message even when one Watermill message is published twice.
const UUIDProperty = "_watermill_uuid"

// Metadata keys set on every received message. They say where the message
// is stored; they are not sent on when the message is published again.
const (
	// MetadataTopic is the topic the message was read from.
	MetadataTopic = "equeue_topic"
	// MetadataQueue is the queue of the topic, in decimal.
	MetadataQueue = "equeue_queue"
	// MetadataOffset is the message's offset in its queue, in decimal.
	MetadataOffset = "equeue_offset"
	// MetadataMessageID is the ID the broker stored the message under.
	MetadataMessageID = "equeue_message_id"
	// MetadataAttempt counts earlier failed deliveries to this consumer, in decimal.
	MetadataAttempt = "equeue_attempt"
)

var receivedKeys = []string{MetadataTopic, MetadataQueue, MetadataOffset, MetadataMessageID, MetadataAttempt}

// Marshaler turns a Watermill message into an equeue message for topic.
type Marshaler interface {
	// Marshal returns the equeue message to send msg as, to topic.
	Marshal(topic string, msg *message.Message) (*equeue.Message, error)
}

// Unmarshaler turns a received equeue message into a Watermill message.
// An error, or no message, is handled like a Nack. The equeue_* metadata
// keys are set on the message afterwards, in a new Metadata if it is nil.
type Unmarshaler interface {
	// Unmarshal returns the Watermill message to deliver for m.
	Unmarshal(m *equeue.Message) (*message.Message, error)
}

// DefaultMarshaler maps the payload to the body, every metadata entry to a
// property, and the UUID to the UUIDProperty property. A metadata entry
// named UUIDProperty would share that property: Marshal refuses such a
// message with equeue.ErrInvalidArgument rather than lose the entry. It is
// both a Marshaler and an Unmarshaler.
type DefaultMarshaler struct {
	// KeyMetadata, when set, names a metadata entry whose value becomes the
	// message's routing key: messages with the same key land in the same
	// queue, so an orderly subscriber receives them in publish order.
	KeyMetadata string
	// TagMetadata, when set, names a metadata entry whose value becomes the
	// message's tag, which SubscriberConfig.Filter selects on.
	TagMetadata string
}

// Marshal implements Marshaler.
func (d DefaultMarshaler) Marshal(topic string, msg *message.Message) (*equeue.Message, error) {
	if _, ok := msg.Metadata[UUIDProperty]; ok {
		return nil, fmt.Errorf("%w: metadata key %q is reserved for the message UUID", equeue.ErrInvalidArgument, UUIDProperty)
	}
	props := make(map[string]string, len(msg.Metadata)+1)
	for k, v := range msg.Metadata {
		props[k] = v
	}
	for _, k := range receivedKeys {
		delete(props, k)
	}
	props[UUIDProperty] = msg.UUID
	m := &equeue.Message{Topic: topic, Body: msg.Payload, Properties: props}
	if d.KeyMetadata != "" {
		if k := msg.Metadata.Get(d.KeyMetadata); k != "" {
			m.Keys = []string{k}
		}
	}
	if d.TagMetadata != "" {
		m.Tag = msg.Metadata.Get(d.TagMetadata)
	}
	return m, nil
}

// Unmarshal implements Unmarshaler. A message without the UUID property
// (sent by a plain equeue producer) gets its equeue ID as UUID.
func (DefaultMarshaler) Unmarshal(m *equeue.Message) (*message.Message, error) {
	uuid, ok := m.Properties[UUIDProperty]
	if !ok {
		uuid = m.ID
	}
	msg := message.NewMessage(uuid, m.Body)
	for k, v := range m.Properties {
		if k != UUIDProperty {
			msg.Metadata.Set(k, v)
		}
	}
	return msg, nil
}

// setReceivedMetadata sets the equeue_* metadata keys of msg from m, making
// msg's Metadata if the Unmarshaler left it nil. The subscriber calls it
// after the Unmarshaler, whichever it is.
func setReceivedMetadata(msg *message.Message, m *equeue.Message) {
	if msg.Metadata == nil {
		msg.Metadata = make(message.Metadata, len(receivedKeys))
	}
	msg.Metadata.Set(MetadataTopic, m.Topic)
	msg.Metadata.Set(MetadataQueue, strconv.Itoa(m.Queue))
	msg.Metadata.Set(MetadataOffset, strconv.FormatInt(m.Offset, 10))
	msg.Metadata.Set(MetadataMessageID, m.ID)
	msg.Metadata.Set(MetadataAttempt, strconv.Itoa(m.Attempt))
}
