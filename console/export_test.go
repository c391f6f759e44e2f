package console

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
