package console

import "net/http"

// Exported for the external tests.
const (
	ListPullBytes = listPullBytes
	PreviewBytes  = previewBytes
)

var (
	Preview = preview
	Listed  = listed
	// IndentJSON is the message page's JSON view.
	IndentJSON = indentJSON
)

// GroupTopicCalls is how many topics the group page describes one by one.
const GroupTopicCalls = groupTopicCalls

// Actions returns the patterns of the console's routes that change the
// engine, as registered ("POST /prefix/groups/{group}/reset").
func Actions(h http.Handler) []string { return h.(*Console).actions }
