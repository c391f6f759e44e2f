package console_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/equeue-go/equeue/console"
)

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// bigUpload is a multipart form of one file part of size bytes, made as it
// is read.
func bigUpload(size int64) (body *countingReader, contentType string) {
	const boundary = "b0undary"
	head := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"f\"; filename=\"f\"\r\nContent-Type: application/octet-stream\r\n\r\n"
	tail := "\r\n--" + boundary + "--\r\n"
	r := io.MultiReader(strings.NewReader(head), io.LimitReader(repeatReader('x'), size), strings.NewReader(tail))
	return &countingReader{r: r}, "multipart/form-data; boundary=" + boundary
}

type repeatReader byte

func (b repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// No request reads more than a small form of its body: a POST of a large
// upload to any address, signed in or not, is cut short, not read to the
// end into memory or temporary files.
func TestConsole_RequestBodiesAreBounded(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // where an unbounded multipart read spills
	e := openEngine(t)
	const size = 8 << 20
	for _, o := range []console.Options{{Prefix: prefix}, {Prefix: prefix, Tokens: tokens}} {
		h := console.New(e, o)
		for _, p := range []string{"login", "logout", "topics/orders/queues", "topics/orders/queues/0/writable", "groups/billing/reset", "groups/billing/dlq/redrive", "topics/orders", "nothing/here"} {
			body, ct := bigUpload(size)
			req := httptest.NewRequest(http.MethodPost, prefix+p, body)
			req.Header.Set("Content-Type", ct)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if req.MultipartForm != nil {
				_ = req.MultipartForm.RemoveAll()
			}
			assert.LessOrEqual(t, body.n.Load(), int64(1<<20+64<<10), "%s (tokens %v): bytes of the body read", p, o.Tokens != nil)
		}
	}
}
