package console_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/console"
)

// failingBroker fails its topic listing with err and its group lookup
// with groupErr; every other call goes to the engine.
type failingBroker struct {
	console.Broker
	err      error
	groupErr error
}

func (b failingBroker) Topics(context.Context) ([]equeue.TopicInfo, error) {
	return nil, b.err
}

func (b failingBroker) Group(context.Context, string) (equeue.GroupInfo, error) {
	return equeue.GroupInfo{}, b.groupErr
}

// syncBuffer is a log destination the console's handlers and the test
// share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

var referenceRE = regexp.MustCompile(`reference ([0-9a-f]{8,})`)

// TestConsole_BrokerFailureHidesItsTextFromViewers fails a broker call
// with an error naming a store path and a node address: a consume-only
// viewer gets the status, a generic message and a reference, and the
// console's log has the full error under that reference. A not-found
// error (the viewer's own mistake) still says what it is.
func TestConsole_BrokerFailureHidesItsTextFromViewers(t *testing.T) {
	const secret = "/var/lib/equeue/node-7f3a/000042.vlog at 10.9.8.7:7000"
	var logs syncBuffer
	b := failingBroker{Broker: openEngine(t),
		err:      fmt.Errorf("read %s: %w", secret, errors.New("input/output error")),
		groupErr: fmt.Errorf("group %q: %w", "nosuch", equeue.ErrGroupNotFound)}
	s := serve(t, b, console.Options{Tokens: tokens, Logger: slog.New(slog.NewTextHandler(&logs, nil))})

	pg := s.get(t, prefix, "Authorization", "Bearer watcher-secret")
	assert.Equal(t, http.StatusBadGateway, pg.status)
	assert.NotContains(t, pg.body, "/var/lib/equeue")
	assert.NotContains(t, pg.body, "10.9.8.7")
	assert.Contains(t, pg.body, "502")
	m := referenceRE.FindStringSubmatch(pg.body)
	require.NotNil(t, m, "the page gives a reference: %s", pg.body)
	assert.Contains(t, logs.String(), m[1], "the log has the reference")
	assert.Contains(t, logs.String(), secret, "the log has the full error")

	again := referenceRE.FindStringSubmatch(s.get(t, prefix, "Authorization", "Bearer watcher-secret").body)
	require.NotNil(t, again)
	assert.NotEqual(t, m[1], again[1], "each failure has its own reference")

	nf := s.get(t, prefix+"groups/nosuch", "Authorization", "Bearer watcher-secret")
	assert.Equal(t, http.StatusNotFound, nf.status)
	assert.Contains(t, nf.body, "group not found", "a 4xx error still says what it is")
}
