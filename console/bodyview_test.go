package console_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/console"
)

// storeBody stores one message with body in a new topic of one queue and
// serves a console over the engine.
func storeBody(t *testing.T, topic string, body []byte) *site {
	t.Helper()
	e := openEngine(t)
	require.NoError(t, e.CreateTopic(ctxT(t), topic, 1))
	_, err := e.Append(ctxT(t), &equeue.AppendRequest{Topic: topic, Messages: []*equeue.Message{{Body: body}}})
	require.NoError(t, err)
	return serve(t, e, console.Options{})
}

// A small body of deeply nested JSON (a few KiB) pretty-prints as tens of
// megabytes of indentation: the message page shows its first 64 KiB, as it
// does of any body, not all of it.
func TestConsole_MessagePageBoundsPrettyPrintedJSON(t *testing.T) {
	const depth = 4000
	body := strings.Repeat("[", depth) + strings.Repeat("]", depth)
	s := storeBody(t, "nested", []byte(body))
	for _, view := range []string{"", "?view=json"} {
		pg := s.get(t, prefix+"topics/nested/messages/0/0"+view)
		require.Equal(t, http.StatusOK, pg.status)
		assert.Less(t, len(pg.body), 256<<10, "%q: the page holds at most 64 KiB of the body's view", view)
		assert.Contains(t, pg.body, "Only the first 64 KiB", view)
		assert.NotContains(t, pg.body, "not valid JSON", view)
	}
}

// A valid JSON body larger than what the page shows is pretty-printed as
// far as it is shown, not called invalid because the shown part ends
// before the body does.
func TestConsole_MessagePageShowsTheHeadOfALargeJSONBody(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"items":[`)
	for i := range 4000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"sku":"A-%d","qty":%d}`, i, i%7)
	}
	b.WriteString(`]}`)
	require.Greater(t, b.Len(), 64<<10)
	s := storeBody(t, "large", []byte(b.String()))
	pg := s.get(t, prefix+"topics/large/messages/0/0")
	require.Equal(t, http.StatusOK, pg.status)
	assert.NotContains(t, pg.body, "not valid JSON")
	assert.Contains(t, pg.body, "&#34;items&#34;: [\n    {\n      &#34;sku&#34;: &#34;A-0&#34;,\n      &#34;qty&#34;: 0\n    },", "pretty-printed")
	assert.Contains(t, pg.body, "Only the first 64 KiB")
	assert.Less(t, len(pg.body), 256<<10)
}

// The JSON view prints what json.Indent prints, and stops at its limit.
func TestIndentJSON_AsJSONIndentUpToItsLimit(t *testing.T) {
	for _, in := range []string{
		`{}`, `[]`, `{ }`, `[ ]`, `"a"`, `1.50e3`, `null`,
		`{"a":[1,2,{"b":"c\"d\\","e":[]}],"f":{ },"g":"x,y:[z]{"}`,
		" [ 1 ,\n\t2 ] ",
		`{"é":"ü\u00e9"}`,
	} {
		var want bytes.Buffer
		require.NoError(t, json.Indent(&want, []byte(strings.TrimSpace(in)), "", "  "), in)
		got, cut := console.IndentJSON([]byte(in), 1<<20)
		assert.Equal(t, want.String(), got, in)
		assert.False(t, cut, in)
	}
	got, cut := console.IndentJSON([]byte(`[[[[[]]]]]`), 10)
	assert.Equal(t, "[\n  [\n    ", got)
	assert.True(t, cut)
	got, cut = console.IndentJSON([]byte(`["é"]`), 6) // a limit inside "é" drops it whole
	assert.Equal(t, "[\n  \"", got)
	assert.True(t, cut)
}
