package watermill

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/equeue-go/equeue"
)

// TopicCreator is implemented by brokers that can create topics;
// *equeue.Engine does. When the configured Broker implements it, the
// Publisher and the Subscriber create a missing topic on first use.
type TopicCreator interface {
	// CreateTopic creates a topic with queues queues (0: the broker's
	// default). It returns equeue.ErrTopicExists if the topic exists.
	CreateTopic(ctx context.Context, name string, queues int) error
}

var _ TopicCreator = (*equeue.Engine)(nil)

// topicMaker creates each topic at most once per Publisher or Subscriber,
// as long as it remembers the topic: it remembers the maxKnownTopics names
// used last.
type topicMaker struct {
	b      equeue.Broker
	queues int
	done   *recentNames // the topics known to exist
}

func newTopicMaker(b equeue.Broker, queues int) *topicMaker {
	return &topicMaker{b: b, queues: queues, done: newRecentNames(maxKnownTopics)}
}

// ensure creates topic with the configured queue count unless it exists.
// An existing topic keeps its queue count. Brokers that cannot create
// topics are left to auto-create them or to refuse unknown ones.
//
// An error says only that the topic was not created: a broker may refuse
// to create a topic that exists (a remote client whose token lacks the
// admin right), so callers go on with the topic and report the error only
// if the topic turns out to be missing (see notCreated). A failed creation
// is tried again on the next call until exists records the topic.
func (t *topicMaker) ensure(ctx context.Context, topic string) error {
	if t.done.has(topic) {
		return nil
	}
	tc, ok := t.b.(TopicCreator)
	// The engine creates its retry and dead-letter topics itself and refuses
	// to create them on request.
	internal := strings.HasPrefix(topic, equeue.RetryTopicPrefix) || strings.HasPrefix(topic, equeue.DLQTopicPrefix)
	if ok && !internal {
		if err := tc.CreateTopic(ctx, topic, t.queues); err != nil && !errors.Is(err, equeue.ErrTopicExists) {
			return fmt.Errorf("equeue watermill: create topic %q: %w", topic, err)
		}
	}
	t.done.add(topic)
	return nil
}

// forget drops what t knows of topic (deleted since), so that ensure
// creates it again.
func (t *topicMaker) forget(topic string) { t.done.remove(topic) }

// exists records that topic exists, so that ensure does not try to create
// it again.
func (t *topicMaker) exists(topic string) { t.done.add(topic) }

// notCreated returns err, the failure of an operation on a topic, with
// createErr, why ensure did not create the topic, added when err says that
// the topic does not exist.
func notCreated(err, createErr error) error {
	if createErr == nil || !errors.Is(err, equeue.ErrTopicNotFound) {
		return err
	}
	return fmt.Errorf("%w (%w)", err, createErr)
}
