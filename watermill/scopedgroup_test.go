package watermill_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	eqwm "github.com/equeue-go/equeue/watermill"
)

// TestTopicScopedGroup_LongNamesAreShortened: a valid group and a valid
// topic can make "<group>.<topic>" longer than a name may be; the scoped
// group is then shortened to a valid name, the same for the same pair and
// another for another topic, and Subscribe works on both topics.
func TestTopicScopedGroup_LongNamesAreShortened(t *testing.T) {
	group := "svc-" + strings.Repeat("g", 96)
	t1, t2 := strings.Repeat("t", 100)+"-1", strings.Repeat("t", 100)+"-2"
	require.NoError(t, equeue.ValidateName(group))
	require.NoError(t, equeue.ValidateName(t1))

	g1, g2 := eqwm.TopicScopedGroup(group, t1), eqwm.TopicScopedGroup(group, t2)
	require.NoError(t, equeue.ValidateName(g1), g1)
	require.NoError(t, equeue.ValidateName(g2), g2)
	assert.Equal(t, g1, eqwm.TopicScopedGroup(group, t1), "deterministic")
	assert.NotEqual(t, g1, g2, "one group per topic")
	assert.True(t, strings.HasPrefix(g1, group+"."), "%s starts with the group", g1)
	assert.Equal(t, "svc.t1", eqwm.TopicScopedGroup("svc", "t1"), "a name that fits is unchanged")

	e := openEngine(t)
	s := newSubscriber(t, eqwm.SubscriberConfig{Broker: e, ConsumerGroup: group, GroupName: eqwm.TopicScopedGroup})
	for _, topic := range []string{t1, t2} {
		_, err := s.Subscribe(ctxT(t), topic)
		require.NoError(t, err, topic)
	}
	for _, g := range []string{g1, g2} {
		gi, err := e.Group(ctxT(t), g)
		require.NoError(t, err)
		assert.Len(t, gi.Members, 1, g)
	}
}

// TestTopicScopedGroup_NamespacedTopic: a namespace-qualified topic
// ("tenant:orders") gets its scoped group in the topic's namespace
// ("tenant:svc.orders"), where a Namespace view of the tenant sees it,
// not in a namespace named after the group ("svc.tenant").
func TestTopicScopedGroup_NamespacedTopic(t *testing.T) {
	assert.Equal(t, "tenant:svc.orders", eqwm.TopicScopedGroup("svc", "tenant:orders"))
	assert.Equal(t, "tenant:svc.orders", eqwm.TopicScopedGroup("tenant:svc", "tenant:orders"), "a group of the topic's namespace")
	assert.Equal(t, "tenant:other.svc.orders", eqwm.TopicScopedGroup("other:svc", "tenant:orders"), "a group of another namespace")
	assert.Equal(t, "other:svc.orders", eqwm.TopicScopedGroup("other:svc", "orders"), "a topic of the default namespace")
	long := eqwm.TopicScopedGroup("svc", "tenant:"+strings.Repeat("o", 127))
	require.NoError(t, equeue.ValidateName(long), long)
	assert.True(t, strings.HasPrefix(long, "tenant:svc."), long)

	e := openEngine(t)
	s := newSubscriber(t, eqwm.SubscriberConfig{Broker: e, ConsumerGroup: "svc", GroupName: eqwm.TopicScopedGroup})
	_, err := s.Subscribe(ctxT(t), "tenant:orders")
	require.NoError(t, err)
	ns, err := e.Namespace("tenant")
	require.NoError(t, err)
	gi, err := ns.Group(ctxT(t), "svc.orders")
	require.NoError(t, err)
	assert.Len(t, gi.Members, 1)
	groups, err := e.Groups(ctxT(t))
	require.NoError(t, err)
	for _, g := range groups {
		assert.False(t, strings.HasPrefix(g.Name, "svc."), "no group outside the topic's namespace: %s", g.Name)
	}
}
