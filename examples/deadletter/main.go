// Deadletter is the billing service of the README's walkthrough: it joins
// the consumer group "billing" on the topic "payments" of an engine
// directory, charges each card number that passes the Luhn check and sends
// the others to the group's dead letters with equeue.DeadLetter. It stops
// once every payment the group had not handled yet was handled (all of
// them on the first run; on a later one those stored or redriven since),
// and prints what it did. A directory that holds no engine is refused, so
// a mistyped path leaves nothing behind.
//
//	go run ./examples/deadletter ./data
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/equeue-go/equeue"
)

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: deadletter DIR (an engine directory with a topic \"payments\")")
	}
	if err := run(context.Background(), os.Args[1], os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// errNoEngine is returned when the directory given holds no engine.
var errNoEngine = errors.New("no equeue engine in this directory")

// errLuhn is why a payment is refused.
var errLuhn = errors.New("card number fails the Luhn check")

func run(ctx context.Context, dir string, out io.Writer) (err error) {
	// Open makes a new, empty engine where there is none: at a mistyped
	// path that would leave one behind and fail with "topic not found".
	if err := checkEngineDir(dir); err != nil {
		return err
	}
	eng, err := equeue.Open(dir, nil)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := eng.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	info, err := eng.Topic(ctx, "payments")
	if err != nil {
		return err
	}
	stored, err := unhandled(ctx, eng, info)
	if err != nil {
		return err
	}

	var (
		mu      sync.Mutex
		results []string
		handled = make(chan struct{}, stored)
	)
	c, err := equeue.NewConsumer(eng, equeue.ConsumerOptions{
		Group:         "billing",
		Subscriptions: []equeue.Subscription{{Topic: "payments"}},
		From:          equeue.ConsumeFromEarliest,
		Handler: func(_ context.Context, m *equeue.Message) error {
			verdict := "charged"
			var herr error
			if !luhn(string(m.Body)) {
				verdict, herr = "dead letter: "+errLuhn.Error(), equeue.DeadLetter(errLuhn)
			}
			mu.Lock()
			results = append(results, fmt.Sprintf("%s/%d:%d  %s  %s", m.Topic, m.Queue, m.Offset, m.Body, verdict))
			mu.Unlock()
			select {
			case handled <- struct{}{}:
			default: // one more than counted (a delayed payment came due): never block
			}
			return herr
		},
	})
	if err != nil {
		return err
	}
	if err := c.Start(ctx); err != nil {
		return err
	}
	timeout := time.After(time.Minute)
	for range stored {
		select {
		case <-handled:
		case <-timeout:
			return errors.Join(fmt.Errorf("handled fewer than the %d stored payments within a minute", stored), c.Close())
		}
	}
	// Close commits, and waits for the dead letters to be stored.
	if err := c.Close(); err != nil {
		return err
	}
	sort.Strings(results)
	for _, r := range results {
		fmt.Fprintln(out, r)
	}
	return nil
}

// checkEngineDir returns an error matching errNoEngine unless dir holds an
// engine: it must exist and hold Badger's MANIFEST file, as every engine
// directory does (the equeue command checks directories the same way).
func checkEngineDir(dir string) error {
	_, err := os.Stat(filepath.Join(dir, "MANIFEST"))
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %s (create the topic with \"equeue --dir %s topic create payments\" first, or give the directory that holds it)", errNoEngine, dir, dir)
	}
	return err
}

// unhandled counts the payments the group billing has not handled yet:
// every stored one for a new group, those past its commits otherwise (a
// second run), and those waiting in its retry topic (dead letters
// redriven since).
func unhandled(ctx context.Context, eng *equeue.Engine, info equeue.TopicInfo) (int64, error) {
	lag := map[int]int64{}
	var n int64
	g, err := eng.Group(ctx, "billing")
	switch {
	case errors.Is(err, equeue.ErrGroupNotFound):
	case err != nil:
		return 0, err
	default:
		for _, q := range g.Queues {
			switch q.Topic {
			case info.Name:
				lag[q.Queue] = q.Lag
			case equeue.RetryTopic("billing"):
				n += q.Lag
			}
		}
	}
	for _, q := range info.Queues {
		if l, ok := lag[q.ID]; ok {
			n += l
		} else {
			n += q.Messages
		}
	}
	return n, nil
}

// luhn reports whether the digits of s pass the Luhn checksum.
func luhn(s string) bool {
	digits := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		if r == ' ' {
			return -1
		}
		return 'x'
	}, s)
	if digits == "" || strings.ContainsRune(digits, 'x') {
		return false
	}
	sum := 0
	for i := range len(digits) {
		d := int(digits[len(digits)-1-i] - '0')
		if i%2 == 1 {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}
