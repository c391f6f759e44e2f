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
