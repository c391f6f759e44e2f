package equeue

import (
	"errors"
	"reflect"
	"sync"
)

// clientSet tracks the consumers and producers opened on an engine
// in-process, so that Engine.Close can close them first: consumers drain
// and commit while the engine still stores their offsets, then producers
// finish their pending asynchronous sends.
type clientSet struct {
	mu        sync.Mutex
	consumers map[*Consumer]struct{}
	pulls     map[*PullConsumer]struct{}
	producers map[*Producer]struct{}
}

// nilBroker reports whether b is no broker: a nil interface, or a nil
// pointer in one (an *Engine left nil by a failed Open, a nil *Namespace),
// whose first call would panic. The client constructors refuse both.
func nilBroker(b Broker) bool {
	if b == nil {
		return true
	}
	v := reflect.ValueOf(b)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// engineOf returns the engine behind b when b is one in-process.
func engineOf(b Broker) *Engine {
	e, _ := b.(*Engine)
	return e
}

// BrokerWrapper is implemented by a Broker that wraps another, such as a
// type that embeds an *Engine to check rights, count or refuse some calls:
// Unwrap returns the wrapped broker. Through it producers and consumers
// opened on the wrapper find the in-process engine behind it, as they find
// it behind a Namespace: the engine's Close closes them first, and its
// Stats count what they report of themselves (ConsumerHookPanics,
// ExpiredMessages). Embedding an *Engine is not enough: a wrapper without
// Unwrap is a broker of its own, as a remote one is, and its clients'
// recovered hook panics are counted nowhere (they are still logged, or
// reported by the futures). Unwrap changes nothing on the calls' path:
// they still go through the wrapper's methods.
type BrokerWrapper interface {
	// Unwrap returns the broker this one wraps.
	Unwrap() Broker
}

// maxUnwrap bounds how many wrappers trackerOf looks through, so that an
// Unwrap that returns its own broker, or a cycle, does not loop for ever.
const maxUnwrap = 16

// trackerOf returns the engine that closes clients of b on Close: the
// engine itself, or the engine behind a Namespace view or behind
// wrappers (BrokerWrapper); nil for any other broker.
func trackerOf(b Broker) *Engine {
	for range maxUnwrap {
		switch x := b.(type) {
		case *Engine:
			return x
		case *Namespace:
			return x.e
		case BrokerWrapper:
			if b = x.Unwrap(); nilBroker(b) {
				return nil
			}
		default:
			return nil
		}
	}
	return nil
}

func (s *clientSet) addConsumer(c *Consumer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.consumers == nil {
		s.consumers = map[*Consumer]struct{}{}
	}
	s.consumers[c] = struct{}{}
}

func (s *clientSet) removeConsumer(c *Consumer) {
	s.mu.Lock()
	delete(s.consumers, c)
	s.mu.Unlock()
}

func (s *clientSet) addPullConsumer(pc *PullConsumer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pulls == nil {
		s.pulls = map[*PullConsumer]struct{}{}
	}
	s.pulls[pc] = struct{}{}
}

func (s *clientSet) removePullConsumer(pc *PullConsumer) {
	s.mu.Lock()
	delete(s.pulls, pc)
	s.mu.Unlock()
}

func (s *clientSet) addProducer(p *Producer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.producers == nil {
		s.producers = map[*Producer]struct{}{}
	}
	s.producers[p] = struct{}{}
}

func (s *clientSet) removeProducer(p *Producer) {
	s.mu.Lock()
	delete(s.producers, p)
	s.mu.Unlock()
}

// closeAll closes every consumer and pull consumer (concurrently: each
// drains its own handlers, commits and leaves), then every producer, and
// returns what failed. A consumer its user is closing already is waited
// for, and what its close failed to do is returned too.
func (s *clientSet) closeAll() error {
	s.mu.Lock()
	cs := make([]func() error, 0, len(s.consumers)+len(s.pulls))
	for c := range s.consumers {
		cs = append(cs, c.closeForEngine)
	}
	for pc := range s.pulls {
		cs = append(cs, pc.closeForEngine)
	}
	ps := make([]*Producer, 0, len(s.producers))
	for p := range s.producers {
		ps = append(ps, p)
	}
	s.mu.Unlock()
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, closeForEngine := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = closeForEngine()
		}()
	}
	wg.Wait()
	for _, p := range ps {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}
