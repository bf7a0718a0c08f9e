package order

// DuePage is one page of orders due for the Supervisor's look: the active
// records of the orders found, the items among them this build cannot
// read, and where the next page starts (nil when there is no more).
type DuePage struct {
	Steps      []StepState
	Unreadable []Unreadable
	Next       Cursor
}

// Cursor is where a paged listing goes on: opaque to all but the adapter
// that made it, and nil at the start and the end.
type Cursor any

// Unreadable is an order item that did not decode: a bad write, or one a
// build with another item layout made. The Supervisor skips it (it stops
// nothing else) and reports it once per version of it.
type Unreadable struct {
	OrderID string
	Err     error
	// Fingerprint identifies the item's content, and so its version; a
	// report of it is stored on the item.
	Fingerprint string
	// Reported says that this version was reported already.
	Reported bool
}
