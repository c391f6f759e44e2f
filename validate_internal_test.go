package equeue

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestValidateMessage_PlainAsChecked: validateMessage answers every message
// as checkMessageFields, which runs each check, does: the messages it lets
// through without the checks are those no check refuses.
func TestValidateMessage_PlainAsChecked(t *testing.T) {
	epoch := time.Unix(0, 0)
	for _, c := range []struct {
		name string
		m    Message
	}{
		{"empty", Message{}},
		{"body, keys, tag, properties", Message{Body: []byte("b"), Keys: []string{"", "k"}, Tag: "t", Properties: map[string]string{"": ""}}},
		{"ID at the limit", Message{ID: strings.Repeat("i", MaxIDBytes)}},
		{"ID over the limit", Message{ID: strings.Repeat("i", MaxIDBytes+1)}},
		{"ID not UTF-8", Message{ID: "\xff\xfe"}},
		{"zero times in a location", Message{BornAt: time.Time{}.In(time.FixedZone("x", 3600)), ExpiresAt: time.Time{}.In(time.UTC)}},
		{"attempt -1", Message{Attempt: -1}},
		{"attempt 1", Message{Attempt: 1}},
		{"attempt at the limit", Message{Attempt: maxRecordAttempt}},
		{"attempt over the limit", Message{Attempt: maxRecordAttempt + 1}},
		{"born at the epoch", Message{BornAt: epoch}},
		{"born before 1678", Message{BornAt: minRecordTime.Add(-time.Second)}},
		{"deliver after 2262", Message{DeliverAt: maxRecordTime.Add(time.Second)}},
		{"expires after 2262", Message{ExpiresAt: maxRecordTime.Add(time.Second)}},
		{"expires at the epoch", Message{ExpiresAt: epoch}},
		{"retry origin", Message{Properties: map[string]string{"a": "b"}, Attempt: 2, BornAt: time.Now()}},
	} {
		for _, again := range []bool{false, true} {
			m := c.m
			got, gotErr := validateMessage(3, &m, again)
			want, wantErr := checkMessageFields(3, &m, again)
			if wantErr != nil {
				assert.EqualError(t, gotErr, wantErr.Error(), "%s, stored again %v", c.name, again)
				continue
			}
			if assert.NoError(t, gotErr, "%s, stored again %v", c.name, again) {
				assert.Equal(t, want, got, "%s, stored again %v", c.name, again)
			}
		}
	}
}
