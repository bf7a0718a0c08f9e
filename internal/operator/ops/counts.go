package ops

import (
	"context"
	"fmt"

	"orderly/internal/adapter/dynamo"
	"orderly/internal/order"
)

// DefaultCountBudget is how many index items a count evaluates unless
// told (dynamo.DefaultCountBudget).
const DefaultCountBudget = dynamo.DefaultCountBudget

// Count counts the orders q matches by status over q's window (created,
// or ended when q bounds that), from the search indexes (no Scan), every
// status (q.Status is not used). It evaluates at most budget index items
// (DefaultCountBudget when 0): past them the counts are Partial,
// exact from their Through on.
func (s *Stage) Count(ctx context.Context, q order.Query, budget int) (order.Counts, error) {
	c, err := s.store.Count(ctx, q, budget)
	if err != nil {
		return order.Counts{}, fmt.Errorf("count orders of stage %s: %w", s.Name, err)
	}
	return c, nil
}

// SearchPage returns one page of the orders q matches, newest first, up
// to q.Limit, from position (nil: the first page; else a page's Next).
// A position not of this stage's searches is order.ErrInvalid.
func (s *Stage) SearchPage(ctx context.Context, q order.Query, position []byte) (order.SearchPage, error) {
	page, err := s.store.Search(ctx, q, position)
	if err != nil {
		return order.SearchPage{}, fmt.Errorf("search stage %s: %w", s.Name, err)
	}
	return page, nil
}
