package console_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/console"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const prefix = "/admin/"

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// eventually waits for cond with a deadline instead of sleeping.
func eventually(t testing.TB, within time.Duration, cond func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v: %s", within, msg)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func openEngine(t testing.TB) *equeue.Engine {
	t.Helper()
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	return e
}

// seeded is what seed stored.
type seeded struct {
	e         *equeue.Engine
	poisonID  string
	keyed     string // a key with messages
	keyedID   string // the ID of one message with that key
	lastBody  string
	ordersMax int64
}

// seed stores topics, messages, a group with lag, a group with a dead
// letter, a broadcasting group and a delayed message.
func seed(t testing.TB, e *equeue.Engine) seeded {
	t.Helper()
	ctx := ctxT(t)
	s := seeded{e: e, keyed: "customer-7"}
	require.NoError(t, e.CreateTopic(ctx, "orders", 4))
	require.NoError(t, e.CreateTopic(ctx, "payments", 2))
	p, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	defer p.Close()
	send := func(m *equeue.Message) equeue.SendResult {
		r, err := p.Send(ctx, m)
		require.NoError(t, err)
		return r
	}
	for i := range 24 {
		body := fmt.Sprintf(`{"order":%d,"customer":"customer-%d","items":[{"sku":"A-%d","qty":%d}],"total":%d.50}`, i, i%8, i, i%3+1, 10+i)
		r := send(&equeue.Message{Topic: "orders", Tag: "created", Keys: []string{fmt.Sprintf("customer-%d", i%8)}, Body: []byte(body), Properties: map[string]string{"source": "web", "region": "eu"}})
		if i%8 == 7 {
			s.keyedID = r.ID
		}
	}
	poison := send(&equeue.Message{Topic: "orders", Tag: "created", Keys: []string{"customer-poison"}, Body: []byte(`{"order":"poison"}`)})
	s.poisonID = poison.ID
	for i := range 6 {
		send(&equeue.Message{Topic: "payments", Keys: []string{fmt.Sprintf("pay-%d", i)}, Body: []byte(fmt.Sprintf("payment %d captured", i))})
	}

	// billing handles every order and dead-letters the poison one.
	done := make(chan struct{}, 64)
	c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{
		Group: "billing", Subscriptions: []equeue.Subscription{{Topic: "orders"}}, CommitInterval: 10 * time.Millisecond,
		Handler: func(_ context.Context, m *equeue.Message) error {
			if strings.Contains(string(m.Body), "poison") {
				return equeue.DeadLetter(errors.New("cannot parse order: unexpected token"))
			}
			done <- struct{}{}
			return nil
		}})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	for range 24 {
		<-done
	}
	eventually(t, 20*time.Second, func() bool {
		dl, err := e.ListDeadLetters(ctx, "billing", equeue.ListDeadLettersRequest{From: 0, Max: 10})
		g, gerr := e.Group(ctx, "billing")
		return err == nil && gerr == nil && len(dl) == 1 && lag(g) == 0
	}, "billing consumed everything and dead-lettered the poison order")
	require.NoError(t, c.Close())

	// audit joins payments and orders and reads nothing: it has lag.
	a, err := equeue.NewConsumer(e, equeue.ConsumerOptions{
		Group: "audit", Subscriptions: []equeue.Subscription{{Topic: "payments"}},
		Handler:          func(context.Context, *equeue.Message) error { return errors.New("audit is down") },
		RetryTopicDelays: []time.Duration{time.Hour}, MaxAttempts: 2, CommitInterval: 10 * time.Millisecond,
	})
	require.NoError(t, err)
	require.NoError(t, a.Start(ctx))
	eventually(t, 20*time.Second, func() bool {
		ti, err := e.Topic(ctx, equeue.RetryTopic("audit"))
		return err == nil && len(ti.Queues) > 0 && ti.Queues[0].MaxOffset > 0 || delayedPending(ctx, e) >= 6
	}, "audit failures went to its retry topic")
	require.NoError(t, a.Close())

	// More orders after billing stopped: lag.
	for i := range 5 {
		r := send(&equeue.Message{Topic: "orders", Tag: "updated", Keys: []string{s.keyed}, Body: []byte(fmt.Sprintf(`{"order":%d,"status":"paid"}`, 100+i))})
		s.lastBody = fmt.Sprintf(`{"order":%d,"status":"paid"}`, 100+i)
		_ = r
	}
	send(&equeue.Message{Topic: "orders", Keys: []string{"later"}, Body: []byte("reminder"), Delay: time.Hour})
	ti, err := e.Topic(ctx, "orders")
	require.NoError(t, err)
	for _, q := range ti.Queues {
		s.ordersMax += q.MaxOffset
	}
	return s
}

func delayedPending(ctx context.Context, e *equeue.Engine) int {
	d, err := e.Delayed(ctx, 1)
	if err != nil {
		return 0
	}
	return d.Pending
}

func lag(g equeue.GroupInfo) int64 {
	var n int64
	for _, q := range g.Queues {
		n += q.Lag
	}
	return n
}

// site is a console served by httptest at prefix.
type site struct {
	srv *httptest.Server
	hc  *http.Client
}

func serve(t testing.TB, b console.Broker, o console.Options) *site {
	t.Helper()
	if o.Prefix == "" {
		o.Prefix = prefix
	}
	mux := http.NewServeMux()
	mux.Handle("/"+strings.Trim(o.Prefix, "/")+"/", console.New(b, o))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "host app", http.StatusTeapot) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t.Cleanup(hc.CloseIdleConnections)
	return &site{srv: srv, hc: hc}
}

type page struct {
	status int
	body   string
	header http.Header
}

func (s *site) get(t testing.TB, path string, hdr ...string) page {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.srv.URL+path, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return s.do(t, req)
}

func (s *site) post(t testing.TB, path string, form url.Values, hdr ...string) page {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.srv.URL+path, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return s.do(t, req)
}

func (s *site) do(t testing.TB, req *http.Request) page {
	t.Helper()
	resp, err := s.hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return page{status: resp.StatusCode, body: string(b), header: resp.Header}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf returns the CSRF token a page carries.
func csrf(t testing.TB, p page) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(p.body)
	require.NotNil(t, m, "page has a CSRF token")
	return m[1]
}
