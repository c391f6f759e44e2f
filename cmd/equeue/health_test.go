package main

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHealthHandler_UnhealthyOnceAnFsyncFailed(t *testing.T) {
	var failure error
	h := healthHandler(func() error { return failure }, true)
	rec := httptest.NewRecorder()
	h(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "ok\n", rec.Body.String())

	failure = errors.New("fsync: input/output error")
	rec = httptest.NewRecorder()
	h(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Contains(t, rec.Body.String(), "input/output error")
}

// With tokens, /healthz stays open to liveness probes but tells only that
// the store failed: the fsync error, which may name the directory's files,
// is in serve's log (the engine logs it), not in the answer.
func TestHealthHandler_WithTokensTellsNoCause(t *testing.T) {
	h := healthHandler(func() error { return errors.New("fsync /var/lib/equeue/000001.vlog: input/output error") }, false)
	rec := httptest.NewRecorder()
	h(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Equal(t, "store failed, restart the server\n", rec.Body.String())
}
