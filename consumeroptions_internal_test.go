package equeue

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The renamed retry options and their former names end up holding the same
// value, whichever name the user set, so every reader sees the setting.
func TestConsumerOptions_RetryNamesAndFormerNames(t *testing.T) {
	quick := []time.Duration{time.Millisecond, 2 * time.Millisecond}
	cases := []struct {
		name      string
		in        ConsumerOptions
		wantTopic []time.Duration
		wantLocal time.Duration
	}{
		{"defaults", ConsumerOptions{}, DefaultRetryDelays, time.Second},
		{"new names", ConsumerOptions{RetryTopicDelays: quick, LocalRetryDelay: 3 * time.Millisecond}, quick, 3 * time.Millisecond},
		{"former names", ConsumerOptions{RetryDelays: quick, RetryDelay: 4 * time.Millisecond}, quick, 4 * time.Millisecond},
		{"both, equal", ConsumerOptions{RetryTopicDelays: quick, RetryDelays: quick, LocalRetryDelay: 5 * time.Millisecond, RetryDelay: 5 * time.Millisecond}, quick, 5 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := c.in
			o.setDefaults()
			assert.Equal(t, c.wantTopic, o.RetryTopicDelays)
			assert.Equal(t, c.wantTopic, o.RetryDelays)
			assert.Equal(t, c.wantLocal, o.LocalRetryDelay)
			assert.Equal(t, c.wantLocal, o.RetryDelay)
		})
	}
}

// A new name and its former name set to different values, or a negative
// new-name value, are refused before anything starts.
func TestConsumerOptions_RetryNamesThatDisagreeAreRefused(t *testing.T) {
	base := func() ConsumerOptions {
		return ConsumerOptions{Group: "g", Subscriptions: []Subscription{{Topic: "t"}}, Handler: func(context.Context, *Message) error { return nil }}
	}
	cases := map[string]func(o *ConsumerOptions){
		"topic delays differ": func(o *ConsumerOptions) {
			o.RetryTopicDelays, o.RetryDelays = []time.Duration{time.Second}, []time.Duration{time.Minute}
		},
		"local delays differ":   func(o *ConsumerOptions) { o.LocalRetryDelay, o.RetryDelay = time.Second, time.Minute },
		"negative topic delay":  func(o *ConsumerOptions) { o.RetryTopicDelays = []time.Duration{-1} },
		"negative local delay":  func(o *ConsumerOptions) { o.LocalRetryDelay = -1 },
		"negative former delay": func(o *ConsumerOptions) { o.RetryDelay = -1 },
	}
	for name, set := range cases {
		t.Run(name, func(t *testing.T) {
			o := base()
			set(&o)
			assert.ErrorIs(t, o.validate(), ErrInvalidOptions)
		})
	}
	o := base()
	assert.NoError(t, o.validate(), "the base options are valid")
}
