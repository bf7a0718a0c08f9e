package order

// Principal is a client of the API: who submits an order, and so who may
// read and cancel it. The API derives it from the signed request (see
// api.PrincipalOf for what it is for each kind of AWS identity).
type Principal struct {
	// ID is the full principal: the IAM user, the role with its session,
	// the Cognito identity. An order it submits stores it as its Caller.
	ID string
	// Legacy is the principal as orders submitted before callers were
	// told apart by session stored it (the user's or role's unique id
	// alone), or "" when that is ID.
	Legacy string
}

// OwnedBy reports whether o is p's: submitted by p, or, for an order from
// before callers were told apart by session, by p's role. Those orders
// keep the scope they were submitted under (every session of the role)
// instead of becoming nobody's; new orders never store a bare role.
func (o Order) OwnedBy(p Principal) bool {
	if p.ID == "" {
		return false
	}
	return o.Caller == p.ID || (p.Legacy != "" && o.Caller == p.Legacy)
}
