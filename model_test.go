package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/equeue-go/equeue"
)

// TestModel_RandomCalls runs random sequences of API calls against an
// in-memory engine and a plain model of topics and queues, and checks that
// they agree after every step.
func TestModel_RandomCalls(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ctx := context.Background()
		e, err := equeue.Open("", &equeue.Options{InMemory: true, MaxMessageSize: 512})
		if err != nil {
			rt.Fatal(err)
		}
		defer e.Close()
		p, _ := equeue.NewProducer(e, nil)
		model := map[string][][]string{} // topic -> queue -> bodies
		names := []string{"a", "b", "c", "bad name"}
		for step := 0; step < 60; step++ {
			topic := rapid.SampledFrom(names).Draw(rt, "topic")
			switch rapid.IntRange(0, 5).Draw(rt, "op") {
			case 0: // create
				n := rapid.IntRange(-1, 6).Draw(rt, "queues")
				err := e.CreateTopic(ctx, topic, n)
				_, exists := model[topic]
				switch {
				case topic == "bad name":
					want(rt, err, equeue.ErrInvalidName)
				case n < 0:
					want(rt, err, equeue.ErrInvalidArgument)
				case exists:
					want(rt, err, equeue.ErrTopicExists)
				default:
					want(rt, err, nil)
					if n == 0 {
						n = equeue.DefaultQueues
					}
					model[topic] = make([][]string, n)
				}
			case 1: // send
				body := rapid.StringN(0, 20, 600).Draw(rt, "body")
				key := rapid.SampledFrom([]string{"", "k1", "k2"}).Draw(rt, "key")
				m := &equeue.Message{Topic: topic, Body: []byte(body)}
				if key != "" {
					m.Keys = []string{key}
				}
				r, err := p.Send(ctx, m)
				qs, exists := model[topic]
				switch {
				case topic == "bad name":
					want(rt, err, equeue.ErrInvalidName)
				case !exists:
					want(rt, err, equeue.ErrTopicNotFound)
				case len(body) > 400:
					// near the limit the encoded size decides
					if err != nil {
						want(rt, err, equeue.ErrMessageTooLarge)
					} else {
						model[topic][r.Queue] = append(qs[r.Queue], body)
					}
				default:
					want(rt, err, nil)
					if int64(len(qs[r.Queue])) != r.Offset {
						rt.Fatalf("send to %s/%d got offset %d, model has %d", topic, r.Queue, r.Offset, len(qs[r.Queue]))
					}
					model[topic][r.Queue] = append(qs[r.Queue], body)
				}
			case 2: // add queues
				n := rapid.IntRange(0, 3).Draw(rt, "add")
				err := e.AddQueues(ctx, topic, n)
				_, exists := model[topic]
				switch {
				case n == 0: // checked before the topic is looked up
					want(rt, err, equeue.ErrInvalidArgument)
				case topic == "bad name": // checked before the topic is looked up
					want(rt, err, equeue.ErrInvalidName)
				case !exists:
					want(rt, err, equeue.ErrTopicNotFound)
				default:
					want(rt, err, nil)
					model[topic] = append(model[topic], make([][]string, n)...)
				}
			case 3: // delete
				err := e.DeleteTopic(ctx, topic)
				if topic == "bad name" {
					want(rt, err, equeue.ErrInvalidName)
				} else if _, exists := model[topic]; exists {
					want(rt, err, nil)
					delete(model, topic)
				} else {
					want(rt, err, equeue.ErrTopicNotFound)
				}
			default: // pull from a random offset
				qs, exists := model[topic]
				if !exists {
					_, err := e.Pull(ctx, &equeue.PullRequest{Topic: topic})
					if topic == "bad name" {
						want(rt, err, equeue.ErrInvalidName)
					} else {
						want(rt, err, equeue.ErrTopicNotFound)
					}
					continue
				}
				q := rapid.IntRange(0, len(qs)-1).Draw(rt, "queue")
				off := rapid.Int64Range(-1, int64(len(qs[q]))+1).Draw(rt, "offset")
				res, err := e.Pull(ctx, &equeue.PullRequest{Topic: topic, Queue: q, Offset: off, Max: 5})
				want(rt, err, nil)
				n := int64(len(qs[q]))
				switch {
				case off < 0 || off > n:
					if res.Status != equeue.PullOffsetMoved {
						rt.Fatalf("pull at %d of %d: status %v", off, n, res.Status)
					}
				case off == n:
					if res.Status != equeue.PullNoNewMessage {
						rt.Fatalf("pull at end: status %v", res.Status)
					}
				default:
					wantN := min(5, n-off)
					if int64(len(res.Messages)) != wantN {
						rt.Fatalf("pull %s/%d at %d: %d messages, want %d", topic, q, off, len(res.Messages), wantN)
					}
					for i, m := range res.Messages {
						if string(m.Body) != qs[q][off+int64(i)] || m.Offset != off+int64(i) {
							rt.Fatalf("pull %s/%d at %d: message %d differs", topic, q, off, i)
						}
					}
				}
			}
			// The engine's view of offsets matches the model.
			for name, qs := range model {
				info, err := e.Topic(ctx, name)
				if err != nil || len(info.Queues) != len(qs) {
					rt.Fatalf("topic %s: %v, %d queues, model %d", name, err, len(info.Queues), len(qs))
				}
				for i, q := range info.Queues {
					if q.MaxOffset != int64(len(qs[i])) {
						rt.Fatalf("topic %s queue %d: max %d, model %d", name, i, q.MaxOffset, len(qs[i]))
					}
				}
			}
		}
	})
}

func want(rt *rapid.T, err, target error) {
	rt.Helper()
	if target == nil {
		if err != nil {
			rt.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if !errors.Is(err, target) {
		rt.Fatalf("error %v, want %v", err, fmt.Sprint(target))
	}
}
