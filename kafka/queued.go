package kafka

// defaultQueuedBudget is Options.MaxQueuedRequestBytes when it is zero.
const defaultQueuedBudget = 256 << 20

// newQueuedBudget returns the budget that bounds the memory request
// frames take, over every connection, as Kafka's queued.max.request.bytes
// does: a connection reserves a frame's size before it allocates and
// reads the frame's body, and gives it back once the request was answered
// (or failed). Each connection may send frames of up to maxRequestSize, so
// without it k connections could make the listener hold k times that at
// once; with it, connections whose frames do not fit wait, unread, for
// those being handled, and a frame larger than the whole budget is read
// alone.
func newQueuedBudget(budget int64) *byteBudget {
	return newByteBudget(budget, "to read a request")
}
