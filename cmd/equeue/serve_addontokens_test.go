package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestServe_ScopedTokensReachNoWholeEngineAddOn: the console and a Kafka
// listener without --kafka-namespace serve the whole engine, so a token
// scoped to a namespace, even with every right, is unknown to them: the
// console answers 401 to its pages and actions, and the listener fails its
// SASL authentication. The engine's topics are unchanged.
func TestServe_ScopedTokensReachNoWholeEngineAddOn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, "--dir", dir, "topic", "create", "orders", "--queues", "2")
	addr, caddr, kaddr := freePort(t), freePort(t), freePort(t)
	srv := startServe(t, "--dir", dir, "--listen", addr, "--console", caddr, "--kafka", kaddr,
		"--token", "ops=all", "--token", "ta=all@tenant-a")
	base := "http://" + caddr + "/"
	eventually(t, 20*time.Second, "the console and the Kafka listener answer", func() bool {
		if srv.exited() {
			t.Fatalf("serve exited early: %v\n%s", srv.err, srv.stderr)
		}
		code, _, err := httpGet(base + "login")
		if err != nil || code != http.StatusOK {
			return false
		}
		c, err := net.Dial("tcp", kaddr)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	})

	c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer c.CloseIdleConnections()
	send := func(method, path string, form url.Values) int {
		req, err := http.NewRequest(method, base+path, strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer ta")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := send(http.MethodGet, "topics/orders", nil); code != http.StatusUnauthorized {
		t.Errorf("console page with a scoped token: %d, want 401", code)
	}
	if code := send(http.MethodPost, "topics/orders/queues", url.Values{"count": {"1"}, "confirm": {"1"}}); code != http.StatusUnauthorized {
		t.Errorf("console action with a scoped token: %d, want 401", code)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ct := kmsg.NewPtrCreatePartitionsRequest()
	ct.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "orders", Count: 4}}
	if _, err := ct.RequestWith(ctx, saslClient(t, kaddr, "ta")); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("Kafka CreatePartitions with a scoped token: %v, want a SASL authentication failure", err)
	}

	topics := decode[[]topicJSON](t, ok(t, "--server", addr, "--token", "ops", "topic", "list", "--json"))
	if len(topics) != 1 || topics[0].Name != "orders" || len(topics[0].Queues) != 2 {
		t.Errorf("topics after the refused calls: %+v", topics)
	}
	if code := srv.stop(t); code != 0 {
		t.Fatalf("serve exited %d:\n%s", code, srv.stderr)
	}
}
