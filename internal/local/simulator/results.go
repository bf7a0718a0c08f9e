package simulator

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
)

// checkResults refuses a call whose body carries a step's result that
// names no work the result's service did (resultMakers): another
// service's result must name work done for the same order, and, for a
// call to do work, not undone (a shipment from a released reservation);
// an undo's own step's result must name the work done under its key (a
// refund names the charge it reverses). A body without results (the
// shipped workflow's) is not checked. Called with s.mu held.
func (s *Server) checkResults(service string, undo bool, st *keyState, req requestBody) reply {
	for _, step := range slices.Sorted(maps.Keys(req.Results)) {
		maker, known := resultMakers[step]
		if !known {
			continue
		}
		var res struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(req.Results[step], &res) != nil || res.ID == "" {
			return fail(http.StatusBadRequest, "results.%s.id is required", step)
		}
		noun := resultNouns[maker]
		if maker == service {
			switch {
			case !undo || res.ID == st.reference:
			case st.reference == "":
				return fail(http.StatusUnprocessableEntity, "results.%s.id: %s: no %s was made under this Idempotency-Key", step, res.ID, noun)
			default:
				return fail(http.StatusUnprocessableEntity, "results.%s.id: %s is not the %s made under this Idempotency-Key", step, res.ID, noun)
			}
			continue
		}
		ck, done := s.refs[res.ID]
		if !done || ck.service != maker || s.keys[ck].orderID != req.OrderID {
			return fail(http.StatusUnprocessableEntity, "results.%s.id: %s is not a %s made for order %s", step, res.ID, noun, req.OrderID)
		}
		if !undo && s.keys[ck].undoRef != "" {
			return fail(http.StatusUnprocessableEntity, "results.%s.id: %s was undone", step, res.ID)
		}
	}
	return reply{}
}
